/* ref_internal.h — private pieces of the CPU reference shared by
 * reference.c (the blocked OpenBLAS driver), ref_mask.c (the mask
 * definitions) and bench/bench_ref.c (the reference benchmark's tuning
 * knobs).  Not part of the public contract.
 *
 * Tested through tests/test_reference.c, which checks every mask below
 * against its own element-by-element visibility predicate. */
#ifndef SWADIFF_REF_INTERNAL_H
#define SWADIFF_REF_INTERNAL_H

#include "reference/reference.h"

/* Keys one packed query row (row * group + head_in_group) deals with.
 * Under every mask of swa_ref_mask the visible keys of a row form one
 * interval, so an interval pair describes the row completely:
 *   [visible_begin, visible_end)     keys that get their true logit;
 *   [processed_begin, processed_end) keys the modelled kernel reads at all.
 * Keys processed but not visible get logit -soft_cap (softcap_before_mask,
 * the AITER quirk); every other key is excluded (weight exactly 0).
 * Empty intervals have begin == end. */
typedef struct ref_row_span {
    int processed_begin, processed_end;
    int visible_begin, visible_end;
} ref_row_span;

/* The span of packed row `packed_row` of a request with qo_len query rows
 * and kv_len keys, under mask m.  causal and soft_cap are the case's. */
void ref_row_span_compute(const swa_ref_mask *m, bool causal, double soft_cap, int qo_len,
                          int kv_len, int group, int packed_row, ref_row_span *span);

/* Checks a mask for values the span code cannot interpret. */
swa_status ref_mask_validate(const swa_ref_mask *m, swa_error *err);

/* How the reference uses the cores (measured in bench/bench_ref.c):
 *   REF_PAR_WORKERS: our own pthreads over (request, kv head, row block),
 *                    each calling single-threaded OpenBLAS (the default);
 *   REF_PAR_BLAS:    one block at a time, OpenBLAS threaded inside each call. */
typedef enum { REF_PAR_WORKERS = 0, REF_PAR_BLAS = 1 } ref_parallel_mode;
void ref_set_parallel_mode(ref_parallel_mode mode);

/* Packed rows per block the driver aims for (0 = built-in heuristic);
 * exposed for the bench's tuning runs. */
void ref_set_block_rows_target(int packed_rows);

/* Threads the reference resolves to now (after swa_reference_set_threads). */
int ref_resolved_threads(void);

#endif /* SWADIFF_REF_INTERNAL_H */
