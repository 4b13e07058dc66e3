/* attn_primitives.h — the small pieces of attention arithmetic every device
 * shares: query positions, THE per-element mask (with the kernel-level
 * mutant switch inside it), the prefill KV-start skip, the decode window
 * base, page-table lookups, logits in the exp2 domain, online-softmax and
 * partial-state merge helpers.
 *
 * Header-only and __host__ __device__ when compiled by nvcc, so the host
 * emulation (backends/host/) and the CUDA kernels (backends/cuda/) call the
 * very same code: a mask bug cannot hide in one copy.  Tested through
 * tests/test_plan_*.c and tests/test_host_*.c.
 *
 * Mutant switches sit in per-row / per-item helpers (row ranges, chunk
 * bases, page entries), never in the per-element inner loop: a row's mask is
 * a closed key interval [lo, hi] computed once, and the inner loop only
 * compares k against it.
 *
 * The plan contract every device follows is written in plan.h, beside the
 * structs it constrains. */
#ifndef SWADIFF_ATTN_PRIMITIVES_H
#define SWADIFF_ATTN_PRIMITIVES_H

#if !defined(__CUDACC__) && !defined(__HIPCC__) /* nvcc, or hipcc (ROCm build) */
#define SWA_HD
#else
#define SWA_HD __host__ __device__
#endif

#include <math.h>
#include "backends/plan.h"

#define SWA_LOG2E 1.4426950408889634f
#define SWA_LN2 0.6931471805599453f
#define SWA_KEY_MAX 0x7fffffff

SWA_HD static inline int swa_imin(int a, int b) { return a < b ? a : b; }
SWA_HD static inline int swa_imax(int a, int b) { return a > b ? a : b; }
SWA_HD static inline int swa_ceil_div(int a, int b) { return (a + b - 1) / b; }
/* x >= 0, a >= 1 */
SWA_HD static inline int swa_align_down(int x, int a) { return x - x % a; }
SWA_HD static inline int swa_align_up(int x, int a) { return swa_ceil_div(x, a) * a; }

/* --------------------------------------------------------------------------
 * Positions and the mask. */

/* Absolute position of query row i (bottom-right alignment, docs/spec.md).
 * Mutant TOP_LEFT_ALIGN: p = i. */
SWA_HD static inline int swa_query_pos(int kv_len, int qo_len, int i, swa_mutant m)
{
    return m == SWA_MUTANT_TOP_LEFT_ALIGN ? i : kv_len - qo_len + i;
}

/* Position the window's left edge is measured from: the row itself.
 * Mutant REQUEST_ANCHORED: the request's first new token (prefix_len) for
 * every row, so later rows see the same keys as the first. */
SWA_HD static inline int swa_window_anchor(int p, int kv_len, int qo_len, swa_mutant m)
{
    return m == SWA_MUTANT_REQUEST_ANCHORED ? kv_len - qo_len : p;
}

/* Keys visible to one query row: lo <= k <= hi. */
typedef struct swa_key_range {
    int lo, hi;
} swa_key_range;

/* First key of the chunk that holds position p (chunked local attention,
 * chunk size C >= 1): floor(p/C)*C; 0 for p < 0 (such a row is empty by
 * causality anyway).  Mutants CHUNK_AS_WINDOW (a sliding window of C keys,
 * p - C + 1) and CHUNK_START_OFF_BY_ONE (the start read as exclusive,
 * floor(p/C)*C + 1) live here. */
SWA_HD static inline int swa_chunk_start(int p, int chunk_size, swa_mutant m)
{
    if (p < 0)
        return 0;
    if (m == SWA_MUTANT_CHUNK_AS_WINDOW)
        return swa_imax(0, p - chunk_size + 1);
    int start = p - p % chunk_size;
    return m == SWA_MUTANT_CHUNK_START_OFF_BY_ONE ? start + 1 : start;
}

/* THE per-element mask of one query row: the closed key interval [lo, hi]
 * (empty when lo > hi).  causal drops k > p.  When mask_window (the window
 * was compiled in at plan time): the left window drops k < anchor - L
 * (L >= 0), the right bound drops k > p + R (non-causal rows, R >= 0) and a
 * chunk size C > 0 drops k < floor(p/C)*C.  Mutants LEFT_BOUND_GT
 * (k > anchor - L), LEFT_BOUND_MINUS1 (k >= anchor - L - 1),
 * RIGHT_BOUND_DROPPED (R never reaches the kernel), the chunk mutants of
 * swa_chunk_start, and WINDOW_OFF_NOT_NORMALISED (L = -1 used as a number
 * by the predicate, mask_window or not: k >= p + 1) live here.
 * Positions are below 2^24 and L, R at most 2^30 (the loader's bounds), so
 * nothing here overflows int. */
SWA_HD static inline swa_key_range swa_mask_row_range(int p, int anchor, int window_left, int window_right,
                                                      int chunk_size, bool mask_window, bool causal,
                                                      swa_mutant m)
{
    swa_key_range r;
    r.lo = 0;
    r.hi = causal ? p : SWA_KEY_MAX;
    if (window_left < 0 && m == SWA_MUTANT_WINDOW_OFF_NOT_NORMALISED)
        r.lo = swa_imax(anchor - window_left, 0);
    if (!mask_window)
        return r;
    if (window_left >= 0) {
        int lo = anchor - window_left;
        if (m == SWA_MUTANT_LEFT_BOUND_GT)
            lo += 1;
        else if (m == SWA_MUTANT_LEFT_BOUND_MINUS1)
            lo -= 1;
        r.lo = swa_imax(lo, 0);
    }
    if (!causal && window_right >= 0 && m != SWA_MUTANT_RIGHT_BOUND_DROPPED)
        r.hi = p + window_right;
    if (chunk_size > 0)
        r.lo = swa_imax(r.lo, swa_chunk_start(p, chunk_size, m));
    return r;
}

SWA_HD static inline bool swa_mask_visible(int k, swa_key_range r) { return k >= r.lo && k <= r.hi; }

/* --------------------------------------------------------------------------
 * Prefill (plan.h): packed rows, KV-start skip, KV end. */

/* qo head served by slot j (0..group-1) of a CTA working on kv_head.
 * Mutant GQA_MOD_MAPPING: the CTA serves the qo heads h with
 * h % num_kv_heads == kv_head, i.e. qo head h reads kv head h % num_kv_heads
 * instead of h / group. */
SWA_HD static inline int swa_qo_head_of(int kv_head, int j, int group, int num_kv_heads, swa_mutant m)
{
    return m == SWA_MUTANT_GQA_MOD_MAPPING ? kv_head + j * num_kv_heads : kv_head * group + j;
}

/* Query row of a prefill tile's first packed row (the row its KV-start
 * skip is measured from).  Mutant GQA_PACKED_ROW_BOUND forgets the
 * / group_size: with GQA, later tiles start their KV loop too late. */
SWA_HD static inline int swa_tile_first_row(int packed_first, int group, swa_mutant m)
{
    return m == SWA_MUTANT_GQA_PACKED_ROW_BOUND ? packed_first : packed_first / group;
}

/* First key a prefill KV loop loads: the coarse per-CTA skip to the first
 * visible key of the tile's first row (p_first, its window anchor
 * anchor_first), aligned down to the KV tile.  Driven by the run-time window
 * (plan->run_window_left, -1 = no left window) and the chunk size (0 = off).
 * Mutant KV_START_SKIP_DROPPED: no skip, the loop starts at the chunk start:
 * later rows' windows and chunks start at or after p_first's, so the first
 * row's start bounds the whole tile. */
SWA_HD static inline int swa_prefill_kv_begin(int chunk_begin, int p_first, int anchor_first,
                                              int run_window_left, int chunk_size, int cta_tile_kv,
                                              swa_mutant m)
{
    int ws = 0;
    if (m == SWA_MUTANT_KV_START_SKIP_DROPPED)
        return chunk_begin; /* every tile from the chunk start, the mask alone excludes */
    if (run_window_left >= 0)
        ws = swa_imax(0, anchor_first - run_window_left);
    if (chunk_size > 0)
        ws = swa_imax(ws, swa_chunk_start(p_first, chunk_size, m));
    if (ws == 0)
        return chunk_begin;
    return swa_imax(chunk_begin, swa_align_down(ws, cta_tile_kv));
}

/* One past the last key a prefill KV loop loads: the tile's last row p_last
 * bounds it, causal at p_last, non-causal at p_last + R with a right bound
 * R >= 0, else the chunk end.  Mutant NONCAUSAL_SPAN_AS_CAUSAL sizes a
 * non-causal tile as causal (p_last + 1): keys right of p_last are never
 * loaded. */
SWA_HD static inline int swa_prefill_kv_end(int chunk_end, int p_last, bool causal, int window_right,
                                            swa_mutant m)
{
    if (causal || m == SWA_MUTANT_NONCAUSAL_SPAN_AS_CAUSAL)
        return swa_imax(0, swa_imin(chunk_end, p_last + 1));
    if (window_right >= 0 && m != SWA_MUTANT_RIGHT_BOUND_DROPPED)
        return swa_imax(0, swa_imin(chunk_end, p_last + window_right + 1));
    return chunk_end;
}

/* --------------------------------------------------------------------------
 * Decode (plan.h): window start, chunk base, kv_len from the page table. */

/* First visible key of a decode row (p = kv_len - 1): its left window
 * start, or its chunk's first key (chunk_size > 0; the chunk mutants of
 * swa_chunk_start apply). */
SWA_HD static inline int swa_decode_window_start(int kv_len, int window_left, int chunk_size, swa_mutant m)
{
    int ws = window_left >= 0 ? swa_imax(0, kv_len - 1 - window_left) : 0;
    if (chunk_size > 0)
        ws = swa_imax(ws, swa_chunk_start(kv_len - 1, chunk_size, m));
    return ws;
}

/* Where decode chunk 0 starts: the page holding the window start, so pages
 * wholly before the window are never loaded.  Mutant WINDOW_PAGE_CROSS
 * rounds up instead: the keys of the page the window starts in are lost;
 * mutant KV_START_SKIP_DROPPED starts at key 0 (evicted pages are read);
 * mutant PAGE_UNITS_TOKENS counts the skipped pages in tokens (first page
 * window_start instead of window_start / page_size: exact at page size 1,
 * the window's keys skipped at any other). */
SWA_HD static inline int swa_decode_chunk_base(int window_start, int page_size, swa_mutant m)
{
    if (m == SWA_MUTANT_KV_START_SKIP_DROPPED)
        return 0; /* pages before the window loaded too; only the mask excludes them */
    if (m == SWA_MUTANT_PAGE_UNITS_TOKENS) { /* pages skipped = window start in tokens */
        long long b = (long long)window_start * page_size;
        return b > (1 << 30) ? (1 << 30) : (int)b; /* past kv_len: nothing loaded (keys < 2^24) */
    }
    return m == SWA_MUTANT_WINDOW_PAGE_CROSS ? swa_align_up(window_start, page_size)
                                             : swa_align_down(window_start, page_size);
}

/* Left bound a row applies inside the KV tile that starts at key kb of a
 * KV loop that began at kv_begin: the row's own lo.  Mutant
 * WINDOW_MASK_SKIPPED_IN_EDGE_TILE skips the left bound in the loop's first
 * tile, the one that straddles the window start after the aligned-down
 * KV-start skip (a kernel that masks only "boundary" tiles and gets the
 * first one wrong); keys before kb are not in the tile anyway. */
SWA_HD static inline int swa_tile_row_lo(int lo, int kb, int kv_begin, swa_mutant m)
{
    return m == SWA_MUTANT_WINDOW_MASK_SKIPPED_IN_EDGE_TILE && kb == kv_begin ? swa_imin(lo, kb) : lo;
}

/* FlashInfer: (num_pages - 1) * page_size + last_page_len. */
SWA_HD static inline int swa_paged_kv_len(int num_pages, int page_size, int last_page_len)
{
    return num_pages > 0 ? (num_pages - 1) * page_size + last_page_len : 0;
}

/* Index into a FlashInfer `indices` array (or a block_tables row) of the page
 * holding token t of a request whose page list starts at page_begin and has
 * num_pages entries.  Mutant FOREIGN_PAGE_READ: the request's last page is
 * looked up one entry too far (the plans pad the table with one spare entry
 * so that read stays inside the table and lands on a page the request does
 * not own). */
SWA_HD static inline int swa_page_entry(int page_begin, int num_pages, int t, int page_size, swa_mutant m)
{
    int lp = t / page_size;
    if (m == SWA_MUTANT_FOREIGN_PAGE_READ && lp == num_pages - 1)
        lp += 1;
    return page_begin + lp;
}

/* Element offset of (page, slot, kv head, 0) in a pool (core/paged.h). */
SWA_HD static inline size_t swa_pool_offset(swa_layout layout, int page, int slot, int head, int page_size,
                                            int num_kv_heads, int head_dim)
{
    if (layout == SWA_LAYOUT_NHD)
        return (((size_t)page * page_size + slot) * num_kv_heads + head) * head_dim;
    return (((size_t)page * num_kv_heads + head) * page_size + slot) * head_dim;
}

/* --------------------------------------------------------------------------
 * Softmax arithmetic, exp2 domain. */

/* tanh of the soft cap.  Mutant SOFTCAP_TANH_OVERFLOW writes it as
 * (e^2x - 1) / (e^2x + 1) in fp32: e^2x overflows for x > 44, inf / inf =
 * NaN, so a large positive logit becomes NaN instead of the cap. */
SWA_HD static inline float swa_cap_tanh(float x, swa_mutant m)
{
    if (m == SWA_MUTANT_SOFTCAP_TANH_OVERFLOW) {
        float e = expf(2.0f * x);
        return (e - 1.0f) / (e + 1.0f);
    }
    return tanhf(x);
}

/* Logit of one (q, k) dot product (accumulated in fp32) in the log2 domain:
 * s = qk * sm_scale, soft cap c*tanh(s/c) when cap_on, then * log2(e). */
SWA_HD static inline float swa_logit_log2(float qk, float sm_scale, float soft_cap, bool cap_on, swa_mutant m)
{
    float s = qk * sm_scale;
    if (cap_on)
        s = soft_cap * swa_cap_tanh(s / soft_cap, m);
    return s * SWA_LOG2E;
}

/* Rescale factor of the running state when the running max moves from
 * m_old to m_new (m_new finite).  A state that has seen nothing (m_old =
 * -inf) holds zeros, so any factor works; 0 avoids inf - inf. */
SWA_HD static inline float swa_online_rescale(float m_old, float m_new)
{
    return m_old == -INFINITY ? 0.0f : exp2f(m_old - m_new);
}

/* Factor a finished state's accumulator is scaled by: 1/d, and 0 for a row
 * that saw no key (d = 0), so an empty row stores exactly 0 (a NaN d from a
 * poisoned key stays NaN).  Mutant EMPTY_ROW_NAN divides by the zero sum
 * anyway: 0 * (1/0) = NaN.  Merges of no partial use swa_state_inv_sum(0). */
SWA_HD static inline float swa_state_inv_sum(float d, swa_mutant m)
{
    return d == 0.0f && m != SWA_MUTANT_EMPTY_ROW_NAN ? 0.0f : 1.0f / d;
}

/* Output dims a P.V loop covers.  Mutant HEAD_DIM_LOOP_TRUNCATED counts
 * its iterations as head_dim / 128 (a 128-dim warp tile, integer
 * division): the dims past the last full tile are never written (0), and
 * head_dim 64 gets no P.V at all. */
SWA_HD static inline int swa_pv_dims(int head_dim, swa_mutant m)
{
    return m == SWA_MUTANT_HEAD_DIM_LOOP_TRUNCATED ? head_dim / 128 * 128 : head_dim;
}

/* Finite mask sentinel used as the emptiness test (mutant
 * FINITE_SENTINEL_EMPTY_ROW): a kernel that masks with -5e4 instead of
 * -inf and treats a row whose max logit (natural log) is <= -5e4 as fully
 * masked writes 0 and LSE -inf for it, although it sees real keys.  m_log2
 * is the row's running max in the exp2 domain; false without the mutant. */
#define SWA_FINITE_MASK_SENTINEL (-5.0e4f)
SWA_HD static inline bool swa_row_empty_by_sentinel(float m_log2, swa_mutant m)
{
    return m == SWA_MUTANT_FINITE_SENTINEL_EMPTY_ROW && m_log2 * SWA_LN2 <= SWA_FINITE_MASK_SENTINEL;
}

/* Base-2 LSE of a finished state: m + log2(d); -inf when nothing was seen
 * (a NaN d from a poisoned key stays NaN). */
SWA_HD static inline float swa_state_lse(float m, float d)
{
    return d == 0.0f ? -INFINITY : m + log2f(d);
}

/* Weight of one partial state in a merge: 2^(lse_part - lse_max); 0 for an
 * empty partial (lse_part = -inf). */
SWA_HD static inline float swa_merge_weight(float lse_part, float lse_max)
{
    return lse_part == -INFINITY ? 0.0f : exp2f(lse_part - lse_max);
}

/* The LSE a kernel writes for a base-2 value.  Mutant LSE_WRONG_BASE writes
 * the natural log while the backend still declares base 2. */
SWA_HD static inline float swa_lse_store_value(float lse2, swa_mutant m)
{
    return m == SWA_MUTANT_LSE_WRONG_BASE ? lse2 * SWA_LN2 : lse2;
}

#endif /* SWADIFF_ATTN_PRIMITIVES_H */
