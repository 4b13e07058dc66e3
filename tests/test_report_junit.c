/* test_report_junit.c — junit.xml: golden file, and a real XML parser
 * (Python's xml.etree, standard library) reading it back: structure CI
 * tools rely on, counts, classnames, messages, and hostile case ids that
 * must survive escaping byte for byte; the strict Jenkins xUnit schema
 * (junit-10.xsd: which attributes each element may carry), checked by a
 * small rule table in Python always and by `xmllint --schema` with
 * tests/data/junit-strict.xsd when xmllint is installed (Debian:
 * libxml2-utils; the test says when it is not); an incomplete run is
 * marked in the file.
 *
 * Run: ctest --test-dir build -R test_report_junit --output-on-failure
 * Golden file: SWADIFF_UPDATE_GOLDEN=1 ./build/tests/test_report_junit
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
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
    "out = {'totals': {k: root.get(k) for k in ('tests', 'failures', 'errors')}, 'suites': []}\n"
    "out['totals']['skipped'] = str(sum(int(s.get('skipped')) for s in root))\n"
    "for s in root:\n"
    "    assert s.tag == 'testsuite', s.tag\n"
    "    suite = {k: s.get(k) for k in ('name', 'tests', 'failures', 'errors', 'skipped', 'timestamp')}\n"
    "    suite['cases'] = []\n"
    "    for c in s.findall('testcase'):\n"
    "        kids = [k for k in c]\n"
    "        kind = kids[0].tag if kids else 'passed'\n"
    "        case = {'classname': c.get('classname'), 'name': c.get('name'), 'kind': kind}\n"
    "        if kids:\n"
    "            case['message'] = kids[0].get('message')\n"
    "            case['body'] = kids[0].text or ''\n"
    "            for line in case['body'].split('\\n'):\n"
    "                if line.startswith('Case file: '): case['file'] = line[len('Case file: '):]\n"
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

/* ---- the strict Jenkins xUnit schema ---------------------------------------- */

/* The attribute and child rules of Jenkins' junit-10.xsd for every element
 * swadiff may write, as a table: which attributes an element may carry,
 * which it must, which children it may hold; suite times must be plain
 * decimals.  Prints each violation with its line; exit 1 when any. */
static const char STRICT[] =
    "import re, sys, xml.etree.ElementTree as ET\n"
    "OUTCOME = ({'type', 'message'}, set(), set())\n"
    "RULES = {\n"
    "  'testsuites': ({'name', 'time', 'tests', 'failures', 'errors'}, set(), {'testsuite'}),\n"
    "  'testsuite': ({'name', 'tests', 'failures', 'errors', 'group', 'time', 'skipped', 'timestamp', 'hostname',\n"
    "                 'id', 'package', 'file', 'log', 'url'}, {'name', 'tests', 'failures', 'errors'},\n"
    "                {'testsuite', 'properties', 'testcase', 'system-out', 'system-err'}),\n"
    "  'properties': (set(), set(), {'property'}),\n"
    "  'property': ({'name', 'value'}, {'name', 'value'}, set()),\n"
    "  'testcase': ({'name', 'time', 'classname', 'group'}, {'name'},\n"
    "               {'skipped', 'error', 'failure', 'rerunFailure', 'rerunError', 'flakyFailure', 'flakyError',\n"
    "                'system-out', 'system-err'}),\n"
    "  'failure': OUTCOME, 'error': OUTCOME, 'skipped': OUTCOME,\n"
    "  'system-out': (set(), set(), set()), 'system-err': (set(), set(), set()),\n"
    "}\n"
    "TIME = re.compile(r'(([0-9]{0,3},)*[0-9]{3}|[0-9]{0,3})*(\\.[0-9]*)?')\n"
    "errors = []\n"
    "def check(el, path):\n"
    "    if el.tag not in RULES:\n"
    "        errors.append('%s: element <%s> is not in the schema' % (path, el.tag)); return\n"
    "    allowed, required, children = RULES[el.tag]\n"
    "    for a in sorted(set(el.attrib) - allowed): errors.append('%s: attribute %s is not allowed' % (path, a))\n"
    "    for a in sorted(required - set(el.attrib)): errors.append('%s: attribute %s is required' % (path, a))\n"
    "    if el.tag in ('testsuite', 'testsuites') and 'time' in el.attrib and not TIME.fullmatch(el.get('time')):\n"
    "        errors.append('%s: time %r is not a decimal number' % (path, el.get('time')))\n"
    "    for i, k in enumerate(el):\n"
    "        if k.tag not in children: errors.append('%s: <%s> may not hold <%s>' % (path, el.tag, k.tag))\n"
    "        else: check(k, '%s/%s[%d]' % (path, k.tag, i))\n"
    "root = ET.parse(sys.argv[1]).getroot()\n"
    "if root.tag not in ('testsuites', 'testsuite'): errors.append('root element <%s>' % root.tag)\n"
    "check(root, root.tag)\n"
    "for e in errors[:20]: print(e)\n"
    "sys.exit(1 if errors else 0)\n";

static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

static bool have_xmllint(void)
{
    return system("xmllint --version >/dev/null 2>&1") == 0;
}

/* Checks path with the rule table and, when xmllint is there, with the XSD.
 * Returns true when both accept; out gets what they said. */
static bool strict_ok(const char *path, char *out, size_t n)
{
    char *argv[] = {"python3", "-c", (char *)STRICT, (char *)path, NULL};
    int rc = fix_run(argv, out, n);
    cr_assert(rc == 0 || rc == 1, "python3 could not run the schema rules on %s (exit %d):\n%s", path, rc, out);
    if (rc != 0)
        return false;
    if (!have_xmllint()) {
        cr_log_warn("xmllint not installed (Debian: libxml2-utils): junit.xml checked by the rule table only");
        return true;
    }
    char *xargv[] = {"xmllint", "--noout", "--schema", SWADIFF_TEST_DATA "/junit-strict.xsd", (char *)path, NULL};
    return fix_run(xargv, out, n) == 0;
}

static void write_junit_file(const swa_run_results *rr, char *path, size_t n)
{
    char dir[256];
    fix_tmpdir(dir, sizeof dir);
    snprintf(path, n, "%s/junit.xml", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    cr_assert_eq(swa_report_write_junit(rr, f), 0);
    fclose(f);
}

/* Variants of the fixture: as is, every control character in an id and a
 * message, an incomplete run, no results at all. */
ParameterizedTestParameters(report_junit, satisfies_the_strict_jenkins_schema)
{
    static int variants[] = {0, 1, 2, 3};
    return cr_make_param_array(int, variants, sizeof variants / sizeof variants[0]);
}

ParameterizedTest(int *variant, report_junit, satisfies_the_strict_jenkins_schema)
{
    static const char *const names[] = {"the fixture", "control characters", "an incomplete run", "no results"};
    swa_run_results rr;
    fix_results(&rr);
    if (*variant == 1) {
        char nasty[40];
        int k = 0;
        for (int c = 1; c < 32; c++)
            nasty[k++] = (char)c;
        nasty[k] = '\0';
        snprintf(rr.items[0].id, sizeof rr.items[0].id, "id%s]]>", nasty);
        snprintf(rr.items[5].message, sizeof rr.items[5].message, "skip%s", nasty);
    } else if (*variant == 2) {
        rr.incomplete = true;
        rr.expected = 9;
        snprintf(rr.incomplete_reason, sizeof rr.incomplete_reason, "interrupted by signal 2 <Interrupt> & \"more\"");
    }
    int keep = rr.count;
    if (*variant == 3)
        rr.count = 0;
    char path[300], out[8192];
    write_junit_file(&rr, path, sizeof path);
    rr.count = keep;
    cr_expect(strict_ok(path, out, sizeof out), "junit.xml of %s breaks the strict Jenkins schema:\n%s", names[*variant],
              out);
    swa_run_results_free(&rr);
}

/* The checks can fail: the two attributes swadiff used to write (file on
 * <testcase>, skipped on <testsuites>) are rejected. */
Test(report_junit, strict_schema_rejects_what_was_written_before)
{
    static const char *const old[] = {
        "<?xml version=\"1.0\"?>\n<testsuites name=\"s\" tests=\"1\" failures=\"0\" errors=\"0\" skipped=\"0\" "
        "time=\"1.000\">\n  <testsuite name=\"a\" tests=\"1\" failures=\"0\" errors=\"0\">\n"
        "    <testcase name=\"c\" time=\"0.1\"/>\n  </testsuite>\n</testsuites>\n",
        "<?xml version=\"1.0\"?>\n<testsuites name=\"s\" tests=\"1\" failures=\"0\" errors=\"0\" time=\"1.000\">\n"
        "  <testsuite name=\"a\" tests=\"1\" failures=\"0\" errors=\"0\">\n"
        "    <testcase name=\"c\" file=\"cases/x.json\" time=\"0.1\"/>\n  </testsuite>\n</testsuites>\n",
    };
    for (int i = 0; i < 2; i++) {
        char dir[256], path[300], out[8192];
        fix_tmpdir(dir, sizeof dir);
        snprintf(path, sizeof path, "%s/old.xml", dir);
        FILE *f = fopen(path, "w");
        fputs(old[i], f);
        fclose(f);
        cr_expect_not(strict_ok(path, out, sizeof out), "accepted:\n%s", old[i]);
        cr_expect(strstr(out, i == 0 ? "skipped" : "file") != NULL, "the rejection should name the attribute:\n%s",
                  out);
    }
}

/* An incomplete run says so in the file: every suite carries the reason
 * and the count as a property (the exit code fails the CI step; the
 * results listed are exactly those the run produced). */
Test(report_junit, incomplete_run_is_marked)
{
    swa_run_results rr;
    fix_results(&rr);
    swa_result two[2] = {rr.items[1], rr.items[5]}; /* shallow copies; rr keeps ownership */
    swa_run_results part = rr;
    part.items = two;
    part.count = part.capacity = 2;
    part.incomplete = true;
    part.expected = 6;
    snprintf(part.incomplete_reason, sizeof part.incomplete_reason, "interrupted by signal 15 <Terminated>");
    char *text = junit_text(&part);
    cr_expect_eq(count_of(text, "<property name=\"run_incomplete\" value=\"2 of 6 results: interrupted by signal 15 "
                                "&lt;Terminated&gt;\"/>"),
                 2, "each of the two suites should carry the reason:\n%s", text);
    cr_expect_eq(count_of(text, "<testcase "), 2, "only the results the run produced:\n%s", text);
    free(text);
    part.incomplete = false;
    text = junit_text(&part);
    cr_expect_eq(count_of(text, "run_incomplete"), 0, "a complete run carries no mark:\n%s", text);
    free(text);
    swa_run_results_free(&rr);
}

/* Known failures: xfailed is a skip carrying the reason, xpassed a failure
 * saying the mark is stale; the counts follow, the file stays strict. */
Test(report_junit, known_failures_are_skipped_and_xpassed_fails)
{
    swa_run_results rr;
    fix_results(&rr);
    fix_add_known_failures(&rr);
    char *text = junit_text(&rr);
    cr_expect(strstr(text, "<skipped message=\"xfailed (known failure): stale keys past the window (issue #12)\" "
                           "type=\"xfailed\">It failed as expected: "),
              "xfailed as skipped with the reason:\n%s", text);
    cr_expect(strstr(text, "<failure message=\"xpassed: marked as a known failure (fixed in 0.7.3 &lt;b&gt;&amp;&quot;"
                           "&lt;/b&gt;) but passed; remove the mark\" type=\"xpassed\">"),
              "xpassed as a failure:\n%s", text);
    /* the document's failures: 3 mismatches + 1 xpassed; prefill's suite:
     * the seed failure and the xfailed copy of it (skipped) */
    cr_expect(strstr(text, "<testsuites name=\"swadiff\" tests=\"8\" failures=\"4\" errors=\"1\""), "%s", text);
    cr_expect(strstr(text, "name=\"swadiff.prefill\" tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"2\""), "%s",
              text);
    char path[300], out[8192];
    write_junit_file(&rr, path, sizeof path);
    cr_expect(strict_ok(path, out, sizeof out), "junit.xml with known failures fails the strict rules:\n%s", out);
    free(text);
    swa_run_results_free(&rr);
}
