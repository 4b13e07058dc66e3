/* fuzz_escape.c — libFuzzer target over the report writers' escaping: a
 * hostile case id / name / message (from a case file) goes through the HTML,
 * XML and Markdown escapers and the whole HTML / JUnit writers; the output
 * must never contain the raw markup characters from the input.
 *
 *   tests/fuzz/run-fuzz.sh 60 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';

    char *h = swa_html_escape(s);
    char *x = swa_xml_escape(s, true);
    char *m = swa_markdown_cell(s);
    if (!h || !x || !m)
        __builtin_trap();
    if (strchr(h, '<') || strchr(h, '>') || strchr(h, '"') || strchr(x, '<') || strchr(x, '"'))
        __builtin_trap();
    for (const unsigned char *p = (const unsigned char *)x; *p; p++)
        if (*p < 0x20 && *p != '\t' && *p != '\n' && *p != '\r')
            __builtin_trap();
    free(h);
    free(x);
    free(m);

    /* the whole writers, with the string in every field a case file controls */
    swa_run_results rr;
    memset(&rr, 0, sizeof rr);
    swa_result r;
    memset(&r, 0, sizeof r);
    snprintf(r.id, sizeof r.id, "%s", s);
    snprintf(r.file, sizeof r.file, "%s", s);
    snprintf(r.message, sizeof r.message, "%s", s);
    snprintf(r.diagnosis, sizeof r.diagnosis, "%s", s);
    snprintf(r.reproduce, sizeof r.reproduce, "%s", s);
    snprintf(r.backend, sizeof r.backend, "prefill");
    snprintf(r.device, sizeof r.device, "host");
    r.outcome = size % 2 ? SWA_OUTCOME_FAILED : SWA_OUTCOME_SKIPPED;
    swa_run_results_add(&rr, &r);
    FILE *f = fopen("/dev/null", "w");
    if (f) {
        swa_report_write_html(&rr, f);
        swa_report_write_junit(&rr, f);
        fclose(f);
    }
    swa_run_results_free(&rr);
    free(s);
    return 0;
}
