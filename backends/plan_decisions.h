/* plan_decisions.h — the decisions a built plan took, read back from the
 * plan structs of backends/plan.h and the case (issue 14, "Detection power":
 * plan-decision coverage).  Read-only: nothing here changes a plan.
 *
 * A decision is a key with a closed set of values (the table in
 * plan_decisions.c).  Most decisions take one value per plan; the per-request
 * ones (req_chunks, window_start, window_pages) take a set: every value some
 * request of the batch took.  A decision a plan does not have (cta_tile_q of
 * a decode plan, window_start without a binding window) is absent.  One
 * decision comes from the case rather than the plan: layers (how many plans
 * the case makes over its batch; each plan itself does not know).
 *
 * The same file says which values and which pairs of values each backend's
 * planner can reach from some valid case (swa_decision_unreachable and
 * swa_decision_pair_unreachable, each rule with its reason), so that
 * `swadiff coverage` (harness/cli_coverage.c) can call an unexercised value a
 * gap only when a case could exercise it.
 *
 * Adding a decision: one enum value below, one row of decision_table in
 * plan_decisions.c, its fill code in the plan reader of each backend it
 * applies to, its applicability and reachability rules there; pairs are one
 * row of pair_table.
 *
 * Tested by tests/test_plan_decisions.c and, through the command, by
 * tests/test_coverage.c. */
#ifndef SWADIFF_PLAN_DECISIONS_H
#define SWADIFF_PLAN_DECISIONS_H

#include "backends/backend.h"

#define SWA_DECISION_MAX_VALUES 8

typedef enum {
    SWA_DEC_DTYPE = 0,
    SWA_DEC_HEAD_DIM,
    SWA_DEC_BATCH,
    SWA_DEC_GQA_GROUP,
    SWA_DEC_PAGE_SIZE,
    SWA_DEC_LAYOUT,
    SWA_DEC_KV_MODE,
    SWA_DEC_CAUSAL,
    SWA_DEC_SM_SCALE,
    SWA_DEC_SOFT_CAP,
    SWA_DEC_WINDOW,
    SWA_DEC_WINDOW_START,
    SWA_DEC_WINDOW_PAGES,
    SWA_DEC_WINDOW_SKIP,
    SWA_DEC_CTA_TILE_Q,
    SWA_DEC_CTA_TILE_KV,
    SWA_DEC_SPLIT_KV,
    SWA_DEC_REQ_CHUNKS,
    SWA_DEC_MERGE,
    SWA_DEC_GRAPH,
    SWA_DEC_GRAPH_BATCH,
    SWA_DEC_ROUTE,
    SWA_DEC_LSE_PATH,
    SWA_DEC_SLIDING_WINDOW,
    SWA_DEC_EMPTY_ROWS,
    SWA_DEC_LAYERS,
    SWA_DEC_COUNT
} swa_decision_key;

typedef struct swa_decision_def {
    const char *key;                                  /* as written in report.json */
    const char *values[SWA_DECISION_MAX_VALUES + 1];  /* NULL-terminated */
    bool multi;                                       /* a set (per request), else one value */
    const char *meaning;                              /* one line for `swadiff coverage --help` */
} swa_decision_def;

/* The decisions of one plan: bit v of set[k] when values[v] of decision k
 * was taken; 0 when the plan does not have decision k. */
typedef struct swa_decisions {
    unsigned set[SWA_DEC_COUNT];
} swa_decisions;

/* A pair of decisions whose interaction the coverage command checks. */
typedef struct swa_decision_pair {
    swa_decision_key a, b;
} swa_decision_pair;

#ifdef __cplusplus
extern "C" {
#endif

const swa_decision_def *swa_decision_def_at(int key); /* NULL outside 0..SWA_DEC_COUNT-1 */
int swa_decision_value_count(int key);
/* Index of value in decision key, -1 when it is not one of its values. */
int swa_decision_value_index(int key, const char *value);
/* The pairs checked, in report order. */
const swa_decision_pair *swa_decision_pairs(int *count);

/* Fills d with the decisions plan took; plan is what b->plan() built for c
 * (b one of the built-in backends).  SWA_ERR_UNSUPPORTED for a backend this
 * file does not know (an external one): d is then empty. */
swa_status swa_plan_decisions(const swa_backend *b, const swa_case *c, const void *plan, swa_decisions *d,
                              swa_error *err);

/* "key=value;key=v1+v2;..." in table order, values of a set in table
 * order.  Returns the length written (the text is cut at n - 1). */
size_t swa_decisions_format(const swa_decisions *d, char *buf, size_t n);

/* Reachability, per built-in backend (NULL: yes; else the rule, one line).
 *  - swa_decision_inapplicable: b's plans never carry decision key;
 *  - swa_decision_unreachable: no valid case makes b's planner take value v
 *    (without a mutant);
 *  - swa_decision_pair_unreachable: no valid case takes va and vb together. */
const char *swa_decision_inapplicable(const swa_backend *b, int key);
const char *swa_decision_unreachable(const swa_backend *b, int key, int v);
const char *swa_decision_pair_unreachable(const swa_backend *b, int ka, int va, int kb, int vb);

#ifdef __cplusplus
}
#endif
#endif /* SWADIFF_PLAN_DECISIONS_H */
