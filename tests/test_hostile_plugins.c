/* test_hostile_plugins.c — plug-ins that break the ABI's promises in ways
 * the harness must contain (issue 32): a plug-in that writes into its const
 * inputs, two plug-ins under one name, names that are too long or carry
 * characters the header forbids.  Each Test is one promise a user relies on.
 *
 * Runs the built binary (SWADIFF_BINARY) with the fixtures of tests/plugins/
 * (SWADIFF_PLUGIN_DIR). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "test_util.h"

#define SWEEP SWADIFF_SOURCE_DIR "/tests/data/hostile/window_sweep.json"
#define WRITER SWADIFF_PLUGIN_DIR "/libconst_writer.so"
#define MINIMAL SWADIFF_PLUGIN_DIR "/libswadiff_minimal.so"

TestSuite(hostile_plugins, .init = make_tmp, .fini = remove_tmp, .timeout = 120);

typedef struct writer_case {
    char backend[32]; /* of tests/plugins/const_writer.c */
    char input[32];   /* the input it writes */
    char when[32];    /* the call that wrote */
} writer_case;

ParameterizedTestParameters(hostile_plugins, a_plugin_writing_its_inputs_is_the_only_error)
{
    static writer_case cases[] = {
        {"zero_q", "input q ", "run()"},
        {"scribble_pages", "input kv_indices ", "run()"},
        {"plan_writes", "input kv_last_page_len ", "supports() or plan()"},
    };
    return cr_make_param_array(writer_case, cases, sizeof cases / sizeof cases[0]);
}

/* The sweep's three cases share one set of inputs; the writer runs after
 * the built-in backends of a case and before the example plug-in, so a
 * write that were not restored would fail minimal:exact in the same case
 * and decode_fa2/decode_aiter in the next ones. */
ParameterizedTest(writer_case *w, hostile_plugins, a_plugin_writing_its_inputs_is_the_only_error)
{
    int rc = sh("%s run --device host -q --plugin %s --plugin %s --backend decode_fa2 --backend decode_aiter "
                "--backend const_writer:%s --backend minimal:exact --report %s/rep %s",
                SWADIFF_BINARY, WRITER, MINIMAL, w->backend, tmpdir, SWEEP);
    cr_assert_eq(rc, 3, "%s: expected exit 3 (errors), got %d:\n%s", w->backend, rc, out);
    char path[400];
    snprintf(path, sizeof path, "%s/rep/report.json", tmpdir);
    cJSON *report = read_json_file(path);
    const cJSON *results = cJSON_GetObjectItemCaseSensitive(report, "cases");
    int writer_errors = 0, passes = 0;
    for (const cJSON *r = results ? results->child : NULL; r; r = r->next) {
        const char *backend = cJSON_GetObjectItemCaseSensitive(r, "backend")->valuestring;
        const char *outcome = cJSON_GetObjectItemCaseSensitive(r, "outcome")->valuestring;
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(r, "message");
        const char *message = cJSON_IsString(m) ? m->valuestring : "";
        const char *id = cJSON_GetObjectItemCaseSensitive(r, "id")->valuestring;
        if (strncmp(backend, "const_writer:", 13) == 0) {
            cr_expect_str_eq(outcome, "error", "%s on %s: %s", backend, id, message);
            cr_expect(strstr(message, w->input) && strstr(message, w->when) && strstr(message, "restored"),
                      "%s on %s: the message names neither the input (%s) nor the call (%s): %s", backend, id,
                      w->input, w->when, message);
            writer_errors++;
        } else {
            cr_expect_str_eq(outcome, "passed", "%s on %s after const_writer:%s: %s", backend, id, w->backend,
                             message);
            passes++;
        }
    }
    cr_expect_eq(writer_errors, 3, "%s: one error per case", w->backend);
    cr_expect_eq(passes, 9, "%s: decode_fa2, decode_aiter and minimal:exact pass every case", w->backend);
    cJSON_Delete(report);
}

/* ---------------------------------------------------------------------------
 * one name, one plug-in */

#define NAMED SWADIFF_PLUGIN_DIR "/libnamed.so"
#define FIVE SWADIFF_SOURCE_DIR "/tests/data/cli/five.json"

/* Before: the duplicate check compared file stems, before the probe learnt
 * the plug-in's own name, so both ran every case (exit 0) and merge later
 * refused the duplicate (id, backend) pairs. */
Test(hostile_plugins, the_same_plugin_twice_is_a_usage_error_naming_both)
{
    int rc = sh("%s run --device host -q --plugin %s --plugin %s --report %s/rep %s", SWADIFF_BINARY, NAMED, NAMED,
                tmpdir, FIVE);
    cr_assert_eq(rc, 2, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "two plug-ins or adapters are named \"named\": plug-in " NAMED " and plug-in " NAMED),
              "%s", out);
}

Test(hostile_plugins, two_files_of_one_plugin_name_are_a_usage_error_naming_both)
{
    cr_assert_eq(sh("cp %s %s/libother.so", NAMED, tmpdir), 0);
    int rc = sh("%s run --device host -q --plugin %s --plugin %s/libother.so --report %s/rep %s", SWADIFF_BINARY,
                NAMED, tmpdir, tmpdir, FIVE);
    cr_assert_eq(rc, 2, "exit %d:\n%s", rc, out);
    char want[400];
    snprintf(want, sizeof want, "named \"named\": plug-in %s and plug-in %s/libother.so", NAMED, tmpdir);
    cr_assert(strstr(out, want), "expected <%s> in:\n%s", want, out);
}

Test(hostile_plugins, a_plugin_and_an_adapter_of_one_name_are_a_usage_error)
{
    int rc = sh("%s run --device host -q --plugin %s --adapter 'named=python3 %s/tests/data/adapters/misbehave.py nan' "
                "--report %s/rep %s", SWADIFF_BINARY, NAMED, SWADIFF_SOURCE_DIR, tmpdir, FIVE);
    cr_assert_eq(rc, 2, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "named \"named\": plug-in " NAMED " and adapter python3"), "%s", out);
}

/* ---------------------------------------------------------------------------
 * names: [A-Za-z0-9_.-]{1,63}, refused whole and quoted safely */

typedef struct bad_name {
    char env[64];     /* for tests/plugins/named.c */
    char want[160];   /* in the error */
} bad_name;

ParameterizedTestParameters(hostile_plugins, a_bad_plugin_or_backend_name_is_refused_quoted)
{
    static bad_name cases[] = {
        /* before: the probe child died of SIGPIPE ("crashed (signal 13, Broken pipe)") */
        {"SWADIFF_TEST_PLUGIN_NAME_LEN=1048576", "name \"nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn...\" (1048576 bytes) is too long"},
        /* before: cut to 63 silently, so --backend FULLNAME:* matched nothing */
        {"SWADIFF_TEST_PLUGIN_NAME_LEN=64", "\"nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn...\" (64 bytes) is too long"},
        /* before: printed raw, escape sequences and all */
        {"SWADIFF_TEST_PLUGIN_NAME=\"$(printf 'a b\\033[31m')\"", "name \"a b\\x1b[31m\" has a character other than"},
        {"SWADIFF_TEST_PLUGIN_NAME=ns:x", "name \"ns:x\" has a character other than A-Z a-z 0-9 _ . - at byte 3"},
        /* before: "has no name" */
        {"SWADIFF_TEST_BACKEND_NAME_LEN=130", "backend 0: its name \"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb...\" (130 bytes) is too long"},
    };
    return cr_make_param_array(bad_name, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(bad_name *b, hostile_plugins, a_bad_plugin_or_backend_name_is_refused_quoted)
{
    int rc = sh("env %s %s run --device host --plugin %s --report %s/rep %s", b->env, SWADIFF_BINARY, NAMED, tmpdir,
                FIVE);
    cr_expect_eq(rc, 3, "%s: a broken plug-in's results are errors (exit 3), got %d:\n%.2000s", b->env, rc, out);
    cr_expect(strstr(out, b->want), "%s: expected <%s> in:\n%.2000s", b->env, b->want, out);
    cr_expect(!strstr(out, "crashed") && !strchr(out, '\033'), "%s:\n%.2000s", b->env, out);
    cr_expect(strstr(out, "named:*"), "%s: the broken plug-in is named by its file:\n%.2000s", b->env, out);
}

Test(hostile_plugins, a_long_adapter_name_is_refused_not_cut)
{
    const char *name = "a23456789012345678901234567890123456789012345678901234567890123456789"; /* 69 */
    int rc = sh("%s run --device host -q --adapter '%s=python3 %s/tests/data/adapters/misbehave.py nan' --report "
                "%s/rep %s", SWADIFF_BINARY, name, SWADIFF_SOURCE_DIR, tmpdir, FIVE);
    cr_assert_eq(rc, 2, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "adapter name \"a234567890123456789012345678901234567890...\" (69 bytes) is too long"),
              "%s", out);
}

Test(hostile_plugins, an_adapter_backend_name_with_an_escape_is_refused_escaped)
{
    int rc = sh("%s run --device host --adapter \"m=python3 %s/tests/data/adapters/misbehave.py $(printf 'x\\033]0')\" "
                "--report %s/rep %s", SWADIFF_BINARY, SWADIFF_SOURCE_DIR, tmpdir, FIVE);
    cr_assert_eq(rc, 3, "exit %d:\n%s", rc, out);
    cr_assert(strstr(out, "backends[0]: \"name\" \"x\\x1b]0\" has a character other than"), "%s", out);
    cr_assert(!strchr(out, '\033'), "an escape reached the terminal:\n%s", out);
}

/* A plug-in that closes swadiff's descriptors, or exit(4)s, costs its own
 * results, each reported as what happened: not "signal 9 (Killed)" (the
 * harness's own kill, which reads as the OOM killer), not a device error on
 * the host; decode_fa2 beside it passes. */
Test(hostile_plugins, descriptor_closing_and_exit_4_are_reported_as_such)
{
    int closer = 0, exits = 0, fa2 = 0;
    for (int k = 0; k < 2; k++) { /* one run per backend: each ends the worker its own way */
        int rc = sh("%s run --device host -q --plugin %s/libcloser.so --backend decode_fa2 --backend 'closer:%s' "
                    "--report %s/rep%d %s/tests/data/cli/five.json", SWADIFF_BINARY, SWADIFF_PLUGIN_DIR,
                    k ? "exit4" : "close_fds", tmpdir, k, SWADIFF_SOURCE_DIR);
        cr_expect_eq(rc, 3, "%s", out);
        char path[400];
        snprintf(path, sizeof path, "%s/rep%d/report.json", tmpdir, k);
        cJSON *report = read_json_file(path);
        const cJSON *r;
        cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(report, "cases"))
        {
            const char *backend = cJSON_GetObjectItemCaseSensitive(r, "backend")->valuestring;
            const char *outcome = cJSON_GetObjectItemCaseSensitive(r, "outcome")->valuestring;
            const cJSON *m = cJSON_GetObjectItemCaseSensitive(r, "message");
            const char *message = cJSON_IsString(m) ? m->valuestring : "";
            if (!strcmp(backend, "decode_fa2")) {
                fa2 += !strcmp(outcome, "passed");
                continue;
            }
            cr_expect_str_eq(outcome, "error", "%s: %s", backend, message);
            cr_expect(!strstr(message, "signal 9") && !strstr(message, "device error"), "%s: %s", backend, message);
            if (!strcmp(backend, "closer:close_fds"))
                closer += strstr(message, "result pipe closed") || strstr(message, "closed swadiff's descriptors");
            else
                exits += strstr(message, "exited with status 4") != NULL;
        }
        cJSON_Delete(report);
    }
    cr_expect_eq(closer, 5, "each close_fds result says the descriptors were closed");
    cr_expect_eq(exits, 5, "each exit4 result says status 4");
    cr_expect_eq(fa2, 10);
}

/* A plug-in that forks a helper (which sleeps a minute holding every
 * descriptor of its worker) and returns, or crashes: the run ends promptly
 * (a helper holding the result pipe open used to hang it, and one holding
 * stdout blocked `swadiff run | cat`), no helper outlives the run, and the
 * next run into the same report folder is not refused for the helper's
 * lock. */
Test(hostile_plugins, a_forked_helper_does_not_outlive_the_run, .timeout = 120)
{
    for (int k = 0; k < 2; k++) {
        const char *backend = k ? "forker:helper_crash" : "forker:helper";
        double t0 = (double)time(NULL);
        int rc = sh("%s run --device host -q --plugin %s/libforker.so --backend '%s' --report %s/rep "
                    "%s/tests/data/cli/five.json | cat", SWADIFF_BINARY, SWADIFF_PLUGIN_DIR, backend, tmpdir,
                    SWADIFF_SOURCE_DIR);
        double took = (double)time(NULL) - t0;
        cr_expect_eq(rc, 0, "cat's status: %s", out);
        cr_expect_lt(took, 30, "%s: the run took %.0f s (the helpers sleep 60 s)", backend, took);
        cr_expect(strstr(out, k ? "0 passed, 0 failed, 5 errors" : "0 passed, 5 failed"), "%s: %s", backend, out);
        /* alive ones: a killed helper may linger as a zombie until init reaps it */
        sh("sleep 0.5; ps -eo stat=,comm= | awk '$2 == \"swa-forker-kid\" && $1 !~ /^Z/' | grep . || echo none");
        cr_expect(strstr(out, "none"), "%s: helpers left running: %s", backend, out);
    }
    sh("pkill -x swa-forker-kid");
}
