/* test_hostile_env.c — hostile or careless environments (issue 32): what a
 * run does when its environment says something odd or takes its resources.
 *  - SWADIFF_NO_ISOLATE: only 1 turns isolation off, and then with every
 *    refusal of --no-isolate (no --jobs, no --timeout) and a banner that
 *    says one worker; another value is a usage error, not a quiet switch;
 *  - when no worker process can start (too few descriptors), the run does
 *    not fall back to running kernels in its own process without --timeout:
 *    every pair is an error saying why;
 *  - stdout that cannot be written (a full disk, a closed descriptor) is an
 *    error on every command, not a silent exit 0;
 *  - a --dump that cannot be written is an error (exit 2 before the run,
 *    an error result and exit 3 during it), not a warning and exit 0;
 *  - selftest --report DIR makes and locks DIR before the mutants run;
 *  - a path over 1023 bytes is refused by name, not kept cut;
 *  - merge refuses a report whose total_qo its heatmap does not cover;
 *  - under ulimit -v a case that cannot fit is an error naming the limit,
 *    not a hang in OpenBLAS. */
#include <criterion/criterion.h>
#include <string.h>

#include "test_util.h"

#define FIVE SWADIFF_SOURCE_DIR "/tests/data/cli/five.json"

TestSuite(hostile_env, .init = make_tmp, .fini = remove_tmp, .timeout = 120);

static int swadiff(const char *prefix, const char *args)
{
    return sh("cd '%s' && %s '%s' run --device host %s '" FIVE "'", tmpdir, prefix, SWADIFF_BINARY, args);
}

Test(hostile_env, no_isolate_takes_1_only_and_keeps_its_refusals)
{
    int rc = swadiff("SWADIFF_NO_ISOLATE=false", "");
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "SWADIFF_NO_ISOLATE=false: expected 1"), "%s", out);
    rc = swadiff("SWADIFF_NO_ISOLATE=yes", "--jobs 2");
    cr_expect_eq(rc, 2, "%s", out);
    rc = swadiff("SWADIFF_NO_ISOLATE=1", "--jobs 4");
    cr_expect_eq(rc, 2, "in-process has one worker: %s", out);
    cr_expect(strstr(out, "needs isolated workers"), "%s", out);
    rc = swadiff("SWADIFF_NO_ISOLATE=1", "--timeout 5");
    cr_expect_eq(rc, 2, "in-process cannot stop a pair: %s", out);
    rc = swadiff("SWADIFF_NO_ISOLATE=1", "");
    cr_expect_eq(rc, 0, "%s", out);
    cr_expect(strstr(out, "; 1 worker\n"), "the banner says where the kernels run: %s", out);
    rc = swadiff("SWADIFF_NO_ISOLATE=0", "--jobs 2");
    cr_expect_eq(rc, 0, "%s", out);
    cr_expect(strstr(out, "; 2 workers"), "%s", out);
}

Test(hostile_env, no_worker_means_errors_not_an_unguarded_run)
{
    /* 6 descriptors: enough to load the cases, too few for a worker's two
     * pipes.  The fallback this replaces ran the kernels in this process and
     * dropped --timeout */
    /* the test runner's own descriptors are closed first (they count too) */
    int rc = sh("cd '%s' && bash -c 'for fd in $(ls /proc/$$/fd); do [ $fd -gt 2 ] && eval \"exec $fd>&-\"; done; "
                "ulimit -n 6 && exec %s run --device host --timeout 5 %s'", tmpdir, SWADIFF_BINARY, FIVE);
    cr_expect_eq(rc, 3, "every pair an error: %s", out);
    cr_expect(strstr(out, "no worker process could be started") && strstr(out, "ulimit -n"), "%s", out);
    cr_expect(strstr(out, "0 passed, 0 failed, 5 errors"), "%s", out);
}

Test(hostile_env, durations_past_a_million_seconds_are_refused)
{
    /* 3e6 s of --timeout, or inf, overflowed the milliseconds a poll takes */
    static const char *const bad[] = {"--timeout 3e6", "--timeout inf", "--timeout nan", "--adapter-timeout 1e10",
                                      "--adapter-timeout inf", "--timeout -1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = swadiff("", bad[i]);
        cr_expect_eq(rc, 2, "%s: %s", bad[i], out);
        cr_expect(strstr(out, "at most 1000000"), "%s says the limit: %s", bad[i], out);
    }
    int rc = swadiff("", "--timeout 1e6");
    cr_expect_eq(rc, 0, "the limit itself is fine: %s", out);
}

/* A report of five.json in tmpdir/a, then key=value set in its report.json. */
static void report_with(const char *key, const char *value)
{
    int rc = sh("cd '%s' && '%s' run --device host --report a '" FIVE "' && /usr/bin/python3 -c \"import json; "
                "p='a/report.json'; r=json.load(open(p)); r['%s']=%s; json.dump(r, open(p, 'w'))\"", tmpdir,
                SWADIFF_BINARY, key, value);
    cr_assert_eq(rc, 0, "%s", out);
}

Test(hostile_env, merge_refuses_impossible_exit_codes_and_times)
{
    report_with("exitcode", "256");
    int rc = sh("cd '%s' && '%s' merge m a/report.json", tmpdir, SWADIFF_BINARY);
    cr_expect_neq(rc, 0, "%s", out);
    cr_expect(strstr(out, "\"exitcode\": expected one of 0, 1, 2, 3, 5, 77") && strstr(out, "256"), "%s", out);
    report_with("created_unix", "1e300");
    rc = sh("cd '%s' && '%s' merge m2 a/report.json", tmpdir, SWADIFF_BINARY);
    cr_expect_neq(rc, 0, "%s", out);
    cr_expect(strstr(out, "created_unix"), "%s", out);
}

Test(hostile_env, merge_does_not_write_into_a_folder_a_run_holds)
{
    report_with("duration", "1");
    /* hold the folder's lock as a live run does */
    int rc = sh("cd '%s' && mkdir -p live && (flock live/.swadiff.lock sleep 3 &) && sleep 0.5 && '%s' merge live "
                "a/report.json", tmpdir, SWADIFF_BINARY);
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "another swadiff run writes this folder, or a merge"), "%s", out);
    sh("ls '%s/live'", tmpdir);
    cr_expect(!strstr(out, "report.json"), "nothing written: %s", out);
}

Test(hostile_env, an_adapter_without_descriptors_says_so)
{
    /* 10 descriptors: the worker starts, the adapter's child cannot move its
     * pipes above 9.  It used to _exit(127), which reads as "command not
     * found", with nothing in its log */
    int rc = sh("cd '%s' && bash -c 'for fd in $(ls /proc/$$/fd); do [ $fd -gt 2 ] && eval \"exec $fd>&-\"; done; "
                "ulimit -n 10 && exec %s run --device host --jobs 1 --adapter \"bad=/usr/bin/python3 %s/tests/data/"
                "adapters/misbehave.py error\" --backend \"bad:*\" %s'", tmpdir, SWADIFF_BINARY, SWADIFF_SOURCE_DIR, FIVE);
    cr_expect_neq(rc, 0, "%s", out);
    cr_expect(strstr(out, "could not set up its process") && strstr(out, "ulimit -n"), "%s", out);
    cr_expect(!strstr(out, "status 127"), "%s", out);
}

Test(hostile_env, a_tmpdir_too_long_for_the_adapter_scratch_is_named)
{
    char longdir[700];
    int k = snprintf(longdir, sizeof longdir, "%s/", tmpdir);
    while (k < 620)
        k += snprintf(longdir + k, sizeof longdir - (size_t)k, "d");
    int rc = sh("cd '%s' && TMPDIR='%s' '%s' run --device host --adapter 'bad=/usr/bin/python3 %s/tests/data/adapters/"
                "misbehave.py error' --backend 'bad:*' '%s'", tmpdir, longdir, SWADIFF_BINARY, SWADIFF_SOURCE_DIR, FIVE);
    cr_expect_neq(rc, 0, "%s", out);
    cr_expect(strstr(out, "TMPDIR is ") && strstr(out, "set a shorter TMPDIR"), "%s", out);
}

Test(hostile_env, output_lost_to_a_full_disk_is_an_error)
{
    /* stdout is block-buffered into /dev/full: the loss showed only at the
     * flush in exit(), which nobody checked, and the list "succeeded" */
    static const char *const commands[] = {"list cases '" FIVE "'", "validate '" FIVE "'", "--version",
                                           "run --device host '" FIVE "'"};
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        int rc = sh("{ '%s' %s >/dev/full; }", SWADIFF_BINARY, commands[i]);
        cr_expect_eq(rc, 3, "%s: %s", commands[i], out);
        cr_expect(strstr(out, "write error on standard output: No space left on device"), "%s: %s", commands[i], out);
    }
    int rc = sh("{ '%s' list cases '" FIVE "' >&-; }", SWADIFF_BINARY);
    cr_expect_eq(rc, 3, "a closed stdout: %s", out);
    cr_expect(strstr(out, "write error on standard output: Bad file descriptor"), "%s", out);
    /* a reader that stops reading is not an error of the run's */
    rc = sh("('%s' run --device host '" FIVE "'; echo $? >'%s/rc') | head -c 1 >/dev/null; exit $(cat '%s/rc')",
            SWADIFF_BINARY, tmpdir, tmpdir);
    cr_expect_eq(rc, 0, "run | head: %s", out);
}

Test(hostile_env, a_dump_that_cannot_be_written_is_an_error)
{
    /* a --dump folder that cannot be made fails before the run (exit 2) */
    int rc = sh("cd '%s' && touch file && '%s' run --device host --dump file/sub '" FIVE "'", tmpdir, SWADIFF_BINARY);
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "--dump file/sub: file exists and is not a folder"), "%s", out);
    cr_expect(!strstr(out, "device host"), "refused before the run: %s", out);
    /* one case's folder cannot be made (a file in its place): that case's
     * result is an error naming the path, and the run exits 3; it was a
     * warning on stderr and exit 0 */
    rc = sh("cd '%s' && mkdir d && touch 'd/five__five--r0.kv_len=33' && '%s' run --device host --dump d --report rep "
            "'" FIVE "'", tmpdir, SWADIFF_BINARY);
    cr_expect_eq(rc, 3, "%s", out);
    cr_expect(strstr(out, "ERROR  decode_fa2/host/fp16  five/five:r0.kv_len=33  --dump failed: "
                          "d/five__five--r0.kv_len=33 exists and is not a folder (the result itself: passed"), "%s", out);
    cr_expect(strstr(out, "4 passed, 0 failed, 1 errors"), "%s", out);
}

Test(hostile_env, selftest_checks_its_report_folder_first)
{
    /* the folder was made (unchecked) after every mutant had run: minutes
     * on the library before "cannot write" */
    int rc = sh("cd '%s' && touch file && '%s' selftest --device host --report file/sub '" FIVE "'", tmpdir,
                SWADIFF_BINARY);
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "--report file/sub: cannot create the folder: Not a directory"), "%s", out);
    cr_expect(!strstr(out, "survived"), "refused before the mutants ran: %s", out);
    /* a folder a run is writing is refused as a second run is */
    rc = sh("cd '%s' && mkdir -p live && (flock live/.swadiff.lock sleep 3 &) && sleep 0.5 && '%s' selftest --device "
            "host --report live '" FIVE "'", tmpdir, SWADIFF_BINARY);
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "another swadiff run writes this folder") && !strstr(out, "survived"), "%s", out);
}

/* tmpdir/ddd.../ddd (200-byte components) of about `length` bytes, made */
static void long_folder(char *buf, size_t n, size_t length)
{
    size_t k = (size_t)snprintf(buf, n, "%s", tmpdir);
    while (k + 201 <= length && k + 202 < n) {
        buf[k++] = '/';
        memset(buf + k, 'd', 200);
        k += 200;
    }
    if (k + 1 < length && length < n) { /* the rest in one shorter component */
        buf[k++] = '/';
        memset(buf + k, 'e', length - k);
        k = length;
    }
    buf[k] = '\0';
    cr_assert_eq(k, length, "a folder of %zu bytes", length);
    cr_assert_eq(sh("mkdir -p '%s' && cp '" FIVE "' '%s/'", buf, buf), 0, "%s", out);
}

Test(hostile_env, paths_over_1023_bytes_are_named_not_cut)
{
    /* a case file path over 1023 bytes was kept cut: validate passed, and
     * every reproduce command and later read named a path that is not there */
    char dir[1400], five[1500];
    long_folder(dir, sizeof dir, 1040);
    snprintf(five, sizeof five, "%s/five.json", dir);
    int rc = sh("'%s' validate '%s'", SWADIFF_BINARY, five);
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "expected a case file or folder path of at most 1023 bytes, got 1050"), "%s", out);
    cr_expect(strstr(out, "...") && strstr(out, "(1050 bytes)"), "the path shown by its ends: %s", out);
    rc = sh("cd '%s' && '%s' run --device host --report '%s/rep' '" FIVE "'", tmpdir, SWADIFF_BINARY, dir);
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "(1044 bytes): expected a folder path of at most 1023 bytes"), "%s", out);

    /* a path of 1013 bytes is taken, and its reproduce command is whole */
    long_folder(dir, sizeof dir, 1003);
    snprintf(five, sizeof five, "%s/five.json", dir);
    rc = sh("cd '%s' && '%s' run --device host -q --report rep '%s'", tmpdir, SWADIFF_BINARY, five);
    cr_assert_eq(rc, 0, "%s", out);
    char path[400];
    snprintf(path, sizeof path, "%s/rep/report.json", tmpdir);
    cJSON *report = read_json_file(path);
    const cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(report, "cases"), 0);
    const char *file = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(first, "file"));
    const char *reproduce = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(first, "reproduce"));
    cr_assert(file && reproduce, "%s", out);
    cr_expect_str_eq(file, five);
    char *at = strstr(reproduce, five);
    cr_expect(at && strstr(at, " --filter five/five:r0.kv_len=") && strstr(at, " --device host"),
              "reproduce (%zu bytes) is cut: %s", strlen(reproduce), reproduce);
    cJSON_Delete(report);
}

/* A --plugin path or --adapter command over 1023 bytes was kept cut: the
 * plug-in "not found", the adapter another command.  Refused by name. */
Test(hostile_env, long_plugin_paths_and_adapter_commands_are_refused_by_name)
{
    char dir[1400], lib[1500];
    long_folder(dir, sizeof dir, 1040);
    snprintf(lib, sizeof lib, "%s/p.so", dir);
    int rc = sh("cd '%s' && '%s' run --device host --plugin '%s' '" FIVE "'", tmpdir, SWADIFF_BINARY, lib);
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "--plugin: path ") && strstr(out, "is too long: at most 1023 bytes"), "%s", out);
    rc = sh("cd '%s' && '%s' run --device host --adapter 'a=/usr/bin/python3 %s/a.py' '" FIVE "'", tmpdir,
            SWADIFF_BINARY, dir);
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "command ") && strstr(out, "is too long: at most 1023 bytes"), "%s", out);
}

Test(hostile_env, merge_refuses_a_total_qo_its_heatmap_does_not_cover)
{
    /* the HTML's heatmap axis drew a tick every few rows up to total_qo:
     * 2147483647 wrote gigabytes (1.9 GB in 10 s before it was stopped) */
    int rc = sh("cd '%s' && '%s' run --device host -q --mutant left_bound_gt --report a '" FIVE "' >/dev/null; "
                "/usr/bin/python3 -c \"import json; p='a/report.json'; r=json.load(open(p)); "
                "c=[c for c in r['cases'] if c['outcome']=='failed'][0]; c['shape']['total_qo']=2147483647; "
                "json.dump(r, open(p, 'w'))\"", tmpdir, SWADIFF_BINARY);
    cr_assert_eq(rc, 0, "%s", out);
    rc = sh("cd '%s' && timeout 10 '%s' merge m a/report.json 2>&1; echo \"rc=$?\"; du -k m/report.html* 2>/dev/null | "
            "awk '$1 > 1024 {print \"big\"}'", tmpdir, SWADIFF_BINARY);
    cr_expect(strstr(out, "rc=2"), "%s", out);
    cr_expect(strstr(out, "\"shape\": \"total_qo\": expected 1 to 1 (the query rows its row_head_ratio covers: 1 "
                          "rows of 1), got 2147483647"), "%s", out);
    cr_expect(!strstr(out, "big"), "no HTML of more than 1 MB: %s", out);
}

#if defined(__SANITIZE_ADDRESS__)
#define SWA_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SWA_TEST_ASAN 1
#endif
#endif

Test(hostile_env, an_address_space_limit_is_an_error_not_a_hang)
{
#ifdef SWA_TEST_ASAN
    /* AddressSanitizer maps terabytes of shadow memory at start: no binary of
     * that build starts under ulimit -v (the plain build runs this test) */
    cr_skip_test("an AddressSanitizer build cannot start under ulimit -v");
#endif
    /* ulimit -v 150 MB: OpenBLAS's thread pool (started when the library
     * loads) spun on buffers it could not map, and fork() waited for it for
     * ever, deaf to SIGTERM; at 400 MB a worker spun in blas_memory_alloc.
     * `timeout -s KILL 40` keeps a regression from hanging this test */
    int rc = sh("cd '%s' && bash -c 'ulimit -v 150000 && exec timeout -s KILL 40 %s run --device host %s'", tmpdir,
                SWADIFF_BINARY, FIVE);
    cr_expect_eq(rc, 3, "every case an error (137: it hung): %s", out);
    cr_expect(strstr(out, "but the address-space limit (ulimit -v, RLIMIT_AS) of 146 MiB leaves") &&
              strstr(out, "raise ulimit -v by at least"), "%s", out);
    rc = sh("cd '%s' && bash -c 'ulimit -v 400000 && exec timeout -s KILL 40 %s run --device host %s'", tmpdir,
            SWADIFF_BINARY, FIVE);
    cr_expect_eq(rc, 0, "room enough (137: it hung): %s", out);
}
