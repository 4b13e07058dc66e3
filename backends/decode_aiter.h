/* decode_aiter.h — the AITER PA v1-style decode backend's host side and the
 * decode_auto selector (docs/backends.md, seed 003).
 *
 * Opaque plans: swa_decode_aiter_plan_of() returns the swa_decode_aiter_plan
 * inside a plan of swa_backend_decode_aiter; swa_decode_auto_chosen() is
 * the backend decode_auto routed a plan to.
 * Tested by tests/test_plan_decode.c and tests/test_backend_decode.c. */
#ifndef SWADIFF_DECODE_AITER_H
#define SWADIFF_DECODE_AITER_H

#include "backends/backend.h"

extern const swa_backend swa_backend_decode_aiter;
extern const swa_backend swa_backend_decode_auto;

#define SWA_AITER_PARTITION_SIZE 256

/* The plan-time refusal of CUDA-graph mode (the exact text is part of the
 * contract: users grep for it). */
#define SWA_AITER_GRAPH_ERROR                                                                              \
    "decode_aiter cannot be used with CUDA-graph capture: its launch grid is sized from per-plan scalars " \
    "(max_kv_len, max_blocks_per_seq) that are baked into the captured graph; use decode_fa2 or "          \
    "decode_auto for CUDA-graph workflows"
#define SWA_AITER_SHADOW_WARNING \
    "decode_aiter has no LSE output: return_lse=True runs through a shadow decode_fa2 plan"

/* Builds the plan (no CUDA-graph; the shadow decode_fa2 plan when
 * c->return_lse, with the warning sent through o->warn once).  *out is
 * allocated; release with swa_decode_aiter_plan_free (frees the shadow). */
swa_status swa_decode_aiter_plan_build(const swa_case *c, const swa_paged_kv *kv, const swa_plan_opts *o,
                                       swa_decode_aiter_plan **out, swa_error *err);
void swa_decode_aiter_plan_free(swa_decode_aiter_plan *p);

const swa_decode_aiter_plan *swa_decode_aiter_plan_of(const void *backend_plan);

/* Where a decode_auto plan was routed: &swa_backend_decode_fa2 or
 * &swa_backend_decode_aiter (NULL for no plan). */
const swa_backend *swa_decode_auto_chosen(const void *backend_plan);
/* The chosen backend's own plan inside a decode_auto plan (borrowed). */
const void *swa_decode_auto_plan_of(const void *backend_plan);
/* The routing rule itself: CUDA-graph cases go to decode_fa2 (padded grid
 * read from memory), everything else to decode_aiter. */
const swa_backend *swa_decode_auto_route(const swa_case *c);

#endif /* SWADIFF_DECODE_AITER_H */
