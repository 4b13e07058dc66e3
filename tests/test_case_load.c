/* test_case_load.c — strict case-file loading: every malformed file in
 * tests/data/cases_bad/ must fail with the exact line, column, JSON pointer
 * and message, leave the case list untouched and never crash.
 *
 * Run: ctest --test-dir build -R test_case_load --output-on-failure
 * The expected positions were checked by hand against the files (the column
 * counts bytes from 1; a tab or a multi-byte character counts as its bytes). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <string.h>

#include "harness/case_load.h"

/* Arrays, not pointers: Criterion may run each parameter in a freshly
 * executed process where pointers into the parent's data mean nothing. */
struct bad_file {
    char file[64];
    int line, column;
    char path[64];
    char message[256];
};

ParameterizedTestParameters(case_load, malformed_file_is_located)
{
    static struct bad_file params[] = {
        {"bad_name.json", 2, 11, "/name",
         "expected a name of 1 to 100 letters, digits, '.', '_' or '-' (it becomes part of a shell-safe case id), got \"has space\""},
        {"container_stray_key.json", 3, 3, "/window_left",
         "unknown key \"window_left\" in a file with \"cases\" (case keys go in \"defaults\" or in each case); expected one of: description, defaults, cases"},
        {"defaults_bad_value.json", 7, 18, "/defaults/page_size",
         "expected an integer in [1, 65536], got 0"},
        {"decode_with_extend.json", 3, 27, "/requests/0/qo_len",
         "expected qo_len 1 (backends decode_aiter decode one query row per request), got 6"},
        {"dtype_unknown.json", 5, 21, "/dtype/1",
         "expected one of \"fp16\", \"bf16\", \"fp32\", got \"fp8\""},
        {"duplicate_id.json", 6, 14, "/cases/1/name",
         "expected a unique case name, got \"decode\" again (first at line 5, column 14)"},
        {"duplicate_key.json", 3, 44, "/requests/0/kv_len",
         "duplicate key \"kv_len\" (first at line 3, column 30)"},
        {"duplicate_sweep_value.json", 6, 19, "/window_left/3",
         "duplicate value in the sweep (first at line 5, column 22); expected distinct values"},
        {"empty_requests.json", 3, 15, "/requests",
         "expected at least one request, got an empty list"},
        {"empty_sweep.json", 5, 18, "/window_left",
         "expected a value or a non-empty list of values to sweep, got an empty list"},
        {"gqa_not_multiple.json", 4, 19, "/num_qo_heads",
         "expected a multiple of num_kv_heads (4), got 6"},
        {"expect_skip_unknown_backend.json", 7, 19, "/expect_skip/triton",
         "expected a backend name (\"prefill\", \"decode_fa2\", \"decode_aiter\" or \"decode_auto\"), got \"triton\""},
        {"expect_skip_not_run.json", 7, 48, "/expect_skip/decode_aiter",
         "expected a backend this case runs (its \"backends\": \"decode_fa2\"), got \"decode_aiter\": an expected skip "
         "of a backend that never runs the case cannot be checked"},
        {"expect_skip_defaults_not_run.json", 7, 21, "/defaults/expect_skip/decode_aiter",
         "expected a backend this case runs (case \"fa2_only\" inherits it and has \"backends\": \"decode_fa2\"), got "
         "\"decode_aiter\": an expected skip of a backend that never runs the case cannot be checked"},
        {"expect_skip_not_object.json", 7, 18, "/expect_skip",
         "expected an object of backend names to the text their skip reason contains, e.g. {\"decode_aiter\": "
         "\"head_dim 96\"}, got a list (expect_skip cannot be swept)"},
        {"expect_skip_no_backend.json", 7, 18, "/expect_skip",
         "expected an object of backend names to the text their skip reason contains, e.g. {\"decode_aiter\": "
         "\"head_dim 96\"}, got an object with no backend"},
        {"expect_skip_empty_reason.json", 9, 21, "/expect_skip/decode_aiter",
         "expected a non-empty string of at most 63 characters that decode_aiter's skip reason must contain, got \"\""},
        {"graph_capture_too_large.json", 7, 29, "/graph_capture_requests",
         "expected graph_capture_requests other than the number of requests (4): fewer (capture the first ones, replay the larger batch) or more (capture that many placeholder requests, replay the live batch padded to it), got 4"},
        {"graph_without_capture.json", 6, 17, "/cuda_graph",
         "expected graph_capture_requests with cuda_graph true (the batch to capture, 1 <= n != 8 requests)"},
        {"head_dim_unsupported.json", 5, 15, "/head_dim",
         "expected one of 64, 96, 128, 256, got 80"},
        {"invalid_json.json", 4, 3, "/requests",
         "invalid JSON: expected ',' or '}' after a member, got '\"'"},
        {"causal_window_right.json", 9, 23, "/window_right/1",
         "expected window_right 0 or -1 with causal true (a causal row sees no key right of itself; a two-sided "
         "band [p-L, p+R] needs \"causal\": false), got 2 (in the sweep case causal_window_right/prefill_band:"
         "window_right=2)"},
        {"chunk_noncausal.json", 10, 27, "/attention_chunk_size",
         "expected attention_chunk_size only with causal true (chunked local attention is defined for causal "
         "rows: [floor(p/C)*C, p]), got causal false"},
        {"chunk_with_window_left.json", 9, 27, "/attention_chunk_size",
         "expected window_left -1 with attention_chunk_size (the chunk is the window; a sliding window inside a "
         "chunk is not defined), got window_left 4"},
        {"layout_lowercase.json", 5, 13, "/layout",
         "expected one of \"NHD\", \"HND\", got \"nhd\""},
        {"leading_zero.json", 3, 40, "/requests/0/kv_len",
         "invalid JSON number \"064\" (JSON allows no leading zeros, no bare '.')"},
        {"missing_required.json", 1, 1, "/",
         "missing required key \"window_left\" (an integer in [-1, 1073741824]: keys [p-L, p] are visible, -1 for no window)"},
        {"nested_unknown.json", 6, 91, "/cases/1/requests/1/repeat",
         "unknown key \"repeat\" in a request; expected one of: qo_len, kv_len, count"},
        {"non_integer.json", 5, 18, "/window_left",
         "expected an integer in [-1, 1073741824], got 31.5"},
        {"not_an_object.json", 1, 1, "/",
         "expected a case object or {\"cases\": [...]}, got a list"},
        {"qo_len_zero.json", 3, 27, "/requests/0/qo_len",
         "expected an integer in [1, 16777216], got 0"},
        {"ragged_decode.json", 5, 61, "/kv_mode",
         "expected \"paged\": \"ragged\" is a prefill mode and backends lists decode_fa2"},
        {"seed_negative.json", 5, 58, "/seed",
         "expected an unsigned integer in [0, 18446744073709551615], got -3"},
        {"string_escape_then_error.json", 7, 15, "/soft_cap",
         "expected 0 or a number in [0.001, 10000], got -1"},
        {"sweep_too_large.json", 1, 1, "/",
         "expected at most 100000 expanded cases per file, got more than 100000 with this case (r0.kv_len: 10 x num_qo_heads: 10 x window_left: 10 x seed: 10 x page_size: 10 x soft_cap: 2)"},
        {"tolerance_incomplete.json", 6, 16, "/tolerance",
         "missing required key \"rtol\" (a number >= 0; atol and rtol go together)"},
        {"trailing_garbage.json", 7, 1, "/",
         "invalid JSON: trailing characters after the top-level value"},
        {"unknown_backend.json", 6, 30, "/backends/1",
         "expected a backend name (\"prefill\", \"decode_fa2\", \"decode_aiter\" or \"decode_auto\"), got \"triton\""},
        {"unknown_key.json", 8, 3, "/windowleft",
         "unknown key \"windowleft\"; did you mean \"window_left\"?"},
        {"window_right_below_minus_one.json", 10, 19, "/window_right",
         "expected an integer in [-1, 1073741824], got -2"},
        {"window_below_minus_one.json", 5, 23, "/window_left/1",
         "expected an integer in [-1, 1073741824], got -2"},
        {"wrong_type.json", 4, 19, "/num_qo_heads",
         "expected an integer in [1, 1024], got \"8\""},
    };
    return cr_make_param_array(struct bad_file, params, sizeof params / sizeof params[0]);
}

ParameterizedTest(struct bad_file *p, case_load, malformed_file_is_located)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/cases_bad/%s", SWADIFF_TEST_DATA, p->file);
    swa_case_list list = {NULL, 0};
    swa_load_error err;
    memset(&err, 0, sizeof err);
    int rc = swa_case_load_path(path, &list, &err);
    cr_assert_eq(rc, -1, "%s: expected a load error, got rc %d and %d cases", p->file, rc, list.count);
    cr_assert_eq(list.count, 0, "%s: the list must stay unchanged on error", p->file);
    cr_expect_str_eq(err.file, path, "%s: error names file %s", p->file, err.file);
    cr_expect_eq(err.line, p->line, "%s: line %d, expected %d (%s)", p->file, err.line, p->line, err.message);
    cr_expect_eq(err.column, p->column, "%s: column %d, expected %d (%s)", p->file, err.column, p->column,
                 err.message);
    cr_expect_str_eq(err.path, p->path, "%s: path %s, expected %s", p->file, err.path, p->path);
    cr_expect_str_eq(err.message, p->message, "%s: message\n  got:      %s\n  expected: %s", p->file, err.message,
                     p->message);
    swa_case_list_free(&list);
}

/* The one-line form the command line prints. */
Test(case_load, error_format_is_file_line_column_pointer_message)
{
    const char *text = "{\n  \"name\": \"x\",\n  \"requests\": [{\"qo_len\": 6, \"kv_len\": 0}],\n"
                       "  \"num_qo_heads\": 4, \"num_kv_heads\": 1, \"head_dim\": 64, \"dtype\": \"fp16\",\n"
                       "  \"window_left\": 4, \"backends\": [\"prefill\"]\n}\n";
    swa_case_list list = {NULL, 0};
    swa_load_error err;
    cr_assert_eq(swa_case_parse("bad.json", text, strlen(text), &list, &err), -1);
    char buf[1024];
    swa_load_error_format(&err, buf, sizeof buf);
    cr_expect_str_eq(buf, "bad.json:3:40: /requests/0/kv_len: expected an integer in [1, 16777216], got 0", "got %s", buf);
}

/* A failing file leaves earlier cases of the list alone. */
Test(case_load, failure_keeps_existing_cases)
{
    const char *good = "{\"name\": \"a\", \"requests\": [{\"qo_len\": 1, \"kv_len\": 9}], \"num_qo_heads\": 2,"
                       " \"num_kv_heads\": 1, \"head_dim\": 64, \"dtype\": \"bf16\", \"window_left\": [1, 2],"
                       " \"backends\": [\"decode_fa2\"]}";
    const char *bad = "{\"name\": \"b\", \"requests\": [{\"qo_len\": 1, \"kv_len\": 9}], \"num_qo_heads\": 2,"
                      " \"num_kv_heads\": 1, \"head_dim\": 64, \"dtype\": \"bf16\", \"window_left\": [1, -5],"
                      " \"backends\": [\"decode_fa2\"]}";
    swa_case_list list = {NULL, 0};
    swa_load_error err;
    cr_assert_eq(swa_case_parse("good.json", good, strlen(good), &list, &err), 0, "%s", err.message);
    cr_assert_eq(list.count, 2);
    cr_assert_eq(swa_case_parse("bad.json", bad, strlen(bad), &list, &err), -1);
    cr_expect_eq(list.count, 2, "list grew to %d on a failed load", list.count);
    cr_expect_str_eq(list.cases[1].id, "good/a:window_left=2");
    cr_expect_str_eq(err.path, "/window_left/1");
    swa_case_list_free(&list);
}

/* Loading the whole folder stops at the first bad file in path order and
 * keeps nothing from the files before it. */
Test(case_load, folder_load_is_all_or_nothing)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/cases_bad", SWADIFF_TEST_DATA);
    swa_case_list list = {NULL, 0};
    swa_load_error err;
    cr_assert_eq(swa_case_load_path(path, &list, &err), -1);
    cr_expect_eq(list.count, 0);
    cr_expect(strstr(err.file, "/cases_bad/bad_name.json") != NULL, "first failing file: %s", err.file);
    swa_case_list_free(&list);
}

/* Two files with the same stem make the same ids: the second is rejected
 * at its case name, naming where the id was first defined. */
Test(case_load, duplicate_ids_across_files)
{
    const char *text = "{\"name\": \"d\", \"requests\": [{\"qo_len\": 1, \"kv_len\": 9}], \"num_qo_heads\": 2,"
                       " \"num_kv_heads\": 1, \"head_dim\": 64, \"dtype\": \"bf16\", \"window_left\": 1,"
                       " \"backends\": [\"decode_fa2\"]}";
    swa_case_list list = {NULL, 0};
    swa_load_error err;
    cr_assert_eq(swa_case_parse("a/same.json", text, strlen(text), &list, &err), 0, "%s", err.message);
    cr_assert_eq(swa_case_parse("b/same.json", text, strlen(text), &list, &err), -1);
    cr_expect_eq(list.count, 1);
    cr_expect_eq(err.line, 1);
    cr_expect_eq(err.column, 10, "column %d", err.column);
    cr_expect_str_eq(err.path, "/name");
    cr_expect_str_eq(err.message, "expected a unique case id, got \"same/d\" again (first from a/same.json, line 1)");
    swa_case_list_free(&list);
}

struct bad_text {
    char text[96];
    int line, column;
    char path[32];
    char message[160];
};

/* JSON syntax mistakes are reported where a reader looks for them, with the
 * pointer of the value being read; CRLF and tabs do not shift columns
 * beyond their bytes. */
ParameterizedTestParameters(case_load, syntax_error_is_located)
{
    static struct bad_text params[] = {
        {"{\"name\": \"x\",\r\n  \"a\": 1,\r\n}", 2, 9, "/", "invalid JSON: trailing ',' before '}'"},
        {"{\"name\": \"x\n", 1, 10, "/name", "invalid JSON: string not closed on its line (a missing '\"'?)"},
        {"{\"r\": [1, 2", 1, 12, "/r", "invalid JSON: unexpected end of file; the '[' at line 1, column 7 is never closed"},
        {"", 1, 1, "/", "invalid JSON: expected a value (object, list, string, number, true, false or null), got end of file"},
        {"{\"n\":\ttru}", 1, 7, "/n", "invalid JSON: expected true"},
        {"{\"n\": \"\\x\"}", 1, 8, "/n", "invalid JSON: unknown escape in a string (expected one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)"},
        {"\n\n  {\"n\": 1.}", 3, 9, "/n", "invalid JSON number \"1.\" (JSON allows no leading zeros, no bare '.')"},
        {"{\"n\": \"a\tb\"}", 1, 9, "/n", "invalid JSON: raw control character 0x09 inside a string (write it as an escape)"},
        {"{'n': 1}", 1, 2, "/", "invalid JSON: expected a key in double quotes, got '''"},
        {"{\"a\": [{\"b\": [1, {\"c\": \"}]\\\"\"}] 2]}", 1, 33, "/a/0/b", "invalid JSON: expected ',' or '}' after a member, got '2'"},
        {"{} {}", 1, 4, "/", "invalid JSON: trailing characters after the top-level value"},
        {"\xef\xbb\xbf{}", 1, 1, "/", "invalid JSON: the file starts with a UTF-8 byte order mark; save it without one"},
        {"{\"name\": \"x\"\0}", 1, 13, "/", "invalid JSON: NUL byte in the file"},
    };
    return cr_make_param_array(struct bad_text, params, sizeof params / sizeof params[0]);
}

ParameterizedTest(struct bad_text *p, case_load, syntax_error_is_located)
{
    /* the NUL case is 14 bytes long; the others end at their terminator */
    size_t len = strcmp(p->message, "invalid JSON: NUL byte in the file") == 0 ? 14 : strlen(p->text);
    cr_assert(len < sizeof p->text);
    swa_case_list list = {NULL, 0};
    swa_load_error err;
    memset(&err, 0, sizeof err);
    cr_assert_eq(swa_case_parse("s.json", p->text, len, &list, &err), -1, "accepted: %s", p->text);
    cr_expect_eq(err.line, p->line, "%s: line %d, expected %d", p->message, err.line, p->line);
    cr_expect_eq(err.column, p->column, "%s: column %d, expected %d", p->message, err.column, p->column);
    cr_expect_str_eq(err.path, p->path, "%s: path %s", p->message, err.path);
    cr_expect_str_eq(err.message, p->message, "got: %s", err.message);
}

/* Positions stay right after strings full of brackets, braces, escaped
 * quotes and multi-byte characters, in nested arrays and objects. */
Test(case_load, position_after_tricky_strings)
{
    const char *text =
        "{\"description\": \"[{\\\"}]\\\\\\u00e9 \xc3\xa9 }]\", \"cases\": [\n"
        "  {\"name\": \"a\", \"description\": \"\\\"]},{\\\"\",\n"
        "   \"requests\": [{\"qo_len\": [1], \"kv_len\": [[2]]}]}\n"
        "]}";
    swa_case_list list = {NULL, 0};
    swa_load_error err;
    cr_assert_eq(swa_case_parse("t.json", text, strlen(text), &list, &err), -1);
    cr_expect_eq(err.line, 3);
    cr_expect_eq(err.column, 44, "column %d", err.column);
    cr_expect_str_eq(err.path, "/cases/0/requests/0/kv_len/0");
    cr_expect_str_eq(err.message, "expected an integer in [1, 16777216], got a list");
}

/* Random mutilations of a good file: never a crash, always either a load
 * or a located error with a line inside the text. */
Test(case_load, mutilated_files_never_crash)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/../../cases/window_edges.json", SWADIFF_TEST_DATA);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    static char text[1 << 16];
    size_t len = fread(text, 1, sizeof text, f);
    fclose(f);
    uint64_t state = 42;
    for (int trial = 0; trial < 400; trial++) {
        static char copy[1 << 16];
        memcpy(copy, text, len);
        size_t n = len;
        for (int k = 0; k < 3; k++) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            size_t at = (size_t)(state >> 33) % n;
            const char pool[] = "{}[]\",:0-1.e\\ ax";
            copy[at] = pool[(state >> 20) % (sizeof pool - 1)];
        }
        if (trial % 4 == 0)
            n = (size_t)(state >> 40) % len; /* truncated */
        swa_case_list list = {NULL, 0};
        swa_load_error err;
        memset(&err, 0, sizeof err);
        int rc = swa_case_parse("m.json", copy, n, &list, &err);
        if (rc != 0) {
            int lines = 1;
            for (size_t i = 0; i < n; i++)
                lines += copy[i] == '\n';
            cr_assert(err.line >= 1 && err.line <= lines, "trial %d: line %d outside 1..%d (%s)", trial, err.line,
                      lines, err.message);
            cr_assert(err.column >= 1, "trial %d: column %d", trial, err.column);
            cr_assert(err.message[0] != '\0', "trial %d: empty message", trial);
            cr_assert(strstr(err.message, "internal error") == NULL, "trial %d: %s", trial, err.message);
        }
        swa_case_list_free(&list);
    }
}
