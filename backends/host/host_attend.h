/* host_attend.h — the inner pieces of the host emulation shared by the
 * prefill and decode executors: K/V tile loads (paged or ragged, in the
 * case dtype, widened to float as the kernels' shared-memory tiles are),
 * the online-softmax update of one KV tile for a set of query rows, and the
 * LSE-weighted merge of partial states.  Private to backends/host/.
 *
 * Arithmetic (the kernels' rounding points): QK dot products accumulate in
 * fp32; logits go to the exp2 domain (swa_logit_log2); the running state is
 * (m, d, acc) with rescale exp2(m_old - m_new) per KV tile; d sums the fp32
 * probabilities while P.V uses them rounded to the dtype when round_p (the
 * tensor-core kernels convert P to half/bf16 for the MMA); acc is fp32. */
#ifndef SWADIFF_HOST_ATTEND_H
#define SWADIFF_HOST_ATTEND_H

#include <math.h>
#include <stdlib.h>

#include "backends/attn_primitives.h"
#include "backends/backend.h"

/* Where one request's keys and values for one kv head live. */
typedef struct host_kv_view {
    swa_dtype dtype;
    int head_dim, kv_head, num_kv_heads;
    bool ragged;
    /* ragged: rows token_offset + t of [total_kv][num_kv_heads][head_dim] */
    const void *k_raw, *v_raw;
    int token_offset;
    /* paged: a FlashInfer page list (indices + page_begin, num_pages entries) */
    const void *k_pool, *v_pool;
    swa_layout layout;
    int page_size;
    const int *indices;
    int page_begin, num_pages;
    swa_mutant page_mutant; /* FOREIGN_PAGE_READ lives in the page lookup */
} host_kv_view;

/* page_mutant is passed as a separate argument so the caller can hand in a
 * constant SWA_MUTANT_NONE on the mutant-free path (one branch per tile). */
static inline size_t host_kv_offset(const host_kv_view *v, int t, swa_mutant page_mutant)
{
    if (v->ragged)
        return ((size_t)(v->token_offset + t) * v->num_kv_heads + v->kv_head) * v->head_dim;
    int entry = swa_page_entry(v->page_begin, v->num_pages, t, v->page_size, page_mutant);
    return swa_pool_offset(v->layout, v->indices[entry], t % v->page_size, v->kv_head, v->page_size,
                           v->num_kv_heads, v->head_dim);
}

/* Loads keys [kb, ke) into k_tile/v_tile [ke - kb][head_dim] as floats. */
static inline void host_kv_load_tile(const host_kv_view *v, int kb, int ke, float *k_tile, float *v_tile)
{
    const void *kbase = v->ragged ? v->k_raw : v->k_pool;
    const void *vbase = v->ragged ? v->v_raw : v->v_pool;
    bool page_mutant = v->page_mutant == SWA_MUTANT_FOREIGN_PAGE_READ; /* hoisted: once per tile */
    for (int t = kb; t < ke; t++) {
        size_t off = page_mutant ? host_kv_offset(v, t, SWA_MUTANT_FOREIGN_PAGE_READ)
                                 : host_kv_offset(v, t, SWA_MUTANT_NONE);
        float *kd = k_tile + (size_t)(t - kb) * v->head_dim, *vd = v_tile + (size_t)(t - kb) * v->head_dim;
        for (int e = 0; e < v->head_dim; e++) {
            kd[e] = swa_load(v->dtype, kbase, off + e);
            vd[e] = swa_load(v->dtype, vbase, off + e);
        }
    }
}

#define HOST_MAX_HEAD_DIM 256

/* One query row's running state inside a CTA. */
typedef struct host_row {
    float q[HOST_MAX_HEAD_DIM]; /* head_dim <= 256 (supports() limits it) */
    float acc[HOST_MAX_HEAD_DIM];
    float m, d;
    swa_key_range range; /* the row's per-element mask */
    int out_row, qo_head;
} host_row;

static inline void host_row_init(host_row *row, int head_dim)
{
    row->m = -INFINITY;
    row->d = 0.0f;
    for (int e = 0; e < head_dim; e++)
        row->acc[e] = 0.0f;
}

typedef struct host_softmax_cfg {
    int head_dim;
    swa_dtype dtype;
    float sm_scale, soft_cap;
    bool cap_on;  /* soft cap compiled in (soft_cap > 0 and not SOFTCAP_COMPILED_OUT) */
    bool round_p; /* P rounded to dtype before P.V */
    /* The CTA's KV loop start and the kernel-level mutant for
     * swa_tile_row_lo and swa_cap_tanh (left zero: none). */
    int kv_begin;
    swa_mutant tile_mutant;
} host_softmax_cfg;

/* Online-softmax update of `rows` with the keys [kb, ke) already loaded in
 * k_tile/v_tile; scores is scratch of ke - kb floats. */
static inline void host_attend_tile(host_row *rows, int nrows, const float *k_tile, const float *v_tile, int kb,
                                    int ke, const host_softmax_cfg *cfg, float *scores)
{
    int D = cfg->head_dim, n = ke - kb;
    /* The GPU's P.V covers every loaded key, masked ones with P = 0, for
     * every row: a non-finite V anywhere in the tile (an evicted page, a
     * page the request does not own) makes those dims NaN, 0 * NaN = NaN,
     * whether or not the row sees the key.  vz[e] = sum_t 0 * v[t][e] is 0
     * or NaN; it is added to every row when some V is not finite. */
    float vz[HOST_MAX_HEAD_DIM];
    bool v_nonfinite = false;
    for (int e = 0; e < D; e++)
        vz[e] = 0.0f;
    for (int t = 0; t < n; t++)
        for (int e = 0; e < D; e++)
            vz[e] += v_tile[(size_t)t * D + e] * 0.0f;
    for (int e = 0; e < D; e++)
        v_nonfinite |= vz[e] != 0.0f;
    for (int j = 0; j < nrows; j++) {
        host_row *row = &rows[j];
        float m_tile = -INFINITY;
        bool any_visible = false;
        swa_key_range range = row->range;
        range.lo = swa_tile_row_lo(range.lo, kb, cfg->kv_begin, cfg->tile_mutant);
        if (v_nonfinite)
            for (int e = 0; e < D; e++)
                row->acc[e] += vz[e];
        for (int t = 0; t < n; t++) {
            if (!swa_mask_visible(kb + t, range)) {
                scores[t] = -INFINITY;
                continue;
            }
            any_visible = true;
            const float *kr = k_tile + (size_t)t * D;
            float qk = 0.0f;
            for (int e = 0; e < D; e++)
                qk += row->q[e] * kr[e];
            scores[t] = swa_logit_log2(qk, cfg->sm_scale, cfg->soft_cap, cfg->cap_on, cfg->tile_mutant);
            if (scores[t] > m_tile) /* like fmaxf: a NaN score does not become the max */
                m_tile = scores[t];
        }
        if (!any_visible)
            continue; /* nothing visible in this tile for this row */
        /* A NaN score (a poisoned key) still flows into d and acc below, as
         * it does on the GPU, so reading poison shows up as NaN output. */
        float m_new = row->m > m_tile ? row->m : m_tile;
        float scale = swa_online_rescale(row->m, m_new);
        row->d *= scale;
        for (int e = 0; e < D; e++)
            row->acc[e] *= scale;
        for (int t = 0; t < n; t++) {
            if (scores[t] == -INFINITY)
                continue;
            float pk = exp2f(scores[t] - m_new);
            row->d += pk;
            float pv = cfg->round_p ? swa_round_to(cfg->dtype, pk) : pk;
            const float *vr = v_tile + (size_t)t * D;
            for (int e = 0; e < D; e++)
                row->acc[e] += pv * vr[e];
        }
        row->m = m_new;
    }
}

/* Final output of a row: acc / d rounded to the dtype (0 when nothing was
 * visible), LSE base 2 (or the mutant's natural log). */
static inline void host_row_store(const host_row *row, const host_softmax_cfg *cfg, int num_qo_heads, void *out,
                                  float *lse, swa_mutant m)
{
    size_t base = ((size_t)row->out_row * num_qo_heads + row->qo_head) * cfg->head_dim;
    float inv = swa_state_inv_sum(row->d, m); /* NaN stays NaN */
    bool sentinel_empty = swa_row_empty_by_sentinel(row->m, m);
    for (int e = 0; e < cfg->head_dim; e++)
        swa_store(cfg->dtype, out, base + e, sentinel_empty ? 0.0f : row->acc[e] * inv);
    if (lse)
        lse[(size_t)row->out_row * num_qo_heads + row->qo_head] =
            swa_lse_store_value(sentinel_empty ? -INFINITY : swa_state_lse(row->m, row->d), m);
}

/* Partial state of a row into slot `slot` of the partial buffers (fp32,
 * normalised, base-2 LSE; empty = 0 and -inf). */
static inline void host_row_store_partial(const host_row *row, int slot, int num_qo_heads, int head_dim,
                                          float *o_part, float *lse_part, swa_mutant m)
{
    size_t base = ((size_t)slot * num_qo_heads + row->qo_head) * head_dim;
    float inv = swa_state_inv_sum(row->d, m); /* NaN stays NaN */
    bool sentinel_empty = swa_row_empty_by_sentinel(row->m, m);
    for (int e = 0; e < head_dim; e++)
        o_part[base + e] = sentinel_empty ? 0.0f : row->acc[e] * inv;
    lse_part[(size_t)slot * num_qo_heads + row->qo_head] = sentinel_empty ? -INFINITY : swa_state_lse(row->m, row->d);
}

/* The merge kernel for one (output row, qo head): the n partials at slots
 * first_slot + c * slot_stride, weighted by 2^(lse - lse_max).  Mutant
 * LSE_MERGE_DROPPED averages the partial outputs instead (the LSE written
 * stays the true merged one). */
static inline void host_merge_row(const float *o_part, const float *lse_part, int first_slot, int slot_stride,
                                  int n, int qo_head, int num_qo_heads, int head_dim, swa_dtype dtype, int out_row,
                                  void *out, float *lse, swa_mutant m, float *acc)
{
    float lse_max = -INFINITY;
    bool any = false; /* a partial that saw a key (finite or NaN LSE) */
    for (int c = 0; c < n; c++) {
        float l = lse_part[(size_t)(first_slot + c * slot_stride) * num_qo_heads + qo_head];
        if (l != -INFINITY)
            any = true;
        if (l > lse_max)
            lse_max = l;
    }
    for (int e = 0; e < head_dim; e++)
        acc[e] = 0.0f;
    float wsum = 0.0f;
    if (any) {
        for (int c = 0; c < n; c++) {
            int slot = first_slot + c * slot_stride;
            float w = swa_merge_weight(lse_part[(size_t)slot * num_qo_heads + qo_head], lse_max);
            if (m == SWA_MUTANT_LSE_MERGE_DROPPED)
                w = 1.0f / (float)n;
            wsum += swa_merge_weight(lse_part[(size_t)slot * num_qo_heads + qo_head], lse_max);
            if (w == 0.0f)
                continue;
            const float *op = o_part + ((size_t)slot * num_qo_heads + qo_head) * head_dim;
            for (int e = 0; e < head_dim; e++)
                acc[e] += w * op[e];
        }
    }
    float inv = (m == SWA_MUTANT_LSE_MERGE_DROPPED || wsum == 0.0f) ? 1.0f : 1.0f / wsum;
    size_t base = ((size_t)out_row * num_qo_heads + qo_head) * head_dim;
    for (int e = 0; e < head_dim; e++)
        swa_store(dtype, out, base + e, any ? acc[e] * inv : 0.0f * swa_state_inv_sum(0.0f, m));
    if (lse) {
        float l = any ? lse_max + log2f(wsum) : -INFINITY;
        lse[(size_t)out_row * num_qo_heads + qo_head] = swa_lse_store_value(l, m);
    }
}

/* Partial buffers as the GPU's workspace: filled with NaN so a slot that no
 * work item wrote (dropped work) shows up, as stale memory would. */
static inline float *host_alloc_poisoned(size_t n)
{
    float *buf = malloc((n ? n : 1) * sizeof(float));
    if (buf)
        for (size_t i = 0; i < n; i++)
            buf[i] = NAN;
    return buf;
}

#endif /* SWADIFF_HOST_ATTEND_H */
