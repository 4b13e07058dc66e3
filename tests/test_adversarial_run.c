/* test_adversarial_run.c — the promises a run makes, tested the way they
 * were broken before: signals, a closed stdout, a killed parent, two runs
 * into one folder, selections that match nothing, options that cannot work
 * together, --quiet, the device line.  One Test per promise.
 *
 * Runs the built binary (SWADIFF_BINARY).  A hang is planted with
 * SWADIFF_TEST_HANG=<case id glob> (the worker stops at that case). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "test_util.h"

#define FIVE SWADIFF_SOURCE_DIR "/tests/data/cli/five.json"
#define THIRD "five/five:r0.kv_len=65" /* the third case of five.json */

TestSuite(adversarial_run, .init = make_tmp, .fini = remove_tmp, .timeout = 120);


static cJSON *read_report(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/rep/report.json", tmpdir);
    return read_json_file(path);
}

static int lines_in(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int n = 0, c;
    while ((c = fgetc(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Starts swadiff on five.json with a hang planted at the third case; waits
 * until two results are on disk.  Returns the pid. */
static pid_t start_hanging_run(void)
{
    char rep[300], log[300], jsonl[320];
    snprintf(rep, sizeof rep, "%s/rep", tmpdir);
    snprintf(log, sizeof log, "%s/console.txt", tmpdir);
    snprintf(jsonl, sizeof jsonl, "%s/results.jsonl", rep);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        setenv("SWADIFF_TEST_HANG", THIRD, 1);
        if (!freopen(log, "w", stdout) || !freopen("/dev/null", "w", stderr))
            _exit(127);
        execl(SWADIFF_BINARY, SWADIFF_BINARY, "run", "--device", "host", "--jobs", "1", "--report", rep, FIVE,
              (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 400 && lines_in(jsonl) < 3; i++) /* header + 2 results */
        sleep_ms(25);
    cr_assert_geq(lines_in(jsonl), 3, "the run never produced its first two results");
    sleep_ms(100);
    return pid;
}

ParameterizedTestParameters(adversarial_run, a_signal_leaves_an_incomplete_report_and_exit_3)
{
    static int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    return cr_make_param_array(int, sigs, sizeof sigs / sizeof sigs[0]);
}

ParameterizedTest(int *sig, adversarial_run, a_signal_leaves_an_incomplete_report_and_exit_3)
{
    pid_t pid = start_hanging_run();
    kill(pid, *sig);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 3, "signal %d: status 0x%x (exit 3 expected)", *sig,
              status);
    cJSON *rep = read_report();
    cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(rep, "incomplete")), "signal %d: report.json not marked incomplete",
              *sig);
    const cJSON *reason = cJSON_GetObjectItem(rep, "incomplete_reason");
    cr_expect(cJSON_IsString(reason) && strstr(reason->valuestring, "interrupted by signal") &&
                  strstr(reason->valuestring, "2 of 5"),
              "signal %d: reason %s", *sig, cJSON_IsString(reason) ? reason->valuestring : "(none)");
    cr_expect_eq(cJSON_GetObjectItem(rep, "exitcode")->valueint, 3);
    cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(rep, "cases")), 2, "the two finished results are kept");
    cJSON_Delete(rep);
    char log[300];
    snprintf(log, sizeof log, "%s/console.txt", tmpdir);
    cr_expect_eq(sh("grep -c 'INCOMPLETE' '%s'", log), 0, "the console says INCOMPLETE: %s", out);
}

/* A report rewritten while the run goes on is never green: a SIGKILL
 * (which no handler sees) leaves report.json marked incomplete. */
Test(adversarial_run, sigkill_leaves_a_report_marked_incomplete)
{
    pid_t pid = start_hanging_run();
    sleep_ms(2200); /* past the 2 s rewrite interval */
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    cJSON *rep = read_report();
    cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(rep, "incomplete")), "report.json of a killed run says complete");
    cr_expect_neq(cJSON_GetObjectItem(rep, "exitcode")->valueint, 0, "a killed run's report says exit 0");
    cJSON_Delete(rep);
}

static pid_t child_of(pid_t parent)
{
    char path[64], text[64] = "";
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)parent, (int)parent);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    if (!fgets(text, sizeof text, f))
        text[0] = '\0';
    fclose(f);
    return (pid_t)atoi(text);
}

Test(adversarial_run, killing_the_parent_leaves_no_worker)
{
    pid_t pid = start_hanging_run();
    pid_t worker = child_of(pid);
    cr_assert_gt(worker, 0, "no worker process found under %d", (int)pid);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    bool gone = false;
    for (int i = 0; i < 200 && !gone; i++) {
        char stat[64];
        snprintf(stat, sizeof stat, "/proc/%d/stat", (int)worker);
        FILE *f = fopen(stat, "r");
        char state = 'X';
        if (f) {
            if (fscanf(f, "%*d %*s %c", &state) != 1)
                state = 'X';
            fclose(f);
        }
        gone = !f || state == 'Z' || state == 'X';
        if (!gone)
            sleep_ms(10);
    }
    if (!gone)
        kill(worker, SIGKILL);
    cr_expect(gone, "worker %d survived its parent", (int)worker);
}

/* `swadiff run | head -1` must not turn into a green report of a partial
 * run: the run goes on after the pipe closes and the reports are whole. */
Test(adversarial_run, closed_stdout_does_not_cut_the_run_short)
{
    sh("'%s' run --device host --report '%s/rep' '%s' | head -c 1 >/dev/null", SWADIFF_BINARY, tmpdir, FIVE);
    cJSON *rep = read_report();
    cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(rep, "incomplete")), "%s", out);
    cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(rep, "cases")), 5, "every result is in the report");
    cJSON_Delete(rep);
}

Test(adversarial_run, two_runs_into_one_report_folder_the_second_is_refused)
{
    pid_t pid = start_hanging_run();
    int rc = sh("'%s' run --device host --report '%s/rep' '%s'", SWADIFF_BINARY, tmpdir, FIVE);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    cr_expect_eq(rc, 2, "second run: exit %d\n%s", rc, out);
    cr_expect(strstr(out, "another swadiff run writes this folder") && strstr(out, "pid"), "names the holder: %s", out);
}

Test(adversarial_run, a_finished_run_releases_the_report_folder)
{
    cr_expect_eq(sh("'%s' run --device host --report '%s/rep' '%s'", SWADIFF_BINARY, tmpdir, FIVE), 0, "%s", out);
    cr_expect_eq(sh("'%s' run --device host --report '%s/rep' '%s'", SWADIFF_BINARY, tmpdir, FIVE), 0, "%s", out);
}

Test(adversarial_run, selections_that_match_nothing_are_usage_errors)
{
    cr_expect_eq(sh("'%s' run --device host --backend prefill '%s'", SWADIFF_BINARY, FIVE), 2, "%s", out);
    cr_expect(strstr(out, "nothing to run"), "%s", out);
    cr_expect_eq(sh("'%s' run --device host --backend decode_fa2,nope '%s'", SWADIFF_BINARY, FIVE), 2, "%s", out);
    cr_expect(strstr(out, "unknown backend 'nope'"), "%s", out);
    cr_expect_eq(sh("'%s' run --device host --shard 9/9 '%s'", SWADIFF_BINARY, FIVE), 2, "%s", out);
    cr_expect(strstr(out, "shard is empty"), "%s", out);
}

Test(adversarial_run, timeout_without_isolation_is_a_usage_error)
{
    cr_expect_eq(sh("'%s' run --device host --no-isolate --timeout 5 '%s'", SWADIFF_BINARY, FIVE), 2, "%s", out);
    cr_expect(strstr(out, "--timeout needs the isolated worker"), "%s", out);
}

Test(adversarial_run, quiet_keeps_the_summary_and_the_verdict)
{
    cr_expect_eq(sh("'%s' run --device host --quiet '%s'", SWADIFF_BINARY, FIVE), 0, "%s", out);
    cr_expect(strstr(out, "PASSED: 5 passed, 0 failed, 0 errors, 0 skipped"), "%s", out);
    cr_expect(strstr(out, "total"), "the summary table: %s", out);
    cr_expect_eq(sh("'%s' run --device host --quiet --mutant left_bound_minus1 '%s'", SWADIFF_BINARY, FIVE), 1, "%s",
                 out);
    cr_expect(strstr(out, "FAILED:"), "%s", out);
}

Test(adversarial_run, the_device_that_ran_is_always_printed)
{
    sh("'%s' run --quiet '%s'", SWADIFF_BINARY, FIVE);
    cr_expect(strstr(out, "swadiff: device "), "%s", out);
#if !defined(SWADIFF_HAVE_CUDA) && !defined(SWADIFF_HAVE_HIP)
    cr_expect(strstr(out, "no GPU used: this swadiff was built without a GPU device"), "%s", out);
#endif
    sh("'%s' run --device host --quiet '%s'", SWADIFF_BINARY, FIVE);
    cr_expect(strstr(out, "swadiff: device host"), "%s", out);
}

Test(adversarial_run, an_all_skipped_run_says_nothing_was_compared)
{
    char path[300];
    snprintf(path, sizeof path, "%s/fp32.json", tmpdir);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs("{\"name\": \"fp32\", \"requests\": [{\"qo_len\": 1, \"kv_len\": 64}], \"num_qo_heads\": 2,"
          " \"num_kv_heads\": 1, \"head_dim\": 64, \"dtype\": \"fp32\", \"window_left\": 7,"
          " \"backends\": [\"decode_fa2\", \"decode_aiter\"],"
          " \"expect_skip\": {\"decode_fa2\": \"fp16 and bf16 only\", \"decode_aiter\": \"fp16 and bf16 only\"}}\n", f);
    fclose(f);
    /* --quiet too: the reasons and the verdict are never dropped */
    int rc = sh("'%s' run --device host --quiet '%s'", SWADIFF_BINARY, path);
    cr_expect_eq(rc, 5, "a run that compared nothing must not be green: exit %d\n%s", rc, out);
    cr_expect(strstr(out, "NOTHING COMPARED: all 2 results were skipped"), "%s", out);
    cr_expect(strstr(out, "expected skip: decode_aiter runs fp16 and bf16 only"), "the reasons: %s", out);
    cr_expect(strstr(out, "NOTHING COMPARED: 0 passed, 0 failed, 0 errors, 2 skipped"), "the verdict: %s", out);
}
