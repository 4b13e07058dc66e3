/* report.h — report files (JSON, HTML, JUnit XML) written while a run goes
 * on, and the reader that turns report.json back into results (merge).
 * A family header: each group below says which report_*.c defines it; the
 * helpers the writers share are in report_text.h.
 *
 * A report folder holds:
 *   results.jsonl  one header line (report_version, created, environment),
 *                  then one line per finished result, written as each result
 *                  arrives: a killed run loses nothing that finished (fsync
 *                  at most once a second, so a power cut loses at most the
 *                  last second).
 *   report.json    the whole run (schema: cases/schema/report.schema.json),
 *   report.html    one self-contained page,
 *   junit.xml      for GitLab / Jenkins / GitHub test-report actions;
 *                  these three are rewritten atomically (temp file + rename:
 *                  a reader or a kill never sees half a file) while the run
 *                  goes on, as often as the flush policy says, and once more
 *                  at close (then also fsync'ed).
 *
 * Typical use (the run loop):
 *     swa_report *rep = swa_report_open("out", &env, &err);
 *     for each result: swa_report_add(rep, &result, &err);
 *     swa_report_close(rep, exitcode, &err);
 *
 * Tests: tests/test_report_json.c (golden file, schema, round trip, merge),
 * tests/test_report_junit.c (golden file, XML parse), tests/test_report_html.c
 * (headless Chromium), tests/test_report_partial.c (SIGKILL mid-run).
 *
 * Ownership: swa_report owns a copy of every result added (its compare
 * arrays included); the caller keeps its own swa_result. */
#ifndef SWADIFF_REPORT_H
#define SWADIFF_REPORT_H

#include <stdio.h>

#include "harness/report_text.h"
#include "harness/results.h"

typedef struct swa_report swa_report;

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the streaming writer ------------------------------------------------ */

/* Creates dir (and parents) if missing, writes the results.jsonl header and
 * an empty report set.  env is copied; created = now.  Returns NULL with err
 * set (SWA_ERR_IO, naming the path and errno text) on failure. */
swa_report *swa_report_open(const char *dir, const swa_environment *env, swa_error *err);
/* The same, with the run's shard and selection (copied; NULL: none) in the
 * results.jsonl header and in every report.json (report 1.4). */
swa_report *swa_report_open_selection(const char *dir, const swa_environment *env, const swa_selection *sel,
                                      swa_error *err);

/* When report.json/html/junit.xml are rewritten during the run
 * (results.jsonl always gets every result at once):
 *   seconds < 0  (default) adaptive: after a result, when the time since the
 *                last rewrite is at least 4x what that rewrite took, so the
 *                rewrites cost at most ~20% of the run however large it gets
 *                (each rewrite is O(results so far));
 *   seconds == 0 after every result;
 *   seconds > 0  at most once per that many seconds. */
void swa_report_set_flush_interval(swa_report *rep, double seconds);

/* Records a copy of r: appends its line to results.jsonl (fsync) and
 * rewrites the report files when the flush interval has passed. */
swa_status swa_report_add(swa_report *rep, const swa_result *r, swa_error *err);

/* Rewrites report.json, report.html and junit.xml now. */
swa_status swa_report_flush(swa_report *rep, swa_error *err);

/* The results recorded so far (owned by rep). */
const swa_run_results *swa_report_results(const swa_report *rep);

/* How many results the run expects: until swa_report_finish says otherwise,
 * every rewrite marks the run incomplete ("in progress, or killed"). */
void swa_report_set_expected(swa_report *rep, int expected);

/* Final rewrite with duration, exitcode and completeness (taken from
 * final: incomplete, incomplete_reason), then frees rep (also on error). */
swa_status swa_report_finish(swa_report *rep, const swa_run_results *final, swa_error *err);

/* Final rewrite of a run that completed with exitcode (merge, tests). */
swa_status swa_report_close(swa_report *rep, int exitcode, swa_error *err);

/* ---- whole-run writers (used by the streaming writer and by merge) ------- */

/* One report file: its name in the folder and its writer. */
typedef struct swa_report_format {
    const char *name;  /* "json", "html", "junit" */
    const char *file;  /* "report.json", ... */
    int (*write)(const swa_run_results *rr, FILE *f); /* 0, or -1 on a write error */
} swa_report_format;
/* The formats every report folder gets (defined in report.c), NULL-name terminated. */
extern const swa_report_format swa_report_formats[];

/* Writes every format of rr into dir atomically (report.c). */
swa_status swa_report_write_all(const swa_run_results *rr, const char *dir, swa_error *err);

/* Defined in report_json.c:
 * report.json as a cJSON tree (caller: cJSON_Delete).  NULL on no memory. */
struct cJSON *swa_report_json(const swa_run_results *rr);
/* One case object (the elements of report.json's "cases" and the lines of
 * results.jsonl).  Caller: cJSON_Delete. */
struct cJSON *swa_report_case_json(const swa_result *r);
/* The "environment" object of report.json and of the results.jsonl header. */
struct cJSON *swa_report_environment_json(const swa_environment *env);
/* Adds "shard" and "selection" (report 1.4) to obj; nothing when sel
 * records no shard (shard_count 0). */
void swa_report_add_selection_json(struct cJSON *obj, const swa_selection *sel);
/* report.json written to f (the swa_report_formats writer). */
int swa_report_write_json(const swa_run_results *rr, FILE *f);

/* The HTML page (report_html.c) and the JUnit document (report_junit.c),
 * written to f.  Return 0, or -1 on a write error (errno set). */
int swa_report_write_html(const swa_run_results *rr, FILE *f);
int swa_report_write_junit(const swa_run_results *rr, FILE *f);

/* Opens a file of a report folder with flags | O_NOFOLLOW | O_CLOEXEC
 * (mode 0644): a symbolic link there is never written through (it could
 * point anywhere: a victim file, another run's folder).  Returns the fd, or
 * -1 with err naming the file (a link: "is a symbolic link"). */
int swa_report_open_file(const char *path, int flags, swa_error *err);
/* Takes DIR/.swadiff.lock (creating DIR) for this process: the fd (held
 * until exit), -1 when another run or merge holds it, -2 when it cannot be
 * made; the message is printed, naming `what` (--report, merge). */
int swa_report_lock_dir(const char *dir, const char *what, const swa_environment *env);

/* Writes a file atomically (report.c): write(f, ctx) into "path.tmp.<pid>", fsync,
 * rename over path.  The callback returns 0 or -1. */
swa_status swa_report_write_atomic(const char *path, int (*write)(FILE *f, const void *ctx),
                                   const void *ctx, swa_error *err);

/* ---- the reader (report_read.c) -------------------------------------------- */

/* Reads a report.json, or a results.jsonl left by a killed run, and appends
 * its results to rr (environment, started, duration and exitcode are taken
 * from the file when rr has none yet).  Errors name the file, the place
 * (line:column for syntax errors, the case index and key otherwise) and
 * what was expected.  The (row, head) matrix comes back as stored:
 * downsampled rows have cmp.row_bin > 1. */
swa_status swa_report_read(const char *path, swa_run_results *rr, swa_error *err);

/* Rebuilds one result from a case object.  where names the place for
 * messages ("report.json: cases[3]"). */
swa_status swa_report_case_from_json(const struct cJSON *obj, const char *where, swa_result *r,
                                     swa_error *err);

/* ---- merge (report_merge.c) ------------------------------------------------ */

/* `swadiff merge [--allow-missing] OUT_DIR REPORT.json...` (argv[0] is
 * "merge").  Combines the reports of one run's shards (report.json or
 * results.jsonl) into one report set in OUT_DIR.  Returns the exit code of
 * the combined run (0, 1, 3 or 5; docs/spec.md), or 2 on a usage error, an
 * unreadable input or inputs that are not one complete shard set, with the
 * reason on stderr. */
int swa_merge_main(int argc, char **argv);

#ifdef __cplusplus
}
#endif
#endif /* SWADIFF_REPORT_H */
