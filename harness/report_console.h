/* report_console.h — what swadiff prints while it runs and when it is done
 * (docs/spec.md): a progress indicator on a terminal (plain progress lines
 * otherwise), one line per failing (case, backend) with the first mismatch
 * line, a summary table, and the reproduce commands of the worst failures.
 * When GITHUB_STEP_SUMMARY is set, a Markdown summary is appended there.
 *
 * Test: tests/test_report_console.c.
 *
 * Ownership: swa_console_open allocates; swa_console_close frees. */
#ifndef SWADIFF_CONSOLE_H
#define SWADIFF_CONSOLE_H

#include <stdio.h>

#include "harness/results.h"

#define SWA_CONSOLE_WORST 5 /* failures whose reproduce command the summary prints */

typedef struct swa_console swa_console;

#ifdef __cplusplus
extern "C" {
#endif

/* out: usually stdout.  total: results expected (0 when unknown).
 * verbose: also a line per passing and skipped result.  A terminal
 * (isatty) gets a live progress line and colors (unless NO_COLOR is set or
 * TERM=dumb); anything else gets plain lines and a progress line every 10%. */
swa_console *swa_console_open(FILE *out, int total, bool verbose);

/* --quiet: no per-result lines and no progress; the summary stays. */
void swa_console_set_quiet(swa_console *con);

/* One finished result. */
void swa_console_add(swa_console *con, const swa_result *r);

/* Summary table, worst failures, the report folder (may be NULL), and the
 * GitHub step summary when GITHUB_STEP_SUMMARY names a file.  Frees con. */
void swa_console_close(swa_console *con, const swa_run_results *rr, const char *report_dir);

/* The pieces, for tests and for `swadiff merge`. */
void swa_console_write_summary(FILE *f, const swa_run_results *rr, bool color);
/* Appends a Markdown summary (counts, table, failures with reproduce
 * commands) to f.  report_dir may be NULL.  Returns 0 or -1. */
int swa_console_write_markdown(FILE *f, const swa_run_results *rr, const char *report_dir);
/* "FAIL  prefill/host/bf16  <id>  <first line>" (no newline, no color). */
void swa_console_result_line(const swa_result *r, char *buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* SWADIFF_CONSOLE_H */
