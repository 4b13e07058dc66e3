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
#define SWA_REPORT_VERSION "1.0"

/* Rows kept of the (row, head) matrix in report.json: larger matrices are
 * downsampled by taking the maximum over bins of consecutive rows. */
#define SWA_REPORT_MAX_MATRIX_ROWS 256

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

#ifdef __cplusplus
}
#endif
#endif /* SWADIFF_REPORT_TEXT_H */
