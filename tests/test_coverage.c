/* test_coverage.c — `swadiff coverage` (harness/cli_coverage.c) as the CI
 * gate uses it: the shipped library has no gap; the same library without
 * one of its coverage case files has gaps, named, with exit 1 (so the gate
 * can fail); --json lists them; usage errors exit 2.  And the decisions
 * each result carries in report.json (report 1.2) survive `swadiff merge`.
 *
 * Runs the built binary (SWADIFF_BINARY) in a temporary folder. */
#include "harness/report_text.h"
#include "test_util.h"

TestSuite(coverage, .init = make_tmp, .fini = remove_tmp);

#define SRC SWADIFF_SOURCE_DIR

Test(coverage, shipped_library_has_no_gap)
{
    int rc = sh("cd '%s' && '%s' coverage -q --device host cases", SRC, SWADIFF_BINARY);
    cr_expect_eq(rc, 0, "the shipped cases should leave no reachable plan decision unexercised:\n%s", out);
    cr_expect(strstr(out, "coverage: 0 gaps"), "%s", out);
}

/* The gate can fail: the shipped library without its coverage_*.json
 * files leaves reachable decisions unexercised, and the command exits 1 (the
 * failures code) and lists them in --json. */
Test(coverage, removing_the_coverage_files_reports_gaps)
{
    cr_assert_eq(sh("mkdir -p '%s/lib' && cp -r '%s/cases/.' '%s/lib/' && rm '%s'/lib/coverage_*.json", tmpdir, SRC,
                    tmpdir, tmpdir),
                 0, "%s", out);
    int rc = sh("'%s' coverage -q --device host --json '%s/cov.json' '%s/lib'", SWADIFF_BINARY, tmpdir, tmpdir);
    cr_expect_eq(rc, 1, "gaps must be the failures exit code 1, got %d:\n%s", rc, out);
    cr_expect(strstr(out, " GAP"), "%s", out);
    char path[512];
    snprintf(path, sizeof path, "%s/cov.json", tmpdir);
    cJSON *j = read_json_file(path);
    int listed = 0;
    cJSON *b;
    cJSON_ArrayForEach(b, cJSON_GetObjectItem(j, "backends"))
        listed += cJSON_GetArraySize(cJSON_GetObjectItem(b, "gaps"));
    cr_expect_gt(cJSON_GetObjectItem(j, "gaps")->valueint, 0);
    cr_expect_eq(listed, cJSON_GetObjectItem(j, "gaps")->valueint, "every gap counted is listed");
    cJSON_Delete(j);
}

/* A fixed two-case library: exactly the gaps its shapes leave, named. */
Test(coverage, known_gaps_of_a_small_library)
{
    int rc = sh("'%s' coverage --device host --json '%s/cov.json' '%s/coverage/small.json'", SWADIFF_BINARY, tmpdir,
                SWADIFF_TEST_DATA);
    cr_expect_eq(rc, 1, "%s", out);
    cr_expect(strstr(out, "prefill: 1 plans") && strstr(out, "decode_fa2: 1 plans"), "%s", out);
    cr_expect(strstr(out, "gqa_group      1 1, 2-4 0 GAP, 5-7 0 GAP, 8+ 0 GAP"), "%s", out);
    cr_expect(strstr(out, "cta_tile_q     16 1, 64 0 GAP, 128 0 GAP"), "%s", out);
    cr_expect(strstr(out, "graph          off 1, on 0 GAP"), "%s", out);
    /* the window kinds: prefill can take all five, decode_fa2 no right bound */
    cr_expect(strstr(out, "window         none 0 GAP, window_left 1, saturated 0 GAP, window_right 0 GAP, "
                          "chunked 0 GAP"), "%s", out);
    cr_expect(strstr(out, "window         none 0 GAP, window_left 1, saturated 0 GAP, window_right 0 (unreachable), "
                          "chunked 0 GAP"), "%s", out);
    cr_expect(strstr(out, "empty_rows     no 1, yes 0 GAP"), "%s", out);
    cr_expect(strstr(out, "layers         one 1, several 0 GAP"), "%s", out);
    cr_expect(strstr(out, "graph_batch    more_live 0 GAP, same 0 (unreachable), fewer_live 0 GAP"), "%s", out);
    cr_expect(strstr(out, "graph_batch x split_kv       0/4  GAP: more_live+off, more_live+on, fewer_live+off, "
                          "fewer_live+on"), "%s", out);
    cr_expect(!strstr(out, "decode_aiter"), "backends no case names are not planned:\n%s", out);

    char path[512];
    snprintf(path, sizeof path, "%s/cov.json", tmpdir);
    cJSON *j = read_json_file(path);
    bool found = false;
    cJSON *b;
    cJSON_ArrayForEach(b, cJSON_GetObjectItem(j, "backends"))
    {
        if (strcmp(cJSON_GetObjectItem(b, "backend")->valuestring, "prefill"))
            continue;
        cr_expect_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(b, "decisions"), "cta_tile_q"), "16")
                         ->valueint,
                     1);
        cJSON *g;
        cJSON_ArrayForEach(g, cJSON_GetObjectItem(b, "gaps"))
        {
            cJSON *d = cJSON_GetObjectItem(g, "decision"), *v = cJSON_GetObjectItem(g, "value");
            found |= d && v && !strcmp(d->valuestring, "cta_tile_q") && !strcmp(v->valuestring, "128");
        }
    }
    cr_expect(found, "--json should list the prefill gap cta_tile_q=128");
    cJSON_Delete(j);
}

/* Unreachable values are never gaps, and each says why. */
Test(coverage, unreachable_values_carry_their_reason)
{
    int rc = sh("cd '%s' && '%s' coverage -q --device host --json '%s/cov.json' cases", SRC, SWADIFF_BINARY, tmpdir);
    cr_assert_eq(rc, 0, "%s", out);
    char path[512];
    snprintf(path, sizeof path, "%s/cov.json", tmpdir);
    cJSON *j = read_json_file(path);
    int with_reason = 0;
    cJSON *b, *u;
    cJSON_ArrayForEach(b, cJSON_GetObjectItem(j, "backends"))
    {
        cJSON_ArrayForEach(u, cJSON_GetObjectItem(b, "unreachable"))
        {
            cJSON *why = cJSON_GetObjectItem(u, "reason");
            cr_expect(cJSON_IsString(why) && strlen(why->valuestring) > 20, "every rule has a reason");
            with_reason++;
        }
        if (!strcmp(cJSON_GetObjectItem(b, "backend")->valuestring, "decode_aiter")) {
            cJSON *dec = cJSON_GetObjectItem(b, "decisions");
            cr_expect_null(cJSON_GetObjectItem(dec, "split_kv"), "decode_aiter has no split-KV decision");
            cr_expect_not_null(cJSON_GetObjectItem(dec, "sliding_window"));
        }
    }
    cr_expect_gt(with_reason, 10);
    cJSON_Delete(j);
}

Test(coverage, usage_errors)
{
    cr_expect_eq(sh("'%s' coverage --help", SWADIFF_BINARY), 0, "%s", out);
    cr_expect(strstr(out, "usage: swadiff coverage") && strstr(out, "split_kv x batch"), "%s", out);
    cr_expect(strstr(out, "none | window_left | saturated | window_right | chunked") &&
                  strstr(out, "graph_batch x split_kv") && strstr(out, "window x page_size") &&
                  strstr(out, "empty_rows") && strstr(out, "layers"),
              "the help lists the window kinds, the new decisions and pairs:\n%s", out);
    cr_expect_eq(sh("'%s' coverage --backend nope '%s/cases'", SWADIFF_BINARY, SRC), 2, "%s", out);
    cr_expect_eq(sh("'%s' coverage --bogus", SWADIFF_BINARY), 2, "%s", out);
    cr_expect_eq(sh("'%s' coverage '%s/no-such-folder'", SWADIFF_BINARY, tmpdir), 2, "%s", out);
}

/* report.json 1.2: every planned result carries its decisions; merge keeps
 * them; a refused plan has none. */
Test(coverage, report_decisions_survive_merge)
{
    int rc = sh("cd '%s' && '%s' run --device host -q --report '%s/r' --filter 'coverage_prefill/split_windows*' "
                "--filter 'cuda_graph/aiter_rejects_graph*' cases",
                SRC, SWADIFF_BINARY, tmpdir);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_eq(sh("'%s' merge '%s/m' '%s/r/report.json'", SWADIFF_BINARY, tmpdir, tmpdir), 0, "%s", out);
    for (int k = 0; k < 2; k++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s/report.json", tmpdir, k ? "m" : "r");
        cJSON *j = read_json_file(path);
        cr_expect_str_eq(cJSON_GetObjectItem(j, "report_version")->valuestring, SWA_REPORT_VERSION);
        int split = 0, refused = 0;
        cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItem(j, "cases"))
        {
            cJSON *d = cJSON_GetObjectItem(c, "decisions");
            if (strstr(cJSON_GetObjectItem(c, "id")->valuestring, "aiter_rejects_graph")) {
                cr_expect_null(d, "a refused plan took no decision");
                refused++;
                continue;
            }
            cr_assert_not_null(d, "%s: no decisions", path);
            cr_expect_str_eq(cJSON_GetObjectItem(d, "split_kv")->valuestring, "on");
            cr_expect_str_eq(cJSON_GetObjectItem(d, "req_chunks")->valuestring, "single+several");
            split++;
        }
        cr_expect_eq(split, 6, "%s", path);
        cr_expect_eq(refused, 1, "%s", path);
        cJSON_Delete(j);
    }
}

/* A forged decisions object is a located error, not a silent truncation. */
Test(coverage, merge_refuses_malformed_decisions)
{
    int rc = sh("cd '%s' && '%s' run --device host -q --report '%s/r' --filter 'coverage_prefill/custom_scale' cases",
                SRC, SWADIFF_BINARY, tmpdir);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert_eq(sh("sed -i 's/\"split_kv\":[^,]*,/\"split_kv\": 3,/' '%s/r/report.json'", tmpdir), 0, "%s", out);
    rc = sh("'%s' merge '%s/m' '%s/r/report.json'", SWADIFF_BINARY, tmpdir, tmpdir);
    cr_expect_neq(rc, 0, "%s", out);
    cr_expect(strstr(out, "decisions") && strstr(out, "cases[0]"), "the error should name the place:\n%s", out);
}

/* ---- launch coverage (swadiff coverage --launches, --launches-from) ---------------- */

/* The CI gate: on each target the shipped library makes the GPU kernels
 * take every launch choice the target's launchers can take. */
Test(coverage, shipped_library_takes_every_launch_choice_of_each_target)
{
    const char *targets[] = {"h200", "sm80", "portable"};
    for (int i = 0; i < 3; i++) {
        int rc = sh("cd '%s' && '%s' coverage -q --launches %s cases", SRC, SWADIFF_BINARY, targets[i]);
        cr_expect_eq(rc, 0, "%s:\n%s", targets[i], out);
        cr_expect(strstr(out, "launch coverage: 0 gaps") && strstr(out, "0 unpredicted launches"), "%s", out);
    }
}

/* The gate can fail: without cases/launch_choices.json (and
 * cases/invariance.json, whose deterministic-mode batches also take the
 * persistent grid) an H200 never runs the persistent prefill grid nor
 * decode groups past 32 query heads per KV head, and the command says
 * which, exit 1. */
Test(coverage, removing_the_launch_cases_reports_the_launches_never_taken)
{
    cr_assert_eq(sh("mkdir -p '%s/lib' && cp -r '%s/cases/.' '%s/lib/' && rm '%s'/lib/launch_choices.json '%s'/lib/invariance.json",
                    tmpdir, SRC, tmpdir, tmpdir, tmpdir),
                 0, "%s", out);
    int rc = sh("'%s' coverage -q --launches h200 '%s/lib'", SWADIFF_BINARY, tmpdir);
    cr_expect_eq(rc, 1, "gaps are the failures exit code, got %d:\n%s", rc, out);
    cr_expect(strstr(out, "persistent 0 GAP"), "%s", out);
    cr_expect(strstr(out, "5_up 0 GAP"), "%s", out);
    cr_expect(strstr(out, "pair GAP prefill.grid=persistent x prefill.head_dim=128"), "%s", out);
}

Test(coverage, launch_usage_errors_are_named)
{
    int rc = sh("'%s' coverage --launches h100 '%s/cases'", SWADIFF_BINARY, SRC);
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "unknown target 'h100' (expected h200, sm80, portable)"), "%s", out);
    rc = sh("'%s' coverage --launches h200 --json x.json '%s/cases'", SWADIFF_BINARY, SRC);
    cr_expect_eq(rc, 2, "%s", out);
    rc = sh("'%s' coverage --launches-from r.json '%s/cases'", SWADIFF_BINARY, SRC);
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "takes no --launches and no case paths"), "%s", out);
}

static void edit_report(const char *path, void (*edit)(cJSON *root))
{
    cJSON *root = read_json_file(path);
    cr_assert_not_null(root);
    edit(root);
    char *text = cJSON_Print(root);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
    free(text);
    cJSON_Delete(root);
}

static void as_gpu_report(cJSON *root)
{
    cJSON_AddStringToObject(cJSON_GetObjectItem(root, "environment"), "launch_target",
                            "portable=0;wgmma=1;sm_count=132;prefill_engine=2;rows_per_warp=32;decode_warps=2;ws_ctas=0");
    int i = 0;
    cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(root, "cases"))
    {
        cJSON *l = cJSON_AddObjectToObject(c, "launch");
        cJSON_AddStringToObject(l, "decode_fa2.kernel", "mma_sync_w2");
        cJSON_AddStringToObject(l, "decode_fa2.row_blocks", "1");
        if (i++ == 1) { /* one result whose launch the chooser did not predict */
            cJSON *p = cJSON_AddObjectToObject(c, "launch_predicted");
            cJSON_AddStringToObject(p, "decode_fa2.kernel", "mma_sync_w4");
        }
    }
}

static void with_unknown_value(cJSON *root)
{
    cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "cases"), 0);
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(c, "launch"), "decode_fa2.kernel", cJSON_CreateString("mma_sync_w3"));
}

/* The GPU run's gate over its report: the launches recorded, the target
 * the report names; a launch the chooser did not predict fails it; a report
 * of the host emulation has nothing to gate and says so (exit 2, not 0). */
Test(coverage, launches_from_a_report_gate_what_ran)
{
    int rc = sh("cd '%s' && '%s' run -q --device host --backend decode_fa2 --report '%s/r' cases/sentinel_values.json", SRC,
                SWADIFF_BINARY, tmpdir);
    cr_assert_eq(rc, 0, "%s", out);
    char path[512];
    snprintf(path, sizeof path, "%s/r/report.json", tmpdir);
    rc = sh("'%s' coverage --launches-from '%s'", SWADIFF_BINARY, path);
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(strstr(out, "no environment.launch_target") && strstr(out, "gate the report of a GPU run"), "%s", out);

    edit_report(path, as_gpu_report);
    rc = sh("'%s' coverage -q --launches-from '%s'", SWADIFF_BINARY, path);
    cr_expect_eq(rc, 1, "%s", out);
    cr_expect(strstr(out, "1 result launched other than the chooser predicted from the plan") &&
                  strstr(out, "launched decode_fa2.kernel=mma_sync_w2;decode_fa2.row_blocks=1; predicted "
                              "decode_fa2.kernel=mma_sync_w4"),
              "%s", out);
    cr_expect(strstr(out, "prefill.kernel") && strstr(out, "wgmma_ws_128 0 GAP"),
              "a decode-only run leaves the prefill kernels untaken:\n%s", out);

    edit_report(path, with_unknown_value);
    rc = sh("'%s' coverage -q --launches-from '%s'", SWADIFF_BINARY, path);
    cr_expect(strstr(out, "unknown value \"mma_sync_w3\""), "%s", out);
}

/* A merged report keeps the launches and the launch target; and a report
 * whose worst element sits on a row before key 0 (a negative position)
 * reads back (merge refused it before). */
Test(coverage, launches_and_rows_before_key_0_survive_merge)
{
    int rc = sh("cd '%s' && '%s' run -q --device host --report '%s/r' cases/empty_rows.json", SRC, SWADIFF_BINARY, tmpdir);
    cr_assert_eq(rc, 0, "%s", out);
    char path[512];
    snprintf(path, sizeof path, "%s/r/report.json", tmpdir);
    cr_assert_eq(sh("grep -q '\"position\":.*-[0-9]' '%s'", path), 0, "the case file has rows before key 0");
    edit_report(path, as_gpu_report);
    rc = sh("'%s' merge '%s/m' '%s'", SWADIFF_BINARY, tmpdir, path);
    cr_expect_eq(rc, 0, "%s", out);
    snprintf(path, sizeof path, "%s/m/report.json", tmpdir);
    cJSON *m = read_json_file(path);
    const char *target = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "environment"), "launch_target"));
    cr_expect(target && !strncmp(target, "portable=0;wgmma=1;sm_count=132;", 32), "%s", target ? target : "(none)");
    int launches = 0, predicted = 0;
    cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(m, "cases"))
    {
        const char *k = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(c, "launch"), "decode_fa2.kernel"));
        launches += k && !strcmp(k, "mma_sync_w2");
        predicted += cJSON_GetObjectItem(c, "launch_predicted") != NULL;
    }
    cr_expect_eq(launches, cJSON_GetArraySize(cJSON_GetObjectItem(m, "cases")), "every launch record survives merge");
    cr_expect_eq(predicted, 1, "the one prediction survives merge");
    cJSON_Delete(m);
}
