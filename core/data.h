/* data.h — deterministic inputs for a case and the paged KV cache built
 * from them (docs/spec.md; docs/cases.md).
 *
 * PRNG: SplitMix64 (Steele, Lea, Flood 2014), one stream per tensor seeded
 * with splitmix64(case.seed ^ fnv1a64(tensor name)).  Uniform values are the
 * top 53 bits / 2^53; "normal" is the Irwin–Hall sum of 12 uniforms minus 6
 * (mean 0, variance 1), chosen because it needs no libm, so the same case
 * gives bit-identical tensors on every machine.  Every value is rounded to
 * the case dtype before anything else sees it, so the float copies below are
 * exactly the values the backends read.
 *
 * Ownership: swa_inputs_create allocates everything in swa_inputs;
 * swa_inputs_free releases it. */
#ifndef SWADIFF_DATA_H
#define SWADIFF_DATA_H

#include "core/case.h"
#include "core/paged.h"

typedef struct swa_inputs {
    int num_requests;
    int *qo_indptr;            /* [B + 1] */
    int *kv_indptr;            /* [B + 1], logical (un-paged) token offsets */
    int total_qo, total_kv;
    int num_qo_heads, num_kv_heads, head_dim;
    swa_dtype dtype;

    /* Exact values (already rounded to dtype), logical layout:
     * q [total_qo][num_qo_heads][head_dim], k/v [total_kv][num_kv_heads][head_dim]. */
    float *q, *k, *v;
    /* The same values in dtype storage, same layout (what a ragged backend reads). */
    void *q_raw, *k_raw, *v_raw;

    swa_paged_kv paged;
    int evicted_page;          /* poison: the shared page evicted entries point at, else -1 */
} swa_inputs;

/* Poison data evicts only pages wholly before the first visible key of the
 * request rounded down to this many keys: the coarsest granularity at which
 * a correct backend of ours starts loading (decode_aiter's 256-key
 * partitions; prefill KV tiles of 32 or 64 keys and decode_fa2's pages
 * start at or after it).  See data.c's header. */
#define SWA_POISON_EVICT_ALIGN 256

#ifdef __cplusplus
extern "C" {
#endif

/* Generates q/k/v for the case (distribution: normal, uniform, poison or
 * edge, described in data.c; seed; poison rules of docs/cases.md) and
 * builds the paged cache.  Returns SWA_OK or an error
 * (allocation failure, sizes over the memory estimate). */
swa_status swa_inputs_create(const swa_case *c, swa_inputs *in, swa_error *err);
void swa_inputs_free(swa_inputs *in);

/* The inputs of a derived case nc (the invariance checks: a request alone,
 * the batch reordered, another page order or page size) made from the
 * case's own inputs, never regenerated: request i of nc is request from[i]
 * of base_case, its q rows and K/V tokens bit for bit; the paged cache is
 * rebuilt for nc's page size and layout with pages shuffled by page_seed,
 * and poison evicts nc's pages as swa_inputs_create would.  nc's qo_len and
 * kv_len must be those of the requests it takes (SWA_ERR_INVALID). */
swa_status swa_inputs_derive(const swa_inputs *base, const swa_case *base_case, const swa_case *nc,
                             const int *from, uint64_t page_seed, swa_inputs *in, swa_error *err);

/* Poison placement (data.c's header): the first key some query row of
 * request r may see (keys before it get K = NaN, V = +-4096), and the number
 * of leading pages of r that are evicted (NaN, entries on a shared page). */
int swa_poison_first_visible(const swa_case *c, int r);
int swa_poison_evicted_pages(const swa_case *c, int r);

/* Bytes the case's tensors take on the host (inputs, cache pool, outputs,
 * reference), estimated before allocating anything. */
size_t swa_case_host_bytes(const swa_case *c);

/* Bytes a GPU device holds for the case before any plan runs: q, the paged
 * K/V pool, the ragged K/V, the page tables, the guarded output and LSE
 * (guard_bytes each side).  The split-KV partial buffers depend on the plan
 * and are not included (their allocation reports its own failure).  Checked
 * against the device's free memory before upload (harness/run.c). */
size_t swa_case_device_bytes(const swa_case *c, size_t guard_bytes);

#ifdef __cplusplus
}
#endif
#endif /* SWADIFF_DATA_H */
