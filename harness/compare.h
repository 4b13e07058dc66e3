/* compare.h — element-by-element comparison of a backend's output with the
 * reference (docs/spec.md), and the statistics the reports print.
 *
 * Rule: |actual - expected| <= atol + rtol * |expected|, reference on the
 * right; NaN never equals unless tol.equal_nan; infinities must match in
 * sign.  Checks run in ggml's order: guard bytes -> every element written ->
 * NaN/Inf -> numeric distance.
 *
 * Ownership: swa_compare allocates the arrays inside swa_compare_result;
 * swa_compare_result_free releases them. */
#ifndef SWADIFF_COMPARE_H
#define SWADIFF_COMPARE_H

#include "core/case.h"

#define SWA_WORST_K 10
#define SWA_DIST_BUCKETS 6 /* distance past the window edge: 1, 2, 3-4, 5-8, 9-16, >16 */

typedef struct swa_index {   /* (request, row, absolute position, head, dim) */
    int request, row, position, head, dim;
} swa_index;

typedef struct swa_elem {
    swa_index index;
    double actual, expected, abs_diff, allowed;
} swa_elem;

typedef struct swa_region_stats {
    long long count, mismatched;
    double max_abs_diff;
} swa_region_stats;

typedef struct swa_compare_result {
    long long total, mismatched;
    double ratio;
    double max_abs_diff; swa_index max_abs_index; double max_abs_allowed;
    double max_rel_diff; swa_index max_rel_index;
    long long nan_actual, nan_expected, inf_actual, inf_expected;
    long long unwritten;          /* elements still holding the poison pattern */
    bool guard_violation;         /* bytes outside out/lse were written */
    char guard_message[256];

    /* regions: rows where the window binds (some key is excluded by it) vs not,
     * and mismatches by distance of the row past the first row where it binds */
    swa_region_stats window_binds, window_free;
    swa_region_stats past_edge[SWA_DIST_BUCKETS];

    /* worst error / allowed, per (global qo row, head): [total_qo][num_qo_heads] */
    int rows, heads;
    float *row_head_ratio;

    swa_elem worst[SWA_WORST_K];
    int worst_count;

    /* LSE (natural log) */
    bool lse_compared;
    long long lse_total, lse_mismatched;
    double lse_max_abs_diff; swa_index lse_max_index;

    double atol, rtol;            /* what was applied */

    /* Additions (issue 4, additive to the skeleton). */
    double max_rel_allowed;       /* rtol (torch prints that); baseline: allowed / |expected| */
    int row_bin;                  /* source rows per matrix row (1; >1 after downsampling) */
    int *row_request;             /* [rows] request of each matrix row (first row of a bin) */
    int *row_past_edge;           /* [rows] p - L (max over a bin); <= 0: the window does not bind */
                                  /* (both live in row_head_ratio's allocation: freeing or
                                   * moving row_head_ratio frees or moves them) */
    long long lse_unwritten;      /* LSE entries still holding the poison pattern */
    long long lse_nonfinite;      /* LSE NaN/Inf disagreements (NaN, or -inf vs finite) */
    double lse_max_abs_allowed;   /* the LSE tolerance applied (natural log) */
    double lse_base;              /* base the backend declared, converted from */
    swa_tol_mode tol_mode;        /* which rule produced `allowed` */
    double factor;                /* SWA_TOL_BASELINE: the factor applied */
    double lowp_max_abs_err;      /* SWA_TOL_BASELINE: max |lowp - ref| over the output; every element
                                   * is allowed factor * this + atol (the floor) */
} swa_compare_result;

/* The element rule of docs/spec.md, reference on the right: NaN equals NaN
 * only with equal_nan, an infinity must be matched exactly (same sign),
 * finite pairs pass within allowed (atol + rtol * |expected|, or the
 * baseline rule).  compare.c and explain.c both judge elements with it. */
static inline bool swa_element_mismatch(double actual, double expected, double allowed, bool equal_nan)
{
    if (actual != actual || expected != expected) /* NaN on either side */
        return !(actual != actual && expected != expected && equal_nan);
    if (actual - actual != 0 || expected - expected != 0) /* an infinity */
        return actual != expected;
    double diff = actual > expected ? actual - expected : expected - actual;
    return diff > allowed;
}

struct swa_inputs;

#ifdef __cplusplus
extern "C" {
#endif

/* Compares a backend output (dtype storage, guarded buffers as in
 * backend.h) against the double reference.  lse_actual may be NULL (not
 * compared); lse_base is the base the backend declared (2.0 or e).
 * lowp_out: for SWA_TOL_BASELINE, the low-precision reference (float, same
 * shape): every element may be off by factor * max|lowp_out - ref_out| +
 * the floor (one number for the whole output, FlashAttention's rule); else
 * NULL. */
swa_status swa_compare(const swa_case *c, const int *qo_indptr, const void *actual_guarded,
                       size_t out_bytes, const float *lse_guarded, size_t lse_bytes,
                       size_t guard_bytes, uint8_t guard_pattern, double lse_base,
                       const double *ref_out, const double *ref_lse, const float *lowp_out,
                       swa_compare_result *res, swa_error *err);
void swa_compare_result_free(swa_compare_result *res);

/* "Mismatched elements: 30 / 96 (31.2%)" — the first line, as torch prints it. */
void swa_compare_first_line(const swa_compare_result *res, char *buf, size_t n);

/* Per-dtype default tolerances (docs/cases.md, Tolerances, gives the reasoning). */
void swa_tolerance_defaults(swa_dtype dtype, double *atol, double *rtol, double *lse_atol);

/* Resolves a case's tolerance (per-dtype defaults filled in) into explicit
 * atol/rtol/lse_atol. */
swa_tolerance swa_tolerance_resolve(const swa_case *c);

/* Additions (issue 4). */
/* Defaults of the baseline mode (compare.c explains the rule): the factor
 * (2) and the absolute floor, one ulp of 1.0 in the dtype (fp16 2^-10, bf16
 * 2^-7, fp32 2^-23); floor_rtol is 0 (kept for callers of the older rule). */
void swa_tolerance_baseline_defaults(swa_dtype dtype, double *factor, double *floor_atol,
                                     double *floor_rtol);
/* max |lowp - ref| over n elements, NaN/Inf pairs left out. */
double swa_lowp_max_abs_err(const float *lowp, const double *ref, size_t n);
/* The baseline rule's allowance for a whole output of n elements:
 * factor * max|lowp - ref| + floor, with tol's factor and floor (tol->atol
 * when > 0) or the dtype's defaults.  explain judges hypotheses with it. */
double swa_baseline_allowance(swa_dtype dtype, const swa_tolerance *tol, const float *lowp, const double *ref,
                              size_t n);
/* True when nothing failed: guard intact, everything written, no element and
 * no LSE entry out of tolerance. */
bool swa_compare_passed(const swa_compare_result *res);
/* The lines after the first (torch-style statistics, regions, NaN/Inf,
 * LSE), '\n'-separated, for JUnit bodies and the console.  Truncates to n. */
void swa_compare_format_details(const swa_compare_result *res, char *buf, size_t n);
/* Allocates the (row, head) matrix and its per-row arrays in one block
 * (row_head_ratio owns it), zeroed; sets rows, heads, row_bin = 1.
 * Returns 0, or -1 on allocation failure. */
int swa_compare_result_alloc_matrix(swa_compare_result *res, int rows, int heads);
/* Deep copy (dst gets its own matrix block).  Returns 0, -1 on no memory. */
int swa_compare_result_copy(swa_compare_result *dst, const swa_compare_result *src);
/* "(r=0, row=7, pos=7, head=3, d=12)"; d < 0 is left out (LSE entries). */
void swa_index_format(const swa_index *ix, char *buf, size_t n);
/* Bucket label of SWA_DIST_BUCKETS entries: "1", "2", "3-4", "5-8", "9-16", ">16". */
const char *swa_past_edge_bucket_label(int bucket);

#ifdef __cplusplus
}
#endif
#endif /* SWADIFF_COMPARE_H */
