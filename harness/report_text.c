/* report_text.c — what every report writer shares: escaping for HTML, XML,
 * Markdown and JSON (UTF-8 sanitising), the order results are listed in,
 * a result's severity, and ISO 8601 time stamps.
 *
 * Test: tests/test_report_json.c (escaping, ordering), tests/fuzz/fuzz_escape.c,
 * tests/test_adversarial_merge.c (swa_terminal_sanitize through merge).
 */
#include "harness/report_text.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void swa_report_iso8601(double t, char *buf, size_t n)
{
    /* a time outside 1970..9999 cannot come from a run: no undefined
     * double -> time_t conversion, no out-of-range struct tm */
    if (!(t >= 0 && t <= 253402300799.0)) {
        snprintf(buf, n, "(not a time: %g)", t);
        return;
    }
    time_t s = (time_t)t;
    struct tm tm;
    if (!gmtime_r(&s, &tm)) {
        snprintf(buf, n, "(not a time: %g)", t);
        return;
    }
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
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

char *swa_terminal_sanitize(const char *s)
{
    strbuf b = {0};
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    char tmp[16];
    while (*p) {
        unsigned cp;
        int n = utf8_valid_len(p, &cp);
        if (!n) { /* a lone 0x9B is CSI to an 8-bit terminal */
            snprintf(tmp, sizeof tmp, "\\x%02X", *p);
            sb_put(&b, tmp, strlen(tmp));
            p++;
            continue;
        }
        bool control = (cp < 0x20 && cp != '\t' && cp != '\n') || cp == 0x7f;
        bool hidden = (cp >= 0x80 && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
        if (control) {
            snprintf(tmp, sizeof tmp, "\\x%02X", cp);
            sb_put(&b, tmp, strlen(tmp));
        } else if (hidden) {
            snprintf(tmp, sizeof tmp, "\\u%04X", cp);
            sb_put(&b, tmp, strlen(tmp));
        } else {
            sb_put(&b, (const char *)p, (size_t)n);
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
    return o == SWA_OUTCOME_FAILED ? 0 : o == SWA_OUTCOME_XPASSED ? 1 : o == SWA_OUTCOME_ERROR ? 2
         : o == SWA_OUTCOME_SKIPPED ? 3 : o == SWA_OUTCOME_XFAILED ? 4 : 5;
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

void swa_diagnosis_key(const char *diagnosis, char *buf, size_t n)
{
    const char *end = diagnosis && diagnosis[0] == '[' ? strchr(diagnosis, ']') : NULL;
    if (!end || end == diagnosis + 1) {
        snprintf(buf, n, "unexplained");
        return;
    }
    snprintf(buf, n, "%.*s", (int)(end - diagnosis - 1), diagnosis + 1);
}

static void add_backend(char *list, size_t n, const char *backend)
{
    size_t len = strlen(backend);
    for (const char *p = list; (p = strstr(p, backend)) != NULL; p += len)
        if ((p == list || p[-1] == ' ') && (p[len] == '\0' || p[len] == ','))
            return;
    size_t k = strlen(list);
    if (k < n)
        snprintf(list + k, n - k, "%s%s", k ? ", " : "", backend);
}

int swa_diagnosis_groups(const swa_run_results *rr, swa_diag_group *groups, int max, int *ungrouped)
{
    int ng = 0;
    *ungrouped = 0;
    int *idx = malloc(((size_t)rr->count + 1) * sizeof *idx);
    if (!idx)
        return 0;
    swa_report_order(rr, idx);
    for (int k = 0; k < rr->count; k++) {
        const swa_result *r = &rr->items[idx[k]];
        if (r->outcome != SWA_OUTCOME_FAILED)
            continue;
        char key[128];
        swa_diagnosis_key(r->diagnosis, key, sizeof key);
        int g = 0;
        while (g < ng && strcmp(groups[g].key, key) != 0)
            g++;
        if (g == ng) {
            if (ng == max) {
                (*ungrouped)++;
                continue;
            }
            memset(&groups[g], 0, sizeof groups[g]);
            snprintf(groups[g].key, sizeof groups[g].key, "%s", key);
            groups[g].first = idx[k];
            ng++;
        }
        groups[g].count++;
        add_backend(groups[g].backends, sizeof groups[g].backends, r->backend);
    }
    free(idx);
    /* largest first; a stable insertion sort keeps report order among equals */
    for (int i = 1; i < ng; i++) {
        swa_diag_group t = groups[i];
        int j = i - 1;
        while (j >= 0 && groups[j].count < t.count) {
            groups[j + 1] = groups[j];
            j--;
        }
        groups[j + 1] = t;
    }
    return ng;
}
