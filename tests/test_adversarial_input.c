/* test_adversarial_input.c — case files written to break the loader or to
 * mislead it: every one must be refused with a located error
 * (file:line:column, JSON pointer, what was expected), never truncated,
 * wrapped, overflowed or turned into "out of memory" (issue "Truthful runs").
 *
 *  - "\u0000" inside any JSON string (names, keys, enum values, free text):
 *    cJSON stores C strings, so the text would silently end there;
 *  - scalars a fp32 kernel cannot hold (soft_cap, sm_scale) and windows
 *    whose arithmetic leaves int32 (window_left up to 2^30, see
 *    harness/case_internal.h);
 *  - a case whose tensors exceed the host-memory cap, a 300-byte sweep that
 *    asks for gigabytes of case records, and many files that together pass
 *    the per-load case cap;
 *  - `swadiff validate` and `swadiff run` accept and refuse the same files,
 *    with the same message.
 *
 * Run: ctest --test-dir build -R test_adversarial_input --output-on-failure */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/data.h"
#include "harness/case_load.h"

/* One decode case; NAME, DESC, DTYPE and BACKEND are spliced into its
 * strings, EXTRA (", \"key\": value" or "") into the object. */
#define DOC(NAME, DESC, DTYPE, BACKEND, EXTRA)                                                          \
    "{\"name\": \"" NAME "\", \"description\": \"" DESC "\",\n"                                         \
    " \"requests\": [{\"qo_len\": 1, \"kv_len\": 9}], \"num_qo_heads\": 2, \"num_kv_heads\": 1,\n"     \
    " \"head_dim\": 64, \"dtype\": \"" DTYPE "\", \"backends\": [\"" BACKEND "\"]" EXTRA "}\n"
#define PLAIN(EXTRA) DOC("d", "text", "fp16", "decode_fa2", EXTRA)
#define WINDOW ", \"window_left\": 1"

/* 1-based line and column of byte offset off in text. */
static void locate(const char *text, size_t off, int *line, int *column)
{
    *line = 1;
    *column = 1;
    for (size_t i = 0; i < off; i++) {
        if (text[i] == '\n') {
            (*line)++;
            *column = 1;
        } else {
            (*column)++;
        }
    }
}

/* Parses text as file name and expects a located refusal at the first
 * occurrence of needle (after skip bytes), with pointer path and a message
 * containing want.  The list must come back untouched. */
static void expect_refused_at(const char *name, const char *text, const char *needle, const char *path,
                              const char *want)
{
    const char *at = strstr(text, needle);
    cr_assert_not_null(at, "test bug: \"%s\" not in the text", needle);
    int line, column;
    locate(text, (size_t)(at - text), &line, &column);
    swa_case_list list = {NULL, 0};
    swa_load_error err;
    memset(&err, 0, sizeof err);
    int rc = swa_case_parse(name, text, strlen(text), &list, &err);
    cr_assert_eq(rc, -1, "accepted (%d cases):\n%s", list.count, text);
    cr_expect_eq(list.count, 0, "the list grew on a refused file:\n%s", text);
    char where[1400];
    swa_load_error_format(&err, where, sizeof where);
    cr_expect_str_eq(err.file, name, "%s\ninput:\n%s", where, text);
    cr_expect(err.line == line && err.column == column, "expected %s:%d:%d, got %s\ninput:\n%s", name, line, column,
              where, text);
    cr_expect_str_eq(err.path, path, "pointer: %s\ninput:\n%s", where, text);
    cr_expect(strstr(err.message, want) != NULL, "message should contain \"%s\", got:\n%s\ninput:\n%s", want, where,
              text);
    swa_case_list_free(&list);
}

/* ---------------------------------------------------------------------------
 * 1. "\u0000" in any string */

/* Arrays, not pointers: Criterion may run each parameter in a fresh process. */
struct nul_string {
    char what[32];
    char text[420];
    char path[40];
};

ParameterizedTestParameters(adversarial_input, nul_escape_in_any_string_is_located)
{
    static struct nul_string params[] = {
        {"case name", DOC("dec\\u0000ode", "text", "fp16", "decode_fa2", WINDOW), "/name"},
        {"description", DOC("d", "before\\u0000after", "fp16", "decode_fa2", WINDOW), "/description"},
        {"enum value (dtype)", DOC("d", "text", "fp16\\u0000x", "decode_fa2", WINDOW), "/dtype"},
        {"backend name", DOC("d", "text", "fp16", "decode_fa2\\u0000", WINDOW), "/backends/0"},
        {"key", PLAIN(WINDOW ", \"seed\\u0000\": 1"), "/seed\\u0000"},
        {"expect_error text", PLAIN(WINDOW ", \"expect_error\": \"CUDA\\u0000-graph\""), "/expect_error"},
        {"tolerance mode", PLAIN(WINDOW ", \"tolerance\": {\"mode\": \"base\\u0000line\", \"factor\": 2}"),
         "/tolerance/mode"},
        {"request key", "{\"name\": \"d\", \"requests\": [{\"qo_len\": 1, \"kv_\\u0000len\": 9}]}",
         "/requests/0/kv_\\u0000len"},
        {"container description",
         "{\"description\": \"shared\\u0000\", \"cases\": [" PLAIN(WINDOW) "]}", "/description"},
    };
    return cr_make_param_array(struct nul_string, params, sizeof params / sizeof params[0]);
}

ParameterizedTest(struct nul_string *p, adversarial_input, nul_escape_in_any_string_is_located)
{
    cr_log_info("NUL escape in the %s", p->what);
    expect_refused_at("nul.json", p->text, "\\u0000", p->path, "expected a string without NUL characters");
}

/* The check is on the escape, not on the byte sequence: "\\u0000" (an
 * escaped backslash, then "u0000") is ordinary text and loads. */
Test(adversarial_input, escaped_backslash_before_u0000_is_text)
{
    const char *text = DOC("d", "a \\\\u0000 b", "fp16", "decode_fa2", WINDOW);
    swa_case_list list = {NULL, 0};
    swa_load_error err;
    cr_assert_eq(swa_case_parse("ok.json", text, strlen(text), &list, &err), 0, "%s\ninput:\n%s", err.message, text);
    cr_expect_eq(list.count, 1);
    swa_case_list_free(&list);
}

/* ---------------------------------------------------------------------------
 * 2. scalars a fp32 kernel cannot hold, windows past 2^30 */

struct bad_scalar {
    char extra[64];   /* spliced into the case object */
    char needle[24];  /* the offending token, where the error must point */
    char path[24];
    char message[96];
};

ParameterizedTestParameters(adversarial_input, unholdable_scalar_is_located)
{
    static struct bad_scalar params[] = {
        {WINDOW ", \"soft_cap\": 1e300", "1e300", "/soft_cap", "expected 0 or a number in [0.001, 10000], got 1e300"},
        {WINDOW ", \"soft_cap\": 1e999", "1e999", "/soft_cap", "expected 0 or a number in [0.001, 10000], got 1e999"},
        {WINDOW ", \"soft_cap\": 65504", "65504", "/soft_cap", "expected 0 or a number in [0.001, 10000], got 65504"},
        {WINDOW ", \"soft_cap\": 0.0005", "0.0005", "/soft_cap", "expected 0 or a number in [0.001, 10000], got 0.0005"},
        {WINDOW ", \"soft_cap\": -1", "-1", "/soft_cap", "expected 0 or a number in [0.001, 10000], got -1"},
        {WINDOW ", \"soft_cap\": [50, 1e6]", "1e6", "/soft_cap/1", "expected 0 or a number in [0.001, 10000], got 1e6"},
        {WINDOW ", \"sm_scale\": 0", "0}", "/sm_scale", "expected a number in [1e-08, 10000], got 0"},
        {WINDOW ", \"sm_scale\": 1e-300", "1e-300", "/sm_scale", "expected a number in [1e-08, 10000], got 1e-300"},
        {WINDOW ", \"sm_scale\": 1e300", "1e300", "/sm_scale", "expected a number in [1e-08, 10000], got 1e300"},
        {WINDOW ", \"sm_scale\": -1e999", "-1e999", "/sm_scale", "expected a number in [1e-08, 10000], got -1e999"},
        {", \"window_left\": 2147483647", "2147483647", "/window_left",
         "expected an integer in [-1, 1073741824], got 2147483647"},
        {", \"window_left\": 1073741825", "1073741825", "/window_left",
         "expected an integer in [-1, 1073741824], got 1073741825"},
        {", \"window_left\": [7, 9223372036854775808]", "9223372036854775808", "/window_left/1",
         "expected an integer in [-1, 1073741824], got 9223372036854775808"},
    };
    return cr_make_param_array(struct bad_scalar, params, sizeof params / sizeof params[0]);
}

ParameterizedTest(struct bad_scalar *p, adversarial_input, unholdable_scalar_is_located)
{
    char text[600];
    snprintf(text, sizeof text, PLAIN("%s"), p->extra);
    expect_refused_at("scalar.json", text, p->needle, p->path, p->message);
}

/* The bounds themselves load, exactly. */
Test(adversarial_input, scalar_bounds_are_inclusive)
{
    const char *text = PLAIN(", \"window_left\": [-1, 0, 1073741824], \"soft_cap\": [0, 0.001, 10000],"
                             " \"sm_scale\": [1e-8, 10000]");
    swa_case_list list = {NULL, 0};
    swa_load_error err;
    cr_assert_eq(swa_case_parse("bounds.json", text, strlen(text), &list, &err), 0, "%s", err.message);
    cr_assert_eq(list.count, 3 * 3 * 2);
    const swa_case *last = &list.cases[list.count - 1];
    cr_expect_eq(last->window_left, 1073741824);
    cr_expect_eq(last->soft_cap, 10000.0);
    cr_expect_eq(last->sm_scale, 10000.0);
    cr_expect_eq(list.cases[0].sm_scale, 1e-8);
    swa_case_list_free(&list);
}

/* ---------------------------------------------------------------------------
 * Running the commands */

static char tmp[64];

static void make_tmp(void)
{
    snprintf(tmp, sizeof tmp, "/tmp/swadiff-adv-XXXXXX");
    cr_assert_not_null(mkdtemp(tmp));
}

static void remove_tmp(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    (void)!system(cmd);
}

/* sh -c cmd with stdout+stderr into out; the exit code (128+signal when
 * killed, so a crash never passes for a refusal). */
static int sh(const char *cmd, char *out, size_t n)
{
    char full[4096];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    FILE *p = popen(full, "r");
    cr_assert_not_null(p, "popen(%s)", cmd);
    size_t k = fread(out, 1, n - 1, p);
    out[k] = '\0';
    char sink[4096];
    while (fread(sink, 1, sizeof sink, p) > 0) {
    }
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
}

/* A window as wide as the loader allows goes through every backend, the
 * reference, the comparison and explain's L+1 / L-1 hypotheses (with a
 * mutant, so explain has a failure to explain) without a wrong result or a
 * crash; under the sanitizer build (ci/run-tests.sh) signed overflow would
 * abort here. */
Test(adversarial_input, widest_window_runs_on_every_backend, .init = make_tmp, .fini = remove_tmp, .timeout = 240)
{
    char path[128], cmd[1024], out[16384];
    snprintf(path, sizeof path, "%s/wide.json", tmp);
    write_file(path, "{\"cases\": [\n"
                     " {\"name\": \"decode\", \"requests\": [{\"qo_len\": 1, \"kv_len\": [1, 40]}], \"num_qo_heads\": 4,"
                     "  \"num_kv_heads\": 2, \"head_dim\": 64, \"dtype\": \"fp16\", \"window_left\": [0, 1073741824],"
                     "  \"backends\": [\"decode_fa2\", \"decode_aiter\", \"decode_auto\"]},\n"
                     " {\"name\": \"prefill\", \"requests\": [{\"qo_len\": 17, \"kv_len\": 40}], \"num_qo_heads\": 4,"
                     "  \"num_kv_heads\": 2, \"head_dim\": 64, \"dtype\": \"bf16\", \"window_left\": 1073741824,"
                     "  \"backends\": [\"prefill\"]}]}\n");
    snprintf(cmd, sizeof cmd, "%s run --device host --quiet %s", SWADIFF_BINARY, path);
    int rc = sh(cmd, out, sizeof out);
    cr_expect_eq(rc, 0, "%s: exit %d, expected 0 (every backend right):\n%s", cmd, rc, out);
    /* a head-mapping bug fails whatever the window, so explain scores its
     * hypotheses, window_left + 1 = 2^30 + 1 among them */
    snprintf(cmd, sizeof cmd, "%s explain 'wide/decode:r0.kv_len=40,window_left=1073741824' --backend decode_fa2 "
             "--mutant gqa_mod_mapping --device host %s", SWADIFF_BINARY, path);
    rc = sh(cmd, out, sizeof out);
    cr_expect(rc < 128, "%s: killed (exit %d):\n%s", cmd, rc, out);
    cr_expect(strstr(out, "window_l_plus_1") != NULL, "%s: explain should score the L+1 window:\n%s", cmd, out);
}

/* ---------------------------------------------------------------------------
 * 3. memory, estimated before expansion allocates */

/* A case above the cap is refused at its case object, naming its id and the
 * bytes swa_case_host_bytes estimates; the smaller cases of the same sweep
 * would have fit. */
Test(adversarial_input, case_over_the_host_cap_is_refused_with_id_and_bytes)
{
    const char *big = "{\"name\": \"x\", \"requests\": [{\"qo_len\": 1, \"kv_len\": 100000}], \"num_qo_heads\": 2,"
                      " \"num_kv_heads\": 1, \"head_dim\": 64, \"dtype\": \"fp16\", \"window_left\": 1,"
                      " \"backends\": [\"decode_fa2\"]}";
    swa_case_list list = {NULL, 0};
    swa_load_error err;
    cr_assert_eq(swa_case_parse("probe.json", big, strlen(big), &list, &err), 0, "%s", err.message);
    size_t need = swa_case_host_bytes(&list.cases[0]);
    swa_case_list_free(&list);
    cr_assert_gt(need, 100000u);

    cr_assert_eq(setenv("SWADIFF_MAX_CASE_BYTES", "100000", 1), 0);
    const char *text = "{\n  \"name\": \"x\",\n  \"requests\": [{\"qo_len\": 1, \"kv_len\": [64, 100000]}],\n"
                       "  \"num_qo_heads\": 2, \"num_kv_heads\": 1, \"head_dim\": 64, \"dtype\": \"fp16\",\n"
                       "  \"window_left\": 1, \"backends\": [\"decode_fa2\"]}\n";
    char want[160];
    snprintf(want, sizeof want, "got case cap/x:r0.kv_len=100000 needing %zu bytes", need);
    expect_refused_at("cap.json", text, "{", "/", want);
    expect_refused_at("cap.json", text, "{", "/", "fit in 100000 bytes (0.00 GiB, SWADIFF_MAX_CASE_BYTES)");
    unsetenv("SWADIFF_MAX_CASE_BYTES");
}

/* A 300-byte sweep of 10^5 cases with 65536 requests each used to ask for
 * ~51 GB of case records and end in "out of memory"; now it is refused at
 * "requests" once the records pass the load cap, well before that. */
Test(adversarial_input, small_file_cannot_ask_for_gigabytes, .timeout = 60)
{
    const char *text = "{\"name\":\"x\",\"requests\":[{\"qo_len\":1,\"kv_len\":[1,2,3,4,5,6,7,8,9,10],\"count\":65536}],"
                       "\"num_qo_heads\":[1,2,4,8,16,32,64,128,256,512],\"num_kv_heads\":1,\"head_dim\":64,"
                       "\"dtype\":\"fp16\",\"window_left\":[0,1,2,3,4,5,6,7,8,9],\"seed\":[0,1,2,3,4,5,6,7,8,9],"
                       "\"page_size\":[1,2,3,4,5,6,7,8,9,10],\"backends\":[\"decode_fa2\"]}";
    cr_assert_lt(strlen(text), 330u);
    expect_refused_at("tiny.json", text, "[{", "/requests", "bytes (0.5 GiB) of case records in one load");
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    cr_expect_lt(ru.ru_maxrss, 1L << 20, "peak memory %ld KiB: the refusal came too late", ru.ru_maxrss);
}

/* Files that each fit add up: the cases of one load (all paths of a run)
 * are capped together, and the file that passes the cap is refused. */
Test(adversarial_input, many_files_share_one_case_cap, .timeout = 120)
{
    size_t cap = 1u << 20;
    char *text = malloc(cap);
    cr_assert_not_null(text);
    size_t n = (size_t)snprintf(text, cap, "{\"name\": \"s\", \"requests\": [{\"qo_len\": 1, \"kv_len\": 8}], "
                                           "\"num_qo_heads\": 1, \"num_kv_heads\": 1, \"head_dim\": 64, "
                                           "\"dtype\": \"fp16\", \"window_left\": 0, \"backends\": [\"decode_fa2\"],"
                                           " \"seed\": [");
    for (int s = 0; s < 100000; s++)
        n += (size_t)snprintf(text + n, cap - n, "%s%d", s ? "," : "", s);
    n += (size_t)snprintf(text + n, cap - n, "]}");
    swa_case_list list = {NULL, 0};
    swa_load_error err;
    cr_assert_eq(swa_case_parse("a.json", text, n, &list, &err), 0, "%s", err.message);
    cr_assert_eq(swa_case_parse("b.json", text, n, &list, &err), 0, "%s", err.message);
    cr_assert_eq(list.count, 200000);
    cr_assert_eq(swa_case_parse("c.json", text, n, &list, &err), -1, "a third file of 100000 cases was accepted");
    cr_expect_eq(list.count, 200000);
    cr_expect_eq(err.line, 1);
    cr_expect_eq(err.column, 1);
    cr_expect_str_eq(err.message, "expected at most 200000 expanded cases in one load (all case files of a run "
                                  "together), got 300000 with this case (200000 loaded before it, 100000 from it)");
    swa_case_list_free(&list);
    free(text);
}

/* ---------------------------------------------------------------------------
 * 4. validate accepts exactly what run accepts */

struct agree {
    char what[40];
    char env[48];     /* prefix of both commands */
    char text[440];
    int exit_code;    /* of both */
};

ParameterizedTestParameters(adversarial_input, validate_and_run_agree)
{
    static struct agree params[] = {
        {"a good case", "", PLAIN(WINDOW), 0},
        {"NUL in the name", "", DOC("a\\u0000b", "t", "fp16", "decode_fa2", WINDOW), 2},
        {"soft_cap a fp32 kernel cannot hold", "", PLAIN(WINDOW ", \"soft_cap\": 1e300"), 2},
        {"sm_scale 0", "", PLAIN(WINDOW ", \"sm_scale\": 0"), 2},
        {"window_left INT_MAX", "", PLAIN(", \"window_left\": 2147483647"), 2},
        {"tensors over the cap", "SWADIFF_MAX_CASE_BYTES=1000 ", PLAIN(WINDOW), 2},
        {"window_right with causal", "",
         "{\"name\": \"d\", \"requests\": [{\"qo_len\": 5, \"kv_len\": 4}], \"num_qo_heads\": 2, \"num_kv_heads\": 1,"
         " \"head_dim\": 64, \"dtype\": \"fp16\", \"window_left\": 1, \"window_right\": 1, \"backends\": [\"prefill\"]}", 2},
        {"chunk with window_left", "",
         "{\"name\": \"d\", \"requests\": [{\"qo_len\": 5, \"kv_len\": 4}], \"num_qo_heads\": 2, \"num_kv_heads\": 1,"
         " \"head_dim\": 64, \"dtype\": \"fp16\", \"window_left\": 1, \"attention_chunk_size\": 4, \"backends\": [\"prefill\"]}", 2},
    };
    return cr_make_param_array(struct agree, params, sizeof params / sizeof params[0]);
}

ParameterizedTest(struct agree *p, adversarial_input, validate_and_run_agree, .init = make_tmp, .fini = remove_tmp,
                  .timeout = 120)
{
    char path[128], cmd[1024], out_validate[8192], out_run[8192];
    snprintf(path, sizeof path, "%s/agree.json", tmp);
    write_file(path, p->text);
    snprintf(cmd, sizeof cmd, "%s%s validate %s", p->env, SWADIFF_BINARY, path);
    int v = sh(cmd, out_validate, sizeof out_validate);
    snprintf(cmd, sizeof cmd, "%s%s run --device host --quiet %s", p->env, SWADIFF_BINARY, path);
    int r = sh(cmd, out_run, sizeof out_run);
    cr_expect_eq(v, p->exit_code, "%s: validate exit %d, expected %d:\n%s\ninput:\n%s", p->what, v, p->exit_code,
                 out_validate, p->text);
    cr_expect_eq(r, p->exit_code, "%s: run exit %d, expected %d:\n%s\ninput:\n%s", p->what, r, p->exit_code,
                 out_run, p->text);
    if (p->exit_code == 2) {
        /* the same located line, first thing both print */
        char *nl = strchr(out_validate, '\n');
        if (nl)
            *nl = '\0';
        cr_expect(strstr(out_validate, path) == out_validate, "%s: validate should start with the location: %s",
                  p->what, out_validate);
        cr_expect(strstr(out_run, out_validate) != NULL, "%s: run should print what validate printed:\n  validate: "
                  "%s\n  run: %s", p->what, out_validate, out_run);
    }
}
