/* report_text.h — the helpers every report writer shares: escaping,
 * UTF-8 sanitising, ordering, severity, time stamps.  Defined in
 * harness/report_text.c.
 *
 * Ownership: strings returned by the escape helpers are malloc'ed; the
 * caller frees them. */
#ifndef SWADIFF_REPORT_TEXT_H
#define SWADIFF_REPORT_TEXT_H

#include "harness/results.h"

/* Version of the report.json / results.jsonl layout.  Bump the major on a
 * change that breaks readers, the minor on an addition. */
#define SWA_REPORT_VERSION "1.7" /* 1.1: incomplete, incomplete_reason, expected_results; 1.2: decisions; 1.3: kernel;
                                  * 1.4: repeat, nondeterministic, shard, selection; 1.5: controls, untrustworthy;
                                  * 1.6: launch, launch_predicted, environment.launch_target;
                                  * 1.7: declared, invariance */

/* Rows kept of the (row, head) matrix in report.json: larger matrices are
 * downsampled by taking the maximum over bins of consecutive rows. */
#define SWA_REPORT_MAX_MATRIX_ROWS 256

/* What the reader (report_read.c) and merge (report_merge.c) accept before
 * allocating anything: a report file of at most 1 GiB, at most a million
 * results in one file and in one merge (a run loads at most 200000 cases,
 * harness/case_internal.h, times its backends), and (row, head) matrices of
 * at most SWA_REPORT_MAX_MATRIX_ROWS x SWA_REPORT_MAX_HEADS (the loader's
 * head limit).  A forged report cannot make either allocate more. */
#define SWA_REPORT_MAX_FILE_BYTES ((size_t)1 << 30)
#define SWA_REPORT_MAX_RESULTS 1000000
#define SWA_REPORT_MAX_HEADS 1024

#ifdef __cplusplus
extern "C" {
#endif

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
/* Text safe to print on a terminal: tab and newline stay; every other C0
 * control, DEL, the C1 controls (U+0080-U+009F), the bidirectional
 * overrides and isolates (U+202A-U+202E, U+2066-U+2069, which reorder what
 * a reader sees) and bytes that are not UTF-8 become visible escapes
 * ("\x1B", "\u202E"), so a report cannot move the cursor, retitle the
 * window or hide text when merge prints it.  Caller frees. */
char *swa_terminal_sanitize(const char *s);
/* Markdown table cell: | ` and < escaped, newlines and control characters
 * to spaces.  Caller frees. */
char *swa_markdown_cell(const char *s);

/* "2026-11-30T09:00:24Z" of a unix time. */
void swa_report_iso8601(double t, char *buf, size_t n);

/* Shared ordering: failing first (failed, error, then skipped, passed),
 * within an outcome by mismatch ratio descending, then by id.  Fills idx
 * with 0..count-1 in that order. */
void swa_report_order(const swa_run_results *rr, int *idx);

/* Worst error/allowed of a result (over out and LSE); INFINITY for NaN,
 * unwritten or guard failures, 0 when nothing was compared. */
double swa_result_severity(const swa_result *r);

/* The diagnosis family of a result: the "[key]" its diagnosis starts with
 * (harness/explain.h), "unexplained" when the diagnosis has none (explain
 * off, a report from an older swadiff). */
void swa_diagnosis_key(const char *diagnosis, char *buf, size_t n);

/* Failed results grouped by diagnosis family, largest group first (ties:
 * the group whose worst failure comes first in swa_report_order).  A CI
 * run red with 300 failures is usually two bugs; this says which. */
#define SWA_DIAG_GROUPS_MAX 64
typedef struct swa_diag_group {
    char key[128];
    int count;
    int first;             /* index into rr->items of its worst failure */
    char backends[256];    /* the distinct backends, ", "-separated */
} swa_diag_group;
/* Fills at most max groups (failures past max groups land in none) and
 * returns the number of groups; *ungrouped gets the failures left out. */
int swa_diagnosis_groups(const swa_run_results *rr, swa_diag_group *groups, int max, int *ungrouped);

#ifdef __cplusplus
}
#endif
#endif /* SWADIFF_REPORT_TEXT_H */
