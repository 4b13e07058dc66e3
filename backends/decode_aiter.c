/* decode_aiter.c — the AITER PA v1-style decode backend: plan over
 * block_tables/context_lens with 256-token partitions, the wrapper's window
 * mapping S = L + 1 (plan.h swa_aiter_sliding_window), the plan-time refusal
 * of CUDA-graph mode, and the return_lse shadow decode_fa2 plan (seed 003).
 *
 * Mutants placed here: AITER_S_EQ_L and AITER_L0_SENTINEL (window mapping,
 * via swa_aiter_sliding_window), RETURN_LSE_IGNORED (run() does not
 * dispatch to the shadow: the LSE buffer is left unwritten while the
 * wrapper still claims base 2).  The shadow plan is built without a mutant:
 * the bugs of this backend live in the AITER path.
 * Tested by tests/test_plan_decode.c and tests/test_backend_decode.c. */
/* Coverage: what no case reaches (mutant switches, allocation failures,
 * guards against calls the harness never makes: backends/guards.h) is left
 * out by the patterns of ci/coverage.sh, which says why. */
#include "backends/decode_aiter.h"

#include "backends/attn_primitives.h"
#include "backends/decode_fa2.h"
#include "backends/plan_common.h"

#define BACKEND "decode_aiter"

typedef struct aiter_state {
    swa_decode_aiter_plan *plan;
    const swa_device_ops *device;
} aiter_state;

void swa_decode_aiter_plan_free(swa_decode_aiter_plan *p)
{
    if (SWA_API_GUARD(!p)) return;
    free(p->block_tables);
    free(p->context_lens);
    swa_decode_fa2_plan_free(p->shadow);
    free(p);
}

swa_status swa_decode_aiter_plan_build(const swa_case *c, const swa_paged_kv *kv, const swa_plan_opts *o,
                                       swa_decode_aiter_plan **out, swa_error *err)
{
    *out = NULL;
    swa_status st = swa_plan_check_case(BACKEND, c, err);
    if (SWA_API_GUARD(st == SWA_OK))
        st = swa_decode_check_cache(BACKEND, c, kv, err);
    if (SWA_API_GUARD(st != SWA_OK)) return st;
    if (c->cuda_graph)
        return swa_error_set(err, SWA_ERR_INVALID, "%s", SWA_AITER_GRAPH_ERROR);
    swa_mutant m = swa_plan_mutant(o);
    swa_decode_aiter_plan *p = swa_plan_calloc(1, sizeof *p, BACKEND, err);
    if (SWA_ALLOC_FAILED(p))
        return SWA_ERR_NOMEM;
    int B = c->num_requests;
    p->num_seqs = B;
    p->num_qo_heads = c->num_qo_heads;
    p->num_kv_heads = c->num_kv_heads;
    p->group_size = c->num_qo_heads / c->num_kv_heads;
    p->head_dim = c->head_dim;
    p->block_size = c->page_size;
    p->dtype = c->dtype;
    p->layout = c->layout;
    p->window_left = c->window_left;
    p->sliding_window = swa_aiter_sliding_window(c->window_left, m);
    p->scale = swa_plan_sm_scale(c);
    p->soft_cap = (float)c->soft_cap;
    p->mutant = m;
    p->partition_size = SWA_AITER_PARTITION_SIZE;

    int max_pages = 0;
    for (int r = 0; r < B; r++) {
        max_pages = swa_imax(max_pages, kv->indptr[r + 1] - kv->indptr[r]);
        p->max_context_len = swa_imax(p->max_context_len, c->kv_len[r]);
    }
    p->max_num_partitions = swa_imax(1, swa_ceil_div(p->max_context_len, p->partition_size));
    /* One spare column past the longest page list: a FOREIGN_PAGE_READ
     * lookup one entry too far stays inside the table. */
    p->max_blocks_per_seq = max_pages + 1;
    p->block_tables = swa_plan_calloc((size_t)B * p->max_blocks_per_seq, sizeof(int), BACKEND, err);
    p->context_lens = SWA_ALLOC_FAILED(p->block_tables) ? NULL : swa_plan_calloc((size_t)B, sizeof(int), BACKEND, err);
    if (SWA_ALLOC_FAILED(p->context_lens)) {
        swa_decode_aiter_plan_free(p); return SWA_ERR_NOMEM;
    }
    /* Unused slots hold a page no request owns (NaN-poisoned) rather than
     * -1, so a kernel reading past its list reads poison, not wild memory. */
    int spare = 0;
    {
        unsigned char *used = calloc((size_t)kv->num_pages + 1, 1);
        if (!SWA_ALLOC_FAILED(used)) {
            for (int e = 0; e < kv->indptr[B]; e++)
                used[kv->indices[e]] = 1;
            for (int pg = 0; pg < kv->num_pages; pg++)
                if (!used[pg]) {
                    spare = pg;
                    break;
                }
            free(used);
        }
    }
    for (int r = 0; r < B; r++) {
        int *row = p->block_tables + (size_t)r * p->max_blocks_per_seq;
        int pages = kv->indptr[r + 1] - kv->indptr[r];
        for (int j = 0; j < p->max_blocks_per_seq; j++)
            row[j] = j < pages ? kv->indices[kv->indptr[r] + j] : spare;
        p->context_lens[r] = c->kv_len[r];
    }

    if (c->return_lse) {
        swa_plan_opts shadow_opts = {0};
        if (o)
            shadow_opts = *o;
        shadow_opts.mutant = SWA_MUTANT_NONE;
        st = swa_decode_fa2_plan_build(c, kv, B, &shadow_opts, &p->shadow, err);
        if (SWA_API_GUARD(st != SWA_OK)) { swa_decode_aiter_plan_free(p); return st; }
        if (o && o->warn)
            o->warn(o->warn_ctx, BACKEND, SWA_AITER_SHADOW_WARNING);
    }
    *out = p;
    return SWA_OK;
}

/* ------------------------------------------------------------------------
 * backend table */

static const char *aiter_supports(const swa_case *c, const swa_device_ops *dev, char *buf, size_t n)
{
    if (dev && !dev->decode_aiter)
        return swa_device_lacks(dev, BACKEND, "decode_aiter executor", buf, n);
    if (dev && c->return_lse && !dev->decode_fa2)
        return swa_device_lacks(dev, BACKEND, "decode_fa2 executor for the return_lse shadow plan", buf, n);
    if (c->chunk_size > 0) {
        /* PA v1 masks with one sliding_window S per launch, counted back from
         * each sequence's context end; a chunk start floor((ctx-1)/C)*C is
         * neither, so running it would be a different attention */
        snprintf(buf, n, "%s (AITER PA v1) has one sliding_window per launch counted back from the context end; "
                 "it cannot express chunked local attention (attention_chunk_size %d): run decode_fa2 or "
                 "decode_auto.", BACKEND, c->chunk_size);
        return buf;
    }
    /* cuda_graph is deliberately not a skip: it is a plan-time error. */
    return swa_plan_decode_supports(BACKEND, c, buf, n);
}

static swa_status aiter_plan(const swa_case *c, const swa_inputs *in, const swa_plan_opts *o, void **plan,
                             swa_error *err)
{
    *plan = NULL;
    char why[256];
    if (aiter_supports(c, o ? o->device : NULL, why, sizeof why))
        return SWA_API_ERROR(err, SWA_ERR_UNSUPPORTED, "%s", why);
    aiter_state *s = swa_plan_calloc(1, sizeof *s, BACKEND, err);
    if (SWA_ALLOC_FAILED(s))
        return SWA_ERR_NOMEM;
    swa_status st = swa_decode_aiter_plan_build(c, &in->paged, o, &s->plan, err);
    if (st != SWA_OK) {
        free(s);
        return st;
    }
    s->device = o ? o->device : NULL;
    *plan = s;
    return SWA_OK;
}

const swa_decode_aiter_plan *swa_decode_aiter_plan_of(const void *backend_plan)
{
    return backend_plan ? ((const aiter_state *)backend_plan)->plan : NULL;
}

/* The wrapper claims base 2 whenever return_lse is served (also under
 * RETURN_LSE_IGNORED, which is the point of that mutant). */
static double aiter_run_lse_base(const void *plan, const swa_run_opts *r)
{
    const swa_decode_aiter_plan *p = swa_decode_aiter_plan_of(plan);
    return r && r->return_lse && p->shadow ? 2.0 : 0.0;
}

static swa_status aiter_run(void *plan, void *dev_inputs, const swa_run_opts *r, const swa_out_args *o,
                            swa_error *err)
{
    aiter_state *s = plan;
    const swa_decode_aiter_plan *p = s->plan;
    if (r && r->window_left_set && r->window_left != p->window_left)
        return SWA_API_ERROR(err, SWA_ERR_INVALID,
                             "%s: plan/run mismatch: planned window_left=%d, run window_left=%d; plan again "
                             "with the window the run uses",
                             BACKEND, p->window_left, r->window_left);
    if (SWA_API_GUARD(!s->device))
        return SWA_API_ERROR(err, SWA_ERR_INVALID, "%s: the plan has no device to run on", BACKEND);
    if (r && r->return_lse) {
        if (SWA_API_GUARD(!p->shadow))
            return SWA_API_ERROR(err, SWA_ERR_INVALID,
                                 "%s: run(return_lse=True) on a plan built without return_lse: the kernel has "
                                 "no LSE output and no shadow decode_fa2 plan exists; plan with return_lse",
                                 BACKEND);
        if (p->mutant != SWA_MUTANT_RETURN_LSE_IGNORED) {
            if (SWA_API_GUARD(!s->device->decode_fa2))
                return SWA_API_ERROR(err, SWA_ERR_UNSUPPORTED, "%s",
                                     swa_device_lacks(s->device, BACKEND, "decode_fa2 executor for the "
                                                      "return_lse shadow plan", (char[200]){0}, 200));
            return s->device->decode_fa2(p->shadow, dev_inputs, o, o->lse != NULL, err);
        }
    }
    if (SWA_API_GUARD(!s->device->decode_aiter))
        return SWA_API_ERROR(err, SWA_ERR_UNSUPPORTED, "%s",
                             swa_device_lacks(s->device, BACKEND, "decode_aiter executor", (char[160]){0}, 160));
    return s->device->decode_aiter(p, dev_inputs, o, err);
}

static void aiter_free(void *plan)
{
    aiter_state *s = plan;
    if (SWA_API_GUARD(!s)) return;
    swa_decode_aiter_plan_free(s->plan);
    free(s);
}

/* 256-key partitions of each request and a reduce over them in order:
 * nothing depends on the other requests, so the output is deterministic and
 * batch-invariant by construction.  With return_lse the whole result
 * comes from the shadow decode_fa2 plan, batch-invariant only in the
 * deterministic mode.
 * No split knob (the partitions are the kernel's). */
static unsigned aiter_traits(const swa_backend *b, const swa_case *c)
{
    (void)b;
    return SWA_TRAIT_DETERMINISTIC | (!c->return_lse || c->deterministic ? SWA_TRAIT_BATCH_INVARIANT : 0u);
}

const swa_backend swa_backend_decode_aiter = {
    .name = BACKEND,
    .description = "AITER PA v1-style decode over block_tables/context_lens: 256-token partitions, "
                   "(max_logit, exp_sum) per partition then a reduce; sliding_window S = L + 1; no LSE "
                   "(return_lse runs a shadow decode_fa2 plan); no CUDA-graph mode",
    .api_version = SWA_BACKEND_API_VERSION,
    .flag = SWA_BACKEND_DECODE_AITER,
    .lse_base = 0.0,
    .supports = aiter_supports,
    .plan = aiter_plan,
    .run_lse_base = aiter_run_lse_base,
    .run = aiter_run,
    .free = aiter_free,
    .traits = aiter_traits,
};
