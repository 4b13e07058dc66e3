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
             "/adapters/peers_bench.py --peers-budget 0", log, sizeof log);
    cr_assert_eq(rc, 2, "exit %d:\n%s", rc, log);
    cr_assert(strstr(log, "--peers-budget must be > 0"), "%s", log);
}
