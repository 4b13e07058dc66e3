/* test_plan_decisions.c — backends/plan_decisions.c: the decisions read back
 * from real plans (prefill split, decode_fa2 graph, decode_aiter's S, the
 * decode_auto route, the window kinds, empty rows, layers and a graph
 * replayed with fewer live requests), the text they are stored as, and the reachability
 * rules the coverage command trusts.
 *
 *   ctest --test-dir build -R test_plan_decisions --output-on-failure */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "backends/decode_aiter.h"
#include "backends/decode_fa2.h"
#include "backends/plan_decisions.h"
#include "backends/prefill.h"
#include "core/data.h"

typedef struct planned {
    swa_case c;
    swa_inputs in;
    const swa_backend *b;
    void *plan;
    swa_decisions d;
    char text[1024];
} planned;

/* A case of B requests (qo_len, kv_len), planned by b for 132 SMs under
 * mutant m; its decisions read back. */
static void plan_case(planned *p, const swa_backend *b, int B, const int *qo, const int *kv, int hq, int hk,
                      int page_size, int window_left, swa_mutant m, void (*tweak)(swa_case *))
{
    memset(p, 0, sizeof *p);
    swa_case *c = &p->c;
    snprintf(c->id, sizeof c->id, "decisions/%s", b->name);
    c->num_requests = B;
    c->qo_len = calloc((size_t)B, sizeof(int));
    c->kv_len = calloc((size_t)B, sizeof(int));
    for (int r = 0; r < B; r++) {
        c->qo_len[r] = qo[r];
        c->kv_len[r] = kv[r];
    }
    c->num_qo_heads = hq;
    c->num_kv_heads = hk;
    c->head_dim = 64;
    c->dtype = SWA_DTYPE_FP16;
    c->page_size = page_size;
    c->window_left = window_left;
    c->causal = true;
    c->sm_scale = 0.125; /* 1/sqrt(64): the loader's default */
    c->backends = b->flag;
    c->seed = 7;
    c->tol.lse_atol = -1;
    if (tweak)
        tweak(c);
    swa_error err = {0};
    cr_assert_eq(swa_inputs_create(c, &p->in, &err), SWA_OK, "%s", err.message);
    swa_plan_opts o = {.device = swa_device_get(SWA_DEVICE_HOST), .mutant = m, .num_sms = 132, .backend = b};
    cr_assert_eq(b->plan(c, &p->in, &o, &p->plan, &err), SWA_OK, "%s", err.message);
    p->b = b;
    cr_assert_eq(swa_plan_decisions(b, c, p->plan, &p->d, &err), SWA_OK, "%s", err.message);
    swa_decisions_format(&p->d, p->text, sizeof p->text);
}

static void planned_free(planned *p)
{
    p->b->free(p->plan);
    swa_inputs_free(&p->in);
    swa_case_free(&p->c);
}

static void expect_has(const planned *p, const char *kv)
{
    char padded[1100], needle[128];
    snprintf(padded, sizeof padded, ";%s;", p->text);
    snprintf(needle, sizeof needle, ";%s;", kv);
    cr_expect(strstr(padded, needle), "%s: expected %s in\n  %s", p->b->name, kv, p->text);
}

static void expect_lacks_key(const planned *p, const char *key)
{
    char padded[1100], needle[128];
    snprintf(padded, sizeof padded, ";%s", p->text);
    snprintf(needle, sizeof needle, ";%s=", key);
    cr_expect(!strstr(padded, needle), "%s: unexpected %s in\n  %s", p->b->name, key, p->text);
}

Test(plan_decisions, prefill_split_with_a_single_chunk_request)
{
    planned p;
    int qo[] = {16, 4}, kv[] = {600, 100};
    plan_case(&p, &swa_backend_prefill, 2, qo, kv, 1, 1, 16, 40, SWA_MUTANT_NONE, NULL);
    const swa_prefill_plan *pp = swa_prefill_plan_of(p.plan);
    cr_assert(pp->split_kv && pp->req_num_chunks[0] > 1 && pp->req_num_chunks[1] == 1);
    expect_has(&p, "split_kv=on");
    expect_has(&p, "req_chunks=single+several");
    expect_has(&p, "merge=merge");
    expect_has(&p, "cta_tile_q=16");
    expect_has(&p, "cta_tile_kv=64");
    expect_has(&p, "window=window_left");
    /* request 0: ws 559 = 34 * 16 + 15 (inside a page), keys 559..599 over pages 34..37 */
    expect_has(&p, "window_start=mid_page");
    expect_has(&p, "window_pages=several_pages");
    expect_has(&p, "window_skip=some");
    expect_has(&p, "kv_mode=paged");
    expect_has(&p, "batch=several");
    expect_has(&p, "gqa_group=1");
    expect_has(&p, "sm_scale=default");
    expect_lacks_key(&p, "graph");
    expect_lacks_key(&p, "route");
    planned_free(&p);
}

Test(plan_decisions, prefill_saturated_window_has_no_window_start)
{
    planned p;
    int qo[] = {8}, kv[] = {20};
    plan_case(&p, &swa_backend_prefill, 1, qo, kv, 1, 1, 7, 19, SWA_MUTANT_NONE, NULL);
    expect_has(&p, "window=saturated");
    expect_has(&p, "page_size=odd");
    expect_has(&p, "split_kv=off");
    expect_has(&p, "merge=direct");
    expect_lacks_key(&p, "window_start");
    expect_lacks_key(&p, "window_skip");
    expect_lacks_key(&p, "req_chunks");
    planned_free(&p);
}

/* The plan as built, mutant included: seed 000 compiles the window out. */
Test(plan_decisions, mutant_plan_is_what_is_recorded)
{
    planned p;
    int qo[] = {8}, kv[] = {40};
    plan_case(&p, &swa_backend_prefill, 1, qo, kv, 1, 1, 16, 4, SWA_MUTANT_MASK_COMPILED_OUT, NULL);
    expect_has(&p, "window=none");
    planned_free(&p);
}

static void graph_tweak(swa_case *c)
{
    c->cuda_graph = true;
    c->graph_capture_requests = 1;
}

Test(plan_decisions, fa2_graph_replays_a_larger_batch)
{
    planned p;
    int qo[] = {1, 1, 1}, kv[] = {30, 600, 45};
    plan_case(&p, &swa_backend_decode_fa2, 3, qo, kv, 8, 1, 6, -1, SWA_MUTANT_NONE, graph_tweak);
    expect_has(&p, "graph=on");
    expect_has(&p, "graph_batch=more_live");
    expect_has(&p, "split_kv=on");
    expect_has(&p, "page_size=even");
    expect_has(&p, "gqa_group=8+");
    expect_has(&p, "window=none");
    expect_lacks_key(&p, "cta_tile_q");
    expect_lacks_key(&p, "causal");
    planned_free(&p);
}

Test(plan_decisions, aiter_window_mapping_and_partitions)
{
    planned p;
    int qo[] = {1, 1}, kv[] = {300, 20};
    plan_case(&p, &swa_backend_decode_aiter, 2, qo, kv, 4, 1, 1, 0, SWA_MUTANT_NONE, NULL);
    expect_has(&p, "sliding_window=one");
    expect_has(&p, "merge=merge");
    expect_has(&p, "window_skip=some"); /* partition 0 of the 300-key request is wholly before key 299 */
    expect_has(&p, "window_start=on_page");
    expect_has(&p, "window_pages=one_page");
    expect_has(&p, "page_size=1");
    expect_has(&p, "lse_path=none");
    expect_lacks_key(&p, "split_kv");
    planned_free(&p);
    /* the L = 0 sentinel mutant plans S = 0: the decisions say so */
    plan_case(&p, &swa_backend_decode_aiter, 2, qo, kv, 4, 1, 1, 0, SWA_MUTANT_AITER_L0_SENTINEL, NULL);
    expect_has(&p, "sliding_window=off");
    expect_has(&p, "window=none");
    planned_free(&p);
}

Test(plan_decisions, auto_records_its_route)
{
    planned p;
    int qo[] = {1, 1}, kv[] = {30, 45};
    plan_case(&p, &swa_backend_decode_auto, 2, qo, kv, 4, 2, 16, 3, SWA_MUTANT_NONE, NULL);
    expect_has(&p, "route=decode_aiter");
    expect_has(&p, "graph=off");
    expect_has(&p, "sliding_window=wide");
    planned_free(&p);
    plan_case(&p, &swa_backend_decode_auto, 2, qo, kv, 4, 2, 16, 3, SWA_MUTANT_NONE, graph_tweak);
    expect_has(&p, "route=decode_fa2");
    expect_has(&p, "graph=on");
    expect_has(&p, "lse_path=native");
    expect_lacks_key(&p, "sliding_window");
    planned_free(&p);
}

static void band_tweak(swa_case *c)
{
    c->causal = false;
    c->window_right = 2;
}

static void chunk_tweak(swa_case *c) { c->chunk_size = 8; }

static void layers_tweak(swa_case *c)
{
    c->num_layers = 2;
    c->layer_window_left[0] = c->window_left;
    c->layer_window_left[1] = -1;
}

static void graph_fewer_live_tweak(swa_case *c)
{
    c->cuda_graph = true;
    c->graph_capture_requests = 6; /* placeholder bucket larger than the 3 live requests */
}

/* The window kinds of 7a51b88: a non-causal band, chunks, empty rows. */
Test(plan_decisions, prefill_window_kinds_and_empty_rows)
{
    planned p;
    int qo[] = {20, 4}, kv[] = {7, 40};
    plan_case(&p, &swa_backend_prefill, 2, qo, kv, 2, 1, 16, 3, SWA_MUTANT_NONE, band_tweak);
    expect_has(&p, "window=window_right");
    expect_has(&p, "causal=non_causal");
    expect_has(&p, "empty_rows=yes"); /* request 0: 20 rows over 7 keys */
    expect_has(&p, "layers=one");
    planned_free(&p);
    plan_case(&p, &swa_backend_prefill, 2, qo, kv, 2, 1, 16, -1, SWA_MUTANT_NONE, chunk_tweak);
    expect_has(&p, "window=chunked");
    expect_lacks_key(&p, "window_start"); /* a chunk start is no left window */
    planned_free(&p);
    int qo2[] = {4}, kv2[] = {40};
    plan_case(&p, &swa_backend_prefill, 1, qo2, kv2, 2, 1, 16, 3, SWA_MUTANT_NONE, layers_tweak);
    expect_has(&p, "empty_rows=no");
    expect_has(&p, "window=window_left");
    expect_has(&p, "layers=several");
    planned_free(&p);
}

Test(plan_decisions, fa2_chunks_and_a_graph_replayed_with_fewer_live_requests)
{
    planned p;
    int qo[] = {1, 1, 1}, kv[] = {30, 600, 45};
    plan_case(&p, &swa_backend_decode_fa2, 3, qo, kv, 8, 1, 16, -1, SWA_MUTANT_NONE, chunk_tweak);
    expect_has(&p, "window=chunked");
    expect_lacks_key(&p, "empty_rows"); /* decode rows always see their newest key */
    planned_free(&p);
    plan_case(&p, &swa_backend_decode_fa2, 3, qo, kv, 8, 1, 16, 31, SWA_MUTANT_NONE, graph_fewer_live_tweak);
    expect_has(&p, "graph=on");
    expect_has(&p, "graph_batch=fewer_live");
    expect_has(&p, "window=window_left");
    planned_free(&p);
    /* decode_auto sends chunked cases to decode_fa2 without a CUDA graph */
    int qo1[] = {1}, kv1[] = {1000};
    plan_case(&p, &swa_backend_decode_auto, 1, qo1, kv1, 8, 1, 16, -1, SWA_MUTANT_NONE, chunk_tweak);
    expect_has(&p, "route=decode_fa2");
    expect_has(&p, "graph=off");
    expect_has(&p, "batch=single");
    expect_has(&p, "window=chunked");
    planned_free(&p);
}

Test(plan_decisions, format_is_cut_safely)
{
    swa_decisions d = {0};
    d.set[SWA_DEC_DTYPE] = 1;     /* fp16 */
    d.set[SWA_DEC_REQ_CHUNKS] = 3; /* single+several */
    char buf[64];
    swa_decisions_format(&d, buf, sizeof buf);
    cr_expect_str_eq(buf, "dtype=fp16;req_chunks=single+several");
    char tiny[8];
    size_t n = swa_decisions_format(&d, tiny, sizeof tiny);
    cr_expect_eq(n, 7);
    cr_expect_str_eq(tiny, "dtype=f");
    swa_decisions_format(&(swa_decisions){0}, buf, sizeof buf);
    cr_expect_str_eq(buf, "");
}

Test(plan_decisions, reachability_rules)
{
    int ps = SWA_DEC_PAGE_SIZE, ws = SWA_DEC_WINDOW_START;
    int one = swa_decision_value_index(ps, "1"), odd = swa_decision_value_index(ps, "odd");
    int mid = swa_decision_value_index(ws, "mid_page");
    cr_assert(one >= 0 && odd >= 0 && mid >= 0);
    const swa_backend *all[] = {&swa_backend_prefill, &swa_backend_decode_fa2, &swa_backend_decode_aiter,
                                &swa_backend_decode_auto};
    for (int i = 0; i < 4; i++) {
        cr_expect_not_null(swa_decision_pair_unreachable(all[i], ps, one, ws, mid), "%s", all[i]->name);
        cr_expect_not_null(swa_decision_pair_unreachable(all[i], ws, mid, ps, one), "either order");
        cr_expect_null(swa_decision_pair_unreachable(all[i], ps, odd, ws, mid), "%s", all[i]->name);
        cr_expect_null(swa_decision_inapplicable(all[i], SWA_DEC_WINDOW));
    }
    cr_expect_not_null(swa_decision_inapplicable(&swa_backend_decode_aiter, SWA_DEC_SPLIT_KV));
    cr_expect_not_null(swa_decision_inapplicable(&swa_backend_decode_fa2, SWA_DEC_CTA_TILE_Q));
    cr_expect_not_null(swa_decision_inapplicable(&swa_backend_prefill, SWA_DEC_GRAPH));
    cr_expect_null(swa_decision_inapplicable(&swa_backend_prefill, SWA_DEC_CAUSAL));
    cr_expect_not_null(swa_decision_unreachable(&swa_backend_decode_fa2, SWA_DEC_REQ_CHUNKS,
                                                swa_decision_value_index(SWA_DEC_REQ_CHUNKS, "zero")));
    cr_expect_not_null(swa_decision_unreachable(&swa_backend_decode_aiter, SWA_DEC_LSE_PATH,
                                                swa_decision_value_index(SWA_DEC_LSE_PATH, "native")));
    cr_expect_null(swa_decision_unreachable(&swa_backend_decode_auto, SWA_DEC_LSE_PATH,
                                            swa_decision_value_index(SWA_DEC_LSE_PATH, "native")));
    /* the window kinds, empty rows and graph batches of the new features */
    int w = SWA_DEC_WINDOW, band = swa_decision_value_index(w, "window_right"),
        chunked = swa_decision_value_index(w, "chunked");
    int gb = SWA_DEC_GRAPH_BATCH, same = swa_decision_value_index(gb, "same"),
        fewer = swa_decision_value_index(gb, "fewer_live");
    cr_assert(band >= 0 && chunked >= 0 && same >= 0 && fewer >= 0);
    cr_expect_null(swa_decision_unreachable(&swa_backend_prefill, w, band));
    cr_expect_null(swa_decision_unreachable(&swa_backend_prefill, w, chunked));
    for (int i = 1; i < 4; i++)
        cr_expect_not_null(swa_decision_unreachable(all[i], w, band), "%s: decode rows have no right bound",
                           all[i]->name);
    cr_expect_null(swa_decision_unreachable(&swa_backend_decode_fa2, w, chunked));
    cr_expect_null(swa_decision_unreachable(&swa_backend_decode_auto, w, chunked));
    cr_expect_not_null(swa_decision_unreachable(&swa_backend_decode_aiter, w, chunked));
    cr_expect_not_null(swa_decision_unreachable(&swa_backend_decode_fa2, gb, same));
    cr_expect_null(swa_decision_unreachable(&swa_backend_decode_fa2, gb, fewer));
    cr_expect_null(swa_decision_inapplicable(&swa_backend_prefill, SWA_DEC_EMPTY_ROWS));
    cr_expect_not_null(swa_decision_inapplicable(&swa_backend_decode_fa2, SWA_DEC_EMPTY_ROWS));
    for (int i = 0; i < 4; i++)
        cr_expect_null(swa_decision_inapplicable(all[i], SWA_DEC_LAYERS), "%s", all[i]->name);
    /* decode_auto's decode_fa2 route also serves chunked cases without a graph:
     * split-KV with graph off and with one request is reachable */
    int sk = SWA_DEC_SPLIT_KV, on = swa_decision_value_index(sk, "on");
    cr_expect_null(swa_decision_pair_unreachable(&swa_backend_decode_auto, SWA_DEC_GRAPH,
                                                 swa_decision_value_index(SWA_DEC_GRAPH, "off"), sk, on));
    cr_expect_null(swa_decision_pair_unreachable(&swa_backend_decode_auto, sk, on, SWA_DEC_BATCH,
                                                 swa_decision_value_index(SWA_DEC_BATCH, "single")));

    /* every pair names two decisions, and every decision has 2..MAX values */
    int np;
    const swa_decision_pair *pairs = swa_decision_pairs(&np);
    cr_expect_geq(np, 8);
    for (int i = 0; i < np; i++)
        cr_expect(pairs[i].a != pairs[i].b && swa_decision_def_at(pairs[i].a) && swa_decision_def_at(pairs[i].b));
    /* the interactions of issue 14's new features are checked */
    const swa_decision_key wanted[][2] = {{SWA_DEC_WINDOW, SWA_DEC_SPLIT_KV}, {SWA_DEC_WINDOW, SWA_DEC_CTA_TILE_Q},
                             {SWA_DEC_WINDOW, SWA_DEC_PAGE_SIZE}, {SWA_DEC_GRAPH_BATCH, SWA_DEC_SPLIT_KV},
                             {SWA_DEC_EMPTY_ROWS, SWA_DEC_SPLIT_KV}, {SWA_DEC_LAYERS, SWA_DEC_WINDOW}};
    for (size_t k = 0; k < sizeof wanted / sizeof wanted[0]; k++) {
        bool found = false;
        for (int i = 0; i < np; i++)
            found |= (pairs[i].a == wanted[k][0] && pairs[i].b == wanted[k][1]) ||
                     (pairs[i].b == wanted[k][0] && pairs[i].a == wanted[k][1]);
        cr_expect(found, "pair %s x %s missing", swa_decision_def_at(wanted[k][0])->key,
                  swa_decision_def_at(wanted[k][1])->key);
    }
    for (int k = 0; k < SWA_DEC_COUNT; k++) {
        cr_expect_not_null(swa_decision_def_at(k)->key, "decision %d has no row in the table", k);
        cr_expect_geq(swa_decision_value_count(k), 1, "%s", swa_decision_def_at(k)->key);
    }
    cr_expect_null(swa_decision_def_at(SWA_DEC_COUNT));
    cr_expect_eq(swa_decision_value_index(SWA_DEC_DTYPE, "fp32"), -1);
}

Test(plan_decisions, external_backend_has_none)
{
    swa_backend ext = swa_backend_prefill;
    ext.name = "ns:other";
    swa_decisions d = {0};
    swa_error err = {0};
    cr_expect_eq(swa_plan_decisions(&ext, NULL, &d, &d, &err), SWA_ERR_UNSUPPORTED);
    cr_expect_eq(d.set[SWA_DEC_DTYPE], 0u);
    cr_expect_not_null(swa_decision_inapplicable(&ext, SWA_DEC_DTYPE));
    cr_expect_eq(swa_plan_decisions(&swa_backend_prefill, NULL, NULL, &d, &err), SWA_ERR_INVALID);
}
