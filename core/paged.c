/* paged.c — the paged KV cache a case's keys and values live in
 * (docs/spec.md), in both page-table forms: FlashInfer's
 * indptr/indices/last_page_len and AITER/vLLM's block_tables/context_lens.
 *
 * Test: tests/test_paged.c (gather round trips for page sizes 1, 7, 16 and
 * both layouts through both tables; spare pages NaN and unreferenced).
 *
 * Why it is built this way:
 *  - Physical pages are handed out in a shuffled order (Fisher–Yates over
 *    the whole pool, stream "pages" of the case seed), so a kernel that
 *    assumes contiguous or ascending pages reads the wrong keys.
 *  - The pool holds spare pages no request references: a quarter of the
 *    used pages, at least one.  Spare pages, and the slots past kv_len in
 *    each request's last page, hold NaN: a kernel that reads them (a wrong
 *    page, last_page_len off by one, an unmasked tail of a tile) turns its
 *    output into NaN, which no tolerance forgives. */
#include "core/paged.h"

#include "core/rng.h"

#include <stdlib.h>
#include <string.h>

void swa_paged_free(swa_paged_kv *kv)
{
    if (!kv)
        return;
    free(kv->k_pages);
    free(kv->v_pages);
    free(kv->indptr);
    free(kv->indices);
    free(kv->last_page_len);
    free(kv->block_tables);
    free(kv->context_lens);
    memset(kv, 0, sizeof *kv);
}

/* Quiet NaN in every element of a pool. */
static void fill_nan(void *pool, swa_dtype dtype, size_t n)
{
    if (dtype == SWA_DTYPE_FP32) {
        float nan = swa_bits_f32(0x7fc00000u);
        for (size_t i = 0; i < n; i++)
            ((float *)pool)[i] = nan;
        return;
    }
    uint16_t nan = dtype == SWA_DTYPE_FP16 ? 0x7e00u : 0x7fc0u;
    for (size_t i = 0; i < n; i++)
        ((uint16_t *)pool)[i] = nan;
}

/* Both table forms for kv_len: request r's pages are order[next..] (the
 * identity when order is NULL), its last page holds last_page_len tokens
 * (0 for an empty request).  The arrays are allocated by the caller. */
static void paged_table_fill(swa_paged_kv *kv, const int *kv_len, const int *order)
{
    int next_page = 0, ps = kv->page_size, mb = kv->max_blocks_per_seq;
    for (size_t i = 0; i < (size_t)kv->num_requests * (size_t)mb; i++)
        kv->block_tables[i] = -1;
    kv->indptr[0] = 0;
    for (int r = 0; r < kv->num_requests; r++) {
        int pages = (int)(((long long)kv_len[r] + ps - 1) / ps);
        kv->indptr[r + 1] = kv->indptr[r] + pages;
        kv->last_page_len[r] = pages > 0 ? kv_len[r] - (pages - 1) * ps : 0;
        kv->context_lens[r] = kv_len[r];
        for (int p = 0; p < pages; p++, next_page++) {
            int page = order ? order[next_page] : next_page;
            kv->indices[kv->indptr[r] + p] = page;
            kv->block_tables[(size_t)r * (size_t)mb + (size_t)p] = page;
        }
    }
}

/* Page count of the batch (*used) and of its longest request for kv_len;
 * every kv_len must be >= min_len. */
static swa_status paged_count(int page_size, int num_requests, const int *kv_len, int min_len, long long *used,
                              int *max_blocks, swa_error *err)
{
    *used = 0;
    *max_blocks = 0;
    for (int r = 0; r < num_requests; r++) {
        if (kv_len[r] < min_len)
            return swa_error_set(err, SWA_ERR_INVALID, "paged cache: request %d: expected kv_len >= %d, got %d", r,
                                 min_len, kv_len[r]);
        int pages = (int)(((long long)kv_len[r] + page_size - 1) / page_size);
        *used += pages;
        if (pages > *max_blocks)
            *max_blocks = pages;
    }
    return SWA_OK;
}

swa_status swa_paged_table_only(swa_paged_kv *kv, swa_dtype dtype, swa_layout layout, int page_size,
                                int num_requests, const int *kv_len, int num_kv_heads, int head_dim, swa_error *err)
{
    memset(kv, 0, sizeof *kv);
    if (page_size < 1 || num_requests < 1 || !kv_len)
        return swa_error_set(err, SWA_ERR_INVALID, "page table: expected page_size and requests >= 1, got %d, %d",
                             page_size, num_requests);
    int max_blocks;
    long long used;
    swa_status st = paged_count(page_size, num_requests, kv_len, 0, &used, &max_blocks, err);
    if (st != SWA_OK)
        return st;
    if (used + 1 > INT32_MAX)
        return swa_error_set(err, SWA_ERR_INVALID, "page table: expected at most 2^31-1 pages, got %lld", used + 1);
    kv->dtype = dtype;
    kv->layout = layout;
    kv->page_size = page_size;
    kv->num_kv_heads = num_kv_heads;
    kv->head_dim = head_dim;
    kv->num_pages = (int)used + 1; /* the last one is referenced by no request */
    kv->num_requests = num_requests;
    kv->max_blocks_per_seq = max_blocks;
    kv->indptr = malloc((size_t)(num_requests + 1) * sizeof *kv->indptr);
    kv->indices = malloc(((size_t)used + 1) * sizeof *kv->indices);
    kv->last_page_len = malloc((size_t)num_requests * sizeof *kv->last_page_len);
    kv->block_tables = malloc(((size_t)num_requests * (size_t)max_blocks + 1) * sizeof *kv->block_tables);
    kv->context_lens = malloc((size_t)num_requests * sizeof *kv->context_lens);
    if (!kv->indptr || !kv->indices || !kv->last_page_len || !kv->block_tables || !kv->context_lens) {
        swa_paged_free(kv);
        return swa_error_set(err, SWA_ERR_NOMEM, "page table: out of host memory for %lld pages", used + 1);
    }
    paged_table_fill(kv, kv_len, NULL);
    return SWA_OK;
}

swa_status swa_paged_build(swa_paged_kv *kv, swa_dtype dtype, swa_layout layout, int page_size,
                           int num_requests, const int *kv_len, int num_kv_heads, int head_dim,
                           const float *k, const float *v, uint64_t seed, swa_error *err)
{
    memset(kv, 0, sizeof *kv);
    if (page_size < 1 || num_requests < 1 || num_kv_heads < 1 || head_dim < 1 || !kv_len)
        return swa_error_set(err, SWA_ERR_INVALID,
                             "paged cache: expected page_size, requests, kv heads and head_dim >= 1, got %d, %d, %d, %d",
                             page_size, num_requests, num_kv_heads, head_dim);
    int max_blocks;
    long long used;
    swa_status st = paged_count(page_size, num_requests, kv_len, 1, &used, &max_blocks, err);
    if (st != SWA_OK)
        return st;
    long long spare = used / 4 > 0 ? used / 4 : 1;
    if (used + spare > INT32_MAX)
        return swa_error_set(err, SWA_ERR_INVALID, "paged cache: expected at most 2^31-1 pages, got %lld", used + spare);

    kv->dtype = dtype;
    kv->layout = layout;
    kv->page_size = page_size;
    kv->num_kv_heads = num_kv_heads;
    kv->head_dim = head_dim;
    kv->num_pages = (int)(used + spare);
    kv->num_requests = num_requests;
    kv->max_blocks_per_seq = max_blocks;

    size_t page_elems = (size_t)page_size * (size_t)num_kv_heads * (size_t)head_dim;
    size_t pool_elems = (size_t)kv->num_pages * page_elems;
    size_t dsize = swa_dtype_size(dtype);
    int *order = malloc((size_t)kv->num_pages * sizeof *order);
    kv->k_pages = malloc(pool_elems * dsize);
    kv->v_pages = malloc(pool_elems * dsize);
    kv->indptr = malloc((size_t)(num_requests + 1) * sizeof *kv->indptr);
    kv->indices = malloc((size_t)used * sizeof *kv->indices);
    kv->last_page_len = malloc((size_t)num_requests * sizeof *kv->last_page_len);
    kv->block_tables = malloc((size_t)num_requests * (size_t)max_blocks * sizeof *kv->block_tables);
    kv->context_lens = malloc((size_t)num_requests * sizeof *kv->context_lens);
    if (!order || !kv->k_pages || !kv->v_pages || !kv->indptr || !kv->indices || !kv->last_page_len ||
        !kv->block_tables || !kv->context_lens) {
        free(order);
        swa_paged_free(kv);
        return swa_error_set(err, SWA_ERR_NOMEM, "paged cache: out of host memory for %d pages of %zu bytes",
                             (int)(used + spare), page_elems * dsize);
    }
    fill_nan(kv->k_pages, dtype, pool_elems);
    fill_nan(kv->v_pages, dtype, pool_elems);

    /* the physical order pages are handed out in */
    swa_rng rng;
    swa_rng_seed(&rng, seed, "pages");
    for (int i = 0; i < kv->num_pages; i++)
        order[i] = i;
    for (int i = kv->num_pages - 1; i > 0; i--) {
        int j = (int)swa_rng_below(&rng, (uint64_t)i + 1);
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }

    paged_table_fill(kv, kv_len, order);
    size_t row = (size_t)num_kv_heads * (size_t)head_dim;
    size_t logical = 0; /* first token of the request in k / v */
    for (int r = 0; r < num_requests; r++) {
        for (int t = 0; t < kv_len[r]; t++) {
            int page = kv->indices[kv->indptr[r] + t / page_size];
            for (int h = 0; h < num_kv_heads; h++) {
                size_t dst = swa_paged_offset(kv, page, t % page_size, h);
                size_t src = (logical + (size_t)t) * row + (size_t)h * (size_t)head_dim;
                for (int d = 0; d < head_dim; d++) {
                    swa_store(dtype, kv->k_pages, dst + (size_t)d, k[src + (size_t)d]);
                    swa_store(dtype, kv->v_pages, dst + (size_t)d, v[src + (size_t)d]);
                }
            }
        }
        logical += (size_t)kv_len[r];
    }
    free(order);
    return SWA_OK;
}

int swa_paged_evict_prefix(swa_paged_kv *kv, const int *evict_pages)
{
    size_t page_elems = (size_t)kv->page_size * (size_t)kv->num_kv_heads * (size_t)kv->head_dim;
    size_t dsize = swa_dtype_size(kv->dtype);
    int shared = -1;
    for (int r = 0; r < kv->num_requests; r++) {
        int pages = kv->indptr[r + 1] - kv->indptr[r];
        int n = evict_pages[r] < pages ? evict_pages[r] : pages - 1;
        for (int p = 0; p < n; p++) {
            int *entry = &kv->indices[kv->indptr[r] + p];
            if (*entry != shared) { /* free the page: garbage from now on */
                fill_nan((char *)kv->k_pages + (size_t)*entry * page_elems * dsize, kv->dtype, page_elems);
                fill_nan((char *)kv->v_pages + (size_t)*entry * page_elems * dsize, kv->dtype, page_elems);
            }
            if (shared < 0)
                shared = *entry;
            *entry = shared;
            kv->block_tables[(size_t)r * (size_t)kv->max_blocks_per_seq + (size_t)p] = shared;
        }
    }
    return shared;
}

void swa_paged_gather(const swa_paged_kv *kv, int which, int r, int t, int h, float *dst)
{
    int page = kv->indices[kv->indptr[r] + t / kv->page_size];
    size_t off = swa_paged_offset(kv, page, t % kv->page_size, h);
    const void *pool = which ? kv->v_pages : kv->k_pages;
    for (int d = 0; d < kv->head_dim; d++)
        dst[d] = swa_load(kv->dtype, pool, off + (size_t)d);
}
