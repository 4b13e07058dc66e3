/* plan.h — the plans the three backends build on the host, shared by every
 * device (docs/backends.md).  The host emulation (backends/host/) and the CUDA
 * kernels (backends/cuda/) execute exactly these work lists; that is how a
 * machine without a GPU exercises the same scheduling as the H200.
 *
 * Conventions used by every device:
 *   q, out   [total_qo][num_qo_heads][head_dim] in the case dtype
 *   lse      [total_qo][num_qo_heads] float, base 2 for prefill/decode_fa2
 *   paged K/V pools as in core/paged.h (NHD or HND), FlashInfer page table
 *   ragged K/V [total_kv][num_kv_heads][head_dim] (prefill ragged mode)
 *   GQA: qo head h reads kv head h / group_size.
 *   Partial states (split-KV): o_part [slot][num_qo_heads][head_dim] float,
 *   lse_part [slot][num_qo_heads] float (base 2); a partial with no visible
 *   key has lse_part = -inf and o_part = 0.  The merge weights each partial
 *   by 2^(lse_part - lse_max).
 *
 * Ownership: every pointer in a plan is owned by the plan and released by
 * the backend's free().
 *
 * Plan semantics the host planners fix where the structs below leave room
 * (every device follows them):
 *  - split_kv (prefill and decode_fa2): EVERY work item writes its partial
 *    slot, also for a request with a single chunk, and the merge pass writes
 *    out/lse for every row of every request (a 1-chunk merge is a copy; a
 *    0-chunk merge, possible only under SPLIT_LAST_CHUNK_DROPPED, writes 0
 *    and -inf).  Without split_kv every item writes out/lse directly.
 *  - decode_fa2 without split: req_num_chunks = 1 and kv_chunk_size =
 *    align_up(max kv_len, page_size) (graph mode: of graph_max_kv_len), so
 *    the chunk formula of plan.h holds with c = 0.
 *  - decode_fa2 arrays: work_* hold capacity_work entries, req_* and
 *    kv_last_page_len capacity_requests, kv_indptr capacity_requests + 1,
 *    kv_indices capacity_pages + 1: entry kv_indptr[num_requests] is a spare
 *    page id (one no request owns when the pool has one, else page 0).
 *    Outside graph mode capacity_* equal the batch's sizes.
 *  - decode_fa2 graph mode: kv_chunk_size and split_kv are chosen for the
 *    worst case and never change on update; grid_work = capacity_work; the
 *    merge grid is capacity_requests blocks, those >= num_requests exit.
 *  - decode_aiter: max_blocks_per_seq is the longest page list + 1 and the
 *    unused block_tables slots hold the spare page id (not -1).
 *  - Plan-level mutants are already folded into the plan (nothing for a
 *    kernel to do): MASK_COMPILED_OUT, SPLIT_CHUNK_SHORT (kv_chunk_size is
 *    the shortened one), SPLIT_LAST_CHUNK_DROPPED, LAST_PAGE_LEN_OFF (the
 *    plan's kv_last_page_len), GRAPH_CAPTURED_SCALARS (grid_work), the AITER
 *    mappings (sliding_window), RETURN_LSE_IGNORED (wrapper).  Kernel-level
 *    ones go through the helpers below: LEFT_BOUND_GT/MINUS1, TOP_LEFT_ALIGN,
 *    REQUEST_ANCHORED, GQA_MOD_MAPPING, WINDOW_PAGE_CROSS, FOREIGN_PAGE_READ,
 *    RIGHT_BOUND_DROPPED, NONCAUSAL_SPAN_AS_CAUSAL, CHUNK_AS_WINDOW,
 *    CHUNK_START_OFF_BY_ONE, WINDOW_OFF_NOT_NORMALISED, GQA_PACKED_ROW_BOUND,
 *    EMPTY_ROW_NAN (swa_state_inv_sum: final and partial stores, merges),
 *    LSE_WRONG_BASE (final LSE writes only; partial LSEs stay base 2); and
 *    in the kernels: SOFTCAP_COMPILED_OUT (cap off), SOFTCAP_BEFORE_MASK
 *    (aiter: window-masked keys get logit -soft_cap when soft_cap > 0),
 *    LSE_MERGE_DROPPED (merge: plain mean of the n partial outputs, LSE
 *    still the true merge), OOB_WRITE (decode_fa2: one output element's
 *    bytes written right after out, i.e. into the guard).
 *  - Numerics: prefill rounds P to the dtype before P.V (tensor cores);
 *    decode_fa2 keeps P in fp32 (CUDA cores); decode_aiter works in the
 *    exp2 domain: max_logit is the base-2-scaled logit max, exp_sum =
 *    sum 2^(s - max_logit), P = 2^(s - max)/exp_sum rounded to the dtype,
 *    tmp_out rounded to the dtype when max_num_partitions > 1, reduce
 *    weight exp_sum_j * 2^(max_j - global max); max_num_partitions == 1
 *    writes out directly.  An empty partition is (-inf, 0, 0).
 *  - NaN: a NaN score (poisoned key) never becomes the running max (fmaxf)
 *    but still flows into d and acc, so reading poison yields NaN output.
 *    P.V covers every key a tile loaded, masked ones with P = 0, so a
 *    non-finite V anywhere in a loaded tile makes the row NaN (0 * NaN);
 *    a masked key's K may be NaN (its logit is replaced, never used).
 *  - Further kernel-level mutants: WINDOW_MASK_SKIPPED_IN_EDGE_TILE (no left
 *    bound in the first tile of a KV loop, prefill and decode_fa2; the
 *    device's tile), KV_START_SKIP_DROPPED and PAGE_UNITS_TOKENS (KV loop
 *    start), SOFTCAP_TANH_OVERFLOW (swa_cap_tanh), HEAD_DIM_LOOP_TRUNCATED
 *    (aiter P.V dims), FINITE_SENTINEL_EMPTY_ROW (final state, prefill and
 *    decode_fa2); plan-level: GRAPH_STALE_PARTIAL_OFFSETS (graph update),
 *    PLAN_REUSED_ACROSS_WINDOWS (backends/layer_plans.c). */
#ifndef SWADIFF_PLAN_H
#define SWADIFF_PLAN_H

#include "core/common.h"
#include "backends/mutants.h"

/* -------------------------------------------------------------------------
 * prefill — FlashInfer-style batch prefill, paged or ragged.
 *
 * Rows are packed GQA-style: packed row pr of request r is query row
 * pr / group_size, qo head kv_head * group_size + pr % group_size.  A work
 * item covers one query tile (cta_tile_q packed rows) and one KV chunk of
 * one request; the grid is num_work x num_kv_heads.
 *
 * For work item w and its tile's first query row i_first = first packed
 * row / group_size (position p_first = kv_len - qo_len + i_first, negative
 * for the empty rows of a request with qo_len > kv_len), the KV loop runs over
 *   [kv_begin, kv_end) with
 *   chunk = [c * kv_chunk_size, min((c+1) * kv_chunk_size, kv_len))   (whole
 *           request when !split_kv)
 *   ws       = max(p_first - L (run-time window L >= 0), floor(p_first/C)*C
 *              (chunk size C > 0), 0)
 *   kv_begin = max(chunk.begin, align_down(ws, cta_tile_kv))   (the KV-start skip)
 *   kv_end   = causal ? min(chunk.end, p_last + 1)
 *            : R >= 0 ? min(chunk.end, p_last + R + 1) : chunk.end   (at least 0)
 * so a non-causal band's tile spans L + R + tile rows of keys, not L + tile;
 * inside it the per-element mask (only when mask_window, i.e. the window was
 * known at plan time) drops k < p - L, k > p + R (non-causal) and
 * k < floor(p/C)*C; causal drops k > p.  A row with no visible key stores
 * output 0 and LSE -inf (partial or final).
 * Non-split items write out/lse directly; split items write partial slot
 *   req_partial_offset[r] + c * qo_len[r] + i
 * and a merge pass combines the req_num_chunks[r] partials of each row. */
typedef struct swa_prefill_plan {
    int num_requests, num_qo_heads, num_kv_heads, group_size, head_dim, page_size;
    swa_dtype dtype;
    swa_layout layout;
    swa_kv_mode kv_mode;
    bool causal;
    int window_left;      /* planned window; run() takes this one */
    int window_right;     /* R: -1 unbounded; R >= 0 non-causal rows see k <= p + R (0 when causal) */
    int chunk_size;       /* C: 0 off; C >= 1 chunked local attention, keys [floor(p/C)*C, p] */
    bool mask_window;     /* per-element window mask compiled in (planned window_left >= 0,
                           * a non-causal window_right >= 0 or a chunk size) */
    int run_window_left;  /* the window the KV-start skip uses at run (== window_left unless a mutant) */
    float sm_scale, soft_cap;
    swa_mutant mutant;

    int cta_tile_q;       /* packed rows per CTA: 16, 64 or 128 */
    int cta_tile_kv;      /* keys per KV tile */
    bool split_kv;
    int kv_chunk_size;    /* keys per chunk (multiple of cta_tile_kv) when split_kv */

    int num_work;
    int *work_request;    /* [num_work] */
    int *work_qo_tile;    /* [num_work] */
    int *work_kv_chunk;   /* [num_work], 0 when !split_kv */

    int *qo_indptr;       /* [num_requests + 1] */
    int *kv_indptr;       /* [num_requests + 1] logical token offsets (ragged mode) */
    int *qo_len, *kv_len; /* [num_requests] */
    int *req_num_chunks;      /* [num_requests] */
    int *req_partial_offset;  /* [num_requests] */
    int total_partial_rows;   /* slots in the partial buffers, 0 when !split_kv */
} swa_prefill_plan;

/* -------------------------------------------------------------------------
 * decode_fa2 — FlashInfer-style batch decode (qo_len = 1 per request).
 *
 * Work item w = (request, chunk); grid = grid_work x num_kv_heads, each CTA
 * handles all group_size qo heads of its kv head.  With ws = window start
 * (max(0, kv_len - 1 - L), or 0 without window) and base = align_down(ws,
 * page_size), chunk c covers tokens
 *   [base + c * kv_chunk_size, min(base + (c+1) * kv_chunk_size, kv_len))
 * so pages wholly before the window are never loaded; the per-element mask
 * drops k < ws.  With a chunk size C > 0 (chunked local attention) ws is
 * max(window start, floor((kv_len - 1)/C)*C).  A decode row sits on the last
 * key, so a right bound never removes anything and the plan ignores it.
 * kv_len comes from the page table:
 *   (indptr[r+1] - indptr[r] - 1) * page_size + last_page_len[r].
 * In CUDA-graph mode the buffers and grid_work are sized at plan time for
 * the worst case (graph_max_requests, graph_max_kv_len); items w >= num_work
 * (read from device memory, not a launch scalar) exit at once. */
typedef struct swa_decode_fa2_plan {
    int num_requests, num_qo_heads, num_kv_heads, group_size, head_dim, page_size;
    swa_dtype dtype;
    swa_layout layout;
    int window_left;
    int chunk_size;           /* 0 off; C >= 1 chunked local attention */
    float sm_scale, soft_cap;
    swa_mutant mutant;

    bool split_kv;
    int kv_chunk_size;        /* tokens, multiple of page_size */
    int num_work;
    int grid_work;            /* launch grid (>= num_work; padded in graph mode) */
    int *work_request;        /* [capacity] */
    int *work_chunk;          /* [capacity] */
    int *req_num_chunks;      /* [capacity_requests] */
    int *req_partial_offset;  /* [capacity_requests]: slot of (r, c) = offset[r] + c */
    int total_partial_rows;

    /* FlashInfer page table (copied from the cache at plan time) */
    int *kv_indptr, *kv_indices, *kv_last_page_len;

    bool graph;               /* CUDA-graph mode */
    int graph_max_requests, graph_max_kv_len;
    int capacity_work, capacity_requests, capacity_partial_rows, capacity_pages;
} swa_decode_fa2_plan;

/* -------------------------------------------------------------------------
 * decode_aiter — AITER PA v1-style decode over block_tables/context_lens.
 *
 * Grid (num_seqs, num_kv_heads, max_num_partitions); partition j of seq s
 * covers tokens [j * partition_size, min((j+1) * partition_size, ctx)).
 * AITER window semantics: with sliding_window = S > 0 a token t is masked
 * when t < ctx - S (S keys visible); S = 0 disables the mask.  Each
 * partition writes (max_logit, exp_sum, tmp_out); a reduce kernel combines.
 * The wrapper maps the harness's window_left L to S = L + 1 (L >= 0), else 0. */
typedef struct swa_decode_fa2_plan swa_decode_fa2_plan;
typedef struct swa_decode_aiter_plan {
    int num_seqs, num_qo_heads, num_kv_heads, group_size, head_dim, block_size;
    swa_dtype dtype;
    swa_layout layout;
    int window_left;          /* as asked by the harness */
    int sliding_window;       /* S, AITER convention */
    float scale, soft_cap;
    swa_mutant mutant;

    int partition_size;       /* 256 */
    int max_num_partitions;   /* launch scalar: ceil(max_context_len / partition_size) */
    int max_context_len;
    int max_blocks_per_seq;
    int *block_tables;        /* [num_seqs][max_blocks_per_seq] */
    int *context_lens;        /* [num_seqs] */

    swa_decode_fa2_plan *shadow; /* built at plan time; serves return_lse */
} swa_decode_aiter_plan;

/* The AITER window mapping (docs/window-conventions.md), with its two seed-003 mutants. */
static inline int swa_aiter_sliding_window(int window_left, swa_mutant mutant)
{
    if (window_left < 0) return 0;
    if (mutant == SWA_MUTANT_AITER_S_EQ_L) return window_left;
    if (mutant == SWA_MUTANT_AITER_L0_SENTINEL && window_left == 0) return 0;
    return window_left + 1;
}

#endif /* SWADIFF_PLAN_H */
