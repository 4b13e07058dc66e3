/* test_backend_options.c — the built-in backend tables called as the harness
 * never calls them (what ci/coverage.sh leaves out of the backends' figure
 * as "calls the harness never makes"): plan() without options (no device:
 * run() refuses), run() without run options (the LSE base without them; no
 * LSE written, output still right), a run whose window_left differs from
 * the plan's, decode_aiter asked for an LSE its plan was built without,
 * plan() of a case supports() refuses, free(NULL) and the plan accessors of
 * NULL, the host device's upload of nothing and its availability, and
 * swa_layer_case of a layer index outside the case.  `swadiff run` cannot
 * reach any of them (harness/run.c always passes options with a device,
 * runs a plan with its own window and return_lse, and plans only what
 * supports() accepted), so this file is where they are exercised.
 *
 *   ctest --test-dir build -R test_backend_options --output-on-failure */
#include <criterion/criterion.h>

#include "backends/decode_aiter.h"
#include "backends/decode_fa2.h"
#include "backends/layer_plans.h"
#include "backends/prefill.h"
#include "tests/test_backend_fixture.h"

static const swa_backend *const all_backends[] = {&swa_backend_prefill, &swa_backend_decode_fa2,
                                                  &swa_backend_decode_aiter, &swa_backend_decode_auto};

/* A case each backend runs: prefill 16 rows over 600 keys (split-KV, so the
 * merge pass runs too), decode one row over 300 and 41 keys. */
static void setup_for(fx *f, const swa_backend *b, int window_left, bool return_lse)
{
    static const int pqo[] = {16, 4}, pkv[] = {600, 100}, dkv[] = {300, 41};
    bool prefill = b == &swa_backend_prefill;
    fx_spec s = {.num_requests = 2, .qo_len = prefill ? pqo : NULL, .kv_len = prefill ? pkv : dkv,
                 .num_qo_heads = 4, .num_kv_heads = 2, .head_dim = 64, .page_size = 16,
                 .window_left = window_left, .return_lse = return_lse, .seed = 7};
    fx_setup(f, &s);
}

Test(backend_options, plan_without_options_has_no_device_to_run_on)
{
    for (size_t i = 0; i < sizeof all_backends / sizeof all_backends[0]; i++) {
        const swa_backend *b = all_backends[i];
        fx f;
        setup_for(&f, b, 40, false);
        void *plan = NULL;
        swa_error err = {0};
        cr_assert_eq(b->plan(&f.c, &f.in, NULL, &plan, &err), SWA_OK, "%s: %s", b->name, err.message);
        swa_run_opts r = {.window_left = 40};
        cr_expect_eq(b->run(plan, &f.in, &r, &f.o, &err), SWA_ERR_INVALID, "%s", b->name);
        cr_expect(strstr(err.message, "no device to run on") != NULL, "%s: %s", b->name, err.message);
        b->free(plan);
        fx_teardown(&f);
    }
}

Test(backend_options, run_without_run_options_writes_the_output_and_no_lse)
{
    for (size_t i = 0; i < sizeof all_backends / sizeof all_backends[0]; i++) {
        const swa_backend *b = all_backends[i];
        fx f;
        setup_for(&f, b, 40, false);
        swa_plan_opts o = fx_opts(&f, SWA_MUTANT_NONE);
        o.warn = NULL; /* options without a warning sink */
        void *plan = NULL;
        swa_error err = {0};
        cr_assert_eq(b->plan(&f.c, &f.in, &o, &plan, &err), SWA_OK, "%s: %s", b->name, err.message);
        cr_expect_eq(b->run_lse_base(plan, NULL), b == &swa_backend_prefill || b == &swa_backend_decode_fa2 ? 2.0 : 0.0,
                     "%s", b->name);
        cr_assert_eq(b->run(plan, &f.in, NULL, &f.o, &err), SWA_OK, "%s: %s", b->name, err.message);
        double worst;
        cr_expect_eq(fx_out_mismatches(&f, fx_tol(f.c.dtype), fx_tol(f.c.dtype), &worst), 0, "%s: max error %g",
                     b->name, worst);
        /* the LSE buffer keeps its poison: nothing asked for it */
        for (size_t e = 0; e < f.lse_elems; e++)
            cr_expect(isnan(f.o.lse[e]), "%s wrote lse[%zu] without return_lse", b->name, e);
        cr_expect(fx_guards_ok(&f), "%s", b->name);
        cr_expect_eq(f.warnings, 0, "%s", b->name);
        b->free(plan);
        fx_teardown(&f);
    }
}

Test(backend_options, run_with_another_window_is_a_plan_run_mismatch)
{
    for (size_t i = 0; i < sizeof all_backends / sizeof all_backends[0]; i++) {
        const swa_backend *b = all_backends[i];
        fx f;
        setup_for(&f, b, 40, false);
        swa_plan_opts o = fx_opts(&f, SWA_MUTANT_NONE);
        void *plan = NULL;
        swa_error err = {0};
        cr_assert_eq(b->plan(&f.c, &f.in, &o, &plan, &err), SWA_OK, "%s: %s", b->name, err.message);
        swa_run_opts r = {.window_left_set = true, .window_left = 41};
        cr_expect_eq(b->run(plan, &f.in, &r, &f.o, &err), SWA_ERR_INVALID, "%s", b->name);
        cr_expect(strstr(err.message, "plan/run mismatch: planned window_left=40, run window_left=41") != NULL,
                  "%s: %s", b->name, err.message);
        b->free(plan);
        fx_teardown(&f);
    }
}

Test(backend_options, aiter_return_lse_on_a_plan_without_it_is_refused)
{
    fx f;
    setup_for(&f, &swa_backend_decode_aiter, 40, false);
    swa_plan_opts o = fx_opts(&f, SWA_MUTANT_NONE);
    void *plan = NULL;
    swa_error err = {0};
    cr_assert_eq(swa_backend_decode_aiter.plan(&f.c, &f.in, &o, &plan, &err), SWA_OK, "%s", err.message);
    swa_run_opts r = {.window_left = 40, .return_lse = true};
    cr_expect_eq(swa_backend_decode_aiter.run_lse_base(plan, &r), 0.0, "no shadow plan: no LSE base");
    cr_expect_eq(swa_backend_decode_aiter.run(plan, &f.in, &r, &f.o, &err), SWA_ERR_INVALID);
    cr_expect(strstr(err.message, "plan built without return_lse") != NULL, "%s", err.message);
    swa_backend_decode_aiter.free(plan);
    fx_teardown(&f);
}

Test(backend_options, plan_of_a_refused_case_is_unsupported)
{
    /* decode_aiter cannot express chunks; decode_fa2 serves one query row */
    fx f;
    setup_for(&f, &swa_backend_decode_aiter, -1, false);
    f.c.chunk_size = 32;
    swa_plan_opts o = fx_opts(&f, SWA_MUTANT_NONE);
    void *plan = (void *)&f;
    swa_error err = {0};
    cr_expect_eq(swa_backend_decode_aiter.plan(&f.c, &f.in, &o, &plan, &err), SWA_ERR_UNSUPPORTED);
    cr_expect_null(plan);
    cr_expect(strstr(err.message, "chunked local attention") != NULL, "%s", err.message);
    fx_teardown(&f);

    setup_for(&f, &swa_backend_prefill, 40, false);
    cr_expect_eq(swa_backend_decode_fa2.plan(&f.c, &f.in, &o, &plan, &err), SWA_ERR_UNSUPPORTED);
    cr_expect_null(plan);
    cr_expect(strstr(err.message, "qo_len") != NULL, "%s", err.message);
    fx_teardown(&f);
}

Test(backend_options, null_plans_and_inputs)
{
    for (size_t i = 0; i < sizeof all_backends / sizeof all_backends[0]; i++)
        all_backends[i]->free(NULL); /* must not crash */
    swa_decode_aiter_plan_free(NULL);
    cr_expect_null(swa_prefill_plan_of(NULL));
    cr_expect_null(swa_decode_fa2_plan_of(NULL));
    cr_expect_null(swa_decode_fa2_captured_of(NULL));
    cr_expect_null(swa_decode_aiter_plan_of(NULL));
    cr_expect_null(swa_decode_auto_chosen(NULL));
    cr_expect_null(swa_decode_auto_plan_of(NULL));

    void *dev = NULL;
    swa_error err = {0};
    cr_expect_eq(swa_host_device_ops.upload(NULL, &dev, &err), SWA_ERR_INVALID);
    cr_expect(strstr(err.message, "no inputs") != NULL, "%s", err.message);
    cr_expect(swa_host_device_ops.available(NULL, 0));
    char why[8] = "x";
    cr_expect(swa_host_device_ops.available(why, sizeof why));
    cr_expect_str_eq(why, "");

    /* a layer index outside the case leaves the case's own window */
    swa_case c = {.window_left = 9, .num_layers = 2, .layer_window_left = {3, -1}};
    cr_expect_eq(swa_layer_case(&c, -1).window_left, 9);
    cr_expect_eq(swa_layer_case(&c, 2).window_left, 9);
    cr_expect_eq(swa_layer_case(&c, 1).window_left, -1);
}
