/* test_kernel_name.c — a result names the kernel that computed it
 * (swa_device_ops.last_kernel; report 1.3 "kernel").  swa_run_one resets
 * the device's note before the backend runs and reads it after, so a
 * result gets the note of its own run and never one left by an earlier
 * run, keeps it when the run fails (the kernel that faulted is the one to
 * read), and stays empty on a device without the hook.
 *
 * The device is the host emulation with a note added to its prefill
 * executor, as the CUDA launchers note theirs (tests/gpu_test_kernels.c
 * checks the real names on a GPU). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "harness/case_load.h"
#include "harness/run.h"
#include "tests/test_case_util.h"

static const swa_device_ops *host;
static char note[64];
static int resets;
static bool prefill_faults;

static void noted_last_kernel(char *buf, size_t n)
{
    if (!buf) {
        note[0] = '\0';
        resets++;
        return;
    }
    snprintf(buf, n, "%s", note);
}

static swa_status noting_prefill(const swa_prefill_plan *p, void *dev_inputs, const swa_out_args *o, bool write_lse,
                                 swa_error *err)
{
    snprintf(note, sizeof note, "host prefill (noted)");
    if (prefill_faults)
        return swa_error_set(err, SWA_ERR_DEVICE, "the noted prefill kernel faulted");
    return host->prefill(p, dev_inputs, o, write_lse, err);
}

/* prefill and decode_fa2 over one small decode-shaped case */
static const char CASE[] =
    "{\"name\": \"k\", \"requests\": [{\"qo_len\": 1, \"kv_len\": 40}, {\"qo_len\": 1, \"kv_len\": 17}],"
    " \"num_qo_heads\": 4, \"num_kv_heads\": 1, \"head_dim\": 64, \"dtype\": \"fp16\", \"window_left\": 7,"
    " \"backends\": [\"prefill\", \"decode_fa2\"]}";

static void run(const swa_device_ops *dev, const char *backend, swa_result *r)
{
    swa_case_list list = load_inline_case("kernel.json", CASE);
    swa_run_config cfg = {.device = dev, .quiet = true, .no_isolate = true, .argv0 = "swadiff"};
    swa_case_ctx ctx;
    swa_error err = {0};
    cr_assert_eq(swa_case_ctx_init(&ctx, &list.cases[0], dev, &err), SWA_OK, "%s", err.message);
    const swa_backend *b = swa_backend_by_name(backend);
    cr_assert_not_null(b, "no backend %s", backend);
    swa_run_one(&cfg, &ctx, b, r, NULL, NULL);
    swa_compare_result_free(&r->cmp);
    swa_case_ctx_free(&ctx);
    swa_case_list_free(&list);
}

static swa_device_ops noting_device(void)
{
    host = swa_device_get(SWA_DEVICE_HOST);
    cr_assert_not_null(host);
    swa_device_ops dev = *host;
    dev.prefill = noting_prefill;
    dev.last_kernel = noted_last_kernel;
    return dev;
}

Test(kernel_name, the_result_names_its_own_run_and_never_an_earlier_one)
{
    swa_device_ops dev = noting_device();
    swa_result r;
    run(&dev, "prefill", &r);
    cr_expect_eq(r.outcome, SWA_OUTCOME_PASSED, "%s", r.message);
    cr_expect_str_eq(r.kernel, "host prefill (noted)");
    cr_expect_eq(resets, 1, "the note is reset once before the backend runs (%d)", resets);

    /* decode_fa2's executor notes nothing: the prefill note must not leak */
    run(&dev, "decode_fa2", &r);
    cr_expect_eq(r.outcome, SWA_OUTCOME_PASSED, "%s", r.message);
    cr_expect_str_eq(r.kernel, "", "a stale note reached the decode result: \"%s\"", r.kernel);
    cr_expect_eq(resets, 2);
}

Test(kernel_name, a_failed_run_keeps_the_kernel_that_failed)
{
    swa_device_ops dev = noting_device();
    prefill_faults = true;
    swa_result r;
    run(&dev, "prefill", &r);
    cr_expect_eq(r.outcome, SWA_OUTCOME_ERROR, "%s", r.message);
    cr_expect(strstr(r.message, "faulted") != NULL, "%s", r.message);
    cr_expect_str_eq(r.kernel, "host prefill (noted)");
}

Test(kernel_name, a_device_without_the_hook_names_none)
{
    host = swa_device_get(SWA_DEVICE_HOST);
    cr_assert_null(host->last_kernel, "the host emulation has one kernel per executor and says none");
    swa_result r;
    run(host, "prefill", &r);
    cr_expect_eq(r.outcome, SWA_OUTCOME_PASSED, "%s", r.message);
    cr_expect_str_eq(r.kernel, "");
}
