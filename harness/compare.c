/* compare.c — element-by-element comparison of a backend's output with the
 * double reference, and the statistics every report prints (docs/spec.md).
 *
 * Test: tests/test_compare.c (exact counts for constructed mismatches,
 * NaN/Inf rules, guards, unwritten elements, regions, LSE base, baseline).
 *
 * Checks run in ggml test-backend-ops order, and every element is classified
 * by the first check it fails:
 *   1. guard bytes around out and lse untouched (a write outside the buffer
 *      is its own failure, with the byte offsets);
 *   2. every element written (the harness poisons the interior with all bits
 *      set, a NaN in every dtype; an element still holding exactly that
 *      pattern was never written);
 *   3. NaN / Inf agree (NaN never equals unless tol.equal_nan, infinities
 *      match in sign);
 *   4. numeric distance |actual - expected| <= allowed.
 * The statistics are computed in full even after an early check fails: at
 * 2 a.m. the reader wants everything one run can tell.
 */
#include "harness/compare.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* ---------------------------------------------------------------------------
 * Default tolerances.  docs/cases.md (Tolerances) says the same (keep in sync):
 *
 * Element rule: |actual - expected| <= atol + rtol * |expected|, expected
 * being the double-precision reference.
 *
 *   dtype  atol    rtol    lse_atol (natural log)
 *   fp16   2e-3    2e-3    1e-2
 *   bf16   1e-2    1.6e-2  2e-2
 *   fp32   2e-5    2e-5    1e-3
 *
 * Why these numbers.  A correct FlashAttention-style kernel keeps scores and
 * softmax statistics in fp32, rounds the probabilities P to the input dtype
 * before the P.V product, accumulates in fp32 and rounds the output once.
 * With unit-variance inputs (|v| < 6 by construction of the Irwin-Hall
 * generator) the error of one output element is bounded by about
 * u * (|o| + sum_j p_j |v_j|), u being the unit roundoff (fp16 2^-11 =
 * 4.9e-4, bf16 2^-8 = 3.9e-3): the output rounding plus the P rounding.
 * For fp16 that is < 4.9e-4 * (|o| + ~3) in the worst case; for bf16 eight
 * times more.  Measured (an fp32-statistics, P-rounded, 64-key-tile online
 * softmax emulation against the double reference, head_dim 128, kv_len 1 to
 * 4096, 120 rows per dtype, x86-64): the worst element used 0.16 of the
 * fp16 allowance (max abs 1.0e-3), 0.23 of the bf16 one (max abs 7.0e-3) and
 * 0.03 of the fp32 one: margins of 6x, 4x and 40x.  rtol 1.6e-2 for bf16 is
 * torch.testing's own bf16 default; atol covers outputs near zero, where
 * cancellation leaves the P-rounding error without a relative scale.  A
 * split-KV merge that stores partials in the input dtype adds one rounding
 * and still fits.
 * The bugs this harness exists for are orders of magnitude larger: seed 000
 * saw max abs diff 0.40 (bf16), an off-by-one window over 5 visible keys
 * moves an output by ~0.2, and poisoned keys (docs/cases.md) make any leak
 * dominate.  An off-by-one over a 1024-key window moves outputs of normal
 * data by ~1e-3, inside bf16 noise: no tolerance catches that, which is why
 * the case library carries small windows, poison cases and edge data
 * ("data": "edge", core/data.c: the window's first key dominates every row,
 * so a one-key error is ~90x the bf16 allowance at any window size) rather
 * than tighter tolerances.
 * LSE is compared in natural log with an absolute tolerance: it depends only
 * on fp32 scores (error ~1e-6 relative), so 1e-2 / 2e-2 leave room for
 * kernels that pre-scale q by sm_scale * log2(e) in the input dtype, while a
 * wrong base is off by ~30% of the value and a dropped key of a 32-key window
 * moves LSE by ~0.03.
 *
 * Baseline mode (tolerance.mode "baseline"), FlashAttention's rule:
 *     max|out - ref| <= factor * max|lowp - ref| + floor
 * with one maximum over the whole output on each side: ref is the double
 * reference, lowp the same attention computed in the case dtype
 * (swa_reference_lowp: scores, probabilities and output rounded to the
 * dtype), factor 2 as in FlashAttention's tests, and floor FlashAttention's
 * fwd_atol for outputs of magnitude ~1, twice the dtype's rounding error
 * there: one ulp of 1.0,
 *     fp16 2^-10 = 9.8e-4,  bf16 2^-7 = 7.8e-3,  fp32 2^-23 = 1.2e-7,
 * so a case whose low-precision error happens to be ~0 still allows the
 * output's own rounding.  The allowance factor * E + floor is one number
 * for the whole output; every element is judged against it, so "global max
 * within the allowance" and "no element mismatched" are the same verdict,
 * and the mismatched elements and the (row, head) matrix localize where a
 * bug pushed the error past it.
 * Why global: the previous per-(row, head) rule (factor times the low-
 * precision error of the same row's head_dim vector, with a one-unit-
 * roundoff floor) failed correct kernels, each about one ulp over, because
 * the kernel and the low-precision reference round at different points and
 * over 64-256 elements one reference's maximum is a noisy estimate of the
 * other's.  Over a whole output it is not.  Measured with
 * tests/test_baseline.c (host emulation, every library case but the model-
 * sized ones, seeds 0-47, 17,328 results): the old rule failed 244 correct
 * results (1.4%), this one none, the worst using 0.51 of its allowance
 * (decode_aiter bf16, whose partition outputs are rounded twice); the
 * model cases, seeds 0-2, pass too.  A one-key window error still fails it:
 * 43x the allowance on normal bf16 data with window 6, 141x on edge data
 * at window 1023.  The price is the one FlashAttention pays: a noisy row
 * raises the allowance for all rows.
 */
void swa_tolerance_defaults(swa_dtype dtype, double *atol, double *rtol, double *lse_atol)
{
    double a, r, l;
    switch (dtype) {
    case SWA_DTYPE_FP16: a = 2e-3; r = 2e-3; l = 1e-2; break;
    case SWA_DTYPE_BF16: a = 1e-2; r = 1.6e-2; l = 2e-2; break;
    default: a = 2e-5; r = 2e-5; l = 1e-3; break;
    }
    if (atol) *atol = a;
    if (rtol) *rtol = r;
    if (lse_atol) *lse_atol = l;
}

swa_tolerance swa_tolerance_resolve(const swa_case *c)
{
    swa_tolerance t = c->tol;
    double atol, rtol, lse_atol;
    swa_tolerance_defaults(c->dtype, &atol, &rtol, &lse_atol);
    if (t.mode == SWA_TOL_DEFAULT) {
        t.atol = atol;
        t.rtol = rtol;
    }
    if (t.lse_atol < 0) /* not given; 0 means exact */
        t.lse_atol = lse_atol;
    return t;
}

void swa_tolerance_baseline_defaults(swa_dtype dtype, double *factor, double *floor_atol,
                                     double *floor_rtol)
{
    /* one ulp of 1.0: twice the rounding error of an output of magnitude ~1 */
    if (factor) *factor = 2.0;
    if (floor_atol) *floor_atol = dtype == SWA_DTYPE_FP16 ? 0x1p-10 : dtype == SWA_DTYPE_BF16 ? 0x1p-7 : 0x1p-23;
    if (floor_rtol) *floor_rtol = 0.0; /* the floor is absolute; the rule has no per-element term */
}

double swa_lowp_max_abs_err(const float *lowp, const double *ref, size_t n)
{
    double e_max = 0;
    for (size_t k = 0; k < n; k++) {
        double e = fabs((double)lowp[k] - ref[k]);
        if (isfinite(e) && e > e_max) /* NaN/Inf elements are judged by the NaN/Inf rules */
            e_max = e;
    }
    return e_max;
}

double swa_baseline_allowance(swa_dtype dtype, const swa_tolerance *tol, const float *lowp, const double *ref,
                              size_t n)
{
    double factor, floor_atol;
    swa_tolerance_baseline_defaults(dtype, &factor, &floor_atol, NULL);
    if (tol->factor > 0)
        factor = tol->factor;
    if (tol->atol > 0)
        floor_atol = tol->atol;
    return factor * swa_lowp_max_abs_err(lowp, ref, n) + floor_atol;
}

/* ------------------------------------------------------------------------- */

const char *swa_past_edge_bucket_label(int bucket)
{
    static const char *labels[SWA_DIST_BUCKETS] = {"1", "2", "3-4", "5-8", "9-16", ">16"};
    return bucket >= 0 && bucket < SWA_DIST_BUCKETS ? labels[bucket] : "?";
}

static int past_edge_bucket(int distance)
{
    if (distance <= 1) return 0;
    if (distance == 2) return 1;
    if (distance <= 4) return 2;
    if (distance <= 8) return 3;
    if (distance <= 16) return 4;
    return 5;
}

void swa_index_format(const swa_index *ix, char *buf, size_t n)
{
    if (ix->dim >= 0)
        snprintf(buf, n, "(r=%d, row=%d, pos=%d, head=%d, d=%d)", ix->request, ix->row, ix->position,
                 ix->head, ix->dim);
    else
        snprintf(buf, n, "(r=%d, row=%d, pos=%d, head=%d)", ix->request, ix->row, ix->position,
                 ix->head);
}

/* An element whose storage is all ones was never written (backend.h). */
static bool is_poison(swa_dtype dtype, const uint8_t *interior, size_t i)
{
    if (dtype == SWA_DTYPE_FP32) {
        uint32_t u;
        memcpy(&u, interior + 4 * i, 4);
        return u == 0xffffffffu;
    }
    uint16_t h;
    memcpy(&h, interior + 2 * i, 2);
    return h == 0xffffu;
}

/* Guard bytes of one buffer: counts changed bytes on each side and says
 * where, as offsets from the interior (-k: k bytes before the first byte;
 * +k: k bytes past the last). */
static bool check_guard(const uint8_t *guarded, size_t interior_bytes, size_t guard_bytes,
                        uint8_t pattern, const char *what, char *msg, size_t n)
{
    size_t before = 0, after = 0, before_far = 0, before_near = 0, after_near = 0, after_far = 0;
    for (size_t i = 0; i < guard_bytes; i++) {
        if (guarded[i] != pattern) {
            size_t off = guard_bytes - i; /* bytes before the interior */
            if (!before) before_far = off;
            before_near = off;
            before++;
        }
        if (guarded[guard_bytes + interior_bytes + i] != pattern) {
            if (!after) after_near = i;
            after_far = i;
            after++;
        }
    }
    if (!before && !after)
        return false;
    size_t len = strlen(msg);
    if (len && len < n)
        len += (size_t)snprintf(msg + len, n - len, "; ");
    if (before && len < n)
        len += (size_t)snprintf(msg + len, n - len,
                                "%s: %zu guard byte%s changed before the start (from -%zu to -%zu)",
                                what, before, before == 1 ? "" : "s", before_far, before_near);
    if (after && len < n)
        snprintf(msg + len, n - len, "%s%s: %zu guard byte%s changed after the end (from +%zu to +%zu)",
                 before ? ", " : "", before ? "and" : what, after, after == 1 ? "" : "s", after_near,
                 after_far);
    return true;
}

/* Keeps the K elements with the largest error/allowed, largest first; ties
 * keep the element seen first. */
static void worst_insert(swa_compare_result *res, double *ratios, const swa_elem *e, double ratio)
{
    if (!(ratio > 0))
        return;
    int n = res->worst_count;
    if (n == SWA_WORST_K && !(ratio > ratios[n - 1]))
        return;
    int pos = n < SWA_WORST_K ? n : SWA_WORST_K - 1;
    while (pos > 0 && ratio > ratios[pos - 1]) {
        res->worst[pos] = res->worst[pos - 1];
        ratios[pos] = ratios[pos - 1];
        pos--;
    }
    res->worst[pos] = *e;
    ratios[pos] = ratio;
    if (n < SWA_WORST_K)
        res->worst_count = n + 1;
}

typedef struct max_track {
    double abs, abs_allowed, rel, rel_allowed;
    swa_index abs_index, rel_index;
    bool any;
} max_track;

/* rel_tol: what the relative line prints as allowed — rtol, as torch does;
 * in baseline mode the element's own allowance relative to |expected|. */
static void max_update(max_track *t, const swa_index *ix, double diff, double allowed, double expected,
                       double rel_tol, bool baseline)
{
    double mag = fabs(expected);
    double rel = mag > 0 ? diff / mag : (diff > 0 ? INFINITY : 0.0);
    double rel_allowed = baseline && mag > 0 ? allowed / mag : rel_tol;
    if (!t->any || diff > t->abs) {
        t->abs = diff;
        t->abs_allowed = allowed;
        t->abs_index = *ix;
    }
    if (!t->any || rel > t->rel) {
        t->rel = rel;
        t->rel_allowed = rel_allowed;
        t->rel_index = *ix;
    }
    t->any = true;
}

static void region_add(swa_region_stats *s, bool mismatched, bool finite, double diff)
{
    s->count++;
    if (mismatched)
        s->mismatched++;
    if (finite && diff > s->max_abs_diff)
        s->max_abs_diff = diff;
}

/* Resolves what the case asks for into atol/rtol (and factor) actually used. */
static swa_status resolve_tolerance(const swa_case *c, swa_compare_result *res, double *lse_atol,
                                    swa_error *err)
{
    double def_atol, def_rtol, def_lse;
    swa_tolerance_defaults(c->dtype, &def_atol, &def_rtol, &def_lse);
    res->tol_mode = c->tol.mode;
    /* lse_atol < 0: not given (the per-dtype default); 0 asks for exact LSE */
    *lse_atol = c->tol.lse_atol >= 0 ? c->tol.lse_atol : def_lse;
    switch (c->tol.mode) {
    case SWA_TOL_DEFAULT:
        res->atol = def_atol;
        res->rtol = def_rtol;
        return SWA_OK;
    case SWA_TOL_ABS_REL:
        if (!(c->tol.atol >= 0) || !(c->tol.rtol >= 0))
            return swa_error_set(err, SWA_ERR_INVALID,
                                 "%s: tolerance atol=%g rtol=%g: expected two numbers >= 0", c->id,
                                 c->tol.atol, c->tol.rtol);
        res->atol = c->tol.atol;
        res->rtol = c->tol.rtol;
        return SWA_OK;
    case SWA_TOL_BASELINE:
        if (!(c->tol.factor > 0))
            return swa_error_set(err, SWA_ERR_INVALID,
                                 "%s: baseline tolerance needs factor > 0 (got %g); the usual value is 2",
                                 c->id, c->tol.factor);
        /* case files cannot set the floor (the loader rejects atol/rtol
         * with mode "baseline"): 0 means "the dtype's floor".  res->atol is
         * the floor, res->rtol stays 0: the rule has no per-element term. */
        res->factor = c->tol.factor;
        swa_tolerance_baseline_defaults(c->dtype, NULL, &res->atol, &res->rtol);
        if (c->tol.atol > 0)
            res->atol = c->tol.atol;
        return SWA_OK;
    }
    return swa_error_set(err, SWA_ERR_INVALID, "%s: unknown tolerance mode %d", c->id, (int)c->tol.mode);
}

swa_status swa_compare(const swa_case *c, const int *qo_indptr, const void *actual_guarded,
                       size_t out_bytes, const float *lse_guarded, size_t lse_bytes,
                       size_t guard_bytes, uint8_t guard_pattern, double lse_base,
                       const double *ref_out, const double *ref_lse, const float *lowp_out,
                       swa_compare_result *res, swa_error *err)
{
    memset(res, 0, sizeof *res);
    res->row_bin = 1;
    if (!c || !actual_guarded || !ref_out)
        return swa_error_set(err, SWA_ERR_INVALID, "swa_compare: case, output and reference are required");
    const int heads = c->num_qo_heads, dim = c->head_dim, batch = c->num_requests;
    if (heads <= 0 || dim <= 0 || batch <= 0)
        return swa_error_set(err, SWA_ERR_INVALID, "%s: cannot compare a case with %d requests, %d heads, head_dim %d",
                             c->id, batch, heads, dim);
    int total_qo = 0;
    for (int r = 0; r < batch; r++) {
        if (qo_indptr && qo_indptr[r + 1] - qo_indptr[r] != c->qo_len[r])
            return swa_error_set(err, SWA_ERR_INVALID,
                                 "%s: qo_indptr gives request %d %d rows, the case says qo_len %d", c->id, r,
                                 qo_indptr[r + 1] - qo_indptr[r], c->qo_len[r]);
        total_qo += c->qo_len[r];
    }
    const size_t elems = (size_t)total_qo * heads * dim;
    const size_t esize = swa_dtype_size(c->dtype);
    if (out_bytes != elems * esize)
        return swa_error_set(err, SWA_ERR_INVALID,
                             "%s: output buffer is %zu bytes, the case needs %zu (%d rows x %d heads x %d dims x %zu bytes)",
                             c->id, out_bytes, elems * esize, total_qo, heads, dim, esize);
    if (lse_guarded) {
        if (lse_bytes != (size_t)total_qo * heads * sizeof(float))
            return swa_error_set(err, SWA_ERR_INVALID, "%s: LSE buffer is %zu bytes, the case needs %zu",
                                 c->id, lse_bytes, (size_t)total_qo * heads * sizeof(float));
        if (!ref_lse)
            return swa_error_set(err, SWA_ERR_INVALID, "%s: LSE given without a reference LSE", c->id);
        if (!(lse_base > 1.0))
            return swa_error_set(err, SWA_ERR_INVALID,
                                 "%s: LSE base %g: expected the base the backend declared (2 or e)", c->id,
                                 lse_base);
    }
    double lse_atol;
    swa_status st = resolve_tolerance(c, res, &lse_atol, err);
    if (st != SWA_OK)
        return st;
    if (res->tol_mode == SWA_TOL_BASELINE && !lowp_out)
        return swa_error_set(err, SWA_ERR_INVALID,
                             "%s: baseline tolerance needs the low-precision reference (swa_reference_lowp)", c->id);

    if (swa_compare_result_alloc_matrix(res, total_qo, heads) != 0)
        return swa_error_set(err, SWA_ERR_NOMEM, "%s: no memory for the %d x %d mismatch matrix", c->id, total_qo, heads);
    res->total = (long long)elems;

    /* 1. guards */
    const uint8_t *out_guarded = actual_guarded;
    res->guard_violation = check_guard(out_guarded, out_bytes, guard_bytes, guard_pattern, "out",
                                       res->guard_message, sizeof res->guard_message);
    if (lse_guarded)
        res->guard_violation |= check_guard((const uint8_t *)lse_guarded, lse_bytes, guard_bytes, guard_pattern,
                                            "lse", res->guard_message, sizeof res->guard_message);

    const uint8_t *out = out_guarded + guard_bytes;
    const float *lse = lse_guarded ? (const float *)((const uint8_t *)lse_guarded + guard_bytes) : NULL;
    const int L = c->window_left;
    double worst_ratio[SWA_WORST_K] = {0};
    max_track all = {0}, bad = {0}, lse_all = {0}, lse_bad = {0};
    const bool equal_nan = c->tol.equal_nan;
    const bool baseline = res->tol_mode == SWA_TOL_BASELINE;
    double baseline_allowed = 0; /* factor * max|lowp - ref| + floor, one number for the output */
    if (baseline) {
        res->lowp_max_abs_err = swa_lowp_max_abs_err(lowp_out, ref_out, elems);
        baseline_allowed = res->factor * res->lowp_max_abs_err + res->atol;
    }

    int row = 0;
    for (int r = 0; r < batch; r++) {
        for (int i = 0; i < c->qo_len[r]; i++, row++) {
            const int pos = c->kv_len[r] - c->qo_len[r] + i;
            const bool binds = L >= 0 && pos - L > 0;
            res->row_request[row] = r;
            res->row_past_edge[row] = L >= 0 ? pos - L : 0;
            for (int h = 0; h < heads; h++) {
                const size_t base = ((size_t)row * heads + h) * dim;
                float cell = 0;
                for (int d = 0; d < dim; d++) {
                    const size_t k = base + d;
                    const double e = ref_out[k];
                    const swa_index ix = {r, i, pos, h, d};
                    const double allowed = baseline ? baseline_allowed : res->atol + res->rtol * fabs(e);
                    if (isnan(e)) res->nan_expected++;
                    if (isinf(e)) res->inf_expected++;

                    bool mismatch, finite_pair = false;
                    double a, diff = 0, ratio;
                    if (is_poison(c->dtype, out, k)) {                    /* 2. written? */
                        res->unwritten++;
                        a = NAN;
                        mismatch = true;
                    } else {
                        a = swa_load(c->dtype, out, k);
                        if (isnan(a)) res->nan_actual++;
                        if (isinf(a)) res->inf_actual++;
                        /* 3. NaN/Inf agree, 4. distance */
                        finite_pair = isfinite(a) && isfinite(e);
                        diff = finite_pair ? fabs(a - e) : 0;
                        mismatch = swa_element_mismatch(a, e, allowed, equal_nan);
                    }
                    if (mismatch) {
                        res->mismatched++;
                        ratio = finite_pair ? (allowed > 0 ? diff / allowed : INFINITY) : INFINITY;
                    } else {
                        ratio = finite_pair && allowed > 0 ? diff / allowed : 0;
                    }
                    if (finite_pair) {
                        max_update(&all, &ix, diff, allowed, e, res->rtol, baseline);
                        if (mismatch)
                            max_update(&bad, &ix, diff, allowed, e, res->rtol, baseline);
                    }
                    region_add(binds ? &res->window_binds : &res->window_free, mismatch, finite_pair, diff);
                    if (binds)
                        region_add(&res->past_edge[past_edge_bucket(pos - L)], mismatch, finite_pair, diff);
                    if (ratio > cell)
                        cell = (float)ratio;
                    swa_elem el = {ix, a, e, finite_pair ? diff : NAN, allowed};
                    worst_insert(res, worst_ratio, &el, ratio);
                }
                res->row_head_ratio[(size_t)row * heads + h] = cell;

                if (!lse)
                    continue;
                /* LSE, natural log; -inf (no visible key) must stay -inf */
                const size_t k = (size_t)row * heads + h;
                const double e = ref_lse[k];
                const swa_index ix = {r, i, pos, h, -1};
                res->lse_total++;
                uint32_t bits;
                memcpy(&bits, &lse[k], 4);
                if (bits == 0xffffffffu) {
                    res->lse_unwritten++;
                    res->lse_mismatched++;
                    continue;
                }
                const double a = (double)lse[k] * log(lse_base);
                if (!isfinite(a) || !isfinite(e)) {
                    if (!(a == e)) { /* NaN on either side, or infinities that differ */
                        res->lse_nonfinite++;
                        res->lse_mismatched++;
                    }
                    continue;
                }
                const double diff = fabs(a - e);
                max_update(&lse_all, &ix, diff, lse_atol, e, 0, false);
                if (diff > lse_atol) {
                    res->lse_mismatched++;
                    max_update(&lse_bad, &ix, diff, lse_atol, e, 0, false);
                }
            }
        }
    }

    /* Like torch's, the greatest differences describe the mismatched
     * elements when there are any; on a pass they show the margin. */
    const max_track *m = bad.any ? &bad : &all;
    res->max_abs_diff = m->abs;
    res->max_abs_index = m->abs_index;
    res->max_abs_allowed = m->abs_allowed;
    res->max_rel_diff = m->rel;
    res->max_rel_index = m->rel_index;
    res->max_rel_allowed = m->rel_allowed;
    res->ratio = elems ? (double)res->mismatched / (double)elems : 0;
    if (!m->any) /* no finite pair at all: no index to point at */
        res->max_abs_index = res->max_rel_index = (swa_index){-1, -1, -1, -1, -1};
    if (lse) {
        const max_track *lm = lse_bad.any ? &lse_bad : &lse_all;
        res->lse_compared = true;
        res->lse_max_abs_diff = lm->abs;
        res->lse_max_index = lm->any ? lm->abs_index : (swa_index){-1, -1, -1, -1, -1};
        res->lse_max_abs_allowed = lse_atol;
        res->lse_base = lse_base;
    }
    return SWA_OK;
}

/* One allocation for the matrix and its per-row annotations, so whoever
 * takes row_head_ratio (swa_run_results_add) takes them all. */
static size_t matrix_block_bytes(int rows, int heads)
{
    return (size_t)rows * heads * sizeof(float) + 2 * (size_t)rows * sizeof(int);
}

int swa_compare_result_alloc_matrix(swa_compare_result *res, int rows, int heads)
{
    size_t cells = (size_t)rows * heads;
    void *block = calloc(1, matrix_block_bytes(rows, heads) ? matrix_block_bytes(rows, heads) : 1);
    if (!block)
        return -1;
    res->row_head_ratio = block;
    res->row_request = (int *)(res->row_head_ratio + cells);
    res->row_past_edge = res->row_request + rows;
    res->rows = rows;
    res->heads = heads;
    res->row_bin = 1;
    return 0;
}

int swa_compare_result_copy(swa_compare_result *dst, const swa_compare_result *src)
{
    *dst = *src;
    dst->row_head_ratio = NULL;
    dst->row_request = dst->row_past_edge = NULL;
    if (!src->row_head_ratio)
        return 0;
    if (swa_compare_result_alloc_matrix(dst, src->rows, src->heads) != 0)
        return -1;
    dst->row_bin = src->row_bin;
    memcpy(dst->row_head_ratio, src->row_head_ratio, (size_t)src->rows * src->heads * sizeof(float));
    if (src->row_request)
        memcpy(dst->row_request, src->row_request, (size_t)src->rows * sizeof(int));
    if (src->row_past_edge)
        memcpy(dst->row_past_edge, src->row_past_edge, (size_t)src->rows * sizeof(int));
    return 0;
}

void swa_compare_result_free(swa_compare_result *res)
{
    if (!res)
        return;
    free(res->row_head_ratio); /* row_request / row_past_edge live in the same block */
    res->row_head_ratio = NULL;
    res->row_request = NULL;
    res->row_past_edge = NULL;
}

bool swa_compare_passed(const swa_compare_result *res)
{
    return !res->guard_violation && res->mismatched == 0 && res->unwritten == 0 &&
           (!res->lse_compared || res->lse_mismatched == 0);
}

static double percent(long long part, long long whole)
{
    return whole > 0 ? 100.0 * (double)part / (double)whole : 0.0;
}

void swa_compare_first_line(const swa_compare_result *res, char *buf, size_t n)
{
    if (res->guard_violation)
        snprintf(buf, n, "Write outside the output: %s", res->guard_message);
    else if (res->unwritten)
        snprintf(buf, n, "Unwritten elements: %lld / %lld (%.1f%%) still hold the poison pattern",
                 res->unwritten, res->total, percent(res->unwritten, res->total));
    else if (res->mismatched)
        snprintf(buf, n, "Mismatched elements: %lld / %lld (%.1f%%)", res->mismatched, res->total,
                 percent(res->mismatched, res->total));
    else if (res->lse_compared && res->lse_unwritten)
        snprintf(buf, n, "Unwritten LSE entries: %lld / %lld (%.1f%%) still hold the poison pattern",
                 res->lse_unwritten, res->lse_total, percent(res->lse_unwritten, res->lse_total));
    else if (res->lse_compared && res->lse_mismatched)
        snprintf(buf, n, "Mismatched LSE entries: %lld / %lld (%.1f%%)", res->lse_mismatched,
                 res->lse_total, percent(res->lse_mismatched, res->lse_total));
    else
        snprintf(buf, n, "All %lld elements within tolerance (greatest absolute difference %.3g, up to %.3g allowed)",
                 res->total, res->max_abs_diff, res->max_abs_allowed);
}

/* appends printf output to buf at *len, never past n */
static void appendf(char *buf, size_t n, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void appendf(char *buf, size_t n, size_t *len, const char *fmt, ...)
{
    if (*len >= n)
        return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(buf + *len, n - *len, fmt, ap);
    va_end(ap);
    if (w > 0)
        *len = *len + (size_t)w < n ? *len + (size_t)w : n - 1;
}

void swa_compare_format_details(const swa_compare_result *res, char *buf, size_t n)
{
    size_t len = 0;
    char ix[96];
    if (!n)
        return;
    buf[0] = '\0';
    /* the mismatch count, when the first line was about something else */
    if ((res->guard_violation || res->unwritten) && res->mismatched)
        appendf(buf, n, &len, "Mismatched elements: %lld / %lld (%.1f%%)\n", res->mismatched,
                res->total, percent(res->mismatched, res->total));
    if (res->max_abs_index.request >= 0) {
        swa_index_format(&res->max_abs_index, ix, sizeof ix);
        appendf(buf, n, &len, "Greatest absolute difference: %.3g at index %s (up to %.3g allowed)\n",
                res->max_abs_diff, ix, res->max_abs_allowed);
        swa_index_format(&res->max_rel_index, ix, sizeof ix);
        appendf(buf, n, &len, "Greatest relative difference: %.3g at index %s (up to %.3g allowed)\n",
                res->max_rel_diff, ix, res->max_rel_allowed);
    }
    if (res->window_binds.count) {
        appendf(buf, n, &len,
                "Rows where the window binds: %lld / %lld mismatched (%.1f%%), greatest absolute difference %.3g\n",
                res->window_binds.mismatched, res->window_binds.count,
                percent(res->window_binds.mismatched, res->window_binds.count), res->window_binds.max_abs_diff);
        appendf(buf, n, &len, "Rows where it does not: %lld / %lld mismatched (%.1f%%), greatest absolute difference %.3g\n",
                res->window_free.mismatched, res->window_free.count,
                percent(res->window_free.mismatched, res->window_free.count), res->window_free.max_abs_diff);
        appendf(buf, n, &len, "Mismatched by distance past the window edge:");
        for (int b = 0; b < SWA_DIST_BUCKETS; b++)
            if (res->past_edge[b].count)
                appendf(buf, n, &len, " %s: %lld/%lld", swa_past_edge_bucket_label(b),
                        res->past_edge[b].mismatched, res->past_edge[b].count);
        appendf(buf, n, &len, "\n");
    }
    if (res->unwritten || res->nan_actual || res->nan_expected || res->inf_actual || res->inf_expected)
        appendf(buf, n, &len, "NaN: %lld actual, %lld expected; Inf: %lld actual, %lld expected; unwritten: %lld\n",
                res->nan_actual, res->nan_expected, res->inf_actual, res->inf_expected, res->unwritten);
    if (res->guard_violation && res->mismatched + res->unwritten == 0)
        appendf(buf, n, &len, "All elements inside the output are within tolerance\n");
    if (res->lse_compared) {
        appendf(buf, n, &len, "LSE (natural log, converted from base %.4g): %lld / %lld mismatched", res->lse_base,
                res->lse_mismatched, res->lse_total);
        if (res->lse_unwritten)
            appendf(buf, n, &len, ", %lld never written", res->lse_unwritten);
        if (res->lse_nonfinite)
            appendf(buf, n, &len, ", %lld NaN/Inf disagreements", res->lse_nonfinite);
        if (res->lse_max_index.request >= 0) {
            swa_index_format(&res->lse_max_index, ix, sizeof ix);
            appendf(buf, n, &len, "; greatest absolute difference %.3g at %s (up to %.3g allowed)",
                    res->lse_max_abs_diff, ix, res->lse_max_abs_allowed);
        }
        appendf(buf, n, &len, "\n");
    }
    if (res->tol_mode == SWA_TOL_BASELINE)
        appendf(buf, n, &len, "Tolerance: baseline, every element within %g x %.3g (greatest error of the "
                "low-precision reference) + %.3g = %.3g", res->factor, res->lowp_max_abs_err, res->atol,
                res->factor * res->lowp_max_abs_err + res->atol);
    else
        appendf(buf, n, &len, "Tolerance: atol %g, rtol %g (%s)", res->atol, res->rtol,
                res->tol_mode == SWA_TOL_DEFAULT ? "dtype default" : "set by the case");
}
