/* prefill.h — the FlashInfer-style batch prefill backend's host side: plan
 * builder and the choices it makes (docs/backends.md, plan.h).
 *
 * The backend table is swa_backend_prefill (registered in registry.c).  Its
 * opaque plan (backend.h plan()) points to a struct whose first member is
 * the swa_prefill_plan; swa_prefill_plan_of() returns it.
 * Tested by tests/test_plan_prefill.c and tests/test_host_prefill.c. */
#ifndef SWADIFF_PREFILL_H
#define SWADIFF_PREFILL_H

#include "backends/backend.h"

extern const swa_backend swa_backend_prefill;

/* Query tile (packed rows) for a batch: 128 when the average packed length
 * (qo_len * group) is over 64 and head_dim < 256, 64 when it is over 16,
 * else 16 — short extends waste less of a small tile. */
int swa_prefill_cta_tile_q(double avg_packed_qo_len, int head_dim);
/* KV tile: 64 keys for head_dim <= 128, 32 for larger heads (shared memory). */
int swa_prefill_cta_tile_kv(int head_dim);

/* The deterministic mode's split-KV chunk (keys; a multiple of every KV
 * tile): the same for every batch, as FlashInfer's fixed split size. */
#define SWA_PREFILL_DETERMINISTIC_CHUNK 4096
/* SWA_TRAIT_* of the prefill backend for c (docs/invariance.md). */
unsigned swa_prefill_traits(const swa_backend *b, const swa_case *c);

/* Builds the plan for case c (mutant and occupancy from o; o may be NULL:
 * no mutant, 132 SMs).  *out is allocated; release with
 * swa_prefill_plan_free.  Errors: SWA_ERR_INVALID (bad shapes),
 * SWA_ERR_NOMEM. */
swa_status swa_prefill_plan_build(const swa_case *c, const swa_plan_opts *o, swa_prefill_plan **out,
                                  swa_error *err);
void swa_prefill_plan_free(swa_prefill_plan *p);

/* The swa_prefill_plan inside an opaque plan returned by
 * swa_backend_prefill.plan (borrowed; lives as long as the plan). */
const swa_prefill_plan *swa_prefill_plan_of(const void *backend_plan);

#endif /* SWADIFF_PREFILL_H */
