/* test_backend_decode.c — the decode backends through their tables, as the
 * harness drives them: decode_auto routing, decode_aiter's return_lse
 * dispatch to its shadow decode_fa2 plan (LSE returned, base 2) and the
 * RETURN_LSE_IGNORED mutant, and decode_fa2's CUDA-graph capture/update/
 * replay on the host device, correct with a padded grid and dropping work
 * under GRAPH_CAPTURED_SCALARS.
 *
 *   ctest --test-dir build -R test_backend_decode --output-on-failure */
#include <criterion/criterion.h>

#include "backends/decode_aiter.h"
#include "backends/decode_fa2.h"
#include "tests/test_backend_fixture.h"

static void decode_setup(fx *f, bool graph, bool return_lse, int L)
{
    static const int kv[] = {300, 41, 700, 1200, 9};
    fx_spec s = {.num_requests = 5, .kv_len = kv, .num_qo_heads = 8, .num_kv_heads = 2, .head_dim = 64,
                 .page_size = 16, .window_left = L, .cuda_graph = graph, .graph_capture_requests = 2,
                 .return_lse = return_lse};
    fx_setup(f, &s);
}

Test(backend_decode, auto_routes_cuda_graph_to_fa2)
{
    for (int graph = 0; graph < 2; graph++) {
        fx f;
        decode_setup(&f, graph, false, 31);
        cr_expect_eq(swa_decode_auto_route(&f.c), graph ? &swa_backend_decode_fa2 : &swa_backend_decode_aiter);
        swa_plan_opts o = fx_opts(&f, SWA_MUTANT_NONE);
        void *plan = NULL;
        swa_error err = {0};
        cr_assert_eq(swa_backend_decode_auto.plan(&f.c, &f.in, &o, &plan, &err), SWA_OK, "graph=%d: %s", graph,
                     err.message);
        const char *chosen = swa_decode_auto_chosen(plan)->name;
        cr_expect_str_eq(chosen, graph ? "decode_fa2" : "decode_aiter", "graph=%d routed to %s", graph, chosen);
        cr_expect(strstr(f.last_warning, chosen) != NULL, "the choice is reported: %s", f.last_warning);
        swa_run_opts r = {.return_lse = false};
        cr_expect_eq(swa_backend_decode_auto.run(plan, &f.in, &r, &f.o, &err), SWA_OK, "%s", err.message);
        cr_expect_eq(fx_out_mismatches(&f, fx_tol(f.c.dtype), fx_tol(f.c.dtype), NULL), 0,
                     "graph=%d: output off via %s", graph, chosen);
        swa_backend_decode_auto.free(plan);
        fx_teardown(&f);
    }
}

Test(backend_decode, aiter_return_lse_runs_the_shadow)
{
    int windows[] = {-1, 31};
    for (int k = 0; k < 2; k++) {
        fx f;
        decode_setup(&f, false, true, windows[k]);
        swa_plan_opts o = fx_opts(&f, SWA_MUTANT_NONE);
        void *plan = NULL;
        swa_error err = {0};
        cr_assert_eq(swa_backend_decode_aiter.plan(&f.c, &f.in, &o, &plan, &err), SWA_OK, "%s", err.message);
        swa_run_opts r = {.return_lse = true};
        cr_expect_eq(swa_backend_decode_aiter.run_lse_base(plan, &r), 2.0, "the shadow's LSE is base 2");
        fx_out_reset(&f);
        cr_assert_eq(swa_backend_decode_aiter.run(plan, &f.in, &r, &f.o, &err), SWA_OK, "%s", err.message);
        cr_expect_eq(fx_lse_mismatches(&f, 2.0, 1e-2), 0, "L=%d: LSE via the shadow plan is off", windows[k]);
        cr_expect_eq(fx_out_mismatches(&f, fx_tol(f.c.dtype), fx_tol(f.c.dtype), NULL), 0, "L=%d: output off",
                     windows[k]);
        /* without return_lse: the AITER kernel, no LSE written */
        r.return_lse = false;
        cr_expect_eq(swa_backend_decode_aiter.run_lse_base(plan, &r), 0.0);
        fx_out_reset(&f);
        cr_assert_eq(swa_backend_decode_aiter.run(plan, &f.in, &r, &f.o, &err), SWA_OK, "%s", err.message);
        uint32_t bits;
        memcpy(&bits, &f.o.lse[0], 4);
        cr_expect_eq(bits, 0xffffffffu, "the AITER path must not write the LSE");
        cr_expect_eq(fx_out_mismatches(&f, fx_tol(f.c.dtype), fx_tol(f.c.dtype), NULL), 0, "AITER output off");
        swa_backend_decode_aiter.free(plan);
        fx_teardown(&f);
    }
}

Test(backend_decode, aiter_return_lse_without_shadow_is_an_error)
{
    fx f;
    decode_setup(&f, false, false, 31);
    swa_plan_opts o = fx_opts(&f, SWA_MUTANT_NONE);
    void *plan = NULL;
    swa_error err = {0};
    cr_assert_eq(swa_backend_decode_aiter.plan(&f.c, &f.in, &o, &plan, &err), SWA_OK, "%s", err.message);
    cr_expect_eq(f.warnings, 0, "no shadow, no warning");
    swa_run_opts r = {.return_lse = true};
    cr_expect_eq(swa_backend_decode_aiter.run(plan, &f.in, &r, &f.o, &err), SWA_ERR_INVALID);
    cr_expect(strstr(err.message, "no shadow decode_fa2 plan exists") != NULL, "message: %s", err.message);
    swa_backend_decode_aiter.free(plan);
    fx_teardown(&f);
}

Test(backend_decode, return_lse_ignored_leaves_lse_unwritten)
{
    fx f;
    decode_setup(&f, false, true, 31);
    swa_error err = {0};
    cr_assert_eq(fx_run(&f, &swa_backend_decode_aiter, SWA_MUTANT_RETURN_LSE_IGNORED, true, &err), SWA_OK, "%s",
                 err.message);
    size_t poisoned = 0;
    for (size_t i = 0; i < f.lse_elems; i++) {
        uint32_t bits;
        memcpy(&bits, &f.o.lse[i], 4);
        poisoned += bits == 0xffffffffu;
    }
    cr_expect_eq(poisoned, f.lse_elems, "return_lse_ignored wrote %zu of %zu LSE values", f.lse_elems - poisoned,
                 f.lse_elems);
    cr_expect_gt(fx_lse_mismatches(&f, 2.0, 1e-2), 0, "the harness must see the LSE missing");
    fx_teardown(&f);
}

Test(backend_decode, graph_replay_with_a_larger_batch)
{
    int windows[] = {-1, 0, 127};
    for (int k = 0; k < 3; k++) {
        fx f;
        decode_setup(&f, true, false, windows[k]);
        swa_error err = {0};
        cr_assert_eq(fx_run(&f, &swa_backend_decode_fa2, SWA_MUTANT_NONE, true, &err), SWA_OK, "%s", err.message);
        cr_expect_eq(fx_out_mismatches(&f, fx_tol(f.c.dtype), fx_tol(f.c.dtype), NULL), 0,
                     "L=%d: replay of a 2-request capture on 5 requests is off", windows[k]);
        cr_expect_eq(fx_lse_mismatches(&f, 2.0, 1e-2), 0, "L=%d: replay LSE off", windows[k]);
        fx_teardown(&f);
    }
}

Test(backend_decode, graph_captured_scalars_drop_work_on_replay)
{
    fx f;
    decode_setup(&f, true, false, 127);
    swa_plan_opts o = fx_opts(&f, SWA_MUTANT_GRAPH_CAPTURED_SCALARS);
    void *plan = NULL;
    swa_error err = {0};
    cr_assert_eq(swa_backend_decode_fa2.plan(&f.c, &f.in, &o, &plan, &err), SWA_OK, "%s", err.message);
    const swa_decode_fa2_plan *cap = swa_decode_fa2_captured_of(plan), *full = swa_decode_fa2_plan_of(plan);
    cr_assert_not_null(cap);
    cr_expect_lt(cap->grid_work, full->num_work, "captured grid %d vs replay work %d", cap->grid_work,
                 full->num_work);
    swa_run_opts r = {.return_lse = true};
    cr_assert_eq(swa_backend_decode_fa2.run(plan, &f.in, &r, &f.o, &err), SWA_OK, "%s", err.message);
    /* the captured two requests are right; later ones were never computed */
    size_t per_request = (size_t)f.c.num_qo_heads * f.c.head_dim;
    long bad_first = 0, bad_last = 0;
    for (size_t i = 0; i < 2 * per_request; i++)
        bad_first += !(fabs(swa_load(f.c.dtype, f.o.out, i) - f.ref_out[i]) <= 2 * fx_tol(f.c.dtype));
    /* request 4's work items lie past the captured grid: its output is the
     * merge of never-written (poisoned) partials, or never written at all */
    for (size_t i = 4 * per_request; i < 5 * per_request; i++)
        bad_last += !(fabs(swa_load(f.c.dtype, f.o.out, i) - f.ref_out[i]) <= 2 * fx_tol(f.c.dtype));
    cr_expect_eq(bad_first, 0, "captured requests should still be right");
    cr_expect_eq(bad_last, (long)per_request, "request 4 should be dropped on replay (%ld of %zu wrong)", bad_last,
                 per_request);
    swa_backend_decode_fa2.free(plan);
    fx_teardown(&f);
}
