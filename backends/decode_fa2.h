/* decode_fa2.h — the FlashInfer-style decode backend's host side: plan
 * builder, CUDA-graph plans and their in-place update (docs/backends.md,
 * plan.h).
 *
 * CUDA-graph workflow, as a user of the real library runs it:
 *   1. swa_decode_fa2_plan_graph() for the capture batch, with capacities
 *      for the worst case (graph_max_requests, graph_max_kv_len): every
 *      buffer is allocated at capacity and grid_work is padded to
 *      capacity_work (items w >= num_work exit at once);
 *   2. capture: the launch records grid_work (a scalar baked into the graph);
 *   3. swa_decode_fa2_graph_update() rewrites the buffers for a new batch
 *      (num_work, work list, page table, partial offsets) without touching
 *      grid_work, kv_chunk_size or the capacities;
 *   4. replay.
 * swa_decode_fa2_graph_copy() is step 3 done by copying an updated plan's
 * buffers into the captured plan's (what a device's decode_fa2_graph op
 * does between capture and replay).
 *
 * Ownership: builders allocate *out; release with swa_decode_fa2_plan_free.
 * Tested by tests/test_plan_decode.c and tests/test_host_decode.c. */
#ifndef SWADIFF_DECODE_FA2_H
#define SWADIFF_DECODE_FA2_H

#include "backends/backend.h"

extern const swa_backend swa_backend_decode_fa2;
/* SWA_TRAIT_* of decode_fa2 for c (docs/invariance.md). */
unsigned swa_decode_fa2_traits(const swa_backend *b, const swa_case *c);

/* Smallest split chunk worth a CTA (tokens, rounded up to the page size). */
#define SWA_DECODE_MIN_CHUNK 64
/* The deterministic mode's split-KV chunk (keys, rounded up to the page
 * size): the same for every batch. */
#define SWA_DECODE_DETERMINISTIC_CHUNK 1024

/* Plan for the first num_requests requests of case c over the paged cache
 * kv (non-graph).  o may be NULL (no mutant, 132 SMs). */
swa_status swa_decode_fa2_plan_build(const swa_case *c, const swa_paged_kv *kv, int num_requests,
                                     const swa_plan_opts *o, swa_decode_fa2_plan **out, swa_error *err);

/* Graph-mode plan for the capture batch (first capture_requests requests),
 * buffers and grid sized for graph_max_requests requests of up to
 * graph_max_kv_len keys.  The split decision and kv_chunk_size are taken
 * for that worst case and stay fixed across updates. */
swa_status swa_decode_fa2_plan_graph(const swa_case *c, const swa_paged_kv *kv, int capture_requests,
                                     int graph_max_requests, int graph_max_kv_len, const swa_plan_opts *o,
                                     swa_decode_fa2_plan **out, swa_error *err);

/* Rewrites a graph-mode plan in place for the first num_requests requests
 * of kv.  SWA_ERR_INVALID (plan unchanged) when the batch exceeds the
 * plan's capacities or the plan is not a graph plan. */
swa_status swa_decode_fa2_graph_update(swa_decode_fa2_plan *p, const swa_paged_kv *kv, int num_requests,
                                       swa_error *err);

/* Copies src's per-batch buffers and counts into dst (same capacities):
 * dst then describes src's batch but keeps its own grid_work. */
swa_status swa_decode_fa2_graph_copy(swa_decode_fa2_plan *dst, const swa_decode_fa2_plan *src, swa_error *err);

void swa_decode_fa2_plan_free(swa_decode_fa2_plan *p);

/* Plans inside an opaque plan of swa_backend_decode_fa2 (borrowed): the
 * plan run() executes (graph mode: the plan updated to the full batch), and
 * the captured plan (NULL unless graph mode). */
const swa_decode_fa2_plan *swa_decode_fa2_plan_of(const void *backend_plan);
const swa_decode_fa2_plan *swa_decode_fa2_captured_of(const void *backend_plan);

/* Shared with decode_aiter (shadow plans): validates the paged cache
 * against the case. */
swa_status swa_decode_check_cache(const char *backend, const swa_case *c, const swa_paged_kv *kv, swa_error *err);

#endif /* SWADIFF_DECODE_FA2_H */
