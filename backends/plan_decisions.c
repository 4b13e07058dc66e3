/* plan_decisions.c — what a plan decided (read back from the plan structs
 * and the case), and which decisions each backend's planner can reach.
 * See plan_decisions.h for the model; every rule below carries its reason,
 * and `swadiff coverage --json` prints those reasons with the gaps.
 *
 * Backends are told apart by their table (the four built-in ones);
 * external backends have no plan struct here and no decisions.
 *
 * Tested by tests/test_plan_decisions.c. */
#include "backends/plan_decisions.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backends/decode_aiter.h"
#include "backends/decode_fa2.h"
#include "backends/plan_common.h"
#include "backends/prefill.h"

/* ---- the decisions -------------------------------------------------------------- */

static const swa_decision_def decision_table[SWA_DEC_COUNT] = {
    [SWA_DEC_DTYPE] = {"dtype", {"fp16", "bf16"}, false, "input dtype (fp32 is refused by every backend)"},
    [SWA_DEC_HEAD_DIM] = {"head_dim", {"64", "128", "256"}, false,
                          "head_dim instantiated (other head dims are refused, never planned)"},
    [SWA_DEC_BATCH] = {"batch", {"single", "several"}, false, "requests in the (live) batch: 1 or more"},
    [SWA_DEC_GQA_GROUP] = {"gqa_group", {"1", "2-4", "5-7", "8+"}, false, "qo heads per kv head"},
    [SWA_DEC_PAGE_SIZE] = {"page_size", {"1", "odd", "pow2", "even"}, false,
                           "paged KV: 1, odd > 1, power of two > 1, other even (not for ragged K/V)"},
    [SWA_DEC_LAYOUT] = {"layout", {"NHD", "HND"}, false, "page layout the plan carries"},
    [SWA_DEC_KV_MODE] = {"kv_mode", {"paged", "ragged"}, false, "prefill K/V source"},
    [SWA_DEC_CAUSAL] = {"causal", {"causal", "non_causal"}, false, "prefill causal mask"},
    [SWA_DEC_SM_SCALE] = {"sm_scale", {"default", "custom"}, false, "1/sqrt(head_dim) or a case's own scale"},
    [SWA_DEC_SOFT_CAP] = {"soft_cap", {"off", "on"}, false, "logit soft cap"},
    [SWA_DEC_WINDOW] = {"window", {"none", "window_left", "saturated", "window_right", "chunked"}, false,
                        "no window; a left window that drops keys for some row; a left window that drops "
                        "nothing (L >= kv_len - 1 for every request); a non-causal band with a right bound "
                        "R >= 0 (with or without L); chunked local attention (attention_chunk_size)"},
    [SWA_DEC_WINDOW_START] = {"window_start", {"mid_page", "on_page"}, true,
                              "per request with a binding window (paged): the newest row's window starts "
                              "inside a page or on a page boundary"},
    [SWA_DEC_WINDOW_PAGES] = {"window_pages", {"one_page", "several_pages"}, true,
                              "per request with a binding window (paged): the newest row's window lies in one "
                              "page or spans several"},
    [SWA_DEC_WINDOW_SKIP] = {"window_skip", {"none", "some"}, false,
                             "binding window: whether work before the window is skipped (prefill: KV tiles by "
                             "the KV-start skip; decode_fa2: whole pages before the chunk base; decode_aiter: "
                             "partitions with no visible key)"},
    [SWA_DEC_CTA_TILE_Q] = {"cta_tile_q", {"16", "64", "128"}, false, "prefill query tile (packed rows)"},
    [SWA_DEC_CTA_TILE_KV] = {"cta_tile_kv", {"32", "64"}, false, "prefill KV tile (keys)"},
    [SWA_DEC_SPLIT_KV] = {"split_kv", {"off", "on"}, false, "split-KV chunks with a merge of partial states"},
    [SWA_DEC_REQ_CHUNKS] = {"req_chunks", {"single", "several", "zero"}, true,
                            "split-KV only, per request: KV chunks of the request"},
    [SWA_DEC_MERGE] = {"merge", {"direct", "merge"}, false,
                       "outputs written by the work items, or by a merge of partials (decode_aiter: the "
                       "reduce kernel over 256-token partitions)"},
    [SWA_DEC_GRAPH] = {"graph", {"off", "on"}, false, "CUDA-graph plan (capture, update, replay)"},
    [SWA_DEC_GRAPH_BATCH] = {"graph_batch", {"more_live", "same", "fewer_live"}, false,
                             "CUDA-graph: live requests at replay against the captured batch"},
    [SWA_DEC_ROUTE] = {"route", {"decode_fa2", "decode_aiter"}, false, "decode_auto's choice"},
    [SWA_DEC_LSE_PATH] = {"lse_path", {"native", "none", "shadow_fa2"}, false,
                          "where the LSE comes from: the kernel, nowhere (AITER without return_lse), the "
                          "shadow decode_fa2 plan"},
    [SWA_DEC_SLIDING_WINDOW] = {"sliding_window", {"off", "one", "wide"}, false,
                                "AITER's S: 0 (no mask), 1 (L = 0: only the newest key), > 1"},
    [SWA_DEC_EMPTY_ROWS] = {"empty_rows", {"no", "yes"}, false,
                            "prefill: some request has qo_len > kv_len (its first rows sit before key 0)"},
    [SWA_DEC_LAYERS] = {"layers", {"one", "several"}, false,
                        "from the case: one plan over the batch, or one per layer of a \"layers\" case "
                        "(interleaved windows, all run in order)"},
};

static const swa_decision_pair pair_table[] = {
    {SWA_DEC_SPLIT_KV, SWA_DEC_BATCH},       {SWA_DEC_SPLIT_KV, SWA_DEC_CAUSAL},
    {SWA_DEC_SPLIT_KV, SWA_DEC_WINDOW},      {SWA_DEC_REQ_CHUNKS, SWA_DEC_BATCH},
    {SWA_DEC_CTA_TILE_Q, SWA_DEC_GQA_GROUP}, {SWA_DEC_PAGE_SIZE, SWA_DEC_WINDOW_START},
    {SWA_DEC_PAGE_SIZE, SWA_DEC_WINDOW_PAGES}, {SWA_DEC_GRAPH, SWA_DEC_SPLIT_KV},
    {SWA_DEC_GRAPH, SWA_DEC_WINDOW},         {SWA_DEC_LAYOUT, SWA_DEC_KV_MODE},
    {SWA_DEC_SOFT_CAP, SWA_DEC_WINDOW},      {SWA_DEC_MERGE, SWA_DEC_WINDOW_SKIP},
    {SWA_DEC_SLIDING_WINDOW, SWA_DEC_MERGE}, {SWA_DEC_WINDOW, SWA_DEC_CTA_TILE_Q},
    {SWA_DEC_WINDOW, SWA_DEC_PAGE_SIZE},     {SWA_DEC_GRAPH_BATCH, SWA_DEC_SPLIT_KV},
    {SWA_DEC_EMPTY_ROWS, SWA_DEC_SPLIT_KV},  {SWA_DEC_LAYERS, SWA_DEC_WINDOW},
};

const swa_decision_def *swa_decision_def_at(int key)
{
    return key >= 0 && key < SWA_DEC_COUNT ? &decision_table[key] : NULL;
}

int swa_decision_value_count(int key)
{
    const swa_decision_def *d = swa_decision_def_at(key);
    return d ? swa_closed_count(d->values, SWA_DECISION_MAX_VALUES) : 0;
}

int swa_decision_value_index(int key, const char *value)
{
    const swa_decision_def *d = swa_decision_def_at(key);
    return d ? swa_closed_index(d->values, SWA_DECISION_MAX_VALUES, value) : -1;
}

const swa_decision_pair *swa_decision_pairs(int *count)
{
    if (count)
        *count = (int)(sizeof pair_table / sizeof pair_table[0]);
    return pair_table;
}

/* ---- reading plans -------------------------------------------------------------- */

static void put(swa_decisions *d, swa_decision_key k, const char *value)
{
    int v = swa_decision_value_index(k, value);
    if (v >= 0) /* every value passed below is one of the table's */
        d->set[k] |= 1u << v;
}

static void put_if(swa_decisions *d, swa_decision_key k, bool cond, const char *yes, const char *no)
{
    put(d, k, cond ? yes : no);
}

static const char *gqa_class(int g) { return g <= 1 ? "1" : g <= 4 ? "2-4" : g <= 7 ? "5-7" : "8+"; }

static const char *page_class(int ps)
{
    if (ps == 1)
        return "1";
    if (ps % 2)
        return "odd";
    return (ps & (ps - 1)) == 0 ? "pow2" : "even";
}

static void put_head_dim(swa_decisions *d, int head_dim)
{
    char buf[16];
    snprintf(buf, sizeof buf, "%d", head_dim);
    put(d, SWA_DEC_HEAD_DIM, buf);
}

/* Shape decisions every plan has. */
static void put_shape(swa_decisions *d, swa_dtype dtype, int head_dim, int requests, int group, swa_layout layout,
                      float sm_scale, float soft_cap)
{
    put(d, SWA_DEC_DTYPE, swa_dtype_name(dtype));
    put_head_dim(d, head_dim);
    put_if(d, SWA_DEC_BATCH, requests > 1, "several", "single");
    put(d, SWA_DEC_GQA_GROUP, gqa_class(group));
    put(d, SWA_DEC_LAYOUT, swa_layout_name(layout));
    /* the planners resolve "no scale given" to exactly this float */
    put_if(d, SWA_DEC_SM_SCALE, sm_scale != (float)(1.0 / sqrt((double)head_dim)), "custom", "default");
    put_if(d, SWA_DEC_SOFT_CAP, soft_cap > 0, "on", "off");
}

/* The window of the newest row of one request: keys [ws, kv_len) with
 * ws > 0 when the window binds.  Records window_start / window_pages for a
 * paged plan.  Returns whether it binds. */
static bool put_request_window(swa_decisions *d, int ws, int kv_len, int page_size, bool paged)
{
    if (ws <= 0 || kv_len <= 0)
        return false;
    if (paged && page_size > 0) {
        put_if(d, SWA_DEC_WINDOW_START, ws % page_size != 0, "mid_page", "on_page");
        put_if(d, SWA_DEC_WINDOW_PAGES, (kv_len - 1) / page_size > ws / page_size, "several_pages", "one_page");
    }
    return true;
}

/* The window kind: chunks and right bounds first (a band may also have a
 * left bound; the loader refuses a left window with chunks), then the left
 * window, binding or saturated. */
static void put_window_kind(swa_decisions *d, int chunk_size, bool band, bool has_window, bool binds)
{
    put(d, SWA_DEC_WINDOW, chunk_size > 0 ? "chunked" : band ? "window_right" : !has_window ? "none"
                           : binds ? "window_left" : "saturated");
}

static void put_chunks(swa_decisions *d, const int *req_num_chunks, int n)
{
    for (int r = 0; r < n; r++)
        put(d, SWA_DEC_REQ_CHUNKS, req_num_chunks[r] == 0 ? "zero" : req_num_chunks[r] == 1 ? "single" : "several");
}

static void prefill_decisions(const swa_prefill_plan *p, swa_decisions *d)
{
    bool paged = p->kv_mode == SWA_KV_PAGED;
    put_shape(d, p->dtype, p->head_dim, p->num_requests, p->group_size, p->layout, p->sm_scale, p->soft_cap);
    put(d, SWA_DEC_KV_MODE, paged ? "paged" : "ragged");
    if (paged)
        put(d, SWA_DEC_PAGE_SIZE, page_class(p->page_size));
    put_if(d, SWA_DEC_CAUSAL, p->causal, "causal", "non_causal");

    /* the window the plan compiled; it binds when some request has a row
     * (the newest, p = kv_len - 1) that loses keys */
    int L = p->window_left;
    bool binds = false;
    for (int r = 0; L >= 0 && r < p->num_requests; r++)
        if (p->qo_len[r] > 0)
            binds |= put_request_window(d, p->kv_len[r] - 1 - L, p->kv_len[r], p->page_size, paged);
    put_window_kind(d, p->chunk_size, !p->causal && p->window_right >= 0, L >= 0, binds);
    bool empty = false;
    for (int r = 0; r < p->num_requests; r++)
        empty |= p->qo_len[r] > p->kv_len[r];
    put_if(d, SWA_DEC_EMPTY_ROWS, empty, "yes", "no");
    if (binds) {
        /* the KV-start skip of plan.h: the item starts past its chunk's
         * first key because its first row's window starts a tile later */
        bool skip = false;
        int Lr = p->run_window_left;
        for (int w = 0; Lr >= 0 && w < p->num_work && !skip; w++) {
            int r = p->work_request[w];
            int i_first = p->work_qo_tile[w] * p->cta_tile_q / p->group_size;
            int p_first = p->kv_len[r] - p->qo_len[r] + i_first;
            int ws = p_first - Lr;
            int chunk_begin = p->split_kv ? p->work_kv_chunk[w] * p->kv_chunk_size : 0;
            skip = ws > 0 && ws - ws % p->cta_tile_kv > chunk_begin;
        }
        put_if(d, SWA_DEC_WINDOW_SKIP, skip, "some", "none");
    }

    char buf[16];
    snprintf(buf, sizeof buf, "%d", p->cta_tile_q);
    put(d, SWA_DEC_CTA_TILE_Q, buf);
    snprintf(buf, sizeof buf, "%d", p->cta_tile_kv);
    put(d, SWA_DEC_CTA_TILE_KV, buf);
    put_if(d, SWA_DEC_SPLIT_KV, p->split_kv, "on", "off");
    if (p->split_kv)
        put_chunks(d, p->req_num_chunks, p->num_requests);
    put_if(d, SWA_DEC_MERGE, p->split_kv, "merge", "direct");
}

static int fa2_kv_len(const swa_decode_fa2_plan *p, int r)
{
    int pages = p->kv_indptr[r + 1] - p->kv_indptr[r];
    return pages > 0 ? (pages - 1) * p->page_size + p->kv_last_page_len[r] : 0;
}

/* p: the plan run() executes (graph mode: updated to the live batch);
 * captured: the captured plan (NULL outside graph mode). */
static void fa2_decisions(const swa_decode_fa2_plan *p, const swa_decode_fa2_plan *captured, swa_decisions *d)
{
    put_shape(d, p->dtype, p->head_dim, p->num_requests, p->group_size, p->layout, p->sm_scale, p->soft_cap);
    put(d, SWA_DEC_PAGE_SIZE, page_class(p->page_size));
    int L = p->window_left;
    bool binds = false, skip = false;
    for (int r = 0; L >= 0 && r < p->num_requests; r++) {
        int kv_len = fa2_kv_len(p, r), ws = kv_len - 1 - L;
        if (put_request_window(d, ws, kv_len, p->page_size, true)) {
            binds = true;
            skip |= ws - ws % p->page_size > 0; /* chunk 0 starts at the window's page */
        }
    }
    put_window_kind(d, p->chunk_size, false, L >= 0, binds);
    if (binds)
        put_if(d, SWA_DEC_WINDOW_SKIP, skip, "some", "none");
    put_if(d, SWA_DEC_SPLIT_KV, p->split_kv, "on", "off");
    if (p->split_kv)
        put_chunks(d, p->req_num_chunks, p->num_requests);
    put_if(d, SWA_DEC_MERGE, p->split_kv, "merge", "direct");
    put_if(d, SWA_DEC_GRAPH, p->graph, "on", "off");
    if (p->graph && captured)
        put(d, SWA_DEC_GRAPH_BATCH, p->num_requests > captured->num_requests    ? "more_live"
                                    : p->num_requests == captured->num_requests ? "same"
                                                                                 : "fewer_live");
}

static void aiter_decisions(const swa_decode_aiter_plan *p, swa_decisions *d)
{
    put_shape(d, p->dtype, p->head_dim, p->num_seqs, p->group_size, p->layout, p->scale, p->soft_cap);
    put(d, SWA_DEC_PAGE_SIZE, page_class(p->block_size));
    /* AITER's own semantics: S > 0 keys visible, t < ctx - S masked */
    int S = p->sliding_window;
    bool binds = false, skip = false;
    for (int r = 0; S > 0 && r < p->num_seqs; r++) {
        int ctx = p->context_lens[r], ws = ctx - S;
        if (put_request_window(d, ws, ctx, p->block_size, true)) {
            binds = true;
            skip |= ws >= p->partition_size; /* partition 0 lies wholly before the window */
        }
    }
    put_window_kind(d, 0, false, S > 0, binds);
    if (binds)
        put_if(d, SWA_DEC_WINDOW_SKIP, skip, "some", "none");
    put_if(d, SWA_DEC_MERGE, p->max_num_partitions > 1, "merge", "direct");
    put(d, SWA_DEC_LSE_PATH, p->shadow ? "shadow_fa2" : "none");
    put(d, SWA_DEC_SLIDING_WINDOW, S == 0 ? "off" : S == 1 ? "one" : "wide");
}

swa_status swa_plan_decisions(const swa_backend *b, const swa_case *c, const void *plan, swa_decisions *d,
                              swa_error *err)
{
    memset(d, 0, sizeof *d);
    if (!b || !plan)
        return swa_error_set(err, SWA_ERR_INVALID, "plan decisions: no backend or no plan");
    const swa_backend *inner = b;
    const void *inner_plan = plan;
    if (b == &swa_backend_decode_auto) {
        inner_plan = swa_decode_auto_plan_of(plan);
        inner = swa_decode_auto_chosen(plan);
        put(d, SWA_DEC_ROUTE, inner->name);
    }
    if (inner == &swa_backend_prefill) {
        prefill_decisions(swa_prefill_plan_of(inner_plan), d);
    } else if (inner == &swa_backend_decode_fa2) {
        fa2_decisions(swa_decode_fa2_plan_of(inner_plan), swa_decode_fa2_captured_of(inner_plan), d);
        if (b == &swa_backend_decode_auto)
            put(d, SWA_DEC_LSE_PATH, "native");
    } else if (inner == &swa_backend_decode_aiter) {
        aiter_decisions(swa_decode_aiter_plan_of(inner_plan), d);
        if (b == &swa_backend_decode_auto)
            put(d, SWA_DEC_GRAPH, "off");
    } else {
        return swa_error_set(err, SWA_ERR_UNSUPPORTED, "plan decisions: %s is not a built-in backend", b->name);
    }
    /* everything above comes from the plan itself (what was decided, not
     * what was asked); the layer count is the case's: no plan knows it */
    if (c)
        put_if(d, SWA_DEC_LAYERS, c->num_layers > 1, "several", "one");
    return SWA_OK;
}

size_t swa_decisions_format(const swa_decisions *d, char *buf, size_t n)
{
    size_t used = 0;
    if (n)
        buf[0] = '\0';
    for (int k = 0; k < SWA_DEC_COUNT; k++) {
        if (!d->set[k])
            continue;
        int w = snprintf(buf + used, used < n ? n - used : 0, "%s%s=", used ? ";" : "", decision_table[k].key);
        used += w > 0 ? (size_t)w : 0;
        bool first = true;
        for (int v = 0; v < swa_decision_value_count(k); v++)
            if (d->set[k] & (1u << v)) {
                w = snprintf(buf + used, used < n ? n - used : 0, "%s%s", first ? "" : "+", decision_table[k].values[v]);
                used += w > 0 ? (size_t)w : 0;
                first = false;
            }
    }
    if (n && used >= n)
        buf[n - 1] = '\0';
    return used < n ? used : (n ? n - 1 : 0);
}

/* GCOVR_EXCL_START: the reachability rules below serve `swadiff coverage`
 * (ci/run-tests.sh runs it as its own gate, and tests/test_plan_decisions.c
 * checks them); they are no backend behaviour, so ci/coverage.sh, which
 * measures what `swadiff run cases` exercises, leaves them out. */
/* ---- reachability --------------------------------------------------------------- *
 * Per backend; each rule is what the planner (or the case format) makes
 * impossible, never what the library happens not to contain.  decode_auto
 * is the union of its two routes: CUDA-graph cases go to decode_fa2 (always
 * in graph mode), all others to decode_aiter (decode_auto.c). */

enum { B_PREFILL, B_FA2, B_AITER, B_AUTO, B_OTHER };

static int backend_kind(const swa_backend *b)
{
    return b == &swa_backend_prefill ? B_PREFILL : b == &swa_backend_decode_fa2 ? B_FA2
         : b == &swa_backend_decode_aiter ? B_AITER : b == &swa_backend_decode_auto ? B_AUTO : B_OTHER;
}

const char *swa_decision_inapplicable(const swa_backend *b, int key)
{
    int kind = backend_kind(b);
    bool decode = kind == B_FA2 || kind == B_AITER || kind == B_AUTO;
    if (kind == B_OTHER)
        return "an external backend: swadiff does not see its plan";
    switch (key) {
    case SWA_DEC_KV_MODE:
        return decode ? "decode kernels read the paged cache only (ragged K/V is refused by supports())" : NULL;
    case SWA_DEC_CAUSAL:
        return decode ? "a decode row is the newest key: nothing after it to mask; decode plans have no causal flag"
                      : NULL;
    case SWA_DEC_CTA_TILE_Q:
    case SWA_DEC_CTA_TILE_KV:
        return decode ? "one query row per request: decode plans have no query tile, and no KV tile choice (fa2: "
                        "fixed 32-key tiles inside page-aligned chunks; aiter: 256-token partitions)"
                      : NULL;
    case SWA_DEC_SPLIT_KV:
    case SWA_DEC_REQ_CHUNKS:
        return kind == B_AITER ? "AITER PA v1 has no split-KV toggle: it always cuts the context into 256-token "
                                 "partitions (recorded as merge)"
                               : NULL;
    case SWA_DEC_GRAPH:
    case SWA_DEC_GRAPH_BATCH:
        if (kind == B_PREFILL)
            return "prefill has no CUDA-graph mode (supports() skips such cases)";
        if (kind == B_AITER)
            return "a CUDA-graph decode_aiter case is refused at plan time: no plan exists";
        return NULL;
    case SWA_DEC_ROUTE:
        return kind == B_AUTO ? NULL : "only decode_auto routes";
    case SWA_DEC_LSE_PATH:
        return kind == B_AITER || kind == B_AUTO ? NULL : "prefill and decode_fa2 always write their own base-2 LSE";
    case SWA_DEC_SLIDING_WINDOW:
        return kind == B_AITER || kind == B_AUTO ? NULL : "the AITER S = L + 1 mapping exists only in decode_aiter";
    case SWA_DEC_EMPTY_ROWS:
        return decode ? "a decode row is the newest key of its request (qo_len 1, and the case format requires "
                        "kv_len >= 1): it always sees that key"
                      : NULL;
    default:
        return NULL;
    }
}

const char *swa_decision_unreachable(const swa_backend *b, int key, int v)
{
    const char *why = swa_decision_inapplicable(b, key);
    if (why)
        return why;
    const char *value = v >= 0 && v < swa_decision_value_count(key) ? decision_table[key].values[v] : "";
    int kind = backend_kind(b);
    if (key == SWA_DEC_GRAPH_BATCH && !strcmp(value, "same"))
        return "the case format refuses graph_capture_requests equal to the number of requests "
               "(harness/case_expand.c): capture fewer (replay the larger batch) or more (placeholder requests, "
               "replay fewer live ones)";
    if (key == SWA_DEC_WINDOW && !strcmp(value, "window_right") && kind != B_PREFILL)
        return "a decode row is the newest key: a right bound removes nothing, and the decode plans carry none "
               "(backends/plan.h)";
    if (key == SWA_DEC_WINDOW && !strcmp(value, "chunked") && kind == B_AITER)
        return "decode_aiter refuses attention_chunk_size (supports(): AITER PA v1 has one sliding_window per "
               "launch, counted back from the context end)";
    if (key == SWA_DEC_LSE_PATH && !strcmp(value, "native") && backend_kind(b) == B_AITER)
        return "decode_aiter has no LSE output of its own (only none or the shadow decode_fa2 plan)";
    if (key == SWA_DEC_REQ_CHUNKS && !strcmp(value, "zero"))
        return "every request gets at least one chunk; zero chunks happen only under the "
               "SPLIT_LAST_CHUNK_DROPPED mutant";
    return NULL;
}

const char *swa_decision_pair_unreachable(const swa_backend *b, int ka, int va, int kb, int vb)
{
    const char *why;
    if ((why = swa_decision_unreachable(b, ka, va)) || (why = swa_decision_unreachable(b, kb, vb)))
        return why;
    /* order the pair as the table does not matter: test both ways */
    int kind = backend_kind(b);
    const char *a = decision_table[ka].values[va], *c = decision_table[kb].values[vb];
#define PAIR(K1, V1, K2, V2)                                                                      \
    ((ka == (K1) && !strcmp(a, V1) && kb == (K2) && (!(V2)[0] || !strcmp(c, V2))) ||               \
     (kb == (K1) && !strcmp(c, V1) && ka == (K2) && (!(V2)[0] || !strcmp(a, V2))))
    if (PAIR(SWA_DEC_PAGE_SIZE, "1", SWA_DEC_WINDOW_START, "mid_page"))
        return "with one token per page every window start is a page boundary";
    if (PAIR(SWA_DEC_REQ_CHUNKS, "single", SWA_DEC_BATCH, "single"))
        return "a split is taken only when the chunk is shorter than the longest request, so the only request "
               "of a one-request batch always has several chunks";
    if (PAIR(SWA_DEC_MERGE, "direct", SWA_DEC_WINDOW_SKIP, "some") && kind == B_AITER)
        return "with one partition that partition holds the newest key, so it is never wholly before the window";
    /* decode_auto: no rule ties split-KV to CUDA-graph mode or to the batch
     * size: its decode_fa2 route (split-KV) also serves chunked cases without
     * a graph, one request or several (decode_auto.c) */
#undef PAIR
    return NULL;
}
/* GCOVR_EXCL_STOP */
