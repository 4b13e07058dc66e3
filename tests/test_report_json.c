/* test_report_json.c — report.json: golden file, JSON Schema validation,
 * round trip through the reader, merge of shard reports, reader errors,
 * recovery from a results.jsonl cut short, and the escaping helpers.
 *
 * Run: ctest --test-dir build -R test_report_json --output-on-failure
 * Golden files: SWADIFF_UPDATE_GOLDEN=1 ./build/tests/test_report_json
 * rewrites tests/data/golden/report.json (review the diff before committing).
 */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>

#include "tests/test_report_fixture.h"

/* created/duration/environment change from run to run: pin them */
static char *normalised_json(const swa_run_results *rr)
{
    cJSON *root = swa_report_json(rr);
    cr_assert_not_null(root);
    cJSON_ReplaceItemInObject(root, "created", cJSON_CreateString("<created>"));
    cJSON_ReplaceItemInObject(root, "created_unix", cJSON_CreateNumber(0));
    cJSON_ReplaceItemInObject(root, "duration", cJSON_CreateNumber(0));
    cJSON *env = cJSON_GetObjectItem(root, "environment");
    for (cJSON *it = env ? env->child : NULL; it; it = it->next)
        if (cJSON_IsString(it))
            cJSON_SetValuestring(it, "<environment>");
    cJSON *devices = cJSON_CreateArray();
    cJSON_AddItemToArray(devices, cJSON_CreateString("<environment>"));
    cJSON_ReplaceItemInObject(env, "devices", devices);
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    return text;
}

static void check_golden(const char *name, const char *actual)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/golden/%s", SWADIFF_TEST_DATA, name);
    if (getenv("SWADIFF_UPDATE_GOLDEN")) {
        FILE *f = fopen(path, "w");
        cr_assert_not_null(f, "cannot write %s: %s", path, strerror(errno));
        fputs(actual, f);
        fclose(f);
        fprintf(stderr, "updated %s\n", path);
        return;
    }
    char *expected = fix_read_file(path);
    cr_assert_not_null(expected, "golden file %s missing: run with SWADIFF_UPDATE_GOLDEN=1 and review", path);
    if (strcmp(expected, actual) != 0) {
        /* point at the first difference so the failure is readable */
        size_t i = 0, line = 1;
        while (expected[i] && expected[i] == actual[i]) {
            line += expected[i] == '\n';
            i++;
        }
        cr_assert_fail("%s differs from the golden file at line %zu:\n  golden: %.80s\n  actual: %.80s\n"
                       "(if the change is intended: SWADIFF_UPDATE_GOLDEN=1, then review the diff)",
                       path, line, expected + i, actual + i);
    }
    free(expected);
}

Test(report_json, golden_file)
{
    swa_run_results rr;
    fix_results(&rr);
    char *text = normalised_json(&rr);
    char *with_newline = malloc(strlen(text) + 2);
    sprintf(with_newline, "%s\n", text);
    check_golden("report.json", with_newline);
    free(with_newline);
    cJSON_free(text);
    swa_run_results_free(&rr);
}

Test(report_json, top_level_and_case_fields)
{
    swa_run_results rr;
    fix_results(&rr);
    cJSON *root = swa_report_json(&rr);
    cr_assert_str_eq(cJSON_GetObjectItem(root, "report_version")->valuestring, SWA_REPORT_VERSION);
    cr_assert_str_eq(cJSON_GetObjectItem(root, "created")->valuestring, "2025-11-30T09:00:24Z");
    cr_assert_eq(cJSON_GetObjectItem(root, "exitcode")->valueint, SWA_EXIT_MISMATCH);
    cJSON *summary = cJSON_GetObjectItem(root, "summary");
    cr_expect_eq(cJSON_GetObjectItem(summary, "total")->valueint, 6);
    cr_expect_eq(cJSON_GetObjectItem(summary, "failed")->valueint, 3);
    cr_expect_eq(cJSON_GetObjectItem(summary, "error")->valueint, 1);
    cr_expect_eq(cJSON_GetObjectItem(summary, "skipped")->valueint, 1);
    cr_expect_eq(cJSON_GetObjectItem(summary, "passed")->valueint, 1);
    cJSON *seed = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "cases"), 0);
    cJSON *m = cJSON_GetObjectItem(seed, "mismatch");
    cr_expect_eq(cJSON_GetObjectItem(m, "count")->valueint, 640);
    cr_expect_eq(cJSON_GetObjectItem(m, "total")->valueint, 832);
    cJSON *idx = cJSON_GetObjectItem(cJSON_GetObjectItem(m, "max_abs_diff"), "index");
    cr_expect_eq(cJSON_GetObjectItem(idx, "request")->valueint, 2);
    cJSON *matrix = cJSON_GetObjectItem(m, "row_head_ratio");
    cr_expect_eq(cJSON_GetObjectItem(matrix, "rows")->valueint, 26);
    cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(matrix, "values")), 26);
    /* the unwritten case: NaN actuals are spelled out, not null */
    cJSON *hostile = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "cases"), 2);
    cJSON *w0 = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(hostile, "mismatch"), "worst"), 0);
    cr_expect_str_eq(cJSON_GetObjectItem(w0, "actual")->valuestring, "NaN");
    cr_expect_str_eq(cJSON_GetObjectItem(hostile, "id")->valuestring, FIX_HOSTILE_ID);
    cJSON_Delete(root);
    swa_run_results_free(&rr);
}

static void write_report(const swa_run_results *rr, char *dir, size_t n)
{
    fix_tmpdir(dir, n);
    swa_error err = {0};
    cr_assert_eq(swa_report_write_all(rr, dir, &err), SWA_OK, "write_all: %s", err.message);
}

/* The fixture's results, written to a fresh folder: path gets its report.json. */
static void write_fixture_report(swa_run_results *rr, char *path, size_t n)
{
    char dir[256];
    fix_results(rr);
    write_report(rr, dir, sizeof dir);
    snprintf(path, n, "%s/report.json", dir);
}

Test(report_json, validates_against_published_schema)
{
    swa_run_results rr;
    char report[300], schema[1024], out[8192], dir[256];
    fix_results(&rr);
    fix_add_known_failures(&rr); /* xfailed and xpassed cases, and their summary counts */
    write_report(&rr, dir, sizeof dir);
    snprintf(report, sizeof report, "%s/report.json", dir);
    snprintf(schema, sizeof schema, "%s/cases/schema/report.schema.json", SWADIFF_SOURCE_DIR);
    static const char prog[] =
        "import json, sys\n"
        "try:\n"
        "    import jsonschema\n"
        "except ImportError:\n"
        "    print('python3 has no jsonschema module: install python3-jsonschema (Debian) to run this test'); sys.exit(3)\n"
        "schema = json.load(open(sys.argv[1]))\n"
        "jsonschema.Draft202012Validator.check_schema(schema)\n"
        "v = jsonschema.Draft202012Validator(schema)\n"
        "errs = sorted(v.iter_errors(json.load(open(sys.argv[2]))), key=lambda e: list(e.path))\n"
        "for e in errs[:10]: print('/'.join(map(str, e.path)), ':', e.message)\n"
        "sys.exit(1 if errs else 0)\n";
    /* the first python3 with jsonschema: PATH's, else Debian's */
    const char *python = NULL;
    static const char *const candidates[] = {"python3", "/usr/bin/python3"};
    for (size_t i = 0; i < 2 && !python; i++) {
        char *probe[] = {(char *)candidates[i], "-c", "import jsonschema", NULL};
        if (fix_run(probe, out, sizeof out) == 0)
            python = candidates[i];
    }
    cr_assert_not_null(python, "no python3 with the jsonschema module: install python3-jsonschema (Debian), "
                               "ci/setup-deps.sh should list it");
    char *argv[] = {(char *)python, "-c", (char *)prog, schema, report, NULL};
    int rc = fix_run(argv, out, sizeof out);
    cr_assert_eq(rc, 0, "report.json does not validate against %s (exit %d):\n%s", schema, rc, out);

    /* and the schema is not vacuous: a broken report must fail it */
    cJSON *root = swa_report_json(&rr);
    cJSON_ReplaceItemInObject(cJSON_GetArrayItem(cJSON_GetObjectItem(root, "cases"), 0), "outcome",
                              cJSON_CreateString("sort of"));
    char *text = cJSON_Print(root);
    FILE *f = fopen(report, "w");
    fputs(text, f);
    fclose(f);
    cJSON_free(text);
    cJSON_Delete(root);
    rc = fix_run(argv, out, sizeof out);
    cr_assert_eq(rc, 1, "a report with outcome \"sort of\" should fail the schema (exit %d):\n%s", rc, out);
    swa_run_results_free(&rr);
}

Test(report_json, round_trip_through_reader)
{
    swa_run_results rr;
    char path[300];
    write_fixture_report(&rr, path, sizeof path);
    swa_run_results back = {0};
    swa_error err = {0};
    cr_assert_eq(swa_report_read(path, &back, &err), SWA_OK, "read: %s", err.message);
    cr_assert_eq(back.count, rr.count);
    cr_expect_float_eq(back.started, rr.started, 1e-6);
    cr_expect_eq(back.exitcode, rr.exitcode);
    cr_expect_str_eq(back.env.devices, rr.env.devices);
    for (int i = 0; i < rr.count; i++) {
        const swa_result *a = &rr.items[i], *b = &back.items[i];
        cr_expect_str_eq(b->id, a->id, "case %d", i);
        cr_expect_eq(b->outcome, a->outcome, "case %d", i);
        cr_expect_str_eq(b->message, a->message, "case %d", i);
        char *clean = swa_utf8_sanitize(a->diagnosis); /* JSON carries UTF-8 only */
        cr_expect_str_eq(b->diagnosis, clean, "case %d", i);
        free(clean);
        cr_expect_str_eq(b->warnings, a->warnings, "case %d", i);
        char *kernel = swa_utf8_sanitize(a->kernel); /* report 1.3: which kernel computed it */
        cr_expect_str_eq(b->kernel, kernel, "case %d", i);
        free(kernel);
        cr_expect_eq(b->has_compare, a->has_compare, "case %d", i);
        cr_expect_eq(b->cmp.mismatched, a->cmp.mismatched, "case %d", i);
        cr_expect_eq(b->cmp.unwritten, a->cmp.unwritten, "case %d", i);
        cr_expect_eq(b->cmp.worst_count, a->cmp.worst_count, "case %d", i);
        cr_expect_eq(b->cmp.lse_unwritten, a->cmp.lse_unwritten, "case %d", i);
        /* the matrix is kept for failures (the heatmap), dropped otherwise */
        cr_expect_eq(b->cmp.row_head_ratio != NULL, a->has_compare && a->outcome == SWA_OUTCOME_FAILED, "case %d", i);
        if (!b->cmp.row_head_ratio)
            continue;
        cr_expect_eq(b->cmp.rows, a->cmp.rows, "case %d", i);
        for (int k = 0; a->cmp.row_head_ratio && k < a->cmp.rows * a->cmp.heads; k++) {
            float x = a->cmp.row_head_ratio[k], y = b->cmp.row_head_ratio[k];
            cr_expect(isinf(x) ? isinf(y) : fabsf(x - y) <= 5e-3f * fabsf(x), "case %d cell %d: %g vs %g", i, k, x, y);
        }
    }
    /* what we read writes the same JSON again: nothing is lost */
    char *first = normalised_json(&rr), *second = normalised_json(&back);
    cr_expect_str_eq(second, first);
    cJSON_free(first);
    cJSON_free(second);
    swa_run_results_free(&back);
    swa_run_results_free(&rr);
}

Test(report_json, large_matrix_is_binned)
{
    swa_result r;
    memset(&r, 0, sizeof r);
    r.has_compare = true;
    r.outcome = SWA_OUTCOME_FAILED;
    cr_assert_eq(swa_compare_result_alloc_matrix(&r.cmp, 1500, 4), 0);
    for (int row = 0; row < 1500; row++)
        for (int h = 0; h < 4; h++)
            r.cmp.row_head_ratio[row * 4 + h] = row == 1234 && h == 2 ? 55.0f : 0.1f;
    cJSON *o = swa_report_case_json(&r);
    cJSON *m = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "mismatch"), "row_head_ratio");
    int rows = cJSON_GetObjectItem(m, "rows")->valueint, bin = cJSON_GetObjectItem(m, "row_bin")->valueint;
    cr_expect_leq(rows, SWA_REPORT_MAX_MATRIX_ROWS, "rows %d", rows);
    cr_expect_eq(bin, 6, "1500 rows in bins of %d", bin);
    /* the bin holding row 1234 keeps its maximum */
    cJSON *cell = cJSON_GetArrayItem(cJSON_GetArrayItem(cJSON_GetObjectItem(m, "values"), 1234 / bin), 2);
    cr_expect_float_eq(cell->valuedouble, 55.0, 1e-9);
    cJSON_Delete(o);
    swa_compare_result_free(&r.cmp);
}

Test(report_json, merge_combines_shards)
{
    swa_run_results rr;
    fix_results(&rr);
    /* shard A: the first three results; shard B: the rest, started later */
    swa_run_results a = rr, b = rr;
    a.count = 3;
    b.items = rr.items + 3;
    b.count = rr.count - 3;
    b.started = rr.started + 100;
    snprintf(b.env.host, sizeof b.env.host, "ci-runner-8");
    fix_selection(&a.selection, 1, 2);
    fix_selection(&b.selection, 2, 2);
    char dir_a[256], dir_b[256], out_dir[256], pa[300], pb[300], merged[300];
    write_report(&a, dir_a, sizeof dir_a);
    write_report(&b, dir_b, sizeof dir_b);
    fix_tmpdir(out_dir, sizeof out_dir);
    snprintf(pa, sizeof pa, "%s/report.json", dir_a);
    snprintf(pb, sizeof pb, "%s/report.json", dir_b);
    char *argv[] = {"merge", out_dir, pa, pb, NULL};
    fflush(stdout);
    int rc = swa_merge_main(4, argv);
    cr_expect_eq(rc, SWA_EXIT_MISMATCH, "merged exit code %d", rc);
    snprintf(merged, sizeof merged, "%s/report.json", out_dir);
    swa_run_results m = {0};
    swa_error err = {0};
    cr_assert_eq(swa_report_read(merged, &m, &err), SWA_OK, "%s", err.message);
    cr_expect_eq(m.count, 6);
    int passed, failed, error, skipped;
    swa_run_results_summary(&m, &passed, &failed, &error, &skipped);
    cr_expect(passed == 1 && failed == 3 && error == 1 && skipped == 1, "%d/%d/%d/%d", passed, failed, error, skipped);
    cr_expect_float_eq(m.started, rr.started, 1e-6);
    cr_expect_float_eq(m.duration, 100 + rr.duration, 1e-6, "duration %g", m.duration);
    cr_expect_str_eq(m.env.host, "ci-runner-7,ci-runner-8");
    cr_expect_not_null(m.items[0].cmp.row_head_ratio, "heatmap data survives the merge");
    /* the complete set is the unsharded run of the same selection */
    cr_expect(m.selection.shard_index == 1 && m.selection.shard_count == 1, "merged shard %d/%d",
              m.selection.shard_index, m.selection.shard_count);
    cr_expect_str_eq(m.selection.case_files_digest, "0123456789abcdef");
    cr_expect_str_eq(m.selection.case_ids_digest, "fedcba9876543210");
    cr_expect_eq(m.selection.cases_selected, 6);
    cr_expect_not(m.incomplete, "%s", m.incomplete_reason);
    for (const char *name = "junit.xml"; name; name = strcmp(name, "junit.xml") ? NULL : "report.html") {
        char path[300];
        snprintf(path, sizeof path, "%s/%s", out_dir, name);
        cr_expect_eq(access(path, R_OK), 0, "%s missing", path);
    }
    swa_run_results_free(&m);
    swa_run_results_free(&rr);

    /* an unreadable input is a usage error naming the file */
    char missing[300];
    snprintf(missing, sizeof missing, "%s/nope.json", out_dir);
    char *argv2[] = {"merge", out_dir, missing, NULL};
    cr_expect_eq(swa_merge_main(3, argv2), SWA_EXIT_USAGE);
}

Test(report_json, reader_errors_name_the_place)
{
    char dir[256], path[300];
    fix_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/bad.json", dir);
    swa_run_results rr = {0};
    swa_error err = {0};

    FILE *f = fopen(path, "w");
    fputs("{\n  \"report_version\": \"1.0\",\n  \"cases\": [ oops ]\n}\n", f);
    fclose(f);
    cr_expect_neq(swa_report_read(path, &rr, &err), SWA_OK);
    cr_expect(strstr(err.message, "bad.json:3:") != NULL, "syntax error should give line 3: %s", err.message);

    f = fopen(path, "w");
    fputs("{\"report_version\": \"1.0\", \"environment\": {\"harness_version\": \"x\", \"git_revision\": \"x\", "
          "\"devices\": [], \"toolkit\": \"\", \"host\": \"\", \"command_line\": \"\"}, \"cases\": [{\"file\": \"f\"}]}",
          f);
    fclose(f);
    swa_run_results_free(&rr);
    cr_expect_neq(swa_report_read(path, &rr, &err), SWA_OK);
    cr_expect(strstr(err.message, "cases[0]: missing \"id\"") != NULL, "%s", err.message);

    f = fopen(path, "w");
    fputs("{\"report_version\": \"2.0\", \"cases\": []}", f);
    fclose(f);
    swa_run_results_free(&rr);
    cr_expect_neq(swa_report_read(path, &rr, &err), SWA_OK);
    cr_expect(strstr(err.message, "report_version") != NULL, "%s", err.message);
    swa_run_results_free(&rr);
}

/* "kernel" (report 1.3) is optional (a 1.2 report has none and reads as
 * ""), a string or null; anything else is an error naming the case and
 * the key */
Test(report_json, kernel_is_optional_and_checked)
{
    swa_run_results rr;
    char path[300];
    write_fixture_report(&rr, path, sizeof path);
    cJSON *j = fix_load_json(path);
    cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "cases"), 0);
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(c0, "kernel")), rr.items[0].kernel);

    swa_run_results back = {0};
    swa_error err = {0};
    cJSON_DeleteItemFromObject(c0, "kernel"); /* an older report */
    fix_save_json(path, j);
    cr_assert_eq(swa_report_read(path, &back, &err), SWA_OK, "%s", err.message);
    cr_expect_str_eq(back.items[0].kernel, "");
    swa_run_results_free(&back);

    cJSON_AddNumberToObject(c0, "kernel", 5);
    fix_save_json(path, j);
    cr_expect_neq(swa_report_read(path, &back, &err), SWA_OK);
    cr_expect(strstr(err.message, "cases[0]") && strstr(err.message, "\"kernel\"") &&
                  strstr(err.message, "a string or null"),
              "the error should name the case, the key and what is expected: %s", err.message);
    swa_run_results_free(&back);
    cJSON_Delete(j);
    swa_run_results_free(&rr);
}

Test(report_json, jsonl_cut_short_keeps_complete_lines)
{
    swa_run_results rr;
    fix_results(&rr);
    char dir[256], path[300];
    fix_tmpdir(dir, sizeof dir);
    swa_error err = {0};
    swa_report *rep = swa_report_open(dir, &rr.env, &err);
    cr_assert_not_null(rep, "%s", err.message);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(swa_report_add(rep, &rr.items[i], &err), SWA_OK, "%s", err.message);
    cr_assert_eq(swa_report_close(rep, 1, &err), SWA_OK, "%s", err.message);
    /* a killed writer: half a line at the end */
    snprintf(path, sizeof path, "%s/results.jsonl", dir);
    FILE *f = fopen(path, "a");
    fputs("{\"id\": \"half", f);
    fclose(f);
    swa_run_results back = {0};
    cr_assert_eq(swa_report_read(path, &back, &err), SWA_OK, "%s", err.message);
    cr_expect_eq(back.count, 3);
    cr_expect_str_eq(back.items[2].id, FIX_HOSTILE_ID);
    cr_expect_eq(back.exitcode, SWA_EXIT_MISMATCH);
    swa_run_results_free(&back);
    swa_run_results_free(&rr);
}

Test(report_json, escaping_helpers)
{
    char *h = swa_html_escape(FIX_HOSTILE_ID "'\x01");
    cr_expect_str_eq(h, "&lt;script&gt;alert(1)&lt;/script&gt;&amp;]]&gt;&quot;&#39;\xef\xbf\xbd");
    free(h);
    char *x = swa_xml_escape("a\x01<b>\tc\xff\xc3\xa9", false);
    cr_expect_str_eq(x, "a\\x01&lt;b&gt;\tc\\xFF\xc3\xa9");
    free(x);
    x = swa_xml_escape("line1\nline2\t\"q\"", true);
    cr_expect_str_eq(x, "line1&#10;line2&#9;&quot;q&quot;");
    free(x);
    char *m = swa_markdown_cell("a|b`c\nd");
    cr_expect_str_eq(m, "a\\|b\\`c d");
    free(m);
}

Test(report_json, order_puts_failures_first_worst_first)
{
    swa_run_results rr;
    fix_results(&rr);
    int idx[6];
    swa_report_order(&rr, idx);
    /* failed by mismatch ratio: seed (76.9%), hostile (50%), LSE-only (0%) */
    cr_expect_eq(idx[0], 0);
    cr_expect_eq(idx[1], 2);
    cr_expect_eq(idx[2], 3);
    cr_expect_eq(rr.items[idx[3]].outcome, SWA_OUTCOME_ERROR);
    cr_expect_eq(rr.items[idx[4]].outcome, SWA_OUTCOME_SKIPPED);
    cr_expect_eq(rr.items[idx[5]].outcome, SWA_OUTCOME_PASSED);
    swa_run_results_free(&rr);
}

/* Known failures: the summary counts xfailed and xpassed apart (always
 * present, and the total still adds up), each marked case says why and what
 * it was, the reader keeps both, and merge carries them with the exit code
 * an xpassed result gives (1). */
Test(report_json, known_failures_counted_read_and_merged)
{
    swa_run_results rr;
    fix_results(&rr);
    cJSON *plain = swa_report_json(&rr);
    cJSON *ps = cJSON_GetObjectItem(plain, "summary");
    cr_expect(cJSON_IsNumber(cJSON_GetObjectItem(ps, "xfailed")) && cJSON_GetObjectItem(ps, "xfailed")->valueint == 0,
              "summary.xfailed is always there");
    cr_expect(cJSON_IsNumber(cJSON_GetObjectItem(ps, "xpassed")) && cJSON_GetObjectItem(ps, "xpassed")->valueint == 0);
    cJSON_Delete(plain);
    fix_add_known_failures(&rr);
    cJSON *root = swa_report_json(&rr);
    cJSON *s = cJSON_GetObjectItem(root, "summary");
    int sum = 0;
    const char *keys[] = {"passed", "failed", "error", "skipped", "xfailed", "xpassed"};
    for (int k = 0; k < 6; k++)
        sum += cJSON_GetObjectItem(s, keys[k])->valueint;
    cr_expect_eq(cJSON_GetObjectItem(s, "total")->valueint, 8);
    cr_expect_eq(sum, 8, "the six outcomes add up to the total");
    cr_expect_eq(cJSON_GetObjectItem(s, "xfailed")->valueint, 1);
    cr_expect_eq(cJSON_GetObjectItem(s, "xpassed")->valueint, 1);
    cr_expect_eq(cJSON_GetObjectItem(s, "failed")->valueint, 3, "an xfailed result is not a failure");
    cJSON *cases = cJSON_GetObjectItem(root, "cases");
    cJSON *x = cJSON_GetArrayItem(cases, 6), *p = cJSON_GetArrayItem(cases, 7);
    cr_expect_str_eq(cJSON_GetObjectItem(x, "outcome")->valuestring, "xfailed");
    cr_expect_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(x, "xfail"), "reason")->valuestring,
                     "stale keys past the window (issue #12)");
    cr_expect_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(x, "xfail"), "outcome")->valuestring, "failed");
    cr_expect_str_eq(cJSON_GetObjectItem(p, "outcome")->valuestring, "xpassed");
    cr_expect_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(p, "xfail"), "outcome")->valuestring, "passed");
    cr_expect(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetArrayItem(cases, 0), "xfail")), "unmarked: null");
    cJSON_Delete(root);

    /* shards: A holds the xfailed one, B the xpassed one */
    swa_run_results a = rr, b = rr;
    a.count = 7;
    b.items = rr.items + 7;
    b.count = 1;
    fix_selection(&a.selection, 1, 2);
    fix_selection(&b.selection, 2, 2);
    a.selection.cases_selected = b.selection.cases_selected = 8;
    char dir_a[256], dir_b[256], out_dir[256], pa[300], pb[300], merged[300];
    write_report(&a, dir_a, sizeof dir_a);
    write_report(&b, dir_b, sizeof dir_b);
    /* the reader keeps the outcome and the mark */
    swa_run_results back = {0};
    swa_error err = {0};
    snprintf(pb, sizeof pb, "%s/report.json", dir_b);
    cr_assert_eq(swa_report_read(pb, &back, &err), SWA_OK, "%s", err.message);
    cr_expect_eq(back.items[0].outcome, SWA_OUTCOME_XPASSED);
    cr_expect_str_eq(back.items[0].xfail, "fixed in 0.7.3 <b>&\"</b>");
    cr_expect_eq(back.items[0].xfail_was, SWA_OUTCOME_PASSED);
    cr_expect_eq(back.exitcode, SWA_EXIT_MISMATCH, "xpassed alone: exit 1");
    swa_run_results_free(&back);
    fix_tmpdir(out_dir, sizeof out_dir);
    snprintf(pa, sizeof pa, "%s/report.json", dir_a);
    char *argv[] = {"merge", out_dir, pa, pb, NULL};
    fflush(stdout);
    int rc = swa_merge_main(4, argv);
    cr_expect_eq(rc, SWA_EXIT_MISMATCH);
    snprintf(merged, sizeof merged, "%s/report.json", out_dir);
    char *merged_text = fix_read_file(merged);
    cr_assert_not_null(merged_text);
    cJSON *m = cJSON_Parse(merged_text);
    free(merged_text);
    cr_assert_not_null(m);
    cJSON *ms = cJSON_GetObjectItem(m, "summary");
    cr_expect_eq(cJSON_GetObjectItem(ms, "xfailed")->valueint, 1, "merge carries xfailed");
    cr_expect_eq(cJSON_GetObjectItem(ms, "xpassed")->valueint, 1, "merge carries xpassed");
    cr_expect_eq(cJSON_GetObjectItem(ms, "total")->valueint, 8);
    cr_expect_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(m, "cases"), 6),
                                                             "xfail"), "reason")->valuestring,
                     "stale keys past the window (issue #12)");
    cJSON_Delete(m);
    swa_run_results_free(&rr);
}

Test(report_json, xfail_mark_must_fit_the_outcome)
{
    char dir[256], path[300];
    fix_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/report.json", dir);
    swa_run_results rr;
    fix_results(&rr);
    fix_add_known_failures(&rr);
    cJSON *root = swa_report_json(&rr);
    /* an xpassed result that says it failed */
    cJSON *p = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "cases"), 7);
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(p, "xfail"), "outcome", cJSON_CreateString("failed"));
    char *text = cJSON_Print(root);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    cJSON_free(text);
    swa_run_results back = {0};
    swa_error err = {0};
    cr_expect_neq(swa_report_read(path, &back, &err), SWA_OK);
    cr_expect(strstr(err.message, "cases[7]") && strstr(err.message, "xfail"), "%s", err.message);
    swa_run_results_free(&back);
    cJSON_Delete(root);
    swa_run_results_free(&rr);
}
