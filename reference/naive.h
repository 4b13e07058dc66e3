/* naive.h — the plain-loop reference (no BLAS), kept for the bench's
 * "how much does the blocked reference buy" row.  tests/test_reference.c
 * carries its own independent copy of this algorithm as the second oracle.
 *
 * Ownership: callers own out [total_qo][Hq][D] and lse [total_qo][Hq]. */
#ifndef SWADIFF_REF_NAIVE_H
#define SWADIFF_REF_NAIVE_H

#include "reference/reference.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The spec's attention (docs/spec.md) by plain loops, double, one thread.
 * lse may be NULL.  Returns SWA_OK, SWA_ERR_INVALID or SWA_ERR_NOMEM. */
swa_status swa_reference_naive(const swa_case *c, const swa_inputs *in, double *out, double *lse,
                               swa_error *err);

#ifdef __cplusplus
}
#endif
#endif /* SWADIFF_REF_NAIVE_H */
