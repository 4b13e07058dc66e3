/* test_report_junit.c — junit.xml: golden file, and a real XML parser
 * (Python's xml.etree, standard library) reading it back: structure CI
 * tools rely on, counts, classnames, messages, and hostile case ids that
 * must survive escaping byte for byte.
 *
 * Run: ctest --test-dir build -R test_report_junit --output-on-failure
 * Golden file: SWADIFF_UPDATE_GOLDEN=1 ./build/tests/test_report_junit
 */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>

#include "tests/test_report_fixture.h"

static char *junit_text(const swa_run_results *rr)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_eq(swa_report_write_junit(rr, f), 0);
    fclose(f);
    return buf;
}

Test(report_junit, golden_file)
{
    swa_run_results rr;
    fix_results(&rr); /* fixed environment, start time and durations */
    char *text = junit_text(&rr);
    char path[1024];
    snprintf(path, sizeof path, "%s/golden/junit.xml", SWADIFF_TEST_DATA);
    if (getenv("SWADIFF_UPDATE_GOLDEN")) {
        FILE *f = fopen(path, "w");
        cr_assert_not_null(f, "%s: %s", path, strerror(errno));
        fputs(text, f);
        fclose(f);
    } else {
        char *golden = fix_read_file(path);
        cr_assert_not_null(golden, "golden file %s missing: run with SWADIFF_UPDATE_GOLDEN=1 and review", path);
        size_t i = 0, line = 1;
        while (golden[i] && golden[i] == text[i])
            line += golden[i++] == '\n';
        cr_expect(golden[i] == text[i], "junit.xml differs from %s at line %zu:\n  golden: %.100s\n  actual: %.100s", path,
                  line, golden + i, text + i);
        free(golden);
    }
    free(text);
    swa_run_results_free(&rr);
}

/* Parses the file with xml.etree and prints what CI tools read, as JSON
 * (ASCII-escaped, so no locale gets in the way). */
static const char PARSE[] =
    "import json, sys, xml.etree.ElementTree as ET\n"
    "root = ET.parse(sys.argv[1]).getroot()\n"
    "assert root.tag == 'testsuites', root.tag\n"
    "out = {'totals': {k: root.get(k) for k in ('tests', 'failures', 'errors', 'skipped')}, 'suites': []}\n"
    "for s in root:\n"
    "    assert s.tag == 'testsuite', s.tag\n"
    "    suite = {k: s.get(k) for k in ('name', 'tests', 'failures', 'errors', 'skipped', 'timestamp')}\n"
    "    suite['cases'] = []\n"
    "    for c in s.findall('testcase'):\n"
    "        kids = [k for k in c]\n"
    "        kind = kids[0].tag if kids else 'passed'\n"
    "        case = {'classname': c.get('classname'), 'name': c.get('name'), 'file': c.get('file'), 'kind': kind}\n"
    "        if kids:\n"
    "            case['message'] = kids[0].get('message')\n"
    "            case['body'] = kids[0].text or ''\n"
    "        suite['cases'].append(case)\n"
    "    out['suites'].append(suite)\n"
    "print(json.dumps(out))\n";

static cJSON *parse_with_python(const char *path)
{
    static char out[1 << 16];
    char *argv[] = {"python3", "-c", (char *)PARSE, (char *)path, NULL};
    int rc = fix_run(argv, out, sizeof out);
    cr_assert_eq(rc, 0, "python3 xml.etree could not parse %s (exit %d; python3 is required by the test suite):\n%s",
                 path, rc, out);
    cJSON *j = cJSON_Parse(out);
    cr_assert_not_null(j, "unexpected parser output: %s", out);
    return j;
}

static const cJSON *find_case(const cJSON *parsed, const char *name)
{
    const cJSON *suites = cJSON_GetObjectItem(parsed, "suites");
    for (const cJSON *s = suites->child; s; s = s->next)
        for (const cJSON *c = cJSON_GetObjectItem(s, "cases")->child; c; c = c->next)
            if (!strcmp(cJSON_GetObjectItem(c, "name")->valuestring, name))
                return c;
    return NULL;
}

Test(report_junit, parses_as_xml_with_what_ci_tools_read)
{
    swa_run_results rr;
    fix_results(&rr);
    char dir[256], path[300];
    fix_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/junit.xml", dir);
    FILE *f = fopen(path, "w");
    cr_assert_eq(swa_report_write_junit(&rr, f), 0);
    fclose(f);
    cJSON *parsed = parse_with_python(path);

    const cJSON *totals = cJSON_GetObjectItem(parsed, "totals");
    cr_expect_str_eq(cJSON_GetObjectItem(totals, "tests")->valuestring, "6");
    cr_expect_str_eq(cJSON_GetObjectItem(totals, "failures")->valuestring, "3");
    cr_expect_str_eq(cJSON_GetObjectItem(totals, "errors")->valuestring, "1");
    cr_expect_str_eq(cJSON_GetObjectItem(totals, "skipped")->valuestring, "1");

    /* one flat suite per backend, in order of first appearance, with
     * attributes that match their children */
    const cJSON *suites = cJSON_GetObjectItem(parsed, "suites");
    cr_assert_eq(cJSON_GetArraySize(suites), 3);
    const char *names[] = {"swadiff.prefill", "swadiff.decode_fa2", "swadiff.decode_aiter"};
    int i = 0;
    for (const cJSON *s = suites->child; s; s = s->next, i++) {
        cr_expect_str_eq(cJSON_GetObjectItem(s, "name")->valuestring, names[i]);
        int n[4] = {0, 0, 0, 0}, tests = 0;
        for (const cJSON *c = cJSON_GetObjectItem(s, "cases")->child; c; c = c->next, tests++) {
            const char *kind = cJSON_GetObjectItem(c, "kind")->valuestring;
            n[!strcmp(kind, "failure") ? 1 : !strcmp(kind, "error") ? 2 : !strcmp(kind, "skipped") ? 3 : 0]++;
        }
        cr_expect_eq(atoi(cJSON_GetObjectItem(s, "tests")->valuestring), tests, "suite %s", names[i]);
        cr_expect_eq(atoi(cJSON_GetObjectItem(s, "failures")->valuestring), n[1], "suite %s", names[i]);
        cr_expect_eq(atoi(cJSON_GetObjectItem(s, "errors")->valuestring), n[2], "suite %s", names[i]);
        cr_expect_eq(atoi(cJSON_GetObjectItem(s, "skipped")->valuestring), n[3], "suite %s", names[i]);
        cr_expect_str_eq(cJSON_GetObjectItem(s, "timestamp")->valuestring, "2025-11-30T09:00:24");
    }

    const cJSON *seed = find_case(parsed, "seeds/000_paged_prefill:extend=[6,8,12] [mutant=mask_compiled_out]");
    cr_assert_not_null(seed);
    cr_expect_str_eq(cJSON_GetObjectItem(seed, "classname")->valuestring, "swadiff.prefill.bf16");
    cr_expect_str_eq(cJSON_GetObjectItem(seed, "kind")->valuestring, "failure");
    cr_expect_str_eq(cJSON_GetObjectItem(seed, "message")->valuestring, "Mismatched elements: 640 / 832 (76.9%)");
    const char *body = cJSON_GetObjectItem(seed, "body")->valuestring;
    cr_expect(strstr(body, "Greatest absolute difference: ") != NULL, "body:\n%s", body);
    cr_expect(strstr(body, "Reproduce: swadiff run --backend prefill") != NULL, "body:\n%s", body);
    cr_expect(strstr(body, "Diagnosis: matches the reference with a tile-granular window") != NULL, "body:\n%s", body);

    /* the hostile id comes back exactly; the control characters of its
     * diagnosis (invalid in XML 1.0) are shown, not passed through */
    const cJSON *hostile = find_case(parsed, FIX_HOSTILE_ID);
    cr_assert_not_null(hostile, "the hostile case id did not survive escaping");
    cr_expect_str_eq(cJSON_GetObjectItem(hostile, "file")->valuestring, "cases/evil/\"quotes\"&<tags>.json");
    body = cJSON_GetObjectItem(hostile, "body")->valuestring;
    cr_expect(strstr(body, "never written \\x01 (bell\\x07) \\xFF end") != NULL, "body:\n%s", body);

    const cJSON *err = find_case(parsed, "decode/cuda_graph:batch=8");
    cr_expect_str_eq(cJSON_GetObjectItem(err, "kind")->valuestring, "error");
    cr_expect(strstr(cJSON_GetObjectItem(err, "message")->valuestring, "CUDA-graph") != NULL);
    const cJSON *skip = find_case(parsed, "models/gemma3_1b:prompt=1500");
    cr_expect_str_eq(cJSON_GetObjectItem(skip, "kind")->valuestring, "skipped");
    cr_expect_str_eq(cJSON_GetObjectItem(skip, "message")->valuestring, "no CUDA device: cudaGetDeviceCount returned 0");
    const cJSON *pass = find_case(parsed, "decode/window_sweep:window_left=31,dtype=fp16");
    cr_expect_str_eq(cJSON_GetObjectItem(pass, "kind")->valuestring, "passed");
    cr_expect_str_eq(cJSON_GetObjectItem(pass, "classname")->valuestring, "swadiff.decode_fa2.fp16");
    cJSON_Delete(parsed);
    swa_run_results_free(&rr);
}

Test(report_junit, every_control_character_stays_valid_xml)
{
    swa_run_results rr;
    fix_results(&rr);
    /* all 31 C0 controls but NUL, and DEL, in an id, a message and a body */
    char nasty[64];
    int k = 0;
    for (int c = 1; c < 32; c++)
        nasty[k++] = (char)c;
    nasty[k++] = 0x7f;
    nasty[k] = '\0';
    snprintf(rr.items[0].id, sizeof rr.items[0].id, "id%s]]>", nasty);
    snprintf(rr.items[0].message, sizeof rr.items[0].message, "msg%s", nasty);
    snprintf(rr.items[0].reproduce, sizeof rr.items[0].reproduce, "cmd%s", nasty);
    char dir[256], path[300];
    fix_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/junit.xml", dir);
    FILE *f = fopen(path, "w");
    cr_assert_eq(swa_report_write_junit(&rr, f), 0);
    fclose(f);
    cJSON *parsed = parse_with_python(path); /* asserts it parses */
    cJSON_Delete(parsed);
    swa_run_results_free(&rr);
}
