/* test_invariance.c — the invariance checks (harness/invariance.h,
 * docs/invariance.md): a backend against itself on transformed cases.
 *
 *  - the transformed inputs are the case's own bits (swa_inputs_derive:
 *    a request alone, the batch reversed, another page order and size);
 *  - the built-ins in their deterministic mode hold batch.* and pages.order
 *    bitwise; outside it, a split chosen from the batch shows up as a
 *    measured difference that does not fail the result;
 *  - a plug-in that declares itself batch-invariant and depends on the batch
 *    or on where its pages lie fails ([batch_variant]) at the check that
 *    shows it; the same kernel declaring nothing is measured; an exact
 *    declared kernel passes every check (the harness's marshalling);
 *  - skips say why; bad names are clear errors; the records survive a
 *    merge; the reproduce command carries the flags; --repeat measures an
 *    undeclared backend instead of failing it.
 *
 * Runs the built binary (SWADIFF_BINARY) with tests/plugins/batchy.c and
 * tests/plugins/flaky.c (SWADIFF_PLUGIN_DIR). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/data.h"
#include "test_util.h"

#define BATCHY SWADIFF_PLUGIN_DIR "/libbatchy.so"
#define FLAKY SWADIFF_PLUGIN_DIR "/libflaky.so"

TestSuite(invariance, .init = make_tmp, .fini = remove_tmp, .timeout = 300);

static int swadiff(const char *fmt, const char *a, const char *b)
{
    char args[2048];
    snprintf(args, sizeof args, fmt, a, b);
    return sh("cd '%s' && '%s' %s", SWADIFF_SOURCE_DIR, SWADIFF_BINARY, args);
}

static void write_file(const char *name, const char *text, char *path, size_t n)
{
    snprintf(path, n, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs(text, f);
    fclose(f);
}

/* The record `name` of a result, NULL when it has none. */
static const cJSON *record(const cJSON *res, const char *name)
{
    const cJSON *v;
    cJSON_ArrayForEach(v, cJSON_GetObjectItem(res, "invariance"))
        if (!strcmp(str(v, "name"), name))
            return v;
    return NULL;
}

/* A small batch both prefill and the plug-ins take: four requests of
 * different lengths, a window, GQA. */
static const char *PREFILL4 =
    "{\"name\": \"p4\", \"requests\": [{\"qo_len\": 40, \"kv_len\": 300}, {\"qo_len\": 7, \"kv_len\": 90},"
    " {\"qo_len\": 100, \"kv_len\": 700}, {\"qo_len\": 1, \"kv_len\": 33}],"
    " \"num_qo_heads\": 4, \"num_kv_heads\": 2, \"head_dim\": 64, \"dtype\": \"bf16\", \"page_size\": 16,"
    " \"causal\": true, \"window_left\": 63, \"backends\": [\"prefill\"], \"seed\": 5}";

static const char *DECODE4 =
    "{\"name\": \"d4\", \"requests\": [{\"qo_len\": 1, \"kv_len\": 3000}, {\"qo_len\": 1, \"kv_len\": 90},"
    " {\"qo_len\": 1, \"kv_len\": 700}, {\"qo_len\": 1, \"kv_len\": 1500}],"
    " \"num_qo_heads\": 8, \"num_kv_heads\": 2, \"head_dim\": 128, \"dtype\": \"fp16\", \"page_size\": 16,"
    " \"causal\": true, \"window_left\": 255, \"backends\": [\"decode_fa2\", \"decode_aiter\", \"decode_auto\"],"
    " \"return_lse\": true, \"seed\": 9}";

Test(invariance, derived_inputs_are_the_cases_own_bits)
{
    swa_case c = {0};
    int qo[3] = {3, 1, 5}, kv[3] = {40, 17, 70};
    c.num_requests = 3;
    c.qo_len = qo;
    c.kv_len = kv;
    c.num_qo_heads = 4;
    c.num_kv_heads = 2;
    c.head_dim = 64;
    c.dtype = SWA_DTYPE_BF16;
    c.page_size = 16;
    c.layout = SWA_LAYOUT_HND;
    c.causal = true;
    c.window_left = -1;
    c.window_right = 0;
    c.seed = 3;
    snprintf(c.id, sizeof c.id, "derive");
    swa_inputs base, d;
    swa_error err = {0};
    cr_assert_eq(swa_inputs_create(&c, &base, &err), SWA_OK, "%s", err.message);
    /* the batch reversed, in pages of 8 under another shuffle */
    int from[3] = {2, 1, 0}, rq[3] = {5, 1, 3}, rk[3] = {70, 17, 40};
    swa_case n = c;
    n.qo_len = rq;
    n.kv_len = rk;
    n.page_size = 8;
    cr_assert_eq(swa_inputs_derive(&base, &c, &n, from, 99, &d, &err), SWA_OK, "%s", err.message);
    size_t qrow = 4 * 64, krow = 2 * 64;
    float a[64], b[64];
    for (int i = 0; i < 3; i++) {
        int r = from[i];
        cr_expect_eq(memcmp(d.q + (size_t)d.qo_indptr[i] * qrow, base.q + (size_t)base.qo_indptr[r] * qrow,
                            (size_t)qo[r] * qrow * sizeof(float)), 0, "q rows of request %d", r);
        cr_expect_eq(memcmp(d.k + (size_t)d.kv_indptr[i] * krow, base.k + (size_t)base.kv_indptr[r] * krow,
                            (size_t)kv[r] * krow * sizeof(float)), 0, "k of request %d", r);
        for (int t = 0; t < kv[r]; t++)
            for (int h = 0; h < 2; h++)
                for (int which = 0; which < 2; which++) {
                    swa_paged_gather(&base.paged, which, r, t, h, a);
                    swa_paged_gather(&d.paged, which, i, t, h, b);
                    cr_assert_eq(memcmp(a, b, sizeof a), 0, "%s of request %d, token %d, head %d through the pages",
                                 which ? "V" : "K", r, t, h);
                }
    }
    cr_expect_eq(d.paged.page_size, 8);
    /* a request that is not the one named is refused */
    int wrong[3] = {0, 1, 2};
    cr_expect_eq(swa_inputs_derive(&base, &c, &n, wrong, 99, &d, &err), SWA_ERR_INVALID);
    swa_inputs_free(&d);
    swa_inputs_free(&base);
}

Test(invariance, bad_names_are_clear_errors)
{
    char path[512], text[2048];
    snprintf(text, sizeof text, "{\"cases\": [%.*s, \"invariance\": [\"batch\", \"pagez\"]}]}", (int)strlen(PREFILL4) - 1,
             PREFILL4);
    write_file("bad.json", text, path, sizeof path);
    int rc = swadiff("run --device host -q %s%s", path, "");
    cr_expect_eq(rc, 2, "exit %d:\n%s", rc, out);
    cr_expect(strstr(out, "/cases/0/invariance/1") && strstr(out, "expected an invariance name") &&
              strstr(out, "\"pagez\""), "the error names the place and the name:\n%s", out);
    snprintf(text, sizeof text, "{\"cases\": [%.*s, \"invariance\": [\"batch\", \"batch\"]}]}", (int)strlen(PREFILL4) - 1,
             PREFILL4);
    write_file("twice.json", text, path, sizeof path);
    rc = swadiff("run --device host -q %s%s", path, "");
    cr_expect_eq(rc, 2, "exit %d:\n%s", rc, out);
    cr_expect(strstr(out, "each invariance once"), "%s", out);
    write_file("ok.json", PREFILL4, path, sizeof path);
    rc = swadiff("run --device host -q --invariance batch,bogus %s%s", path, "");
    cr_expect_eq(rc, 2, "exit %d:\n%s", rc, out);
    cr_expect(strstr(out, "--invariance batch,bogus") && strstr(out, "\"split\""), "%s", out);
    rc = swadiff("run --device host -q --invariance batch, %s%s", path, "");
    cr_expect_eq(rc, 2, "an empty item is refused too: exit %d:\n%s", rc, out);
}

/* Every result of the run in sub holds each named record in state `state`
 * with bitwise `held`; returns the number of records checked. */
static int expect_records(const cJSON *rep, const char *const *names, const char *state, bool held)
{
    int n = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(rep, "cases"))
    {
        cr_expect_str_eq(str(c, "outcome"), "passed", "%s %s: %s", str(c, "id"), str(c, "backend"), str(c, "message"));
        for (int i = 0; names[i]; i++) {
            const cJSON *v = record(c, names[i]);
            cr_assert(v, "%s %s: no %s record", str(c, "id"), str(c, "backend"), names[i]);
            cr_expect_str_eq(str(v, "state"), state, "%s %s %s: %s", str(c, "id"), str(c, "backend"), names[i],
                             str(v, "message"));
            cr_expect_eq(cJSON_IsTrue(cJSON_GetObjectItem(v, "bitwise")), held, "%s %s %s: bitwise", str(c, "id"),
                         str(c, "backend"), names[i]);
            cr_expect_gt(num(v, "total"), 0, "%s %s: compared something", str(c, "id"), names[i]);
            n++;
        }
    }
    return n;
}

Test(invariance, deterministic_builtins_hold_batch_and_page_order_bitwise)
{
    char path[512], text[4096];
    snprintf(text, sizeof text, "{\"cases\": [%s, %s]}", PREFILL4, DECODE4);
    write_file("four.json", text, path, sizeof path);
    char rep[600];
    snprintf(rep, sizeof rep, "%s/det", tmpdir);
    int rc = swadiff("run --device host -q --invariance all --deterministic --report %s %s", rep, path);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    cJSON *r = report_in("det");
    static const char *const held[] = {"batch.alone", "batch.reversed", "pages.order", NULL};
    cr_expect_eq(expect_records(r, held, "same", true), 4 * 3, "prefill, decode_fa2, decode_aiter, decode_auto");
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(r, "cases"))
    {
        const cJSON *d = cJSON_GetObjectItem(c, "declared");
        cr_expect_eq(cJSON_GetArraySize(d), 2, "%s declares deterministic and batch_invariant", str(c, "backend"));
        const cJSON *split = record(c, "split.on");
        bool knob = !strcmp(str(c, "backend"), "prefill") || !strcmp(str(c, "backend"), "decode_fa2");
        if (knob) /* forced on is another chunking than the mode's: measured either way */
            cr_expect(strcmp(str(split, "state"), "skipped") && cJSON_IsFalse(cJSON_GetObjectItem(split, "bitwise")),
                      "%s split.on runs and is measured: %s", str(c, "backend"), str(split, "state"));
        else
            cr_expect(strstr(str(split, "message"), "no split-KV knob"), "%s: %s", str(c, "backend"),
                      str(split, "message"));
        cr_expect(strstr(str(c, "reproduce"), "--invariance batch,pages,split --deterministic"), "%s",
                  str(c, "reproduce"));
    }
    cJSON_Delete(r);
}

Test(invariance, a_split_chosen_from_the_batch_is_measured_not_failed)
{
    /* 40 requests fill the 132 SMs the host plans for, so the batch is not
     * split; one of them alone underfills them and is: other bits, within
     * the tolerance */
    const char *text =
        "{\"name\": \"many\", \"requests\": [{\"qo_len\": 64, \"kv_len\": 1024, \"count\": 40}],"
        " \"num_qo_heads\": 8, \"num_kv_heads\": 8, \"head_dim\": 64, \"dtype\": \"bf16\", \"page_size\": 16,"
        " \"causal\": true, \"window_left\": -1, \"backends\": [\"prefill\"], \"invariance\": [\"batch\"]}";
    char path[512], rep[600];
    write_file("many.json", text, path, sizeof path);
    snprintf(rep, sizeof rep, "%s/many", tmpdir);
    int rc = swadiff("run --device host -q --report %s %s", rep, path);
    cr_assert_eq(rc, 0, "a measured difference is not a failure: exit %d:\n%s", rc, out);
    cr_expect(strstr(out, "Invariance:") && strstr(out, "measured: many/many prefill: batch.alone"),
              "the console lists the measured difference:\n%s", out);
    cJSON *r = report_in("many");
    const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "cases"), 0);
    const cJSON *v = record(c, "batch.alone");
    cr_assert(v);
    cr_expect_str_eq(str(v, "state"), "differs", "%s", str(v, "message"));
    cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(v, "bitwise")));
    cr_expect_gt(num(v, "elements"), 0);
    cr_expect_gt(num(v, "max_tol_ratio"), 0);
    cr_expect_lt(num(v, "max_tol_ratio"), 1, "the split is within the tolerance");
    cr_expect_eq(num(v, "runs"), 32, "at most 32 requests run alone");
    cr_expect(cJSON_IsObject(cJSON_GetObjectItem(v, "grid")), "a differing record carries its heatmap");
    cJSON_Delete(r);
    char html[700];
    snprintf(html, sizeof html, "grep -c 'invariance heatmap' '%s/report.html'", rep);
    cr_expect_eq(sh("%s", html), 0, "the HTML draws it:\n%s", out);
}

Test(invariance, a_declared_kernel_that_depends_on_the_batch_or_its_pages_fails)
{
    char path[512], rep[600], text[4096];
    snprintf(text, sizeof text, "{\"cases\": [%s]}", PREFILL4);
    write_file("p4.json", text, path, sizeof path);
    snprintf(rep, sizeof rep, "%s/batchy", tmpdir);
    char args[2048];
    snprintf(args, sizeof args, "run --device host -q --plugin %s --backend 'batchy:*' --invariance batch,pages "
             "--report %s %s", BATCHY, rep, path);
    int rc = sh("cd '%s' && '%s' %s", SWADIFF_SOURCE_DIR, SWADIFF_BINARY, args);
    cr_expect_eq(rc, 1, "exit %d:\n%s", rc, out);
    cJSON *r = report_in("batchy");
    int seen = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(r, "cases"))
    {
        const char *b = str(c, "backend");
        seen++;
        if (!strcmp(b, "batchy:batch_declared")) {
            cr_expect_str_eq(str(c, "outcome"), "failed", "%s", str(c, "message"));
            cr_expect(!strncmp(str(c, "diagnosis"), "[batch_variant]", 15), "%s", str(c, "diagnosis"));
            cr_expect(strstr(str(c, "message"), "batch.alone: 4 / "), "one element per request: %s",
                      str(c, "message"));
            cr_expect(strstr(str(c, "message"), "(r=0, row=0, pos=260, head=0, d=0)"), "the first element: %s",
                      str(c, "message"));
            cr_expect_str_eq(str(record(c, "pages.order"), "state"), "same", "its pages do not matter");
        } else if (!strcmp(b, "batchy:batch_measured")) {
            cr_expect_str_eq(str(c, "outcome"), "passed", "declaring nothing, it is measured: %s", str(c, "message"));
            const cJSON *v = record(c, "batch.alone");
            cr_expect_str_eq(str(v, "state"), "differs");
            cr_expect_eq(num(v, "elements"), 4);
            cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(v, "bitwise")));
        } else if (!strcmp(b, "batchy:pages_declared")) {
            cr_expect_str_eq(str(c, "outcome"), "failed", "%s", str(c, "message"));
            cr_expect_str_eq(str(record(c, "pages.order"), "state"), "differs", "another page order shows it");
            cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(record(c, "pages.order"), "bitwise")));
        } else if (!strcmp(b, "batchy:exact_declared")) {
            cr_expect_str_eq(str(c, "outcome"), "passed", "%s", str(c, "message"));
            static const char *const all[] = {"batch.alone", "batch.reversed", "pages.order", "pages.size", NULL};
            for (int i = 0; all[i]; i++)
                cr_expect_str_eq(str(record(c, all[i]), "state"), "same",
                                 "an exact kernel gives the same bits on every transformed case (%s): the harness "
                                 "handed it the same rows, keys and pages", all[i]);
        } else {
            cr_assert_fail("unexpected backend %s", b);
        }
    }
    cr_expect_eq(seen, 4);
    cr_expect(strstr(out, "[batch_variant]") || strstr(out, "Batch variance"), "the console says why:\n%s", out);
    /* the records survive a merge */
    char merged[700];
    snprintf(merged, sizeof merged, "cd '%s' && '%s' merge '%s/merged' '%s/report.json'", SWADIFF_SOURCE_DIR,
             SWADIFF_BINARY, tmpdir, rep);
    rc = sh("%s", merged);
    cr_expect_eq(rc, 1, "the merge keeps the failures: exit %d:\n%s", rc, out);
    cJSON *m = report_in("merged");
    const cJSON *a = cJSON_GetObjectItem(r, "cases"), *b = cJSON_GetObjectItem(m, "cases");
    cr_assert_eq(cJSON_GetArraySize(a), cJSON_GetArraySize(b));
    for (int i = 0; i < cJSON_GetArraySize(a); i++) {
        char *x = cJSON_PrintUnformatted(cJSON_GetObjectItem(cJSON_GetArrayItem(a, i), "invariance"));
        char *y = cJSON_PrintUnformatted(cJSON_GetObjectItem(cJSON_GetArrayItem(b, i), "invariance"));
        cr_expect_str_eq(x, y, "result %d: the invariance records after a merge", i);
        free(x);
        free(y);
    }
    cJSON_Delete(m);
    cJSON_Delete(r);
}

Test(invariance, transformations_that_cannot_apply_say_why)
{
    const char *text =
        "{\"cases\": [{\"name\": \"one\", \"requests\": [{\"qo_len\": 9, \"kv_len\": 80}], \"num_qo_heads\": 2,"
        " \"num_kv_heads\": 2, \"head_dim\": 64, \"dtype\": \"fp16\", \"kv_mode\": \"ragged\", \"causal\": true,"
        " \"window_left\": 15, \"backends\": [\"prefill\"], \"invariance\": [\"batch\", \"pages\", \"split\"]}]}";
    char path[512], rep[600];
    write_file("one.json", text, path, sizeof path);
    snprintf(rep, sizeof rep, "%s/one", tmpdir);
    int rc = swadiff("run --device host -q --report %s %s", rep, path);
    cr_assert_eq(rc, 0, "skips of transformations are not failures: exit %d:\n%s", rc, out);
    cJSON *r = report_in("one");
    const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "cases"), 0);
    cr_expect(strstr(str(record(c, "batch.alone"), "message"), "one request"));
    cr_expect(strstr(str(record(c, "batch.reversed"), "message"), "one request"));
    cr_expect(strstr(str(record(c, "pages.order"), "message"), "ragged"));
    cr_expect(strstr(str(record(c, "pages.size"), "message"), "ragged"));
    cr_expect_str_eq(str(record(c, "split.off"), "state"), "same", "a short request is not split: forced off is the "
                     "same plan");
    cJSON_Delete(r);
}

Test(invariance, repeat_measures_a_backend_that_declares_no_determinism)
{
    char rep[600];
    snprintf(rep, sizeof rep, "%s/rep", tmpdir);
    int rc = swadiff("run --device host -q --repeat 3 --plugin " FLAKY " --backend flaky:one_bit_measured "
                     "--report %s tests/data/cli/five.json%s", rep, "");
    cr_expect_eq(rc, 0, "measured, not judged: exit %d:\n%s", rc, out);
    cJSON *r = report_in("rep");
    const cJSON *c;
    int n = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(r, "cases"))
    {
        n++;
        cr_expect_str_eq(str(c, "outcome"), "passed");
        cr_expect(cJSON_IsObject(cJSON_GetObjectItem(c, "nondeterministic")), "the differences are recorded");
        cr_expect(strstr(str(c, "message"), "does not declare itself deterministic"), "%s", str(c, "message"));
    }
    cr_expect_eq(n, 5);
    cJSON_Delete(r);
}
