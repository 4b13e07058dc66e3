/* test_case_select.c — `--where` over the fields of expanded cases
 * (harness/case_select.h): numbers compare as numbers, strings as strings,
 * every condition must hold, `backend` is any backend a case runs, and a
 * bad expression names the place and what was expected.
 *
 * Run: ctest --test-dir build -R test_case_select */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "harness/case_select.h"
#include "test_case_util.h"

/* 2 dtypes x 3 windows; prefill and decode_fa2 on one-row requests */
static const char *SWEEP = "{\"name\": \"w\", \"requests\": [{\"qo_len\": 1, \"kv_len\": [40, 300]}],"
                           " \"num_qo_heads\": 4, \"num_kv_heads\": 2, \"head_dim\": 64,"
                           " \"dtype\": [\"fp16\", \"bf16\"], \"page_size\": 16, \"window_left\": [-1, 9, 100],"
                           " \"backends\": [\"prefill\", \"decode_fa2\"], \"seed\": 1}";

static int count_where(const swa_case_list *list, const char *expr)
{
    char err[1600] = "";
    swa_where *w = swa_where_parse(expr, err, sizeof err);
    cr_assert(w, "'%s' refused: %s", expr, err);
    int n = 0;
    for (int i = 0; i < list->count; i++)
        n += swa_where_matches_any(w, &list->cases[i], NULL, 0);
    swa_where_free(w);
    return n;
}

Test(where, selects_by_unswept_and_swept_fields)
{
    swa_case_list list = load_inline_case("w.json", SWEEP);
    cr_assert_eq(list.count, 12);
    cr_assert_eq(count_where(&list, "dtype=bf16"), 6);
    cr_assert_eq(count_where(&list, "dtype!=bf16"), 6);
    /* numbers as numbers: "100" > "9" although "100" < "9" as text */
    cr_assert_eq(count_where(&list, "window_left>9"), 4);
    cr_assert_eq(count_where(&list, "window_left>=9"), 8);
    cr_assert_eq(count_where(&list, "window_left<0"), 4);
    cr_assert_eq(count_where(&list, "window_left<=-1"), 4);
    /* an unswept field the ids do not carry */
    cr_assert_eq(count_where(&list, "head_dim=64"), 12);
    cr_assert_eq(count_where(&list, "num_qo_heads>4"), 0);
    /* per-request lengths, and the AND of every condition */
    cr_assert_eq(count_where(&list, "r0.kv_len>100"), 6);
    cr_assert_eq(count_where(&list, "r1.kv_len>0"), 0, "a request the case does not have matches nothing");
    cr_assert_eq(count_where(&list, "dtype=bf16, window_left >= 0 ,r0.kv_len=300"), 2);
    /* strings compare as strings */
    cr_assert_eq(count_where(&list, "dtype<fp16"), 6, "bf16 < fp16 as text");
    cr_assert_eq(count_where(&list, "causal=true"), 12);
    cr_assert_eq(count_where(&list, "causal!=true"), 0);
    swa_case_list_free(&list);
}

Test(where, backend_is_any_backend_the_case_runs)
{
    swa_case_list list = load_inline_case("w.json", SWEEP);
    cr_assert_eq(count_where(&list, "backend=decode_fa2"), 12);
    cr_assert_eq(count_where(&list, "backend=decode_aiter"), 0);
    char err[512];
    swa_where *w = swa_where_parse("backend=prefill,dtype=fp16", err, sizeof err);
    cr_assert(w, "%s", err);
    cr_assert(swa_where_names_backend(w));
    cr_assert(swa_where_backend_ok(w, "prefill"));
    cr_assert(!swa_where_backend_ok(w, "decode_fa2"));
    cr_assert(swa_where_matches(w, &list.cases[0], "prefill"));
    cr_assert(!swa_where_matches(w, &list.cases[0], "decode_fa2"));
    swa_where_free(w);
    /* a plug-in backend runs on every case: it counts as one of its backends */
    w = swa_where_parse("backend=my:flash", err, sizeof err);
    cr_assert(w, "%s", err);
    const char *extra[] = {"my:flash"};
    cr_assert(!swa_where_matches_any(w, &list.cases[0], NULL, 0));
    cr_assert(swa_where_matches_any(w, &list.cases[0], extra, 1));
    swa_where_free(w);
    swa_case_list_free(&list);
}

/* Each bad expression: the place and what was expected. */
static const struct {
    const char *expr, *expect;
} BAD[] = {
    {"dtyp=bf16", "at column 1 (dtyp=bf16): unknown field 'dtyp' (expected one of: id, file"},
    {"dtype=bf16,windowleft>0", "at column 12 (windowleft>0): unknown field 'windowleft'"},
    {"dtype==bf16", "unknown operator '=='"},
    {"dtype~bf16", "expected an operator (= != < <= > >=) after 'dtype', got '~bf16'"},
    {"head_dim", "expected an operator"},
    {"dtype=bf17", "dtype is one of fp16, bf16, fp32: got 'bf17'"},
    {"backend=prefil", "backend is one of prefill, decode_fa2"},
    {"window_left>=abc", "at column 1 (window_left>=abc): window_left is a number: expected a number"},
    {"head_dim=", "head_dim is a number"},
    {"causal<true", "causal is true or false: expected = or !="},
    {"causal=yes", "causal is true or false: expected true or false, got 'yes'"},
    {"dtype=bf16,", "at column 12 (nothing): expected FIELD OP VALUE"},
    {"", "at column 1 (nothing): expected FIELD OP VALUE"},
    {"r0.kv_lenx=3", "unknown field 'r0.kv_lenx'"},
};

Test(where, bad_expressions_name_the_place)
{
    for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++) {
        char err[1600] = "";
        swa_where *w = swa_where_parse(BAD[i].expr, err, sizeof err);
        cr_expect(!w, "'%s' was accepted", BAD[i].expr);
        swa_where_free(w);
        cr_expect(strstr(err, BAD[i].expect) != NULL, "'%s': expected \"%s\" in:\n%s", BAD[i].expr, BAD[i].expect,
                  err);
        cr_expect(strncmp(err, "--where ", 8) == 0, "'%s': the message names --where: %s", BAD[i].expr, err);
    }
}

Test(where, every_listed_field_has_a_value)
{
    swa_case_list list = load_inline_case("w.json", SWEEP);
    int n;
    const swa_case_field *fs = swa_case_fields(&n);
    cr_assert_gt(n, 20);
    for (int k = 0; k < n; k++) {
        char value[1024] = "", expr[1200], err[1600];
        int kind = swa_case_field_value(&list.cases[4], NULL, fs[k].name, value, sizeof value, NULL);
        cr_assert_eq(kind, (int)fs[k].kind, "field %s", fs[k].name);
        if (strchr(value, ',') || !value[0])
            continue; /* a value --where cannot spell (its separator), or empty text */
        /* the value printed is one the field's own condition accepts and matches */
        snprintf(expr, sizeof expr, "%s=%s", fs[k].name, value);
        swa_where *w = swa_where_parse(expr, err, sizeof err);
        cr_assert(w, "%s: %s", expr, err);
        cr_expect(swa_where_matches(w, &list.cases[4], NULL), "%s does not match the case it came from", expr);
        swa_where_free(w);
    }
    char value[64];
    cr_assert_eq(swa_case_field_value(&list.cases[4], NULL, "no_such", value, sizeof value, NULL), -1);
    swa_case_list_free(&list);
}
