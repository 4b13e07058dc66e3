/* decode_fa2.c — the FlashInfer-style decode backend: split-KV plan over
 * each request's window span, CUDA-graph plans (worst-case buffers, padded
 * grid) with in-place update, and the run wrapper.
 *
 * Mutants placed here (plan level): LAST_PAGE_LEN_OFF (the plan's copy of
 * last_page_len is one less), SPLIT_CHUNK_SHORT (chunks counted for
 * kv_chunk_size but executed one page shorter), SPLIT_LAST_CHUNK_DROPPED
 * (chunk count rounded down), GRAPH_CAPTURED_SCALARS (grid_work not padded:
 * the captured batch's num_work).  For the split mutants and
 * LSE_MERGE_DROPPED a split is forced whenever some request's span covers
 * more than one page (chunk = half the longest span, page aligned).
 * Tested by tests/test_plan_decode.c and tests/test_host_decode.c. */
/* Coverage: what no case reaches (mutant switches, allocation failures,
 * guards against calls the harness never makes: backends/guards.h) is left
 * out by the patterns of ci/coverage.sh, which says why; the exclusion
 * markers below are the few places no pattern can tell, each with its
 * reason. */
#include "backends/decode_fa2.h"

#include "backends/attn_primitives.h"
#include "backends/plan_common.h"

#define BACKEND "decode_fa2"

typedef struct fa2_state {
    swa_decode_fa2_plan *plan;     /* what run() executes (graph: updated to the full batch) */
    swa_decode_fa2_plan *captured; /* graph mode: planned with the capture batch */
    const swa_device_ops *device;
} fa2_state;

void swa_decode_fa2_plan_free(swa_decode_fa2_plan *p)
{
    if (!p)
        return;
    free(p->work_request);
    free(p->work_chunk);
    free(p->req_num_chunks);
    free(p->req_partial_offset);
    free(p->kv_indptr);
    free(p->kv_indices);
    free(p->kv_last_page_len);
    free(p);
}

swa_status swa_decode_check_cache(const char *backend, const swa_case *c, const swa_paged_kv *kv, swa_error *err)
{
    if (SWA_API_GUARD(!kv || !kv->indptr || !kv->indices || !kv->last_page_len))
        return SWA_API_ERROR(err, SWA_ERR_INVALID, "%s: case %s has no paged KV cache in its inputs", backend, c->id);
    if (SWA_API_GUARD(kv->num_requests != c->num_requests || kv->page_size != c->page_size || kv->page_size < 1 ||
                      kv->num_kv_heads != c->num_kv_heads || kv->head_dim != c->head_dim))
        return SWA_API_ERROR(err, SWA_ERR_INVALID,
                             "%s: case %s: paged cache (requests %d, page_size %d, kv heads %d, head_dim %d) "
                             "does not match the case (%d, %d, %d, %d)",
                             backend, c->id, kv->num_requests, kv->page_size, kv->num_kv_heads, kv->head_dim,
                             c->num_requests, c->page_size, c->num_kv_heads, c->head_dim);
    for (int r = 0; r < c->num_requests; r++) {
        int pages = kv->indptr[r + 1] - kv->indptr[r];
        int lpl = kv->last_page_len[r];
        if (SWA_API_GUARD(pages < 0 || (pages > 0 && (lpl < 1 || lpl > kv->page_size)) ||
                          swa_paged_kv_len(pages, kv->page_size, lpl) != c->kv_len[r]))
            return SWA_API_ERROR(err, SWA_ERR_INVALID,
                                 "%s: case %s request %d: page table has %d pages, last_page_len %d (kv_len %d) "
                                 "but the case says kv_len %d",
                                 backend, c->id, r, pages, lpl, swa_paged_kv_len(pages, kv->page_size, lpl),
                                 c->kv_len[r]);
        for (int e = kv->indptr[r]; e < kv->indptr[r + 1]; e++)
            if (SWA_API_GUARD(kv->indices[e] < 0 || kv->indices[e] >= kv->num_pages))
                return SWA_API_ERROR(err, SWA_ERR_INVALID,
                                     "%s: case %s request %d: page id %d at indices[%d] is outside the pool "
                                     "of %d pages",
                                     backend, c->id, r, kv->indices[e], e, kv->num_pages);
    }
    return SWA_OK;
}

/* A page no request references (NaN-poisoned by the data generator), or
 * page 0 when the pool has none.  It pads the plan's page table so a
 * FOREIGN_PAGE_READ lookup one entry too far stays inside the table. */
static int fa2_spare_page(const swa_paged_kv *kv)
{
    unsigned char *used = calloc((size_t)kv->num_pages + 1, 1);
    int spare = 0;
    if (SWA_ALLOC_FAILED(used)) return 0;
    for (int e = 0; e < kv->indptr[kv->num_requests]; e++)
        used[kv->indices[e]] = 1;
    for (int pg = 0; pg < kv->num_pages; pg++)
        if (!used[pg]) {
            spare = pg;
            break;
        }
    free(used);
    return spare;
}

/* Span of keys a request's chunks cover: [base, kv_len). */
static int fa2_request_span(const swa_decode_fa2_plan *p, int r)
{
    int pages = p->kv_indptr[r + 1] - p->kv_indptr[r];
    int kv_len = swa_paged_kv_len(pages, p->page_size, p->kv_last_page_len[r]);
    int ws = swa_decode_window_start(kv_len, p->window_left, p->chunk_size, p->mutant);
    int base = swa_decode_chunk_base(ws, p->page_size, p->mutant);
    return swa_imax(0, kv_len - base);
}

/* Chunk counts for a span with the plan's split settings.  count_chunk is
 * the chunk size the planner counted with (kv_chunk_size, except under
 * SPLIT_CHUNK_SHORT where the executed chunks are one page shorter). */
static int fa2_chunks_for_span(int span, bool split, int count_chunk, swa_mutant m)
{
    if (!split)
        return 1;
    if (m == SWA_MUTANT_SPLIT_LAST_CHUNK_DROPPED) return span / count_chunk;
    return swa_imax(1, swa_ceil_div(span, count_chunk));
}

static int fa2_count_chunk(const swa_decode_fa2_plan *p)
{
    return p->mutant == SWA_MUTANT_SPLIT_CHUNK_SHORT && p->split_kv ? p->kv_chunk_size + p->page_size : p->kv_chunk_size;
}

/* Copies the page table of the first n requests into p (capacity checked
 * by the caller) and rebuilds the work list and partial offsets. */
static void fa2_fill_batch(swa_decode_fa2_plan *p, const swa_paged_kv *kv, int n, int spare_page,
                           bool keep_offsets)
{
    p->num_requests = n;
    p->kv_indptr[0] = 0;
    for (int r = 0; r < n; r++) {
        p->kv_indptr[r + 1] = kv->indptr[r + 1] - kv->indptr[0];
        int lpl = kv->last_page_len[r];
        if (p->mutant == SWA_MUTANT_LAST_PAGE_LEN_OFF) lpl -= 1; /* kv_len one short: the newest key is dropped */
        p->kv_last_page_len[r] = lpl;
    }
    int total_pages = p->kv_indptr[n];
    memcpy(p->kv_indices, kv->indices + kv->indptr[0], (size_t)total_pages * sizeof(int));
    p->kv_indices[total_pages] = spare_page;

    int count_chunk = fa2_count_chunk(p);
    int w = 0, rows = 0;
    for (int r = 0; r < n; r++) {
        int chunks = fa2_chunks_for_span(fa2_request_span(p, r), p->split_kv, count_chunk, p->mutant);
        p->req_num_chunks[r] = chunks;
        if (!keep_offsets) /* GCOVR_EXCL_BR_LINE mutant switch (GRAPH_STALE_PARTIAL_OFFSETS) */
            p->req_partial_offset[r] = p->split_kv ? rows : 0;
        if (p->split_kv)
            rows += chunks;
        for (int ch = 0; ch < chunks; ch++, w++) {
            p->work_request[w] = r;
            p->work_chunk[w] = ch;
        }
    }
    p->num_work = w;
    p->total_partial_rows = rows;
}

/* CTAs a chunk size launches for the batch. */
static long long fa2_ctas_for_chunk(const int *spans, int n, int chunk, int num_kv_heads)
{
    long long items = 0;
    for (int r = 0; r < n; r++)
        items += swa_imax(1, swa_ceil_div(spans[r], chunk));
    return items * num_kv_heads;
}

/* Split decision over the given spans: returns the chunk size, 0 for no
 * split.  Splits when batch x kv_heads CTAs underfill the SMs and some span
 * is longer than the minimum chunk; the chunk is the smallest multiple of
 * page_size (>= the minimum) whose grid fits in one wave. */
static int fa2_choose_chunk(const int *spans, int n, int page_size, int num_kv_heads, int num_sms, int split,
                            bool deterministic, swa_mutant m)
{
    int max_span = 0;
    for (int r = 0; r < n; r++)
        max_span = swa_imax(max_span, spans[r]);
    if (m == SWA_MUTANT_SPLIT_CHUNK_SHORT || m == SWA_MUTANT_SPLIT_LAST_CHUNK_DROPPED ||
        m == SWA_MUTANT_LSE_MERGE_DROPPED) {
        if (max_span > page_size) { /* GCOVR_EXCL_START mutant-only: the forced split */
            int chunk = swa_align_up(swa_ceil_div(max_span, 2), page_size);
            if (m == SWA_MUTANT_SPLIT_CHUNK_SHORT)
                chunk = swa_imax(chunk, 2 * page_size); /* room to lose a page */
            return chunk;
        }
        return 0;
    } /* GCOVR_EXCL_STOP */
    int min_chunk = swa_align_up(SWA_DECODE_MIN_CHUNK, page_size);
    if (split < 0)
        return 0;
    if (split > 0)
        return min_chunk;
    if (deterministic)
        return swa_align_up(SWA_DECODE_DETERMINISTIC_CHUNK, page_size);
    if (max_span <= min_chunk || (long long)n * num_kv_heads >= num_sms)
        return 0;
    int lo = min_chunk / page_size, hi = swa_ceil_div(max_span, page_size);
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (fa2_ctas_for_chunk(spans, n, mid * page_size, num_kv_heads) <= num_sms)
            hi = mid;
        else
            lo = mid + 1;
    }
    int chunk = lo * page_size;
    return chunk >= max_span ? 0 : chunk;
}

static void fa2_fill_shape(swa_decode_fa2_plan *p, const swa_case *c, swa_mutant m)
{
    p->num_qo_heads = c->num_qo_heads;
    p->num_kv_heads = c->num_kv_heads;
    p->group_size = c->num_qo_heads / c->num_kv_heads;
    p->head_dim = c->head_dim;
    p->page_size = c->page_size;
    p->dtype = c->dtype;
    p->layout = c->layout;
    p->window_left = c->window_left;
    p->chunk_size = c->chunk_size;
    p->sm_scale = swa_plan_sm_scale(c);
    p->soft_cap = (float)c->soft_cap;
    p->mutant = m;
}

static swa_status fa2_alloc(swa_decode_fa2_plan *p, swa_error *err)
{
    if (!(p->work_request = swa_plan_calloc((size_t)p->capacity_work, sizeof(int), BACKEND, err)) ||
        !(p->work_chunk = swa_plan_calloc((size_t)p->capacity_work, sizeof(int), BACKEND, err)) ||
        !(p->req_num_chunks = swa_plan_calloc((size_t)p->capacity_requests, sizeof(int), BACKEND, err)) ||
        !(p->req_partial_offset = swa_plan_calloc((size_t)p->capacity_requests, sizeof(int), BACKEND, err)) ||
        !(p->kv_indptr = swa_plan_calloc((size_t)p->capacity_requests + 1, sizeof(int), BACKEND, err)) ||
        !(p->kv_indices = swa_plan_calloc((size_t)p->capacity_pages + 1, sizeof(int), BACKEND, err)) ||
        !(p->kv_last_page_len = swa_plan_calloc((size_t)p->capacity_requests, sizeof(int), BACKEND, err)))
        return SWA_ERR_NOMEM;
    return SWA_OK;
}

/* Spans of the first n requests as the plan will see them (page table after
 * the LAST_PAGE_LEN_OFF mutant, chunk base after WINDOW_PAGE_CROSS). */
static int *fa2_spans(const swa_case *c, const swa_paged_kv *kv, int n, swa_mutant m, swa_error *err)
{
    int *spans = swa_plan_calloc((size_t)n, sizeof(int), BACKEND, err);
    if (SWA_ALLOC_FAILED(spans)) return NULL;
    for (int r = 0; r < n; r++) {
        int lpl = kv->last_page_len[r] - (m == SWA_MUTANT_LAST_PAGE_LEN_OFF ? 1 : 0);
        int kv_len = swa_paged_kv_len(kv->indptr[r + 1] - kv->indptr[r], kv->page_size, lpl);
        int base = swa_decode_chunk_base(swa_decode_window_start(kv_len, c->window_left, c->chunk_size, m),
                                         kv->page_size, m);
        spans[r] = swa_imax(0, kv_len - base);
    }
    return spans;
}

swa_status swa_decode_fa2_plan_build(const swa_case *c, const swa_paged_kv *kv, int num_requests,
                                     const swa_plan_opts *o, swa_decode_fa2_plan **out, swa_error *err)
{
    *out = NULL;
    swa_status st = swa_plan_check_case(BACKEND, c, err);
    if (SWA_API_GUARD(st == SWA_OK))
        st = swa_decode_check_cache(BACKEND, c, kv, err);
    if (SWA_API_GUARD(st != SWA_OK)) return st;
    if (SWA_API_GUARD(num_requests < 1 || num_requests > c->num_requests))
        return SWA_API_ERROR(err, SWA_ERR_INVALID, "%s: asked to plan %d requests of a %d-request case", BACKEND,
                             num_requests, c->num_requests);
    swa_mutant m = swa_plan_mutant(o);
    swa_decode_fa2_plan *p = swa_plan_calloc(1, sizeof *p, BACKEND, err);
    if (SWA_ALLOC_FAILED(p))
        return SWA_ERR_NOMEM;
    fa2_fill_shape(p, c, m);
    int *spans = fa2_spans(c, kv, num_requests, m, err);
    if (SWA_ALLOC_FAILED(spans)) {
        free(p); return SWA_ERR_NOMEM;
    }
    int chunk = fa2_choose_chunk(spans, num_requests, c->page_size, c->num_kv_heads, swa_plan_target_sms(o),
                                 o ? o->split : 0, c->deterministic, m);
    int max_kv = 0;
    for (int r = 0; r < num_requests; r++)
        max_kv = swa_imax(max_kv, c->kv_len[r]);
    p->split_kv = chunk > 0;
    p->kv_chunk_size = p->split_kv ? chunk : swa_align_up(swa_imax(max_kv, 1), c->page_size);
    /* SPLIT_CHUNK_SHORT: executed chunks one page short of what was counted */
    if (m == SWA_MUTANT_SPLIT_CHUNK_SHORT && p->split_kv) p->kv_chunk_size -= c->page_size;

    long long work = 0;
    for (int r = 0; r < num_requests; r++)
        work += fa2_chunks_for_span(spans[r], p->split_kv, chunk, m);
    free(spans);
    p->capacity_requests = num_requests;
    p->capacity_work = (int)swa_imax(1, (int)work);
    p->capacity_partial_rows = p->split_kv ? p->capacity_work : 0;
    p->capacity_pages = kv->indptr[num_requests] - kv->indptr[0];
    if (fa2_alloc(p, err) == SWA_ERR_NOMEM) {
        swa_decode_fa2_plan_free(p); return SWA_ERR_NOMEM;
    }
    fa2_fill_batch(p, kv, num_requests, fa2_spare_page(kv), false);
    p->grid_work = p->num_work;
    *out = p;
    return SWA_OK;
}

swa_status swa_decode_fa2_plan_graph(const swa_case *c, const swa_paged_kv *kv, int capture_requests,
                                     int graph_max_requests, int graph_max_kv_len, const swa_plan_opts *o,
                                     swa_decode_fa2_plan **out, swa_error *err)
{
    *out = NULL;
    swa_status st = swa_plan_check_case(BACKEND, c, err);
    if (SWA_API_GUARD(st == SWA_OK))
        st = swa_decode_check_cache(BACKEND, c, kv, err);
    if (SWA_API_GUARD(st != SWA_OK)) return st;
    if (SWA_API_GUARD(capture_requests < 1 || capture_requests > graph_max_requests ||
                      capture_requests > c->num_requests))
        return SWA_API_ERROR(err, SWA_ERR_INVALID,
                             "%s: case %s: CUDA-graph capture batch of %d requests (expected 1..%d, at most "
                             "graph_max_requests %d)",
                             BACKEND, c->id, capture_requests, c->num_requests, graph_max_requests);
    for (int r = 0; r < capture_requests; r++)
        if (SWA_API_GUARD(c->kv_len[r] > graph_max_kv_len))
            return SWA_API_ERROR(err, SWA_ERR_INVALID,
                                 "%s: case %s: captured request %d has kv_len %d over graph_max_kv_len %d",
                                 BACKEND, c->id, r, c->kv_len[r], graph_max_kv_len);
    swa_mutant m = swa_plan_mutant(o);
    swa_decode_fa2_plan *p = swa_plan_calloc(1, sizeof *p, BACKEND, err);
    if (SWA_ALLOC_FAILED(p))
        return SWA_ERR_NOMEM;
    fa2_fill_shape(p, c, m);
    p->graph = true;
    p->graph_max_requests = graph_max_requests;
    p->graph_max_kv_len = graph_max_kv_len;

    /* The split is decided for the worst case the graph must serve: every
     * request at graph_max_kv_len with its window (span <= window + page). */
    int worst_kv = swa_imax(graph_max_kv_len, 1);
    int worst_ws = swa_decode_window_start(worst_kv, c->window_left, c->chunk_size, m);
    int worst_span = worst_kv - swa_decode_chunk_base(worst_ws, c->page_size, m);
    if (c->chunk_size > 0) /* a shorter request may sit further into its chunk */
        worst_span = swa_imin(worst_kv, c->chunk_size + c->page_size);
    int *spans = swa_plan_calloc((size_t)graph_max_requests, sizeof(int), BACKEND, err);
    if (SWA_ALLOC_FAILED(spans)) {
        free(p); return SWA_ERR_NOMEM;
    }
    for (int r = 0; r < graph_max_requests; r++)
        spans[r] = worst_span;
    int chunk = fa2_choose_chunk(spans, graph_max_requests, c->page_size, c->num_kv_heads,
                                 swa_plan_target_sms(o), o ? o->split : 0, c->deterministic, m);
    free(spans);
    p->split_kv = chunk > 0;
    p->kv_chunk_size = p->split_kv ? chunk : swa_align_up(worst_kv, c->page_size);
    if (m == SWA_MUTANT_SPLIT_CHUNK_SHORT && p->split_kv) p->kv_chunk_size -= c->page_size;

    /* Any request's span is at most its kv_len <= graph_max_kv_len. */
    int max_chunks = p->split_kv ? swa_imax(1, swa_ceil_div(worst_kv, chunk)) : 1;
    p->capacity_requests = graph_max_requests;
    p->capacity_work = graph_max_requests * max_chunks;
    p->capacity_partial_rows = p->split_kv ? p->capacity_work : 0;
    p->capacity_pages = graph_max_requests * swa_ceil_div(worst_kv, c->page_size);
    if (fa2_alloc(p, err) == SWA_ERR_NOMEM) {
        swa_decode_fa2_plan_free(p); return SWA_ERR_NOMEM;
    }
    fa2_fill_batch(p, kv, capture_requests, fa2_spare_page(kv), false);
    /* The launch grid is a scalar baked into the captured graph: pad it to
     * the capacity so any batch within capacity is fully covered on replay.
     * Mutant GRAPH_CAPTURED_SCALARS keeps the captured batch's num_work. */
    p->grid_work = m == SWA_MUTANT_GRAPH_CAPTURED_SCALARS ? p->num_work : p->capacity_work;
    *out = p;
    return SWA_OK;
}

swa_status swa_decode_fa2_graph_update(swa_decode_fa2_plan *p, const swa_paged_kv *kv, int num_requests,
                                       swa_error *err)
{
    if (SWA_API_GUARD(!p->graph))
        return SWA_API_ERROR(err, SWA_ERR_INVALID, "%s: graph update on a plan built without CUDA-graph mode",
                             BACKEND);
    if (SWA_API_GUARD(num_requests < 1 || num_requests > p->capacity_requests || num_requests > kv->num_requests))
        return SWA_API_ERROR(err, SWA_ERR_INVALID,
                             "%s: CUDA-graph update to %d requests exceeds the captured capacity of %d requests",
                             BACKEND, num_requests, p->capacity_requests);
    int pages = kv->indptr[num_requests] - kv->indptr[0];
    for (int r = 0; r < num_requests; r++) {
        int kv_len = swa_paged_kv_len(kv->indptr[r + 1] - kv->indptr[r], kv->page_size, kv->last_page_len[r]);
        if (SWA_API_GUARD(kv_len > p->graph_max_kv_len))
            return SWA_API_ERROR(err, SWA_ERR_INVALID,
                                 "%s: CUDA-graph update: request %d has kv_len %d over graph_max_kv_len %d",
                                 BACKEND, r, kv_len, p->graph_max_kv_len);
    }
    if (SWA_API_GUARD(pages > p->capacity_pages))
        return SWA_API_ERROR(err, SWA_ERR_INVALID, "%s: CUDA-graph update needs %d pages, capacity %d", BACKEND,
                             pages, p->capacity_pages);
    /* Mutant GRAPH_STALE_PARTIAL_OFFSETS: the replay refresh rewrites the
     * work list and page table but not the per-request partial offsets,
     * which keep the captured batch's layout */
    fa2_fill_batch(p, kv, num_requests, fa2_spare_page(kv), p->mutant == SWA_MUTANT_GRAPH_STALE_PARTIAL_OFFSETS);
    return SWA_OK;
}

swa_status swa_decode_fa2_graph_copy(swa_decode_fa2_plan *dst, const swa_decode_fa2_plan *src, swa_error *err)
{
    if (SWA_API_GUARD(!dst->graph || !src->graph || dst->capacity_work != src->capacity_work ||
                      dst->capacity_requests != src->capacity_requests || dst->capacity_pages != src->capacity_pages ||
                      dst->kv_chunk_size != src->kv_chunk_size || dst->split_kv != src->split_kv))
        return SWA_API_ERROR(err, SWA_ERR_INVALID,
                             "%s: CUDA-graph buffer update between plans of different capacity or chunking",
                             BACKEND);
    dst->num_requests = src->num_requests;
    dst->num_work = src->num_work;
    dst->total_partial_rows = src->total_partial_rows;
    memcpy(dst->work_request, src->work_request, (size_t)src->capacity_work * sizeof(int));
    memcpy(dst->work_chunk, src->work_chunk, (size_t)src->capacity_work * sizeof(int));
    memcpy(dst->req_num_chunks, src->req_num_chunks, (size_t)src->capacity_requests * sizeof(int));
    memcpy(dst->req_partial_offset, src->req_partial_offset, (size_t)src->capacity_requests * sizeof(int));
    memcpy(dst->kv_indptr, src->kv_indptr, ((size_t)src->capacity_requests + 1) * sizeof(int));
    memcpy(dst->kv_indices, src->kv_indices, ((size_t)src->capacity_pages + 1) * sizeof(int));
    memcpy(dst->kv_last_page_len, src->kv_last_page_len, (size_t)src->capacity_requests * sizeof(int));
    return SWA_OK;
}

/* ------------------------------------------------------------------------
 * backend table */

static const char *fa2_supports(const swa_case *c, const swa_device_ops *dev, char *buf, size_t n)
{
    if (dev && !dev->decode_fa2)
        return swa_device_lacks(dev, BACKEND, "decode_fa2 executor", buf, n);
    if (dev && c->cuda_graph && !dev->decode_fa2_graph)
        return swa_device_lacks(dev, BACKEND, "CUDA-graph mode", buf, n);
    return swa_plan_decode_supports(BACKEND, c, buf, n);
}

static void fa2_state_free(fa2_state *s)
{
    if (SWA_API_GUARD(!s)) return;
    swa_decode_fa2_plan_free(s->plan);
    swa_decode_fa2_plan_free(s->captured);
    free(s);
}

/* CUDA graph captured at a larger batch than the live one, as engines do:
 * the graph is captured once per batch-size bucket with placeholder
 * requests (one key each, on a page no request owns; sglang fills padded
 * seq_lens with 1) and replayed with the live requests, the rest of the
 * captured batch being padding whose work items and merge blocks exit (the
 * live counts are read from memory).  Capacity and split are those of the
 * captured batch size at the live batch's longest request. */
static swa_status fa2_plan_padded_graph(const swa_case *c, const swa_inputs *in, const swa_plan_opts *o,
                                        fa2_state *s, swa_error *err)
{
    int n = c->graph_capture_requests, max_kv = 0;
    for (int r = 0; r < c->num_requests; r++)
        max_kv = swa_imax(max_kv, c->kv_len[r]);
    const swa_paged_kv *kv = &in->paged;
    swa_status st = swa_decode_check_cache(BACKEND, c, kv, err);
    if (SWA_API_GUARD(st != SWA_OK)) return st;
    swa_case pc = *c; /* the captured batch: n placeholder requests */
    swa_paged_kv pkv = *kv;
    pc.num_requests = pkv.num_requests = n;
    pc.qo_len = swa_plan_calloc((size_t)n, sizeof(int), BACKEND, err);
    pc.kv_len = swa_plan_calloc((size_t)n, sizeof(int), BACKEND, err);
    pkv.indptr = swa_plan_calloc((size_t)n + 1, sizeof(int), BACKEND, err);
    pkv.indices = swa_plan_calloc((size_t)n, sizeof(int), BACKEND, err);
    pkv.last_page_len = swa_plan_calloc((size_t)n, sizeof(int), BACKEND, err);
    if (!SWA_ALLOC_FAILED(pc.qo_len, pc.kv_len, pkv.indptr, pkv.indices, pkv.last_page_len)) {
        int spare = fa2_spare_page(kv);
        for (int r = 0; r < n; r++) {
            pc.qo_len[r] = pc.kv_len[r] = 1;
            pkv.indptr[r + 1] = r + 1;
            pkv.indices[r] = spare;
            pkv.last_page_len[r] = 1;
        }
        st = swa_decode_fa2_plan_graph(&pc, &pkv, n, n, max_kv, o, &s->captured, err);
        if (SWA_API_GUARD(st == SWA_OK))
            st = swa_decode_fa2_plan_graph(&pc, &pkv, n, n, max_kv, o, &s->plan, err);
        if (SWA_API_GUARD(st == SWA_OK)) /* the replay: the live requests */
            st = swa_decode_fa2_graph_update(s->plan, kv, c->num_requests, err);
    } else {
        st = SWA_ERR_NOMEM;
    }
    free(pc.qo_len);
    free(pc.kv_len);
    free(pkv.indptr);
    free(pkv.indices);
    free(pkv.last_page_len);
    return st;
}

static swa_status fa2_plan(const swa_case *c, const swa_inputs *in, const swa_plan_opts *o, void **plan,
                           swa_error *err)
{
    *plan = NULL;
    char why[256];
    if (fa2_supports(c, o ? o->device : NULL, why, sizeof why))
        return SWA_API_ERROR(err, SWA_ERR_UNSUPPORTED, "%s", why);
    fa2_state *s = swa_plan_calloc(1, sizeof *s, BACKEND, err);
    if (SWA_ALLOC_FAILED(s))
        return SWA_ERR_NOMEM;
    s->device = o ? o->device : NULL;
    swa_status st;
    if (c->cuda_graph && c->graph_capture_requests > c->num_requests) {
        st = fa2_plan_padded_graph(c, in, o, s, err);
    } else if (c->cuda_graph) {
        int max_kv = 0;
        for (int r = 0; r < c->num_requests; r++)
            max_kv = swa_imax(max_kv, c->kv_len[r]);
        /* capture with the first graph_capture_requests requests; the
         * graph's worst case is the full batch at its longest request */
        st = swa_decode_fa2_plan_graph(c, &in->paged, c->graph_capture_requests, c->num_requests, max_kv, o,
                                       &s->captured, err);
        if (SWA_API_GUARD(st == SWA_OK))
            st = swa_decode_fa2_plan_graph(c, &in->paged, c->graph_capture_requests, c->num_requests, max_kv, o,
                                           &s->plan, err);
        if (SWA_API_GUARD(st == SWA_OK))
            st = swa_decode_fa2_graph_update(s->plan, &in->paged, c->num_requests, err);
    } else {
        st = swa_decode_fa2_plan_build(c, &in->paged, c->num_requests, o, &s->plan, err);
    }
    if (SWA_API_GUARD(st != SWA_OK)) { fa2_state_free(s); return st; }
    *plan = s;
    return SWA_OK;
}

const swa_decode_fa2_plan *swa_decode_fa2_plan_of(const void *backend_plan)
{
    return backend_plan ? ((const fa2_state *)backend_plan)->plan : NULL;
}

const swa_decode_fa2_plan *swa_decode_fa2_captured_of(const void *backend_plan)
{
    return backend_plan ? ((const fa2_state *)backend_plan)->captured : NULL;
}

static double fa2_run_lse_base(const void *plan, const swa_run_opts *r) { return 2.0; }

static swa_status fa2_run(void *plan, void *dev_inputs, const swa_run_opts *r, const swa_out_args *o,
                          swa_error *err)
{
    fa2_state *s = plan;
    if (r && r->window_left_set && r->window_left != s->plan->window_left)
        return SWA_API_ERROR(err, SWA_ERR_INVALID,
                             "%s: plan/run mismatch: planned window_left=%d, run window_left=%d; plan again "
                             "with the window the run uses",
                             BACKEND, s->plan->window_left, r->window_left);
    if (SWA_API_GUARD(!s->device))
        return SWA_API_ERROR(err, SWA_ERR_INVALID, "%s: the plan has no device to run on", BACKEND);
    bool write_lse = r && r->return_lse && o->lse;
    if (s->captured) {
        if (SWA_API_GUARD(!s->device->decode_fa2_graph))
            return SWA_API_ERROR(err, SWA_ERR_UNSUPPORTED, "%s: device %s has no CUDA-graph mode", BACKEND,
                                 s->device->name);
        return s->device->decode_fa2_graph(s->captured, s->plan, dev_inputs, o, write_lse, err);
    }
    if (SWA_API_GUARD(!s->device->decode_fa2))
        return SWA_API_ERROR(err, SWA_ERR_UNSUPPORTED, "%s", swa_device_lacks(s->device, BACKEND, "decode_fa2 executor",
                                                                              (char[160]){0}, 160));
    return s->device->decode_fa2(s->plan, dev_inputs, o, write_lse, err);
}

static void fa2_free(void *plan) { fa2_state_free(plan); }

/* Deterministic (fixed work items, chunks merged in order); batch-invariant
 * only in the deterministic mode: otherwise the split follows the batch
 * size (and, in graph mode, the captured batch). */
unsigned swa_decode_fa2_traits(const swa_backend *b, const swa_case *c)
{
    (void)b;
    return SWA_TRAIT_DETERMINISTIC | SWA_TRAIT_SPLIT_KNOB | (c->deterministic ? SWA_TRAIT_BATCH_INVARIANT : 0u);
}

const swa_backend swa_backend_decode_fa2 = {
    .name = BACKEND,
    .description = "FlashInfer-style batch decode: one CTA per (request, KV chunk, kv head) with all group "
                   "heads, split-KV over the window span with LSE merge, CUDA-graph mode",
    .api_version = SWA_BACKEND_API_VERSION,
    .flag = SWA_BACKEND_DECODE_FA2,
    .lse_base = 2.0,
    .supports = fa2_supports,
    .plan = fa2_plan,
    .run_lse_base = fa2_run_lse_base,
    .run = fa2_run,
    .free = fa2_free,
    .traits = swa_decode_fa2_traits,
};
