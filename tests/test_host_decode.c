/* test_host_decode.c — decode_fa2 and decode_aiter run on the host
 * emulation against a double-precision attention loop
 * (tests/test_backend_fixture.h): seed 003's windows {0, 31, 127, 1023}
 * with the saturation regime, fp16/bf16, batch sizes, GQA ratios, page
 * sizes 1/16/odd, both layouts, soft cap, split-KV and multi-partition
 * cases; and every decode mutant changing the output where it should.
 *
 *   ctest --test-dir build -R test_host_decode --output-on-failure */
#include <criterion/criterion.h>

/* the case tables leave trailing fields at their zero defaults */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#include "backends/decode_aiter.h"
#include "backends/decode_fa2.h"
#include "tests/test_backend_fixture.h"

typedef struct decode_e2e {
    const char *name;
    int num_requests;
    int kv_len[7];
    int hq, hk, head_dim, page_size, window_left;
    swa_dtype dtype;
    swa_layout layout;
    double soft_cap;
} decode_e2e;

static const decode_e2e e2e_cases[] = {
    {"L0 fp16 B3", 3, {1, 17, 300}, 4, 4, 64, 16, 0, SWA_DTYPE_FP16},
    {"L31 bf16 B7 GQA 8/2", 7, {5, 32, 33, 100, 250, 64, 1}, 8, 2, 128, 16, 31, SWA_DTYPE_BF16},
    {"L127 fp16 GQA 8/1 page 1", 2, {129, 400}, 8, 1, 64, 1, 127, SWA_DTYPE_FP16},
    {"L1023 bf16 saturated", 3, {1024, 700, 9}, 4, 2, 128, 16, 1023, SWA_DTYPE_BF16},
    {"L1023 fp16 long split", 2, {3000, 2100}, 4, 2, 64, 16, 1023, SWA_DTYPE_FP16},
    {"no window HND page 5", 3, {77, 300, 520}, 4, 2, 64, 5, -1, SWA_DTYPE_FP16, SWA_LAYOUT_HND},
    {"L8 page 16 unaligned", 2, {100, 57}, 4, 4, 64, 16, 8, SWA_DTYPE_FP16},
    {"L127 page 16 split", 2, {300, 290}, 4, 4, 64, 16, 127, SWA_DTYPE_FP16},
    {"soft cap 2 L8", 2, {100, 57}, 4, 2, 64, 16, 8, SWA_DTYPE_FP16, SWA_LAYOUT_NHD, 2.0},
    {"soft cap 50 L31 hd256", 2, {200, 90}, 4, 1, 256, 16, 31, SWA_DTYPE_BF16, SWA_LAYOUT_NHD, 50.0},
    {"L0 GQA 8/2", 2, {40, 41}, 8, 2, 64, 16, 0, SWA_DTYPE_FP16},
};
#define E2E_COUNT (sizeof e2e_cases / sizeof e2e_cases[0])

static void setup_case(fx *f, const decode_e2e *t, bool return_lse)
{
    fx_spec s = {.num_requests = t->num_requests, .kv_len = t->kv_len, .num_qo_heads = t->hq,
                 .num_kv_heads = t->hk, .head_dim = t->head_dim, .dtype = t->dtype, .page_size = t->page_size,
                 .layout = t->layout, .window_left = t->window_left, .soft_cap = t->soft_cap,
                 .return_lse = return_lse};
    fx_setup(f, &s);
}

static void expect_matches(const swa_backend *b, bool with_lse)
{
    for (size_t n = 0; n < E2E_COUNT; n++) {
        const decode_e2e *t = &e2e_cases[n];
        fx f;
        setup_case(&f, t, false);
        swa_error err = {0};
        swa_status st = fx_run(&f, b, SWA_MUTANT_NONE, with_lse, &err);
        cr_assert_eq(st, SWA_OK, "%s on %s: %s", b->name, t->name, err.message);
        double tol = fx_tol(t->dtype), worst;
        long bad = fx_out_mismatches(&f, tol, tol, &worst);
        cr_expect_eq(bad, 0, "%s on %s (%s, L=%d): %ld of %zu elements off, max abs err %g (tol %g)", b->name,
                     t->name, swa_dtype_name(t->dtype), t->window_left, bad, f.out_elems, worst, tol);
        if (with_lse)
            cr_expect_eq(fx_lse_mismatches(&f, 2.0, 1e-2), 0, "%s on %s: LSE off", b->name, t->name);
        cr_expect(fx_guards_ok(&f), "%s on %s: guard bytes written", b->name, t->name);
        fx_teardown(&f);
    }
}

Test(host_decode, fa2_matches_double_reference) { expect_matches(&swa_backend_decode_fa2, true); }
Test(host_decode, aiter_matches_double_reference) { expect_matches(&swa_backend_decode_aiter, false); }

Test(host_decode, fa2_split_and_unsplit_agree)
{
    const decode_e2e *t = &e2e_cases[4]; /* 2 requests x 2 kv heads = 4 CTAs: splits on 132 SMs */
    fx f;
    setup_case(&f, t, false);
    swa_plan_opts o = fx_opts(&f, SWA_MUTANT_NONE);
    swa_decode_fa2_plan *split, *whole;
    swa_error err = {0};
    cr_assert_eq(swa_decode_fa2_plan_build(&f.c, &f.in.paged, 2, &o, &split, &err), SWA_OK, "%s", err.message);
    o.num_sms = 4;
    cr_assert_eq(swa_decode_fa2_plan_build(&f.c, &f.in.paged, 2, &o, &whole, &err), SWA_OK, "%s", err.message);
    cr_assert(split->split_kv && !whole->split_kv, "expected split on 132 SMs (%d), none on 4 (%d)", split->split_kv,
              whole->split_kv);
    cr_assert_eq(swa_host_run_decode_fa2(split, split->grid_work, &f.in, &f.o, true, &err), SWA_OK, "%s", err.message);
    cr_expect_eq(fx_out_mismatches(&f, 1e-3, 1e-3, NULL), 0, "split plan vs reference");
    cr_expect_eq(fx_lse_mismatches(&f, 2.0, 1e-2), 0, "split plan LSE vs reference");
    fx_out_reset(&f);
    cr_assert_eq(swa_host_run_decode_fa2(whole, whole->grid_work, &f.in, &f.o, true, &err), SWA_OK, "%s", err.message);
    cr_expect_eq(fx_out_mismatches(&f, 1e-3, 1e-3, NULL), 0, "unsplit plan vs reference");
    swa_decode_fa2_plan_free(split);
    swa_decode_fa2_plan_free(whole);
    fx_teardown(&f);
}

/* ------------------------------------------------------------------------
 * Mutants */

typedef struct mutant_case {
    const swa_backend *backend;
    swa_mutant mutant;
    size_t e2e_index;
    bool check_lse_only;
} mutant_case;

#define FA2 &swa_backend_decode_fa2
#define AITER &swa_backend_decode_aiter

static const mutant_case killers[] = {
    {FA2, SWA_MUTANT_LEFT_BOUND_GT, 6},
    {FA2, SWA_MUTANT_LEFT_BOUND_MINUS1, 6},
    {FA2, SWA_MUTANT_SPLIT_CHUNK_SHORT, 7},
    {FA2, SWA_MUTANT_SPLIT_LAST_CHUNK_DROPPED, 7},
    {FA2, SWA_MUTANT_LSE_MERGE_DROPPED, 7},
    {FA2, SWA_MUTANT_LAST_PAGE_LEN_OFF, 1},
    {FA2, SWA_MUTANT_WINDOW_PAGE_CROSS, 6},
    {FA2, SWA_MUTANT_SOFTCAP_COMPILED_OUT, 8},
    {FA2, SWA_MUTANT_LSE_WRONG_BASE, 6, true},
    {FA2, SWA_MUTANT_GQA_MOD_MAPPING, 1},
    {FA2, SWA_MUTANT_FOREIGN_PAGE_READ, 0},
    {AITER, SWA_MUTANT_AITER_S_EQ_L, 6},
    {AITER, SWA_MUTANT_AITER_L0_SENTINEL, 0},
    {AITER, SWA_MUTANT_SOFTCAP_BEFORE_MASK, 8},
    {AITER, SWA_MUTANT_GQA_MOD_MAPPING, 1},
    {AITER, SWA_MUTANT_FOREIGN_PAGE_READ, 5},
};

Test(host_decode, each_mutant_changes_the_output)
{
    for (size_t n = 0; n < sizeof killers / sizeof killers[0]; n++) {
        const mutant_case *k = &killers[n];
        const decode_e2e *t = &e2e_cases[k->e2e_index];
        const char *name = swa_mutant_get(k->mutant)->name;
        fx f;
        setup_case(&f, t, false);
        swa_error err = {0};
        bool lse = k->backend == FA2;
        cr_assert_eq(fx_run(&f, k->backend, k->mutant, lse, &err), SWA_OK, "%s/%s on %s: %s", k->backend->name,
                     name, t->name, err.message);
        double tol = fx_tol(t->dtype);
        long bad = k->check_lse_only ? fx_lse_mismatches(&f, 2.0, 1e-2) : fx_out_mismatches(&f, tol, tol, NULL);
        cr_expect_gt(bad, 0, "%s mutant %s left %s unchanged", k->backend->name, name, t->name);
        fx_teardown(&f);
    }
}

Test(host_decode, window_mutants_harmless_where_they_should_be)
{
    /* S = L is right only when... never; but L = 0 -> 0 only bites at L = 0 */
    const decode_e2e *t = &e2e_cases[6]; /* L = 8 */
    fx f;
    setup_case(&f, t, false);
    swa_error err = {0};
    cr_assert_eq(fx_run(&f, AITER, SWA_MUTANT_AITER_L0_SENTINEL, false, &err), SWA_OK, "%s", err.message);
    cr_expect_eq(fx_out_mismatches(&f, fx_tol(t->dtype), fx_tol(t->dtype), NULL), 0,
                 "aiter_l0_sentinel changed an L = 8 case");
    /* page-crossing bug needs the window start inside a page: page_size 1 hides it */
    fx_teardown(&f);
    t = &e2e_cases[2]; /* page 1 */
    setup_case(&f, t, false);
    cr_assert_eq(fx_run(&f, FA2, SWA_MUTANT_WINDOW_PAGE_CROSS, false, &err), SWA_OK, "%s", err.message);
    cr_expect_eq(fx_out_mismatches(&f, fx_tol(t->dtype), fx_tol(t->dtype), NULL), 0,
                 "window_page_cross changed a page-size-1 case");
    fx_teardown(&f);
}

Test(host_decode, oob_write_hits_the_guard_only)
{
    const decode_e2e *t = &e2e_cases[0];
    fx f;
    setup_case(&f, t, false);
    swa_error err = {0};
    cr_assert_eq(fx_run(&f, FA2, SWA_MUTANT_OOB_WRITE, true, &err), SWA_OK, "%s", err.message);
    cr_expect(!fx_guards_ok(&f), "oob_write left the guard bytes intact");
    cr_expect_eq(fx_out_mismatches(&f, fx_tol(t->dtype), fx_tol(t->dtype), NULL), 0,
                 "oob_write should only write past the end, the output itself stays right");
    fx_teardown(&f);
}

Test(host_decode, foreign_page_read_reads_poison_or_foreign_keys)
{
    /* the last request's last page looked up one entry too far lands on the
     * spare (NaN-poisoned) page the plan pads the table with */
    const swa_backend *backends[] = {FA2, AITER};
    for (int b = 0; b < 2; b++) {
        const decode_e2e *t = &e2e_cases[0];
        fx f;
        setup_case(&f, t, false);
        swa_error err = {0};
        cr_assert_eq(fx_run(&f, backends[b], SWA_MUTANT_FOREIGN_PAGE_READ, false, &err), SWA_OK, "%s", err.message);
        int last = t->num_requests - 1;
        size_t row = (size_t)last * f.c.num_qo_heads * f.c.head_dim;
        float v = swa_load(f.c.dtype, f.o.out, row);
        cr_expect(v != v, "%s: request %d read its last page from the spare entry: expected NaN, got %g",
                  backends[b]->name, last, v);
        fx_teardown(&f);
    }
}
