/* test_xfail.c — known failures: the --xfail file (format, located errors),
 * a case's "xfail" key (loader validation), which results a mark covers,
 * and the outcomes and exit codes they give (xfailed green, xpassed strict).
 *
 * Run: ctest --test-dir build -R test_xfail */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/xfail.h"
#include "test_case_util.h"

static char path[256];

static void write_file(const char *text)
{
    snprintf(path, sizeof path, "/tmp/swadiff-xfail-XXXXXX");
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
}

static void remove_file(void)
{
    if (path[0])
        unlink(path);
}

TestSuite(xfail, .fini = remove_file);

static const char *CASE = "{\"name\": \"k\", \"requests\": [{\"qo_len\": 1, \"kv_len\": [40, 300]}],"
                          " \"num_qo_heads\": 4, \"num_kv_heads\": 2, \"head_dim\": 64, \"dtype\": \"fp16\","
                          " \"page_size\": 16, \"window_left\": 9, \"backends\": [\"prefill\", \"decode_fa2\"]%s}";

static swa_case_list load_case(const char *extra)
{
    char json[2048];
    snprintf(json, sizeof json, CASE, extra);
    return load_inline_case("k.json", json);
}

Test(xfail, file_entries_cover_ids_and_backends)
{
    write_file("# known failures of the fa2 port\n"
               "\n"
               "k/k:r0.kv_len=40   decode_fa2   # window one key short (issue 7)\n"
               "k/k:r0.kv_len=3*                # every backend: page table\n");
    swa_xfail_list list = {0};
    char err[1024] = "";
    cr_assert_eq(swa_xfail_load(path, &list, err, sizeof err), 0, "%s", err);
    cr_assert_eq(list.count, 2);
    swa_case_list cases = load_case("");
    cr_assert_eq(cases.count, 2);
    const char *r = swa_xfail_reason(&list, &cases.cases[0], "decode_fa2");
    cr_assert(r && !strcmp(r, "window one key short (issue 7)"), "reason %s", r ? r : "(none)");
    cr_assert_null(swa_xfail_reason(&list, &cases.cases[0], "prefill"), "the entry names decode_fa2 only");
    r = swa_xfail_reason(&list, &cases.cases[1], "prefill");
    cr_assert(r && !strcmp(r, "every backend: page table"), "reason %s", r ? r : "(none)");
    cr_assert_null(swa_xfail_reason(NULL, &cases.cases[1], "prefill"), "no list, no case mark: nothing");
    swa_xfail_free(&list);
    swa_case_list_free(&cases);
}

static const struct {
    const char *text, *expect;
} BAD[] = {
    {"k/k:*\n", ":1: expected ID_GLOB [BACKEND_GLOB] # REASON (a known failure and why), got no '# reason'"},
    {"# fine\nk/k:*   #   \n", ":2: expected ID_GLOB [BACKEND_GLOB] # REASON (a known failure and why), got an empty reason"},
    {"k/k:* prefill extra # why\n", ":1: expected ID_GLOB [BACKEND_GLOB] # REASON (a known failure and why), got a "
                                    "third field: extra"},
};

Test(xfail, malformed_lines_name_file_and_line)
{
    for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++) {
        write_file(BAD[i].text);
        swa_xfail_list list = {0};
        char err[1024] = "", want[1400];
        cr_expect_eq(swa_xfail_load(path, &list, err, sizeof err), -1, "accepted:\n%s", BAD[i].text);
        snprintf(want, sizeof want, "%s%s", path, BAD[i].expect);
        cr_expect(strstr(err, want) != NULL, "expected \"%s\", got \"%s\"", want, err);
        cr_expect_eq(list.count, 0);
        swa_xfail_free(&list);
        remove_file();
    }
    swa_xfail_list list = {0};
    char err[1024];
    cr_expect_eq(swa_xfail_load("/nonexistent/xfail.txt", &list, err, sizeof err), -1);
    cr_expect(strstr(err, "/nonexistent/xfail.txt: cannot open the --xfail file"), "%s", err);
}

Test(xfail, case_key_marks_its_backends)
{
    swa_case_list all = load_case(", \"xfail\": \"head mapping off by one\"");
    cr_assert_str_eq(all.cases[0].xfail, "head mapping off by one");
    cr_assert_not_null(swa_xfail_reason(NULL, &all.cases[0], "prefill"));
    cr_assert_not_null(swa_xfail_reason(NULL, &all.cases[1], "my:kernel"), "a bare reason covers every backend");
    swa_case_list_free(&all);
    swa_case_list some = load_case(", \"xfail\": {\"reason\": \"aiter port\", \"backends\": [\"decode_fa2\", \"ext:*\"]}");
    cr_assert_not_null(swa_xfail_reason(NULL, &some.cases[0], "decode_fa2"));
    cr_assert_not_null(swa_xfail_reason(NULL, &some.cases[0], "ext:flash"), "a plug-in glob");
    cr_assert_null(swa_xfail_reason(NULL, &some.cases[0], "prefill"));
    swa_case_list_free(&some);
}

static void expect_refused(const char *extra, const char *where, const char *message)
{
    char json[2048];
    snprintf(json, sizeof json, CASE, extra);
    swa_case_list list = {0};
    swa_load_error le;
    memset(&le, 0, sizeof le);
    cr_assert_eq(swa_case_parse("k.json", json, strlen(json), &list, &le), -1, "accepted %s", extra);
    char msg[2048];
    swa_load_error_format(&le, msg, sizeof msg);
    cr_expect_str_eq(le.path, where, "%s", msg);
    cr_expect(strstr(le.message, message) != NULL, "expected \"%s\" in: %s", message, msg);
    cr_expect_gt(le.line, 0);
}

Test(xfail, case_key_is_validated)
{
    expect_refused(", \"xfail\": 3", "/xfail", "expected the reason the case is known to fail (a string), or");
    expect_refused(", \"xfail\": [\"a\", \"b\"]", "/xfail", "(xfail cannot be swept)");
    expect_refused(", \"xfail\": \"\"", "/xfail", "expected a non-empty reason");
    expect_refused(", \"xfail\": {\"backends\": [\"prefill\"]}", "/xfail", "expected a \"reason\" in xfail");
    expect_refused(", \"xfail\": {\"reason\": \"r\", \"why\": 1}", "/xfail/why", "unknown key \"why\" in xfail");
    expect_refused(", \"xfail\": {\"reason\": \"r\", \"backends\": []}", "/xfail/backends",
                   "expected a non-empty list of backend names");
    expect_refused(", \"xfail\": {\"reason\": \"r\", \"backends\": [\"triton\"]}", "/xfail/backends/0",
                   "expected a backend name (");
    expect_refused(", \"xfail\": {\"reason\": \"r\", \"backends\": [\"decode_aiter\"]}", "/xfail/backends/0",
                   "expected a backend this case runs, got \"decode_aiter\"");
}

Test(xfail, outcomes_and_exit_codes)
{
    swa_result r;
    memset(&r, 0, sizeof r);
    r.outcome = SWA_OUTCOME_FAILED;
    swa_xfail_apply("known", &r);
    cr_assert_eq(r.outcome, SWA_OUTCOME_XFAILED);
    cr_assert_eq(r.xfail_was, SWA_OUTCOME_FAILED);
    cr_assert_str_eq(r.xfail, "known");
    r.outcome = SWA_OUTCOME_ERROR;
    swa_xfail_apply("known", &r);
    cr_assert_eq(r.outcome, SWA_OUTCOME_XFAILED, "an error is a failure too");
    r.outcome = SWA_OUTCOME_SKIPPED;
    r.xfail[0] = '\0';
    swa_xfail_apply("known", &r);
    cr_assert_eq(r.outcome, SWA_OUTCOME_SKIPPED, "a skip stays a skip");
    cr_assert_str_eq(r.xfail, "");
    r.outcome = SWA_OUTCOME_PASSED;
    swa_xfail_apply(NULL, &r);
    cr_assert_eq(r.outcome, SWA_OUTCOME_PASSED, "no mark, no change");
    swa_xfail_apply("known", &r);
    cr_assert_eq(r.outcome, SWA_OUTCOME_XPASSED);

    /* exit codes: xfailed is green (and counts as compared), xpassed is 1 */
    swa_run_results rr = {0};
    swa_result a;
    memset(&a, 0, sizeof a);
    a.outcome = SWA_OUTCOME_XFAILED;
    swa_run_results_add(&rr, &a);
    int n[SWA_OUTCOME_COUNT];
    cr_expect_eq(swa_run_results_counts(&rr, n), SWA_EXIT_OK, "known failures only: green");
    a.outcome = SWA_OUTCOME_PASSED;
    swa_run_results_add(&rr, &a);
    cr_expect_eq(swa_run_results_counts(&rr, n), SWA_EXIT_OK);
    a.outcome = SWA_OUTCOME_XPASSED;
    swa_run_results_add(&rr, &a);
    cr_expect_eq(swa_run_results_counts(&rr, n), SWA_EXIT_MISMATCH, "xpassed is strict");
    cr_expect(n[SWA_OUTCOME_XFAILED] == 1 && n[SWA_OUTCOME_PASSED] == 1 && n[SWA_OUTCOME_XPASSED] == 1);
    swa_run_results_free(&rr);
}

/* End to end: a mutant makes decode_fa2 fail; the marks turn that green,
 * and a mark on a passing backend turns the run red. */
Test(xfail, run_with_xfail_file, .timeout = 120)
{
    write_file("five/five:*  decode_fa2  # the left bound mutant (expected)\n");
    char cmd[2048], out[16384];
    snprintf(cmd, sizeof cmd, SWADIFF_BINARY " run --device host -q --mutant left_bound_minus1 --xfail %s "
             SWADIFF_SOURCE_DIR "/tests/data/cli/five.json --filter 'five/five:r0.kv_len=17' --filter 'five/five:r0.kv_len=65' 2>&1", path);
    FILE *p = popen(cmd, "r");
    size_t k = fread(out, 1, sizeof out - 1, p);
    out[k] = '\0';
    int rc = WEXITSTATUS(pclose(p));
    /* kv_len 17 passes under this mutant (the window covers every key), 65 fails */
    cr_expect_eq(rc, 1, "one mark passed: exit 1\n%s", out);
    cr_expect(strstr(out, "FAILED (xpassed): 0 passed, 0 failed, 0 errors, 0 skipped, 1 xfailed, 1 xpassed"), "%s", out);
    snprintf(cmd, sizeof cmd, SWADIFF_BINARY " run --device host -q --mutant left_bound_minus1 --xfail %s "
             SWADIFF_SOURCE_DIR "/tests/data/cli/five.json --filter 'five/five:r0.kv_len=65' 2>&1", path);
    p = popen(cmd, "r");
    k = fread(out, 1, sizeof out - 1, p);
    out[k] = '\0';
    rc = WEXITSTATUS(pclose(p));
    cr_expect_eq(rc, 0, "the known failure alone: green\n%s", out);
    cr_expect(strstr(out, "PASSED: 0 passed, 0 failed, 0 errors, 0 skipped, 1 xfailed, 0 xpassed"), "%s", out);
    /* a malformed file is a usage error naming file:line */
    remove_file();
    write_file("five/five:*\n");
    snprintf(cmd, sizeof cmd, SWADIFF_BINARY " run --device host --xfail %s " SWADIFF_SOURCE_DIR
             "/tests/data/cli/five.json 2>&1", path);
    p = popen(cmd, "r");
    k = fread(out, 1, sizeof out - 1, p);
    out[k] = '\0';
    rc = WEXITSTATUS(pclose(p));
    cr_expect_eq(rc, 2, "%s", out);
    char want[400];
    snprintf(want, sizeof want, "--xfail %s:1: expected ID_GLOB [BACKEND_GLOB] # REASON", path);
    cr_expect(strstr(out, want), "%s", out);
}
