/* host_decode.c — host emulation of the two decode kernels.
 *
 * decode_fa2: one "CTA" per (work item < grid_work, kv head) handling the
 * group's qo heads over its chunk [base + c*kv_chunk_size, ...) in KV tiles
 * of HOST_FA2_TILE tokens; items w >= num_work exit at once (num_work is
 * read "from memory", grid_work is the launch scalar).  P stays fp32 in
 * P.V: FlashInfer's decode kernel runs on CUDA cores, not tensor cores.
 * Split items write partial states, the merge pass combines them.
 *
 * decode_aiter: one "CTA" per (seq, kv head, partition) over 256-token
 * partitions.  Per partition, in the exp2 domain: max_logit (base-2 scaled
 * logit max), exp_sum = sum 2^(s - max_logit), P = 2^(s - max)/exp_sum
 * rounded to the dtype (AITER normalises before its MFMA P.V), tmp_out
 * rounded to the dtype (AITER keeps tmp_out in the input type).  A partition
 * with no visible key writes max_logit = -inf, exp_sum = 0, tmp_out = 0.
 * The reduce weights partition j by exp_sum_j * 2^(max_j - global max).
 * With max_num_partitions == 1 the kernel writes out directly (no reduce),
 * as PA v1 does.
 * Tested by tests/test_host_decode.c. */
/* Coverage: what no case reaches (mutant switches, allocation failures,
 * guards against calls the harness never makes: backends/guards.h) is left
 * out by the patterns of ci/coverage.sh, which says why; the exclusion
 * markers below are the few places no pattern can tell, each with its
 * reason. */
#include "backends/host/host_attend.h"
#include "backends/host/host_device.h"

#include <signal.h>
#include <stdio.h>

#include "backends/guards.h"

#define HOST_FA2_TILE 32

/* Mutant OOB_WRITE: one element written just past the end of out, where the
 * harness keeps its guard bytes (only when a guard exists to absorb it).
 * GCOVR_EXCL_START mutant-only: only that mutant calls it */
static void host_oob_write(const swa_out_args *o, swa_dtype dtype)
{
    size_t esize = swa_dtype_size(dtype);
    if (o->guard_bytes < esize)
        return;
    memset((char *)o->out + o->out_bytes, (uint8_t)~o->guard_pattern, esize);
}
/* GCOVR_EXCL_STOP */

swa_status swa_host_run_decode_fa2(const swa_decode_fa2_plan *p, int grid_work, const swa_inputs *in,
                                   const swa_out_args *o, bool write_lse, swa_error *err)
{
    int D = p->head_dim, G = p->group_size;
    if (SWA_API_GUARD(D > HOST_MAX_HEAD_DIM))
        return SWA_API_ERROR(err, SWA_ERR_UNSUPPORTED, "decode_fa2 on host: head_dim %d over the emulation's %d",
                             D, HOST_MAX_HEAD_DIM);
    if (SWA_API_GUARD(!in->paged.k_pages))
        return SWA_API_ERROR(err, SWA_ERR_INVALID, "decode_fa2 on host: the inputs have no paged cache");
    host_softmax_cfg cfg = {
        .head_dim = D, .dtype = p->dtype, .sm_scale = p->sm_scale, .soft_cap = p->soft_cap,
        .cap_on = p->soft_cap > 0 &&
                  p->mutant != SWA_MUTANT_SOFTCAP_COMPILED_OUT,
        .round_p = false,
    };
    host_row *rows = malloc((size_t)G * sizeof(host_row));
    float *k_tile = malloc((size_t)HOST_FA2_TILE * D * sizeof(float));
    float *v_tile = malloc((size_t)HOST_FA2_TILE * D * sizeof(float));
    float *scores = malloc(HOST_FA2_TILE * sizeof(float));
    float *acc = malloc((size_t)D * sizeof(float));
    size_t part_rows = (size_t)p->total_partial_rows * p->num_qo_heads;
    float *o_part = p->split_kv ? host_alloc_poisoned(part_rows * D) : NULL;
    float *lse_part = p->split_kv ? host_alloc_poisoned(part_rows) : NULL;
    swa_status st = SWA_OK;
    if (SWA_ALLOC_FAILED(rows, k_tile, v_tile, scores, acc) || (p->split_kv && SWA_ALLOC_FAILED(o_part, lse_part))) {
        st = swa_error_set(err, SWA_ERR_NOMEM, "decode_fa2 on host: out of memory for tiles/partials"); goto done;
    }

    for (int w = 0; w < grid_work; w++) {
        if (w >= p->num_work)
            continue; /* padded grid: nothing to do */
        int r = p->work_request[w], ch = p->work_chunk[w];
        int pages = p->kv_indptr[r + 1] - p->kv_indptr[r];
        int kv_len = swa_paged_kv_len(pages, p->page_size, p->kv_last_page_len[r]);
        int ws = swa_decode_window_start(kv_len, p->window_left, p->chunk_size, p->mutant);
        int base = swa_decode_chunk_base(ws, p->page_size, p->mutant);
        int begin = base + ch * p->kv_chunk_size;
        int end = swa_imin(begin + p->kv_chunk_size, kv_len);
        int pos = kv_len - 1;
        /* the decode kernel always carries its window and chunk masks
         * (a run-time check); a decode row has no key right of it */
        swa_key_range range = swa_mask_row_range(pos, pos, p->window_left, -1, p->chunk_size, true, true,
                                                 p->mutant);
        for (int hk = 0; hk < p->num_kv_heads; hk++) {
            for (int j = 0; j < G; j++) {
                host_row *row = &rows[j];
                row->qo_head = swa_qo_head_of(hk, j, G, p->num_kv_heads, p->mutant);
                row->out_row = r;
                row->range = range;
                size_t qoff = ((size_t)r * p->num_qo_heads + row->qo_head) * D;
                for (int e = 0; e < D; e++)
                    row->q[e] = swa_load(p->dtype, in->q_raw, qoff + e);
                host_row_init(row, D);
            }
            host_kv_view view = {
                .dtype = p->dtype, .head_dim = D, .kv_head = hk, .num_kv_heads = p->num_kv_heads,
                .ragged = false, .k_pool = in->paged.k_pages, .v_pool = in->paged.v_pages,
                .layout = p->layout, .page_size = p->page_size, .indices = p->kv_indices,
                .page_begin = p->kv_indptr[r], .num_pages = pages, .page_mutant = p->mutant,
            };
            cfg.kv_begin = begin;
            cfg.tile_mutant = p->mutant;
            for (int kb = begin; kb < end; kb += HOST_FA2_TILE) {
                int ke = swa_imin(kb + HOST_FA2_TILE, end);
                host_kv_load_tile(&view, kb, ke, k_tile, v_tile);
                host_attend_tile(rows, G, k_tile, v_tile, kb, ke, &cfg, scores);
            }
            for (int j = 0; j < G; j++) {
                if (p->split_kv)
                    host_row_store_partial(&rows[j], p->req_partial_offset[r] + ch, p->num_qo_heads, D, o_part,
                                           lse_part, p->mutant);
                else
                    host_row_store(&rows[j], &cfg, p->num_qo_heads, o->out, write_lse ? o->lse : NULL, p->mutant);
            }
        }
    }
    if (p->split_kv) {
        /* merge grid: one block per request, padded to capacity in graph
         * mode; blocks past num_requests (read from memory) exit */
        int merge_grid = p->graph ? p->capacity_requests : p->num_requests;
        for (int r = 0; r < merge_grid && r < p->num_requests; r++)
            for (int h = 0; h < p->num_qo_heads; h++)
                host_merge_row(o_part, lse_part, p->req_partial_offset[r], 1, p->req_num_chunks[r], h,
                               p->num_qo_heads, D, p->dtype, r, o->out, write_lse ? o->lse : NULL, p->mutant, acc);
    }
    if (p->mutant == SWA_MUTANT_OOB_WRITE) host_oob_write(o, p->dtype);
    /* DEVICE_FAULT: what an illegal address does to a GPU context, simulated */
    if (p->mutant == SWA_MUTANT_DEVICE_FAULT) raise(SIGSEGV);
done:
    free(rows);
    free(k_tile);
    free(v_tile);
    free(scores);
    free(acc);
    free(o_part);
    free(lse_part);
    return st;
}

/* ------------------------------------------------------------------------
 * decode_aiter */

typedef struct aiter_partition {
    float max_logit, exp_sum;
} aiter_partition;

typedef struct aiter_scratch {
    float *q;       /* [G][D] the group's queries */
    float *logits;  /* [G][partition_size] */
    float *krow, *vrow;
} aiter_scratch;

static size_t aiter_kv_offset(const swa_decode_aiter_plan *p, const int *blocks, int num_blocks, int t, int hk,
                              swa_mutant page_mutant)
{
    int entry = swa_page_entry(0, num_blocks, t, p->block_size, page_mutant);
    return swa_pool_offset(p->layout, blocks[entry], t % p->block_size, hk, p->block_size, p->num_kv_heads,
                           p->head_dim);
}

/* One CTA: partition j of seq s for kv head hk and its G qo heads.  Fills
 * part[g] and tmp_out[g][D]. */
static void aiter_partition_run(const swa_decode_aiter_plan *p, const swa_inputs *in, int s, int hk, int j,
                                aiter_scratch *sc, aiter_partition *part, float *tmp_out)
{
    int D = p->head_dim, G = p->group_size, ctx = p->context_lens[s], P = p->partition_size;
    int start = j * P, end = swa_imin(start + P, ctx);
    int S = p->sliding_window;
    bool cap_on = p->soft_cap > 0;
    bool quirk = p->mutant == SWA_MUTANT_SOFTCAP_BEFORE_MASK && cap_on; /* hoisted */
    swa_mutant page_mutant = p->mutant == SWA_MUTANT_FOREIGN_PAGE_READ ? p->mutant : SWA_MUTANT_NONE;
    const int *blocks = p->block_tables + (size_t)s * p->max_blocks_per_seq;
    int num_blocks = swa_ceil_div(ctx, p->block_size);
    bool any = false;
    for (int g = 0; g < G; g++)
        part[g].max_logit = -INFINITY;
    for (int t = start; t < end; t++) {
        float *lg = sc->logits + (t - start);
        bool masked = S > 0 && t < ctx - S;
        if (masked) {
            /* excluded, or under the AITER quirk -FLT_MAX then the cap:
             * logit -soft_cap for every head */
            for (int g = 0; g < G; g++)
                lg[(size_t)g * P] = quirk ? -p->soft_cap * SWA_LOG2E : -INFINITY; /* GCOVR_EXCL_BR_LINE mutant switch */
            if (!quirk) /* GCOVR_EXCL_BR_LINE mutant switch (quirk: SOFTCAP_BEFORE_MASK) */
                continue;
        } else {
            size_t off = aiter_kv_offset(p, blocks, num_blocks, t, hk, page_mutant);
            for (int e = 0; e < D; e++)
                sc->krow[e] = swa_load(p->dtype, in->paged.k_pages, off + e);
            for (int g = 0; g < G; g++) {
                const float *q = sc->q + (size_t)g * D;
                float qk = 0.0f;
                for (int e = 0; e < D; e++)
                    qk += q[e] * sc->krow[e];
                lg[(size_t)g * P] = swa_logit_log2(qk, p->scale, p->soft_cap, cap_on, p->mutant);
            }
        }
        any = true;
        for (int g = 0; g < G; g++)
            if (lg[(size_t)g * P] > part[g].max_logit) /* fmaxf: NaN never becomes the max */
                part[g].max_logit = lg[(size_t)g * P];
    }
    for (int e = 0; e < G * D; e++)
        tmp_out[e] = 0.0f;
    int pv_dims = swa_pv_dims(D, p->mutant); /* dims past it stay 0 (HEAD_DIM_LOOP_TRUNCATED) */
    for (int g = 0; g < G; g++)
        part[g].exp_sum = 0.0f;
    if (!any)
        return; /* empty partition: (-inf, 0, 0); NaN logits go on and poison it */
    for (int g = 0; g < G; g++) {
        float *lg = sc->logits + (size_t)g * P, mx = part[g].max_logit, sum = 0.0f;
        for (int t = 0; t < end - start; t++) {
            lg[t] = lg[t] == -INFINITY ? 0.0f : exp2f(lg[t] - mx);
            sum += lg[t];
        }
        part[g].exp_sum = sum;
        for (int t = 0; t < end - start; t++) /* AITER normalises P before its P.V, in the dtype */
            lg[t] = swa_round_to(p->dtype, lg[t] * (1.0f / sum));
    }
    for (int t = start; t < end; t++) {
        bool used = false;
        for (int g = 0; g < G; g++)
            used |= sc->logits[(size_t)g * P + (t - start)] != 0.0f;
        if (!used)
            continue;
        size_t off = aiter_kv_offset(p, blocks, num_blocks, t, hk, page_mutant);
        for (int e = 0; e < D; e++)
            sc->vrow[e] = swa_load(p->dtype, in->paged.v_pages, off + e);
        for (int g = 0; g < G; g++) {
            float pr = sc->logits[(size_t)g * P + (t - start)];
            if (pr == 0.0f)
                continue;
            float *acc = tmp_out + (size_t)g * D;
            for (int e = 0; e < pv_dims; e++)
                acc[e] += pr * sc->vrow[e];
        }
    }
}

swa_status swa_host_run_decode_aiter(const swa_decode_aiter_plan *p, const swa_inputs *in, const swa_out_args *o,
                                     swa_error *err)
{
    int D = p->head_dim, G = p->group_size, NP = p->max_num_partitions;
    if (SWA_API_GUARD(D > HOST_MAX_HEAD_DIM))
        return SWA_API_ERROR(err, SWA_ERR_UNSUPPORTED, "decode_aiter on host: head_dim %d over the emulation's %d",
                             D, HOST_MAX_HEAD_DIM);
    if (SWA_API_GUARD(!in->paged.k_pages))
        return SWA_API_ERROR(err, SWA_ERR_INVALID, "decode_aiter on host: the inputs have no paged cache");
    aiter_scratch sc = {
        .q = malloc((size_t)G * D * sizeof(float)),
        .logits = malloc((size_t)G * p->partition_size * sizeof(float)),
        .krow = malloc((size_t)D * sizeof(float)),
        .vrow = malloc((size_t)D * sizeof(float)),
    };
    aiter_partition *parts = malloc((size_t)NP * G * sizeof *parts);
    float *tmp_out = malloc((size_t)NP * G * D * sizeof(float));
    int *heads = malloc((size_t)G * sizeof(int));
    swa_status st = SWA_OK;
    if (SWA_ALLOC_FAILED(sc.q, sc.logits, sc.krow, sc.vrow, parts, tmp_out, heads)) {
        st = swa_error_set(err, SWA_ERR_NOMEM, "decode_aiter on host: out of memory"); goto done;
    }
    for (int s = 0; s < p->num_seqs; s++) {
        int nparts = swa_imin(swa_ceil_div(p->context_lens[s], p->partition_size), NP);
        for (int hk = 0; hk < p->num_kv_heads; hk++) {
            for (int g = 0; g < G; g++) {
                heads[g] = swa_qo_head_of(hk, g, G, p->num_kv_heads, p->mutant);
                size_t qoff = ((size_t)s * p->num_qo_heads + heads[g]) * D;
                for (int e = 0; e < D; e++)
                    sc.q[(size_t)g * D + e] = swa_load(p->dtype, in->q_raw, qoff + e);
            }
            for (int j = 0; j < nparts; j++) {
                float *tj = tmp_out + (size_t)j * G * D;
                aiter_partition_run(p, in, s, hk, j, &sc, parts + (size_t)j * G, tj);
                if (NP > 1) /* tmp_out goes through memory in the input dtype */
                    for (int e = 0; e < G * D; e++)
                        tj[e] = swa_round_to(p->dtype, tj[e]);
            }
            /* reduce (or the direct write when max_num_partitions == 1) */
            for (int g = 0; g < G; g++) {
                float gmax = -INFINITY;
                for (int j = 0; j < nparts; j++)
                    if (parts[(size_t)j * G + g].max_logit > gmax)
                        gmax = parts[(size_t)j * G + g].max_logit;
                size_t ooff = ((size_t)s * p->num_qo_heads + heads[g]) * D;
                for (int e = 0; e < D; e++) {
                    float num = 0.0f, den = 0.0f;
                    for (int j = 0; j < nparts; j++) {
                        const aiter_partition *pj = &parts[(size_t)j * G + g];
                        if (pj->max_logit == -INFINITY && pj->exp_sum == 0.0f)
                            continue; /* empty partition */
                        float wgt = pj->exp_sum * exp2f(pj->max_logit - gmax);
                        num += wgt * tmp_out[((size_t)j * G + g) * D + e];
                        den += wgt;
                    }
                    swa_store(p->dtype, o->out, ooff + e, den == 0.0f ? 0.0f : num / den); /* NaN stays NaN */
                }
            }
        }
    }
done:
    free(sc.q);
    free(sc.logits);
    free(sc.krow);
    free(sc.vrow);
    free(parts);
    free(tmp_out);
    free(heads);
    return st;
}
