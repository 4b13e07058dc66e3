/* host_device.c — the host device's table (backend.h swa_device_ops): always
 * available, reports an H200's 132 SMs to the planner so plans match the
 * GPU's, "uploads" by keeping a pointer to the inputs, and runs plans with
 * the emulation in host_prefill.c / host_decode.c.
 * Tested by tests/test_host_*.c and tests/test_backend_*.c. */
/* Coverage: what no case reaches (mutant switches, allocation failures,
 * guards against calls the harness never makes: backends/guards.h) is left
 * out by the patterns of ci/coverage.sh, which says why. */
#include "backends/host/host_device.h"

#include <stdio.h>

#include "backends/decode_fa2.h"
#include "backends/guards.h"

static bool host_available(char *why, size_t n)
{
    if (SWA_API_GUARD(why && n))
        why[0] = '\0';
    return true;
}

static void host_describe(char *buf, size_t n)
{
    snprintf(buf, n, "host emulation (CPU) of the CUDA kernels, planning for %d SMs (H200)", SWA_HOST_NUM_SMS);
}

static int host_num_sms(void) { return SWA_HOST_NUM_SMS; }

static swa_status host_upload(const swa_inputs *in, void **dev_inputs, swa_error *err)
{
    if (SWA_API_GUARD(!in))
        return SWA_API_ERROR(err, SWA_ERR_INVALID, "host upload: no inputs");
    *dev_inputs = (void *)in; /* the host reads the caller's buffers in place */
    return SWA_OK;
}

static void host_release(void *dev_inputs) { (void)dev_inputs; }

static swa_status host_prefill(const swa_prefill_plan *p, void *dev_inputs, const swa_out_args *o, bool write_lse,
                               swa_error *err)
{
    return swa_host_run_prefill(p, dev_inputs, o, write_lse, err);
}

static swa_status host_decode_fa2(const swa_decode_fa2_plan *p, void *dev_inputs, const swa_out_args *o,
                                  bool write_lse, swa_error *err)
{
    return swa_host_run_decode_fa2(p, p->grid_work, dev_inputs, o, write_lse, err);
}

/* Capture records the launch scalars of the captured plan (grid_work; the
 * shapes do not change); the update copies the full batch's buffers into
 * the captured plan's; replay launches with the recorded scalars. */
static swa_status host_decode_fa2_graph(swa_decode_fa2_plan *captured, const swa_decode_fa2_plan *full,
                                        void *dev_inputs, const swa_out_args *o, bool write_lse, swa_error *err)
{
    int recorded_grid_work = captured->grid_work;
    swa_status st = swa_decode_fa2_graph_copy(captured, full, err);
    if (SWA_API_GUARD(st != SWA_OK)) return st;
    return swa_host_run_decode_fa2(captured, recorded_grid_work, dev_inputs, o, write_lse, err);
}

static swa_status host_decode_aiter(const swa_decode_aiter_plan *p, void *dev_inputs, const swa_out_args *o,
                                    swa_error *err)
{
    return swa_host_run_decode_aiter(p, dev_inputs, o, err);
}

const swa_device_ops swa_host_device_ops = {
    .kind = SWA_DEVICE_HOST,
    .name = "host",
    .available = host_available,
    .describe = host_describe,
    .num_sms = host_num_sms,
    .upload = host_upload,
    .release = host_release,
    .prefill = host_prefill,
    .decode_fa2 = host_decode_fa2,
    .decode_fa2_graph = host_decode_fa2_graph,
    .decode_aiter = host_decode_aiter,
};
