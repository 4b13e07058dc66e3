/* test_reference_lowp.c — the low-precision emulated reference used by the
 * baseline-relative tolerance mode (docs/spec.md).
 *
 *   ctest --test-dir build -R test_reference_lowp --output-on-failure
 *
 * What users rely on: in fp32 it is the exact answer up to fp32 rounding; in
 * fp16/bf16 its error against the exact reference is real (non-zero) and of
 * the size the dtype's unit roundoff predicts, so `factor * that error` is a
 * meaningful tolerance; and each rounding step is the documented one
 * (checked by hand on a two-key case). */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "reference/reference.h"

typedef struct lcase {
    swa_case c;
    swa_inputs in;
    int qo_len[4], kv_len[4], qo_indptr[5], kv_indptr[5];
} lcase;

static uint64_t l_next(uint64_t *s) /* xorshift64* */
{
    uint64_t x = *s;
    x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}
static double l_normal(uint64_t *s)
{
    double u1 = ((l_next(s) >> 11) + 1.0) / 9007199254740993.0, u2 = (l_next(s) >> 11) / 9007199254740992.0;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

static void lcase_make(lcase *t, int B, const int *qo, const int *kv, int hq, int hkv, int D,
                       swa_dtype dtype, bool causal, int L, double cap, uint64_t seed)
{
    memset(t, 0, sizeof *t);
    swa_case *c = &t->c;
    swa_inputs *in = &t->in;
    snprintf(c->id, sizeof c->id, "test/lowp:%s,L=%d", swa_dtype_name(dtype), L);
    c->num_requests = in->num_requests = B;
    c->qo_len = t->qo_len;
    c->kv_len = t->kv_len;
    in->qo_indptr = t->qo_indptr;
    in->kv_indptr = t->kv_indptr;
    for (int r = 0; r < B; r++) {
        t->qo_len[r] = qo[r];
        t->kv_len[r] = kv[r];
        t->qo_indptr[r + 1] = t->qo_indptr[r] + qo[r];
        t->kv_indptr[r + 1] = t->kv_indptr[r] + kv[r];
    }
    c->num_qo_heads = in->num_qo_heads = hq;
    c->num_kv_heads = in->num_kv_heads = hkv;
    c->head_dim = in->head_dim = D;
    c->dtype = in->dtype = dtype;
    c->causal = causal;
    c->window_left = L;
    c->window_right = causal ? 0 : -1;
    c->soft_cap = cap;
    c->sm_scale = 1.0 / sqrt((double)D);
    in->total_qo = t->qo_indptr[B];
    in->total_kv = t->kv_indptr[B];
    size_t nq = (size_t)in->total_qo * hq * D, nk = (size_t)in->total_kv * hkv * D;
    in->q = malloc((nq + 1) * sizeof(float));
    in->k = malloc((nk + 1) * sizeof(float));
    in->v = malloc((nk + 1) * sizeof(float));
    cr_assert(in->q && in->k && in->v);
    uint64_t s = seed * 0x9E3779B97F4A7C15ULL + 7;
    for (size_t i = 0; i < nq; i++) in->q[i] = swa_round_to(dtype, (float)(2.0 * l_normal(&s)));
    for (size_t i = 0; i < nk; i++) in->k[i] = swa_round_to(dtype, (float)l_normal(&s));
    for (size_t i = 0; i < nk; i++) in->v[i] = swa_round_to(dtype, (float)l_normal(&s));
}

static void lcase_free(lcase *t) { free(t->in.q); free(t->in.k); free(t->in.v); }

typedef struct lowp_error {
    double max_abs, mean_abs, max_lse, v_max;
} lowp_error;

/* Error of the low-precision reference against the exact one. */
static lowp_error lowp_vs_exact(const lcase *t)
{
    size_t nl = (size_t)t->in.total_qo * t->c.num_qo_heads, n = nl * t->c.head_dim;
    double *ex = malloc(n * sizeof *ex), *exl = malloc(nl * sizeof *exl);
    float *lo = malloc(n * sizeof *lo), *lol = malloc(nl * sizeof *lol);
    cr_assert(ex && exl && lo && lol);
    swa_error err = {0};
    cr_assert_eq(swa_reference(&t->c, &t->in, NULL, ex, exl, &err), SWA_OK, "%s", err.message);
    cr_assert_eq(swa_reference_lowp(&t->c, &t->in, lo, lol, &err), SWA_OK, "%s", err.message);
    lowp_error e = {0};
    for (size_t i = 0; i < (size_t)t->in.total_kv * t->c.num_kv_heads * t->c.head_dim; i++)
        e.v_max = fmax(e.v_max, fabs(t->in.v[i]));
    for (size_t i = 0; i < n; i++) {
        cr_assert(swa_round_to(t->c.dtype, lo[i]) == lo[i], "%s: out[%zu] = %.9g is not a %s value",
                  t->c.id, i, lo[i], swa_dtype_name(t->c.dtype));
        double d = fabs(lo[i] - ex[i]);
        e.max_abs = fmax(e.max_abs, d);
        e.mean_abs += d / (double)n;
    }
    for (size_t i = 0; i < nl; i++)
        e.max_lse = fmax(e.max_lse, fabs(lol[i] - exl[i]) / fmax(1.0, fabs(exl[i])));
    free(ex); free(exl); free(lo); free(lol);
    return e;
}

Test(reference_lowp, fp32_is_the_exact_answer_to_fp32_rounding)
{
    const int qo[] = {40, 1, 1}, kv[] = {100, 64, 300};
    for (int L = -1; L <= 63; L += 32) {
        lcase t;
        lcase_make(&t, 3, qo, kv, 8, 2, 64, SWA_DTYPE_FP32, true, L, L == 31 ? 20.0 : 0.0, 11 + L);
        lowp_error e = lowp_vs_exact(&t);
        /* fp32 unit roundoff 6e-8; dot products of 64 terms and sums of a few
         * hundred weights stay well inside 1e-5 of the largest |v| */
        cr_assert(e.max_abs <= 1e-5 * e.v_max, "L=%d: max |lowp - exact| = %.3g (max |v| %.3g)", L,
                  e.max_abs, e.v_max);
        cr_assert(e.max_lse <= 1e-5, "L=%d: LSE relative error %.3g", L, e.max_lse);
        lcase_free(&t);
    }
}

/* The error a kernel in the case dtype makes is the yardstick of the
 * baseline mode, so it must be there (non-zero) and of the dtype's size:
 * with unit roundoff u (fp16 2^-11, bf16 2^-8), rounding the output costs
 * up to u|o|, rounding the weights up to u sum p|v|, and rounding the
 * logits (|s| of a few units) perturbs weights by about u|s|, so the error
 * stays within a few u max|v| (measured: 1.2-1.6 u max|v|, mean 0.4-0.5 u
 * with N(0,1) values) and its mean is a sizeable fraction of u. */
Test(reference_lowp, fp16_bf16_error_has_the_dtype_magnitude)
{
    const int qo[] = {33, 1}, kv[] = {80, 200};
    const swa_dtype dts[] = {SWA_DTYPE_FP16, SWA_DTYPE_BF16};
    for (int di = 0; di < 2; di++)
        for (int cap = 0; cap < 2; cap++) {
            double u = dts[di] == SWA_DTYPE_FP16 ? ldexp(1, -11) : ldexp(1, -8);
            lcase t;
            lcase_make(&t, 2, qo, kv, 4, 1, 128, dts[di], true, 47, cap ? 10.0 : 0.0, 3 + di + cap);
            lowp_error e = lowp_vs_exact(&t);
            cr_log_info("%s cap=%d: max %.3g mean %.3g (u %.3g, max|v| %.3g), lse %.3g",
                        swa_dtype_name(dts[di]), cap, e.max_abs, e.mean_abs, u, e.v_max, e.max_lse);
            cr_assert(e.max_abs > 0 && e.mean_abs > 0.1 * u,
                      "%s cap=%d: error vs exact is %.3g (mean %.3g): the rounding is not emulated",
                      swa_dtype_name(dts[di]), cap, e.max_abs, e.mean_abs);
            cr_assert(e.max_abs <= 4 * u * e.v_max,
                      "%s cap=%d: max error %.3g exceeds 4 u max|v| = %.3g", swa_dtype_name(dts[di]),
                      cap, e.max_abs, 4 * u * e.v_max);
            cr_assert(e.max_lse <= 4 * u, "%s cap=%d: LSE error %.3g", swa_dtype_name(dts[di]), cap,
                      e.max_lse);
            lcase_free(&t);
        }
}

/* Two keys, fp16, head_dim 2, sm_scale 1: q = (1, 0), k0 = (0, 0), k1 = (1, 0)
 * -> logits (0, 1), exact in fp16.  Weights in fp32: 1/(1+e) = 0.26894142,
 * e/(1+e) = 0.73105858; rounded to fp16 (spacing 2^-12 in [0.25, 0.5),
 * 2^-11 in [0.5, 1)): 1102 * 2^-12 = 0.26904296875 and 1497 * 2^-11 =
 * 0.73095703125.  With v0 = (1, 100), v1 = (0, 1):
 *   out[0] = p0 = 0.26904296875 (the exact reference: 0.2689414213699951);
 *   out[1] = 100 p0 + p1 = 26.904296875 + 0.73095703125 = 27.63525390625
 *            (exact in fp32), rounded to fp16 (spacing 2^-6 in [16, 32)):
 *            1768.66 * 2^-6 -> 1769 * 2^-6 = 27.640625.
 *   Unrounded weights would give 27.6252 -> 27.625: the weight rounding shows.
 * LSE = 1 + log(1 + e^-1) in fp32 = 1.3132617 (not rounded to fp16). */
Test(reference_lowp, weight_rounding_by_hand)
{
    const int qo = 1, kv = 2;
    lcase t;
    lcase_make(&t, 1, &qo, &kv, 1, 1, 2, SWA_DTYPE_FP16, true, -1, 0.0, 1);
    t.c.sm_scale = 1.0;
    const float q[] = {1, 0}, k[] = {0, 0, 1, 0}, v[] = {1, 100, 0, 1};
    memcpy(t.in.q, q, sizeof q);
    memcpy(t.in.k, k, sizeof k);
    memcpy(t.in.v, v, sizeof v);
    float out[2], lse;
    swa_error err = {0};
    cr_assert_eq(swa_reference_lowp(&t.c, &t.in, out, &lse, &err), SWA_OK, "%s", err.message);
    cr_assert(out[0] == 0.26904296875f && out[1] == 27.640625f,
              "out = (%.11g, %.11g), by hand (0.26904296875, 27.640625)", out[0], out[1]);
    cr_assert(fabsf(lse - 1.3132617f) <= 2e-7f, "lse = %.9g, by hand 1.3132617", lse);
    lcase_free(&t);
}

/* Score rounding, bf16, head_dim 2, sm_scale 1/3: q = (1, 0), k0 = (100, 0),
 * k1 = (96, 0).  fp32 scores 100 * 0.33333334f = 33.333336 and 96 *
 * 0.33333334f = 32.0; rounded to bf16 (spacing 0.25 in [32, 64)): 33.25 and
 * 32.  Softmax in fp32: m = 33.25, e = (1, exp(-1.25) = 0.28650481),
 * sum = 1.2865047, p = (0.77729988, 0.22270015), rounded to bf16 (spacing
 * 2^-8 in [0.5, 1), 2^-10 in [0.125, 0.25)): 199 * 2^-8 = 0.77734375 and
 * 228 * 2^-10 = 0.22265625.  With v0 = (1, 0), v1 = (0, 1) that is the
 * output.  Unrounded scores (difference 4/3) would give p0 = 0.79139 ->
 * 0.79296875.  LSE = 33.25 + log(1.2865047) = 33.50193 (fp32). */
Test(reference_lowp, score_rounding_by_hand)
{
    const int qo = 1, kv = 2;
    lcase t;
    lcase_make(&t, 1, &qo, &kv, 1, 1, 2, SWA_DTYPE_BF16, false, -1, 0.0, 1);
    t.c.sm_scale = 1.0 / 3.0;
    const float q[] = {1, 0}, k[] = {100, 0, 96, 0}, v[] = {1, 0, 0, 1};
    memcpy(t.in.q, q, sizeof q);
    memcpy(t.in.k, k, sizeof k);
    memcpy(t.in.v, v, sizeof v);
    float out[2], lse;
    swa_error err = {0};
    cr_assert_eq(swa_reference_lowp(&t.c, &t.in, out, &lse, &err), SWA_OK, "%s", err.message);
    cr_assert(out[0] == 0.77734375f && out[1] == 0.22265625f,
              "out = (%.11g, %.11g), by hand (0.77734375, 0.22265625)", out[0], out[1]);
    cr_assert(fabsf(lse - 33.50193f) <= 4e-6f, "lse = %.9g, by hand 33.50193", lse);
    lcase_free(&t);
}

/* A single visible key (window 0): weight exactly 1, so the output is that
 * key's V row bit for bit and the LSE is its rounded logit. */
Test(reference_lowp, single_visible_key_is_exact)
{
    const int qo = 6, kv = 9;
    const swa_dtype dts[] = {SWA_DTYPE_FP16, SWA_DTYPE_BF16, SWA_DTYPE_FP32};
    for (int di = 0; di < 3; di++) {
        lcase t;
        lcase_make(&t, 1, &qo, &kv, 4, 2, 16, dts[di], true, 0, 0.0, 40 + di);
        float out[6 * 4 * 16], lse[6 * 4];
        swa_error err = {0};
        cr_assert_eq(swa_reference_lowp(&t.c, &t.in, out, lse, &err), SWA_OK, "%s", err.message);
        for (int i = 0; i < qo; i++)
            for (int h = 0; h < 4; h++) {
                int key = kv - qo + i, g = h / 2;
                for (int d = 0; d < 16; d++)
                    cr_assert(out[(i * 4 + h) * 16 + d] == t.in.v[(key * 2 + g) * 16 + d],
                              "%s row %d head %d d %d: %g, expected v[%d] = %g", swa_dtype_name(dts[di]),
                              i, h, d, out[(i * 4 + h) * 16 + d], key, t.in.v[(key * 2 + g) * 16 + d]);
                cr_assert(isfinite(lse[i * 4 + h]), "%s row %d head %d: lse %g", swa_dtype_name(dts[di]),
                          i, h, lse[i * 4 + h]);
            }
        lcase_free(&t);
    }
}

/* Degenerate rows (qo_len > kv_len, causal: positions before 0) get 0 and
 * -inf, as in the exact reference. */
Test(reference_lowp, empty_rows_zero_and_minus_inf)
{
    const int qo = 4, kv = 2;
    lcase t;
    lcase_make(&t, 1, &qo, &kv, 2, 1, 8, SWA_DTYPE_BF16, true, 3, 0.0, 9);
    float out[4 * 2 * 8], lse[8];
    swa_error err = {0};
    cr_assert_eq(swa_reference_lowp(&t.c, &t.in, out, lse, &err), SWA_OK, "%s", err.message);
    for (int row = 0; row < 4; row++)
        for (int h = 0; h < 2; h++) {
            bool empty = row < 2; /* p = row - 2 */
            cr_assert(empty ? isinf(lse[row * 2 + h]) && lse[row * 2 + h] < 0 : isfinite(lse[row * 2 + h]),
                      "row %d head %d: lse %g", row, h, lse[row * 2 + h]);
            if (empty)
                for (int d = 0; d < 8; d++)
                    cr_assert(out[(row * 2 + h) * 8 + d] == 0.0f, "row %d head %d d %d: %g", row, h, d,
                              out[(row * 2 + h) * 8 + d]);
        }
    lcase_free(&t);
}

/* NaN/Inf V rows of keys no row may see (inside the block's key range or
 * not) stay out of the output, as in the exact reference. */
Test(reference_lowp, nonfinite_masked_values_do_not_leak)
{
    const int qo = 20, kv = 50;
    lcase t;
    lcase_make(&t, 1, &qo, &kv, 2, 1, 8, SWA_DTYPE_FP16, true, 3, 0.0, 21);
    /* rows at p = 30..49 see [p-3, p]; key 28 is visible to rows 0 and 1 only */
    for (int k = 0; k <= 28; k++)
        for (int d = 0; d < 8; d++)
            if (k != 27)
                t.in.v[k * 8 + d] = k % 2 ? INFINITY : NAN;
    float out[20 * 2 * 8], lse[40];
    swa_error err = {0};
    cr_assert_eq(swa_reference_lowp(&t.c, &t.in, out, lse, &err), SWA_OK, "%s", err.message);
    for (int row = 0; row < qo; row++)
        for (int i = 0; i < 16; i++)
            cr_assert(row < 2 ? !isfinite(out[row * 16 + i]) : isfinite(out[row * 16 + i]),
                      "row %d elem %d = %g: %s", row, i, out[row * 16 + i],
                      row < 2 ? "sees the poisoned key 28" : "a masked key leaked");
    lcase_free(&t);
}
