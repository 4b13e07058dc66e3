/* paged.h — the paged KV cache, in FlashInfer's and AITER/vLLM's forms.
 * Defined in core/paged.c.
 *
 * Ownership: swa_paged_build allocates everything in swa_paged_kv;
 * swa_paged_free releases it. */
#ifndef SWADIFF_PAGED_H
#define SWADIFF_PAGED_H

#include "core/common.h"

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

#ifdef __cplusplus
extern "C" {
#endif

/* Builds a paged cache from logical k/v (float, exact values) for the given
 * lengths: pages in shuffled order (rng), spare pages NaN.  Used by
 * swa_inputs_create and by the page-table tests. */
swa_status swa_paged_build(swa_paged_kv *kv, swa_dtype dtype, swa_layout layout, int page_size,
                           int num_requests, const int *kv_len, int num_kv_heads, int head_dim,
                           const float *k, const float *v, uint64_t seed, swa_error *err);
void swa_paged_free(swa_paged_kv *kv);

/* The page table alone, no pool (k_pages / v_pages NULL), for planners
 * that never read K/V (swadiff coverage): pages numbered in order, one
 * spare page at the end that no request references, both table forms;
 * kv_len[r] may be 0 (no page, last_page_len 0).  swa_paged_free frees it. */
swa_status swa_paged_table_only(swa_paged_kv *kv, swa_dtype dtype, swa_layout layout, int page_size,
                                int num_requests, const int *kv_len, int num_kv_heads, int head_dim, swa_error *err);

/* Evicts the first evict_pages[r] pages of every request r, as a serving
 * engine that frees pages wholly outside the window does: their contents
 * become NaN (K and V) and their entries, in both page-table forms, point
 * at one shared evicted page (the first evicted page of the batch), so the
 * table keeps its length and kv_len is unchanged.  A correct kernel never
 * loads an evicted entry; one that does reads NaN.  evict_pages[r] must be
 * below the request's page count (the page holding its newest key stays).
 * Returns the shared page id, or -1 when nothing was evicted. */
int swa_paged_evict_prefix(swa_paged_kv *kv, const int *evict_pages);

/* Gathers token t of request r, kv head h from the pool (FlashInfer form)
 * into dst[head_dim] as floats.  which: 0 = K, 1 = V. */
void swa_paged_gather(const swa_paged_kv *kv, int which, int r, int t, int h, float *dst);

#ifdef __cplusplus
}
#endif
#endif /* SWADIFF_PAGED_H */
