/* report_junit.c — junit.xml for CI test-report views (GitLab, Jenkins,
 * GitHub test-report actions).
 *
 * Layout: <testsuites> holding one flat <testsuite> per backend, named
 * "swadiff.<backend>", in the order backends first appear in the run.  Per
 * backend rather than per case file because the classname already carries
 * backend and dtype, so a CI view groups "which kernel is broken" at the top,
 * and a case file often covers several backends (a per-file suite would mix
 * them).  Every <testcase> has classname "swadiff.<backend>.<dtype>", name
 * = case id (with " [mutant=NAME]" appended when a mutant was on, so
 * selftest runs do not produce duplicate names) and time in seconds.
 * Failures carry message = the first mismatch line and the full statistics,
 * diagnosis, case file and reproduce command in the body; runtime errors are
 * <error>; skips are <skipped message="reason"> with the case file as text.
 *
 * Only attributes the strict Jenkins xUnit schema (junit-10.xsd) allows:
 * <testsuites> name/time/tests/failures/errors (no "skipped": the suites
 * carry it), <testcase> name/classname/time (no "file": the case file is in
 * the body of a failure, error or skip, and the id starts with its stem).
 * Both were written before and made strict consumers reject the file.
 *
 * A run that did not finish (rr->incomplete) says so in every suite's
 * properties ("run_incomplete" with the reason and the count); the exit
 * code is what fails the CI step.  A run whose results are all skips
 * (exit 5, nothing compared) says so the same way ("run_nothing_compared").  (An extra <error> testcase would make
 * the CI view red too, but the file of a killed run must list exactly the
 * results it has: tests/test_report_partial.c.)
 * Everything from case files is escaped for XML 1.0 (control characters
 * and invalid UTF-8 replaced: XML 1.0 cannot carry them at all).
 *
 * Test: tests/test_report_junit.c (golden file; parsed back with Python's
 * xml.etree).
 */
#include "harness/report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int put_xml(FILE *f, const char *s, bool attr)
{
    char *e = swa_xml_escape(s, attr);
    if (!e)
        return -1;
    int rc = fputs(e, f) < 0 ? -1 : 0;
    free(e);
    return rc;
}

static const char *failure_type(const swa_result *r)
{
    if (!r->has_compare)
        return "failure";
    const swa_compare_result *c = &r->cmp;
    if (c->guard_violation) return "out_of_bounds_write";
    if (c->unwritten) return "unwritten";
    if (c->mismatched) return "mismatch";
    if (c->lse_compared && c->lse_mismatched) return "lse_mismatch";
    return "failure";
}

/* the body of <failure>/<error>: everything a reader needs without the HTML */
static int put_body(FILE *f, const swa_result *r)
{
    char details[4096];
    int rc = 0;
    rc |= put_xml(f, r->message, false);
    fputc('\n', f);
    if (r->has_compare) {
        swa_compare_format_details(&r->cmp, details, sizeof details);
        rc |= put_xml(f, details, false);
        fputc('\n', f);
    }
    if (r->diagnosis[0]) {
        fputs("Diagnosis: ", f);
        rc |= put_xml(f, r->diagnosis, false);
        fputc('\n', f);
    }
    if (r->kernel[0]) {
        fputs("Kernel: ", f);
        rc |= put_xml(f, r->kernel, false);
        fputc('\n', f);
    }
    if (r->mutant[0]) {
        fputs("Mutant: ", f);
        rc |= put_xml(f, r->mutant, false);
        fputc('\n', f);
    }
    if (r->warnings[0]) {
        fputs("Warnings: ", f);
        rc |= put_xml(f, r->warnings, false);
        fputc('\n', f);
    }
    fputs("Case file: ", f);
    rc |= put_xml(f, r->file, false);
    fputs("\nReproduce: ", f);
    rc |= put_xml(f, r->reproduce, false);
    fputc('\n', f);
    return rc;
}

static int put_testcase(FILE *f, const swa_result *r)
{
    char name[SWA_ID_MAX + 80];
    int rc = 0;
    if (r->mutant[0])
        snprintf(name, sizeof name, "%s [mutant=%s]", r->id, r->mutant);
    else
        snprintf(name, sizeof name, "%s", r->id);
    fputs("    <testcase classname=\"swadiff.", f);
    rc |= put_xml(f, r->backend, true);
    fprintf(f, ".%s\" name=\"", swa_dtype_name(r->dtype));
    rc |= put_xml(f, name, true);
    fprintf(f, "\" time=\"%.3f\"", isfinite(r->duration) && r->duration > 0 ? r->duration : 0.0);
    switch (r->outcome) {
    case SWA_OUTCOME_PASSED:
        fputs("/>\n", f);
        return rc;
    case SWA_OUTCOME_SKIPPED:
        fputs(">\n      <skipped message=\"", f);
        rc |= put_xml(f, r->message, true);
        fputs("\">Case file: ", f);
        rc |= put_xml(f, r->file, false);
        fputs("</skipped>\n    </testcase>\n", f);
        return rc;
    case SWA_OUTCOME_FAILED:
        fputs(">\n      <failure message=\"", f);
        rc |= put_xml(f, r->message, true);
        fprintf(f, "\" type=\"%s\">", failure_type(r));
        rc |= put_body(f, r);
        fputs("</failure>\n    </testcase>\n", f);
        return rc;
    case SWA_OUTCOME_ERROR:
        fputs(">\n      <error message=\"", f);
        rc |= put_xml(f, r->message, true);
        fputs("\" type=\"runtime_error\">", f);
        rc |= put_body(f, r);
        fputs("</error>\n    </testcase>\n", f);
        return rc;
    case SWA_OUTCOME_XFAILED: {
        /* a known failure: skipped with its reason (test-report tools have
         * no xfail), the failure itself in the body */
        char message[SWA_XFAIL_REASON_MAX + 64];
        snprintf(message, sizeof message, "xfailed (known failure): %s", r->xfail);
        fputs(">\n      <skipped message=\"", f);
        rc |= put_xml(f, message, true);
        fprintf(f, "\" type=\"xfailed\">It %s as expected: ", r->xfail_was == SWA_OUTCOME_ERROR ? "errored" : "failed");
        rc |= put_xml(f, r->message, false);
        fputs("</skipped>\n    </testcase>\n", f);
        return rc;
    }
    case SWA_OUTCOME_XPASSED: {
        char message[SWA_XFAIL_REASON_MAX + 96];
        snprintf(message, sizeof message, "xpassed: marked as a known failure (%s) but passed; remove the mark",
                 r->xfail);
        fputs(">\n      <failure message=\"", f);
        rc |= put_xml(f, message, true);
        fputs("\" type=\"xpassed\">", f);
        rc |= put_body(f, r);
        fputs("</failure>\n    </testcase>\n", f);
        return rc;
    }
    case SWA_OUTCOME_COUNT:
        break;
    }
    return rc;
}

int swa_report_write_junit(const swa_run_results *rr, FILE *f)
{
    int rc = 0;
    int counts[SWA_OUTCOME_COUNT];
    const bool nothing_compared = swa_run_results_counts(rr, counts) == SWA_EXIT_NOTHING_COMPARED;
    /* xpassed results are failures of the run, xfailed ones skipped */
    int failed = counts[SWA_OUTCOME_FAILED] + counts[SWA_OUTCOME_XPASSED],
        error = counts[SWA_OUTCOME_ERROR];
    char created[32];
    swa_report_iso8601(rr->started, created, sizeof created);
    char incomplete[sizeof rr->incomplete_reason + 64] = "";
    if (rr->incomplete && rr->expected > 0)
        snprintf(incomplete, sizeof incomplete, "%d of %d results: %s", rr->count, rr->expected, rr->incomplete_reason);
    else if (rr->incomplete)
        snprintf(incomplete, sizeof incomplete, "%d results: %s", rr->count, rr->incomplete_reason);
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
    fprintf(f, "<testsuites name=\"swadiff\" tests=\"%d\" failures=\"%d\" errors=\"%d\" time=\"%.3f\">\n",
            rr->count, failed, error, rr->duration > 0 ? rr->duration : 0.0);

    /* backends in order of first appearance */
    const char **backends = calloc((size_t)rr->count + 1, sizeof *backends);
    int nb = 0;
    if (!backends)
        return -1;
    for (int i = 0; i < rr->count; i++) {
        int b = 0;
        while (b < nb && strcmp(backends[b], rr->items[i].backend))
            b++;
        if (b == nb)
            backends[nb++] = rr->items[i].backend;
    }
    for (int b = 0; b < nb; b++) {
        int n[SWA_OUTCOME_COUNT] = {0};
        double time = 0;
        for (int i = 0; i < rr->count; i++)
            if (!strcmp(rr->items[i].backend, backends[b])) {
                if ((unsigned)rr->items[i].outcome < SWA_OUTCOME_COUNT)
                    n[rr->items[i].outcome]++;
                if (isfinite(rr->items[i].duration) && rr->items[i].duration > 0)
                    time += rr->items[i].duration;
            }
        fputs("  <testsuite name=\"swadiff.", f);
        rc |= put_xml(f, backends[b], true);
        fprintf(f, "\" tests=\"%d\" failures=\"%d\" errors=\"%d\" skipped=\"%d\" time=\"%.3f\" timestamp=\"%.19s\" hostname=\"",
                n[0] + n[1] + n[2] + n[3] + n[4] + n[5], n[SWA_OUTCOME_FAILED] + n[SWA_OUTCOME_XPASSED],
                n[SWA_OUTCOME_ERROR], n[SWA_OUTCOME_SKIPPED] + n[SWA_OUTCOME_XFAILED], time,
                created);
        rc |= put_xml(f, rr->env.host[0] ? rr->env.host : "unknown", true);
        fputs("\">\n    <properties>\n", f);
        const struct { const char *name, *value; } props[] = {
            {"harness_version", rr->env.harness_version}, {"git_revision", rr->env.git_revision},
            {"devices", rr->env.devices}, {"toolkit", rr->env.toolkit}, {"command_line", rr->env.command_line}};
        for (size_t p = 0; p < sizeof props / sizeof props[0]; p++) {
            fprintf(f, "      <property name=\"%s\" value=\"", props[p].name);
            rc |= put_xml(f, props[p].value, true);
            fputs("\"/>\n", f);
        }
        if (incomplete[0]) {
            fputs("      <property name=\"run_incomplete\" value=\"", f);
            rc |= put_xml(f, incomplete, true);
            fputs("\"/>\n", f);
        }
        if (nothing_compared)
            fprintf(f, "      <property name=\"run_nothing_compared\" value=\"all %d results were skipped: the run "
                       "checked no kernel (exit code %d)\"/>\n", rr->count, SWA_EXIT_NOTHING_COMPARED);
        fputs("    </properties>\n", f);
        for (int i = 0; i < rr->count; i++)
            if (!strcmp(rr->items[i].backend, backends[b]))
                rc |= put_testcase(f, &rr->items[i]);
        fputs("  </testsuite>\n", f);
    }
    free(backends);
    fputs("</testsuites>\n", f);
    return rc || ferror(f) ? -1 : 0;
}
