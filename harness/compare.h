/* compare.h — element-by-element comparison of a backend's output with the
 * reference (DESIGN.md §5), and the statistics the reports print.
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

#include "case.h"

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
} swa_compare_result;

struct swa_inputs;

#ifdef __cplusplus
extern "C" {
#endif

/* Compares a backend output (dtype storage, guarded buffers as in
 * backend.h) against the double reference.  lse_actual may be NULL (not
 * compared); lse_base is the base the backend declared (2.0 or e).
 * lowp_err: for SWA_TOL_BASELINE, the low-precision reference (float, same
 * shape) whose error times factor is the allowed error; else NULL. */
swa_status swa_compare(const swa_case *c, const int *qo_indptr, const void *actual_guarded,
                       size_t out_bytes, const float *lse_guarded, size_t lse_bytes,
                       size_t guard_bytes, uint8_t guard_pattern, double lse_base,
                       const double *ref_out, const double *ref_lse, const float *lowp_out,
                       swa_compare_result *res, swa_error *err);
void swa_compare_result_free(swa_compare_result *res);

/* "Mismatched elements: 30 / 96 (31.2%)" — the first line, as torch prints it. */
void swa_compare_first_line(const swa_compare_result *res, char *buf, size_t n);

/* Per-dtype default tolerances (README documents the reasoning). */
void swa_tolerance_defaults(swa_dtype dtype, double *atol, double *rtol, double *lse_atol);

#ifdef __cplusplus
}
#endif
#endif /* SWADIFF_COMPARE_H */
