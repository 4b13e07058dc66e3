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
