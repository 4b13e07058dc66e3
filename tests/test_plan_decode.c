/* test_plan_decode.c — the decode planners: the AITER window mapping
 * (seed 003) with its two mutants, decode_fa2's split decisions and chunk
 * layout over the window span, CUDA-graph capacities/padding and update,
 * decode_aiter's partitions, block tables, CUDA-graph refusal and shadow
 * plan.
 *
 *   ctest --test-dir build -R test_plan_decode --output-on-failure */
#include <criterion/criterion.h>

#include "backends/attn_primitives.h"
#include "backends/decode_aiter.h"
#include "backends/decode_fa2.h"
#include "tests/test_backend_fixture.h"

Test(plan_decode, aiter_window_mapping)
{
    int L[] = {-1, 0, 1, 31};
    int spec[] = {0, 1, 2, 32}, s_eq_l[] = {0, 0, 1, 31}, l0_sentinel[] = {0, 0, 2, 32};
    for (int i = 0; i < 4; i++) {
        cr_expect_eq(swa_aiter_sliding_window(L[i], SWA_MUTANT_NONE), spec[i], "L=%d: S=%d, expected %d", L[i],
                     swa_aiter_sliding_window(L[i], SWA_MUTANT_NONE), spec[i]);
        cr_expect_eq(swa_aiter_sliding_window(L[i], SWA_MUTANT_AITER_S_EQ_L), s_eq_l[i], "aiter_s_eq_l L=%d", L[i]);
        cr_expect_eq(swa_aiter_sliding_window(L[i], SWA_MUTANT_AITER_L0_SENTINEL), l0_sentinel[i],
                     "aiter_l0_sentinel L=%d", L[i]);
        /* mutants that live elsewhere leave the mapping alone */
        cr_expect_eq(swa_aiter_sliding_window(L[i], SWA_MUTANT_LEFT_BOUND_GT), spec[i]);
    }
}

/* Fixture with qo_len 1 for every request. */
static void decode_fx(fx *f, int B, const int *kv, int hq, int hk, int page_size, int L)
{
    fx_spec s = {.num_requests = B, .kv_len = kv, .num_qo_heads = hq, .num_kv_heads = hk, .head_dim = 64,
                 .page_size = page_size, .window_left = L};
    fx_setup(f, &s);
}

static swa_decode_fa2_plan *fa2_plan(fx *f, swa_mutant m, int num_sms)
{
    swa_plan_opts o = {.mutant = m, .num_sms = num_sms};
    swa_decode_fa2_plan *p = NULL;
    swa_error err = {0};
    cr_assert_eq(swa_decode_fa2_plan_build(&f->c, &f->in.paged, f->c.num_requests, &o, &p, &err), SWA_OK, "%s",
                 err.message);
    return p;
}

/* Each request's chunks tile [align_down(ws, page), kv_len) exactly. */
static void expect_chunks_cover_window(const swa_decode_fa2_plan *p, const fx *f)
{
    for (int r = 0; r < p->num_requests; r++) {
        int kv_len = f->c.kv_len[r];
        int ws = swa_decode_window_start(kv_len, p->window_left, p->chunk_size, SWA_MUTANT_NONE);
        int base = ws - ws % p->page_size;
        int n = p->req_num_chunks[r];
        int covered_end = swa_imin(base + n * p->kv_chunk_size, kv_len);
        cr_expect_eq(covered_end, kv_len, "request %d: chunks end at %d, kv_len %d", r, covered_end, kv_len);
        if (p->split_kv)
            cr_expect_lt(base + (n - 1) * p->kv_chunk_size, kv_len, "request %d: an empty trailing chunk", r);
        int items = 0;
        for (int w = 0; w < p->num_work; w++)
            if (p->work_request[w] == r) {
                cr_expect_eq(p->work_chunk[w], items, "request %d: chunks out of order", r);
                items++;
            }
        cr_expect_eq(items, n, "request %d: %d work items for %d chunks", r, items, n);
    }
}

Test(plan_decode, fa2_splits_long_windows_on_small_batches)
{
    int kv[] = {3000, 2100};
    fx f;
    decode_fx(&f, 2, kv, 4, 2, 16, 1023);
    swa_decode_fa2_plan *p = fa2_plan(&f, SWA_MUTANT_NONE, 132);
    cr_expect(p->split_kv, "2 requests x 2 kv heads = 4 CTAs on 132 SMs over 1024-key windows should split");
    cr_expect_eq(p->kv_chunk_size % 16, 0, "chunk %d not page aligned", p->kv_chunk_size);
    cr_expect_geq(p->kv_chunk_size, 64);
    cr_expect_leq((long)p->num_work * 2, 132, "%d items x 2 heads overfill", p->num_work);
    cr_expect_eq(p->grid_work, p->num_work, "no padding outside graph mode");
    /* request 0: window start 3000-1-1023 = 1976, pages before 1968 never loaded */
    int ws = swa_decode_window_start(3000, 1023, 0, SWA_MUTANT_NONE);
    cr_expect_eq(ws, 1976);
    cr_expect_eq(swa_decode_chunk_base(ws, 16, SWA_MUTANT_NONE), 1968, "first key loaded");
    cr_expect_eq(swa_decode_chunk_base(ws, 16, SWA_MUTANT_WINDOW_PAGE_CROSS), 1984, "the mutant rounds up");
    expect_chunks_cover_window(p, &f);
    cr_expect_eq(p->req_partial_offset[1], p->req_num_chunks[0], "partial slots follow request order");
    cr_expect_eq(p->total_partial_rows, p->req_num_chunks[0] + p->req_num_chunks[1]);
    swa_decode_fa2_plan_free(p);
    fx_teardown(&f);
}

Test(plan_decode, fa2_no_split_for_short_windows_or_large_batches)
{
    int kv[] = {3000, 2100};
    fx f;
    decode_fx(&f, 2, kv, 4, 2, 16, 31); /* span <= 47 keys: under the 64-key minimum chunk */
    swa_decode_fa2_plan *p = fa2_plan(&f, SWA_MUTANT_NONE, 132);
    cr_expect(!p->split_kv, "window 31 should not split");
    cr_expect_eq(p->num_work, 2);
    expect_chunks_cover_window(p, &f);
    swa_decode_fa2_plan_free(p);
    fx_teardown(&f);

    int kv64[66];
    for (int r = 0; r < 66; r++)
        kv64[r] = 2000 + r;
    decode_fx(&f, 66, kv64, 4, 2, 16, -1); /* 66 x 2 = 132 CTAs: full */
    p = fa2_plan(&f, SWA_MUTANT_NONE, 132);
    cr_expect(!p->split_kv, "132 CTAs fill 132 SMs: no split");
    swa_decode_fa2_plan_free(p);
    p = fa2_plan(&f, SWA_MUTANT_NONE, 1000); /* a bigger GPU would split */
    cr_expect(p->split_kv, "132 CTAs on 1000 SMs should split");
    expect_chunks_cover_window(p, &f);
    swa_decode_fa2_plan_free(p);
    fx_teardown(&f);
}

Test(plan_decode, fa2_plan_level_mutants)
{
    int kv[] = {300, 290};
    fx f;
    decode_fx(&f, 2, kv, 4, 4, 16, 127);
    swa_decode_fa2_plan *p = fa2_plan(&f, SWA_MUTANT_NONE, 8);
    cr_expect(!p->split_kv, "8 CTAs on 8 SMs: no split without a mutant");
    swa_decode_fa2_plan_free(p);

    p = fa2_plan(&f, SWA_MUTANT_SPLIT_LAST_CHUNK_DROPPED, 8);
    /* request 0: ws 172, base 160, span 140: forced chunk align_up(70, 16) = 80, 140/80 = 1 chunk */
    cr_expect(p->split_kv && p->kv_chunk_size == 80, "forced split, chunk %d", p->kv_chunk_size);
    cr_expect_eq(p->req_num_chunks[0], 1, "rounded down drops the partial chunk");
    swa_decode_fa2_plan_free(p);

    p = fa2_plan(&f, SWA_MUTANT_SPLIT_CHUNK_SHORT, 8);
    cr_expect_eq(p->kv_chunk_size, 64, "chunks executed one page short (80 - 16)");
    cr_expect_eq(p->req_num_chunks[0], 2, "counted with the full chunk");
    cr_expect_lt(160 + 2 * p->kv_chunk_size, 300, "coverage must fall short of kv_len");
    swa_decode_fa2_plan_free(p);

    p = fa2_plan(&f, SWA_MUTANT_LAST_PAGE_LEN_OFF, 132);
    cr_expect_eq(p->kv_last_page_len[0], f.in.paged.last_page_len[0] - 1, "last_page_len copied one short");
    swa_decode_fa2_plan_free(p);
    fx_teardown(&f);
}

Test(plan_decode, fa2_graph_capacity_padding_and_update)
{
    int kv[] = {500, 40, 1200, 7, 900, 1500};
    fx f;
    decode_fx(&f, 6, kv, 4, 2, 16, 127);
    swa_plan_opts o = {.mutant = SWA_MUTANT_NONE, .num_sms = 132};
    swa_decode_fa2_plan *cap = NULL, *full = NULL;
    swa_error err = {0};
    cr_assert_eq(swa_decode_fa2_plan_graph(&f.c, &f.in.paged, 2, 6, 1500, &o, &cap, &err), SWA_OK, "%s", err.message);
    cr_expect(cap->graph);
    cr_expect_eq(cap->num_requests, 2);
    cr_expect_eq(cap->capacity_requests, 6);
    cr_expect_eq(cap->grid_work, cap->capacity_work, "grid padded to capacity");
    cr_expect_gt(cap->grid_work, cap->num_work, "padding beyond the captured batch");
    cr_expect_geq(cap->capacity_pages, (1500 + 15) / 16 * 6);
    int chunk = cap->kv_chunk_size;

    cr_assert_eq(swa_decode_fa2_plan_graph(&f.c, &f.in.paged, 2, 6, 1500, &o, &full, &err), SWA_OK, "%s", err.message);
    cr_assert_eq(swa_decode_fa2_graph_update(full, &f.in.paged, 6, &err), SWA_OK, "%s", err.message);
    cr_expect_eq(full->num_requests, 6);
    cr_expect_eq(full->kv_chunk_size, chunk, "update keeps the chunk size");
    cr_expect_eq(full->grid_work, cap->grid_work, "update never touches the launch grid");
    cr_expect_leq(full->num_work, full->grid_work, "the full batch fits the padded grid");
    cr_expect_gt(full->num_work, cap->num_work);
    expect_chunks_cover_window(full, &f);

    cr_assert_eq(swa_decode_fa2_graph_copy(cap, full, &err), SWA_OK, "%s", err.message);
    cr_expect_eq(cap->num_work, full->num_work);
    cr_expect_eq(memcmp(cap->kv_indices, full->kv_indices, sizeof(int) * (size_t)full->kv_indptr[6]), 0);

    /* a plan whose graph was sized for 3 requests cannot take 6 */
    swa_decode_fa2_plan *small = NULL;
    cr_assert_eq(swa_decode_fa2_plan_graph(&f.c, &f.in.paged, 2, 3, 1500, &o, &small, &err), SWA_OK, "%s",
                 err.message);
    memset(&err, 0, sizeof err);
    cr_expect_eq(swa_decode_fa2_graph_update(small, &f.in.paged, 6, &err), SWA_ERR_INVALID);
    cr_expect(strstr(err.message, "exceeds the captured capacity of 3 requests") != NULL, "message was: %s",
              err.message);
    /* nor longer requests than graph_max_kv_len */
    swa_decode_fa2_plan *short_kv = NULL;
    cr_assert_eq(swa_decode_fa2_plan_graph(&f.c, &f.in.paged, 2, 6, 500, &o, &short_kv, &err), SWA_OK, "%s",
                 err.message);
    cr_expect_eq(swa_decode_fa2_graph_update(short_kv, &f.in.paged, 6, &err), SWA_ERR_INVALID);
    cr_expect(strstr(err.message, "over graph_max_kv_len 500") != NULL, "message was: %s", err.message);

    swa_decode_fa2_plan_free(cap);
    swa_decode_fa2_plan_free(full);
    swa_decode_fa2_plan_free(small);
    swa_decode_fa2_plan_free(short_kv);
    fx_teardown(&f);
}

Test(plan_decode, fa2_graph_mutant_keeps_the_captured_grid)
{
    int kv[] = {500, 40, 1200, 7, 900, 1500};
    fx f;
    decode_fx(&f, 6, kv, 4, 2, 16, 127);
    swa_plan_opts o = {.mutant = SWA_MUTANT_GRAPH_CAPTURED_SCALARS, .num_sms = 132};
    swa_decode_fa2_plan *p = NULL;
    swa_error err = {0};
    cr_assert_eq(swa_decode_fa2_plan_graph(&f.c, &f.in.paged, 2, 6, 1500, &o, &p, &err), SWA_OK, "%s", err.message);
    int captured = p->num_work;
    cr_expect_eq(p->grid_work, captured, "graph_captured_scalars: grid = captured num_work");
    cr_assert_eq(swa_decode_fa2_graph_update(p, &f.in.paged, 6, &err), SWA_OK, "%s", err.message);
    cr_expect_lt(p->grid_work, p->num_work, "replay grid %d must be smaller than the new num_work %d", p->grid_work,
                 p->num_work);
    swa_decode_fa2_plan_free(p);
    fx_teardown(&f);
}

Test(plan_decode, aiter_partitions_and_block_tables)
{
    int kv[] = {600, 17, 256};
    fx f;
    decode_fx(&f, 3, kv, 4, 2, 16, 31);
    swa_plan_opts o = {.num_sms = 132};
    swa_decode_aiter_plan *p = NULL;
    swa_error err = {0};
    cr_assert_eq(swa_decode_aiter_plan_build(&f.c, &f.in.paged, &o, &p, &err), SWA_OK, "%s", err.message);
    cr_expect_eq(p->partition_size, 256);
    cr_expect_eq(p->max_context_len, 600);
    cr_expect_eq(p->max_num_partitions, 3, "ceil(600 / 256)");
    cr_expect_eq(p->sliding_window, 32, "S = L + 1");
    cr_expect_eq(p->max_blocks_per_seq, 38 + 1, "38 pages + one spare column");
    for (int r = 0; r < 3; r++) {
        cr_expect_eq(p->context_lens[r], kv[r]);
        int pages = f.in.paged.indptr[r + 1] - f.in.paged.indptr[r];
        for (int j = 0; j < pages; j++)
            cr_expect_eq(p->block_tables[r * p->max_blocks_per_seq + j], f.in.paged.indices[f.in.paged.indptr[r] + j],
                         "request %d block %d", r, j);
        int spare = p->block_tables[r * p->max_blocks_per_seq + pages];
        for (int e = 0; e < f.in.paged.indptr[3]; e++)
            cr_expect_neq(spare, f.in.paged.indices[e], "spare page %d is owned by a request", spare);
    }
    cr_expect_null(p->shadow, "no shadow plan without return_lse");
    swa_decode_aiter_plan_free(p);
    fx_teardown(&f);
}

Test(plan_decode, aiter_refuses_cuda_graph_at_plan_time)
{
    int kv[] = {100, 200};
    fx_spec s = {.num_requests = 2, .kv_len = kv, .window_left = 31, .cuda_graph = true, .graph_capture_requests = 1};
    fx f;
    fx_setup(&f, &s);
    char why[256];
    cr_expect_null(swa_backend_decode_aiter.supports(&f.c, swa_device_get(SWA_DEVICE_HOST), why, sizeof why),
                   "CUDA graph must not be a skip on decode_aiter: %s", why);
    swa_plan_opts o = fx_opts(&f, SWA_MUTANT_NONE);
    void *plan = (void *)1;
    swa_error err = {0};
    cr_expect_eq(swa_backend_decode_aiter.plan(&f.c, &f.in, &o, &plan, &err), SWA_ERR_INVALID);
    cr_expect_null(plan);
    cr_expect_str_eq(err.message,
                     "decode_aiter cannot be used with CUDA-graph capture: its launch grid is sized from per-plan "
                     "scalars (max_kv_len, max_blocks_per_seq) that are baked into the captured graph; use "
                     "decode_fa2 or decode_auto for CUDA-graph workflows");
    fx_teardown(&f);
}

Test(plan_decode, aiter_shadow_plan_and_one_warning)
{
    int kv[] = {100, 200};
    fx_spec s = {.num_requests = 2, .kv_len = kv, .window_left = 31, .return_lse = true};
    fx f;
    fx_setup(&f, &s);
    swa_plan_opts o = fx_opts(&f, SWA_MUTANT_AITER_S_EQ_L);
    void *plan = NULL;
    swa_error err = {0};
    cr_assert_eq(swa_backend_decode_aiter.plan(&f.c, &f.in, &o, &plan, &err), SWA_OK, "%s", err.message);
    const swa_decode_aiter_plan *p = swa_decode_aiter_plan_of(plan);
    cr_assert_not_null(p->shadow, "return_lse case without a shadow plan");
    cr_expect_eq(p->shadow->window_left, 31, "the shadow uses the real window_left");
    cr_expect_eq(p->shadow->mutant, SWA_MUTANT_NONE, "the shadow is not mutated");
    cr_expect_eq(p->sliding_window, 31, "the AITER path keeps the mutated mapping");
    cr_expect_eq(f.warnings, 1, "warnings at plan time: %d", f.warnings);
    cr_expect(strstr(f.last_warning, "decode_aiter has no LSE output: return_lse=True runs through a shadow "
                                     "decode_fa2 plan") != NULL, "warning was: %s", f.last_warning);
    /* running it (with and without LSE) warns no more */
    swa_run_opts r = {.return_lse = true};
    cr_expect_eq(swa_backend_decode_aiter.run(plan, &f.in, &r, &f.o, &err), SWA_OK, "%s", err.message);
    r.return_lse = false;
    cr_expect_eq(swa_backend_decode_aiter.run(plan, &f.in, &r, &f.o, &err), SWA_OK, "%s", err.message);
    cr_expect_eq(f.warnings, 1, "warnings after two runs: %d", f.warnings);
    swa_backend_decode_aiter.free(plan);
    fx_teardown(&f);
}
