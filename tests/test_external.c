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
 *    built-in backend of the same run passes.
 *
 * Runs the built binary (SWADIFF_BINARY); plug-ins come from
 * SWADIFF_PLUGIN_DIR (built by tests/CMakeLists.txt). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>

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
        /* large cases are not scored (explain says so); every scored one must name the bug */
        bool too_large = s && strstr(s, "too large to score");
        cr_expect(s && (strstr(s, text) || too_large), "%s: diagnosis %s lacks \"%s\"", backend, s ? s : "(none)",
                  text);
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

Test(external, plugin_with_wrong_abi_version) { broken_plugin("libbad_abi.so", "bad_abi", "ABI version 42"); }
Test(external, plugin_without_entry_point) { broken_plugin("libno_entry.so", "no_entry", "exports no swadiff_plugin_entry"); }
Test(external, plugin_entry_returns_null) { broken_plugin("libnull_table.so", "null_table", "returned NULL"); }
Test(external, plugin_with_bad_table) { broken_plugin("libbad_table.so", "bad_table", "has a name with characters"); }
Test(external, plugin_file_missing) { broken_plugin("libdoes_not_exist.so", "does_not_exist", "cannot load"); }

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
    snprintf(name, sizeof name, "bad:%s", strcmp(mode, "badhello") ? mode : "*");
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
Test(external, adapter_reports_an_error) { bad_adapter("error", "error", "simulated: CUDA out of memory", "", 3); }
Test(external, adapter_with_wrong_protocol_version) { bad_adapter("badhello", "error", "\"protocol\": 1", "", 3); }

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

/* An adapter outside adapters/ imports the helper as README's snippet does,
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
