/* test_hostile_cases.c — case files made to break the loader (issue 32):
 * a file of 100,000 cases (the loader was quadratic in the cases of a file:
 * 40,000 tiny cases took minutes), bytes that are not UTF-8, lone
 * surrogates.  The promise is the one of every case-file error:
 * "file:line:column: /pointer: what was expected", exact in a large file too.
 *
 * Runs the built binary (SWADIFF_BINARY). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <string.h>

#include "test_util.h"

TestSuite(hostile_cases, .init = make_tmp, .fini = remove_tmp, .timeout = 240);

#define MANY 100000

/* One case per line from line 3 on: case i is line i + 3, its "name"
 * value at column 12.  bad_at: that case's kv_len is a string (-1: none);
 * dup_of: the last case repeats this case's name (-1: none). */
static void write_many(const char *path, int bad_at, int dup_of)
{
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fprintf(f, "{\"defaults\": {\"num_qo_heads\": 1, \"num_kv_heads\": 1, \"head_dim\": 64, \"dtype\": \"fp16\", "
               "\"page_size\": 16, \"window_left\": -1, \"backends\": [\"decode_fa2\"], \"seed\": 1},\n\"cases\": [\n");
    for (int i = 0; i < MANY; i++) {
        char name[32];
        snprintf(name, sizeof name, "c%d", i == MANY - 1 && dup_of >= 0 ? dup_of : i);
        fprintf(f, "  {\"name\": \"%s\", \"requests\": [{\"qo_len\": 1, \"kv_len\": %s}]}%s\n", name,
                i == bad_at ? "\"16\"" : "16", i == MANY - 1 ? "" : ",");
    }
    fprintf(f, "]}\n");
    fclose(f);
}

Test(hostile_cases, a_file_of_100000_cases_validates)
{
    char path[400];
    snprintf(path, sizeof path, "%s/many.json", tmpdir);
    write_many(path, -1, -1);
    int rc = sh("%s validate %s", SWADIFF_BINARY, path);
    cr_assert_eq(rc, 0, "%.2000s", out);
    cr_assert(strstr(out, "ok, 100000 cases"), "%.2000s", out);
}

/* The duplicate check of case names runs over a hash set now: it must
 * still find a repeat 99,996 cases apart, and both places are exact. */
Test(hostile_cases, a_repeated_name_far_down_a_large_file_is_located)
{
    char path[400], want[600];
    snprintf(path, sizeof path, "%s/many.json", tmpdir);
    write_many(path, -1, 3);
    int rc = sh("%s validate %s", SWADIFF_BINARY, path);
    cr_assert_eq(rc, 2, "exit %d: %.2000s", rc, out);
    snprintf(want, sizeof want, "%s:%d:12: /cases/%d/name: expected a unique case name, got \"c3\" again (first at "
             "line 6, column 12)", path, MANY + 2, MANY - 1);
    cr_assert(strstr(out, want), "expected <%s> in:\n%.2000s", want, out);
}

/* Line and column come from a line-start table now: check one near the
 * end of the file, past 100,000 lines. */
Test(hostile_cases, an_error_near_the_end_of_a_large_file_is_located)
{
    char path[400], want[600];
    snprintf(path, sizeof path, "%s/many.json", tmpdir);
    write_many(path, MANY - 2, -1);
    int rc = sh("%s validate %s", SWADIFF_BINARY, path);
    cr_assert_eq(rc, 2, "exit %d: %.2000s", rc, out);
    /* `  {"name": "c99998", "requests": [{"qo_len": 1, "kv_len": ` is 58 characters */
    snprintf(want, sizeof want, "%s:%d:59: /cases/%d/requests/0/kv_len:", path, MANY + 1, MANY - 2);
    cr_assert(strstr(out, want), "expected <%s> in:\n%.2000s", want, out);
}

/* A case around one description, written as raw bytes. */
static void write_described(const char *path, const char *description)
{
    FILE *f = fopen(path, "wb");
    cr_assert(f);
    fprintf(f, "{\"name\": \"d\",\n \"description\": \"%s\",\n \"requests\": [{\"qo_len\": 1, \"kv_len\": 16}], "
               "\"num_qo_heads\": 1, \"num_kv_heads\": 1, \"head_dim\": 64, \"dtype\": \"fp16\", \"page_size\": 16, "
               "\"window_left\": -1, \"backends\": [\"decode_fa2\"], \"seed\": 1}\n", description);
    fclose(f);
}

typedef struct text_case {
    char description[32]; /* raw bytes of the description */
    char want[160];       /* in the error, after "d.json:2:COLUMN: " */
} text_case;

ParameterizedTestParameters(hostile_cases, text_that_is_not_unicode_is_refused_at_its_key)
{
    static text_case cases[] = {
        /* accepted: the loader took any byte, and reports carried them */
        {"bad \xff\xfe here", "2:22: /description: invalid UTF-8 in a string (byte 0xff)"},
        {"cut \xe2\x82", "2:22: /description: invalid UTF-8 in a string (byte 0xe2)"},
        {"overlong \xc0\xaf", "2:27: /description: invalid UTF-8 in a string (byte 0xc0)"},
        /* refused by cJSON as "unexpected '\\'" at / */
        {"\\ud800", "2:18: /description: invalid JSON: the escape \\ud800 is the first half of a UTF-16 surrogate"},
        {"x\\ud800\\u0041", "2:19: /description: invalid JSON: the escape \\ud800 is the first half"},
        {"\\udc00", "2:18: /description: invalid JSON: the escape \\udc00 is the second half"},
    };
    return cr_make_param_array(text_case, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(text_case *t, hostile_cases, text_that_is_not_unicode_is_refused_at_its_key)
{
    char path[400], want[600];
    snprintf(path, sizeof path, "%s/d.json", tmpdir);
    write_described(path, t->description);
    int rc = sh("%s validate %s", SWADIFF_BINARY, path);
    cr_expect_eq(rc, 2, "%s: %s", t->want, out);
    snprintf(want, sizeof want, "%s:%s", path, t->want);
    cr_expect(strstr(out, want), "expected <%s> in:\n%s", want, out);
}

Test(hostile_cases, unicode_text_is_taken)
{
    char path[400];
    snprintf(path, sizeof path, "%s/d.json", tmpdir);
    write_described(path, "caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80 \\ud83d\\ude00 \\u00e9");
    int rc = sh("%s validate %s", SWADIFF_BINARY, path);
    cr_expect_eq(rc, 0, "%s", out);
}

Test(hostile_cases, nesting_past_the_limit_is_said_with_a_short_pointer)
{
    /* 100,000 nested lists: the pointer of the place (/cases/0/0/...) was
     * cut at 255 bytes, mid-token, with nothing saying so */
    char path[400];
    snprintf(path, sizeof path, "%s/deep.json", tmpdir);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs("{\"cases\": [", f);
    for (int i = 0; i < 100000; i++)
        fputc('[', f);
    for (int i = 0; i < 100000; i++)
        fputc(']', f);
    fputs("]}\n", f);
    fclose(f);
    int rc = sh("%s validate %s", SWADIFF_BINARY, path);
    cr_expect_eq(rc, 2, "%.2000s", out);
    char want[600];
    snprintf(want, sizeof want, "%s:1:1011: /cases/0/0/", path);
    cr_expect(strstr(out, want), "the place: %.2000s", out);
    cr_expect(strstr(out, "/0/...: invalid JSON: lists and objects nested deeper than 1000 levels"), "%.2000s", out);
    cr_expect(strlen(out) < 400, "a short message (%zu bytes): %.2000s", strlen(out), out);
}
