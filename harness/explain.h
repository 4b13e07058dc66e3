/* explain.h — "which mask did the backend actually apply?"
 *
 * For a failing result, the backend's output is scored against reference
 * variants (window L-1, L+1, none, tile-granular start, request-anchored,
 * top-left alignment, soft cap before the mask or missing) and the variant
 * that matches is named (docs/bugs.md).  Used by the run loop for every
 * failing result and by `swadiff explain`. */
#ifndef SWADIFF_EXPLAIN_H
#define SWADIFF_EXPLAIN_H

#include "harness/run.h"

typedef struct swa_hypothesis_score {
    char name[64];          /* short key, e.g. "window_l_minus_1" */
    char description[256];  /* sentence for the reports */
    double ratio;           /* mismatch ratio of the backend output against this variant */
} swa_hypothesis_score;

#define SWA_MAX_HYPOTHESES 32

typedef struct swa_explanation {
    double spec_ratio;
    swa_hypothesis_score scores[SWA_MAX_HYPOTHESES];
    int count;
    int best;               /* index into scores, -1 when none applies */
    bool exact;             /* best matches with no mismatched element */
    char verdict[512];      /* the diagnosis line */
} swa_explanation;

#ifdef __cplusplus
extern "C" {
#endif
/* Scores out (the backend output, dtype storage, [total_qo][Hq][D]) and,
 * when given, lse_ln (natural log) against every applicable hypothesis. */
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
