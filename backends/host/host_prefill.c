/* host_prefill.c — host emulation of the prefill kernels: one "CTA" per
 * (work item, kv head) runs its query tile (cta_tile_q packed rows) over
 * KV tiles of cta_tile_kv keys from kv_begin (the KV-start skip) to kv_end,
 * with the per-element mask of attn_primitives.h; split items write partial
 * states, then the merge pass combines them (plan.h semantics).
 * Tested by tests/test_host_prefill.c. */
/* Coverage: what no case reaches (mutant switches, allocation failures,
 * guards against calls the harness never makes: backends/guards.h) is left
 * out by the patterns of ci/coverage.sh, which says why. */
#include "backends/host/host_attend.h"
#include "backends/host/host_device.h"

#include <stdio.h>

#include "backends/guards.h"

typedef struct prefill_scratch {
    host_row *rows;
    float *k_tile, *v_tile, *scores;
} prefill_scratch;

/* One CTA: work item w, kv head hk. */
static void prefill_cta(const swa_prefill_plan *p, const swa_inputs *in, int w, int hk, prefill_scratch *s,
                        const host_softmax_cfg *cfg, const swa_out_args *o, bool write_lse, float *o_part,
                        float *lse_part)
{
    int r = p->work_request[w], tile = p->work_qo_tile[w], ch = p->work_kv_chunk[w];
    int qo_len = p->qo_len[r], kv_len = p->kv_len[r], G = p->group_size, D = p->head_dim;
    int pr0 = tile * p->cta_tile_q, pr1 = swa_imin(pr0 + p->cta_tile_q, qo_len * G);
    int nrows = pr1 - pr0;
    if (SWA_API_GUARD(nrows <= 0)) return;
    swa_mutant m = p->mutant;

    for (int j = 0; j < nrows; j++) {
        host_row *row = &s->rows[j];
        int pr = pr0 + j, i = pr / G;
        int pos = swa_query_pos(kv_len, qo_len, i, m);
        row->qo_head = swa_qo_head_of(hk, pr % G, G, p->num_kv_heads, m);
        row->out_row = p->qo_indptr[r] + i;
        row->range = swa_mask_row_range(pos, swa_window_anchor(pos, kv_len, qo_len, m), p->window_left,
                                        p->window_right, p->chunk_size, p->mask_window, p->causal, m);
        size_t qoff = ((size_t)row->out_row * p->num_qo_heads + row->qo_head) * D;
        for (int e = 0; e < D; e++)
            row->q[e] = swa_load(p->dtype, in->q_raw, qoff + e);
        host_row_init(row, D);
    }

    int i_first = swa_tile_first_row(pr0, G, m), i_last = (pr1 - 1) / G;
    int p_first = swa_query_pos(kv_len, qo_len, i_first, m);
    int p_last = swa_query_pos(kv_len, qo_len, i_last, m);
    int chunk_begin = p->split_kv ? ch * p->kv_chunk_size : 0;
    int chunk_end = p->split_kv ? swa_imin(chunk_begin + p->kv_chunk_size, kv_len) : kv_len;
    int kv_begin = swa_prefill_kv_begin(chunk_begin, p_first, swa_window_anchor(p_first, kv_len, qo_len, m),
                                        p->run_window_left, p->chunk_size, p->cta_tile_kv, m);
    int kv_end = swa_prefill_kv_end(chunk_end, p_last, p->causal, p->window_right, m);

    host_kv_view view = {
        .dtype = p->dtype, .head_dim = D, .kv_head = hk, .num_kv_heads = p->num_kv_heads,
        .ragged = p->kv_mode == SWA_KV_RAGGED,
        .k_raw = in->k_raw, .v_raw = in->v_raw, .token_offset = p->kv_indptr[r],
        .k_pool = in->paged.k_pages, .v_pool = in->paged.v_pages, .layout = in->paged.layout,
        .page_size = in->paged.page_size, .indices = in->paged.indices,
        .page_begin = in->paged.indptr ? in->paged.indptr[r] : 0,
        .num_pages = in->paged.indptr ? in->paged.indptr[r + 1] - in->paged.indptr[r] : 0,
        .page_mutant = SWA_MUTANT_NONE, /* page-table mutants live in the decode kernels */
    };
    host_softmax_cfg tile_cfg = *cfg;
    tile_cfg.kv_begin = kv_begin;
    tile_cfg.tile_mutant = m;
    for (int kb = kv_begin; kb < kv_end; kb += p->cta_tile_kv) {
        int ke = swa_imin(kb + p->cta_tile_kv, kv_end);
        host_kv_load_tile(&view, kb, ke, s->k_tile, s->v_tile);
        host_attend_tile(s->rows, nrows, s->k_tile, s->v_tile, kb, ke, &tile_cfg, s->scores);
    }

    for (int j = 0; j < nrows; j++) {
        host_row *row = &s->rows[j];
        if (p->split_kv) {
            int i = (pr0 + j) / G;
            int slot = p->req_partial_offset[r] + ch * qo_len + i;
            host_row_store_partial(row, slot, p->num_qo_heads, D, o_part, lse_part, m);
        } else {
            host_row_store(row, cfg, p->num_qo_heads, o->out, SWA_API_GUARD(write_lse) ? o->lse : NULL, m);
        }
    }
}

swa_status swa_host_run_prefill(const swa_prefill_plan *p, const swa_inputs *in, const swa_out_args *o,
                                bool write_lse, swa_error *err)
{
    if (SWA_API_GUARD(p->head_dim > HOST_MAX_HEAD_DIM))
        return SWA_API_ERROR(err, SWA_ERR_UNSUPPORTED, "prefill on host: head_dim %d over the emulation's %d",
                             p->head_dim, HOST_MAX_HEAD_DIM);
    if (SWA_API_GUARD(p->kv_mode == SWA_KV_RAGGED ? !in->k_raw || !in->v_raw : !in->paged.k_pages || !in->paged.indptr))
        return SWA_API_ERROR(err, SWA_ERR_INVALID, "prefill on host: the inputs lack the %s K/V the plan reads",
                             p->kv_mode == SWA_KV_RAGGED ? "ragged" : "paged");
    host_softmax_cfg cfg = {
        .head_dim = p->head_dim, .dtype = p->dtype, .sm_scale = p->sm_scale, .soft_cap = p->soft_cap,
        .cap_on = p->soft_cap > 0 &&
                  p->mutant != SWA_MUTANT_SOFTCAP_COMPILED_OUT,
        .round_p = true,
    };
    prefill_scratch s = {
        .rows = malloc((size_t)p->cta_tile_q * sizeof(host_row)),
        .k_tile = malloc((size_t)p->cta_tile_kv * p->head_dim * sizeof(float)),
        .v_tile = malloc((size_t)p->cta_tile_kv * p->head_dim * sizeof(float)),
        .scores = malloc((size_t)p->cta_tile_kv * sizeof(float)),
    };
    size_t part_rows = (size_t)p->total_partial_rows * p->num_qo_heads;
    float *o_part = p->split_kv ? host_alloc_poisoned(part_rows * p->head_dim) : NULL;
    float *lse_part = p->split_kv ? host_alloc_poisoned(part_rows) : NULL;
    float *acc = malloc((size_t)p->head_dim * sizeof(float));
    swa_status st = SWA_OK;
    if (SWA_ALLOC_FAILED(s.rows, s.k_tile, s.v_tile, s.scores, acc) ||
        (p->split_kv && SWA_ALLOC_FAILED(o_part, lse_part))) {
        st = swa_error_set(err, SWA_ERR_NOMEM, "prefill on host: out of memory for tiles/partials"); goto done;
    }

    for (int w = 0; w < p->num_work; w++)
        for (int hk = 0; hk < p->num_kv_heads; hk++)
            prefill_cta(p, in, w, hk, &s, &cfg, o, write_lse, o_part, lse_part);

    if (p->split_kv) { /* merge pass: one thread per (row, qo head) */
        for (int r = 0; r < p->num_requests; r++)
            for (int i = 0; i < p->qo_len[r]; i++)
                for (int h = 0; h < p->num_qo_heads; h++)
                    host_merge_row(o_part, lse_part, p->req_partial_offset[r] + i, p->qo_len[r],
                                   p->req_num_chunks[r], h, p->num_qo_heads, p->head_dim, p->dtype,
                                   p->qo_indptr[r] + i, o->out, SWA_API_GUARD(write_lse) ? o->lse : NULL, p->mutant,
                                   acc);
    }
done:
    free(s.rows);
    free(s.k_tile);
    free(s.v_tile);
    free(s.scores);
    free(o_part);
    free(lse_part);
    free(acc);
    return st;
}
