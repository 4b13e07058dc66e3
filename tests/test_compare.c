/* test_compare.c — swa_compare on constructed outputs: exact mismatch counts,
 * NaN/Inf rules, guard violations, unwritten elements, the window region
 * split, LSE base conversion and the baseline tolerance mode (FlashAttention's
 * global rule).
 *
 * Run: ctest --test-dir build -R test_compare --output-on-failure
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness/compare.h"

#define GUARD 16
#define PATTERN 0xA5

/* A case with one request per entry of qo/kv, the rest fixed. */
typedef struct fixture {
    swa_case c;
    int qo[4], kv[4];
    int indptr[5];
    size_t elems, rows;
    double *ref, *ref_lse;
    uint8_t *out_guarded;  /* GUARD | interior | GUARD */
    uint8_t *lse_guarded;
} fixture;

static void fixture_init(fixture *f, swa_dtype dtype, int batch, const int *qo, const int *kv, int heads,
                         int dim, int window_left)
{
    memset(f, 0, sizeof *f);
    swa_case *c = &f->c;
    snprintf(c->id, sizeof c->id, "test/compare");
    c->tol.lse_atol = -1; /* as the loader leaves it when the case file gives none */
    c->num_requests = batch;
    memcpy(f->qo, qo, sizeof(int) * batch);
    memcpy(f->kv, kv, sizeof(int) * batch);
    c->qo_len = f->qo;
    c->kv_len = f->kv;
    c->num_qo_heads = heads;
    c->num_kv_heads = 1;
    c->head_dim = dim;
    c->dtype = dtype;
    c->causal = true;
    c->window_left = window_left;
    c->tol.mode = SWA_TOL_DEFAULT;
    for (int r = 0; r < batch; r++) {
        f->indptr[r + 1] = f->indptr[r] + qo[r];
        f->rows += (size_t)qo[r];
    }
    f->elems = f->rows * heads * dim;
    f->ref = malloc(f->elems * sizeof(double));
    f->ref_lse = malloc(f->rows * heads * sizeof(double));
    size_t esize = swa_dtype_size(dtype);
    f->out_guarded = malloc(f->elems * esize + 2 * GUARD);
    f->lse_guarded = malloc(f->rows * heads * 4 + 2 * GUARD);
    memset(f->out_guarded, PATTERN, f->elems * esize + 2 * GUARD);
    memset(f->out_guarded + GUARD, 0xff, f->elems * esize); /* poison, as the harness does */
    memset(f->lse_guarded, PATTERN, f->rows * heads * 4 + 2 * GUARD);
    memset(f->lse_guarded + GUARD, 0xff, f->rows * heads * 4);
    /* values exactly representable in every dtype, so a faithful "kernel"
     * reproduces them bit for bit */
    for (size_t i = 0; i < f->elems; i++)
        f->ref[i] = (double)((int)(i % 17) - 8) / 8.0;
    for (size_t i = 0; i < f->rows * heads; i++)
        f->ref_lse[i] = 1.0 + (double)(i % 5);
}

static void fixture_free(fixture *f)
{
    free(f->ref);
    free(f->ref_lse);
    free(f->out_guarded);
    free(f->lse_guarded);
}

static void *interior(fixture *f) { return f->out_guarded + GUARD; }
static float *lse_interior(fixture *f) { return (float *)(f->lse_guarded + GUARD); }

/* "kernel" output = reference, rounded to the dtype */
static void write_exact(fixture *f)
{
    for (size_t i = 0; i < f->elems; i++)
        swa_store(f->c.dtype, interior(f), i, (float)f->ref[i]);
}

static size_t at(fixture *f, int row, int head, int d)
{
    return ((size_t)row * f->c.num_qo_heads + head) * f->c.head_dim + d;
}

static swa_status run_compare(fixture *f, bool with_lse, double lse_base, const float *lowp,
                              swa_compare_result *res)
{
    swa_error err = {0};
    size_t esize = swa_dtype_size(f->c.dtype);
    swa_status st = swa_compare(&f->c, f->indptr, f->out_guarded, f->elems * esize,
                                with_lse ? (const float *)f->lse_guarded : NULL,
                                with_lse ? f->rows * f->c.num_qo_heads * 4 : 0, GUARD, PATTERN, lse_base,
                                f->ref, with_lse ? f->ref_lse : NULL, lowp, res, &err);
    cr_assert_eq(st, SWA_OK, "swa_compare failed: %s", err.message);
    return st;
}

Test(compare, exact_output_passes_with_margin)
{
    const swa_dtype dtypes[] = {SWA_DTYPE_FP16, SWA_DTYPE_BF16, SWA_DTYPE_FP32};
    for (int t = 0; t < 3; t++) {
        fixture f;
        fixture_init(&f, dtypes[t], 1, (int[]){8}, (int[]){8}, 4, 3, 4);
        write_exact(&f);
        swa_compare_result res;
        run_compare(&f, false, 0, NULL, &res);
        cr_expect_eq(res.mismatched, 0, "%s: %lld mismatched", swa_dtype_name(dtypes[t]), res.mismatched);
        cr_expect_eq(res.total, 96);
        cr_expect(swa_compare_passed(&res), "%s: should pass", swa_dtype_name(dtypes[t]));
        char line[256];
        swa_compare_first_line(&res, line, sizeof line);
        cr_expect(strncmp(line, "All 96 elements within tolerance", 32) == 0, "first line: %s", line);
        swa_compare_result_free(&res);
        fixture_free(&f);
    }
}

Test(compare, counts_constructed_mismatches_torch_wording)
{
    fixture f; /* 8 rows x 4 heads x 3 dims = 96, as the spec example */
    fixture_init(&f, SWA_DTYPE_FP32, 1, (int[]){8}, (int[]){8}, 4, 3, -1);
    write_exact(&f);
    double atol, rtol;
    swa_tolerance_defaults(SWA_DTYPE_FP32, &atol, &rtol, NULL);
    /* three elements off: 0.40 at (row 7, head 3, d 2) is the greatest */
    swa_store(f.c.dtype, interior(&f), at(&f, 7, 3, 2), (float)(f.ref[at(&f, 7, 3, 2)] + 0.40));
    swa_store(f.c.dtype, interior(&f), at(&f, 2, 1, 0), (float)(f.ref[at(&f, 2, 1, 0)] - 0.25));
    swa_store(f.c.dtype, interior(&f), at(&f, 5, 0, 1), (float)(f.ref[at(&f, 5, 0, 1)] + 0.01));
    /* and one inside tolerance, which must not count */
    swa_store(f.c.dtype, interior(&f), at(&f, 0, 0, 0), (float)(f.ref[at(&f, 0, 0, 0)] + atol * 0.5));
    swa_compare_result res;
    run_compare(&f, false, 0, NULL, &res);
    cr_assert_eq(res.mismatched, 3, "mismatched %lld", res.mismatched);
    char line[256];
    swa_compare_first_line(&res, line, sizeof line);
    cr_expect_str_eq(line, "Mismatched elements: 3 / 96 (3.1%)");
    cr_expect_float_eq(res.max_abs_diff, 0.40, 1e-6, "max abs %g", res.max_abs_diff);
    cr_expect_eq(res.max_abs_index.row, 7);
    cr_expect_eq(res.max_abs_index.position, 7);
    cr_expect_eq(res.max_abs_index.head, 3);
    cr_expect_eq(res.max_abs_index.dim, 2);
    char details[2048];
    swa_compare_format_details(&res, details, sizeof details);
    cr_expect(strstr(details, "Greatest absolute difference: 0.4 at index (r=0, row=7, pos=7, head=3, d=2) (up to ") != NULL,
              "details:\n%s", details);
    cr_expect(strstr(details, "Greatest relative difference: ") != NULL, "details:\n%s", details);
    /* worst elements: largest error/allowed first */
    cr_assert_geq(res.worst_count, 3);
    cr_expect_eq(res.worst[0].index.row, 7);
    cr_expect_eq(res.worst[1].index.row, 2);
    cr_expect_eq(res.worst[2].index.row, 5);
    /* matrix cell of (row 7, head 3) carries its error / allowed */
    double allowed = atol + rtol * fabs(f.ref[at(&f, 7, 3, 2)]);
    cr_expect_float_eq(res.row_head_ratio[7 * 4 + 3], 0.40 / allowed, 0.40 / allowed * 1e-4);
    cr_expect_lt(res.row_head_ratio[0], 1.0f, "in-tolerance cell %g", res.row_head_ratio[0]);
    swa_compare_result_free(&res);
    fixture_free(&f);
}

Test(compare, nan_and_inf_rules)
{
    fixture f;
    fixture_init(&f, SWA_DTYPE_FP32, 1, (int[]){2}, (int[]){2}, 1, 8, -1);
    write_exact(&f);
    float *o = interior(&f);
    o[0] = NAN;                         /* NaN vs finite: mismatch */
    f.ref[1] = NAN; o[1] = NAN;         /* NaN vs NaN: mismatch unless equal_nan */
    f.ref[2] = INFINITY; o[2] = INFINITY;   /* same-signed infinities: equal */
    f.ref[3] = INFINITY; o[3] = -INFINITY;  /* opposite signs: mismatch */
    o[4] = INFINITY;                    /* Inf vs finite: mismatch */
    f.ref[5] = -INFINITY;               /* finite vs -Inf: mismatch */
    swa_compare_result res;
    run_compare(&f, false, 0, NULL, &res);
    cr_expect_eq(res.mismatched, 5, "mismatched %lld", res.mismatched);
    cr_expect_eq(res.nan_actual, 2, "nan_actual %lld", res.nan_actual);
    cr_expect_eq(res.nan_expected, 1, "nan_expected %lld", res.nan_expected);
    cr_expect_eq(res.inf_actual, 3, "inf_actual %lld", res.inf_actual);
    cr_expect_eq(res.inf_expected, 3, "inf_expected %lld", res.inf_expected);
    swa_compare_result_free(&res);

    f.c.tol.equal_nan = true;
    run_compare(&f, false, 0, NULL, &res);
    cr_expect_eq(res.mismatched, 4, "equal_nan: mismatched %lld", res.mismatched);
    swa_compare_result_free(&res);
    fixture_free(&f);
}

Test(compare, guard_violation_names_offsets)
{
    fixture f;
    fixture_init(&f, SWA_DTYPE_FP16, 1, (int[]){4}, (int[]){4}, 2, 4, -1);
    write_exact(&f);
    size_t out_bytes = f.elems * 2;
    f.out_guarded[GUARD + out_bytes + 0] = 0;   /* +0 past the end */
    f.out_guarded[GUARD + out_bytes + 3] = 1;   /* +3 */
    swa_compare_result res;
    run_compare(&f, false, 0, NULL, &res);
    cr_expect(res.guard_violation);
    cr_expect_eq(res.mismatched, 0, "interior is correct: %lld", res.mismatched);
    cr_expect_not(swa_compare_passed(&res));
    cr_expect(strstr(res.guard_message, "out: 2 guard bytes changed after the end (from +0 to +3)") != NULL,
              "message: %s", res.guard_message);
    char line[512];
    swa_compare_first_line(&res, line, sizeof line);
    cr_expect(strncmp(line, "Write outside the output: ", 26) == 0, "first line: %s", line);
    swa_compare_result_free(&res);

    /* a write before the start, in the LSE buffer */
    f.out_guarded[GUARD + out_bytes + 0] = PATTERN;
    f.out_guarded[GUARD + out_bytes + 3] = PATTERN;
    for (size_t i = 0; i < f.rows * 2; i++)
        lse_interior(&f)[i] = (float)(f.ref_lse[i] / log(2.0));
    f.lse_guarded[GUARD - 4] = 7;
    run_compare(&f, true, 2.0, NULL, &res);
    cr_expect(res.guard_violation);
    cr_expect(strstr(res.guard_message, "lse: 1 guard byte changed before the start (from -4 to -4)") != NULL,
              "message: %s", res.guard_message);
    swa_compare_result_free(&res);
    fixture_free(&f);
}

Test(compare, unwritten_elements_detected)
{
    fixture f;
    fixture_init(&f, SWA_DTYPE_BF16, 1, (int[]){8}, (int[]){8}, 4, 3, -1);
    write_exact(&f);
    /* four elements left as the harness poisoned them */
    uint16_t poison = 0xffff;
    size_t holes[] = {at(&f, 0, 0, 0), at(&f, 3, 2, 1), at(&f, 7, 3, 2), at(&f, 7, 3, 1)};
    for (int i = 0; i < 4; i++)
        memcpy((uint8_t *)interior(&f) + 2 * holes[i], &poison, 2);
    /* and a real (kernel-produced) NaN, a different bit pattern */
    swa_store(SWA_DTYPE_BF16, interior(&f), at(&f, 1, 1, 1), NAN);
    swa_compare_result res;
    run_compare(&f, false, 0, NULL, &res);
    cr_expect_eq(res.unwritten, 4, "unwritten %lld", res.unwritten);
    cr_expect_eq(res.nan_actual, 1, "kernel NaNs %lld (unwritten ones are not counted here)", res.nan_actual);
    cr_expect_eq(res.mismatched, 5, "mismatched %lld", res.mismatched);
    char line[256];
    swa_compare_first_line(&res, line, sizeof line);
    cr_expect_str_eq(line, "Unwritten elements: 4 / 96 (4.2%) still hold the poison pattern");
    cr_expect(isinf(res.row_head_ratio[7 * 4 + 3]), "unwritten cell should be infinite: %g", res.row_head_ratio[7 * 4 + 3]);
    swa_compare_result_free(&res);
    fixture_free(&f);
}

Test(compare, region_split_by_window)
{
    /* request 0: 8 new tokens after 4 prefix tokens (p = 4..11), L = 4:
     * the window binds from p = 5 (distance 1) to p = 11 (distance 7).
     * request 1: decode row at p = 2, window does not bind. */
    fixture f;
    fixture_init(&f, SWA_DTYPE_FP32, 2, (int[]){8, 1}, (int[]){12, 3}, 2, 2, 4);
    write_exact(&f);
    /* errors in rows at distance 1 and 5 (rows 1 and 5 of request 0) */
    float *o = interior(&f);
    for (int h = 0; h < 2; h++)
        for (int d = 0; d < 2; d++) {
            o[at(&f, 1, h, d)] += 0.5f;
            o[at(&f, 5, h, d)] += 0.5f;
        }
    swa_compare_result res;
    run_compare(&f, false, 0, NULL, &res);
    cr_expect_eq(res.window_binds.count, 7 * 4, "binding elements %lld", res.window_binds.count);
    cr_expect_eq(res.window_free.count, 2 * 4, "free elements %lld", res.window_free.count);
    cr_expect_eq(res.window_binds.mismatched, 8);
    cr_expect_eq(res.window_free.mismatched, 0);
    long long expect_count[SWA_DIST_BUCKETS] = {4, 4, 8, 12, 0, 0};     /* d=1 | 2 | 3,4 | 5,6,7 */
    long long expect_bad[SWA_DIST_BUCKETS] = {4, 0, 0, 4, 0, 0};
    for (int b = 0; b < SWA_DIST_BUCKETS; b++) {
        cr_expect_eq(res.past_edge[b].count, expect_count[b], "bucket %s count %lld", swa_past_edge_bucket_label(b),
                     res.past_edge[b].count);
        cr_expect_eq(res.past_edge[b].mismatched, expect_bad[b], "bucket %s mismatched %lld",
                     swa_past_edge_bucket_label(b), res.past_edge[b].mismatched);
    }
    cr_expect_eq(res.row_request[8], 1);
    cr_expect_eq(res.row_past_edge[0], 0, "p=4, L=4: the window does not bind yet");
    cr_expect_eq(res.row_past_edge[7], 7);
    cr_expect_eq(res.max_abs_index.position, 5, "first mismatched row of the greatest diff is p=5");
    swa_compare_result_free(&res);
    fixture_free(&f);
}

Test(compare, lse_base_conversion_and_unwritten)
{
    fixture f;
    fixture_init(&f, SWA_DTYPE_FP16, 1, (int[]){4}, (int[]){4}, 2, 2, -1);
    write_exact(&f);
    size_t n = f.rows * 2;
    f.ref_lse[0] = -INFINITY; /* a row with no visible key */
    for (size_t i = 0; i < n; i++)
        lse_interior(&f)[i] = (float)(f.ref_lse[i] / log(2.0)); /* base 2, as FlashInfer */
    swa_compare_result res;
    run_compare(&f, true, 2.0, NULL, &res);
    cr_expect(res.lse_compared);
    cr_expect_eq(res.lse_total, 8);
    cr_expect_eq(res.lse_mismatched, 0, "base-2 LSE converted: %lld mismatched", res.lse_mismatched);
    swa_compare_result_free(&res);

    /* the lse_wrong_base mutant: natural log declared as base 2 */
    for (size_t i = 0; i < n; i++)
        lse_interior(&f)[i] = (float)f.ref_lse[i];
    run_compare(&f, true, 2.0, NULL, &res);
    cr_expect_eq(res.lse_mismatched, 7, "every finite entry is off by 30%%: %lld", res.lse_mismatched);
    cr_expect_not(swa_compare_passed(&res));
    char line[256];
    swa_compare_first_line(&res, line, sizeof line);
    cr_expect_str_eq(line, "Mismatched LSE entries: 7 / 8 (87.5%)");
    swa_compare_result_free(&res);

    /* -inf must stay -inf; NaN is never right; unwritten counts apart */
    for (size_t i = 0; i < n; i++)
        lse_interior(&f)[i] = (float)(f.ref_lse[i] / log(2.0));
    lse_interior(&f)[0] = 0.0f;
    lse_interior(&f)[1] = NAN;
    memset(&lse_interior(&f)[2], 0xff, 4);
    run_compare(&f, true, 2.0, NULL, &res);
    cr_expect_eq(res.lse_mismatched, 3, "%lld", res.lse_mismatched);
    cr_expect_eq(res.lse_nonfinite, 2, "%lld", res.lse_nonfinite);
    cr_expect_eq(res.lse_unwritten, 1, "%lld", res.lse_unwritten);
    swa_compare_result_free(&res);
    fixture_free(&f);
}

Test(compare, baseline_mode_global_rule)
{
    /* FlashAttention's rule: every element within factor * max|lowp - ref|
     * (over the whole output) + the dtype's floor */
    fixture f;
    fixture_init(&f, SWA_DTYPE_FP32, 1, (int[]){2}, (int[]){2}, 1, 4, -1);
    write_exact(&f);
    f.c.tol.mode = SWA_TOL_BASELINE;
    double floor_atol, floor_rtol;
    swa_tolerance_baseline_defaults(SWA_DTYPE_FP32, &f.c.tol.factor, &floor_atol, &floor_rtol);
    cr_assert_float_eq(f.c.tol.factor, 2.0, 0);
    cr_assert_float_eq(floor_atol, 0x1p-23, 0, "fp32 floor %g", floor_atol);
    cr_assert_float_eq(floor_rtol, 0.0, 0, "the rule has no per-element term");
    float lowp[8];
    for (int i = 0; i < 8; i++)
        lowp[i] = (float)f.ref[i];
    /* row 0: the low-precision reference is off by 0.01 at one element:
     * E = 0.01 for the whole output */
    lowp[1] += 0.01f;
    float *o = interior(&f);
    o[0] += 0.015f; /* 1.5 x E: inside factor 2 */
    o[2] += 0.03f;  /* 3 x E: outside */
    /* row 1, where the low-precision reference is exact: the same global
     * allowance applies (the old per-row rule allowed only the floor here) */
    o[5] += 0.015f; /* inside */
    o[6] += 0.025f; /* outside */
    swa_compare_result res;
    run_compare(&f, false, 0, lowp, &res);
    cr_expect_eq(res.mismatched, 2, "mismatched %lld", res.mismatched);
    cr_expect_float_eq(res.lowp_max_abs_err, 0.01, 1e-6, "E = %g", res.lowp_max_abs_err);
    cr_expect_float_eq(res.atol, floor_atol, 0, "floor %g", res.atol);
    cr_expect_float_eq(res.rtol, 0.0, 0, "rtol %g", res.rtol);
    cr_expect_eq(res.worst[0].index.dim, 2, "the 3 x E element is the worst");
    cr_expect_eq(res.worst[1].index.row, 1);
    cr_expect_eq(res.worst[1].index.dim, 2);
    for (int k = 0; k < res.worst_count; k++)
        cr_expect_float_eq(res.worst[k].allowed, 0.02 + floor_atol, 1e-6, "allowed %g", res.worst[k].allowed);
    cr_expect_float_eq(res.max_abs_diff, 0.03, 1e-6, "%g", res.max_abs_diff);
    cr_expect_float_eq(res.max_abs_allowed, 0.02 + floor_atol, 1e-6, "%g", res.max_abs_allowed);
    /* the (row, head) matrix localizes: both rows exceed the one allowance */
    cr_expect_gt(res.row_head_ratio[0], 1.0f);
    cr_expect_gt(res.row_head_ratio[1], 1.0f);
    char details[1024];
    swa_compare_format_details(&res, details, sizeof details);
    cr_expect(strstr(details, "baseline") && strstr(details, "low-precision reference"), "%s", details);
    swa_compare_result_free(&res);

    /* a case file cannot set the floor: atol 0 means the dtype's; a case
     * that does set one (the API) gets it */
    f.c.tol.atol = 0.02;
    run_compare(&f, false, 0, lowp, &res);
    cr_expect_eq(res.mismatched, 0, "with a 0.02 floor the allowance is 0.04: mismatched %lld", res.mismatched);
    swa_compare_result_free(&res);
    f.c.tol.atol = 0;

    /* the low-precision reference exact everywhere: only the floor, which
     * still covers the output's own rounding */
    for (int i = 0; i < 8; i++)
        lowp[i] = (float)f.ref[i];
    write_exact(&f);
    o[5] = (float)f.ref[5] * (1.0f + 0x1p-23f);
    run_compare(&f, false, 0, lowp, &res);
    cr_expect_eq(res.mismatched, 0, "one ulp must pass on the floor: mismatched %lld", res.mismatched);
    swa_compare_result_free(&res);
    o[5] = (float)f.ref[5] + 1e-5f;
    run_compare(&f, false, 0, lowp, &res);
    cr_expect_eq(res.mismatched, 1, "1e-5 is far past the fp32 floor: mismatched %lld", res.mismatched);
    swa_compare_result_free(&res);

    /* baseline mode without the low-precision reference is a clear error */
    swa_error err = {0};
    swa_status st = swa_compare(&f.c, f.indptr, f.out_guarded, f.elems * 4, NULL, 0, GUARD, PATTERN, 0,
                                f.ref, NULL, NULL, &res, &err);
    cr_expect_eq(st, SWA_ERR_INVALID);
    cr_expect(strstr(err.message, "low-precision reference") != NULL, "%s", err.message);
    swa_compare_result_free(&res);
    fixture_free(&f);
}

Test(compare, baseline_floor_is_one_ulp_of_one)
{
    /* FlashAttention's fwd_atol for outputs of magnitude ~1: twice the
     * rounding error there, one ulp of 1.0 */
    const swa_dtype dtypes[] = {SWA_DTYPE_FP16, SWA_DTYPE_BF16, SWA_DTYPE_FP32};
    const double ulp_one[] = {0x1p-10, 0x1p-7, 0x1p-23};
    for (int t = 0; t < 3; t++) {
        double factor, floor_atol;
        swa_tolerance_baseline_defaults(dtypes[t], &factor, &floor_atol, NULL);
        cr_expect_eq(factor, 2.0);
        cr_expect_eq(floor_atol, ulp_one[t], "%s: floor %g", swa_dtype_name(dtypes[t]), floor_atol);
        /* rounding an output in [0.5, 1] to the dtype stays inside it */
        for (double v = 0.5; v <= 1.0; v += 0.01)
            cr_expect_leq(fabs(swa_round_to(dtypes[t], (float)v) - v), floor_atol);
    }
    /* swa_baseline_allowance: the same number compare applies */
    float lowp[3] = {0.5f, 0.25f, 1.0f};
    double ref[3] = {0.5, 0.2, 1.0};
    swa_tolerance tol = {.mode = SWA_TOL_BASELINE, .factor = 2};
    cr_expect_float_eq(swa_baseline_allowance(SWA_DTYPE_BF16, &tol, lowp, ref, 3), 2 * 0.05 + 0x1p-7, 1e-9);
    cr_expect_float_eq(swa_lowp_max_abs_err(lowp, ref, 3), 0.05, 1e-9);
}

Test(compare, defaults_pass_rounding_and_fail_seed_bug)
{
    /* one unit in the last place of the dtype passes; the 0.40 of seed 000 fails */
    const swa_dtype dtypes[] = {SWA_DTYPE_FP16, SWA_DTYPE_BF16};
    const double ulp_at_one[] = {0x1p-10, 0x1p-7};
    for (int t = 0; t < 2; t++) {
        double atol, rtol, lse_atol;
        swa_tolerance_defaults(dtypes[t], &atol, &rtol, &lse_atol);
        for (double e = 0.0; e <= 4.0; e += 0.5) {
            double ulp = ulp_at_one[t] * (e < 1 ? 1 : e);
            cr_expect_leq(ulp, atol + rtol * e, "%s: 1 ulp at %g exceeds the default", swa_dtype_name(dtypes[t]), e);
            /* attention outputs of unit-variance values are mostly |o| < 1:
             * there the seed's error must be far past the allowance */
            cr_expect_gt(0.40, (e <= 1 ? 10 : 4) * (atol + rtol * e),
                         "%s: seed bug at |o|=%g not clearly caught", swa_dtype_name(dtypes[t]), e);
        }
        cr_expect_lt(lse_atol, 0.03, "%s: a dropped key of a 32-key window must move LSE past it", swa_dtype_name(dtypes[t]));
    }
}

Test(compare, rejects_wrong_buffer_size)
{
    fixture f;
    fixture_init(&f, SWA_DTYPE_FP16, 1, (int[]){2}, (int[]){2}, 1, 4, -1);
    swa_compare_result res;
    swa_error err = {0};
    swa_status st = swa_compare(&f.c, f.indptr, f.out_guarded, f.elems * 4, NULL, 0, GUARD, PATTERN, 0, f.ref,
                                NULL, NULL, &res, &err);
    cr_expect_eq(st, SWA_ERR_INVALID);
    cr_expect(strstr(err.message, "output buffer is 32 bytes, the case needs 16") != NULL, "%s", err.message);
    fixture_free(&f);
}
