/* test_backend_registry.c — the backend registry, the device table, the
 * mutant table, and the reasons a backend gives for cases it cannot run.
 *
 *   ctest --test-dir build -R test_backend_registry --output-on-failure */
#include <criterion/criterion.h>

#include "backends/decode_aiter.h"
#include "tests/test_backend_fixture.h"

Test(backend_registry, names_flags_and_order)
{
    int n = 0;
    const swa_backend *const *all = swa_backends(&n);
    const char *names[] = {"prefill", "decode_fa2", "decode_aiter", "decode_auto"};
    unsigned flags[] = {SWA_BACKEND_PREFILL, SWA_BACKEND_DECODE_FA2, SWA_BACKEND_DECODE_AITER,
                        SWA_BACKEND_DECODE_AUTO};
    cr_assert_eq(n, 4, "%d backends registered", n);
    for (int i = 0; i < n; i++) {
        cr_expect_str_eq(all[i]->name, names[i]);
        cr_expect_eq(all[i]->flag, flags[i], "%s flag", names[i]);
        cr_expect_eq(all[i]->api_version, SWA_BACKEND_API_VERSION, "%s api version", names[i]);
        cr_expect_eq(swa_backend_by_name(names[i]), all[i], "by name %s", names[i]);
        cr_expect_eq(swa_backend_by_flag(flags[i]), all[i], "by flag %s", names[i]);
        cr_expect(all[i]->supports && all[i]->plan && all[i]->run_lse_base &&
                      all[i]->run && all[i]->free && all[i]->description,
                  "%s has an empty slot", names[i]);
    }
    cr_expect_null(swa_backend_by_name("flash"));
    cr_expect_null(swa_backend_by_name(NULL));
    cr_expect_null(swa_backend_by_flag(1u << 9));
    cr_expect_eq(swa_backend_by_name("prefill")->lse_base, 2.0);
    cr_expect_eq(swa_backend_by_name("decode_fa2")->lse_base, 2.0);
    cr_expect_eq(swa_backend_by_name("decode_aiter")->lse_base, 0.0, "the AITER kernel has no LSE");
}

Test(backend_registry, devices)
{
    const swa_device_ops *host = swa_device_get(SWA_DEVICE_HOST);
    cr_assert_not_null(host);
    cr_expect_str_eq(host->name, "host");
    cr_expect_eq(host->kind, SWA_DEVICE_HOST);
    char why[128] = "x";
    cr_expect(host->available(why, sizeof why));
    cr_expect_eq(host->num_sms(), 132);
    char desc[256];
    host->describe(desc, sizeof desc);
    cr_expect(strstr(desc, "host emulation (CPU) of the CUDA kernels") != NULL, "describe: %s", desc);
#ifndef SWADIFF_HAVE_CUDA
    cr_expect_null(swa_device_get(SWA_DEVICE_CUDA), "no CUDA device without SWADIFF_HAVE_CUDA");
#else
    cr_expect_not_null(swa_device_get(SWA_DEVICE_CUDA));
#endif
#ifndef SWADIFF_HAVE_HIP
    cr_expect_null(swa_device_get(SWA_DEVICE_HIP));
#endif
    cr_expect_null(swa_device_get(SWA_DEVICE_COUNT));
}

Test(backend_registry, mutant_table_round_trips)
{
    for (int m = 0; m < SWA_MUTANT_COUNT; m++) {
        const swa_mutant_info *info = swa_mutant_get((swa_mutant)m);
        cr_assert_not_null(info, "mutant %d", m);
        cr_expect_eq(info->id, (swa_mutant)m);
        cr_expect_eq(swa_mutant_by_name(info->name), (swa_mutant)m, "by name %s", info->name);
        if (m != SWA_MUTANT_NONE) {
            cr_expect_gt(strlen(info->backends), 0, "%s names no backend", info->name);
            /* every backend a mutant claims exists */
            char list[128];
            snprintf(list, sizeof list, "%s", info->backends);
            for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ","))
                cr_expect_not_null(swa_backend_by_name(tok), "%s lives in unknown backend %s", info->name, tok);
        }
    }
    cr_expect_str_eq(swa_mutant_get(SWA_MUTANT_MASK_COMPILED_OUT)->name, "mask_compiled_out");
    cr_expect_eq(swa_mutant_by_name("no_such_mutant"), SWA_MUTANT_COUNT);
    cr_expect_eq(swa_mutant_by_name(NULL), SWA_MUTANT_COUNT);
    cr_expect_null(swa_mutant_get(SWA_MUTANT_COUNT));
}

static swa_case reason_case(int qo, int head_dim, bool graph, swa_kv_mode mode, swa_dtype dtype)
{
    int qo_len[] = {1, qo}, kv_len[] = {50, 60};
    fx_spec s = {.num_requests = 2, .qo_len = qo_len, .kv_len = kv_len, .head_dim = head_dim,
                 .cuda_graph = graph, .graph_capture_requests = 1, .kv_mode = mode, .dtype = dtype,
                 .window_left = 4};
    swa_case c;
    fx_case_init(&c, &s);
    return c;
}

static void expect_reason(const swa_backend *b, const swa_case *c, const char *fragment)
{
    char buf[256];
    const char *why = b->supports(c, swa_device_get(SWA_DEVICE_HOST), buf, sizeof buf);
    if (!fragment) {
        cr_expect_null(why, "%s should run this case, said: %s", b->name, why ? why : "");
        return;
    }
    cr_assert_not_null(why, "%s accepted a case it cannot run (expected: %s)", b->name, fragment);
    cr_expect(strstr(why, fragment) != NULL, "%s reason \"%s\" lacks \"%s\"", b->name, why, fragment);
    cr_expect(strstr(why, b->name) != NULL, "reason must name the backend: %s", why);
    cr_expect_eq(why[strlen(why) - 1], '.', "reason must be a full sentence: %s", why);
}

Test(backend_registry, unsupported_cases_get_a_reason)
{
    const swa_backend *prefill = swa_backend_by_name("prefill"), *fa2 = swa_backend_by_name("decode_fa2"),
                      *aiter = swa_backend_by_name("decode_aiter"), *autob = swa_backend_by_name("decode_auto");
    swa_case c = reason_case(6, 96, false, SWA_KV_PAGED, SWA_DTYPE_FP16);
    expect_reason(prefill, &c, "head_dim 64, 128 and 256 only; this case has head_dim 96");
    fx_case_free(&c);

    c = reason_case(6, 128, false, SWA_KV_PAGED, SWA_DTYPE_BF16);
    expect_reason(prefill, &c, NULL);
    expect_reason(fa2, &c, "decode_fa2 is a decode kernel: it needs qo_len 1 for every request, and request 1 has "
                           "qo_len 6");
    expect_reason(aiter, &c, "qo_len 6");
    expect_reason(autob, &c, "routes this case to decode_aiter");
    fx_case_free(&c);

    c = reason_case(1, 128, false, SWA_KV_RAGGED, SWA_DTYPE_FP16);
    expect_reason(fa2, &c, "paged KV cache only");
    expect_reason(prefill, &c, NULL);
    fx_case_free(&c);

    c = reason_case(1, 128, false, SWA_KV_PAGED, SWA_DTYPE_FP32);
    expect_reason(fa2, &c, "fp16 and bf16 only");
    fx_case_free(&c);

    c = reason_case(1, 80, false, SWA_KV_PAGED, SWA_DTYPE_FP16);
    expect_reason(aiter, &c, "head_dim 80");
    fx_case_free(&c);

    /* CUDA graph: a skip for prefill, fine for fa2, NOT a skip for aiter
     * (plan-time error), and auto routes it to fa2 */
    c = reason_case(1, 128, true, SWA_KV_PAGED, SWA_DTYPE_FP16);
    expect_reason(prefill, &c, "no CUDA-graph mode");
    expect_reason(fa2, &c, NULL);
    expect_reason(aiter, &c, NULL);
    expect_reason(autob, &c, NULL);
    fx_case_free(&c);
}
