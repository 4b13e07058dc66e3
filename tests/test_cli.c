/* test_cli.c — the swadiff command line as a user drives it: exit codes,
 * located case-file errors, --filter with a pasted id, --shard, devices
 * that are not there, and fault isolation (a worker that crashes in case 2
 * of 5 still leaves results for cases 1, 3, 4 and 5 in the report).
 *
 * Runs the built binary (SWADIFF_BINARY) in a temporary folder. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#define DATA SWADIFF_SOURCE_DIR "/tests/data/cli"

/* Runs a shell command, captures stdout+stderr into out, returns the exit code. */
static int run(const char *cmd, char *out, size_t n)
{
    char full[4096];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    FILE *p = popen(full, "r");
    cr_assert(p, "popen(%s)", cmd);
    size_t k = 0;
    if (out && n) {
        k = fread(out, 1, n - 1, p);
        out[k] = '\0';
    } else {
        char sink[4096];
        while (fread(sink, 1, sizeof sink, p) > 0) {}
    }
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static cJSON *read_json(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)len + 1);
    cr_assert_eq(fread(buf, 1, (size_t)len, f), (size_t)len);
    buf[len] = '\0';
    fclose(f);
    cJSON *j = cJSON_Parse(buf);
    free(buf);
    cr_assert(j, "%s is not valid JSON", path);
    return j;
}

static char tmpdir[256];

static void make_tmp(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/swadiff-cli-XXXXXX");
    cr_assert(mkdtemp(tmpdir));
}

static void remove_tmp(void)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    (void)!system(cmd);
}

TestSuite(cli, .init = make_tmp, .fini = remove_tmp, .timeout = 120);

Test(cli, validate_broken_file_exits_2_with_location)
{
    char out[8192];
    int rc = run(SWADIFF_BINARY " validate " DATA "/broken.json", out, sizeof out);
    cr_assert_eq(rc, 2, "exit %d, output:\n%s", rc, out);
    /* "file:line:column: /json/path: message" pointing at window_right */
    cr_assert(strstr(out, "broken.json:8:37: /window_right: expected window_right 0 or -1 with causal true") != NULL,
              "expected the exact location and message, got:\n%s", out);
    cr_assert(strstr(out, "/window_right") != NULL, "no JSON path in:\n%s", out);
}

Test(cli, validate_good_file_exits_0)
{
    char out[8192];
    int rc = run(SWADIFF_BINARY " validate " DATA "/five.json", out, sizeof out);
    cr_assert_eq(rc, 0, "exit %d, output:\n%s", rc, out);
    cr_assert(strstr(out, "5 cases") != NULL, "expected 5 expanded cases:\n%s", out);
}

Test(cli, run_refuses_broken_case_file_and_runs_nothing)
{
    char cmd[1024], out[8192], path[512];
    snprintf(cmd, sizeof cmd, SWADIFF_BINARY " run --device host --report %s/r " DATA "/five.json " DATA
             "/broken.json", tmpdir);
    int rc = run(cmd, out, sizeof out);
    cr_assert_eq(rc, 2, "exit %d:\n%s", rc, out);
    snprintf(path, sizeof path, "%s/r/report.json", tmpdir);
    cr_assert(access(path, F_OK) != 0, "a report was written although the case files were invalid");
}

Test(cli, pasted_id_reruns_exactly_that_case)
{
    char out[16384], cmd[1024];
    int rc = run(SWADIFF_BINARY " list cases " DATA "/five.json", out, sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    char *first = strtok(out, "\n");
    char *second = strtok(NULL, "\n");
    cr_assert(first && second, "expected several ids");
    char id[256];
    snprintf(id, sizeof id, "%s", second);
    snprintf(cmd, sizeof cmd, SWADIFF_BINARY " run --device host --report %s/r --filter '%s' " DATA "/five.json",
             tmpdir, id);
    rc = run(cmd, out, sizeof out);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    char path[512];
    snprintf(path, sizeof path, "%s/r/report.json", tmpdir);
    cJSON *j = read_json(path);
    cJSON *cases = cJSON_GetObjectItem(j, "cases");
    cr_assert_eq(cJSON_GetArraySize(cases), 1, "--filter with an exact id ran %d results",
                 cJSON_GetArraySize(cases));
    cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(cases, 0), "id")->valuestring, id);
    cJSON_Delete(j);
}

Test(cli, unknown_filter_is_a_usage_error)
{
    char out[4096];
    int rc = run(SWADIFF_BINARY " run --device host --filter no/such:case " DATA "/five.json", out, sizeof out);
    cr_assert_eq(rc, 2, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "no case matches") != NULL, "%s", out);
}

Test(cli, shards_partition_the_cases)
{
    int seen = 0;
    for (int i = 1; i <= 3; i++) {
        char cmd[1024], out[8192], path[512];
        snprintf(cmd, sizeof cmd, SWADIFF_BINARY " run --device host --quiet --shard %d/3 --report %s/s%d " DATA
                 "/five.json", i, tmpdir, i);
        int rc = run(cmd, out, sizeof out);
        cr_assert_eq(rc, 0, "shard %d exit %d:\n%s", i, rc, out);
        snprintf(path, sizeof path, "%s/s%d/report.json", tmpdir, i);
        cJSON *j = read_json(path);
        int n = cJSON_GetArraySize(cJSON_GetObjectItem(j, "cases"));
        cr_assert(n == 1 || n == 2, "shard %d/3 of 5 cases ran %d", i, n);
        seen += n;
        cJSON_Delete(j);
    }
    cr_assert_eq(seen, 5, "the three shards ran %d results, expected 5", seen);
}

Test(cli, bad_shard_is_a_usage_error)
{
    int rc = run(SWADIFF_BINARY " run --device host --shard 4/3 " DATA "/five.json", NULL, 0);
    cr_assert_eq(rc, 2);
    rc = run(SWADIFF_BINARY " run --device host --shard x " DATA "/five.json", NULL, 0);
    cr_assert_eq(rc, 2);
}

/* ---- exit codes and the skip rules ---------------------------------------------

 * A run that compared nothing exits 5 (every result skipped, or none); 1
 * outranks 3, 3 outranks 5, one pass among skips is 0.  A skip of a backend
 * the case file names in "backends" fails the result unless the case marks
 * it with "expect_skip"; an expected skip that does not happen fails too. */

/* A one-case decode file in tmpdir; extra is inserted as further keys. */
static void write_case(const char *name, const char *dtype, const char *backends, const char *extra, char *path,
                       size_t n)
{
    snprintf(path, n, "%s/%s.json", tmpdir, name);
    FILE *f = fopen(path, "w");
    cr_assert(f, "cannot write %s", path);
    fprintf(f, "{\n  \"name\": \"%s\",\n  \"requests\": [{\"qo_len\": 1, \"kv_len\": 64}],\n"
               "  \"num_qo_heads\": 4, \"num_kv_heads\": 2, \"head_dim\": 64, \"dtype\": \"%s\",\n"
               "  \"window_left\": 7,\n  \"backends\": [%s]%s%s\n}\n",
            name, dtype, backends, extra[0] ? ",\n  " : "", extra);
    fclose(f);
}

/* Runs swadiff run with --report tmpdir/<tag> over paths; the exit code. */
static int run_report(const char *tag, const char *paths, const char *extra, char *out, size_t n)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, SWADIFF_BINARY " run --device host --report %s/%s %s %s", tmpdir, tag, extra, paths);
    return run(cmd, out, n);
}

/* The outcome and message of result k of tmpdir/<tag>/report.json. */
static void result_of(const char *tag, int k, char *outcome, char *message, char *diagnosis, size_t n, int *exitcode)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s/report.json", tmpdir, tag);
    cJSON *j = read_json(path);
    cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "cases"), k);
    cr_assert(c, "%s: no result %d", path, k);
    snprintf(outcome, n, "%s", cJSON_GetObjectItem(c, "outcome")->valuestring);
    snprintf(message, n, "%s", cJSON_GetObjectItem(c, "message")->valuestring);
    cJSON *d = cJSON_GetObjectItem(c, "diagnosis");
    snprintf(diagnosis, n, "%s", cJSON_IsString(d) ? d->valuestring : "");
    *exitcode = cJSON_GetObjectItem(j, "exitcode")->valueint;
    cJSON_Delete(j);
}

Test(cli, a_run_of_expected_skips_only_exits_5_nothing_compared)
{
    char path[512], out[16384], outcome[1024], msg[1024], diag[1024];
    write_case("fp32", "fp32", "\"decode_fa2\", \"decode_aiter\"",
               "\"expect_skip\": {\"decode_fa2\": \"no fp32 path\", \"decode_aiter\": \"no fp32 path\"}", path,
               sizeof path);
    int rc = run_report("r", path, "", out, sizeof out);
    cr_expect_eq(rc, 5, "exit %d:\n%s", rc, out);
    cr_expect(strstr(out, "NOTHING COMPARED: all 2 results were skipped"), "%s", out);
    cr_expect(strstr(out, "\nNOTHING COMPARED: 0 passed, 0 failed, 0 errors, 2 skipped"), "the verdict line:\n%s", out);
    int code;
    result_of("r", 0, outcome, msg, diag, sizeof msg, &code);
    cr_expect_str_eq(outcome, "skipped");
    cr_expect(strstr(msg, "expected skip: decode_fa2 runs fp16 and bf16 only"), "%s", msg);
    cr_expect_eq(code, 5, "report.json exitcode %d", code);
    char junit[512], *xml = NULL;
    snprintf(junit, sizeof junit, "cat %s/r/junit.xml", tmpdir);
    static char text[1 << 16];
    run(junit, text, sizeof text);
    xml = strstr(text, "name=\"run_nothing_compared\" value=\"all 2 results were skipped");
    cr_expect(xml, "junit.xml should say nothing was compared:\n%s", text);
    snprintf(junit, sizeof junit, "cat %s/r/report.html", tmpdir);
    run(junit, text, sizeof text);
    cr_expect(strstr(text, "swadiff: nothing compared (2 results, all skipped)"), "report.html banner");
}

Test(cli, exit_codes_follow_the_precedence_1_3_5_0)
{
    char skips[512], out[16384], paths[2048];
    write_case("fp32", "fp32", "\"decode_fa2\"", "\"expect_skip\": {\"decode_fa2\": \"no fp32 path\"}", skips,
               sizeof skips);
    /* one pass among skips is green */
    snprintf(paths, sizeof paths, "%s " DATA "/five.json", skips);
    int rc = run_report("pass", paths, "-q", out, sizeof out);
    cr_expect_eq(rc, 0, "passes + skips: exit %d:\n%s", rc, out);
    cr_expect(strstr(out, "\nPASSED: 5 passed, 0 failed, 0 errors, 1 skipped"), "%s", out);
    /* a mismatch with skips: 1 */
    rc = run_report("mismatch", paths, "-q --mutant left_bound_minus1", out, sizeof out);
    cr_expect_eq(rc, 1, "mismatch + skips: exit %d:\n%s", rc, out);
    /* errors only (every case over a 1-byte device cap), nothing compared:
     * 3, not 5 (errors and skips: tests/test_external.c) */
    rc = run("SWADIFF_MAX_DEVICE_BYTES=1 " SWADIFF_BINARY " run --device host -q " DATA "/five.json", out, sizeof out);
    cr_expect_eq(rc, 3, "errors only: exit %d:\n%s", rc, out);
    cr_expect(strstr(out, "\nERROR: 0 passed, 0 failed, 5 errors, 0 skipped"), "%s", out);
}

/* decode_auto routes an fp32 case to decode_aiter, which refuses it: the
 * case file names decode_auto, so the skip turns the run red. */
Test(cli, a_skip_of_a_backend_the_case_names_fails_the_result)
{
    char path[512], out[16384], outcome[1024], msg[1024], diag[1024];
    write_case("routed", "fp32", "\"decode_auto\"", "", path, sizeof path);
    int rc = run_report("r", path, "", out, sizeof out);
    cr_expect_eq(rc, 1, "exit %d:\n%s", rc, out);
    int code;
    result_of("r", 0, outcome, msg, diag, sizeof msg, &code);
    cr_expect_str_eq(outcome, "failed");
    cr_expect(strstr(msg, "decode_auto skipped a case whose file names it in \"backends\": decode_auto routes this "
                          "case to decode_aiter, which cannot run it") && strstr(msg, "\"expect_skip\""),
              "the message should give the reason and the way out: %s", msg);
    cr_expect(strstr(diag, "[named_backend_skipped]") == diag, "diagnosis: %s", diag);
    cr_expect(strstr(out, "FAILED: 0 passed, 1 failed"), "%s", out);
    cr_expect_eq(code, 1);
    /* selftest's unmutated pass fails on it too (its kill counts skip skips) */
    char cmd[1024];
    snprintf(cmd, sizeof cmd, SWADIFF_BINARY " selftest --device host --mutant aiter_s_eq_l %s", path);
    rc = run(cmd, out, sizeof out);
    cr_expect_eq(rc, 1, "selftest exit %d:\n%s", rc, out);
    cr_expect(strstr(out, "unmutated: 0 of 1 results passed, 0 skipped as their cases expect — FIRST FAILURE: "
                          "routed/routed [decode_auto]: decode_auto skipped a case whose file names it"), "%s", out);
}

Test(cli, an_expected_skip_for_another_reason_or_not_taken_fails)
{
    char path[512], out[16384], outcome[1024], msg[1024], diag[1024];
    int code;
    /* it skips, but not for the reason the case names */
    write_case("other_reason", "fp32", "\"decode_fa2\"", "\"expect_skip\": {\"decode_fa2\": \"head_dim 96\"}", path,
               sizeof path);
    int rc = run_report("a", path, "-q", out, sizeof out);
    cr_expect_eq(rc, 1, "exit %d:\n%s", rc, out);
    result_of("a", 0, outcome, msg, diag, sizeof msg, &code);
    cr_expect_str_eq(outcome, "failed");
    cr_expect(strstr(msg, "expected decode_fa2 to skip with a reason containing \"head_dim 96\", but it skipped with: "
                          "decode_fa2 runs fp16 and bf16 only"), "%s", msg);
    /* it does not skip at all: the expected skip did not happen */
    write_case("ran", "fp16", "\"decode_fa2\", \"decode_aiter\"",
               "\"expect_skip\": {\"decode_aiter\": \"no fp16 path\"}", path, sizeof path);
    rc = run_report("b", path, "-q", out, sizeof out);
    cr_expect_eq(rc, 1, "exit %d:\n%s", rc, out);
    result_of("b", 0, outcome, msg, diag, sizeof msg, &code);
    cr_expect_str_eq(outcome, "passed", "decode_fa2, not named in expect_skip, runs and passes: %s", msg);
    result_of("b", 1, outcome, msg, diag, sizeof msg, &code);
    cr_expect_str_eq(outcome, "failed");
    cr_expect(strstr(msg, "expected decode_aiter to skip this case (a reason containing \"no fp16 path\"), but it "
                          "ran (and matched the reference)"), "%s", msg);
    cr_expect(strstr(diag, "[expected_skip_not_taken]") == diag, "diagnosis: %s", diag);
    /* a bad expect_skip is a case-file error, located */
    rc = run(SWADIFF_BINARY " run --device host " SWADIFF_SOURCE_DIR "/tests/data/cases_bad/expect_skip_not_run.json",
             out, sizeof out);
    cr_expect_eq(rc, 2, "exit %d:\n%s", rc, out);
    cr_expect(strstr(out, "expect_skip_not_run.json:7:48: /expect_skip/decode_aiter: expected a backend this case runs"),
              "%s", out);
}

Test(cli, missing_gpu_exits_77)
{
    char out[4096];
    /* this test machine has no GPU: a build without the device or without a
     * usable device both answer 77 */
    int rc = run("CUDA_VISIBLE_DEVICES= " SWADIFF_BINARY " run --device cuda " DATA "/five.json", out, sizeof out);
    cr_assert_eq(rc, 77, "exit %d:\n%s", rc, out);
    rc = run(SWADIFF_BINARY " run --device hip " DATA "/five.json", out, sizeof out);
    cr_assert_eq(rc, 77, "exit %d:\n%s", rc, out);
}

Test(cli, unknown_option_and_mutant_are_usage_errors)
{
    cr_assert_eq(run(SWADIFF_BINARY " run --frobnicate", NULL, 0), 2);
    cr_assert_eq(run(SWADIFF_BINARY " run --mutant no_such_bug " DATA "/five.json", NULL, 0), 2);
    cr_assert_eq(run(SWADIFF_BINARY " nonsense", NULL, 0), 2);
    cr_assert_eq(run(SWADIFF_BINARY " run --help", NULL, 0), 0);
}

Test(cli, crash_in_case_2_of_5_keeps_the_other_results)
{
    char out[16384], cmd[2048], path[512];
    int rc = run(SWADIFF_BINARY " list cases " DATA "/five.json", out, sizeof out);
    cr_assert_eq(rc, 0);
    char *ids[5];
    char *save = NULL;
    for (int i = 0; i < 5; i++) {
        ids[i] = strtok_r(i ? NULL : out, "\n", &save);
        cr_assert(ids[i], "expected 5 ids");
    }
    snprintf(cmd, sizeof cmd, "SWADIFF_TEST_FAULT='%s' " SWADIFF_BINARY " run --device host --report %s/r " DATA
             "/five.json", ids[1], tmpdir);
    char log[16384];
    rc = run(cmd, log, sizeof log);
    cr_assert_eq(rc, 3, "a crashed case is a runtime error (exit 3), got %d:\n%s", rc, log);
    snprintf(path, sizeof path, "%s/r/report.json", tmpdir);
    cJSON *j = read_json(path);
    cJSON *cases = cJSON_GetObjectItem(j, "cases");
    cr_assert_eq(cJSON_GetArraySize(cases), 5, "expected 5 results, got %d", cJSON_GetArraySize(cases));
    for (int i = 0; i < 5; i++) {
        cJSON *c = NULL;
        for (int k = 0; k < 5; k++) {
            cJSON *x = cJSON_GetArrayItem(cases, k);
            if (!strcmp(cJSON_GetObjectItem(x, "id")->valuestring, ids[i]))
                c = x;
        }
        cr_assert(c, "no result for %s", ids[i]);
        const char *outcome = cJSON_GetObjectItem(c, "outcome")->valuestring;
        if (i == 1) {
            cr_assert_str_eq(outcome, "error");
            cr_assert(strstr(cJSON_GetObjectItem(c, "message")->valuestring, "signal") != NULL,
                      "message should name the signal: %s", cJSON_GetObjectItem(c, "message")->valuestring);
        } else {
            cr_assert_str_eq(outcome, "passed", "case %d (%s) after the crash: %s", i + 1, ids[i], outcome);
        }
    }
    cJSON_Delete(j);
}

Test(cli, timeout_is_an_error_and_the_run_goes_on)
{
    char out[16384], cmd[2048], path[512];
    int rc = run(SWADIFF_BINARY " list cases " DATA "/five.json", out, sizeof out);
    cr_assert_eq(rc, 0);
    char *first = strtok(out, "\n");
    snprintf(cmd, sizeof cmd, "SWADIFF_TEST_HANG='%s' " SWADIFF_BINARY " run --device host --timeout 2 --report %s/r "
             DATA "/five.json", first, tmpdir);
    char log[16384];
    rc = run(cmd, log, sizeof log);
    cr_assert_eq(rc, 3, "exit %d:\n%s", rc, log);
    snprintf(path, sizeof path, "%s/r/report.json", tmpdir);
    cJSON *j = read_json(path);
    cJSON *cases = cJSON_GetObjectItem(j, "cases");
    cr_assert_eq(cJSON_GetArraySize(cases), 5);
    int errors = 0, passed = 0;
    for (int k = 0; k < 5; k++) {
        cJSON *x = cJSON_GetArrayItem(cases, k);
        const char *o = cJSON_GetObjectItem(x, "outcome")->valuestring;
        if (!strcmp(o, "error")) {
            errors++;
            cr_assert(strstr(cJSON_GetObjectItem(x, "message")->valuestring, "timeout") != NULL);
            cr_assert_str_eq(cJSON_GetObjectItem(x, "id")->valuestring, first);
        } else if (!strcmp(o, "passed")) {
            passed++;
        }
    }
    cr_assert_eq(errors, 1);
    cr_assert_eq(passed, 4);
    cJSON_Delete(j);
}

/* Runs five.json with one memory cap in the environment (exit 3 expected)
 * and counts its results: errors (each must name its case and contain
 * every one of the needles), and passes. */
static void run_capped(const char *env, const char *const *needles, int *refused, int *passed)
{
    char cmd[1024], path[512], log[16384];
    snprintf(cmd, sizeof cmd, "%s " SWADIFF_BINARY " run --device host --report %s/r " DATA "/five.json", env, tmpdir);
    int rc = run(cmd, log, sizeof log);
    cr_assert_eq(rc, 3, "exit %d:\n%s", rc, log);
    snprintf(path, sizeof path, "%s/r/report.json", tmpdir);
    cJSON *j = read_json(path);
    cJSON *cases = cJSON_GetObjectItem(j, "cases");
    *refused = *passed = 0;
    for (int k = 0; k < cJSON_GetArraySize(cases); k++) {
        cJSON *x = cJSON_GetArrayItem(cases, k);
        const char *outcome = cJSON_GetObjectItem(x, "outcome")->valuestring;
        const char *msg = cJSON_GetObjectItem(x, "message")->valuestring;
        if (!strcmp(outcome, "passed"))
            (*passed)++;
        if (strcmp(outcome, "error") != 0)
            continue;
        cr_assert(strstr(msg, cJSON_GetObjectItem(x, "id")->valuestring), "the message names the case: %s", msg);
        for (const char *const *n = needles; *n; n++)
            cr_assert(strstr(msg, *n), "\"%s\" missing: %s", *n, msg);
        (*refused)++;
    }
    cJSON_Delete(j);
}

Test(cli, case_too_large_for_memory_is_refused_before_allocating)
{
    static const char *const needles[] = {"GiB of host memory", NULL};
    int refused, passed;
    run_capped("SWADIFF_MAX_HOST_BYTES=100000", needles, &refused, &passed);
    /* the larger kv_len cases exceed 100 kB; the smallest may fit */
    cr_assert_geq(refused, 3, "expected the large cases refused with a memory message");
}

Test(cli, case_too_large_for_device_memory_is_refused_before_upload)
{
    /* the cap stands in for a small GPU: the host emulation has no memory of
     * its own, so only SWADIFF_MAX_DEVICE_BYTES limits it; the message names
     * the bytes, the device and the cap */
    static const char *const needles[] = {"bytes) of device memory on host", "SWADIFF_MAX_DEVICE_BYTES", NULL};
    int refused, passed;
    run_capped("SWADIFF_MAX_DEVICE_BYTES=60000", needles, &refused, &passed);
    /* the long cases exceed 60 kB of device memory; the short ones still run */
    cr_assert_geq(refused, 1, "expected cases refused with a device-memory message");
    cr_assert_geq(passed, 1, "expected the small cases to run");
}

Test(cli, selftest_fails_when_a_mutant_survives_and_passes_when_killed)
{
    char out[16384], cmd[1024], path[512];
    /* five.json runs decode_fa2 only: the AITER mapping mutant cannot be killed */
    int rc = run(SWADIFF_BINARY " selftest --device host --mutant aiter_s_eq_l " DATA "/five.json", out, sizeof out);
    cr_assert_eq(rc, 1, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "aiter_s_eq_l") && strstr(out, "NO"), "%s", out);
    /* the off-by-one left bound is killed by the window_left 31 decode cases */
    snprintf(cmd, sizeof cmd, SWADIFF_BINARY " selftest --device host --mutant left_bound_gt --report %s/st " DATA
             "/five.json", tmpdir);
    rc = run(cmd, out, sizeof out);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    snprintf(path, sizeof path, "%s/st/selftest.json", tmpdir);
    cJSON *j = read_json(path);
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(j, "passed")));
    cJSON *m = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "mutants"), 0);
    cr_assert_str_eq(cJSON_GetObjectItem(m, "name")->valuestring, "left_bound_gt");
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(m, "killed")));
    cJSON_Delete(j);
    snprintf(path, sizeof path, "%s/st/report.html", tmpdir);
    cr_assert_eq(access(path, F_OK), 0, "selftest --report writes report.html with the kill matrix");
    /* the matrix drawn from selftest.json's data: a row for the mutant, a
     * column for the case file, the cell its largest mismatch ratio */
    snprintf(cmd, sizeof cmd, "grep -c 'id=\"selftest\"' '%s'; grep -o '<th>five</th>' '%s'; "
             "grep -o '<code>left_bound_gt</code></td><td>[0-9]*</td><td>yes</td><td>[0-9.]*%%</td>' '%s'",
             path, path, path);
    rc = run(cmd, out, sizeof out);
    cr_expect_eq(rc, 0, "%s", out);
    cr_expect(strstr(out, "1\n<th>five</th>\n<code>left_bound_gt</code>"), "%s", out);
}

Test(cli, shrink_writes_a_smaller_case_that_still_fails)
{
    char out[16384], cmd[2048], path[512];
    int rc = run(SWADIFF_BINARY " list cases " DATA "/five.json", out, sizeof out);
    cr_assert_eq(rc, 0);
    char *save = NULL, *id = strtok_r(out, "\n", &save);
    for (int i = 0; i < 4; i++) /* the kv_len 257 case */
        id = strtok_r(NULL, "\n", &save);
    cr_assert(id);
    snprintf(path, sizeof path, "%s/small.json", tmpdir);
    snprintf(cmd, sizeof cmd, SWADIFF_BINARY " shrink '%s' --backend decode_fa2 --mutant left_bound_gt --device host"
             " --out %s " DATA "/five.json", id, path);
    char log[8192];
    rc = run(cmd, log, sizeof log);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, log);
    cr_assert(strstr(log, "rerun: ") != NULL, "shrink prints the rerun command:\n%s", log);
    /* the bug it shrank is the bug it started with */
    cr_assert(strstr(log, "diagnosis kept: [window_l_minus_1] ") != NULL, "shrink keeps the diagnosis:\n%s", log);
    cJSON *j = read_json(path);
    cJSON *req = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "requests"), 0);
    int kv = cJSON_GetObjectItem(req, "kv_len")->valueint;
    cr_assert_lt(kv, 257, "kv_len not reduced: %d", kv);
    cr_assert_eq(cJSON_GetObjectItem(j, "num_kv_heads")->valueint, 1);
    cJSON_Delete(j);
    /* the written case still fails under the mutant and passes without it */
    snprintf(cmd, sizeof cmd, SWADIFF_BINARY " run --device host --quiet --mutant left_bound_gt --report %s/rs %s",
             tmpdir, path);
    cr_assert_eq(run(cmd, NULL, 0), 1);
    char rep[600];
    snprintf(rep, sizeof rep, "%s/rs/report.json", tmpdir);
    cJSON *rj = read_json(rep);
    cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(rj, "cases"), 0);
    const char *diag = cJSON_GetStringValue(cJSON_GetObjectItem(c0, "diagnosis"));
    cr_assert(diag && !strncmp(diag, "[window_l_minus_1] ", 19), "diagnosis of the shrunk case: %s", diag ? diag : "-");
    cJSON_Delete(rj);
    snprintf(cmd, sizeof cmd, SWADIFF_BINARY " run --device host --quiet %s", path);
    cr_assert_eq(run(cmd, NULL, 0), 0);
    /* --any-failure belongs to shrink only */
    cr_assert_eq(run(SWADIFF_BINARY " explain x --any-failure " DATA "/five.json", NULL, 0), 2);
}

Test(cli, device_fault_mutant_in_case_2_of_5_keeps_the_other_results)
{
    /* the same proof as above through the device_fault mutant, restricted to
     * case 2 with --mutant-only (on the H200 this is a real illegal address) */
    char out[16384], cmd[2048], path[512];
    int rc = run(SWADIFF_BINARY " list cases " DATA "/five.json", out, sizeof out);
    cr_assert_eq(rc, 0);
    char *save = NULL, *first = strtok_r(out, "\n", &save), *second = strtok_r(NULL, "\n", &save);
    cr_assert(first && second);
    snprintf(cmd, sizeof cmd, SWADIFF_BINARY " run --device host --mutant device_fault --mutant-only '%s' --report "
             "%s/r " DATA "/five.json", second, tmpdir);
    char log[16384];
    rc = run(cmd, log, sizeof log);
    cr_assert_eq(rc, 3, "exit %d:\n%s", rc, log);
    snprintf(path, sizeof path, "%s/r/report.json", tmpdir);
    cJSON *j = read_json(path);
    cJSON *cases = cJSON_GetObjectItem(j, "cases");
    cr_assert_eq(cJSON_GetArraySize(cases), 5);
    int passed = 0;
    for (int k = 0; k < 5; k++) {
        cJSON *x = cJSON_GetArrayItem(cases, k);
        const char *o = cJSON_GetObjectItem(x, "outcome")->valuestring;
        if (!strcmp(cJSON_GetObjectItem(x, "id")->valuestring, second)) {
            cr_assert_str_eq(o, "error");
            /* SIGSEGV, or SIGABRT when AddressSanitizer's handler reports it first */
            const char *msg = cJSON_GetObjectItem(x, "message")->valuestring;
            cr_assert(strstr(msg, "signal 11") || strstr(msg, "signal 6"), "%s", msg);
        } else {
            passed += !strcmp(o, "passed");
        }
    }
    cr_assert_eq(passed, 4);
    cJSON_Delete(j);
}

Test(cli, dump_writes_inputs_reference_and_outputs)
{
    char cmd[1024], path[1024], out[8192];
    int rc = run(SWADIFF_BINARY " list cases " DATA "/five.json", out, sizeof out);
    cr_assert_eq(rc, 0);
    char *id = strtok(out, "\n");
    snprintf(cmd, sizeof cmd, SWADIFF_BINARY " run --device host --quiet --dump %s/d --filter '%s' " DATA "/five.json",
             tmpdir, id);
    rc = run(cmd, NULL, 0);
    cr_assert_eq(rc, 0);
    static const char *files[] = {"q.npy", "k.npy", "v.npy", "out_ref.npy", "lse_ref.npy", "meta.json",
                                  "out_decode_fa2.npy", "lse_decode_fa2.npy"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(cmd, sizeof cmd, "ls %s/d/*/%s", tmpdir, files[i]);
        cr_assert_eq(run(cmd, path, sizeof path), 0, "--dump did not write %s", files[i]);
    }
}

/* bench --device cuda --peers: a missing peers script or a budget that is
 * not positive is a usage error before any question to the GPU (so it is
 * checked on a machine without one too). */
Test(cli, bench_peers_bad_arguments_are_usage_errors)
{
    char log[4096];
    int rc = run(SWADIFF_BINARY " bench --device cuda --peers --peers-script /nonexistent/peers.py", log, sizeof log);
    if (rc == 77 && strstr(log, "built without the CUDA device"))
        cr_skip_test("this swadiff has no CUDA device");
    cr_assert_eq(rc, 2, "exit %d:\n%s", rc, log);
    cr_assert(strstr(log, "cannot read the peers script /nonexistent/peers.py"), "%s", log);
    rc = run(SWADIFF_BINARY " bench --device cuda --peers --peers-script " SWADIFF_SOURCE_DIR
             "/bench/peers_bench.py --peers-budget 0", log, sizeof log);
    cr_assert_eq(rc, 2, "exit %d:\n%s", rc, log);
    cr_assert(strstr(log, "--peers-budget must be > 0"), "%s", log);
}

/* --where: the cases and the backends whose fields meet every condition */
Test(cli, where_selects_cases_and_backends)
{
    char cmd[1024], out[16384], path[512];
    snprintf(cmd, sizeof cmd, SWADIFF_BINARY " run --device host --report %s/r --where 'dtype=bf16,backend=prefill,"
             "head_dim>=64' " DATA "/where.json", tmpdir);
    int rc = run(cmd, out, sizeof out);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    snprintf(path, sizeof path, "%s/r/report.json", tmpdir);
    cJSON *j = read_json(path);
    cJSON *cases = cJSON_GetObjectItem(j, "cases");
    cr_assert_eq(cJSON_GetArraySize(cases), 1, "expected one (case, backend), got %d:\n%s", cJSON_GetArraySize(cases),
                 out);
    cJSON *c = cJSON_GetArrayItem(cases, 0);
    cr_assert_str_eq(cJSON_GetObjectItem(c, "backend")->valuestring, "prefill");
    cr_assert_str_eq(cJSON_GetObjectItem(c, "dtype")->valuestring, "bf16");
    /* the report says what selected the cases (shards of another --where do not merge) */
    cJSON *filters = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "selection"), "filters");
    cr_assert(cJSON_GetArraySize(filters) == 1 &&
                  strstr(cJSON_GetArrayItem(filters, 0)->valuestring, "--where dtype=bf16,backend=prefill"),
              "selection.filters does not record the --where");
    cJSON_Delete(j);

    /* list cases takes the same expression */
    rc = run(SWADIFF_BINARY " list cases --where 'dtype=fp16' " DATA "/where.json", out, sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "dtype=fp16") && !strstr(out, "dtype=bf16"), "%s", out);
}

Test(cli, where_errors_are_usage_errors)
{
    char out[8192];
    int rc = run(SWADIFF_BINARY " run --device host --where 'dtype=bf16,head_dim>=x' " DATA "/where.json", out,
                 sizeof out);
    cr_assert_eq(rc, 2, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "at column 12 (head_dim>=x): head_dim is a number"), "%s", out);
    rc = run(SWADIFF_BINARY " run --device host --where 'head_dim>64' " DATA "/where.json", out, sizeof out);
    cr_assert_eq(rc, 2, "a --where that matches nothing: exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "no case matches --where head_dim>64"), "%s", out);
    rc = run(SWADIFF_BINARY " list cases --where 'colour=red' " DATA "/where.json", out, sizeof out);
    cr_assert_eq(rc, 2, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "unknown field 'colour'"), "%s", out);
    /* a backend none of the selected cases runs: nothing to run */
    rc = run(SWADIFF_BINARY " run --device host --where 'backend=decode_aiter' " DATA "/where.json", out, sizeof out);
    cr_assert_eq(rc, 2, "exit %d:\n%s", rc, out);
}

Test(cli, list_cases_fields_shows_every_field)
{
    char out[16384];
    int rc = run(SWADIFF_BINARY " list cases --fields " DATA "/where.json", out, sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    /* fields the id does not carry, and both backends */
    cr_assert(strstr(out, " head_dim=64 "), "%s", out);
    cr_assert(strstr(out, " window_left=9 "), "%s", out);
    cr_assert(strstr(out, " backend=prefill|decode_fa2 "), "%s", out);
    cr_assert(strstr(out, " r0.kv_len=40"), "%s", out);
    cr_assert(strstr(out, " dtype=bf16 "), "%s", out);
}

/* The command table drives both the help and the dispatch: every command
 * the help lists answers its own --help (exit 0, a usage line naming it),
 * and a name not in it is a usage error that prints the same list. */
Test(cli, every_command_in_the_help_dispatches)
{
    static char help[8192], sub[16384];
    cr_assert_eq(run(SWADIFF_BINARY " --help", help, sizeof help), 0, "%s", help);
    const char *list = strstr(help, "commands:\n");
    cr_assert(list, "%s", help);
    int commands = 0;
    for (const char *line = strchr(list, '\n') + 1; line[0] == ' ' && line[1] == ' ' && line[2] != ' ';
         line = strchr(line, '\n') + 1) {
        char name[32];
        cr_assert_eq(sscanf(line, " %31[a-z]", name), 1, "%s", line);
        char cmd[256];
        snprintf(cmd, sizeof cmd, "%s %s --help", SWADIFF_BINARY, name);
        int rc = run(cmd, sub, sizeof sub);
        cr_expect_eq(rc, 0, "swadiff %s --help: exit %d\n%s", name, rc, sub);
        cr_expect(strstr(sub, "usage: swadiff") && strstr(sub, name), "swadiff %s --help:\n%s", name, sub);
        commands++;
        while (strchr(line, '\n') && strchr(line, '\n')[1] == ' ' && strchr(line, '\n')[3] == ' ')
            line = strchr(line, '\n') + 1; /* a summary's second line */
    }
    cr_expect_eq(commands, 9, "run validate list bench merge selftest explain shrink coverage:\n%s", help);
    cr_expect_eq(run(SWADIFF_BINARY " frobnicate", sub, sizeof sub), 2);
    cr_expect(strstr(sub, "unknown command 'frobnicate'") && strstr(sub, "commands:"), "%s", sub);
}
