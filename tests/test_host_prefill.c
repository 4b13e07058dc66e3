/* test_host_prefill.c — the prefill backend run on the host emulation
 * against a double-precision attention loop (tests/test_backend_fixture.h),
 * over window-edge cases (seed 000's extends 6/8/12 with window 4, with and
 * without prefix, the long no-prefix case), GQA, soft cap, non-causal,
 * ragged vs paged, both layouts, odd page sizes, split-KV; and every
 * prefill mutant changing the output where it should.
 *
 *   ctest --test-dir build -R test_host_prefill --output-on-failure */
#include <criterion/criterion.h>

/* the case tables leave trailing fields at their zero defaults */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#include "backends/prefill.h"
#include "tests/test_backend_fixture.h"

typedef struct prefill_e2e {
    const char *name;
    int num_requests;
    int qo_len[3], kv_len[3];
    int hq, hk, head_dim, page_size, window_left;
    swa_dtype dtype;
    swa_layout layout;
    swa_kv_mode kv_mode;
    bool noncausal;
    double soft_cap;
} prefill_e2e;

static const prefill_e2e e2e_cases[] = {
    {"seed000 extend 6/8/12 window 4 with prefix", 3, {6, 8, 12}, {20, 37, 12}, 4, 4, 64, 16, 4, SWA_DTYPE_FP16},
    {"seed000 extend 6/8/12 window 4 no prefix", 3, {6, 8, 12}, {6, 8, 12}, 4, 4, 64, 16, 4, SWA_DTYPE_BF16},
    {"long no-prefix above window", 1, {100}, {100}, 2, 2, 128, 16, 4, SWA_DTYPE_FP16},
    {"window 0 (one key)", 2, {9, 3}, {9, 40}, 4, 2, 64, 5, 0, SWA_DTYPE_FP16},
    {"no window GQA 8/2", 2, {17, 33}, {50, 33}, 8, 2, 64, 16, -1, SWA_DTYPE_BF16},
    {"window saturated", 1, {20}, {30}, 4, 4, 64, 1, 1000, SWA_DTYPE_FP16},
    {"HND page 7 window 31", 2, {40, 70}, {90, 70}, 4, 1, 128, 7, 31, SWA_DTYPE_FP16, SWA_LAYOUT_HND},
    {"ragged window 4", 3, {6, 8, 12}, {20, 37, 12}, 4, 4, 64, 16, 4, SWA_DTYPE_FP16, SWA_LAYOUT_NHD, SWA_KV_RAGGED},
    {"non-causal window 5", 2, {10, 7}, {30, 7}, 2, 2, 64, 16, 5, SWA_DTYPE_FP16, SWA_LAYOUT_NHD, SWA_KV_PAGED, true},
    {"soft cap 50 window 16", 1, {48}, {80}, 4, 2, 64, 16, 16, SWA_DTYPE_BF16, SWA_LAYOUT_NHD, SWA_KV_PAGED, false, 50},
    {"soft cap 2 window 16", 1, {48}, {80}, 4, 2, 64, 16, 16, SWA_DTYPE_FP16, SWA_LAYOUT_NHD, SWA_KV_PAGED, false, 2},
    {"head_dim 256 split long KV", 1, {24}, {1500}, 4, 1, 256, 16, 512, SWA_DTYPE_BF16},
    {"split no window", 1, {16}, {2000}, 2, 2, 64, 16, -1, SWA_DTYPE_FP16},
};

static void setup_case(fx *f, const prefill_e2e *t)
{
    fx_spec s = {.num_requests = t->num_requests, .qo_len = t->qo_len, .kv_len = t->kv_len,
                 .num_qo_heads = t->hq, .num_kv_heads = t->hk, .head_dim = t->head_dim, .dtype = t->dtype,
                 .page_size = t->page_size, .layout = t->layout, .kv_mode = t->kv_mode,
                 .noncausal = t->noncausal, .window_left = t->window_left, .soft_cap = t->soft_cap};
    fx_setup(f, &s);
}

Test(host_prefill, matches_double_reference)
{
    for (size_t n = 0; n < sizeof e2e_cases / sizeof e2e_cases[0]; n++) {
        const prefill_e2e *t = &e2e_cases[n];
        fx f;
        setup_case(&f, t);
        swa_error err = {0};
        swa_status st = fx_run(&f, &swa_backend_prefill, SWA_MUTANT_NONE, true, &err);
        cr_assert_eq(st, SWA_OK, "%s: run failed: %s", t->name, err.message);
        double tol = fx_tol(t->dtype), worst;
        long bad = fx_out_mismatches(&f, tol, tol, &worst);
        cr_expect_eq(bad, 0, "%s (%s, L=%d): %ld of %zu elements off, max abs err %g (tol %g)", t->name,
                     swa_dtype_name(t->dtype), t->window_left, bad, f.out_elems, worst, tol);
        long lbad = fx_lse_mismatches(&f, 2.0, 1e-2);
        cr_expect_eq(lbad, 0, "%s: %ld of %zu LSE values off", t->name, lbad, f.lse_elems);
        cr_expect(fx_guards_ok(&f), "%s: guard bytes written", t->name);
        fx_teardown(&f);
    }
}

Test(host_prefill, split_plan_matches_unsplit_result)
{
    /* the head_dim-256 case splits on a 132-SM target; forcing one SM per
     * CTA-wave off (num_sms 1) gives the unsplit plan: both must agree */
    const prefill_e2e *t = &e2e_cases[11];
    fx f;
    setup_case(&f, t);
    swa_plan_opts o = fx_opts(&f, SWA_MUTANT_NONE);
    swa_prefill_plan *split, *whole;
    swa_error err = {0};
    cr_assert_eq(swa_prefill_plan_build(&f.c, &o, &split, &err), SWA_OK, "%s", err.message);
    o.num_sms = 1;
    cr_assert_eq(swa_prefill_plan_build(&f.c, &o, &whole, &err), SWA_OK, "%s", err.message);
    cr_assert(split->split_kv, "expected a split for 24x4 packed rows over 1500 keys on 132 SMs");
    cr_assert(!whole->split_kv, "expected no split when 1 SM is the target");
    cr_assert_eq(swa_host_run_prefill(split, &f.in, &f.o, true, &err), SWA_OK, "%s", err.message);
    cr_expect_eq(fx_out_mismatches(&f, fx_tol(t->dtype), fx_tol(t->dtype), NULL), 0, "split run vs reference");
    fx_out_reset(&f);
    cr_assert_eq(swa_host_run_prefill(whole, &f.in, &f.o, true, &err), SWA_OK, "%s", err.message);
    cr_expect_eq(fx_out_mismatches(&f, fx_tol(t->dtype), fx_tol(t->dtype), NULL), 0, "unsplit run vs reference");
    swa_prefill_plan_free(split);
    swa_prefill_plan_free(whole);
    fx_teardown(&f);
}

/* ------------------------------------------------------------------------
 * Mutants: each must break a case where it should, and leave the output
 * intact where it must not matter. */

typedef struct mutant_case {
    swa_mutant mutant;
    size_t e2e_index;     /* case it must break */
    bool check_lse_only;  /* the mutant only changes the LSE */
} mutant_case;

static const mutant_case killers[] = {
    {SWA_MUTANT_MASK_COMPILED_OUT, 0},
    {SWA_MUTANT_MASK_COMPILED_OUT, 2},
    {SWA_MUTANT_LEFT_BOUND_GT, 0},
    {SWA_MUTANT_LEFT_BOUND_MINUS1, 0},
    {SWA_MUTANT_TOP_LEFT_ALIGN, 0},
    {SWA_MUTANT_REQUEST_ANCHORED, 2},
    {SWA_MUTANT_SOFTCAP_COMPILED_OUT, 10},
    {SWA_MUTANT_LSE_WRONG_BASE, 0, true},
    {SWA_MUTANT_LSE_MERGE_DROPPED, 12},
    {SWA_MUTANT_GQA_MOD_MAPPING, 4},
    {SWA_MUTANT_SPLIT_LAST_CHUNK_DROPPED, 12},
};

Test(host_prefill, each_mutant_changes_the_output)
{
    for (size_t n = 0; n < sizeof killers / sizeof killers[0]; n++) {
        const mutant_case *k = &killers[n];
        const prefill_e2e *t = &e2e_cases[k->e2e_index];
        const char *name = swa_mutant_get(k->mutant)->name;
        fx f;
        setup_case(&f, t);
        swa_error err = {0};
        swa_status st = fx_run(&f, &swa_backend_prefill, k->mutant, true, &err);
        cr_assert_eq(st, SWA_OK, "mutant %s on %s: run failed: %s", name, t->name, err.message);
        double tol = fx_tol(t->dtype);
        long bad = k->check_lse_only ? fx_lse_mismatches(&f, 2.0, 1e-2) : fx_out_mismatches(&f, tol, tol, NULL);
        cr_expect_gt(bad, 0, "mutant %s left %s unchanged (%s: %ld elements off)", name, t->name,
                     k->check_lse_only ? "LSE" : "output", bad);
        fx_teardown(&f);
    }
}

Test(host_prefill, window_mutants_harmless_without_window)
{
    /* window-only bugs must not fire when there is no window */
    static const swa_mutant window_only[] = {SWA_MUTANT_MASK_COMPILED_OUT, SWA_MUTANT_LEFT_BOUND_GT,
                                             SWA_MUTANT_LEFT_BOUND_MINUS1, SWA_MUTANT_REQUEST_ANCHORED};
    const prefill_e2e *t = &e2e_cases[4]; /* no window */
    for (size_t n = 0; n < sizeof window_only / sizeof window_only[0]; n++) {
        fx f;
        setup_case(&f, t);
        swa_error err = {0};
        cr_assert_eq(fx_run(&f, &swa_backend_prefill, window_only[n], true, &err), SWA_OK, "%s", err.message);
        double tol = fx_tol(t->dtype);
        cr_expect_eq(fx_out_mismatches(&f, tol, tol, NULL), 0, "mutant %s changed a no-window case",
                     swa_mutant_get(window_only[n])->name);
        fx_teardown(&f);
    }
}

Test(host_prefill, mask_compiled_out_leaks_only_past_the_window)
{
    /* seed 000's signature: inside a tile, rows whose window starts after
     * the tile's KV-start see stale keys; the first row of each tile (and
     * rows whose window reaches key 0) stay right. */
    const prefill_e2e *t = &e2e_cases[2]; /* 100 rows in one 128-row tile, window 4 */
    fx f;
    setup_case(&f, t);
    swa_error err = {0};
    cr_assert_eq(fx_run(&f, &swa_backend_prefill, SWA_MUTANT_MASK_COMPILED_OUT, false, &err), SWA_OK, "%s",
                 err.message);
    int D = f.c.head_dim, Hq = f.c.num_qo_heads;
    double tol = fx_tol(t->dtype);
    for (int i = 0; i < 5; i++) /* p - L <= 0: the window covers every key */
        for (int e = 0; e < D * Hq; e++) {
            size_t idx = (size_t)i * Hq * D + e;
            cr_assert_leq(fabs(swa_load(f.c.dtype, f.o.out, idx) - f.ref_out[idx]), tol + tol * fabs(f.ref_out[idx]),
                          "row %d (inside the window) changed under mask_compiled_out", i);
        }
    long bad = fx_out_mismatches(&f, tol, tol, NULL);
    cr_expect_gt(bad, (long)(f.out_elems / 4), "expected most rows past the window to leak, got %ld of %zu", bad,
                 f.out_elems);
    fx_teardown(&f);
}

/* ------------------------------------------------------------------------
 * Rows with no visible key (docs/spec.md): output 0, LSE -inf, never NaN —
 * in the direct write, in a partial, and through the merge. */

#include "backends/host/host_attend.h"

Test(host_prefill, rows_without_visible_keys_give_zero_and_minus_inf)
{
    enum { D = 4 };
    host_softmax_cfg cfg = {.head_dim = D, .dtype = SWA_DTYPE_FP16, .sm_scale = 0.5f, .round_p = true};
    host_row row;
    host_row_init(&row, D);
    row.out_row = 0;
    row.qo_head = 0;
    row.range = (swa_key_range){.lo = 10, .hi = 20}; /* keys 0..1 are outside */
    for (int e = 0; e < D; e++)
        row.q[e] = 1.0f;
    float k_tile[2 * D], v_tile[2 * D], scores[2];
    for (int e = 0; e < 2 * D; e++)
        k_tile[e] = v_tile[e] = 1.0f;
    host_attend_tile(&row, 1, k_tile, v_tile, 0, 2, &cfg, scores);
    cr_expect_eq(row.d, 0.0f, "masked keys must not add to d");

    uint16_t out[D];
    float lse = 0;
    host_row_store(&row, &cfg, 1, out, &lse, SWA_MUTANT_NONE);
    for (int e = 0; e < D; e++)
        cr_expect_eq(swa_fp16_to_f32(out[e]), 0.0f, "out[%d] = %g", e, swa_fp16_to_f32(out[e]));
    cr_expect(isinf(lse) && lse < 0, "lse = %g", lse);

    /* partials: slot 0 empty, slot 1 holds a real state */
    float o_part[2 * D], lse_part[2];
    host_row_store_partial(&row, 0, 1, D, o_part, lse_part, SWA_MUTANT_NONE);
    cr_expect(isinf(lse_part[0]) && lse_part[0] < 0 && o_part[0] == 0.0f);
    float acc[D];
    host_merge_row(o_part, lse_part, 0, 1, 1, 0, 1, D, SWA_DTYPE_FP16, 0, out, &lse, SWA_MUTANT_NONE, acc);
    cr_expect(swa_fp16_to_f32(out[0]) == 0.0f && isinf(lse) && lse < 0, "merge of one empty partial: %g, %g",
              swa_fp16_to_f32(out[0]), lse);
    for (int e = 0; e < D; e++)
        o_part[D + e] = 0.25f * (float)(e + 1);
    lse_part[1] = 3.0f;
    host_merge_row(o_part, lse_part, 0, 1, 2, 0, 1, D, SWA_DTYPE_FP16, 0, out, &lse, SWA_MUTANT_NONE, acc);
    for (int e = 0; e < D; e++)
        cr_expect_eq(swa_fp16_to_f32(out[e]), 0.25f * (float)(e + 1), "empty partial must weigh 0: out[%d] = %g", e,
                     swa_fp16_to_f32(out[e]));
    cr_expect_eq(lse, 3.0f);
    host_merge_row(o_part, lse_part, 0, 1, 0, 0, 1, D, SWA_DTYPE_FP16, 0, out, &lse, SWA_MUTANT_NONE, acc);
    cr_expect(swa_fp16_to_f32(out[0]) == 0.0f && isinf(lse) && lse < 0, "merge of zero partials");
}
