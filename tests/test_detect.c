/* test_detect.c — detection power on the host device: the seed-000
 * reproduction figures, `explain` naming the right hypothesis for each
 * mutant of bug classes 1-5 and 8 (docs/bugs.md), and a diagnosis that does
 * not mislead: hypotheses restricted to what the backend could do, ties
 * reported as ambiguous, nothing named that fits worse than the spec.
 *
 * Each test builds a case from inline JSON (the real loader), runs the
 * backend through the same pipeline as `swadiff run` (swa_run_one) with and
 * without the mutant, and asserts on the comparison and on swa_explain. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "harness/case_load.h"
#include "tests/test_case_util.h"
#include "harness/explain.h"
#include "harness/run.h"

static swa_case_list load(const char *json) { return load_inline_case("inline.json", json); }

typedef struct outcome {
    swa_result r;
    swa_explanation ex;
} outcome;

/* Runs backend b of the case's first expansion under mutant m; explains
 * failures.  The result's comparison stays in o->r (caller frees). */
static void run_case(const char *json, const char *backend, swa_mutant m, outcome *o)
{
    swa_case_list list = load(json);
    const swa_device_ops *host = swa_device_get(SWA_DEVICE_HOST);
    swa_run_config cfg = {.device = host, .mutant = m, .quiet = true, .no_isolate = true, .argv0 = "swadiff"};
    swa_case_ctx ctx;
    swa_error err = {0};
    cr_assert_eq(swa_case_ctx_init(&ctx, &list.cases[0], host, &err), SWA_OK, "%s", err.message);
    void *out = NULL;
    float *lse = NULL;
    const swa_backend *b = swa_backend_by_name(backend);
    cr_assert(b);
    swa_run_one(&cfg, &ctx, b, &o->r, &out, &lse);
    memset(&o->ex, 0, sizeof o->ex);
    o->ex.best = -1;
    if (o->r.outcome == SWA_OUTCOME_FAILED && out) {
        cr_assert_eq(swa_explain_backend(&ctx, &o->r.tol, backend, out, lse, b->lse_base, &o->ex, &err), SWA_OK,
                     "%s", err.message);
    }
    free(out);
    free(lse);
    swa_case_ctx_free(&ctx);
    swa_case_list_free(&list);
}

/* Seed 000: extend lengths 6/8/12, window 4, no prefix, paged. */
static const char *SEED000 =
    "{\"name\": \"seed000\", \"requests\": [{\"qo_len\": 6, \"kv_len\": 6}, {\"qo_len\": 8, \"kv_len\": 8},"
    " {\"qo_len\": 12, \"kv_len\": 12}], \"num_qo_heads\": 4, \"num_kv_heads\": 1, \"head_dim\": 128,"
    " \"dtype\": \"bf16\", \"page_size\": 16, \"window_left\": 4, \"backends\": [\"prefill\"], \"seed\": 0}";

Test(detect, seed000_unmutated_is_exact_within_tolerance)
{
    outcome o;
    run_case(SEED000, "prefill", SWA_MUTANT_NONE, &o);
    cr_assert_eq(o.r.outcome, SWA_OUTCOME_PASSED, "%s", o.r.message);
    cr_assert_eq(o.r.cmp.mismatched, 0);
    swa_compare_result_free(&o.r.cmp);
}

Test(detect, seed000_mask_compiled_out_reproduces_the_report)
{
    outcome o;
    run_case(SEED000, "prefill", SWA_MUTANT_MASK_COMPILED_OUT, &o);
    swa_compare_result *c = &o.r.cmp;
    cr_assert_eq(o.r.outcome, SWA_OUTCOME_FAILED);
    /* the seed saw 30.3% mismatched and max abs diff 0.40 against tol 0.03 */
    cr_assert_geq(c->ratio, 0.10, "mismatch ratio %.3f, expected >= 10%%", c->ratio);
    cr_assert_gt(c->max_abs_diff, 0.1, "max abs diff %.3f", c->max_abs_diff);
    /* rows inside the first window (p <= L: the window does not bind) are exact */
    cr_assert_eq(c->window_free.mismatched, 0, "%lld mismatches in rows where the window does not bind",
                 c->window_free.mismatched);
    cr_assert_gt(c->window_free.count, 0);
    /* every mismatch is in rows past the window edge */
    cr_assert_eq(c->window_binds.mismatched, c->mismatched);
    /* the row nearest past the edge (distance 1) already breaks */
    cr_assert_gt(c->past_edge[0].mismatched, 0);
    /* with no prefix and every request inside one query tile, the missing
     * mask and "no window" are the same mask: the verdict must say it is
     * ambiguous and name both, the KV-start-skip explanation among them */
    cr_assert(o.ex.exact, "diagnosis not exact: %s", o.ex.verdict);
    cr_assert(o.ex.ambiguous, "two masks fit exactly, but the diagnosis is not ambiguous: %s", o.ex.verdict);
    cr_assert(strstr(o.ex.tied, "tile_granular_start") && strstr(o.ex.tied, "no_window"), "tied: %s", o.ex.tied);
    cr_assert(strstr(o.ex.verdict, "ambiguous") && strstr(o.ex.verdict, "tile_granular_start"), "diagnosis: %s",
              o.ex.verdict);
    swa_compare_result_free(&o.r.cmp);
}

/* Inline arrays, not pointers: Criterion may run each parameter in a fresh
 * process image where static addresses differ. */
typedef struct explain_param {
    char mutant[32];
    char backend[16];
    char json[512];
    char hypothesis[32];
} explain_param;

#define PREFILL_PREFIX(L, extra)                                                                           \
    "{\"name\": \"p\", \"requests\": [{\"qo_len\": 16, \"kv_len\": 48}, {\"qo_len\": 5, \"kv_len\": 30}],"     \
    " \"num_qo_heads\": 4, \"num_kv_heads\": 2, \"head_dim\": 64, \"dtype\": \"fp16\", \"page_size\": 16,"   \
    " \"window_left\": " #L ", \"backends\": [\"prefill\"], \"seed\": 3" extra "}"
#define AITER(L, kv, extra)                                                                                \
    "{\"name\": \"a\", \"requests\": [{\"qo_len\": 1, \"kv_len\": " #kv ", \"count\": 3}],"                  \
    " \"num_qo_heads\": 8, \"num_kv_heads\": 2, \"head_dim\": 128, \"dtype\": \"fp16\", \"page_size\": 16,"  \
    " \"window_left\": " #L ", \"backends\": [\"decode_aiter\"], \"seed\": 5" extra "}"

static explain_param EXPLAIN_PARAMS[] = {
    /* a long prefix: the tile's KV-start skip lands past key 0, so the
     * missing mask differs from "no window" */
    {"mask_compiled_out", "prefill",
     "{\"name\": \"m\", \"requests\": [{\"qo_len\": 16, \"kv_len\": 300}, {\"qo_len\": 40, \"kv_len\": 200}],"
     " \"num_qo_heads\": 4, \"num_kv_heads\": 2, \"head_dim\": 64, \"dtype\": \"fp16\", \"page_size\": 16,"
     " \"window_left\": 6, \"backends\": [\"prefill\"], \"seed\": 3}",
     "tile_granular_start"},
    {"aiter_s_eq_l", "decode_aiter", AITER(31, 256, ""), "window_l_minus_1"},
    {"aiter_l0_sentinel", "decode_aiter", AITER(0, 64, ""), "no_window"},
    {"left_bound_gt", "prefill", PREFILL_PREFIX(6, ""), "window_l_minus_1"},
    {"left_bound_minus1", "prefill", PREFILL_PREFIX(6, ""), "window_l_plus_1"},
    {"top_left_align", "prefill", PREFILL_PREFIX(6, ""), "top_left"},
    {"request_anchored", "prefill", PREFILL_PREFIX(6, ""), "request_anchored"},
    {"softcap_before_mask", "decode_aiter", AITER(31, 256, ", \"soft_cap\": 1.0"), "softcap_before_mask"},
    {"softcap_compiled_out", "prefill", PREFILL_PREFIX(6, ", \"soft_cap\": 1.0"), "softcap_missing"},
};

ParameterizedTestParameters(detect, explain_names_the_mutant)
{
    return cr_make_param_array(explain_param, EXPLAIN_PARAMS, sizeof EXPLAIN_PARAMS / sizeof EXPLAIN_PARAMS[0]);
}

ParameterizedTest(explain_param *p, detect, explain_names_the_mutant)
{
    swa_mutant m = swa_mutant_by_name(p->mutant);
    cr_assert_neq(m, SWA_MUTANT_COUNT, "unknown mutant %s", p->mutant);
    outcome base;
    run_case(p->json, p->backend, SWA_MUTANT_NONE, &base);
    cr_assert_eq(base.r.outcome, SWA_OUTCOME_PASSED, "%s unmutated: %s", p->mutant, base.r.message);
    swa_compare_result_free(&base.r.cmp);

    outcome o;
    run_case(p->json, p->backend, m, &o);
    cr_assert_eq(o.r.outcome, SWA_OUTCOME_FAILED, "mutant %s survived: %s", p->mutant, o.r.message);
    cr_assert_geq(o.ex.best, 0, "mutant %s: no hypothesis (%s)", p->mutant, o.ex.verdict);
    /* names may carry parameters after ':' (tile_granular_start:q16,kv64) */
    cr_assert(!strncmp(o.ex.scores[o.ex.best].name, p->hypothesis, strlen(p->hypothesis)),
              "mutant %s: expected %s, diagnosis %s", p->mutant, p->hypothesis, o.ex.verdict);
    cr_assert(o.ex.exact, "mutant %s: best hypothesis %s matches only partially: %s", p->mutant,
              p->hypothesis, o.ex.verdict);
    swa_compare_result_free(&o.r.cmp);
}

Test(detect, diagnosis_reaches_the_result)
{
    /* the run loop attaches the verdict to failing results */
    swa_case_list list = load(SEED000);
    const swa_device_ops *host = swa_device_get(SWA_DEVICE_HOST);
    swa_run_config cfg = {.device = host, .mutant = SWA_MUTANT_MASK_COMPILED_OUT, .quiet = true,
                          .no_isolate = true, .explain_failures = true, .argv0 = "swadiff"};
    swa_run_results rr = {0};
    int sel = 0;
    int rc = swa_run_selected(&cfg, &list, &sel, 1, NULL, &rr);
    cr_assert_eq(rc, SWA_EXIT_MISMATCH);
    cr_assert_eq(rr.count, 1);
    cr_assert(strstr(rr.items[0].diagnosis, "tile_granular_start") != NULL ||
                  strstr(rr.items[0].diagnosis, "KV-start skip") != NULL,
              "diagnosis: %s", rr.items[0].diagnosis);
    cr_assert(strstr(rr.items[0].reproduce, "--mutant mask_compiled_out") != NULL, "%s", rr.items[0].reproduce);
    swa_run_results_free(&rr);
    swa_case_list_free(&list);
}

/* A case can pin a refusal: decode_aiter must refuse CUDA-graph mode at plan
 * time; with expect_error the refusal passes, without it it is an error that
 * names the cause and the remedy, and a backend that runs anyway fails. */
#define GRAPH_CASE(backend, expect)                                                                      \
    "{\"name\": \"g\", \"requests\": [{\"qo_len\": 1, \"kv_len\": 40, \"count\": 3}], \"num_qo_heads\": 4," \
    " \"num_kv_heads\": 1, \"head_dim\": 64, \"dtype\": \"fp16\", \"window_left\": 7, \"cuda_graph\": true," \
    " \"graph_capture_requests\": 1, \"backends\": [\"" backend "\"]" expect "}"

Test(detect, expected_refusal_passes_and_unexpected_one_is_an_error)
{
    outcome o;
    run_case(GRAPH_CASE("decode_aiter", ", \"expect_error\": \"CUDA-graph\""), "decode_aiter", SWA_MUTANT_NONE, &o);
    cr_assert_eq(o.r.outcome, SWA_OUTCOME_PASSED, "%s", o.r.message);
    run_case(GRAPH_CASE("decode_aiter", ""), "decode_aiter", SWA_MUTANT_NONE, &o);
    cr_assert_eq(o.r.outcome, SWA_OUTCOME_ERROR);
    cr_assert(strstr(o.r.message, "CUDA-graph") && strstr(o.r.message, "decode_fa2"),
              "the refusal must name the cause and the remedy: %s", o.r.message);
    run_case(GRAPH_CASE("decode_fa2", ", \"expect_error\": \"CUDA-graph\""), "decode_fa2", SWA_MUTANT_NONE, &o);
    cr_assert_eq(o.r.outcome, SWA_OUTCOME_FAILED, "decode_fa2 supports CUDA graphs: %s", o.r.message);
    swa_compare_result_free(&o.r.cmp);
}

/* ------------------------------------------------------------------------
 * A diagnosis that does not mislead. */

static bool has_family(const swa_explanation *ex, const char *family)
{
    for (int i = 0; i < ex->count; i++)
        if (!strncmp(ex->scores[i].name, family, strlen(family)))
            return true;
    return false;
}

/* Explains the output of backend `ran` under mutant m as if it came from
 * backend `as` (a built-in name or "NS:BACKEND"). */
static void explain_as(const char *json, const char *ran, swa_mutant m, const char *as, swa_explanation *ex)
{
    swa_case_list list = load(json);
    const swa_device_ops *host = swa_device_get(SWA_DEVICE_HOST);
    swa_run_config cfg = {.device = host, .mutant = m, .quiet = true, .no_isolate = true, .argv0 = "swadiff"};
    swa_case_ctx ctx;
    swa_error err = {0};
    cr_assert_eq(swa_case_ctx_init(&ctx, &list.cases[0], host, &err), SWA_OK, "%s", err.message);
    const swa_backend *b = swa_backend_by_name(ran);
    swa_result r;
    void *out = NULL;
    float *lse = NULL;
    swa_run_one(&cfg, &ctx, b, &r, &out, &lse);
    cr_assert_eq(r.outcome, SWA_OUTCOME_FAILED, "%s", r.message);
    cr_assert_eq(swa_explain_backend(&ctx, &r.tol, as, out, lse, b->lse_base, ex, &err), SWA_OK, "%s", err.message);
    free(out);
    free(lse);
    swa_compare_result_free(&r.cmp);
    swa_case_ctx_free(&ctx);
    swa_case_list_free(&list);
}

Test(detect, prefill_gets_no_aiter_hypothesis)
{
    /* window 0 and a soft cap: the two places where AITER's quirks would
     * otherwise be offered (the sliding_window = 0 sentinel, the soft cap
     * before the mask) */
    swa_explanation ex;
    explain_as(PREFILL_PREFIX(0, ", \"soft_cap\": 1.0"), "prefill", SWA_MUTANT_LEFT_BOUND_MINUS1, "prefill", &ex);
    cr_assert(!has_family(&ex, "softcap_before_mask"), "prefill offered the AITER soft-cap quirk: %s", ex.verdict);
    for (int i = 0; i < ex.count; i++)
        cr_assert(!strstr(ex.scores[i].description, "AITER"), "prefill hypothesis %s: %s", ex.scores[i].name,
                  ex.scores[i].description);
    cr_assert(has_family(&ex, "tile_granular_start") && has_family(&ex, "request_anchored"));
    cr_assert(ex.best >= 0 && !strcmp(ex.scores[ex.best].name, "window_l_plus_1"), "%s", ex.verdict);
}

Test(detect, decode_hypotheses_follow_the_backend)
{
    /* the AITER-style decode at window 0: the sentinel is a real suspect */
    swa_explanation ex;
    explain_as(AITER(0, 64, ", \"soft_cap\": 1.0"), "decode_aiter", SWA_MUTANT_AITER_L0_SENTINEL, "decode_aiter",
               &ex);
    cr_assert(ex.best >= 0 && !strcmp(ex.scores[ex.best].name, "no_window"), "%s", ex.verdict);
    cr_assert(strstr(ex.verdict, "sentinel"), "%s", ex.verdict);
    cr_assert(has_family(&ex, "softcap_before_mask"));
    /* no query tiles, no per-row anchors, no alignment in a decode kernel */
    cr_assert(!has_family(&ex, "tile_granular_start") && !has_family(&ex, "request_anchored") &&
              !has_family(&ex, "top_left"), "decode offered prefill-only hypotheses");

    /* the same output blamed on the FA2-style decode: no AITER wording,
     * no AITER soft-cap quirk */
    explain_as(AITER(0, 64, ", \"soft_cap\": 1.0"), "decode_aiter", SWA_MUTANT_AITER_L0_SENTINEL, "decode_fa2", &ex);
    cr_assert(ex.best >= 0 && !strcmp(ex.scores[ex.best].name, "no_window"), "%s", ex.verdict);
    cr_assert(!strstr(ex.verdict, "AITER") && !strstr(ex.verdict, "sentinel"), "%s", ex.verdict);
    cr_assert(!has_family(&ex, "softcap_before_mask"));
    /* decode_auto may route to either */
    explain_as(AITER(0, 64, ", \"soft_cap\": 1.0"), "decode_aiter", SWA_MUTANT_AITER_L0_SENTINEL, "decode_auto", &ex);
    cr_assert(strstr(ex.verdict, "sentinel") && has_family(&ex, "softcap_before_mask"), "%s", ex.verdict);
}

/* An external backend is a black box: it gets the generic hypotheses and
 * the prefill mask ones (a black-box prefill can skip KV tiles or anchor its
 * window; the real FlashInfer's seed-000 failure is only explained so, with
 * an exact tile start), never the AITER or FA2-decode quirks. */
Test(detect, external_backends_get_generic_and_prefill_hypotheses)
{
    swa_explanation ex;
    explain_as(PREFILL_PREFIX(6, ", \"soft_cap\": 1.0"), "prefill", SWA_MUTANT_LEFT_BOUND_GT, "mylib:flash", &ex);
    static const char *allowed[] = {"window_l_minus_1", "window_l_plus_1", "no_window", "top_left",
                                    "softcap_before_mask", "softcap_missing", "tile_granular_start",
                                    "request_anchored"};
    bool exact_start = false;
    for (int i = 0; i < ex.count; i++) {
        bool ok = false;
        for (size_t g = 0; g < sizeof allowed / sizeof allowed[0]; g++)
            ok |= !strncmp(ex.scores[i].name, allowed[g], strlen(allowed[g]));
        cr_assert(ok, "external backend offered %s", ex.scores[i].name);
        cr_assert(!strstr(ex.scores[i].description, "AITER"), "external hypothesis %s names AITER: %s",
                  ex.scores[i].name, ex.scores[i].description);
        size_t len = strlen(ex.scores[i].name);
        exact_start |= len > 4 && !strcmp(ex.scores[i].name + len - 4, ",kv1");
    }
    cr_assert(exact_start, "an external prefill gets the exact-start tile variant");
    cr_assert(has_family(&ex, "request_anchored"));
    cr_assert(ex.best >= 0 && !strcmp(ex.scores[ex.best].name, "window_l_minus_1"), "%s", ex.verdict);
    cr_assert(ex.exact && !ex.ambiguous, "%s", ex.verdict);

    /* swadiff's own prefill aligns its KV start: no exact-start variant there */
    explain_as(PREFILL_PREFIX(6, ""), "prefill", SWA_MUTANT_LEFT_BOUND_GT, "prefill", &ex);
    for (int i = 0; i < ex.count; i++) {
        size_t len = strlen(ex.scores[i].name);
        cr_assert(!(len > 4 && !strcmp(ex.scores[i].name + len - 4, ",kv1")), "built-in prefill offered %s",
                  ex.scores[i].name);
    }
}

/* An output that is the spec's answer with one corrupted element: every
 * mask variant fits worse than the spec (or no better), so none may be
 * named "best", and the verdict must say so. */
Test(detect, nothing_named_that_fits_worse_than_the_spec)
{
    swa_case_list list = load(PREFILL_PREFIX(6, ""));
    const swa_case *c = &list.cases[0];
    const swa_device_ops *host = swa_device_get(SWA_DEVICE_HOST);
    swa_case_ctx ctx;
    swa_error err = {0};
    cr_assert_eq(swa_case_ctx_init(&ctx, c, host, &err), SWA_OK, "%s", err.message);
    size_t n = (size_t)ctx.in.total_qo * c->num_qo_heads * c->head_dim;
    void *out = malloc(n * swa_dtype_size(c->dtype));
    cr_assert(out);
    for (size_t i = 0; i < n; i++)
        swa_store(c->dtype, out, i, (float)ctx.ref_out[i]);
    swa_store(c->dtype, out, n / 2, (float)ctx.ref_out[n / 2] + 3.0f); /* a data-path glitch */
    swa_tolerance tol = swa_tolerance_resolve(c);
    swa_explanation ex;
    cr_assert_eq(swa_explain_backend(&ctx, &tol, "prefill", out, NULL, 2.0, &ex, &err), SWA_OK, "%s", err.message);
    cr_assert_gt(ex.spec_ratio, 0);
    cr_assert_eq(ex.best, -1, "named %s (%.4f) against the spec's %.4f: %s",
                 ex.best >= 0 ? ex.scores[ex.best].name : "-", ex.best >= 0 ? ex.scores[ex.best].ratio : 0,
                 ex.spec_ratio, ex.verdict);
    cr_assert(strstr(ex.verdict, "no mask hypothesis fits better than the spec"), "%s", ex.verdict);
    for (int i = 0; i < ex.count; i++)
        cr_assert_geq(ex.scores[i].ratio, ex.spec_ratio, "%s fits better than the spec", ex.scores[i].name);

    /* and whenever something is named, it fits strictly better than the
     * spec: every mutant of the explain table */
    free(out);
    swa_case_ctx_free(&ctx);
    swa_case_list_free(&list);
    for (size_t i = 0; i < sizeof EXPLAIN_PARAMS / sizeof EXPLAIN_PARAMS[0]; i++) {
        outcome o;
        run_case(EXPLAIN_PARAMS[i].json, EXPLAIN_PARAMS[i].backend, swa_mutant_by_name(EXPLAIN_PARAMS[i].mutant), &o);
        cr_assert(o.ex.best < 0 || o.ex.scores[o.ex.best].ratio < o.ex.spec_ratio, "%s: %s",
                  EXPLAIN_PARAMS[i].mutant, o.ex.verdict);
        swa_compare_result_free(&o.r.cmp);
    }
}
