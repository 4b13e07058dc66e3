/* explain.h — "which mask did the backend actually apply?"
 *
 * For a failing result, the backend's output is scored against reference
 * variants (window L-1, L+1, none, tile-granular start, request-anchored,
 * top-left alignment, soft cap before the mask or missing) and the variant
 * that matches is named (docs/bugs.md).  Used by the run loop for every
 * failing result and by `swadiff explain`.
 *
 * What the diagnosis promises (tests/test_detect.c, tests/test_explain.c):
 *   - only hypotheses the backend could have: tile-granular starts and
 *     request anchoring for the prefill, AITER's sentinel and soft-cap
 *     quirk for the AITER-style decode (and decode_auto, which may route
 *     there); an external backend ("NS:BACKEND") gets every hypothesis a
 *     kernel of the case's kind could show (prefill: tile-granular starts
 *     over the tile shapes real kernels use, or the ones it declared;
 *     decode: a KV start rounded down to a tile, page or partition), worded
 *     without any library's internals;
 *   - hypotheses that fit equally well are reported together, as ambiguous;
 *   - no hypothesis is named "best" unless it fits strictly better than the
 *     spec itself;
 *   - elements are judged with the result's own rule, the baseline mode's
 *     global allowance included;
 *   - with poison data, a NaN where the spec is finite matches a variant
 *     that reads a poisoned key there, if that variant predicts every NaN
 *     of the output; an output that is NaN everywhere stays ambiguous;
 *   - the work is bounded: a case too large to score every hypothesis on
 *     all of it is scored on a deterministic sample of rows and heads, and
 *     the verdict says so. */
#ifndef SWADIFF_EXPLAIN_H
#define SWADIFF_EXPLAIN_H

#include "harness/run.h"

typedef struct swa_hypothesis_score {
    char name[64];          /* short key, e.g. "window_l_minus_1" */
    char description[256];  /* sentence for the reports */
    double ratio;           /* mismatch ratio of the backend output against this variant */
} swa_hypothesis_score;

#define SWA_MAX_HYPOTHESES 48

typedef struct swa_explanation {
    double spec_ratio;
    swa_hypothesis_score scores[SWA_MAX_HYPOTHESES];
    int count;
    int best;               /* index into scores, -1 when none fits better than the spec */
    bool exact;             /* best matches with no mismatched element */
    bool ambiguous;         /* another hypothesis (of another family) fits exactly as well */
    char tied[256];         /* the families that fit as well as best, ", "-separated, best's first */
    char verdict[1024];      /* the diagnosis line */
    /* what was scored: the whole output, or a sample of rows x heads */
    bool sampled;
    int sample_rows, sample_heads, total_rows, total_heads;
    long long nan_credited; /* NaN outputs counted as matches of best (poisoned keys it reads) */
    long long finite_shown; /* finite outputs off the spec that best predicts (0 with NaN credit: the
                             * keys were read, whether they got weight is not shown) */
    /* The diagnosis family, for grouping failures (console, HTML) and for
     * shrink, which keeps it: a hypothesis family ("window_l_minus_1"),
     * "ambiguous:F1,F2", "closest:F", or one of "lse_natural_log",
     * "lse_or_guards", "not_a_mask_variant", "weak_fit", "no_hypothesis".
     * (Before the sampled diagnosis, cases too large to score were
     * "too_large"; merged old reports may still carry it.)  A result's diagnosis is "[key] verdict". */
    char key[128];
} swa_explanation;

#ifdef __cplusplus
extern "C" {
#endif
/* Scores out (the backend output, dtype storage, [total_qo][Hq][D]) and,
 * when given, lse_ln (natural log) against every hypothesis the backend
 * named `backend` could produce (a built-in name, or "NS:BACKEND" for an
 * external one; NULL: unknown, every hypothesis). */
swa_status swa_explain_backend(const swa_case_ctx *ctx, const swa_tolerance *tol, const char *backend,
                               const void *out, const float *lse_ln, double lse_declared_base,
                               swa_explanation *ex, swa_error *err);
/* The same for an unknown backend (every hypothesis).  Prefer
 * swa_explain_backend wherever the backend is known. */
swa_status swa_explain(const swa_case_ctx *ctx, const swa_tolerance *tol, const void *out,
                       const float *lse_ln, double lse_declared_base, swa_explanation *ex,
                       swa_error *err);
/* Runs swa_explain for a failing result and writes r->diagnosis. */
void swa_explain_attach(const swa_run_config *cfg, swa_case_ctx *ctx, const swa_backend *b, swa_result *r,
                        const void *out, const float *lse_ln);
#ifdef __cplusplus
}
#endif
#endif /* SWADIFF_EXPLAIN_H */
