/* prefill.c — the prefill backend: FlashInfer-style plan (query tiles,
 * KV tiles, split-KV chunks, work list) and the run wrapper that checks
 * plan/run consistency before handing the plan to a device.
 *
 * Mutants placed here (plan level): MASK_COMPILED_OUT (seed 000: planned
 * without the window, the run-time window drives only the KV-start skip and
 * the consistency check is bypassed), SPLIT_LAST_CHUNK_DROPPED (chunk count
 * rounded down).  A split is forced for SPLIT_LAST_CHUNK_DROPPED and
 * LSE_MERGE_DROPPED when some request has more keys than one KV tile, so
 * the mutants have something to break.
 * Tested by tests/test_plan_prefill.c and tests/test_host_prefill.c. */
/* Coverage: what no case reaches (mutant switches, allocation failures,
 * guards against calls the harness never makes: backends/guards.h) is left
 * out by the patterns of ci/coverage.sh, which says why; the exclusion
 * markers below are the few places no pattern can tell, each with its
 * reason. */
#include "backends/prefill.h"

#include "backends/attn_primitives.h"
#include "backends/plan_common.h"

#define BACKEND "prefill"

typedef struct prefill_state {
    swa_prefill_plan plan; /* first member: swa_prefill_plan_of casts */
    const swa_device_ops *device;
} prefill_state;

int swa_prefill_cta_tile_q(double avg_packed_qo_len, int head_dim)
{
    if (avg_packed_qo_len > 64 && head_dim < 256)
        return 128;
    if (avg_packed_qo_len > 16)
        return 64;
    return 16;
}

int swa_prefill_cta_tile_kv(int head_dim) { return head_dim <= 128 ? 64 : 32; }

/* CTAs (work items x kv heads) a chunk size would launch. */
static long long prefill_ctas_for_chunk(const swa_case *c, const int *tiles, int chunk)
{
    long long items = 0;
    for (int r = 0; r < c->num_requests; r++)
        items += (long long)tiles[r] * swa_imax(1, swa_ceil_div(c->kv_len[r], chunk));
    return items * c->num_kv_heads;
}

/* Split-KV decision.  Returns the chunk size, or 0 for no split.  The
 * deterministic mode (c->deterministic) always splits, in chunks of
 * SWA_PREFILL_DETERMINISTIC_CHUNK keys whatever the batch; a forced split
 * (the "split" invariance) uses the smallest worthwhile chunk.  Otherwise it
 * splits
 * when the unsplit grid underfills the SMs and some request is longer than
 * the smallest worthwhile chunk (4 KV tiles); the chunk is the smallest
 * multiple of cta_tile_kv whose grid still fits in one wave. */
static int prefill_choose_chunk(const swa_case *c, const int *tiles, int cta_tile_kv, int num_sms, int split,
                                swa_mutant m)
{
    int max_kv = 0;
    for (int r = 0; r < c->num_requests; r++)
        max_kv = swa_imax(max_kv, c->kv_len[r]);
    if ((m == SWA_MUTANT_SPLIT_LAST_CHUNK_DROPPED || m == SWA_MUTANT_LSE_MERGE_DROPPED) &&
        max_kv > cta_tile_kv)
        return swa_align_up(swa_ceil_div(max_kv, 2), cta_tile_kv); /* GCOVR_EXCL_LINE mutant-only: the forced split */

    int min_chunk = 4 * cta_tile_kv;
    if (split < 0)
        return 0;
    if (split > 0)
        return min_chunk;
    if (c->deterministic)
        return SWA_PREFILL_DETERMINISTIC_CHUNK;
    if (max_kv <= min_chunk || prefill_ctas_for_chunk(c, tiles, max_kv) >= num_sms)
        return 0;
    int lo = min_chunk / cta_tile_kv, hi = swa_ceil_div(max_kv, cta_tile_kv);
    while (lo < hi) { /* smallest k with ctas(k * tile) <= num_sms */
        int mid = lo + (hi - lo) / 2;
        if (prefill_ctas_for_chunk(c, tiles, mid * cta_tile_kv) <= num_sms)
            hi = mid;
        else
            lo = mid + 1;
    }
    int chunk = lo * cta_tile_kv;
    return chunk >= max_kv ? 0 : chunk;
}

static void prefill_plan_release(swa_prefill_plan *p)
{
    free(p->work_request);
    free(p->work_qo_tile);
    free(p->work_kv_chunk);
    free(p->qo_indptr);
    free(p->kv_indptr);
    free(p->qo_len);
    free(p->kv_len);
    free(p->req_num_chunks);
    free(p->req_partial_offset);
}

/* GCOVR_EXCL_START: no run calls it (prefill_plan moves the arrays into its
 * state and frees them with prefill_plan_release); only a C caller of
 * swa_prefill_plan_build and that function's failure path do. */
void swa_prefill_plan_free(swa_prefill_plan *p)
{
    if (!p)
        return;
    prefill_plan_release(p);
    free(p);
}
/* GCOVR_EXCL_STOP */

static swa_status prefill_fill(const swa_case *c, const swa_plan_opts *o, swa_prefill_plan *p, swa_error *err)
{
    int B = c->num_requests;
    swa_mutant m = swa_plan_mutant(o);
    p->num_requests = B;
    p->num_qo_heads = c->num_qo_heads;
    p->num_kv_heads = c->num_kv_heads;
    p->group_size = c->num_qo_heads / c->num_kv_heads;
    p->head_dim = c->head_dim;
    p->page_size = c->page_size;
    p->dtype = c->dtype;
    p->layout = c->layout;
    p->kv_mode = c->kv_mode;
    p->causal = c->causal;
    p->sm_scale = swa_plan_sm_scale(c);
    p->soft_cap = (float)c->soft_cap;
    p->mutant = m;
    if (m == SWA_MUTANT_MASK_COMPILED_OUT) {
        /* seed 000: planned without window_left, so the variant is compiled
         * without the sliding-window mask; the run-time window survives only
         * in the KV-start skip. */
        p->window_left = -1; /* GCOVR_EXCL_START mutant-only */
        p->mask_window = false;
        p->run_window_left = c->window_left;
    } else { /* GCOVR_EXCL_STOP */
        p->window_left = c->window_left;
        p->mask_window = c->window_left >= 0 || (!c->causal && c->window_right >= 0) || c->chunk_size > 0;
        p->run_window_left = c->window_left;
    }
    /* a causal row's right edge is p itself: R = 0 whatever the case says */
    p->window_right = c->causal ? 0 : c->window_right;
    p->chunk_size = c->chunk_size;

    if (!(p->qo_indptr = swa_plan_calloc((size_t)B + 1, sizeof(int), BACKEND, err)) ||
        !(p->kv_indptr = swa_plan_calloc((size_t)B + 1, sizeof(int), BACKEND, err)) ||
        !(p->qo_len = swa_plan_calloc((size_t)B, sizeof(int), BACKEND, err)) ||
        !(p->kv_len = swa_plan_calloc((size_t)B, sizeof(int), BACKEND, err)) ||
        !(p->req_num_chunks = swa_plan_calloc((size_t)B, sizeof(int), BACKEND, err)) ||
        !(p->req_partial_offset = swa_plan_calloc((size_t)B, sizeof(int), BACKEND, err)))
        return SWA_ERR_NOMEM;

    long long packed_total = 0;
    for (int r = 0; r < B; r++) {
        p->qo_len[r] = c->qo_len[r];
        p->kv_len[r] = c->kv_len[r];
        p->qo_indptr[r + 1] = p->qo_indptr[r] + c->qo_len[r];
        p->kv_indptr[r + 1] = p->kv_indptr[r] + c->kv_len[r];
        packed_total += (long long)c->qo_len[r] * p->group_size;
    }
    /* the deterministic mode takes the tile of long prompts whatever the
     * batch: the average would make one request's kernel depend on the others */
    p->cta_tile_q = swa_prefill_cta_tile_q(c->deterministic ? 1e9 : (double)packed_total / B, c->head_dim);
    p->cta_tile_kv = swa_prefill_cta_tile_kv(c->head_dim);

    int *tiles = swa_plan_calloc((size_t)B, sizeof(int), BACKEND, err);
    if (SWA_ALLOC_FAILED(tiles))
        return SWA_ERR_NOMEM;
    for (int r = 0; r < B; r++)
        tiles[r] = swa_ceil_div(c->qo_len[r] * p->group_size, p->cta_tile_q);
    int chunk = prefill_choose_chunk(c, tiles, p->cta_tile_kv, swa_plan_target_sms(o), o ? o->split : 0, m);
    p->split_kv = chunk > 0;
    p->kv_chunk_size = chunk;

    long long num_work = 0, partial_rows = 0;
    for (int r = 0; r < B; r++) {
        int chunks = 1;
        if (p->split_kv) {
            chunks = swa_imax(1, swa_ceil_div(c->kv_len[r], chunk));
            /* SPLIT_LAST_CHUNK_DROPPED: rounded down, the partial chunk is lost */
            if (m == SWA_MUTANT_SPLIT_LAST_CHUNK_DROPPED) chunks = c->kv_len[r] / chunk;
        }
        p->req_num_chunks[r] = chunks;
        p->req_partial_offset[r] = p->split_kv ? (int)partial_rows : 0;
        if (p->split_kv)
            partial_rows += (long long)chunks * c->qo_len[r];
        num_work += (long long)tiles[r] * chunks;
    }
    if (SWA_API_GUARD(num_work > 0x7fffffff || partial_rows > 0x7fffffff)) {
        free(tiles); return SWA_API_ERROR(err, SWA_ERR_INVALID, "%s: case %s needs %lld work items (over "
                                          "the int range)", BACKEND, c->id, num_work);
    }
    p->num_work = (int)num_work;
    p->total_partial_rows = (int)partial_rows;
    if (!(p->work_request = swa_plan_calloc((size_t)num_work, sizeof(int), BACKEND, err)) ||
        !(p->work_qo_tile = swa_plan_calloc((size_t)num_work, sizeof(int), BACKEND, err)) ||
        !(p->work_kv_chunk = swa_plan_calloc((size_t)num_work, sizeof(int), BACKEND, err))) {
        free(tiles); return SWA_ERR_NOMEM;
    }
    int w = 0;
    for (int r = 0; r < B; r++)
        for (int t = 0; t < tiles[r]; t++)
            for (int ch = 0; ch < p->req_num_chunks[r]; ch++, w++) {
                p->work_request[w] = r;
                p->work_qo_tile[w] = t;
                p->work_kv_chunk[w] = ch;
            }
    free(tiles);
    return SWA_OK;
}

swa_status swa_prefill_plan_build(const swa_case *c, const swa_plan_opts *o, swa_prefill_plan **out,
                                  swa_error *err)
{
    *out = NULL;
    swa_status st = swa_plan_check_case(BACKEND, c, err);
    if (SWA_API_GUARD(st != SWA_OK)) return st;
    if (c->kv_mode == SWA_KV_PAGED &&
        SWA_API_GUARD(c->page_size < 1))
        return SWA_API_ERROR(err, SWA_ERR_INVALID, "%s: case %s has page_size %d (expected >= 1)", BACKEND,
                             c->id, c->page_size);
    swa_prefill_plan *p = swa_plan_calloc(1, sizeof *p, BACKEND, err);
    if (SWA_ALLOC_FAILED(p))
        return SWA_ERR_NOMEM;
    st = prefill_fill(c, o, p, err);
    if (SWA_API_GUARD(st != SWA_OK)) { swa_prefill_plan_free(p); return st; }
    *out = p;
    return SWA_OK;
}

/* ------------------------------------------------------------------------
 * backend table */

static const char *prefill_supports(const swa_case *c, const swa_device_ops *dev, char *buf, size_t n)
{
    const char *why;
    if (dev && !dev->prefill)
        return swa_device_lacks(dev, BACKEND, "prefill executor", buf, n);
    if ((why = swa_plan_dtype_reason(BACKEND, c, buf, n)) || (why = swa_plan_head_dim_reason(BACKEND, c, buf, n)))
        return why;
    if (c->cuda_graph) {
        snprintf(buf, n, "%s has no CUDA-graph mode in swadiff; CUDA-graph cases run on decode_fa2 or "
                 "decode_auto.", BACKEND);
        return buf;
    }
    return NULL;
}

static swa_status prefill_plan(const swa_case *c, const swa_inputs *in, const swa_plan_opts *o, void **plan,
                               swa_error *err)
{
    *plan = NULL;
    prefill_state *s = swa_plan_calloc(1, sizeof *s, BACKEND, err);
    if (SWA_ALLOC_FAILED(s))
        return SWA_ERR_NOMEM;
    swa_prefill_plan *p;
    swa_status st = swa_prefill_plan_build(c, o, &p, err);
    if (SWA_API_GUARD(st != SWA_OK)) { free(s); return st; }
    s->plan = *p;
    free(p); /* the arrays moved into s->plan */
    s->device = o ? o->device : NULL;
    *plan = s;
    return SWA_OK;
}

const swa_prefill_plan *swa_prefill_plan_of(const void *backend_plan)
{
    return backend_plan ? &((const prefill_state *)backend_plan)->plan : NULL;
}

static double prefill_run_lse_base(const void *plan, const swa_run_opts *r) { return 2.0; }

static swa_status prefill_run(void *plan, void *dev_inputs, const swa_run_opts *r, const swa_out_args *o,
                              swa_error *err)
{
    prefill_state *s = plan;
    swa_prefill_plan run_plan = s->plan;
    if (r && r->window_left_set && r->window_left != s->plan.window_left) {
        /* GCOVR_EXCL_START: a run whose window differs from the plan's, and
         * the mutant's overwrite under it: the harness runs a plan with its
         * own window (tests/test_backend_options.c runs one with another) */
        if (s->plan.mutant == SWA_MUTANT_MASK_COMPILED_OUT) {
            /* seed 000: the run-time window silently overwrites the planned
             * one and reaches only the KV-start skip. */
            run_plan.run_window_left = r->window_left;
        } else {
            return SWA_API_ERROR(err, SWA_ERR_INVALID,
                                 "%s: plan/run mismatch: planned window_left=%d, run window_left=%d; the "
                                 "per-element window mask is compiled from the planned window, so plan "
                                 "again with the window the run uses",
                                 BACKEND, s->plan.window_left, r->window_left);
        }
    } /* GCOVR_EXCL_STOP */
    if (SWA_API_GUARD(!s->device))
        return SWA_API_ERROR(err, SWA_ERR_INVALID, "%s: the plan has no device to run on (plan with "
                             "swa_plan_opts.device set)", BACKEND);
    if (SWA_API_GUARD(!s->device->prefill))
        return SWA_API_ERROR(err, SWA_ERR_UNSUPPORTED, "%s",
                             swa_device_lacks(s->device, BACKEND, "prefill executor", (char[160]){0}, 160));
    bool write_lse = r && r->return_lse && o->lse;
    return s->device->prefill(&run_plan, dev_inputs, o, write_lse, err);
}

static void prefill_free(void *plan)
{
    prefill_state *s = plan;
    if (SWA_API_GUARD(!s)) return;
    prefill_plan_release(&s->plan);
    free(s);
}

/* Every launch computes each work item in a fixed order and merges the
 * chunks of a row in chunk order: deterministic.  Batch-invariant only in
 * the deterministic mode: otherwise the query tile follows the batch's
 * average length and the split follows the batch's size. */
unsigned swa_prefill_traits(const swa_backend *b, const swa_case *c)
{
    (void)b;
    return SWA_TRAIT_DETERMINISTIC | SWA_TRAIT_SPLIT_KNOB | (c->deterministic ? SWA_TRAIT_BATCH_INVARIANT : 0u);
}

const swa_backend swa_backend_prefill = {
    .name = BACKEND,
    .description = "FlashInfer-style batch prefill (paged or ragged KV), query tiles of 16/64/128 packed "
                   "rows, KV-start skip + per-element window mask, split-KV with LSE merge",
    .api_version = SWA_BACKEND_API_VERSION,
    .flag = SWA_BACKEND_PREFILL,
    .lse_base = 2.0,
    .supports = prefill_supports,
    .plan = prefill_plan,
    .run_lse_base = prefill_run_lse_base,
    .run = prefill_run,
    .free = prefill_free,
    .traits = swa_prefill_traits,
};
