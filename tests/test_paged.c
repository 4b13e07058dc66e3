/* test_paged.c — the paged KV cache: gathering every token through either
 * page table gives back the logical tensor (page sizes 1, 7, 16; NHD and
 * HND), spare pages are NaN and never referenced, pages are shuffled.
 *
 * Run: ctest --test-dir build -R test_paged --output-on-failure */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/data.h"
#include "core/rng.h"

#define NUM_REQ 7
static const int KV_LEN[NUM_REQ] = {1, 7, 8, 16, 17, 33, 100};
#define HEADS 3
#define DIM 8

struct layout_param {
    int page_size;
    swa_layout layout;
    swa_dtype dtype;
};

typedef struct built {
    swa_paged_kv kv;
    float *k, *v;
    int offset[NUM_REQ + 1];
} built;

static built build(const struct layout_param *p, uint64_t seed)
{
    built b;
    b.offset[0] = 0;
    for (int r = 0; r < NUM_REQ; r++)
        b.offset[r + 1] = b.offset[r] + KV_LEN[r];
    size_t n = (size_t)b.offset[NUM_REQ] * HEADS * DIM;
    b.k = malloc(n * sizeof(float));
    b.v = malloc(n * sizeof(float));
    cr_assert(b.k && b.v);
    swa_rng rng;
    swa_rng_seed(&rng, seed, "test");
    for (size_t i = 0; i < n; i++) {
        b.k[i] = swa_round_to(p->dtype, (float)swa_rng_normal(&rng));
        b.v[i] = swa_round_to(p->dtype, (float)swa_rng_normal(&rng));
    }
    swa_error err;
    cr_assert_eq(swa_paged_build(&b.kv, p->dtype, p->layout, p->page_size, NUM_REQ, KV_LEN, HEADS, DIM, b.k, b.v,
                                 seed, &err),
                 SWA_OK, "%s", err.message);
    return b;
}

static void built_free(built *b)
{
    swa_paged_free(&b->kv);
    free(b->k);
    free(b->v);
}

ParameterizedTestParameters(paged, round_trip)
{
    static struct layout_param params[] = {
        {1, SWA_LAYOUT_NHD, SWA_DTYPE_FP16},  {7, SWA_LAYOUT_NHD, SWA_DTYPE_FP16},
        {16, SWA_LAYOUT_NHD, SWA_DTYPE_FP16}, {1, SWA_LAYOUT_HND, SWA_DTYPE_FP16},
        {7, SWA_LAYOUT_HND, SWA_DTYPE_FP16},  {16, SWA_LAYOUT_HND, SWA_DTYPE_FP16},
        {7, SWA_LAYOUT_NHD, SWA_DTYPE_BF16},  {16, SWA_LAYOUT_HND, SWA_DTYPE_BF16},
        {7, SWA_LAYOUT_HND, SWA_DTYPE_FP32},  {1, SWA_LAYOUT_NHD, SWA_DTYPE_FP32},
    };
    return cr_make_param_array(struct layout_param, params, sizeof params / sizeof params[0]);
}

/* Both table forms reach every token of every request; the tables agree
 * on lengths. */
ParameterizedTest(struct layout_param *p, paged, round_trip)
{
    built b = build(p, 17);
    const swa_paged_kv *kv = &b.kv;
    const char *what = swa_layout_name(p->layout);
    cr_assert_eq(kv->num_requests, NUM_REQ);
    cr_assert_eq(kv->indptr[0], 0);
    for (int r = 0; r < NUM_REQ; r++) {
        int pages = kv->indptr[r + 1] - kv->indptr[r];
        cr_assert_eq(pages, (KV_LEN[r] + p->page_size - 1) / p->page_size, "%s ps %d r %d", what, p->page_size, r);
        cr_assert(kv->last_page_len[r] >= 1 && kv->last_page_len[r] <= p->page_size, "last_page_len %d",
                  kv->last_page_len[r]);
        cr_assert_eq((pages - 1) * p->page_size + kv->last_page_len[r], KV_LEN[r], "FlashInfer length rule, r %d", r);
        cr_assert_eq(kv->context_lens[r], KV_LEN[r]);
        for (int slot = 0; slot < kv->max_blocks_per_seq; slot++) {
            int bt = kv->block_tables[r * kv->max_blocks_per_seq + slot];
            if (slot < pages)
                cr_assert_eq(bt, kv->indices[kv->indptr[r] + slot], "block table r %d slot %d", r, slot);
            else
                cr_assert_eq(bt, -1, "unused block-table slot r %d slot %d = %d", r, slot, bt);
        }
    }
    cr_assert_eq(kv->max_blocks_per_seq, (100 + p->page_size - 1) / p->page_size);

    float got[DIM];
    for (int r = 0; r < NUM_REQ; r++) {
        for (int t = 0; t < KV_LEN[r]; t++) {
            for (int h = 0; h < HEADS; h++) {
                size_t logical = ((size_t)(b.offset[r] + t) * HEADS + h) * DIM;
                for (int which = 0; which < 2; which++) {
                    const float *want = (which ? b.v : b.k) + logical;
                    swa_paged_gather(kv, which, r, t, h, got);
                    for (int d = 0; d < DIM; d++)
                        cr_assert_eq(got[d], want[d], "%s ps %d %s: indptr form r %d t %d h %d d %d: %g vs %g", what,
                                     p->page_size, which ? "V" : "K", r, t, h, d, got[d], want[d]);
                    /* the AITER form, by hand */
                    int page = kv->block_tables[r * kv->max_blocks_per_seq + t / p->page_size];
                    size_t off = swa_paged_offset(kv, page, t % p->page_size, h);
                    const void *pool = which ? kv->v_pages : kv->k_pages;
                    for (int d = 0; d < DIM; d++)
                        cr_assert_eq(swa_load(p->dtype, pool, off + d), want[d],
                                     "%s ps %d: block_tables form r %d t %d h %d d %d", what, p->page_size, r, t, h, d);
                }
            }
        }
    }
    built_free(&b);
}

/* The layouts place (page, slot, head) where data.h says. */
Test(paged, offsets_follow_the_layouts)
{
    swa_paged_kv kv;
    memset(&kv, 0, sizeof kv);
    kv.page_size = 7;
    kv.num_kv_heads = 3;
    kv.head_dim = 8;
    kv.layout = SWA_LAYOUT_NHD;
    cr_expect_eq(swa_paged_offset(&kv, 2, 5, 1), (size_t)(((2 * 7 + 5) * 3 + 1) * 8));
    kv.layout = SWA_LAYOUT_HND;
    cr_expect_eq(swa_paged_offset(&kv, 2, 5, 1), (size_t)(((2 * 3 + 1) * 7 + 5) * 8));
}

static bool all_nan(const swa_paged_kv *kv, const void *pool, int page, int slot_from)
{
    for (int slot = slot_from; slot < kv->page_size; slot++)
        for (int h = 0; h < kv->num_kv_heads; h++) {
            size_t off = swa_paged_offset(kv, page, slot, h);
            for (int d = 0; d < kv->head_dim; d++)
                if (!isnan(swa_load(kv->dtype, pool, off + d)))
                    return false;
        }
    return true;
}

ParameterizedTestParameters(paged, spare_pages_are_nan_and_unreferenced)
{
    static struct layout_param params[] = {
        {1, SWA_LAYOUT_NHD, SWA_DTYPE_FP16}, {7, SWA_LAYOUT_HND, SWA_DTYPE_BF16}, {16, SWA_LAYOUT_NHD, SWA_DTYPE_FP32},
    };
    return cr_make_param_array(struct layout_param, params, sizeof params / sizeof params[0]);
}

ParameterizedTest(struct layout_param *p, paged, spare_pages_are_nan_and_unreferenced)
{
    built b = build(p, 3);
    const swa_paged_kv *kv = &b.kv;
    int used = kv->indptr[NUM_REQ];
    int *refs = calloc((size_t)kv->num_pages, sizeof *refs);
    for (int i = 0; i < used; i++) {
        cr_assert(kv->indices[i] >= 0 && kv->indices[i] < kv->num_pages, "page id %d", kv->indices[i]);
        refs[kv->indices[i]]++;
    }
    int spare = 0;
    for (int page = 0; page < kv->num_pages; page++) {
        cr_assert_leq(refs[page], 1, "page %d referenced %d times", page, refs[page]);
        if (refs[page] == 0) {
            spare++;
            cr_expect(all_nan(kv, kv->k_pages, page, 0) && all_nan(kv, kv->v_pages, page, 0),
                      "ps %d: spare page %d is not all NaN", p->page_size, page);
        }
    }
    int want_spare = used / 4 > 0 ? used / 4 : 1;
    cr_expect_eq(spare, want_spare, "ps %d: %d spare pages for %d used", p->page_size, spare, used);
    cr_expect_eq(kv->num_pages, used + spare);
    for (int r = 0; r < NUM_REQ; r++) {
        for (int slot = 0; slot < kv->max_blocks_per_seq; slot++) {
            int bt = kv->block_tables[r * kv->max_blocks_per_seq + slot];
            cr_assert(bt < 0 || refs[bt] == 1, "block table points at spare page %d", bt);
        }
        /* slots past kv_len in the last page are poison too */
        int last = kv->indices[kv->indptr[r + 1] - 1];
        cr_expect(all_nan(kv, kv->k_pages, last, kv->last_page_len[r]) &&
                      all_nan(kv, kv->v_pages, last, kv->last_page_len[r]),
                  "ps %d r %d: tail of the last page is not NaN", p->page_size, r);
    }
    free(refs);
    built_free(&b);
}

/* Pages come out of the pool in a seed-determined, non-monotonic order. */
Test(paged, pages_are_shuffled_deterministically)
{
    struct layout_param p = {1, SWA_LAYOUT_NHD, SWA_DTYPE_FP16};
    built a = build(&p, 8), again = build(&p, 8), other = build(&p, 9);
    int used = a.kv.indptr[NUM_REQ];
    cr_assert_eq(used, 182);
    int descents = 0, differ = 0;
    for (int i = 0; i < used; i++) {
        descents += i > 0 && a.kv.indices[i] < a.kv.indices[i - 1];
        cr_assert_eq(a.kv.indices[i], again.kv.indices[i], "same seed, page %d differs", i);
        differ += a.kv.indices[i] != other.kv.indices[i];
    }
    cr_expect_gt(descents, used / 4, "only %d descents in %d pages: not shuffled", descents, used);
    cr_expect_gt(differ, used / 2, "seeds 8 and 9 give nearly the same order (%d differ)", differ);
    built_free(&a);
    built_free(&again);
    built_free(&other);
}

Test(paged, bad_arguments_are_errors)
{
    swa_paged_kv kv;
    swa_error err;
    float k[16] = {0}, v[16] = {0};
    int lens[1] = {2};
    cr_expect_eq(swa_paged_build(&kv, SWA_DTYPE_FP16, SWA_LAYOUT_NHD, 0, 1, lens, 1, 8, k, v, 0, &err),
                 SWA_ERR_INVALID);
    cr_expect(strstr(err.message, "page_size") != NULL, "%s", err.message);
    int zero[1] = {0};
    cr_expect_eq(swa_paged_build(&kv, SWA_DTYPE_FP16, SWA_LAYOUT_NHD, 16, 1, zero, 1, 8, k, v, 0, &err),
                 SWA_ERR_INVALID);
    cr_expect(strstr(err.message, "kv_len") != NULL, "%s", err.message);
}

/* The cache of swa_inputs_create holds the case's logical K/V. */
Test(paged, inputs_cache_matches_logical_tensors)
{
    int qo[2] = {1, 1}, kvl[2] = {29, 3};
    swa_case c;
    memset(&c, 0, sizeof c);
    c.num_requests = 2;
    c.qo_len = qo;
    c.kv_len = kvl;
    c.num_qo_heads = 4;
    c.num_kv_heads = 2;
    c.head_dim = 64;
    c.dtype = SWA_DTYPE_BF16;
    c.page_size = 5;
    c.layout = SWA_LAYOUT_HND;
    c.window_left = -1;
    c.seed = 77;
    swa_inputs in;
    swa_error err;
    cr_assert_eq(swa_inputs_create(&c, &in, &err), SWA_OK, "%s", err.message);
    float got[64];
    for (int r = 0; r < 2; r++)
        for (int t = 0; t < kvl[r]; t++)
            for (int h = 0; h < 2; h++) {
                swa_paged_gather(&in.paged, 0, r, t, h, got);
                const float *want = &in.k[((size_t)(in.kv_indptr[r] + t) * 2 + h) * 64];
                cr_assert_eq(memcmp(got, want, sizeof got), 0, "r %d t %d h %d", r, t, h);
            }
    cr_expect_eq(in.paged.layout, SWA_LAYOUT_HND);
    cr_expect_eq(in.paged.page_size, 5);
    swa_inputs_free(&in);
}

/* The page table alone (swadiff coverage plans from it): no pool, pages in
 * order, an empty request has no page and last_page_len 0, one spare page
 * no request references, block tables padded with -1; the same table
 * shape as swa_paged_build's for the same lengths. */
Test(paged, table_only_has_the_build_shape_without_a_pool)
{
    const int kv_len[] = {17, 0, 16, 1};
    swa_paged_kv t, full;
    swa_error err = {0};
    cr_assert_eq(swa_paged_table_only(&t, SWA_DTYPE_FP16, SWA_LAYOUT_HND, 16, 4, kv_len, 2, 64, &err), SWA_OK, "%s",
                 err.message);
    cr_expect_null(t.k_pages);
    cr_expect_null(t.v_pages);
    int indptr[] = {0, 2, 2, 3, 4}, last[] = {1, 0, 16, 1};
    for (int r = 0; r <= 4; r++) cr_expect_eq(t.indptr[r], indptr[r], "indptr[%d]", r);
    for (int r = 0; r < 4; r++) {
        cr_expect_eq(t.last_page_len[r], last[r], "last_page_len[%d]", r);
        cr_expect_eq(t.context_lens[r], kv_len[r]);
    }
    for (int e = 0; e < 4; e++) cr_expect_eq(t.indices[e], e, "pages in order");
    cr_expect_eq(t.num_pages, 5, "one spare page");
    cr_expect_eq(t.max_blocks_per_seq, 2);
    cr_expect_eq(t.block_tables[0], 0);
    cr_expect_eq(t.block_tables[1], 1);
    cr_expect_eq(t.block_tables[2], -1, "an empty request's row is all -1");
    cr_expect_eq(t.block_tables[3], -1);
    cr_expect_eq(t.block_tables[5], -1, "padding past a request's pages");

    /* the full cache for lengths >= 1 has the same indptr and last_page_len */
    const int kv_full[] = {17, 16, 1};
    float *k = calloc(34 * 2 * 64, sizeof(float)), *v = calloc(34 * 2 * 64, sizeof(float));
    cr_assert(k && v);
    cr_assert_eq(swa_paged_build(&full, SWA_DTYPE_FP16, SWA_LAYOUT_HND, 16, 3, kv_full, 2, 64, k, v, 7, &err), SWA_OK,
                 "%s", err.message);
    swa_paged_kv t3;
    cr_assert_eq(swa_paged_table_only(&t3, SWA_DTYPE_FP16, SWA_LAYOUT_HND, 16, 3, kv_full, 2, 64, &err), SWA_OK);
    for (int r = 0; r < 3; r++) {
        cr_expect_eq(t3.indptr[r + 1], full.indptr[r + 1]);
        cr_expect_eq(t3.last_page_len[r], full.last_page_len[r]);
    }
    swa_paged_free(&full);
    swa_paged_free(&t3);
    swa_paged_free(&t);
    free(k);
    free(v);

    const int bad[] = {3, -1};
    cr_expect_eq(swa_paged_table_only(&t, SWA_DTYPE_FP16, SWA_LAYOUT_NHD, 16, 2, bad, 1, 64, &err), SWA_ERR_INVALID);
    cr_expect(strstr(err.message, "request 1") != NULL, "%s", err.message);
}
