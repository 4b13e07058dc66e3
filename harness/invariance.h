/* invariance.h — the self-comparisons no reference can make (issue 29,
 * docs/invariance.md): a backend's output on a transformed case against its
 * own output on the case.
 *
 *   batch.alone     each request run alone (up to SWA_INV_ALONE_MAX of them)
 *   batch.reversed  the batch in reverse order
 *   pages.order     the same logical KV cache under another page order
 *   pages.size      the same cache under another page size (half, else double,
 *                   the first the backend takes)
 *   split.on/off    split-KV forced on and off (backends with SWA_TRAIT_SPLIT_KNOB)
 *
 * Transformed inputs are made from the case's own (swa_inputs_derive), so
 * request r's q rows and K/V tokens are the same bits in every variant.  A
 * backend that declares itself batch-invariant (SWA_TRAIT_BATCH_INVARIANT)
 * must match bitwise under batch.* and pages.order: a difference fails the
 * result.  Everything else (undeclared backends, pages.size, split.*, which
 * change the reduction order by design) is measured: elements that differ,
 * the largest difference and its ratio to the case's tolerance, where, and
 * a heatmap; never a failure by itself.
 *
 * harness/run.c drives the runs (it owns plan and run); this file lists the
 * records, builds the transformed cases and compares their outputs.
 * Tested by tests/test_invariance.c. */
#ifndef SWADIFF_INVARIANCE_H
#define SWADIFF_INVARIANCE_H

#include "backends/backend.h"
#include "core/case.h"
#include "core/data.h"
#include "harness/results.h"

#define SWA_INV_ALONE_MAX 32 /* requests batch.alone runs alone (spread over the batch) */

typedef enum {
    SWA_IV_ALONE = 0,
    SWA_IV_REVERSED,
    SWA_IV_PAGE_ORDER,
    SWA_IV_PAGE_SIZE,
    SWA_IV_SPLIT_ON,
    SWA_IV_SPLIT_OFF,
    SWA_IV_COUNT
} swa_iv_kind;

/* One transformed case: an owned case record, inputs made from the case's,
 * and the case's request each of its requests is. */
typedef struct swa_inv_case {
    swa_case c;
    swa_inputs in;
    int *from;          /* [c.num_requests] */
    int split;          /* swa_plan_opts.split for its plan */
} swa_inv_case;

#ifdef __cplusplus
extern "C" {
#endif

/* swa_inv_state by value as reports write it ("same", "differs", "skipped",
 * "error"), NULL-terminated. */
extern const char *const swa_inv_state_names[];

/* The records the set `asked` (SWA_INV_*) makes for case c and a backend
 * declaring `traits`, in the table's order: name, detail and bitwise set;
 * a variant that cannot apply (one request, ragged K/V, no split knob, ...)
 * is SWA_INV_SKIPPED with the reason.  kinds[i] gets record i's kind.
 * Returns the number of records (at most SWA_INV_RECORDS). */
int swa_invariance_records(const swa_case *c, unsigned asked, unsigned traits, swa_inv_record *rec,
                           swa_iv_kind *kinds);

/* Transformed cases a record of this kind runs (batch.alone: the requests
 * run alone; the rest 1). */
int swa_invariance_count(const swa_case *c, swa_iv_kind kind);

/* Builds transformed case j (0 <= j < swa_invariance_count) of a kind,
 * one b takes on dev (b->supports), so the caller need not ask again:
 * SWA_ERR_UNSUPPORTED when it does not; pages.size asks for half the page
 * size, then double, and names both refusals when b takes neither. */
swa_status swa_invariance_build(const swa_case *c, const swa_inputs *in, swa_iv_kind kind, int j,
                                const swa_backend *b, const swa_device_ops *dev, swa_inv_case *out,
                                swa_error *err);
void swa_invariance_case_free(swa_inv_case *ic);

/* Adds transformed case ic's outputs (out, lse: NULL when none) to rec,
 * against the case's (base_out, base_lse), element by element in the case
 * dtype; ratios against atol + rtol * |ref_out|. */
void swa_invariance_compare(swa_inv_record *rec, const swa_case *c, const swa_inputs *in, const swa_inv_case *ic,
                            const void *base_out, const float *base_lse, const void *out, const float *lse,
                            double atol, double rtol, const double *ref_out);

/* After every record of r: a bitwise record that differs fails a passed
 * result ([batch_variant]); a record in error makes a passed result an
 * error (its comparison did not happen). */
void swa_invariance_judge(swa_result *r);

/* One line for a record: "batch.alone: 3 / 4096 elements differ (0.1%), the
 * first at ..., greatest 0.0039 (0.25 of the tolerance) at ..." */
void swa_invariance_line(const swa_inv_record *rec, char *buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* SWADIFF_INVARIANCE_H */
