/* test_window_kinds.c — the window kinds beyond window_left: the right bound
 * of a non-causal band (window_right), chunked local attention
 * (attention_chunk_size) and empty rows (qo_len > kv_len, bands past the
 * keys).
 *
 *  - the reference (reference/) and the naive loops against an
 *    element-by-element brute force written here from docs/spec.md;
 *  - the shared primitives (backends/attn_primitives.h): row ranges, chunk
 *    starts, the prefill KV begin/end, the decode window start;
 *  - the host emulation of prefill (paged, ragged, split) and decode_fa2
 *    against the fixture's double-precision loops, empty rows exactly 0 and
 *    LSE -inf;
 *  - every mutant of these kinds killed on the host, and decode_aiter's
 *    refusal of chunks;
 *  - the loader's defaults (window_right 0 causal / -1 non-causal). */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/attn_primitives.h"
#include "backends/decode_aiter.h"
#include "backends/decode_fa2.h"
#include "backends/prefill.h"
#include "harness/case_load.h"
#include "tests/test_case_util.h"
#include "reference/naive.h"
#include "reference/reference.h"
#include "tests/test_backend_fixture.h"

/* ---------------------------------------------------------------------------
 * brute force: is key k visible to row i of a request (docs/spec.md)? */

static bool brute_visible(const swa_case *c, int qo_len, int kv_len, int i, int k)
{
    long long p = (long long)kv_len - qo_len + i;
    if (k < 0 || k >= kv_len)
        return false;
    if (c->causal && k > p)
        return false;
    if (c->window_left >= 0 && k < p - c->window_left)
        return false;
    if (!c->causal && c->window_right >= 0 && k > p + c->window_right)
        return false;
    if (c->chunk_size > 0) {
        if (p < 0)
            return false;
        long long start = (p / c->chunk_size) * c->chunk_size;
        if (k < start)
            return false;
    }
    return true;
}

/* out/lse by brute force over the fixture's inputs. */
static void brute_attention(const swa_case *c, const swa_inputs *in, double *out, double *lse)
{
    int Hq = c->num_qo_heads, Hk = c->num_kv_heads, D = c->head_dim, G = Hq / Hk;
    for (int r = 0; r < c->num_requests; r++)
        for (int i = 0; i < c->qo_len[r]; i++)
            for (int h = 0; h < Hq; h++) {
                size_t row = (size_t)in->qo_indptr[r] + i;
                const float *q = in->q + (row * Hq + h) * D;
                double mx = -INFINITY;
                for (int k = 0; k < c->kv_len[r]; k++) {
                    if (!brute_visible(c, c->qo_len[r], c->kv_len[r], i, k))
                        continue;
                    const float *kk = in->k + (((size_t)in->kv_indptr[r] + k) * Hk + h / G) * D;
                    double s = 0;
                    for (int e = 0; e < D; e++)
                        s += (double)q[e] * kk[e];
                    s *= c->sm_scale;
                    if (s > mx)
                        mx = s;
                }
                double *o = out + (row * Hq + h) * D, sum = 0;
                for (int e = 0; e < D; e++)
                    o[e] = 0;
                for (int k = 0; mx > -INFINITY && k < c->kv_len[r]; k++) {
                    if (!brute_visible(c, c->qo_len[r], c->kv_len[r], i, k))
                        continue;
                    const float *kk = in->k + (((size_t)in->kv_indptr[r] + k) * Hk + h / G) * D;
                    const float *vv = in->v + (((size_t)in->kv_indptr[r] + k) * Hk + h / G) * D;
                    double s = 0;
                    for (int e = 0; e < D; e++)
                        s += (double)q[e] * kk[e];
                    double w = exp(s * c->sm_scale - mx);
                    sum += w;
                    for (int e = 0; e < D; e++)
                        o[e] += w * vv[e];
                }
                for (int e = 0; sum > 0 && e < D; e++)
                    o[e] /= sum;
                lse[row * Hq + h] = sum > 0 ? mx + log(sum) : -INFINITY;
            }
}

typedef struct kind_spec {
    bool noncausal;
    int window_left, window_right; /* window_right used when noncausal */
    int chunk_size;
} kind_spec;

static void setup_kind(fx *f, int B, const int *qo, const int *kv, const kind_spec *k, int hq, int hk,
                       swa_kv_mode mode, swa_dtype dtype)
{
    fx_spec s = {.num_requests = B, .qo_len = qo, .kv_len = kv, .num_qo_heads = hq, .num_kv_heads = hk,
                 .head_dim = 64, .dtype = dtype, .page_size = 16, .kv_mode = mode, .noncausal = k->noncausal,
                 .window_left = k->window_left, .right_set = true, .window_right = k->window_right,
                 .chunk_size = k->chunk_size, .seed = 99};
    fx_setup(f, &s);
}

static const kind_spec KINDS[] = {
    {true, 3, 2, 0},   {true, 0, 0, 0},    {true, -1, 5, 0}, {true, 7, -1, 0}, {true, 31, 31, 0},
    {false, -1, 0, 8}, {false, -1, 0, 1},  {false, -1, 0, 5}, {false, 4, 0, 0}, {false, -1, 0, 0},
    {true, 2, 0, 0},
};
#define NKINDS (int)(sizeof KINDS / sizeof KINDS[0])

/* ---------------------------------------------------------------------------
 * reference */

Test(window_kinds, reference_matches_brute_force)
{
    /* request 2 has qo_len > kv_len: its first rows sit at p < 0 */
    const int qo[] = {12, 1, 20, 40}, kv[] = {17, 9, 7, 40};
    for (int k = 0; k < NKINDS; k++) {
        fx f;
        setup_kind(&f, 4, qo, kv, &KINDS[k], 4, 2, SWA_KV_PAGED, SWA_DTYPE_FP16);
        size_t n = f.out_elems, nl = f.lse_elems;
        double *bo = malloc(n * sizeof *bo), *bl = malloc(nl * sizeof *bl);
        double *ro = malloc(n * sizeof *ro), *rl = malloc(nl * sizeof *rl);
        double *no = malloc(n * sizeof *no), *nlse = malloc(nl * sizeof *nlse);
        brute_attention(&f.c, &f.in, bo, bl);
        swa_error err = {0};
        cr_assert_eq(swa_reference(&f.c, &f.in, NULL, ro, rl, &err), SWA_OK, "%s", err.message);
        cr_assert_eq(swa_reference_naive(&f.c, &f.in, no, nlse, &err), SWA_OK, "%s", err.message);
        long empty = 0;
        for (size_t i = 0; i < nl; i++) {
            if (isinf(bl[i])) {
                empty++;
                cr_expect(isinf(rl[i]) && rl[i] < 0 && isinf(nlse[i]) && nlse[i] < 0,
                          "kind %d row-head %zu: empty row LSE %g / %g, expected -inf", k, i, rl[i], nlse[i]);
            } else {
                cr_expect(fabs(rl[i] - bl[i]) < 1e-9 && fabs(nlse[i] - bl[i]) < 1e-9,
                          "kind %d row-head %zu: LSE %g / %g, brute force %g", k, i, rl[i], nlse[i], bl[i]);
            }
        }
        for (size_t i = 0; i < n; i++)
            cr_expect(fabs(ro[i] - bo[i]) < 1e-9 && fabs(no[i] - bo[i]) < 1e-9 && !isnan(ro[i]),
                      "kind %d element %zu: %g / %g, brute force %g", k, i, ro[i], no[i], bo[i]);
        /* the fixture's own loops (what the backend tests compare with) agree too */
        for (size_t i = 0; i < n; i++)
            cr_expect(fabs(f.ref_out[i] - bo[i]) < 1e-9, "kind %d fixture element %zu", k, i);
        /* request 2 (20 rows over 7 keys) sits at p = -13 .. 6: its rows at p < 0
         * are empty when causal, and for a non-causal band when p + R < 0 */
        const kind_spec *ks = &KINDS[k];
        if (!ks->noncausal || (ks->window_right >= 0 && ks->window_right < 13))
            cr_expect_gt(empty, 0, "kind %d: the qo > kv request must leave rows empty", k);
        free(bo); free(bl); free(ro); free(rl); free(no); free(nlse);
        fx_teardown(&f);
    }
}

/* ---------------------------------------------------------------------------
 * primitives */

Test(window_kinds, primitives)
{
    /* chunk starts: C = 8 */
    cr_expect_eq(swa_chunk_start(13, 8, SWA_MUTANT_NONE), 8);
    cr_expect_eq(swa_chunk_start(16, 8, SWA_MUTANT_NONE), 16);
    cr_expect_eq(swa_chunk_start(7, 8, SWA_MUTANT_NONE), 0);
    cr_expect_eq(swa_chunk_start(13, 8, SWA_MUTANT_CHUNK_AS_WINDOW), 6);
    cr_expect_eq(swa_chunk_start(13, 8, SWA_MUTANT_CHUNK_START_OFF_BY_ONE), 9);
    /* the two-sided band of docs/spec.md: L 2, R 1, p 5 -> keys 3..6 */
    swa_key_range r = swa_mask_row_range(5, 5, 2, 1, 0, true, false, SWA_MUTANT_NONE);
    cr_expect(r.lo == 3 && r.hi == 6, "[%d, %d]", r.lo, r.hi);
    r = swa_mask_row_range(5, 5, 2, 1, 0, true, false, SWA_MUTANT_RIGHT_BOUND_DROPPED);
    cr_expect(r.lo == 3 && r.hi == SWA_KEY_MAX, "right bound dropped: [%d, %d]", r.lo, r.hi);
    /* causal ignores R */
    r = swa_mask_row_range(5, 5, 2, 4, 0, true, true, SWA_MUTANT_NONE);
    cr_expect(r.lo == 3 && r.hi == 5);
    /* chunked: p 13, C 8 -> [8, 13] */
    r = swa_mask_row_range(13, 13, -1, 0, 8, true, true, SWA_MUTANT_NONE);
    cr_expect(r.lo == 8 && r.hi == 13, "[%d, %d]", r.lo, r.hi);
    /* -1 is off; used as a number it empties the row */
    r = swa_mask_row_range(13, 13, -1, 0, 0, false, true, SWA_MUTANT_NONE);
    cr_expect(r.lo == 0 && r.hi == 13);
    r = swa_mask_row_range(13, 13, -1, 0, 0, false, true, SWA_MUTANT_WINDOW_OFF_NOT_NORMALISED);
    cr_expect(r.lo == 14 && r.hi == 13, "[%d, %d]", r.lo, r.hi);
    /* a causal row at p < 0 is empty */
    r = swa_mask_row_range(-3, -3, -1, 0, 0, false, true, SWA_MUTANT_NONE);
    cr_expect(r.lo > r.hi);

    /* prefill KV end: causal p_last + 1, band p_last + R + 1, unbounded chunk end */
    cr_expect_eq(swa_prefill_kv_end(1000, 99, true, 0, SWA_MUTANT_NONE), 100);
    cr_expect_eq(swa_prefill_kv_end(1000, 99, false, 17, SWA_MUTANT_NONE), 117);
    cr_expect_eq(swa_prefill_kv_end(1000, 99, false, -1, SWA_MUTANT_NONE), 1000);
    cr_expect_eq(swa_prefill_kv_end(1000, 99, false, 17, SWA_MUTANT_NONCAUSAL_SPAN_AS_CAUSAL), 100);
    cr_expect_eq(swa_prefill_kv_end(1000, -5, true, 0, SWA_MUTANT_NONE), 0, "rows before key 0 load nothing");
    /* prefill KV begin: the chunk of the tile's first row, aligned to the KV tile */
    cr_expect_eq(swa_prefill_kv_begin(0, 300, 300, -1, 128, 64, SWA_MUTANT_NONE), 256);
    cr_expect_eq(swa_prefill_kv_begin(0, 300, 300, 10, 128, 64, SWA_MUTANT_NONE), 256);
    cr_expect_eq(swa_prefill_kv_begin(0, 300, 300, 10, 0, 64, SWA_MUTANT_NONE), 256);
    cr_expect_eq(swa_prefill_kv_begin(0, 300, 300, -1, 0, 64, SWA_MUTANT_NONE), 0);
    /* GQA: tile 1 of 64 packed rows at group 8 starts at query row 8, not 64 */
    cr_expect_eq(swa_tile_first_row(64, 8, SWA_MUTANT_NONE), 8);
    cr_expect_eq(swa_tile_first_row(64, 8, SWA_MUTANT_GQA_PACKED_ROW_BOUND), 64);
    /* decode window start: chunk start of p = kv_len - 1 */
    cr_expect_eq(swa_decode_window_start(14, -1, 8, SWA_MUTANT_NONE), 8);
    cr_expect_eq(swa_decode_window_start(9, -1, 8, SWA_MUTANT_NONE), 8);
    cr_expect_eq(swa_decode_window_start(9, 3, 0, SWA_MUTANT_NONE), 5);
    /* empty states store 0, never 0 * inf */
    cr_expect_eq(swa_state_inv_sum(0.0f, SWA_MUTANT_NONE), 0.0f);
    cr_expect(isinf(swa_state_inv_sum(0.0f, SWA_MUTANT_EMPTY_ROW_NAN)));
}

/* ---------------------------------------------------------------------------
 * host emulation */

static void expect_host_matches(const swa_backend *b, int B, const int *qo, const int *kv, const kind_spec *k,
                                swa_kv_mode mode, int hq, int hk, const char *what)
{
    fx f;
    setup_kind(&f, B, qo, kv, k, hq, hk, mode, SWA_DTYPE_FP16);
    swa_error err = {0};
    cr_assert_eq(fx_run(&f, b, SWA_MUTANT_NONE, true, &err), SWA_OK, "%s: %s", what, err.message);
    double worst;
    long bad = fx_out_mismatches(&f, fx_tol(SWA_DTYPE_FP16), fx_tol(SWA_DTYPE_FP16), &worst);
    cr_expect_eq(bad, 0, "%s (L %d, R %d, C %d, causal %d): %ld mismatches, worst %g", what, k->window_left,
                 k->window_right, k->chunk_size, !k->noncausal, bad, worst);
    cr_expect_eq(fx_lse_mismatches(&f, 2.0, 1e-2), 0, "%s: LSE", what);
    /* empty rows: exactly 0 (not -0 by accident of NaN) and LSE -inf */
    for (size_t i = 0; i < f.lse_elems; i++)
        if (isinf(f.ref_lse[i])) {
            cr_expect(isinf(f.o.lse[i]) && f.o.lse[i] < 0, "%s: empty row LSE %g", what, f.o.lse[i]);
            for (int e = 0; e < f.c.head_dim; e++)
                cr_expect_eq(swa_load(f.c.dtype, f.o.out, i * f.c.head_dim + e), 0.0f, "%s: empty row output",
                             what);
        }
    cr_expect(fx_guards_ok(&f), "%s: guard bytes", what);
    fx_teardown(&f);
}

Test(window_kinds, host_prefill_paged_ragged_split)
{
    /* a long request makes the planner split KV (few CTAs, many keys) */
    const int qo[] = {12, 20, 300}, kv[] = {17, 7, 2100};
    for (int k = 0; k < NKINDS; k++) {
        expect_host_matches(&swa_backend_prefill, 3, qo, kv, &KINDS[k], SWA_KV_PAGED, 8, 1, "prefill paged");
        expect_host_matches(&swa_backend_prefill, 3, qo, kv, &KINDS[k], SWA_KV_RAGGED, 4, 2, "prefill ragged");
    }
}

Test(window_kinds, host_decode_fa2_chunks)
{
    const int qo[] = {1, 1, 1, 1, 1}, kv[] = {9, 14, 16, 129, 3000};
    const kind_spec chunks[] = {{false, -1, 0, 8}, {false, -1, 0, 1}, {false, -1, 0, 1024}, {true, 3, 2, 0}};
    for (int k = 0; k < 4; k++)
        expect_host_matches(&swa_backend_decode_fa2, 5, qo, kv, &chunks[k], SWA_KV_PAGED, 8, 2, "decode_fa2");
}

Test(window_kinds, decode_aiter_refuses_chunks)
{
    const int qo[] = {1}, kv[] = {40};
    kind_spec k = {false, -1, 0, 8};
    fx f;
    setup_kind(&f, 1, qo, kv, &k, 4, 4, SWA_KV_PAGED, SWA_DTYPE_FP16);
    char why[256];
    const char *reason = swa_backend_decode_aiter.supports(&f.c, &swa_host_device_ops, why, sizeof why);
    cr_assert_not_null(reason, "decode_aiter must refuse chunked attention");
    cr_expect(strstr(reason, "chunked local attention") != NULL, "%s", reason);
    swa_error err = {0};
    cr_expect_eq(fx_run(&f, &swa_backend_decode_aiter, SWA_MUTANT_NONE, false, &err), SWA_ERR_UNSUPPORTED);
    fx_teardown(&f);
}

/* ---------------------------------------------------------------------------
 * mutants: each changes the output of a case made for it, on the host */

static long mutant_mismatches(const swa_backend *b, swa_mutant m, int B, const int *qo, const int *kv,
                              const kind_spec *k, int hq, int hk)
{
    fx f;
    setup_kind(&f, B, qo, kv, k, hq, hk, SWA_KV_PAGED, SWA_DTYPE_FP16);
    swa_error err = {0};
    cr_assert_eq(fx_run(&f, b, SWA_MUTANT_NONE, true, &err), SWA_OK, "%s", err.message);
    cr_assert_eq(fx_out_mismatches(&f, fx_tol(SWA_DTYPE_FP16), fx_tol(SWA_DTYPE_FP16), NULL), 0,
                 "unmutated %s must pass", swa_mutant_get(m)->name);
    cr_assert_eq(fx_run(&f, b, m, true, &err), SWA_OK, "%s", err.message);
    long bad = fx_out_mismatches(&f, fx_tol(SWA_DTYPE_FP16), fx_tol(SWA_DTYPE_FP16), NULL);
    fx_teardown(&f);
    return bad;
}

Test(window_kinds, mutants_killed_on_host)
{
    const int qo[] = {12, 64}, kv[] = {17, 200};
    const kind_spec band = {true, 3, 2, 0}, right_only = {true, -1, 4, 0}, chunk = {false, -1, 0, 8};
    const kind_spec off = {false, -1, 0, 0};
    cr_expect_gt(mutant_mismatches(&swa_backend_prefill, SWA_MUTANT_RIGHT_BOUND_DROPPED, 2, qo, kv, &band, 4, 2), 0);
    /* several query tiles per request: a tile's span must reach p_last + R */
    const int tqo[] = {300}, tkv[] = {400};
    cr_expect_gt(mutant_mismatches(&swa_backend_prefill, SWA_MUTANT_NONCAUSAL_SPAN_AS_CAUSAL, 1, tqo, tkv,
                                   &right_only, 4, 2), 0);
    cr_expect_gt(mutant_mismatches(&swa_backend_prefill, SWA_MUTANT_CHUNK_AS_WINDOW, 2, qo, kv, &chunk, 4, 2), 0);
    cr_expect_gt(mutant_mismatches(&swa_backend_prefill, SWA_MUTANT_CHUNK_START_OFF_BY_ONE, 2, qo, kv, &chunk, 4, 2),
                 0);
    cr_expect_gt(mutant_mismatches(&swa_backend_prefill, SWA_MUTANT_WINDOW_OFF_NOT_NORMALISED, 2, qo, kv, &off, 4, 2),
                 0);
    const int dqo[] = {1, 1, 1}, dkv[] = {9, 14, 300};
    cr_expect_gt(mutant_mismatches(&swa_backend_decode_fa2, SWA_MUTANT_CHUNK_AS_WINDOW, 3, dqo, dkv, &chunk, 4, 2), 0);
    cr_expect_gt(mutant_mismatches(&swa_backend_decode_fa2, SWA_MUTANT_CHUNK_START_OFF_BY_ONE, 3, dqo, dkv, &chunk, 4,
                                   2), 0);
    cr_expect_gt(mutant_mismatches(&swa_backend_decode_fa2, SWA_MUTANT_WINDOW_OFF_NOT_NORMALISED, 3, dqo, dkv, &off, 4,
                                   2), 0);
    /* empty rows: qo > kv */
    const int eqo[] = {20}, ekv[] = {7};
    cr_expect_gt(mutant_mismatches(&swa_backend_prefill, SWA_MUTANT_EMPTY_ROW_NAN, 1, eqo, ekv, &off, 4, 2), 0);
    /* GQA group 8: a 64-row tile spans 8 query rows; windows bind inside */
    const int gqo[] = {47, 64}, gkv[] = {397, 1177};
    const kind_spec win = {false, 13, 0, 0};
    cr_expect_gt(mutant_mismatches(&swa_backend_prefill, SWA_MUTANT_GQA_PACKED_ROW_BOUND, 2, gqo, gkv, &win, 32, 4), 0);
    /* ... and invisible at group 1 (the control) */
    cr_expect_eq(mutant_mismatches(&swa_backend_prefill, SWA_MUTANT_GQA_PACKED_ROW_BOUND, 2, gqo, gkv, &win, 4, 4), 0);
}

/* ---------------------------------------------------------------------------
 * loader defaults */

static swa_case_list load_text(const char *text) { return load_inline_case("kinds.json", text); }

Test(window_kinds, loader_defaults_and_values)
{
    swa_case_list l = load_text("{\"name\": \"a\", \"requests\": [{\"qo_len\": 9, \"kv_len\": 4}], \"num_qo_heads\": 2, "
                                "\"num_kv_heads\": 1, \"head_dim\": 64, \"dtype\": \"fp16\", \"window_left\": 2, "
                                "\"causal\": [true, false], \"window_right\": -1, \"backends\": [\"prefill\"]}");
    cr_assert_eq(l.count, 2);
    cr_expect(l.cases[0].causal && l.cases[0].window_right == 0, "causal: -1 normalised to 0");
    cr_expect(!l.cases[1].causal && l.cases[1].window_right == -1);
    cr_expect_eq(l.cases[0].qo_len[0], 9, "qo_len > kv_len is a valid prefill case");
    swa_case_list_free(&l);
    l = load_text("{\"name\": \"b\", \"requests\": [{\"qo_len\": 1, \"kv_len\": 40}], \"num_qo_heads\": 2, "
                  "\"num_kv_heads\": 1, \"head_dim\": 64, \"dtype\": \"fp16\", \"window_left\": -1, "
                  "\"attention_chunk_size\": [8, 16], \"backends\": [\"prefill\", \"decode_fa2\"]}");
    cr_assert_eq(l.count, 0 + 2);
    cr_expect(l.cases[0].chunk_size == 8 && l.cases[1].chunk_size == 16 && l.cases[0].window_right == 0);
    swa_case_list_free(&l);
}
