/* test_reference.c — the CPU reference against a second, independent
 * oracle, plus hand-computed cases.
 *
 *   ctest --test-dir build -R test_reference --output-on-failure
 *   build/tests/test_reference --verbose      (one line per checked case)
 *
 * The oracle below is deliberately dumb and shares nothing with
 * reference/: plain loops over every (row, head, key), its own
 * element-by-element visibility predicate written from docs/spec.md; docs/bugs.md and
 * reference.h's variant definitions, its own PRNG and its own case
 * construction (swa_case / swa_inputs filled by hand; the case loader and
 * data generator are other modules).  The reference must agree with it to
 * 1e-12 relative, where "relative" means relative to sum_k p_k |v_k|, the
 * magnitude an attention output's rounding error scales with (a plain
 * |expected| would blow up on outputs that cancel to near zero). */
#include <criterion/criterion.h>

#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "reference/naive.h"
#include "reference/ref_exp.h"
#include "reference/ref_internal.h"
#include "reference/reference.h"

/* ------------------------------------------------------------------------- */
/* Test cases built by hand. */

typedef struct tcase {
    swa_case c;
    swa_inputs in;
    char desc[512];
} tcase;

static uint64_t t_rng_next(uint64_t *s) /* xorshift64* */
{
    uint64_t x = *s;
    x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}
static double t_uniform(uint64_t *s) { return (double)(t_rng_next(s) >> 11) / 9007199254740992.0; }
static double t_normal(uint64_t *s)
{
    double u1 = t_uniform(s), u2 = t_uniform(s);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}
static int t_below(uint64_t *s, int n) { return (int)(t_rng_next(s) % (uint64_t)n); }

/* Allocates the case and its inputs; q/k/v drawn from N(0, 1) * q_gain for q,
 * rounded to dtype.  Lengths are copied. */
static void tcase_make(tcase *t, int num_requests, const int *qo_len, const int *kv_len, int hq,
                       int hkv, int head_dim, swa_dtype dtype, bool causal, int window_left,
                       double soft_cap, double q_gain, uint64_t seed)
{
    memset(t, 0, sizeof *t);
    swa_case *c = &t->c;
    swa_inputs *in = &t->in;
    snprintf(c->id, sizeof c->id, "test/ref:seed=%llu", (unsigned long long)seed);
    c->num_requests = num_requests;
    c->qo_len = calloc((size_t)num_requests + 1, sizeof(int));
    c->kv_len = calloc((size_t)num_requests + 1, sizeof(int));
    c->num_qo_heads = hq;
    c->num_kv_heads = hkv;
    c->head_dim = head_dim;
    c->dtype = dtype;
    c->causal = causal;
    c->window_left = window_left;
    c->window_right = causal ? 0 : -1;
    c->soft_cap = soft_cap;
    c->sm_scale = 1.0 / sqrt((double)head_dim);
    c->seed = seed;
    in->num_requests = num_requests;
    in->qo_indptr = calloc((size_t)num_requests + 1, sizeof(int));
    in->kv_indptr = calloc((size_t)num_requests + 1, sizeof(int));
    for (int r = 0; r < num_requests; r++) {
        c->qo_len[r] = qo_len[r];
        c->kv_len[r] = kv_len[r];
        in->qo_indptr[r + 1] = in->qo_indptr[r] + qo_len[r];
        in->kv_indptr[r + 1] = in->kv_indptr[r] + kv_len[r];
    }
    in->total_qo = in->qo_indptr[num_requests];
    in->total_kv = in->kv_indptr[num_requests];
    in->num_qo_heads = hq;
    in->num_kv_heads = hkv;
    in->head_dim = head_dim;
    in->dtype = dtype;
    size_t nq = (size_t)in->total_qo * hq * head_dim, nk = (size_t)in->total_kv * hkv * head_dim;
    in->q = malloc((nq ? nq : 1) * sizeof(float));
    in->k = malloc((nk ? nk : 1) * sizeof(float));
    in->v = malloc((nk ? nk : 1) * sizeof(float));
    cr_assert(c->qo_len && c->kv_len && in->qo_indptr && in->kv_indptr && in->q && in->k && in->v);
    uint64_t s = seed * 0x9E3779B97F4A7C15ULL + 1;
    for (size_t i = 0; i < nq; i++) in->q[i] = swa_round_to(dtype, (float)(q_gain * t_normal(&s)));
    for (size_t i = 0; i < nk; i++) in->k[i] = swa_round_to(dtype, (float)t_normal(&s));
    for (size_t i = 0; i < nk; i++) in->v[i] = swa_round_to(dtype, (float)t_normal(&s));
}

static void tcase_free(tcase *t)
{
    free(t->c.qo_len); free(t->c.kv_len);
    free(t->in.qo_indptr); free(t->in.kv_indptr);
    free(t->in.q); free(t->in.k); free(t->in.v);
}

static size_t t_out_count(const tcase *t)
{
    return (size_t)t->in.total_qo * t->c.num_qo_heads * t->c.head_dim;
}

/* ------------------------------------------------------------------------- */
/* The independent oracle. */

enum { KEY_EXCLUDED = 0, KEY_VISIBLE = 1, KEY_CAPPED = 2 };

/* Class of key k for query row `row`, qo head `head_in_group` of its group,
 * straight from the definitions, one element at a time. */
static int oracle_key_class(const swa_ref_mask *m, bool causal, double soft_cap, int qo_len,
                            int kv_len, int group, int row, int head_in_group, int k)
{
    long long pos = m->align == SWA_ALIGN_TOP_LEFT ? row : (long long)kv_len - qo_len + row;
    if (k < 0 || k >= kv_len)
        return KEY_EXCLUDED;
    if (causal && k > pos)
        return KEY_EXCLUDED;
    if (m->tile_rows > 0) {
        long long packed = (long long)row * group + head_in_group;
        long long first_row = (packed / m->tile_rows * m->tile_rows) / group;
        long long first_pos = m->align == SWA_ALIGN_TOP_LEFT ? first_row
                                                              : (long long)kv_len - qo_len + first_row;
        long long start = m->window_left >= 0 ? first_pos - m->window_left : 0;
        if (start < 0)
            start = 0;
        start = start / m->tile_kv_align * m->tile_kv_align;
        return k >= start ? KEY_VISIBLE : KEY_EXCLUDED;
    }
    if (m->window_left >= 0) {
        long long anchor = m->anchor_request_start ? (long long)kv_len - qo_len : pos;
        if (k < anchor - m->window_left)
            return m->softcap_before_mask && soft_cap > 0 ? KEY_CAPPED : KEY_EXCLUDED;
    }
    return KEY_VISIBLE;
}

/* out/lse as the reference's; mag[i] = sum_k p_k |v_k[d]| for each element. */
static void oracle_attention(const tcase *t, const swa_ref_mask *m, double *out, double *lse,
                             double *mag)
{
    const swa_case *c = &t->c;
    const swa_inputs *in = &t->in;
    const int Hq = c->num_qo_heads, Hkv = c->num_kv_heads, D = c->head_dim, G = Hq / Hkv;
    int max_kv = 1;
    for (int r = 0; r < c->num_requests; r++)
        if (c->kv_len[r] > max_kv) max_kv = c->kv_len[r];
    double *logit = malloc((size_t)max_kv * sizeof *logit);
    int *cls = malloc((size_t)max_kv * sizeof *cls);
    cr_assert(logit && cls);
    for (int r = 0; r < c->num_requests; r++) {
        for (int i = 0; i < c->qo_len[r]; i++) {
            for (int h = 0; h < Hq; h++) {
                size_t qi = ((size_t)in->qo_indptr[r] + i) * Hq + h;
                const float *q = in->q + qi * D;
                int kvh = h / G;
                double mx = -INFINITY;
                int n = 0;
                for (int k = 0; k < c->kv_len[r]; k++) {
                    cls[k] = oracle_key_class(m, c->causal, c->soft_cap, c->qo_len[r], c->kv_len[r],
                                              G, i, h % G, k);
                    if (cls[k] == KEY_EXCLUDED)
                        continue;
                    n++;
                    if (cls[k] == KEY_CAPPED) {
                        logit[k] = -c->soft_cap;
                    } else {
                        const float *kk = in->k + (((size_t)in->kv_indptr[r] + k) * Hkv + kvh) * D;
                        double dot = 0;
                        for (int d = 0; d < D; d++)
                            dot += (double)q[d] * (double)kk[d];
                        double s = dot * c->sm_scale;
                        if (c->soft_cap > 0)
                            s = c->soft_cap * tanh(s / c->soft_cap);
                        logit[k] = s;
                    }
                    if (logit[k] > mx) mx = logit[k];
                }
                double sum = 0;
                for (int k = 0; k < c->kv_len[r]; k++)
                    if (cls[k] != KEY_EXCLUDED)
                        sum += exp(logit[k] - mx);
                for (int k = 0; k < c->kv_len[r]; k++) /* logit -> probability */
                    if (cls[k] != KEY_EXCLUDED)
                        logit[k] = exp(logit[k] - mx) / sum;
                for (int d = 0; d < D; d++) {
                    double acc = 0, a = 0;
                    for (int k = 0; k < c->kv_len[r]; k++) {
                        if (cls[k] == KEY_EXCLUDED)
                            continue;
                        double p = logit[k];
                        double vv = in->v[(((size_t)in->kv_indptr[r] + k) * Hkv + kvh) * D + d];
                        acc += p * vv;
                        a += p * fabs(vv);
                    }
                    out[qi * D + d] = n ? acc : 0.0;
                    if (mag)
                        mag[qi * D + d] = n ? a : 0.0;
                }
                lse[qi] = n ? mx + log(sum) : -INFINITY;
            }
        }
    }
    free(logit);
    free(cls);
}

/* The oracle's answer for one case and mask, kept for several reference runs. */
typedef struct oracle_result {
    double *out, *lse, *mag;
} oracle_result;

static void oracle_run(const tcase *t, const swa_ref_mask *m, oracle_result *o)
{
    size_t n = t_out_count(t), nl = (size_t)t->in.total_qo * t->c.num_qo_heads;
    o->out = malloc((n + 1) * sizeof *o->out);
    o->lse = malloc((nl + 1) * sizeof *o->lse);
    o->mag = malloc((n + 1) * sizeof *o->mag);
    cr_assert(o->out && o->lse && o->mag);
    swa_ref_mask spec = swa_ref_mask_spec(&t->c);
    oracle_attention(t, m ? m : &spec, o->out, o->lse, o->mag);
}

static void oracle_result_free(oracle_result *o)
{
    free(o->out); free(o->lse); free(o->mag);
}

/* Runs the reference on t under mask m (NULL = spec) and asserts agreement
 * with the oracle's answer to 1e-12 relative.  Returns the worst relative
 * error. */
static double check_against(const tcase *t, const swa_ref_mask *m, const oracle_result *o)
{
    size_t n = t_out_count(t), nl = (size_t)t->in.total_qo * t->c.num_qo_heads;
    double *ro = malloc((n + 1) * sizeof *ro), *rl = malloc((nl + 1) * sizeof *rl);
    cr_assert(ro && rl);
    const double *oo = o->out, *ol = o->lse, *mag = o->mag;
    swa_error err = {0};
    swa_status st = swa_reference(&t->c, &t->in, m, ro, rl, &err);
    cr_assert_eq(st, SWA_OK, "%s: swa_reference failed: %s", t->desc, err.message);
    double worst = 0;
    const int D = t->c.head_dim, Hq = t->c.num_qo_heads;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(oo[i])) { /* a visible NaN/Inf value: the same non-finite answer */
            cr_assert(isnan(oo[i]) ? isnan(ro[i]) : ro[i] == oo[i],
                      "%s: out[row %zu, head %zu, d %zu] = %g, oracle %g", t->desc, i / D / Hq,
                      i / D % Hq, i % D, ro[i], oo[i]);
            continue;
        }
        double diff = fabs(ro[i] - oo[i]);
        double rel = diff / (mag[i] > 0 ? mag[i] : 1e-300);
        if (diff == 0)
            rel = 0;
        if (rel > worst) worst = rel;
        cr_assert(rel <= 1e-12,
                  "%s: out[row %zu, head %zu, d %zu] = %.17g, oracle %.17g (magnitude %.3g, rel %.3g)",
                  t->desc, i / D / Hq, i / D % Hq, i % D, ro[i], oo[i], mag[i], rel);
    }
    for (size_t i = 0; i < nl; i++) {
        if (isinf(ol[i])) {
            cr_assert(isinf(rl[i]) && rl[i] < 0, "%s: lse[row %zu, head %zu] = %g, oracle -inf (no visible key)",
                      t->desc, i / Hq, i % Hq, rl[i]);
            continue;
        }
        double rel = fabs(rl[i] - ol[i]) / fmax(1.0, fabs(ol[i]));
        if (rel > worst) worst = rel;
        cr_assert(rel <= 1e-12, "%s: lse[row %zu, head %zu] = %.17g, oracle %.17g", t->desc, i / Hq,
                  i % Hq, rl[i], ol[i]);
    }
    free(ro); free(rl);
    return worst;
}

static double check_against_oracle(const tcase *t, const swa_ref_mask *m)
{
    oracle_result o;
    oracle_run(t, m, &o);
    double worst = check_against(t, m, &o);
    oracle_result_free(&o);
    return worst;
}

/* ------------------------------------------------------------------------- */
/* Hand-computed cases. */

/* One request, qo_len 2, kv_len 3, one head, head_dim 2, causal, window_left
 * 1, sm_scale 0.5.  Positions: row 0 -> p = 3-2+0 = 1, row 1 -> p = 2.
 * Visible: row 0 keys [max(0,1-1), 1] = {0, 1}; row 1 keys [1, 2].
 *   k0 = (100, 0)  v0 = (1000, 1000)   -- the poison: row 1 must not see it
 *   k1 = (0, 2)    v1 = (1, 0)
 *   k2 = (2, 2)    v2 = (0, 1)
 *   q0 = (0, 1), q1 = (1, 0)
 * Row 0: s = 0.5*(q0.k0, q0.k1) = 0.5*(0, 2) = (0, 1).
 *   weights (1, e)/(1+e) = (0.2689414213699951, 0.7310585786300049)
 *   out = 0.26894*(1000,1000) + 0.73106*(1,0)
 *       = ((1000+e)/(1+e), 1000/(1+e)) = (269.6724799486251, 268.9414213699951)
 *   lse = log(e^0 + e^1) = log(1+e) = 1.3132616875182228
 * Row 1: s = 0.5*(q1.k1, q1.k2) = 0.5*(0, 2) = (0, 1): same weights,
 *   out = 0.26894*(1,0) + 0.73106*(0,1) = (0.2689414213699951, 0.7310585786300049)
 *   lse = 1.3132616875182228
 * Had row 1 seen k0 (s = 0.5*100 = 50) its output would be ~(1000, 1000). */
Test(reference_hand, window_one_edge_key_excluded)
{
    int qo = 2, kv = 3;
    tcase t;
    tcase_make(&t, 1, &qo, &kv, 1, 1, 2, SWA_DTYPE_FP32, true, 1, 0.0, 1.0, 1);
    t.c.sm_scale = 0.5;
    const float k[] = {100, 0, 0, 2, 2, 2}, v[] = {1000, 1000, 1, 0, 0, 1}, q[] = {0, 1, 1, 0};
    memcpy(t.in.k, k, sizeof k);
    memcpy(t.in.v, v, sizeof v);
    memcpy(t.in.q, q, sizeof q);
    double out[4], lse[2];
    swa_error err = {0};
    cr_assert_eq(swa_reference(&t.c, &t.in, NULL, out, lse, &err), SWA_OK, "%s", err.message);
    const double want_out[4] = {269.6724799486251, 268.9414213699951, 0.2689414213699951,
                                0.7310585786300049};
    for (int i = 0; i < 4; i++)
        cr_assert(fabs(out[i] - want_out[i]) <= 4e-16 * fabs(want_out[i]) + 1e-300,
                  "out[%d] = %.17g, by hand %.17g", i, out[i], want_out[i]);
    for (int i = 0; i < 2; i++)
        cr_assert(fabs(lse[i] - 1.3132616875182228) <= 4e-16, "lse[%d] = %.17g, by hand log(1+e)", i,
                  lse[i]);
    tcase_free(&t);
}

/* Soft cap c = 2, head_dim 1, sm_scale 1, non-causal, no window; q = 1,
 * k = (1, 3), v = (0, 1).  Raw logits (1, 3) -> capped 2 tanh(1/2) =
 * 0.9242343145200195 and 2 tanh(3/2) = 1.8102965072897328; difference
 * -0.8860621927697133.  out = v1 weight = 1 / (1 + e^-0.88606) =
 * 0.7080768794483774; lse = 1.81030 + log(1 + e^-0.88606) = 2.1554991116817757.
 * The soft-cap-before-mask variant with window_left 0 (causal, the query at
 * p = 1 sees only k1): k0 gets logit -c = -2, so the weights are those of
 * (-2, 1.8102965072897328): out = 1 / (1 + e^(-3.810296507289733)) =
 * 0.9783380183763075, lse = 1.8321965538889347; the spec gives out = 1 and
 * lse = 1.8102965072897328 exactly (one visible key). */
Test(reference_hand, soft_cap_and_softcap_before_mask)
{
    int qo = 1, kv = 2;
    tcase t;
    tcase_make(&t, 1, &qo, &kv, 1, 1, 1, SWA_DTYPE_FP32, false, -1, 2.0, 1.0, 2);
    t.c.sm_scale = 1.0;
    t.in.q[0] = 1; t.in.k[0] = 1; t.in.k[1] = 3; t.in.v[0] = 0; t.in.v[1] = 1;
    double out, lse;
    swa_error err = {0};
    cr_assert_eq(swa_reference(&t.c, &t.in, NULL, &out, &lse, &err), SWA_OK, "%s", err.message);
    cr_assert(fabs(out - 0.7080768794483774) <= 4e-16, "soft cap: out = %.17g", out);
    cr_assert(fabs(lse - 2.1554991116817757) <= 8e-16, "soft cap: lse = %.17g", lse);

    t.c.causal = true;
    t.c.window_left = 0;
    cr_assert_eq(swa_reference(&t.c, &t.in, NULL, &out, &lse, &err), SWA_OK, "%s", err.message);
    cr_assert(out == 1.0 && fabs(lse - 1.8102965072897328) <= 4e-16,
              "spec, window 0: out = %.17g lse = %.17g; expected 1 and 2 tanh(1.5)", out, lse);
    swa_ref_mask quirk = swa_ref_mask_spec(&t.c);
    quirk.softcap_before_mask = true;
    cr_assert_eq(swa_reference(&t.c, &t.in, &quirk, &out, &lse, &err), SWA_OK, "%s", err.message);
    cr_assert(fabs(out - 0.9783380183763075) <= 4e-16, "softcap before mask: out = %.17g", out);
    cr_assert(fabs(lse - 1.8321965538889347) <= 8e-16, "softcap before mask: lse = %.17g", lse);
    tcase_free(&t);
}

/* ------------------------------------------------------------------------- */
/* The mask spans against the element predicate, for every variant. */

Test(reference_mask, spans_match_element_predicate)
{
    const int windows[] = {-1, 0, 1, 2, 3, 5, 8, 31, 200};
    const int groups[] = {1, 3, 4, 8};
    const int tiles[][2] = {{0, 1}, {16, 1}, {16, 16}, {64, 16}, {128, 64}, {5, 3}};
    int checked = 0;
    for (int qo = 0; qo <= 40; qo += 7)
        for (int extra = 0; extra <= 33; extra += 11)
            for (size_t wi = 0; wi < sizeof windows / sizeof *windows; wi++)
                for (size_t gi = 0; gi < sizeof groups / sizeof *groups; gi++)
                    for (int variant = 0; variant < 16; variant++)
                        for (size_t ti = 0; ti < sizeof tiles / sizeof *tiles; ti++) {
                            int kv = qo + extra;
                            /* include the degenerate qo > kv: rows before position 0 */
                            if (extra == 33) kv = qo / 2;
                            swa_ref_mask m = {0};
                            m.window_left = windows[wi];
                            m.window_right = -1; /* right bounds and chunks: test_window_kinds.c */
                            m.align = variant & 1 ? SWA_ALIGN_TOP_LEFT : SWA_ALIGN_BOTTOM_RIGHT;
                            m.anchor_request_start = variant & 2;
                            m.softcap_before_mask = variant & 4;
                            bool causal = !(variant & 8);
                            m.tile_rows = tiles[ti][0];
                            m.tile_kv_align = tiles[ti][1];
                            int G = groups[gi];
                            for (int pr = 0; pr < qo * G; pr++) {
                                ref_row_span sp;
                                ref_row_span_compute(&m, causal, 2.5, qo, kv, G, pr, &sp);
                                for (int k = -1; k <= kv; k++) {
                                    int want = oracle_key_class(&m, causal, 2.5, qo, kv, G, pr / G,
                                                                pr % G, k);
                                    bool vis = k >= sp.visible_begin && k < sp.visible_end;
                                    bool proc = k >= sp.processed_begin && k < sp.processed_end;
                                    int got = vis ? KEY_VISIBLE : proc ? KEY_CAPPED : KEY_EXCLUDED;
                                    cr_assert_eq(got, want,
                                                 "qo=%d kv=%d L=%d G=%d causal=%d top_left=%d anchor=%d "
                                                 "capfirst=%d tile=%d/%d packed row %d key %d: span "
                                                 "says %d, definition says %d",
                                                 qo, kv, m.window_left, G, causal, variant & 1,
                                                 !!(variant & 2), !!(variant & 4), m.tile_rows,
                                                 m.tile_kv_align, pr, k, got, want);
                                    checked++;
                                }
                            }
                        }
    cr_assert(checked > 100000, "only %d elements checked", checked);
}

/* With the spec's masks and kv_len >= qo_len no row is ever empty:
 * causal rows see [max(0, p-L), p] with 0 <= p, non-empty for any L >= -1;
 * non-causal rows see [max(0, p-L), kv_len) and p <= kv_len - 1.  The same
 * holds for every variant (top-left p = i < kv_len; request anchor start
 * prefix_len - L <= p; tile start <= p_first <= p).  Empty rows therefore
 * come only from the degenerate extension qo_len > kv_len (bottom-right rows
 * at p < 0, causal) or kv_len = 0, which the reference accepts and answers
 * as FlashInfer does: output 0, LSE -inf. */
Test(reference_oracle, empty_rows_zero_and_minus_inf)
{
    const int qo[] = {5, 3, 2}, kv[] = {2, 0, 4};
    for (int causal = 0; causal < 2; causal++) {
        tcase t;
        tcase_make(&t, 3, qo, kv, 4, 2, 8, SWA_DTYPE_FP16, causal, 1, 0.0, 1.0, 77 + causal);
        snprintf(t.desc, sizeof t.desc, "degenerate qo>kv causal=%d", causal);
        size_t n = t_out_count(&t), nl = (size_t)t.in.total_qo * 4;
        double *out = malloc(n * sizeof *out), *lse = malloc(nl * sizeof *lse);
        swa_error err = {0};
        cr_assert_eq(swa_reference(&t.c, &t.in, NULL, out, lse, &err), SWA_OK, "%s", err.message);
        int empty = 0;
        for (int row = 0; row < t.in.total_qo; row++) {
            int r = row < 5 ? 0 : row < 8 ? 1 : 2, i = row - t.in.qo_indptr[r];
            long long p = (long long)kv[r] - qo[r] + i;
            bool should_be_empty = kv[r] == 0 || (causal && p < 0);
            for (int h = 0; h < 4; h++) {
                double l = lse[(size_t)row * 4 + h];
                if (should_be_empty) {
                    cr_assert(isinf(l) && l < 0, "%s: row %d head %d: lse %g, expected -inf", t.desc,
                              row, h, l);
                    for (int d = 0; d < 8; d++)
                        cr_assert(out[((size_t)row * 4 + h) * 8 + d] == 0.0,
                                  "%s: row %d head %d d %d: %g, expected 0", t.desc, row, h, d,
                                  out[((size_t)row * 4 + h) * 8 + d]);
                    empty++;
                } else {
                    cr_assert(isfinite(l), "%s: row %d head %d: lse %g, expected finite", t.desc, row,
                              h, l);
                }
            }
        }
        cr_assert(empty >= (causal ? 4 * (3 + 3) : 4 * 3), "%s: only %d empty (row, head)", t.desc,
                  empty);
        check_against_oracle(&t, NULL);
        free(out); free(lse);
        tcase_free(&t);
    }
}

/* ------------------------------------------------------------------------- */
/* Randomized agreement. */

static void random_lengths(uint64_t *s, int B, int qo_max, int kv_extra_max, bool decode, int *qo,
                           int *kv)
{
    for (int r = 0; r < B; r++) {
        qo[r] = decode ? 1 : 1 + t_below(s, qo_max);
        kv[r] = qo[r] + t_below(s, kv_extra_max + 1);
    }
}

/* Window edges relative to kv_len: 0, 1, 2, kv-2, kv-1, kv, > kv, INT_MAX
 * (p - L must not overflow), none. */
static int edge_window(int which, int kv)
{
    switch (which) {
    case 0: return 0;
    case 1: return 1;
    case 2: return 2;
    case 3: return kv - 2 > 0 ? kv - 2 : 0;
    case 4: return kv - 1 > 0 ? kv - 1 : 0;
    case 5: return kv;
    case 6: return kv + 17;
    case 7: return INT_MAX;
    default: return -1;
    }
}

Test(reference_oracle, random_window_edges_gqa_softcap)
{
    const int gqa[][2] = {{4, 4}, {8, 2}, {8, 1}};
    const swa_dtype dtypes[] = {SWA_DTYPE_FP16, SWA_DTYPE_BF16, SWA_DTYPE_FP32};
    uint64_t s = 12345;
    int cases = 0;
    double worst = 0;
    for (int which = 0; which < 9; which++)
        for (int gi = 0; gi < 3; gi++)
            for (int mode = 0; mode < 4; mode++) {
                /* mode: 0 causal prefill, 1 causal decode, 2 non-causal, 3 soft-capped causal */
                int B = 1 + t_below(&s, 3), qo[3], kv[3];
                random_lengths(&s, B, 40, 60, mode == 1, qo, kv);
                int L = edge_window(which, kv[0]);
                double cap = mode == 3 ? (t_below(&s, 2) ? 2.0 : 30.0) : 0.0;
                int D = (int[]){1, 3, 16, 64}[t_below(&s, 4)];
                uint64_t seed = t_rng_next(&s);
                tcase t;
                tcase_make(&t, B, qo, kv, gqa[gi][0], gqa[gi][1], D, dtypes[cases % 3], mode != 2, L,
                           cap, mode == 3 ? 4.0 : 1.0, seed);
                snprintf(t.desc, sizeof t.desc,
                         "B=%d qo0=%d kv0=%d L=%d (edge %d) heads %d/%d D=%d causal=%d cap=%g %s seed=%llu",
                         B, qo[0], kv[0], L, which, gqa[gi][0], gqa[gi][1], D, mode != 2, cap,
                         swa_dtype_name(t.c.dtype), (unsigned long long)seed);
                double w = check_against_oracle(&t, NULL);
                if (w > worst) worst = w;
                cr_log_info("%s: worst rel %.3g", t.desc, w);
                tcase_free(&t);
                cases++;
            }
    cr_log_info("%d cases, worst relative difference %.3g", cases, worst);
}

/* Long rows so items span many row blocks (and, forced small, many more);
 * the window edge lands inside blocks at every offset. */
Test(reference_oracle, row_blocks_and_threads)
{
    const int qo[] = {300, 1, 77}, kv[] = {420, 300, 77};
    const int Ls[] = {0, 5, 63, 64, 299, 1000, -1};
    for (size_t li = 0; li < sizeof Ls / sizeof *Ls; li++)
        for (int causal = 0; causal < 2; causal++) {
            tcase t;
            tcase_make(&t, 3, qo, kv, 8, 1, 32, SWA_DTYPE_BF16, causal, Ls[li], 0.0, 1.0, 900 + li);
            oracle_result o;
            oracle_run(&t, NULL, &o);
            for (int target = 0; target <= 40; target += 40) {
                ref_set_block_rows_target(target == 0 ? 0 : 24 + (int)li);
                for (int threads = 1; threads <= 3; threads += 2) {
                    swa_reference_set_threads(threads);
                    snprintf(t.desc, sizeof t.desc, "L=%d causal=%d block target=%d threads=%d", Ls[li],
                             causal, target ? 24 + (int)li : 0, threads);
                    check_against(&t, NULL, &o);
                }
            }
            oracle_result_free(&o);
            ref_set_block_rows_target(0);
            swa_reference_set_threads(0);
            tcase_free(&t);
        }
}

/* The variants `explain` relies on, against the oracle's own definitions. */
Test(reference_oracle, mask_variants)
{
    const int qo[] = {37, 12}, kv[] = {90, 12};
    uint64_t s = 4242;
    for (int variant = 0; variant < 6; variant++)
        for (int causal = 0; causal < 2; causal++)
            for (int G = 1; G <= 8; G *= 2) {
                int L = (int[]){4, 0, 31, 1}[t_below(&s, 4)];
                tcase t;
                tcase_make(&t, 2, qo, kv, 2 * G, 2, 8, SWA_DTYPE_FP16, causal, L,
                           variant == 4 ? 5.0 : 0.0, 2.0, 31 * variant + G);
                swa_ref_mask m = swa_ref_mask_spec(&t.c);
                const char *name = "";
                switch (variant) {
                case 0: name = "window L+1"; m.window_left = L + 1; break;
                case 1: name = "top-left"; m.align = SWA_ALIGN_TOP_LEFT; break;
                case 2: name = "request anchored"; m.anchor_request_start = true; break;
                case 3: name = "tile 16/align 16"; m.tile_rows = 16; m.tile_kv_align = 16; break;
                case 4: name = "soft cap before mask"; m.softcap_before_mask = true; break;
                case 5: name = "tile 64/align 1"; m.tile_rows = 64; m.tile_kv_align = 1; break;
                }
                snprintf(t.desc, sizeof t.desc, "variant %s L=%d causal=%d G=%d", name, L, causal, G);
                check_against_oracle(&t, &m);
                tcase_free(&t);
            }
}

/* Masked keys are excluded, not weighted by zero: NaN/Inf in K or V of a
 * masked key must not reach any output, also when the key sits inside the
 * key range a row block computes (it is visible to the block's first rows). */
Test(reference_oracle, nonfinite_masked_keys_do_not_leak)
{
    int qo = 20, kv = 50;
    for (int poison = 0; poison < 3; poison++) {
        tcase t;
        tcase_make(&t, 1, &qo, &kv, 4, 2, 16, SWA_DTYPE_FP16, true, 3, 0.0, 1.0, 5 + poison);
        /* rows sit at p = 30..49 and see [p-3, p]: keys 0..26 are outside
         * every window, key 28 is seen by rows 0 and 1 (p = 30, 31) only */
        float bad = poison == 0 ? NAN : poison == 1 ? INFINITY : -INFINITY;
        for (int k = 0; k <= 28; k++)
            for (int i = 0; i < 2 * 16; i++) {
                if (k == 27)
                    continue;
                t.in.v[(size_t)k * 32 + i] = bad;
                if (poison == 0 && k < 27)
                    t.in.k[(size_t)k * 32 + i] = bad;
            }
        snprintf(t.desc, sizeof t.desc, "poisoned masked keys (%g)", bad);
        size_t n = t_out_count(&t);
        double *out = malloc(n * sizeof *out), lse[80];
        swa_error err = {0};
        cr_assert_eq(swa_reference(&t.c, &t.in, NULL, out, lse, &err), SWA_OK, "%s", err.message);
        for (size_t i = 0; i < n; i++) {
            size_t row = i / (4 * 16);
            cr_assert(row < 2 ? !isfinite(out[i]) : isfinite(out[i]),
                      "%s: out[row %zu, elem %zu] = %g: %s", t.desc, row, i % 64, out[i],
                      row < 2 ? "the row sees the poisoned key 28" : "a masked key leaked");
        }
        check_against_oracle(&t, NULL);
        free(out);
        tcase_free(&t);
    }
}

/* A larger shape (head_dim 256, GQA 8, kv 700) once, at production scale. */
Test(reference_oracle, model_sized_head_dim)
{
    const int qo[] = {130, 1}, kv[] = {700, 512};
    tcase t;
    tcase_make(&t, 2, qo, kv, 8, 1, 256, SWA_DTYPE_BF16, true, 127, 50.0, 3.0, 99);
    snprintf(t.desc, sizeof t.desc, "head_dim 256, 8/1 heads, L=127, cap 50");
    check_against_oracle(&t, NULL);
    tcase_free(&t);
}

/* The bench's naive copy must compute the same thing. */
Test(reference_oracle, naive_copy_agrees)
{
    const int qo[] = {17, 1, 40}, kv[] = {40, 33, 40};
    for (int L = -1; L <= 20; L += 7) {
        tcase t;
        tcase_make(&t, 3, qo, kv, 6, 2, 12, SWA_DTYPE_FP16, L != 6, L, L == 13 ? 3.0 : 0.0, 1.5, 600 + L);
        size_t n = t_out_count(&t), nl = (size_t)t.in.total_qo * 6;
        double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
        double *la = malloc(nl * sizeof *la), *lb = malloc(nl * sizeof *lb);
        swa_error err = {0};
        cr_assert_eq(swa_reference(&t.c, &t.in, NULL, a, la, &err), SWA_OK, "%s", err.message);
        cr_assert_eq(swa_reference_naive(&t.c, &t.in, b, lb, &err), SWA_OK, "%s", err.message);
        for (size_t i = 0; i < n; i++)
            cr_assert(fabs(a[i] - b[i]) <= 1e-12 * (fabs(b[i]) + 1.0), "L=%d out[%zu]: %.17g vs naive %.17g",
                      L, i, a[i], b[i]);
        for (size_t i = 0; i < nl; i++)
            cr_assert(fabs(la[i] - lb[i]) <= 1e-12 * (fabs(lb[i]) + 1.0), "L=%d lse[%zu]: %.17g vs naive %.17g",
                      L, i, la[i], lb[i]);
        free(a); free(b); free(la); free(lb);
        tcase_free(&t);
    }
}

/* Worker count and parallel mode must not change a single bit (every item
 * is computed the same way whichever thread takes it). */
Test(reference_oracle, deterministic_across_threads_and_modes)
{
    const int qo[] = {200, 1, 1}, kv[] = {260, 100, 3};
    tcase t;
    tcase_make(&t, 3, qo, kv, 4, 1, 64, SWA_DTYPE_FP16, true, 31, 0.0, 1.0, 3);
    size_t n = t_out_count(&t), nl = (size_t)t.in.total_qo * 4;
    double *base = malloc(n * sizeof *base), *other = malloc(n * sizeof *other);
    double *lbase = malloc(nl * sizeof *lbase), *lother = malloc(nl * sizeof *lother);
    swa_error err = {0};
    swa_reference_set_threads(1);
    cr_assert_eq(swa_reference(&t.c, &t.in, NULL, base, lbase, &err), SWA_OK, "%s", err.message);
    for (int threads = 2; threads <= 5; threads++)
        for (int mode = 0; mode < 2; mode++) {
            swa_reference_set_threads(threads);
            ref_set_parallel_mode(mode ? REF_PAR_BLAS : REF_PAR_WORKERS);
            cr_assert_eq(swa_reference(&t.c, &t.in, NULL, other, lother, &err), SWA_OK, "%s", err.message);
            cr_assert(memcmp(base, other, n * sizeof *base) == 0 && memcmp(lbase, lother, nl * sizeof *lbase) == 0,
                      "threads=%d mode=%s: output differs from the single-threaded run", threads,
                      mode ? "blas" : "workers");
        }
    ref_set_parallel_mode(REF_PAR_WORKERS);
    swa_reference_set_threads(0);
    free(base); free(other); free(lbase); free(lother);
    tcase_free(&t);
}

/* Requests without query rows, and a batch of none, are fine and touch
 * nothing; the OpenBLAS thread count the caller set survives a call. */
Test(reference_oracle, zero_rows_and_blas_threads_restored)
{
    const int qo[] = {0, 4, 0}, kv[] = {5, 9, 0};
    tcase t;
    tcase_make(&t, 3, qo, kv, 2, 1, 8, SWA_DTYPE_FP16, true, 2, 0.0, 1.0, 17);
    snprintf(t.desc, sizeof t.desc, "requests with qo_len 0");
    check_against_oracle(&t, NULL);
    openblas_set_num_threads(2); /* capped at the CPUs OpenBLAS found */
    int blas_threads = openblas_get_num_threads();
    t.c.num_requests = t.in.num_requests = 0;
    t.in.total_qo = t.in.total_kv = 0;
    swa_error err = {0};
    cr_assert_eq(swa_reference(&t.c, &t.in, NULL, NULL, NULL, &err), SWA_OK, "empty batch: %s", err.message);
    cr_assert_eq(openblas_get_num_threads(), blas_threads,
                 "the caller's OpenBLAS thread count (%d) was not restored", blas_threads);
    tcase_free(&t);
}

/* ------------------------------------------------------------------------- */
/* The softmax's exp (reference/ref_exp.h) against libm's. */

Test(ref_exp, within_one_ulp_of_libm_on_the_softmax_domain)
{
    ref_exp_init();
    double worst = 0, worst_x = 0;
    long points = 0;
    /* a dense sweep of [-746, 0] (steps not commensurate with ln2/128) */
    for (double x = -746.0; x <= 0.0; x += 0.000173) {
        double got = ref_exp_nonpositive(x), want = exp(x);
        double err;
        if (want >= 0x1p-1022) /* normal: in ulps of the libm value */
            err = fabs(got - want) / (nextafter(want, INFINITY) - want);
        else /* subnormal or zero: in units of the smallest subnormal */
            err = fabs(got - want) / 0x1p-1074;
        if (err > worst) { worst = err; worst_x = x; }
        points++;
    }
    cr_assert(worst <= 1.0, "ref_exp is %.2f ulp from libm at x = %.17g (%ld points)", worst, worst_x, points);
    cr_log_info("ref_exp: worst %.2f ulp over %ld points", worst, points);

    const double special[] = {0.0, -0.0, -0x1p-1074, -1e-300, -1e-17, -708.39641853226408,
                              -709.5, -745.13321910194111, -745.2, -1e300, -INFINITY};
    for (size_t i = 0; i < sizeof special / sizeof *special; i++) {
        double got = ref_exp_nonpositive(special[i]), want = exp(special[i]);
        cr_assert(got == want || fabs(got - want) <= nextafter(want, INFINITY) - want,
                  "exp(%.17g): %.17g, libm %.17g", special[i], got, want);
    }
    cr_assert(isnan(ref_exp_nonpositive(NAN)), "exp(NaN) must be NaN");
    cr_assert(ref_exp_nonpositive(0.0) == 1.0, "exp(0) must be exactly 1 (a row's maximum weighs 1)");
    cr_assert(ref_exp_nonpositive(2.0) == exp(2.0), "positive arguments go to libm");
}

/* ------------------------------------------------------------------------- */
/* Bad input gets a message, not a crash. */

Test(reference_errors, bad_shapes_are_reported)
{
    int qo = 2, kv = 4;
    tcase t;
    tcase_make(&t, 1, &qo, &kv, 4, 2, 8, SWA_DTYPE_FP16, true, 1, 0.0, 1.0, 1);
    double out[2 * 4 * 8], lse[8];
    swa_error err = {0};

    t.c.num_kv_heads = 3;
    cr_assert_eq(swa_reference(&t.c, &t.in, NULL, out, lse, &err), SWA_ERR_INVALID);
    cr_assert(strstr(err.message, "num_qo_heads=4 is not a multiple of num_kv_heads=3"), "message: %s",
              err.message);
    t.c.num_kv_heads = 2;

    t.c.kv_len[0] = 5;
    cr_assert_eq(swa_reference(&t.c, &t.in, NULL, out, lse, &err), SWA_ERR_INVALID);
    cr_assert(strstr(err.message, "request 0") && strstr(err.message, "kv_len=5"), "message: %s",
              err.message);
    t.c.kv_len[0] = 4;

    swa_ref_mask m = swa_ref_mask_spec(&t.c);
    m.tile_rows = 16;
    m.tile_kv_align = 0;
    cr_assert_eq(swa_reference(&t.c, &t.in, &m, out, lse, &err), SWA_ERR_INVALID);
    cr_assert(strstr(err.message, "tile_kv_align = 0"), "message: %s", err.message);

    m = swa_ref_mask_spec(&t.c);
    m.window_left = -5;
    cr_assert_eq(swa_reference(&t.c, &t.in, &m, out, lse, &err), SWA_ERR_INVALID);
    cr_assert(strstr(err.message, "window_left = -5"), "message: %s", err.message);

    t.c.sm_scale = NAN;
    cr_assert_eq(swa_reference(&t.c, &t.in, NULL, out, lse, &err), SWA_ERR_INVALID);
    cr_assert(strstr(err.message, "sm_scale"), "message: %s", err.message);
    tcase_free(&t);
}
