/* reference.h — the CPU oracle: exact sliding-window SDPA (docs/spec.md).
 *
 * Computes in double on OpenBLAS (cblas_dgemm per (request, kv head), the
 * qo heads of the group stacked), then applies the exact per-element mask.
 * It shares no mask code with the backends.  Output is double, LSE is the
 * natural log; a row with no visible key gets output 0 and LSE -inf.
 *
 * Variants (swa_ref_mask) are hypotheses for `explain`: they describe a
 * mask that a buggy kernel might have applied instead of the spec's; it
 * scores large cases on a sample of rows and heads (swa_reference_sampled)
 * and scores variants with equal signatures once (swa_ref_mask_signature).
 *
 * Requests with qo_len > kv_len (prefill case files may ask for them)
 * follow the same formula: causal rows at p < 0 see no key.  Rows can also
 * be empty under a two-sided band (non-causal window_right) that lies past
 * the request's keys; every empty row gets output 0 and LSE -inf (see
 * tests/test_reference.c, empty_rows_zero_and_minus_inf, and
 * tests/test_window_kinds.c).
 *
 * Threads: one computation at a time per process (calls are serialised);
 * inside, worker threads share (request, kv head, block of rows) items and
 * OpenBLAS runs single-threaded in each (measured faster on 2 cores than one
 * block at a time with threaded OpenBLAS; `swadiff bench --reference`).
 * The OpenBLAS thread count is restored on return.
 *
 * Ownership: callers own out/lse; sizes are total_qo*num_qo_heads*head_dim
 * and total_qo*num_qo_heads. */
#ifndef SWADIFF_REFERENCE_H
#define SWADIFF_REFERENCE_H

#include "core/case.h"
#include "core/data.h"

typedef enum {
    SWA_ALIGN_BOTTOM_RIGHT = 0, /* spec: p = kv_len - qo_len + i */
    SWA_ALIGN_TOP_LEFT = 1,     /* bug class 4: p = i */
} swa_ref_align;

typedef struct swa_ref_mask {
    int window_left;            /* -1 none; normally the case's */
    int window_right;           /* -1 none; R >= 0: non-causal rows see k <= p + R */
    int chunk_size;             /* 0 none; C >= 1: rows see k >= floor(p/C)*C */
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
    /* bug class 14: the chunk start read as exclusive, keys (floor(p/C)*C, p]
     * instead of [floor(p/C)*C, p] (only with chunk_size > 0) */
    bool chunk_start_exclusive;
} swa_ref_mask;

/* A subset of the output, for `explain` on cases too large to score every
 * hypothesis on all of it: query rows (global index, as in qo_indptr) and
 * kv heads (with every qo head of their group).  NULL selects all. */
typedef struct swa_ref_sample {
    const unsigned char *rows;      /* [total_qo]: nonzero = compute this row */
    const unsigned char *kv_heads;  /* [num_kv_heads]: nonzero = compute its group */
} swa_ref_sample;

#ifdef __cplusplus
extern "C" {
#endif

/* The spec's mask for this case. */
swa_ref_mask swa_ref_mask_spec(const swa_case *c);

/* Exact reference.  mask == NULL means the spec.  lse may be NULL.
 * Returns SWA_OK, SWA_ERR_INVALID (case, inputs or mask inconsistent; the
 * message says which) or SWA_ERR_NOMEM. */
swa_status swa_reference(const swa_case *c, const swa_inputs *in, const swa_ref_mask *mask,
                         double *out, double *lse, swa_error *err);

/* The same on a sample: only the selected (row, head) elements of out (and
 * lse) are written, each exactly as swa_reference writes it; the others are
 * left as they were.  sample == NULL is swa_reference. */
swa_status swa_reference_sampled(const swa_case *c, const swa_inputs *in, const swa_ref_mask *mask,
                                 const swa_ref_sample *sample, double *out, double *lse, swa_error *err);

/* A 64-bit digest of the keys every packed query row of the case sees under
 * mask m (with the case's causal flag and soft cap): two masks with equal
 * signatures give the same reference on the same inputs, so `explain`
 * scores such variants once.  (A collision between different masks is a
 * 2^-64 event.) */
uint64_t swa_ref_mask_signature(const swa_case *c, const swa_ref_mask *m);

/* Low-precision emulated reference: the straightforward kernel's rounding
 * (scores, probabilities and output rounded to the case dtype, fp32 sums).
 * Used by the baseline-relative tolerance mode.  The spec's mask; out holds
 * dtype-representable values as float, lse is fp32 natural log (may be
 * NULL).  Same return values as swa_reference. */
swa_status swa_reference_lowp(const swa_case *c, const swa_inputs *in, float *out, float *lse,
                              swa_error *err);

/* Threads the reference uses (parallel over (request, kv head, row block));
 * 0 = auto (the CPUs this process may run on). */
void swa_reference_set_threads(int threads);

#ifdef __cplusplus
}
#endif
#endif /* SWADIFF_REFERENCE_H */
