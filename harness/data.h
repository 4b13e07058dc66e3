/* data.h — deterministic inputs for a case and the paged KV cache built
 * from them (DESIGN.md §3, §6).
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

#include "case.h"

typedef struct swa_rng { uint64_t state; } swa_rng;

#ifdef __cplusplus
extern "C" {
#endif
uint64_t swa_splitmix64(uint64_t *state);
uint64_t swa_fnv1a64(const char *s);
void swa_rng_seed(swa_rng *rng, uint64_t case_seed, const char *stream_name);
double swa_rng_uniform(swa_rng *rng);   /* [0, 1) */
double swa_rng_normal(swa_rng *rng);    /* Irwin–Hall(12) - 6 */
uint64_t swa_rng_below(swa_rng *rng, uint64_t n); /* [0, n), unbiased */
#ifdef __cplusplus
}
#endif

/* Paged KV cache: one pool of pages for K and one for V, in the case dtype.
 * NHD: [num_pages][page_size][num_kv_heads][head_dim]
 * HND: [num_pages][num_kv_heads][page_size][head_dim]
 * Pages are handed out in shuffled order; pages no request references stay
 * in the pool, filled with NaN.  The slots past kv_len in a request's last
 * page are NaN too: a kernel must not read (or must fully mask) them. */
typedef struct swa_paged_kv {
    swa_dtype dtype;
    swa_layout layout;
    int page_size, num_kv_heads, head_dim;
    int num_pages;             /* pool size, including unused pages */
    void *k_pages, *v_pages;   /* pool storage, dtype elements */

    /* FlashInfer form */
    int num_requests;
    int *indptr;               /* [num_requests + 1] into indices */
    int *indices;              /* [indptr[num_requests]] physical page ids */
    int *last_page_len;        /* [num_requests], 1..page_size */

    /* AITER / vLLM form (same pages) */
    int max_blocks_per_seq;
    int *block_tables;         /* [num_requests][max_blocks_per_seq], unused slots -1 */
    int *context_lens;         /* [num_requests] == kv_len */
} swa_paged_kv;

/* Offset (in elements) of (page, slot, kv_head, 0) in a pool. */
static inline size_t swa_paged_offset(const swa_paged_kv *kv, int page, int slot, int head)
{
    if (kv->layout == SWA_LAYOUT_NHD)
        return (((size_t)page * kv->page_size + slot) * kv->num_kv_heads + head) * kv->head_dim;
    return (((size_t)page * kv->num_kv_heads + head) * kv->page_size + slot) * kv->head_dim;
}

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
} swa_inputs;

#ifdef __cplusplus
extern "C" {
#endif

/* Generates q/k/v for the case (distribution, seed, poison rules of
 * DESIGN.md §6) and builds the paged cache.  Returns SWA_OK or an error
 * (allocation failure, sizes over the memory estimate). */
swa_status swa_inputs_create(const swa_case *c, swa_inputs *in, swa_error *err);
void swa_inputs_free(swa_inputs *in);

/* Builds a paged cache from logical k/v (float, exact values) for the given
 * lengths: pages in shuffled order (rng), spare pages NaN.  Used by
 * swa_inputs_create and by the page-table tests. */
swa_status swa_paged_build(swa_paged_kv *kv, swa_dtype dtype, swa_layout layout, int page_size,
                           int num_requests, const int *kv_len, int num_kv_heads, int head_dim,
                           const float *k, const float *v, uint64_t seed, swa_error *err);
void swa_paged_free(swa_paged_kv *kv);

/* Gathers token t of request r, kv head h from the pool (FlashInfer form)
 * into dst[head_dim] as floats.  which: 0 = K, 1 = V. */
void swa_paged_gather(const swa_paged_kv *kv, int which, int r, int t, int h, float *dst);

/* Bytes the case's tensors take on the host (inputs, cache pool, outputs,
 * reference), estimated before allocating anything. */
size_t swa_case_host_bytes(const swa_case *c);

#ifdef __cplusplus
}
#endif
#endif /* SWADIFF_DATA_H */
