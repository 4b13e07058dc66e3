/* report.h — report files (JSON, HTML, JUnit XML) written while a run goes
 * on, the reader that turns report.json back into results (merge), and the
 * escaping helpers the writers share.  DESIGN.md §7.
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
 * arrays included); the caller keeps its own swa_result.  Strings returned
 * by the escape helpers are malloc'ed; the caller frees them. */
#ifndef SWADIFF_REPORT_H
#define SWADIFF_REPORT_H

#include <stdio.h>

#include "results.h"

/* Version of the report.json / results.jsonl layout.  Bump the major on a
 * change that breaks readers, the minor on an addition. */
#define SWA_REPORT_VERSION "1.0"

/* Rows kept of the (row, head) matrix in report.json: larger matrices are
 * downsampled by taking the maximum over bins of consecutive rows. */
#define SWA_REPORT_MAX_MATRIX_ROWS 256

typedef struct swa_report swa_report;

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the streaming writer ------------------------------------------------ */

/* Creates dir (and parents) if missing, writes the results.jsonl header and
 * an empty report set.  env is copied; created = now.  Returns NULL with err
 * set (SWA_ERR_IO, naming the path and errno text) on failure. */
swa_report *swa_report_open(const char *dir, const swa_environment *env, swa_error *err);

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

/* Final rewrite with duration and exitcode, then frees rep (also on error). */
swa_status swa_report_close(swa_report *rep, int exitcode, swa_error *err);

/* ---- whole-run writers (used by the streaming writer and by merge) ------- */

/* Writes report.json, report.html and junit.xml of rr into dir atomically. */
swa_status swa_report_write_all(const swa_run_results *rr, const char *dir, swa_error *err);

/* report.json as a cJSON tree (caller: cJSON_Delete).  NULL on no memory. */
struct cJSON *swa_report_json(const swa_run_results *rr);
/* One case object (the elements of report.json's "cases" and the lines of
 * results.jsonl).  Caller: cJSON_Delete. */
struct cJSON *swa_report_case_json(const swa_result *r);

/* The HTML page and the JUnit document, written to f.  Return 0, or -1 on a
 * write error (errno set). */
int swa_report_write_html(const swa_run_results *rr, FILE *f);
int swa_report_write_junit(const swa_run_results *rr, FILE *f);

/* Writes a file atomically: write(f, ctx) into "path.tmp.<pid>", fsync,
 * rename over path.  The callback returns 0 or -1. */
swa_status swa_report_write_atomic(const char *path, int (*write)(FILE *f, const void *ctx),
                                   const void *ctx, swa_error *err);

/* ---- the reader ----------------------------------------------------------- */

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

/* ---- merge ----------------------------------------------------------------- */

/* `swadiff merge OUT_DIR REPORT.json...` (argv[0] is "merge").  Combines shard
 * reports (report.json or results.jsonl) into one report set in OUT_DIR.
 * Returns the exit code of the combined run (0, 1 or 3; DESIGN §7), or 2 on
 * a usage error or an unreadable input, with the reason on stderr. */
int swa_merge_main(int argc, char **argv);

/* ---- helpers the writers share ------------------------------------------ */

/* Text for HTML (text and double- or single-quoted attribute contexts):
 * & < > " ' escaped; invalid UTF-8 bytes and control characters other than
 * tab/newline become U+FFFD.  Caller frees. */
char *swa_html_escape(const char *s);
/* Text for XML 1.0 (text and attributes): & < > " ' escaped; characters XML
 * 1.0 forbids (controls other than tab/newline/CR, invalid UTF-8, U+FFFE/F)
 * become "\xNN" or U+FFFD; with attr, tab/newline/CR become character
 * references so they survive attribute normalisation.  Caller frees. */
char *swa_xml_escape(const char *s, bool attr);
/* s with every byte that is not valid UTF-8 replaced by U+FFFD (JSON must
 * be UTF-8; case files and kernel messages may not be).  Caller frees. */
char *swa_utf8_sanitize(const char *s);
/* Markdown table cell: | ` and < escaped, newlines and control characters
 * to spaces.  Caller frees. */
char *swa_markdown_cell(const char *s);

/* Seconds since the epoch, wall clock (for created/duration). */
double swa_report_now(void);
/* "2026-11-30T09:00:24Z" of a unix time. */
void swa_report_iso8601(double t, char *buf, size_t n);

/* Shared ordering: failing first (failed, error, then skipped, passed),
 * within an outcome by mismatch ratio descending, then by id.  Fills idx
 * with 0..count-1 in that order. */
void swa_report_order(const swa_run_results *rr, int *idx);

/* Worst error/allowed of a result (over out and LSE); INFINITY for NaN,
 * unwritten or guard failures, 0 when nothing was compared. */
double swa_result_severity(const swa_result *r);

#ifdef __cplusplus
}
#endif
#endif /* SWADIFF_REPORT_H */
