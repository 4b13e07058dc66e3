/* host_device.h — the host device: a C emulation of the CUDA kernels'
 * algorithms (tile by tile, chunk by chunk, partition by partition, with the
 * kernels' rounding points), so machines without a GPU exercise the same
 * plans and scheduling as the H200.
 *
 * The executors are exposed for tests; the harness goes through
 * swa_host_device_ops.  Tested by tests/test_host_*.c. */
#ifndef SWADIFF_HOST_DEVICE_H
#define SWADIFF_HOST_DEVICE_H

#include "backends/backend.h"

extern const swa_device_ops swa_host_device_ops;

/* The SM count the host device reports to the planner (an H200). */
#define SWA_HOST_NUM_SMS 132

#ifdef __cplusplus
extern "C" {
#endif
/* Runs a prefill plan: the attention kernel over the work list, then the
 * merge pass when the plan splits KV.  Writes o->out (and o->lse when
 * write_lse). */
swa_status swa_host_run_prefill(const swa_prefill_plan *p, const swa_inputs *in, const swa_out_args *o,
                                bool write_lse, swa_error *err);
/* Runs a decode_fa2 plan with a launch grid of grid_work items (the plan's
 * grid_work for a normal launch; the captured scalar on graph replay). */
swa_status swa_host_run_decode_fa2(const swa_decode_fa2_plan *p, int grid_work, const swa_inputs *in,
                                   const swa_out_args *o, bool write_lse, swa_error *err);
swa_status swa_host_run_decode_aiter(const swa_decode_aiter_plan *p, const swa_inputs *in, const swa_out_args *o,
                                     swa_error *err);
#ifdef __cplusplus
}
#endif
#endif /* SWADIFF_HOST_DEVICE_H */
