/* test_external.c — testing kernels that are not swadiff's: C plug-ins
 * (include/swadiff/plugin.h) and out-of-process adapters
 * (docs/adapter-protocol.md), as a user drives them from the command line.
 *
 *  - the example plug-in (examples/plugin_minimal) passes every shipped case
 *    and its deliberately wrong twin is diagnosed "window one key short";
 *  - the numpy_exact adapter passes every shipped case through the protocol
 *    and numpy_wrong_window gets the same diagnosis;
 *  - every broken plug-in (tests/plugins/) and misbehaving adapter
 *    (tests/data/adapters/misbehave.py) costs its own results only, each an
 *    error (or a failure, for wrong numbers) that names the cause, while the
 *    built-in backend of the same run passes;
 *  - the full diagnosis for external backends: a tiled plug-in with its
 *    mask planned off (seed 000's bug) is diagnosed as the built-in mutant
 *    is, a declared tile shape (plug-in ABI 2, adapter hello) narrows it, and
 *    an ABI-1 plug-in still loads;
 *  - explain and shrink take --plugin / --adapter, isolate each attempt, and
 *    shrink's rerun command reproduces the same diagnosis.
 *
 * Runs the built binary (SWADIFF_BINARY); plug-ins come from
 * SWADIFF_PLUGIN_DIR (built by tests/CMakeLists.txt). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "include/swadiff/plugin.h"
#include "test_util.h"

#define FIVE SWADIFF_SOURCE_DIR "/tests/data/cli/five.json"
#define PY "SWADIFF_PYTHON=/usr/bin/python3 "  /* Debian's python3 has numpy (python3-numpy) */
#define MISBEHAVE "/usr/bin/python3 " SWADIFF_SOURCE_DIR "/tests/data/adapters/misbehave.py"

TestSuite(external, .init = make_tmp, .fini = remove_tmp, .timeout = 300);

/* Runs swadiff with args (in the source folder), captures the output. */
static int swadiff(const char *env, const char *args)
{
    return sh("cd '%s' && %s'%s' %s", SWADIFF_SOURCE_DIR, env ? env : "", SWADIFF_BINARY, args);
}

static cJSON *report(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/report.json", tmpdir);
    return read_json_file(path);
}

/* Counts results of backends matching prefix with the given outcome; with
 * must_contain, every such result's message must contain it. */
static int count(const cJSON *rep, const char *prefix, const char *outcome, const char *must_contain)
{
    int n = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(rep, "cases"))
    {
        const char *b = cJSON_GetObjectItem(c, "backend")->valuestring;
        const char *o = cJSON_GetObjectItem(c, "outcome")->valuestring;
        if (strncmp(b, prefix, strlen(prefix)) != 0 || strcmp(o, outcome) != 0)
            continue;
        n++;
        const cJSON *m = cJSON_GetObjectItem(c, "message");
        if (must_contain)
            cr_expect(cJSON_IsString(m) && strstr(m->valuestring, must_contain), "%s %s: message \"%s\" lacks \"%s\"",
                      b, o, cJSON_IsString(m) ? m->valuestring : "(none)", must_contain);
    }
    return n;
}

static int total(const cJSON *rep, const char *prefix)
{
    return count(rep, prefix, "passed", NULL) + count(rep, prefix, "failed", NULL) +
           count(rep, prefix, "error", NULL) + count(rep, prefix, "skipped", NULL);
}

static void expect_diagnosis(const cJSON *rep, const char *backend, const char *text)
{
    const cJSON *c;
    int checked = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(rep, "cases"))
    {
        if (strcmp(cJSON_GetObjectItem(c, "backend")->valuestring, backend) ||
            strcmp(cJSON_GetObjectItem(c, "outcome")->valuestring, "failed"))
            continue;
        char *s = cJSON_PrintUnformatted(cJSON_GetObjectItem(c, "diagnosis"));
        /* every failure names the bug, large ones too (scored on a sample) */
        cr_expect(s && strstr(s, text), "%s: diagnosis %s lacks \"%s\"", backend, s ? s : "(none)", text);
        checked += s && strstr(s, text);
        free(s);
    }
    cr_expect_gt(checked, 50, "%s: only %d failures diagnosed \"%s\"", backend, checked, text);
}

/* The wrong twins run over the window-edge files only: every failure is
 * explained (up to 32 reference variants each), which over the whole
 * library took most of the suite's time; the exact twins run everything. */
#define TWIN_CASES "cases/window_edges.json cases/edge_pm1.json cases/seed003_aiter_decode.json cases/window_right.json"

Test(external, example_plugin_passes_the_library_and_its_wrong_twin_is_diagnosed, .timeout = 900)
{
    char args[1024];
    snprintf(args, sizeof args, "run --device host --plugin %s/libswadiff_minimal.so --backend 'minimal:exact' "
             "--report %s -q cases", SWADIFF_PLUGIN_DIR, tmpdir);
    int rc = swadiff(NULL, args);
    cr_expect_eq(rc, 0, "exit %d:\n%s", rc, out);
    cJSON *rep = report();
    int exact = count(rep, "minimal:exact", "passed", NULL);
    cr_expect_gt(exact, 400, "minimal:exact passed %d", exact);
    cr_expect_eq(count(rep, "minimal:exact", "failed", NULL) + count(rep, "minimal:exact", "error", NULL), 0);
    cJSON_Delete(rep);
    snprintf(args, sizeof args, "run --device host --plugin %s/libswadiff_minimal.so --backend 'minimal:window_short' "
             "--report %s -q " TWIN_CASES, SWADIFF_PLUGIN_DIR, tmpdir);
    rc = swadiff(NULL, args);
    cr_expect_eq(rc, 1, "exit %d (1: window_short mismatches):\n%s", rc, out);
    rep = report();
    cr_expect_gt(count(rep, "minimal:window_short", "failed", NULL), 90);
    expect_diagnosis(rep, "minimal:window_short", "window one key short");
    cJSON_Delete(rep);
}

Test(external, numpy_exact_adapter_passes_every_shipped_case_and_the_wrong_twin_is_diagnosed, .timeout = 900)
{
    char args[1024];
    snprintf(args, sizeof args, "run --device host --adapter numpy_exact --backend 'numpy_exact:*' --report %s -q cases",
             tmpdir);
    int rc = swadiff(PY, args);
    cr_expect_eq(rc, 0, "exit %d:\n%s", rc, out);
    cJSON *rep = report();
    int pass = count(rep, "numpy_exact:exact", "passed", NULL);
    int skip = count(rep, "numpy_exact:exact", "skipped", "expect_error");
    cr_expect_gt(pass, 200);
    cr_expect_eq(pass + skip, total(rep, "numpy_exact:exact"), "every shipped case passes (or pins a refusal)");
    /* all_forms (the positive marshalling control) checks on every shipped
     * case that the staged forms agree: K/V, both page tables, the indptrs */
    int forms = count(rep, "numpy_exact:all_forms", "passed", NULL);
    cr_expect_eq(forms, pass, "all_forms passes where exact does: %d vs %d", forms, pass);
    cr_expect_eq(forms + count(rep, "numpy_exact:all_forms", "skipped", "expect_error"),
                 total(rep, "numpy_exact:all_forms"));
    cJSON_Delete(rep);
    snprintf(args, sizeof args, "run --device host --adapter numpy_wrong_window --backend 'numpy_wrong_window:*' "
             "--report %s -q " TWIN_CASES, tmpdir);
    rc = swadiff(PY, args);
    cr_expect_eq(rc, 1, "exit %d:\n%s", rc, out);
    rep = report();
    cr_expect_gt(count(rep, "numpy_wrong_window:window_short", "failed", NULL), 90);
    expect_diagnosis(rep, "numpy_wrong_window:window_short", "window one key short");
    cJSON_Delete(rep);
}

/* A plug-in that cannot be loaded: one error per case for PLUGIN:*, naming
 * the cause; the built-in decode_fa2 of the same run still passes. */
static void broken_plugin(const char *file, const char *ns, const char *cause)
{
    char args[1024];
    snprintf(args, sizeof args, "run --device host --plugin %s/%s --report %s -q %s", SWADIFF_PLUGIN_DIR, file,
             tmpdir, FIVE);
    int rc = swadiff(NULL, args);
    cr_expect_eq(rc, 3, "%s: exit %d (3: runtime error):\n%s", file, rc, out);
    cJSON *rep = report();
    char name[64];
    snprintf(name, sizeof name, "%s:*", ns);
    cr_expect_eq(count(rep, name, "error", cause), 5, "%s: five errors naming \"%s\"", file, cause);
    cr_expect_eq(count(rep, "decode_fa2", "passed", NULL), 5, "%s: the built-in backend still runs", file);
    cJSON_Delete(rep);
}

Test(external, plugin_with_wrong_abi_version)
{
    char want[160]; /* tests/plugins/bad_abi.c: version 42, and the versions this swadiff loads */
    snprintf(want, sizeof want, "built for plug-in ABI version 42, this swadiff speaks versions %d to %d",
             SWADIFF_PLUGIN_ABI_OLDEST, SWADIFF_PLUGIN_ABI_VERSION);
    broken_plugin("libbad_abi.so", "bad_abi", want);
}
/* ABI 1 has no stream or device field: a version-1 backend that declares
 * device memory could not run on the harness's stream, so the plug-in is
 * refused, never called (tests/plugins/abi_v1_device.c). */
Test(external, plugin_built_for_abi_version_1_declaring_device_memory_is_refused)
{
    broken_plugin("libabi_v1_device.so", "abi_v1_device", "declares device memory in plug-in ABI version 1");
}
Test(external, plugin_without_entry_point) { broken_plugin("libno_entry.so", "no_entry", "exports no swadiff_plugin_entry"); }
Test(external, plugin_entry_returns_null) { broken_plugin("libnull_table.so", "null_table", "returned NULL"); }
Test(external, plugin_with_bad_table) { broken_plugin("libbad_table.so", "bad_table", "has a character other than A-Z a-z 0-9 _ . - at byte"); }
Test(external, plugin_file_missing) { broken_plugin("libdoes_not_exist.so", "does_not_exist", "cannot load"); }
Test(external, plugin_declaring_impossible_tiles)
{
    broken_plugin("libbad_tiles.so", "bad_tiles", "backend 0 (\"tiled\") declares a KV-tile width of 0");
}

/* A plug-in backend that misbehaves at run time: its results say so; the
 * other results are untouched. */
static void bad_plugin_run(const char *file, const char *backend, const char *outcome, const char *cause,
                           const char *extra, int want_rc)
{
    char args[1024];
    snprintf(args, sizeof args, "run --device host --plugin %s/%s --report %s -q %s %s", SWADIFF_PLUGIN_DIR, file,
             tmpdir, extra, FIVE);
    int rc = swadiff(NULL, args);
    cr_expect_eq(rc, want_rc, "%s: exit %d:\n%s", file, rc, out);
    cJSON *rep = report();
    cr_expect_eq(count(rep, backend, outcome, cause), 5, "%s: five %s results naming \"%s\"", backend, outcome,
                 cause ? cause : "");
    cr_expect_eq(count(rep, "decode_fa2", "passed", NULL), 5, "%s: decode_fa2 still passes", file);
    cJSON_Delete(rep);
}

Test(external, plugin_that_crashes_costs_its_own_results)
{
    /* "died with signal 11" (or, under AddressSanitizer, "exited with status 1") */
    bad_plugin_run("libcrash.so", "crash:segv", "error", "the worker process", "", 3);
}
Test(external, plugin_that_hangs_is_timed_out)
{
    bad_plugin_run("libhang.so", "hang:sleep", "error", "timeout", "--timeout 2", 3);
}
Test(external, plugin_that_returns_an_error_or_refuses)
{
    bad_plugin_run("liberror.so", "error:fails", "error", "simulated kernel failure: out of workspace", "", 3);
    cJSON *rep = report();
    cr_expect_eq(count(rep, "error:refuses", "skipped", "head_dim 128 not supported"), 5);
    cJSON_Delete(rep);
}
/* External backends run every case and are not named by case files: their
 * skips stay skips.  A run of nothing but such skips compared nothing
 * (exit 5); with errors and skips and no comparison it is 3. */
Test(external, plugin_skips_stay_skips_and_a_run_of_them_exits_5)
{
    char args[1024];
    snprintf(args, sizeof args, "run --device host --plugin %s/liberror.so --backend 'error:refuses' --report %s -q %s",
             SWADIFF_PLUGIN_DIR, tmpdir, FIVE);
    int rc = swadiff(NULL, args);
    cr_expect_eq(rc, 5, "only skips: exit %d (5: nothing compared):\n%s", rc, out);
    cr_expect(strstr(out, "NOTHING COMPARED: all 5 results were skipped"), "%s", out);
    cJSON *rep = report();
    cr_expect_eq(count(rep, "error:refuses", "skipped", "head_dim 128 not supported"), 5);
    cr_expect_eq(cJSON_GetObjectItem(rep, "exitcode")->valueint, 5);
    cJSON_Delete(rep);
    snprintf(args, sizeof args, "run --device host --plugin %s/liberror.so --backend 'error:*' --report %s -q %s",
             SWADIFF_PLUGIN_DIR, tmpdir, FIVE);
    rc = swadiff(NULL, args);
    cr_expect_eq(rc, 3, "errors and skips, nothing compared: exit %d (3 outranks 5):\n%s", rc, out);
}

Test(external, plugin_writing_nan_fails)
{
    bad_plugin_run("libnan.so", "nan:nan", "failed", "Mismatched elements: 256 / 256", "", 1);
}
Test(external, plugin_writing_past_the_output_fails_on_the_guard)
{
    bad_plugin_run("liboverflow.so", "overflow:guard", "failed", "guard", "", 1);
}
Test(external, plugin_writing_half_the_output_fails_as_unwritten)
{
    bad_plugin_run("libpartial.so", "partial:half", "failed", "Unwritten elements: 128 / 256", "", 1);
}

/* A backend that declares CUDA or HIP memory, under --device host: a skip
 * that says which --device it needs, its functions never called (a call
 * would be an error); the built-in backend of the same run passes.  The
 * device side is tests/gpu_test_plugins.c. */
Test(external, device_memory_backends_under_the_host_device_are_skips_naming_the_device)
{
    char args[1024];
    snprintf(args, sizeof args, "run --device host --plugin %s/libdevice_memory.so --report %s -q %s",
             SWADIFF_PLUGIN_DIR, tmpdir, FIVE);
    int rc = swadiff(NULL, args);
    cr_expect_eq(rc, 0, "exit %d:\n%s", rc, out);
    cJSON *rep = report();
    cr_expect_eq(count(rep, "device_memory:cuda", "skipped",
                       "declares CUDA memory: run with --device cuda (this run's device is host)"), 5, "%s", out);
    cr_expect_eq(count(rep, "device_memory:hip", "skipped", "declares HIP memory: run with --device hip"), 5, "%s",
                 out);
    cr_expect_eq(count(rep, "decode_fa2", "passed", NULL), 5);
    cJSON_Delete(rep);
}

/* The host problem a host-memory backend gets is what plugin.h says
 * (tests/plugins/fields.c answers with an error saying so, or naming the
 * field that is not), over paged NHD and HND cases of several page sizes,
 * ragged multi-request prefill and decode. */
Test(external, host_problem_fields_are_as_documented)
{
    char args[1024];
    snprintf(args, sizeof args, "run --device host --plugin %s/libfields.so --backend 'fields:*' --report %s -q %s "
             "cases/window_edges.json cases/edge_pm1.json", SWADIFF_PLUGIN_DIR, tmpdir, FIVE);
    swadiff(NULL, args);
    cJSON *rep = report();
    int ok = count(rep, "fields:host", "error", "host problem as documented");
    cr_expect_gt(ok, 20, "%d results:\n%s", ok, out);
    cr_expect_eq(ok, count(rep, "fields:host", "error", NULL), "every result says the problem is as documented");
    cJSON_Delete(rep);
}

/* A misbehaving adapter: each of its results is an error naming the cause;
 * decode_fa2 in the same run passes. */
static void bad_adapter(const char *mode, const char *outcome, const char *cause, const char *extra, int want_rc)
{
    char args[1024];
    snprintf(args, sizeof args, "run --device host --adapter 'bad=%s %s' --report %s -q %s %s", MISBEHAVE, mode,
             tmpdir, extra, FIVE);
    int rc = swadiff(NULL, args);
    cr_expect_eq(rc, want_rc, "%s: exit %d:\n%s", mode, rc, out);
    cJSON *rep = report();
    char name[64];
    snprintf(name, sizeof name, "bad:%s", strcmp(mode, "badhello") && strcmp(mode, "badtiles") ? mode : "*");
    cr_expect_eq(count(rep, name, outcome, cause), 5, "%s: five %s results naming \"%s\"", name, outcome, cause);
    cr_expect_eq(count(rep, "decode_fa2", "passed", NULL), 5, "%s: decode_fa2 still passes", mode);
    cJSON_Delete(rep);
}

Test(external, adapter_that_crashes) { bad_adapter("crash", "error", "exited with status 3", "", 3); }
Test(external, adapter_crash_quotes_its_log) { bad_adapter("crash", "error", "about to crash", "", 3); }
Test(external, adapter_that_hangs) { bad_adapter("hang", "error", "did not answer within 1 s", "--adapter-timeout 1", 3); }
Test(external, adapter_that_prints_garbage) { bad_adapter("garbage", "error", "broke the protocol", "", 3); }
Test(external, adapter_frame_not_json) { bad_adapter("notjson", "error", "expected a JSON object", "", 3); }
Test(external, adapter_output_of_wrong_shape) { bad_adapter("shape", "error", "expected '<f2' (fp16) of shape (1, 4, 64)", "", 3); }
Test(external, adapter_output_of_wrong_dtype) { bad_adapter("dtype", "error", "is '<f4'", "", 3); }
Test(external, adapter_output_nan_fails) { bad_adapter("nan", "failed", "Mismatched elements: 256 / 256", "", 1); }
/* a FIFO as the result: refused at once, not read (the read would block past --adapter-timeout) */
Test(external, adapter_result_that_is_a_fifo, .timeout = 60) { bad_adapter("fifo", "error", "not a regular file", "--adapter-timeout 5", 3); }
Test(external, adapter_reports_an_error) { bad_adapter("error", "error", "simulated: CUDA out of memory", "", 3); }
/* one reply per request, and a reply's id must be its request's: a second
 * reply or another request's id would shift every later answer by one */
Test(external, a_hung_adapter_dies_with_its_worker)
{
    /* --timeout kills the worker; the adapter (started as `exec COMMAND`,
     * so it holds the parent-death signal itself, not a shell above it)
     * must go with it instead of living on, hung */
    char marker[64], args[1024];
    snprintf(marker, sizeof marker, "orphan-check-%d", (int)getpid());
    snprintf(args, sizeof args, "run --device host --adapter 'bad=%s hang %s' --adapter-timeout 100 --timeout 1 "
             "--backend 'bad:*' %s", MISBEHAVE, marker, FIVE);
    int rc = swadiff(NULL, args);
    cr_expect_eq(rc, 3, "%s", out);
    char check[256];
    /* [o]: the pattern does not match the shell running pgrep */
    snprintf(check, sizeof check, "sleep 1; pgrep -af '[o]%s' || echo none", marker + 1);
    sh("%s", check);
    cr_expect(strstr(out, "none"), "adapter processes left running: %s", out);
    snprintf(check, sizeof check, "pkill -f '[o]%s'", marker + 1);
    sh("%s", check);
}

Test(external, adapter_scratch_is_removed_and_its_log_capped)
{
    /* a passing run leaves no scratch folder under TMPDIR */
    char args[1024];
    snprintf(args, sizeof args, "run --device host --adapter numpy_exact --backend 'numpy_exact:exact' %s", FIVE);
    char env[400];
    snprintf(env, sizeof env, PY "TMPDIR='%s' ", tmpdir);
    int rc = swadiff(env, args);
    cr_expect_eq(rc, 0, "%s", out);
    sh("ls -d '%s'/swadiff-adapter-* 2>/dev/null | wc -l", tmpdir);
    cr_expect_eq(atoi(out), 0, "scratch folders left after a passing run: %s", out);
    /* 3 MB of stderr per request, a crash at the fifth: the log kept for the
     * crash is cut (8 MiB cap, the last 1 MiB kept) and says so */
    snprintf(args, sizeof args, "run --device host --jobs 1 --adapter 'bad=%s chatty' --backend 'bad:*' %s",
             MISBEHAVE, FIVE);
    snprintf(env, sizeof env, PY "TMPDIR='%s' ", tmpdir);
    rc = swadiff(env, args);
    cr_expect_eq(rc, 3, "%s", out);
    sh("ls -d '%s'/swadiff-adapter-* | wc -l; du -cb '%s'/swadiff-adapter-*/adapter.log | tail -1; "
       "cat '%s'/swadiff-adapter-*/adapter.log | grep -c 'earlier bytes of this log dropped'", tmpdir, tmpdir, tmpdir);
    int dirs = 0;
    long bytes = 0, marks = 0;
    cr_assert_eq(sscanf(out, "%d %ld total %ld", &dirs, &bytes, &marks), 3, "%s", out);
    cr_expect_eq(dirs, 1, "one folder, the crash's: %s", out);
    cr_expect_lt(bytes, 8L << 20, "the log is capped: %ld bytes", bytes);
    cr_expect_geq(marks, 1, "the cut is said in the log: %s", out);
}

Test(external, adapter_that_answers_twice) { bad_adapter("twice", "error", "one reply per request", "", 3); }
Test(external, adapter_reply_naming_another_request) { bad_adapter("wrong_id", "error", "its reply names request", "", 3); }
Test(external, adapter_with_wrong_protocol_version) { bad_adapter("badhello", "error", "\"protocol\": 1", "", 3); }
Test(external, adapter_declaring_impossible_tiles)
{
    bad_adapter("badtiles", "error", "KV-tile width of 0", "", 3);
    /* each malformed declaration is refused at registration, naming what was expected */
    static const char *const bad[][2] = {
        /* the JSON (quoted for /bin/sh -c within double quotes), the message */
        {"[64]", "\"tiles\" must be an object"},
        {"{\\\"q_rows\\\": 64}", "\"tiles\".q_rows must be a list of at most 4 integers"},
        {"{\\\"q_rows\\\": [16, 32, 64, 128, 256]}", "\"tiles\".q_rows must be a list of at most 4 integers"},
        {"{\\\"kv_keys\\\": [32.5]}", "\"tiles\".kv_keys must hold integers"},
        {"{\\\"q_rows\\\": [0]}", "declares a query-tile height of 0"},
        {"{\\\"gqa_packed\\\": 1}", "\"tiles\".gqa_packed must be true or false"},
        {"{\\\"tile_q\\\": [64]}", "\"tiles\" has an unknown key \"tile_q\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char args[1024];
        snprintf(args, sizeof args, "run --device host --adapter 'bad=%s badtiles \"%s\"' %s", MISBEHAVE,
                 bad[i][0], FIVE);
        cr_expect_eq(swadiff(NULL, args), 3, "%s: exit:\n%s", bad[i][0], out);
        cr_expect(strstr(out, bad[i][1]), "%s: no \"%s\" in:\n%s", bad[i][0], bad[i][1], out);
    }
}

Test(external, command_line_errors_are_usage_errors)
{
    cr_expect_eq(swadiff(NULL, "run --device host --backend nope:x " FIVE), 2, "%s", out);
    cr_expect(strstr(out, "no --plugin or --adapter backend"), "%s", out);
    cr_expect_eq(swadiff(NULL, "run --device host --adapter not_in_registry " FIVE), 2, "%s", out);
    cr_expect(strstr(out, "no adapter \"not_in_registry\""), "%s", out);
    cr_expect_eq(swadiff(NULL, "run --device host --adapters /nonexistent.json --adapter x " FIVE), 2, "%s", out);
    cr_expect(strstr(out, "/nonexistent.json"), "%s", out);
    cr_expect_eq(swadiff(NULL, "run --device host --adapter 'bad name=true' " FIVE), 2, "%s", out);
}

/* The reproduce command of an external result reruns it exactly. */
Test(external, reproduce_command_registers_the_plugin_again)
{
    char args[1024];
    snprintf(args, sizeof args, "run --device host --plugin %s/libswadiff_minimal.so --backend minimal:window_short "
             "--report %s -q %s", SWADIFF_PLUGIN_DIR, tmpdir, SWADIFF_SOURCE_DIR "/cases/window_edges.json");
    swadiff(NULL, args);
    cJSON *rep = report();
    const cJSON *c, *failing = NULL;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(rep, "cases"))
        if (!failing && !strcmp(cJSON_GetObjectItem(c, "outcome")->valuestring, "failed"))
            failing = c;
    cr_assert(failing, "no failing result:\n%s", out);
    const char *repro = cJSON_GetObjectItem(failing, "reproduce")->valuestring;
    cr_expect(strstr(repro, "--plugin"), "%s", repro);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s", strstr(repro, " run ") + 1);
    cr_expect_eq(swadiff(NULL, cmd), 1, "rerun: %s\n%s", cmd, out);
    cr_expect(strstr(out, "0 passed, 1 failed"), "the rerun is that one result: %s", out);
    cJSON_Delete(rep);
}

/* ---------------------------------------------------------------------------
 * the full diagnosis for external backends; explain and shrink with them */

#define TILED "--plugin " SWADIFF_PLUGIN_DIR "/libtiled_prefill.so"
#define SEED000 "cases/seed000_paged_prefill.json"
#define SEED000_LONG "'seed000_paged_prefill/long_no_prefix_above_window:page_size=16'"

/* The diagnosis family of result `id` of `backend` in the last report. */
static void family_of(const cJSON *rep, const char *id, const char *backend, char *buf, size_t n)
{
    const cJSON *c;
    buf[0] = '\0';
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(rep, "cases"))
    {
        const char *d = cJSON_GetStringValue(cJSON_GetObjectItem(c, "diagnosis"));
        if (!strcmp(cJSON_GetObjectItem(c, "id")->valuestring, id) &&
            !strcmp(cJSON_GetObjectItem(c, "backend")->valuestring, backend) && d && d[0] == '[')
            snprintf(buf, n, "%.*s", (int)(strchr(d, ']') - d + 1), d);
    }
}

/* Seed 000's bug in a user's own tiled kernel is diagnosed as the built-in
 * mutant of the same bug is, with and without a declared tile shape. */
Test(external, tiled_plugin_with_its_mask_planned_off_is_diagnosed_like_the_builtin_mutant)
{
    char args[1024];
    snprintf(args, sizeof args, "run --device host " TILED " --backend 'tiled:*' --report %s -q " SEED000, tmpdir);
    int rc = swadiff(NULL, args);
    cr_expect_eq(rc, 1, "exit %d:\n%s", rc, out);
    cJSON *rep = report();
    cr_expect_eq(count(rep, "tiled:exact", "passed", NULL), total(rep, "tiled:exact"), "the correct twin passes");
    cr_expect_gt(total(rep, "tiled:exact"), 10);
    const char *bugs[] = {"tiled:mask_planned_off", "tiled:mask_planned_off_undeclared"};
    const char *id = "seed000_paged_prefill/long_no_prefix_above_window:page_size=16";
    for (int b = 0; b < 2; b++) {
        cr_expect_eq(count(rep, bugs[b], "failed", NULL), total(rep, bugs[b]), "%s fails every case", bugs[b]);
        const cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItem(rep, "cases"))
        {
            if (strcmp(cJSON_GetObjectItem(c, "backend")->valuestring, bugs[b]))
                continue;
            const char *d = cJSON_GetStringValue(cJSON_GetObjectItem(c, "diagnosis"));
            /* short requests in one tile: "no window" is the same mask (ambiguous, both named) */
            cr_expect(d && strstr(d, "tile_granular_start") && !strstr(d, "weak_fit") && !strstr(d, "not_a_mask"),
                      "%s %s: %s", bugs[b], cJSON_GetObjectItem(c, "id")->valuestring, d ? d : "(none)");
        }
        char fam[128];
        family_of(rep, id, bugs[b], fam, sizeof fam);
        cr_expect_str_eq(fam, "[tile_granular_start]", "%s on the long case", bugs[b]);
    }
    cJSON_Delete(rep);
    /* the built-in prefill under mask_compiled_out: the same family */
    snprintf(args, sizeof args, "run --device host --backend prefill --mutant mask_compiled_out --filter '%s' "
             "--report %s/builtin -q " SEED000, id, tmpdir);
    swadiff(NULL, args);
    char path[512], fam[128];
    snprintf(path, sizeof path, "%s/builtin/report.json", tmpdir);
    rep = read_json_file(path);
    family_of(rep, id, "prefill", fam, sizeof fam);
    cr_expect_str_eq(fam, "[tile_granular_start]");
    cJSON_Delete(rep);
}

/* A shrink run's output: the rerun command (from " run "), into buf. */
static void rerun_of(char *buf, size_t n)
{
    const char *r = strstr(out, "rerun: ");
    cr_assert(r, "shrink printed no rerun command:\n%s", out);
    r = strstr(r, " run ");
    cr_assert(r);
    size_t len = strcspn(r + 1, "\n");
    snprintf(buf, n, "%.*s", (int)len, r + 1);
}

Test(external, explain_and_shrink_take_a_plugin)
{
    char args[2048], rerun[2048];
    int rc = swadiff(NULL, "explain " SEED000_LONG " --device host " TILED " --backend tiled:mask_planned_off " SEED000);
    cr_expect_eq(rc, 1, "exit %d:\n%s", rc, out);
    cr_expect(strstr(out, "diagnosis: [tile_granular_start] ") && strstr(out, "(declared)"), "%s", out);
    cr_expect(strstr(out, "tile_granular_start:q64,kv32  <- best"), "every hypothesis's score is listed:\n%s", out);

    snprintf(args, sizeof args, "shrink " SEED000_LONG " --device host " TILED " --backend tiled:mask_planned_off "
             "--out %s/small.json " SEED000, tmpdir);
    rc = swadiff(NULL, args);
    cr_expect_eq(rc, 0, "exit %d:\n%s", rc, out);
    cr_expect(strstr(out, "diagnosis kept: [tile_granular_start] "), "shrink keeps the family:\n%s", out);
    rerun_of(rerun, sizeof rerun);
    cr_expect(strstr(rerun, "--plugin") && strstr(rerun, "--backend tiled:mask_planned_off"), "%s", rerun);
    cJSON *small = read_json_file((snprintf(args, sizeof args, "%s/small.json", tmpdir), args));
    int qo = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(small, "requests"), 0), "qo_len")->valueint;
    cr_expect_lt(qo, 300, "the case was not reduced (qo_len %d)", qo);
    cJSON_Delete(small);
    /* the printed command reproduces it, for the same reason */
    snprintf(args, sizeof args, "%s --report %s/re -q", rerun, tmpdir);
    rc = swadiff(NULL, args);
    cr_expect_eq(rc, 1, "rerun exit %d: %s\n%s", rc, args, out);
    char path[512];
    snprintf(path, sizeof path, "%s/re/report.json", tmpdir);
    cJSON *rep = read_json_file(path);
    const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(rep, "cases"), 0);
    const char *d = cJSON_GetStringValue(cJSON_GetObjectItem(c0, "diagnosis"));
    cr_expect(d && !strncmp(d, "[tile_granular_start] ", 22), "rerun diagnosis: %s", d ? d : "(none)");
    cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(rep, "cases")), 1, "the rerun is that one backend");
    cJSON_Delete(rep);
}

Test(external, explain_and_shrink_take_an_adapter)
{
    char args[2048], rerun[2048];
    const char *id = "'edge_pm1/prefill_1023:dtype=fp16'";
    snprintf(args, sizeof args, "explain %s --device host --adapter numpy_wrong_window cases/edge_pm1.json", id);
    int rc = swadiff(PY, args);
    cr_expect_eq(rc, 1, "exit %d:\n%s", rc, out);
    cr_expect(strstr(out, "[numpy_wrong_window:window_short on host]: failed") &&
                  strstr(out, "diagnosis: [window_l_minus_1] "), "%s", out);
    snprintf(args, sizeof args, "shrink %s --device host --adapter numpy_wrong_window --backend "
             "'numpy_wrong_window:*' --out %s/small.json cases/edge_pm1.json", id, tmpdir);
    rc = swadiff(PY, args);
    cr_expect_eq(rc, 0, "exit %d:\n%s", rc, out);
    cr_expect(strstr(out, "diagnosis kept: [window_l_minus_1] "), "%s", out);
    rerun_of(rerun, sizeof rerun);
    cr_expect(strstr(rerun, "--adapter 'numpy_wrong_window="), "the rerun registers the adapter: %s", rerun);
    snprintf(args, sizeof args, "%s --report %s/re -q", rerun, tmpdir);
    rc = swadiff(PY, args);
    cr_expect_eq(rc, 1, "rerun exit %d: %s\n%s", rc, args, out);
    char path[512];
    snprintf(path, sizeof path, "%s/re/report.json", tmpdir);
    cJSON *rep = read_json_file(path);
    const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(rep, "cases"), 0);
    const char *d = cJSON_GetStringValue(cJSON_GetObjectItem(c0, "diagnosis"));
    cr_expect(d && !strncmp(d, "[window_l_minus_1] ", 19), "rerun diagnosis: %s", d ? d : "(none)");
    cJSON_Delete(rep);
}

Test(external, adapter_declares_its_tile_shape)
{
    int rc = swadiff(NULL, "explain " SEED000_LONG " --device host --adapter 'tp=/usr/bin/python3 "
                           "tests/data/adapters/tiled_planned_off.py' --backend 'tp:*' " SEED000);
    cr_expect_eq(rc, 1, "exit %d:\n%s", rc, out);
    cr_expect(strstr(out, "diagnosis: [tile_granular_start] ") && strstr(out, "64 rows of one head (declared)"),
              "%s", out);
}

/* A plug-in table built for ABI version 1 still loads, entry by entry. */
Test(external, plugin_built_for_abi_version_1_still_loads)
{
    char path[512], args[1024];
    snprintf(path, sizeof path, "%s/fp32.json", tmpdir);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs("{\"name\": \"w\", \"requests\": [{\"qo_len\": 12, \"kv_len\": 50}, {\"qo_len\": 1, \"kv_len\": 33}],"
          " \"num_qo_heads\": 4, \"num_kv_heads\": 2, \"head_dim\": 64, \"dtype\": \"fp32\", \"window_left\": [3, 9],"
          " \"backends\": [\"prefill\"]}\n", f);
    fclose(f);
    snprintf(args, sizeof args, "run --device host --plugin %s/libabi_v1.so --backend 'v1:*' --report %s -q %s",
             SWADIFF_PLUGIN_DIR, tmpdir, path);
    int rc = swadiff(NULL, args);
    cr_expect_eq(rc, 1, "exit %d:\n%s", rc, out);
    cJSON *rep = report();
    cr_expect_eq(count(rep, "v1:exact", "passed", NULL), 2, "%s", out);
    cr_expect_eq(count(rep, "v1:window_long", "failed", NULL), 2, "%s", out);
    char fam[128];
    family_of(rep, "fp32/w:window_left=9", "v1:window_long", fam, sizeof fam);
    cr_expect_str_eq(fam, "[window_l_plus_1]");
    cJSON_Delete(rep);
}

/* explain and shrink isolate each attempt as `run` does; their new options
 * refuse bad values. */
Test(external, explain_isolates_a_crashing_or_hanging_plugin)
{
    char args[1024];
    int rc = swadiff(NULL, "list cases " FIVE);
    cr_assert_eq(rc, 0, "%s", out);
    char id[256];
    snprintf(id, sizeof id, "%.*s", (int)strcspn(out, "\n"), out);
    snprintf(args, sizeof args, "explain '%s' --device host --plugin %s/libcrash.so " FIVE, id, SWADIFF_PLUGIN_DIR);
    rc = swadiff(NULL, args);
    cr_expect_eq(rc, 3, "a crash is an error result, explain goes on: exit %d:\n%s", rc, out);
    cr_expect(strstr(out, "[crash:segv on host]: error") && strstr(out, "the worker process"), "%s", out);
    cr_expect(strstr(out, "[decode_fa2 on host]: passed"), "the built-in backend still ran:\n%s", out);
    snprintf(args, sizeof args, "explain '%s' --device host --plugin %s/libhang.so --timeout 2 " FIVE, id,
             SWADIFF_PLUGIN_DIR);
    rc = swadiff(NULL, args);
    cr_expect_eq(rc, 3, "exit %d:\n%s", rc, out);
    cr_expect(strstr(out, "[hang:sleep on host]: error — timeout"), "%s", out);
    snprintf(args, sizeof args, "shrink '%s' --device host --plugin %s/libhang.so --backend hang:sleep --timeout 2 "
             FIVE, id, SWADIFF_PLUGIN_DIR);
    rc = swadiff(NULL, args);
    cr_expect_eq(rc, 2, "nothing to shrink: exit %d:\n%s", rc, out);
    cr_expect(strstr(out, "does not fail") && strstr(out, "timeout"), "%s", out);
}

Test(external, explain_and_shrink_refuse_bad_options)
{
    cr_expect_eq(swadiff(NULL, "explain x --device host --backend nope:x " FIVE), 2, "%s", out);
    cr_expect(strstr(out, "no --plugin or --adapter backend has that name"), "%s", out);
    cr_expect_eq(swadiff(NULL, "shrink " SEED000_LONG " --device host " TILED " --backend 'tiled:*' " SEED000), 2,
                 "%s", out);
    cr_expect(strstr(out, "names 3 backends; shrink takes exactly one"), "%s", out);
    cr_expect_eq(swadiff(NULL, "explain x --timeout -1 " FIVE), 2, "%s", out);
    cr_expect(strstr(out, "--timeout -1: expected a positive number of seconds"), "%s", out);
    cr_expect_eq(swadiff(NULL, "explain x --adapter-timeout zero " FIVE), 2, "%s", out);
    cr_expect_eq(swadiff(NULL, "explain x --timeout 5 --no-isolate " FIVE), 2, "%s", out);
    cr_expect(strstr(out, "drop --no-isolate or --timeout"), "%s", out);
    cr_expect_eq(swadiff(NULL, "explain x --out y.json " FIVE), 2, "%s", out);
    cr_expect_eq(swadiff(NULL, "explain x --adapter not_in_registry " FIVE), 2, "%s", out);
    cr_expect(strstr(out, "no adapter \"not_in_registry\""), "%s", out);
    /* a backend that passes: nothing to shrink, said so */
    cr_expect_eq(swadiff(NULL, "shrink " SEED000_LONG " --device host " TILED " --backend tiled:exact " SEED000), 2,
                 "%s", out);
    cr_expect(strstr(out, "does not fail on tiled:exact") && strstr(out, "(passed: "), "%s", out);
}

/* An adapter outside adapters/ imports the helper as the README's snippet does
 * (README.md and docs/your-kernel.md show this file with comments, "numpy_exact" for "mine"),
 * from any working folder: swadiff puts the helper's folder on its PYTHONPATH. */
Test(external, adapter_anywhere_imports_the_helper)
{
    char path[512];
    snprintf(path, sizeof path, "%s/my_adapter.py", tmpdir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("import swadiff_adapter as sa\n"
          "\n"
          "def run(backend, problem, tensors):\n"
          "    k = sa.gather_paged(problem, tensors, \"k\", as_float32=True)\n"
          "    v = sa.gather_paged(problem, tensors, \"v\", as_float32=True)\n"
          "    return sa.reference_attention(problem, tensors, k=k, v=v)\n"
          "\n"
          "sa.serve(\"mine\", [sa.Backend(\"exact\", \"float64 numpy SDPA\", lse_base=\"e\")], run)\n",
          f);
    fclose(f);
    int rc = sh("cd '%s' && env -u PYTHONPATH -u SWADIFF_ADAPTER_DIR '%s' run --device host --adapter "
                "'mine=/usr/bin/python3 %s' --backend 'mine:*' --report %s -q %s",
                tmpdir, SWADIFF_BINARY, path, tmpdir, FIVE);
    cr_expect_eq(rc, 0, "exit %d:\n%s", rc, out);
    cJSON *rep = report();
    cr_expect_eq(count(rep, "mine:exact", "passed", NULL), 5, "%s", out);
    cJSON_Delete(rep);

    /* SWADIFF_ADAPTER_DIR names the helper's folder first; one without the helper is passed over */
    rc = sh("cd '%s' && env -u PYTHONPATH SWADIFF_ADAPTER_DIR='%s/adapters' '%s' run --device host --adapter "
            "'mine=/usr/bin/python3 %s' --backend 'mine:*' -q %s && env -u PYTHONPATH SWADIFF_ADAPTER_DIR=/nonexistent "
            "'%s' run --device host --adapter 'mine=/usr/bin/python3 %s' --backend 'mine:*' -q %s",
            tmpdir, SWADIFF_SOURCE_DIR, SWADIFF_BINARY, path, FIVE, SWADIFF_BINARY, path, FIVE);
    cr_expect_eq(rc, 0, "exit %d:\n%s", rc, out);
}

/* A Python without numpy: the adapter cannot start, the error names that
 * interpreter and the remedy, and the console says it once, not once a case. */
Test(external, python_without_numpy_is_named_once)
{
    /* -S leaves out site-packages, where Debian's numpy lives */
    int rc = swadiff(NULL, "run --device host --adapter 'nonp=/usr/bin/python3 -S adapters/numpy_exact.py' "
                           "--backend 'nonp:*' " FIVE);
    cr_expect_eq(rc, 3, "exit %d:\n%s", rc, out);
    cr_expect(strstr(out, "numpy is not installed for /usr/bin/python3") != NULL, "%s", out);
    cr_expect(strstr(out, "set SWADIFF_PYTHON to an interpreter that has it") != NULL, "%s", out);
    int lines = 0;
    for (const char *p = out; (p = strstr(p, "\nERROR  nonp:*")) != NULL; p++)
        lines++;
    cr_expect_eq(lines, 1, "one error line for five results:\n%s", out);
    cr_expect(strstr(out, "(4 more errors repeat a backend's message printed above") != NULL, "%s", out);
    cr_expect(strstr(out, "ERROR: 0 passed, 0 failed, 5 errors") != NULL, "every result still records it:\n%s", out);
}
