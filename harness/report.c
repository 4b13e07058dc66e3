/* report.c — the streaming report writer (results.jsonl + atomically
 * rewritten report.json / report.html / junit.xml), and the helpers the
 * writers share: escaping, ordering, time stamps.  See report.h.
 *
 * Test: tests/test_report_partial.c (a run killed with SIGKILL leaves a
 * readable report), tests/test_report_json.c (escaping, ordering).
 */
#include "report.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

struct swa_report {
    char dir[SWA_PATH_MAX];
    swa_run_results rr;
    FILE *jsonl;
    double flush_interval;  /* < 0: adaptive (see report.h) */
    double last_flush;      /* when the last rewrite ended */
    double last_cost;       /* seconds the last rewrite took */
    double last_sync;       /* last fsync of results.jsonl */
    bool dirty;
};

/* How much longer than a rewrite takes we wait before the next one in the
 * adaptive mode: rewriting then costs at most 1/(1+4) = 20% of the run. */
#define ADAPTIVE_FACTOR 4.0

double swa_report_now(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + tv.tv_usec * 1e-6;
}

void swa_report_iso8601(double t, char *buf, size_t n)
{
    time_t s = (time_t)t;
    struct tm tm;
    gmtime_r(&s, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* mkdir -p */
static int make_dirs(const char *dir)
{
    char path[SWA_PATH_MAX];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(path, 0777) != 0 && errno != EEXIST)
        return -1;
    return 0;
}

static void fsync_dir(const char *path)
{
    char dir[SWA_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *(slash == dir ? slash + 1 : slash) = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        fsync(fd); /* best effort: the rename is what readers rely on */
        close(fd);
    }
}

static swa_status write_atomic(const char *path, int (*write)(FILE *f, const void *ctx), const void *ctx,
                               bool durable, swa_error *err);

swa_status swa_report_write_atomic(const char *path, int (*write)(FILE *f, const void *ctx),
                                   const void *ctx, swa_error *err)
{
    return write_atomic(path, write, ctx, true, err);
}

/* durable: fsync the file and its folder (survives a power cut).  Without
 * it the rename is still atomic against a killed process, which is what the
 * rewrites during a run need; results.jsonl carries the durable copy. */
static swa_status write_atomic(const char *path, int (*write)(FILE *f, const void *ctx), const void *ctx,
                               bool durable, swa_error *err)
{
    char tmp[SWA_PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f)
        return swa_error_set(err, SWA_ERR_IO, "%s: cannot create: %s (is the report folder writable?)", tmp,
                             strerror(errno));
    int rc = write(f, ctx);
    if (fflush(f) != 0)
        rc = -1;
    if (rc == 0 && durable && fsync(fileno(f)) != 0)
        rc = -1;
    int saved = errno;
    if (fclose(f) != 0 && rc == 0) {
        rc = -1;
        saved = errno;
    }
    if (rc != 0) {
        unlink(tmp);
        return swa_error_set(err, SWA_ERR_IO, "%s: write failed: %s (disk full?)", tmp, strerror(saved));
    }
    if (rename(tmp, path) != 0) {
        saved = errno;
        unlink(tmp);
        return swa_error_set(err, SWA_ERR_IO, "%s: cannot rename to %s: %s", tmp, path, strerror(saved));
    }
    if (durable)
        fsync_dir(path);
    return SWA_OK;
}

static int write_json_file(FILE *f, const void *ctx)
{
    cJSON *root = swa_report_json(ctx);
    if (!root)
        return -1;
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text)
        return -1;
    int rc = fputs(text, f) < 0 || fputc('\n', f) == EOF ? -1 : 0;
    cJSON_free(text);
    return rc;
}

static int write_html_file(FILE *f, const void *ctx) { return swa_report_write_html(ctx, f); }
static int write_junit_file(FILE *f, const void *ctx) { return swa_report_write_junit(ctx, f); }

static swa_status write_all(const swa_run_results *rr, const char *dir, bool durable, swa_error *err);

swa_status swa_report_write_all(const swa_run_results *rr, const char *dir, swa_error *err)
{
    return write_all(rr, dir, true, err);
}

static swa_status write_all(const swa_run_results *rr, const char *dir, bool durable, swa_error *err)
{
    static const struct {
        const char *name;
        int (*write)(FILE *, const void *);
    } files[] = {{"report.json", write_json_file}, {"junit.xml", write_junit_file}, {"report.html", write_html_file}};
    if (make_dirs(dir) != 0)
        return swa_error_set(err, SWA_ERR_IO, "%s: cannot create the report folder: %s", dir, strerror(errno));
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[SWA_PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/%s", dir, files[i].name);
        swa_status st = write_atomic(path, files[i].write, rr, durable, err);
        if (st != SWA_OK)
            return st;
    }
    return SWA_OK;
}

/* One JSON value per line, handed to the kernel at once (fflush): a killed
 * process loses nothing.  fsync, which only matters for a power cut or a
 * kernel crash, costs milliseconds per call on CI disks, so it runs at most
 * once per JSONL_SYNC_SECONDS (and at close). */
#define JSONL_SYNC_SECONDS 1.0

static swa_status jsonl_append(swa_report *rep, cJSON *obj, swa_error *err)
{
    char *text = cJSON_PrintUnformatted(obj);
    if (!text)
        return swa_error_set(err, SWA_ERR_NOMEM, "%s/results.jsonl: no memory to format a line", rep->dir);
    size_t len = strlen(text);
    text[len] = '\n'; /* replaces the terminator: write the line in one call */
    size_t done = fwrite(text, 1, len + 1, rep->jsonl);
    cJSON_free(text);
    if (done != len + 1 || fflush(rep->jsonl) != 0)
        return swa_error_set(err, SWA_ERR_IO, "%s/results.jsonl: write failed: %s", rep->dir, strerror(errno));
    double now = swa_report_now();
    if (now - rep->last_sync >= JSONL_SYNC_SECONDS) {
        if (fsync(fileno(rep->jsonl)) != 0)
            return swa_error_set(err, SWA_ERR_IO, "%s/results.jsonl: fsync failed: %s", rep->dir, strerror(errno));
        rep->last_sync = now;
    }
    return SWA_OK;
}

cJSON *swa_report_environment_json(const swa_environment *env);

swa_report *swa_report_open(const char *dir, const swa_environment *env, swa_error *err)
{
    swa_report *rep = calloc(1, sizeof *rep);
    if (!rep) {
        swa_error_set(err, SWA_ERR_NOMEM, "no memory for the report writer");
        return NULL;
    }
    snprintf(rep->dir, sizeof rep->dir, "%s", dir);
    if (env)
        rep->rr.env = *env;
    rep->rr.started = swa_report_now();
    rep->flush_interval = -1; /* adaptive */
    if (make_dirs(dir) != 0) {
        swa_error_set(err, SWA_ERR_IO, "%s: cannot create the report folder: %s", dir, strerror(errno));
        free(rep);
        return NULL;
    }
    char path[SWA_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/results.jsonl", dir);
    rep->jsonl = fopen(path, "w");
    if (!rep->jsonl) {
        swa_error_set(err, SWA_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
        free(rep);
        return NULL;
    }
    cJSON *head = cJSON_CreateObject();
    char created[32];
    swa_report_iso8601(rep->rr.started, created, sizeof created);
    cJSON_AddStringToObject(head, "report_version", SWA_REPORT_VERSION);
    cJSON_AddStringToObject(head, "created", created);
    cJSON_AddNumberToObject(head, "created_unix", rep->rr.started);
    cJSON_AddItemToObject(head, "environment", swa_report_environment_json(&rep->rr.env));
    swa_status st = jsonl_append(rep, head, err);
    cJSON_Delete(head);
    if (st == SWA_OK)
        st = swa_report_flush(rep, err);
    if (st != SWA_OK) {
        fclose(rep->jsonl);
        free(rep);
        return NULL;
    }
    return rep;
}

void swa_report_set_flush_interval(swa_report *rep, double seconds)
{
    rep->flush_interval = seconds;
}

const swa_run_results *swa_report_results(const swa_report *rep) { return &rep->rr; }

swa_status swa_report_flush(swa_report *rep, swa_error *err)
{
    rep->rr.duration = swa_report_now() - rep->rr.started;
    /* the exit code the run would have if it stopped here */
    rep->rr.exitcode = swa_run_results_summary(&rep->rr, NULL, NULL, NULL, NULL);
    double t0 = swa_report_now();
    swa_status st = write_all(&rep->rr, rep->dir, false, err);
    rep->last_flush = swa_report_now();
    rep->last_cost = rep->last_flush - t0;
    rep->dirty = st != SWA_OK;
    return st;
}

swa_status swa_report_add(swa_report *rep, const swa_result *r, swa_error *err)
{
    swa_result copy = *r;
    if (swa_compare_result_copy(&copy.cmp, &r->cmp) != 0)
        return swa_error_set(err, SWA_ERR_NOMEM, "%s: no memory to keep the result", r->id);
    if (swa_run_results_add(&rep->rr, &copy) != 0) {
        swa_compare_result_free(&copy.cmp);
        return swa_error_set(err, SWA_ERR_NOMEM, "%s: no memory to keep the result", r->id);
    }
    cJSON *line = swa_report_case_json(r);
    if (!line)
        return swa_error_set(err, SWA_ERR_NOMEM, "%s: no memory to format the result", r->id);
    swa_status st = jsonl_append(rep, line, err);
    cJSON_Delete(line);
    if (st != SWA_OK)
        return st;
    rep->dirty = true;
    double since = swa_report_now() - rep->last_flush;
    bool due = rep->flush_interval < 0 ? since >= ADAPTIVE_FACTOR * rep->last_cost : since >= rep->flush_interval;
    if (due)
        return swa_report_flush(rep, err);
    return SWA_OK;
}

swa_status swa_report_close(swa_report *rep, int exitcode, swa_error *err)
{
    if (!rep)
        return SWA_OK;
    rep->rr.duration = swa_report_now() - rep->rr.started;
    rep->rr.exitcode = exitcode;
    swa_status st = swa_report_write_all(&rep->rr, rep->dir, err);
    fsync(fileno(rep->jsonl));
    if (fclose(rep->jsonl) != 0 && st == SWA_OK)
        st = swa_error_set(err, SWA_ERR_IO, "%s/results.jsonl: close failed: %s", rep->dir, strerror(errno));
    swa_run_results_free(&rep->rr);
    free(rep);
    return st;
}

/* ---- escaping --------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when invalid
 * (overlong forms, surrogates, > U+10FFFF, truncated). */
static int utf8_valid_len(const unsigned char *s, unsigned *cp)
{
    unsigned c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    int n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (!n)
        return 0;
    unsigned v = c & (0x7f >> n);
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        v = (v << 6) | (s[i] & 0x3f);
    }
    if ((n == 3 && v < 0x800) || (n == 4 && (v < 0x10000 || v > 0x10ffff)) || (v >= 0xd800 && v <= 0xdfff))
        return 0;
    *cp = v;
    return n;
}

typedef struct strbuf {
    char *data;
    size_t len, cap;
    bool failed;
} strbuf;

static void sb_put(strbuf *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *d = realloc(b->data, cap);
        if (!d) {
            b->failed = true;
            return;
        }
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

static char *sb_finish(strbuf *b)
{
    if (b->failed) {
        free(b->data);
        return NULL;
    }
    if (!b->data)
        return strdup("");
    return b->data;
}

static const char REPLACEMENT[] = "\xef\xbf\xbd"; /* U+FFFD */

char *swa_html_escape(const char *s)
{
    strbuf b = {0};
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        unsigned cp;
        int n = utf8_valid_len(p, &cp);
        if (!n) {
            sb_put(&b, REPLACEMENT, 3);
            p++;
            continue;
        }
        switch (cp) {
        case '&': sb_put(&b, "&amp;", 5); break;
        case '<': sb_put(&b, "&lt;", 4); break;
        case '>': sb_put(&b, "&gt;", 4); break;
        case '"': sb_put(&b, "&quot;", 6); break;
        case '\'': sb_put(&b, "&#39;", 5); break;
        default:
            if ((cp < 0x20 && cp != '\t' && cp != '\n') || cp == 0x7f)
                sb_put(&b, REPLACEMENT, 3);
            else
                sb_put(&b, (const char *)p, (size_t)n);
        }
        p += n;
    }
    return sb_finish(&b);
}

char *swa_utf8_sanitize(const char *s)
{
    strbuf b = {0};
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        unsigned cp;
        int n = utf8_valid_len(p, &cp);
        if (!n) {
            sb_put(&b, REPLACEMENT, 3);
            p++;
        } else {
            sb_put(&b, (const char *)p, (size_t)n);
            p += n;
        }
    }
    return sb_finish(&b);
}

char *swa_xml_escape(const char *s, bool attr)
{
    strbuf b = {0};
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    char tmp[16];
    while (*p) {
        unsigned cp;
        int n = utf8_valid_len(p, &cp);
        if (!n) { /* not UTF-8: show the byte, XML cannot carry it */
            snprintf(tmp, sizeof tmp, "\\x%02X", *p);
            sb_put(&b, tmp, strlen(tmp));
            p++;
            continue;
        }
        switch (cp) {
        case '&': sb_put(&b, "&amp;", 5); break;
        case '<': sb_put(&b, "&lt;", 4); break;
        case '>': sb_put(&b, "&gt;", 4); break; /* also keeps "]]>" out */
        case '"': sb_put(&b, "&quot;", 6); break;
        case '\'': sb_put(&b, "&apos;", 6); break;
        case '\t': case '\n': case '\r':
            if (attr) {
                snprintf(tmp, sizeof tmp, "&#%u;", cp);
                sb_put(&b, tmp, strlen(tmp));
            } else {
                sb_put(&b, (const char *)p, 1);
            }
            break;
        default:
            if (cp < 0x20 || cp == 0x7f) { /* forbidden (or discouraged) in XML 1.0 */
                snprintf(tmp, sizeof tmp, "\\x%02X", cp);
                sb_put(&b, tmp, strlen(tmp));
            } else if (cp == 0xfffe || cp == 0xffff) {
                sb_put(&b, REPLACEMENT, 3);
            } else {
                sb_put(&b, (const char *)p, (size_t)n);
            }
        }
        p += n;
    }
    return sb_finish(&b);
}

char *swa_markdown_cell(const char *s)
{
    strbuf b = {0};
    for (const char *p = s ? s : ""; *p; p++) {
        if (*p == '|')
            sb_put(&b, "\\|", 2);
        else if (*p == '`')
            sb_put(&b, "\\`", 2);
        else if (*p == '<')
            sb_put(&b, "&lt;", 4); /* GitHub renders some HTML in summaries */
        else if (*p == '\n' || *p == '\r' || (unsigned char)*p < 0x20 || *p == 0x7f)
            sb_put(&b, " ", 1);
        else
            sb_put(&b, p, 1);
    }
    return sb_finish(&b);
}

/* ---- ordering ---------------------------------------------------------------- */

double swa_result_severity(const swa_result *r)
{
    if (!r->has_compare)
        return 0;
    const swa_compare_result *c = &r->cmp;
    if (c->guard_violation || c->unwritten || c->lse_unwritten || c->lse_nonfinite)
        return INFINITY;
    double worst = 0;
    if (c->worst_count)
        worst = c->worst[0].allowed > 0 ? c->worst[0].abs_diff / c->worst[0].allowed : INFINITY;
    if (c->worst_count && isnan(c->worst[0].abs_diff))
        worst = INFINITY;
    if (c->lse_compared && c->lse_max_abs_allowed > 0) {
        double l = c->lse_max_abs_diff / c->lse_max_abs_allowed;
        if (l > worst)
            worst = l;
    }
    return worst;
}

static int outcome_rank(swa_outcome o)
{
    return o == SWA_OUTCOME_FAILED ? 0 : o == SWA_OUTCOME_ERROR ? 1 : o == SWA_OUTCOME_SKIPPED ? 2 : 3;
}

static const swa_run_results *order_rr; /* qsort has no context argument in C11 */

static int order_cmp(const void *a, const void *b)
{
    const swa_result *x = &order_rr->items[*(const int *)a], *y = &order_rr->items[*(const int *)b];
    int rx = outcome_rank(x->outcome), ry = outcome_rank(y->outcome);
    if (rx != ry)
        return rx - ry;
    double mx = x->has_compare ? x->cmp.ratio : 0, my = y->has_compare ? y->cmp.ratio : 0;
    if (mx != my)
        return mx > my ? -1 : 1;
    double sx = swa_result_severity(x), sy = swa_result_severity(y);
    if (sx != sy)
        return sx > sy ? -1 : 1;
    int c = strcmp(x->id, y->id);
    if (c)
        return c;
    c = strcmp(x->backend, y->backend);
    if (c)
        return c;
    return *(const int *)a - *(const int *)b;
}

void swa_report_order(const swa_run_results *rr, int *idx)
{
    for (int i = 0; i < rr->count; i++)
        idx[i] = i;
    order_rr = rr;
    qsort(idx, (size_t)rr->count, sizeof *idx, order_cmp);
    order_rr = NULL;
}
