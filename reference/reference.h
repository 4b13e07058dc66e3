/* reference.h — the CPU oracle: exact sliding-window SDPA (DESIGN.md §1).
 *
 * Computes in double on OpenBLAS (cblas_dgemm per (request, kv head), the
 * qo heads of the group stacked), then applies the exact per-element mask.
 * It shares no mask code with the backends.  Output is double, LSE is the
 * natural log; a row with no visible key gets output 0 and LSE -inf.
 *
 * Variants (swa_ref_mask) are hypotheses for `explain`: they describe a
 * mask that a buggy kernel might have applied instead of the spec's.
 *
 * Ownership: callers own out/lse; sizes are total_qo*num_qo_heads*head_dim
 * and total_qo*num_qo_heads. */
#ifndef SWADIFF_REFERENCE_H
#define SWADIFF_REFERENCE_H

#include "../harness/case.h"
#include "../harness/data.h"

typedef enum {
    SWA_ALIGN_BOTTOM_RIGHT = 0, /* spec: p = kv_len - qo_len + i */
    SWA_ALIGN_TOP_LEFT = 1,     /* bug class 4: p = i */
} swa_ref_align;

typedef struct swa_ref_mask {
    int window_left;            /* -1 none; normally the case's */
    swa_ref_align align;
    bool anchor_request_start;  /* bug class 5: window start = prefix_len - L for every row */
    /* bug class 1: mask compiled out, only a tile-granular KV-start skip
     * remains.  0: off.  Else query rows are grouped in tiles of tile_rows
     * packed rows (row * group + head_in_group), and every row of a tile sees
     * keys from align_down(max(0, p_first - L), tile_kv_align) up to its
     * causal bound, p_first being the position of the tile's first row. */
    int tile_rows;
    int tile_kv_align;          /* >= 1 when tile_rows > 0 */
    bool softcap_before_mask;   /* bug class 8: masked keys get logit -soft_cap */
} swa_ref_mask;

#ifdef __cplusplus
extern "C" {
#endif

/* The spec's mask for this case. */
swa_ref_mask swa_ref_mask_spec(const swa_case *c);

/* Exact reference.  mask == NULL means the spec.  lse may be NULL.
 * Returns SWA_OK or SWA_ERR_NOMEM. */
swa_status swa_reference(const swa_case *c, const swa_inputs *in, const swa_ref_mask *mask,
                         double *out, double *lse, swa_error *err);

/* Low-precision emulated reference: the straightforward kernel's rounding
 * (scores, probabilities and output rounded to the case dtype, fp32 sums).
 * Used by the baseline-relative tolerance mode. */
swa_status swa_reference_lowp(const swa_case *c, const swa_inputs *in, float *out, float *lse,
                              swa_error *err);

/* Threads the reference uses (parallel over (request, kv head)); 0 = auto. */
void swa_reference_set_threads(int threads);

#ifdef __cplusplus
}
#endif
#endif /* SWADIFF_REFERENCE_H */
