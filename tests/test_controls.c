/* test_controls.c — the marshalling controls (harness/controls.h) end to end.
 *
 * A run with external backends runs swadiff's exact backend and its
 * one-key-short twin through the same staging first.  What a user relies on:
 *  - a sound staging says so, and the controls are not results of the run;
 *  - a staging that hands plug-ins and adapters a key count instead of L
 *    (the review mistake after which the one-key-short example passed
 *    everything) or the wrong page layout is caught: the run says
 *    MARSHALLING BROKEN, every external result is marked untrustworthy and
 *    no external pass survives (exit 3);
 *  - controls that cannot run, or are turned off, leave the run UNCHECKED,
 *    never silently sound;
 *  - a run of built-in backends only has no controls.
 * The faults come from the test hook SWADIFF_TEST_MARSHAL_FAULT
 * (backends/external/external_internal.h). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "test_util.h"

#define FIVE SWADIFF_SOURCE_DIR "/tests/data/cli/five.json"
#define PLUGIN SWADIFF_PLUGIN_DIR "/libswadiff_minimal.so"
#define PY "SWADIFF_PYTHON=/usr/bin/python3 " /* Debian's python3 has numpy (python3-numpy) */

TestSuite(controls, .init = make_tmp, .fini = remove_tmp, .timeout = 120);

static int swadiff(const char *env, const char *args)
{
    return sh("cd '%s' && %s'%s' run --device host --report '%s' %s", SWADIFF_SOURCE_DIR, env ? env : "",
              SWADIFF_BINARY, tmpdir, args);
}

static cJSON *report(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/report.json", tmpdir);
    return read_json_file(path);
}

static const char *controls_state(const cJSON *rep)
{
    const cJSON *c = cJSON_GetObjectItem(rep, "controls");
    const cJSON *s = c ? cJSON_GetObjectItem(c, "state") : NULL;
    return cJSON_IsString(s) ? s->valuestring : NULL;
}

/* Control runs of the given role, and how many went as they must. */
static int control_runs(const cJSON *rep, const char *role, int *as_expected, const char *backend_prefix)
{
    int n = 0;
    *as_expected = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, cJSON_GetObjectItem(cJSON_GetObjectItem(rep, "controls"), "runs"))
    {
        if (strcmp(cJSON_GetObjectItem(r, "role")->valuestring, role) ||
            strncmp(cJSON_GetObjectItem(r, "backend")->valuestring, backend_prefix, strlen(backend_prefix)))
            continue;
        n++;
        *as_expected += cJSON_IsTrue(cJSON_GetObjectItem(r, "as_expected"));
    }
    return n;
}

/* Results of backends starting with prefix: total, passed, marked untrustworthy. */
static void results(const cJSON *rep, const char *prefix, int *n, int *passed, int *untrusted)
{
    *n = *passed = *untrusted = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(rep, "cases"))
    {
        const char *b = cJSON_GetObjectItem(c, "backend")->valuestring;
        if (strncmp(b, prefix, strlen(prefix)))
            continue;
        (*n)++;
        *passed += !strcmp(cJSON_GetObjectItem(c, "outcome")->valuestring, "passed");
        *untrusted += cJSON_IsTrue(cJSON_GetObjectItem(c, "untrustworthy"));
    }
}

/* The five results of five.json of backends starting with prefix: none
 * passed, every one marked untrustworthy (the controls found the staging
 * broken). */
static void expect_all_untrustworthy(const cJSON *rep, const char *prefix)
{
    int n, passed, untrusted;
    results(rep, prefix, &n, &passed, &untrusted);
    cr_expect(n == 5 && passed == 0 && untrusted == 5, "%s: %d results, %d passed, %d untrustworthy", prefix, n,
              passed, untrusted);
}

static void expect_no_control_results(const cJSON *rep)
{
    int n, p, u;
    results(rep, "swadiff_control", &n, &p, &u);
    cr_expect_eq(n, 0, "the controls are not results of the run");
}

Test(controls, a_sound_plugin_staging_says_so)
{
    int rc = swadiff(NULL, "--plugin '" PLUGIN "' --backend 'minimal:exact' '" FIVE "'");
    cr_expect_eq(rc, 0, "%s", out);
    cr_expect(strstr(out, "marshalling controls sound"), "%s", out);
    cJSON *rep = report();
    cr_expect_str_eq(controls_state(rep), "sound");
    int ok, pos = control_runs(rep, "positive", &ok, "swadiff_control:exact");
    cr_expect_geq(pos, 3, "two built-in cases and at least one of the run's: %d", pos);
    cr_expect_eq(ok, pos);
    int neg = control_runs(rep, "negative", &ok, "swadiff_control:window_short");
    cr_expect_geq(neg, 2, "the window binds in both built-in cases: %d", neg);
    cr_expect_eq(ok, neg, "the one-key-short twin fails wherever it ran");
    expect_no_control_results(rep);
    int n, passed, untrusted;
    results(rep, "minimal:", &n, &passed, &untrusted);
    cr_expect(n == 5 && passed == 5 && untrusted == 0, "%d results, %d passed, %d untrustworthy", n, passed,
              untrusted);
    cJSON_Delete(rep);
}

Test(controls, a_window_handed_as_a_key_count_is_caught)
{
    /* the review mistake: L + 1 reaches the plug-in.  The one-key-short
     * example then computes the spec and passes everything */
    int rc = swadiff("SWADIFF_TEST_MARSHAL_FAULT=window_as_key_count ",
                     "--plugin '" PLUGIN "' --backend 'minimal:window_short' '" FIVE "'");
    cr_expect_eq(rc, 3, "no external pass survives: exit 3 (errors); %s", out);
    cr_expect(strstr(out, "MARSHALLING BROKEN") && strstr(out, "UNTRUSTWORTHY"), "%s", out);
    cJSON *rep = report();
    cr_expect_str_eq(controls_state(rep), "broken");
    expect_all_untrustworthy(rep, "minimal:window_short");
    int ok, pos = control_runs(rep, "positive", &ok, "swadiff_control:exact");
    cr_expect(pos > 0 && ok < pos, "the positive control fails: %d of %d passed", ok, pos);
    expect_no_control_results(rep);
    cJSON_Delete(rep);
}

Test(controls, a_swapped_page_layout_is_caught_by_the_forms_check)
{
    int rc = swadiff("SWADIFF_TEST_MARSHAL_FAULT=layout_swapped ",
                     "--plugin '" PLUGIN "' --backend 'minimal:exact' '" FIVE "'");
    cr_expect_neq(rc, 0, "%s", out);
    cr_expect(strstr(out, "MARSHALLING BROKEN") && strstr(out, "forms disagree"), "%s", out);
    cJSON *rep = report();
    cr_expect_str_eq(controls_state(rep), "broken");
    expect_all_untrustworthy(rep, "minimal:exact");
    cJSON_Delete(rep);
}

Test(controls, adapters_are_controlled_through_the_adapter_staging)
{
    int rc = swadiff(PY, "--adapter numpy_exact --backend 'numpy_exact:exact' '" FIVE "'");
    cr_expect_eq(rc, 0, "%s", out);
    cJSON *rep = report();
    cr_expect_str_eq(controls_state(rep), "sound");
    int ok, pos = control_runs(rep, "positive", &ok, "swadiff_control_numpy:all_forms");
    cr_expect(pos >= 3 && ok == pos, "the adapter control reads every form: %d of %d passed", ok, pos);
    cr_expect_eq(control_runs(rep, "positive", &ok, "swadiff_control:"), 0, "no plug-in ran, no plug-in control");
    cJSON_Delete(rep);

    rc = swadiff(PY "SWADIFF_TEST_MARSHAL_FAULT=window_as_key_count ",
                 "--adapter numpy_exact --backend 'numpy_exact:exact' '" FIVE "'");
    cr_expect_neq(rc, 0, "%s", out);
    rep = report();
    cr_expect_str_eq(controls_state(rep), "broken");
    expect_all_untrustworthy(rep, "numpy_exact:exact");
    cJSON_Delete(rep);

    rc = swadiff(PY "SWADIFF_TEST_MARSHAL_FAULT=layout_swapped ",
                 "--adapter numpy_exact --backend 'numpy_exact:exact' '" FIVE "'");
    rep = report();
    cr_expect_str_eq(controls_state(rep), "broken", "%s", out);
    cr_expect(strstr(out, "swadiff_control_numpy:all_forms"), "%s", out);
    cJSON_Delete(rep);
}

Test(controls, controls_that_cannot_run_or_are_off_leave_the_run_unchecked)
{
    /* a Python without the adapters' numpy: the control adapter cannot start */
    int rc = swadiff("SWADIFF_PYTHON=/bin/false ", "--adapter numpy_exact --backend 'numpy_exact:*' '" FIVE "'");
    cr_expect_neq(rc, 0, "the adapter itself cannot start either: %s", out);
    cJSON *rep = report();
    cr_expect_str_eq(controls_state(rep), "not_run", "%s", out);
    cr_expect(strstr(out, "UNCHECKED"), "%s", out);
    cJSON_Delete(rep);

    rc = swadiff("SWADIFF_NO_CONTROLS=1 ", "--plugin '" PLUGIN "' --backend 'minimal:exact' '" FIVE "'");
    cr_expect_eq(rc, 0, "%s", out);
    cr_expect(strstr(out, "UNCHECKED") && strstr(out, "SWADIFF_NO_CONTROLS"), "%s", out);
    rep = report();
    cr_expect_str_eq(controls_state(rep), "not_run");
    cJSON_Delete(rep);
}

Test(controls, a_run_of_builtin_backends_has_none)
{
    int rc = swadiff(NULL, "--backend decode_fa2 '" FIVE "'");
    cr_expect_eq(rc, 0, "%s", out);
    cr_expect(!strstr(out, "marshalling"), "%s", out);
    cJSON *rep = report();
    cr_expect(!cJSON_GetObjectItem(rep, "controls"));
    cJSON_Delete(rep);
}

Test(controls, poisoned_pages_out_of_every_window_are_not_a_false_alarm)
{
    /* poison data evicts the pages no row may see to one NaN page, so the
     * forms differ there by design; the forms check covers what rows see */
    int rc = swadiff(NULL, "--plugin '" PLUGIN "' --backend 'minimal:exact' cases/page_units.json");
    cr_expect_eq(rc, 0, "%s", out);
    cJSON *rep = report();
    cr_expect_str_eq(controls_state(rep), "sound", "%s", out);
    int ok, pos = control_runs(rep, "positive", &ok, "swadiff_control:exact");
    cr_expect(pos >= 3 && ok == pos, "%d of %d", ok, pos);
    cJSON_Delete(rep);
    rc = swadiff(PY, "--adapter numpy_exact --backend 'numpy_exact:exact' cases/page_units.json");
    cr_expect_eq(rc, 0, "%s", out);
    rep = report();
    cr_expect_str_eq(controls_state(rep), "sound", "%s", out);
    cJSON_Delete(rep);
}
