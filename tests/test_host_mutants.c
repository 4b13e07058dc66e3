/* test_host_mutants.c — each mask-class mutant, run on the host emulation,
 * reproduces exactly the bug it names: its output matches (within the
 * dtype tolerance) a double-precision reference computed under that bug's
 * mask hypothesis — the hypothesis `swadiff explain` should then report.
 * (test_host_prefill.c / test_host_decode.c check that every mutant breaks
 * the spec; this file checks that it breaks it in the documented way.)
 *
 *   ctest --test-dir build -R test_host_mutants --output-on-failure */
#include <criterion/criterion.h>

#include "backends/decode_aiter.h"
#include "backends/decode_fa2.h"
#include "backends/prefill.h"
#include "tests/test_backend_fixture.h"

/* Runs backend b with mutant m on spec s and compares with the reference
 * under variant v (filled by the caller after planning, see tile sizes). */
static void expect_mutant_matches(const swa_backend *b, swa_mutant m, const fx_spec *s, fx_variant v,
                                  const char *hypothesis)
{
    fx f;
    fx_setup(&f, s);
    swa_error err = {0};
    cr_assert_eq(fx_run(&f, b, m, false, &err), SWA_OK, "%s/%s: %s", b->name, swa_mutant_get(m)->name, err.message);
    double tol = fx_tol(f.c.dtype), worst;
    long spec_bad = fx_out_mismatches(&f, tol, tol, NULL);
    fx_reference_variant(&f.c, &f.in, &v, f.ref_out, NULL);
    long bad = fx_out_mismatches(&f, tol, tol, &worst);
    cr_expect_gt(spec_bad, 0, "%s/%s should differ from the spec", b->name, swa_mutant_get(m)->name);
    cr_expect_eq(bad, 0, "%s/%s should match the '%s' hypothesis: %ld of %zu off (max err %g)", b->name,
                 swa_mutant_get(m)->name, hypothesis, bad, f.out_elems, worst);
    fx_teardown(&f);
}

/* seed 000's shapes: extends 6/8/12 with a prefix, window 4 */
static const int seed_qo[] = {6, 8, 12}, seed_kv[] = {20, 37, 12};

static fx_spec seed000(void)
{
    fx_spec s = {.num_requests = 3, .qo_len = seed_qo, .kv_len = seed_kv, .num_qo_heads = 4, .num_kv_heads = 2,
                 .head_dim = 64, .window_left = 4};
    return s;
}

Test(host_mutants, mask_compiled_out_is_the_tile_granular_skip)
{
    /* the long no-prefix case of seed 000 and the prefix cases */
    static const int qo[] = {100}, kv[] = {100};
    fx_spec specs[2] = {seed000(), {.num_requests = 1, .qo_len = qo, .kv_len = kv, .num_qo_heads = 2,
                                    .num_kv_heads = 2, .head_dim = 128, .window_left = 4}};
    for (int i = 0; i < 2; i++) {
        swa_case c;
        fx_case_init(&c, &specs[i]);
        swa_plan_opts o = {.mutant = SWA_MUTANT_MASK_COMPILED_OUT};
        swa_prefill_plan *p;
        swa_error err = {0};
        cr_assert_eq(swa_prefill_plan_build(&c, &o, &p, &err), SWA_OK, "%s", err.message);
        fx_variant v = {.window_left = 4, .tile_rows = p->cta_tile_q, .tile_kv_align = p->cta_tile_kv};
        swa_prefill_plan_free(p);
        fx_case_free(&c);
        expect_mutant_matches(&swa_backend_prefill, SWA_MUTANT_MASK_COMPILED_OUT, &specs[i], v, "tile_granular_start");
    }
}

Test(host_mutants, prefill_position_and_bound_mutants)
{
    fx_spec s = seed000();
    fx_variant v = {.window_left = 4, .top_left = true};
    expect_mutant_matches(&swa_backend_prefill, SWA_MUTANT_TOP_LEFT_ALIGN, &s, v, "top-left alignment");
    v = (fx_variant){.window_left = 4, .anchor_request = true};
    expect_mutant_matches(&swa_backend_prefill, SWA_MUTANT_REQUEST_ANCHORED, &s, v, "request-anchored window");
    v = (fx_variant){.window_left = 3};
    expect_mutant_matches(&swa_backend_prefill, SWA_MUTANT_LEFT_BOUND_GT, &s, v, "window L-1");
    v = (fx_variant){.window_left = 5};
    expect_mutant_matches(&swa_backend_prefill, SWA_MUTANT_LEFT_BOUND_MINUS1, &s, v, "window L+1");
}

Test(host_mutants, decode_bound_and_mapping_mutants)
{
    /* window starts 91 and 51: inside their pages, so the key before the
     * window start is loaded and the L+1 bug shows */
    static const int kv[] = {100, 60};
    fx_spec s = {.num_requests = 2, .kv_len = kv, .num_qo_heads = 4, .num_kv_heads = 2, .head_dim = 64,
                 .page_size = 16, .window_left = 8};
    expect_mutant_matches(&swa_backend_decode_fa2, SWA_MUTANT_LEFT_BOUND_GT, &s, (fx_variant){.window_left = 7},
                          "window L-1");
    expect_mutant_matches(&swa_backend_decode_fa2, SWA_MUTANT_LEFT_BOUND_MINUS1, &s, (fx_variant){.window_left = 9},
                          "window L+1");
    expect_mutant_matches(&swa_backend_decode_aiter, SWA_MUTANT_AITER_S_EQ_L, &s, (fx_variant){.window_left = 7},
                          "window L-1 (sliding_window = L)");
    s.window_left = 0;
    expect_mutant_matches(&swa_backend_decode_aiter, SWA_MUTANT_AITER_L0_SENTINEL, &s,
                          (fx_variant){.window_left = -1}, "no window (S = 0 disables the mask)");
}
