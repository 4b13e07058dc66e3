/* report.c — the streaming report writer (results.jsonl + atomically
 * rewritten report.json / report.html / junit.xml) and the table of report
 * formats.  The helpers the writers share live in report_text.c.
 *
 * Test: tests/test_report_partial.c (a run killed with SIGKILL leaves a
 * readable report), tests/test_report_json.c.
 */
#include "harness/report.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
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
    char dir[SWA_PATH_MAX + 32]; /* a file's path in a report folder */
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

int swa_report_open_file(const char *path, int flags, swa_error *err)
{
    int fd = open(path, flags | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0)
        return fd;
    struct stat st;
    if (errno == ELOOP || (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)))
        swa_error_set(err, SWA_ERR_IO, "%s is a symbolic link: swadiff never writes through a link in a report folder "
                      "(remove it, or give another --report folder)", path);
    else
        swa_error_set(err, SWA_ERR_IO, "%s: cannot create: %s (is the report folder writable?)", path,
                      strerror(errno));
    return -1;
}

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
    struct stat link;
    if (lstat(path, &link) == 0 && S_ISLNK(link.st_mode)) /* rename would replace it; refuse as open does */
        return swa_error_set(err, SWA_ERR_IO, "%s is a symbolic link: swadiff never writes through a link in a report "
                             "folder (remove it, or give another --report folder)", path);
    bool in_place = swa_path_is_special(path); /* a device or FIFO: never renamed over */
    if (in_place)
        snprintf(tmp, sizeof tmp, "%s", path);
    int fd = swa_report_open_file(tmp, O_WRONLY | O_CREAT | (in_place ? 0 : O_TRUNC), err);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        return fd >= 0 ? swa_error_set(err, SWA_ERR_IO, "%s: %s", tmp, strerror(errno)) : err->status;
    }
    int rc = write(f, ctx);
    if (fflush(f) != 0)
        rc = -1;
    if (rc == 0 && durable && !in_place && fsync(fileno(f)) != 0)
        rc = -1;
    int saved = errno;
    if (fclose(f) != 0 && rc == 0) {
        rc = -1;
        saved = errno;
    }
    if (rc != 0) {
        if (!in_place)
            unlink(tmp);
        return swa_error_set(err, SWA_ERR_IO, "%s: write failed: %s (disk full?)", tmp, strerror(saved));
    }
    if (in_place)
        return SWA_OK;
    if (rename(tmp, path) != 0) {
        saved = errno;
        unlink(tmp);
        return swa_error_set(err, SWA_ERR_IO, "%s: cannot rename to %s: %s", tmp, path, strerror(saved));
    }
    if (durable)
        fsync_dir(path);
    return SWA_OK;
}

/* The order matters only for a reader watching the folder: report.json
 * first, the page last. */
const swa_report_format swa_report_formats[] = {
    {"json", "report.json", swa_report_write_json},
    {"junit", "junit.xml", swa_report_write_junit},
    {"html", "report.html", swa_report_write_html},
    {NULL, NULL, NULL},
};

typedef struct format_job {
    const swa_report_format *format;
    const swa_run_results *rr;
} format_job;

static int write_format(FILE *f, const void *ctx)
{
    const format_job *job = ctx;
    return job->format->write(job->rr, f);
}

static swa_status write_all(const swa_run_results *rr, const char *dir, bool durable, swa_error *err);

swa_status swa_report_write_all(const swa_run_results *rr, const char *dir, swa_error *err)
{
    return write_all(rr, dir, true, err);
}

static swa_status write_all(const swa_run_results *rr, const char *dir, bool durable, swa_error *err)
{
    if (strlen(dir) >= SWA_PATH_MAX) {
        char shown[300];
        swa_path_abbrev(dir, shown, sizeof shown);
        return swa_error_set(err, SWA_ERR_IO, "%s: expected a report folder path of at most %d bytes", shown,
                             SWA_PATH_MAX - 1);
    }
    if (make_dirs(dir) != 0)
        return swa_error_set(err, SWA_ERR_IO, "%s: cannot create the report folder: %s", dir, strerror(errno));
    for (const swa_report_format *fmt = swa_report_formats; fmt->name; fmt++) {
        char path[SWA_PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/%s", dir, fmt->file);
        format_job job = {fmt, rr};
        swa_status st = write_atomic(path, write_format, &job, durable, err);
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
    double now = swa_now();
    if (now - rep->last_sync >= JSONL_SYNC_SECONDS) {
        if (fsync(fileno(rep->jsonl)) != 0)
            return swa_error_set(err, SWA_ERR_IO, "%s/results.jsonl: fsync failed: %s", rep->dir, strerror(errno));
        rep->last_sync = now;
    }
    return SWA_OK;
}


swa_report *swa_report_open(const char *dir, const swa_environment *env, swa_error *err)
{
    return swa_report_open_selection(dir, env, NULL, err);
}

swa_report *swa_report_open_selection(const char *dir, const swa_environment *env, const swa_selection *sel,
                                      swa_error *err)
{
    swa_report *rep = calloc(1, sizeof *rep);
    if (!rep) {
        swa_error_set(err, SWA_ERR_NOMEM, "no memory for the report writer");
        return NULL;
    }
    if (strlen(dir) >= sizeof rep->dir) {
        char shown[300];
        swa_path_abbrev(dir, shown, sizeof shown);
        swa_error_set(err, SWA_ERR_IO, "%s: expected a report folder path of at most %d bytes", shown,
                      SWA_PATH_MAX - 1);
        free(rep);
        return NULL;
    }
    snprintf(rep->dir, sizeof rep->dir, "%s", dir);
    if (env)
        rep->rr.env = *env;
    if (sel)
        rep->rr.selection = *sel;
    rep->rr.started = swa_now();
    rep->flush_interval = -1; /* adaptive */
    if (make_dirs(dir) != 0) {
        swa_error_set(err, SWA_ERR_IO, "%s: cannot create the report folder: %s", dir, strerror(errno));
        free(rep);
        return NULL;
    }
    char path[SWA_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/results.jsonl", dir);
    int fd = swa_report_open_file(path, O_WRONLY | O_CREAT | O_TRUNC, err);
    rep->jsonl = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!rep->jsonl) {
        if (fd >= 0) {
            swa_error_set(err, SWA_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
            close(fd);
        }
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
    swa_report_add_selection_json(head, &rep->rr.selection); /* a killed shard's results.jsonl still merges */
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

void swa_report_set_expected(swa_report *rep, int expected)
{
    rep->rr.expected = expected;
}

void swa_report_set_flush_interval(swa_report *rep, double seconds)
{
    rep->flush_interval = seconds;
}

const swa_run_results *swa_report_results(const swa_report *rep) { return &rep->rr; }

swa_status swa_report_flush(swa_report *rep, swa_error *err)
{
    rep->rr.duration = swa_now() - rep->rr.started;
    /* until the run finishes, the files say it is not complete: a kill at
     * any moment leaves a report that cannot be read as green */
    rep->rr.incomplete = true;
    snprintf(rep->rr.incomplete_reason, sizeof rep->rr.incomplete_reason,
             "the run was still going (or was killed) when this was written: %d of %d results", rep->rr.count,
             rep->rr.expected);
    /* the exit code the run would have if it stopped here */
    rep->rr.exitcode = swa_run_results_summary(&rep->rr, NULL, NULL, NULL, NULL);
    double t0 = swa_now();
    swa_status st = write_all(&rep->rr, rep->dir, false, err);
    rep->last_flush = swa_now();
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
    double since = swa_now() - rep->last_flush;
    bool due = rep->flush_interval < 0 ? since >= ADAPTIVE_FACTOR * rep->last_cost : since >= rep->flush_interval;
    if (due)
        return swa_report_flush(rep, err);
    return SWA_OK;
}

swa_status swa_report_finish(swa_report *rep, const swa_run_results *final, swa_error *err)
{
    if (!rep)
        return SWA_OK;
    rep->rr.incomplete = final->incomplete;
    snprintf(rep->rr.incomplete_reason, sizeof rep->rr.incomplete_reason, "%s", final->incomplete_reason);
    rep->rr.controls = final->controls;
    swa_run_results_sort(&rep->rr);
    return swa_report_close(rep, final->exitcode, err);
}

swa_status swa_report_close(swa_report *rep, int exitcode, swa_error *err)
{
    if (!rep)
        return SWA_OK;
    rep->rr.duration = swa_now() - rep->rr.started;
    rep->rr.exitcode = exitcode;
    if (!rep->rr.incomplete_reason[0] || strstr(rep->rr.incomplete_reason, "still going"))
        rep->rr.incomplete = false, rep->rr.incomplete_reason[0] = '\0';
    swa_status st = swa_report_write_all(&rep->rr, rep->dir, err);
    fsync(fileno(rep->jsonl));
    if (fclose(rep->jsonl) != 0 && st == SWA_OK)
        st = swa_error_set(err, SWA_ERR_IO, "%s/results.jsonl: close failed: %s", rep->dir, strerror(errno));
    swa_run_results_free(&rep->rr);
    free(rep);
    return st;
}

/* One run (or merge) per report folder: an exclusive lock on
 * DIR/.swadiff.lock, holding the holder's pid and command line for the
 * message.  what names the option ("--report", "merge") in errors. */
int swa_report_lock_dir(const char *dir, const char *what, const swa_environment *env)
{
    char path[SWA_PATH_MAX + 32];
    if (strlen(dir) >= SWA_PATH_MAX) { /* every file in it is kept as DIR/NAME in buffers of that size */
        char shown[300];
        swa_path_abbrev(dir, shown, sizeof shown);
        fprintf(stderr, "swadiff: %s %s: expected a folder path of at most %d bytes (give a shorter or relative "
                        "path)\n", what, shown, SWA_PATH_MAX - 1);
        return -2;
    }
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "swadiff: %s %s: cannot create the folder: %s\n", what, dir, strerror(errno));
        return -2;
    }
    snprintf(path, sizeof path, "%s/.swadiff.lock", dir);
    swa_error err = {0};
    int fd = swa_report_open_file(path, O_RDWR | O_CREAT, &err);
    if (fd < 0) {
        fprintf(stderr, "swadiff: %s %s: %s\n", what, dir, err.message);
        return -2;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        char holder[600] = "";
        ssize_t n = pread(fd, holder, sizeof holder - 1, 0);
        holder[n > 0 ? n : 0] = '\0';
        char *nl = strchr(holder, '\n');
        if (nl && nl[1] == '\0')
            *nl = '\0';
        fprintf(stderr, "swadiff: %s %s: another swadiff run writes this folder, or a merge (%s); give "
                        "each its own folder\n", what, dir, holder[0] ? holder : "holder unknown");
        close(fd);
        return -1;
    }
    if (ftruncate(fd, 0) == 0) {
        char text[1200];
        int len = snprintf(text, sizeof text, "pid %d: %s\n", (int)getpid(), env->command_line);
        (void)!pwrite(fd, text, (size_t)(len < (int)sizeof text ? len : (int)sizeof text - 1), 0);
    }
    return fd; /* held until the process exits */
}
