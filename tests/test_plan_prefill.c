/* test_plan_prefill.c — the prefill planner: tile choices, work lists, the
 * first key each tile loads for a window (KV-start skip), split-KV
 * decisions, the seed-000 mutant's plan, and the plan/run consistency
 * check.
 *
 *   ctest --test-dir build -R test_plan_prefill --output-on-failure */
#include <criterion/criterion.h>

#include "backends/attn_primitives.h"
#include "backends/prefill.h"
#include "tests/test_backend_fixture.h"

/* A case with only the fields the planner reads. */
static swa_case plan_case(int B, const int *qo, const int *kv, int hq, int hk, int head_dim, int window_left)
{
    fx_spec s = {.num_requests = B, .qo_len = qo, .kv_len = kv, .num_qo_heads = hq, .num_kv_heads = hk,
                 .head_dim = head_dim, .window_left = window_left};
    swa_case c;
    fx_case_init(&c, &s);
    return c;
}

static swa_prefill_plan *plan_or_die(const swa_case *c, swa_mutant m, int num_sms)
{
    swa_plan_opts o = {.mutant = m, .num_sms = num_sms};
    swa_prefill_plan *p = NULL;
    swa_error err = {0};
    cr_assert_eq(swa_prefill_plan_build(c, &o, &p, &err), SWA_OK, "plan failed: %s", err.message);
    return p;
}

Test(plan_prefill, cta_tile_q_follows_packed_length)
{
    struct { double packed; int head_dim, tile; } t[] = {
        {6, 128, 16}, {16, 128, 16}, {17, 128, 64}, {48, 64, 64}, {64, 128, 64},
        {65, 128, 128}, {6000, 128, 128}, {6000, 256, 64}, {12, 256, 16},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        cr_expect_eq(swa_prefill_cta_tile_q(t[i].packed, t[i].head_dim), t[i].tile,
                     "avg packed %g, head_dim %d: tile %d, expected %d", t[i].packed, t[i].head_dim,
                     swa_prefill_cta_tile_q(t[i].packed, t[i].head_dim), t[i].tile);
    cr_expect_eq(swa_prefill_cta_tile_kv(64), 64);
    cr_expect_eq(swa_prefill_cta_tile_kv(128), 64);
    cr_expect_eq(swa_prefill_cta_tile_kv(256), 32);
}

Test(plan_prefill, tile_and_work_counts)
{
    struct {
        int B, qo[3], kv[3], hq, hk, head_dim;
        int tile_q, work;
    } t[] = {
        /* seed 000: extends 6/8/12, group 1: avg packed 8.7 -> tiles of 16, one per request */
        {3, {6, 8, 12}, {20, 37, 12}, 4, 4, 64, 16, 3},
        /* group 4: packed 24/32/48, avg 34.7 -> tiles of 64, one per request */
        {3, {6, 8, 12}, {6, 8, 12}, 8, 2, 128, 64, 3},
        /* one request, 300 rows group 2: 600 packed rows -> 5 tiles of 128 */
        {1, {300}, {300}, 4, 2, 128, 128, 5},
        /* Gemma-3-1B prefill: 1500 rows x group 4, head_dim 256 -> tiles of 64: 94 tiles x 1 kv head */
        {1, {1500}, {1500}, 4, 1, 256, 64, 94},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        swa_case c = plan_case(t[i].B, t[i].qo, t[i].kv, t[i].hq, t[i].hk, t[i].head_dim, 4);
        swa_prefill_plan *p = plan_or_die(&c, SWA_MUTANT_NONE, 1); /* 1 SM: never split */
        cr_expect_eq(p->cta_tile_q, t[i].tile_q, "shape %zu: cta_tile_q %d, expected %d", i, p->cta_tile_q, t[i].tile_q);
        cr_expect(!p->split_kv, "shape %zu: unexpected split", i);
        cr_expect_eq(p->num_work, t[i].work, "shape %zu: %d work items, expected %d", i, p->num_work, t[i].work);
        /* every packed row of every request is covered exactly once */
        for (int r = 0; r < c.num_requests; r++) {
            int covered = 0;
            for (int w = 0; w < p->num_work; w++)
                if (p->work_request[w] == r) {
                    int pr0 = p->work_qo_tile[w] * p->cta_tile_q;
                    covered += swa_imin(p->cta_tile_q, c.qo_len[r] * p->group_size - pr0);
                }
            cr_expect_eq(covered, c.qo_len[r] * p->group_size, "shape %zu request %d: %d packed rows covered", i, r,
                         covered);
        }
        swa_prefill_plan_free(p);
        fx_case_free(&c);
    }
}

Test(plan_prefill, kv_begin_is_the_tiles_window_start_aligned_down)
{
    /* 1 request, 200 new rows after a 800-key prefix, window 100, group 1:
     * 128-row tiles; tile 1 starts at row 128 = position 928, window start
     * 828, aligned down to the 64-key tile: 768. */
    int qo[] = {200}, kv[] = {1000};
    swa_case c = plan_case(1, qo, kv, 2, 2, 128, 100);
    swa_prefill_plan *p = plan_or_die(&c, SWA_MUTANT_NONE, 4); /* 4 SMs: no split */
    cr_assert_eq(p->cta_tile_q, 128);
    cr_assert_eq(p->cta_tile_kv, 64);
    cr_assert(!p->split_kv);
    int expected[] = {640, 768}; /* tile 0: position 800 - 100 = 700 -> 640 */
    for (int tile = 0; tile < 2; tile++) {
        int i_first = tile * p->cta_tile_q / p->group_size;
        int p_first = swa_query_pos(kv[0], qo[0], i_first, p->mutant);
        int kb = swa_prefill_kv_begin(0, p_first, swa_window_anchor(p_first, kv[0], qo[0], p->mutant),
                                      p->run_window_left, 0, p->cta_tile_kv, SWA_MUTANT_NONE);
        cr_expect_eq(kb, expected[tile], "tile %d: first key %d, expected %d", tile, kb, expected[tile]);
    }
    /* no window: every tile starts at key 0 */
    cr_expect_eq(swa_prefill_kv_begin(0, 928, 928, -1, 0, 64, SWA_MUTANT_NONE), 0);
    /* a chunk that starts after the window start keeps its own begin */
    cr_expect_eq(swa_prefill_kv_begin(896, 928, 928, 100, 0, 64, SWA_MUTANT_NONE), 896);
    /* window 0 at position 70: key 70 -> tile start 64 */
    cr_expect_eq(swa_prefill_kv_begin(0, 70, 70, 0, 0, 64, SWA_MUTANT_NONE), 64);
    swa_prefill_plan_free(p);
    fx_case_free(&c);
}

Test(plan_prefill, split_only_when_the_grid_underfills_and_kv_is_long)
{
    /* short KV, small batch: nothing worth splitting */
    int qo1[] = {16}, kv1[] = {200};
    swa_case c = plan_case(1, qo1, kv1, 8, 8, 128, -1);
    swa_prefill_plan *p = plan_or_die(&c, SWA_MUTANT_NONE, 132);
    cr_expect(!p->split_kv, "200 keys should not split (min chunk 256)");
    swa_prefill_plan_free(p);
    fx_case_free(&c);

    /* long KV, small batch: 1 tile x 8 kv heads = 8 CTAs on 132 SMs -> split */
    int kv2[] = {8192};
    c = plan_case(1, qo1, kv2, 8, 8, 128, -1);
    p = plan_or_die(&c, SWA_MUTANT_NONE, 132);
    cr_expect(p->split_kv, "8192 keys on 8 CTAs should split");
    cr_expect_eq(p->kv_chunk_size % p->cta_tile_kv, 0, "chunk %d not a multiple of the KV tile", p->kv_chunk_size);
    cr_expect_leq((long)p->num_work * c.num_kv_heads, 132, "%d work items x 8 heads overfill 132 SMs", p->num_work);
    cr_expect_gt((long)p->num_work * c.num_kv_heads, 132 / 2, "split too coarse: %d work items", p->num_work);
    cr_expect_eq(p->req_num_chunks[0], (8192 + p->kv_chunk_size - 1) / p->kv_chunk_size);
    cr_expect_eq(p->total_partial_rows, p->req_num_chunks[0] * 16, "partial slots: chunks x rows");
    swa_prefill_plan_free(p);
    fx_case_free(&c);

    /* long KV, large batch: 64 requests x 8 heads already fill the GPU */
    int qo3[64], kv3[64];
    for (int r = 0; r < 64; r++) {
        qo3[r] = 16;
        kv3[r] = 8192;
    }
    c = plan_case(64, qo3, kv3, 8, 8, 128, -1);
    p = plan_or_die(&c, SWA_MUTANT_NONE, 132);
    cr_expect(!p->split_kv, "64 x 8 = 512 CTAs should not split on 132 SMs");
    swa_prefill_plan_free(p);
    fx_case_free(&c);
}

Test(plan_prefill, split_mutants_force_a_split)
{
    int qo[] = {16}, kv[] = {200};
    swa_case c = plan_case(1, qo, kv, 8, 8, 128, -1);
    swa_prefill_plan *p = plan_or_die(&c, SWA_MUTANT_SPLIT_LAST_CHUNK_DROPPED, 132);
    cr_expect(p->split_kv && p->kv_chunk_size == 128, "forced split: chunk %d (expected 128)", p->kv_chunk_size);
    cr_expect_eq(p->req_num_chunks[0], 1, "200 / 128 rounded down: the partial chunk is dropped");
    swa_prefill_plan_free(p);
    p = plan_or_die(&c, SWA_MUTANT_NONE, 132);
    cr_expect(!p->split_kv);
    swa_prefill_plan_free(p);
    fx_case_free(&c);
}

Test(plan_prefill, mask_compiled_out_plans_without_the_window)
{
    int qo[] = {12}, kv[] = {12};
    swa_case c = plan_case(1, qo, kv, 4, 4, 64, 4);
    swa_prefill_plan *p = plan_or_die(&c, SWA_MUTANT_NONE, 132);
    cr_expect(p->window_left == 4 && p->mask_window && p->run_window_left == 4);
    swa_prefill_plan_free(p);
    p = plan_or_die(&c, SWA_MUTANT_MASK_COMPILED_OUT, 132);
    cr_expect(p->window_left == -1 && !p->mask_window && p->run_window_left == 4,
              "seed 000: planned window %d, mask %d, skip window %d", p->window_left, p->mask_window,
              p->run_window_left);
    swa_prefill_plan_free(p);
    fx_case_free(&c);
}

static swa_status run_with_window(fx *f, swa_mutant m, bool set, int window_left, swa_error *err)
{
    swa_plan_opts o = fx_opts(f, m);
    void *plan;
    swa_status st = swa_backend_prefill.plan(&f->c, &f->in, &o, &plan, err);
    cr_assert_eq(st, SWA_OK, "%s", err->message);
    swa_run_opts r = {.window_left_set = set, .window_left = window_left, .return_lse = false};
    st = swa_backend_prefill.run(plan, &f->in, &r, &f->o, err);
    swa_backend_prefill.free(plan);
    return st;
}

Test(plan_prefill, plan_run_window_mismatch_is_an_error)
{
    int qo[] = {12}, kv[] = {12};
    fx_spec s = {.num_requests = 1, .qo_len = qo, .kv_len = kv, .window_left = 4};
    fx f;
    fx_setup(&f, &s);
    swa_error err = {0};
    swa_status st = run_with_window(&f, SWA_MUTANT_NONE, true, -1, &err);
    cr_expect_eq(st, SWA_ERR_INVALID);
    cr_expect(strstr(err.message, "plan/run mismatch: planned window_left=4, run window_left=-1") != NULL,
              "message was: %s", err.message);
    /* the same window, or none given, runs */
    cr_expect_eq(run_with_window(&f, SWA_MUTANT_NONE, true, 4, &err), SWA_OK, "%s", err.message);
    cr_expect_eq(run_with_window(&f, SWA_MUTANT_NONE, false, 0, &err), SWA_OK, "%s", err.message);
    /* seed 000: the mutant's plan has window -1, the run passes 4, and the
     * check is silently bypassed */
    memset(&err, 0, sizeof err);
    cr_expect_eq(run_with_window(&f, SWA_MUTANT_MASK_COMPILED_OUT, true, 4, &err), SWA_OK,
                 "mask_compiled_out must bypass the check: %s", err.message);
    fx_teardown(&f);
}

Test(plan_prefill, bad_shapes_are_reported)
{
    int qo[] = {12}, kv[] = {5};
    swa_case c = plan_case(1, qo, kv, 4, 4, 64, 4);
    swa_prefill_plan *p = NULL;
    swa_error err = {0};
    c.chunk_size = 4;
    c.causal = false; /* chunked attention is defined for causal rows only */
    cr_expect_eq(swa_prefill_plan_build(&c, NULL, &p, &err), SWA_ERR_INVALID);
    cr_expect(strstr(err.message, "attention_chunk_size 4, causal false") != NULL, "message was: %s", err.message);
    cr_expect_null(p);
    fx_case_free(&c);
    int qo2[] = {4}, kv2[] = {8};
    c = plan_case(1, qo2, kv2, 6, 4, 64, 4);
    cr_expect_eq(swa_prefill_plan_build(&c, NULL, &p, &err), SWA_ERR_INVALID);
    cr_expect(strstr(err.message, "multiple of num_kv_heads") != NULL, "message was: %s", err.message);
    fx_case_free(&c);
}
