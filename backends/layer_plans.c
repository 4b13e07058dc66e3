/* layer_plans.c — per-layer plans of an interleaved-layer case, with the
 * plan cache and its mutant (layer_plans.h). */
/* Coverage (ci/coverage.sh counts what `swadiff run --device host cases`
 * reaches; the GCOVR_EXCL markers below leave out, each tagged with why):
 *  - "mutant-only" / "mutant switch": taken only under a mutant; run cases
 *    runs none, `swadiff selftest` (ci/run-tests.sh stage 2) runs them all;
 *  - "out-of-memory": an allocation failed; no case makes malloc fail;
 *  - "device-table": a device table without this executor; the host, CUDA
 *    and HIP tables fill every one;
 *  - "defensive": a check against arguments the harness and planners always
 *    build consistently (the case re-checked after the loader validated it,
 *    the cache against the case, a graph update against the captured
 *    capacity, the host executor's inputs); no case can make them disagree.
 *  - "api-only": the backend table's handling of calls the harness never
 *    makes (NULL plan or run options, a plan without a device, a run whose
 *    window_left or return_lse differs from the plan's, plan() of a case
 *    supports() refused, free(NULL), a prefill run without LSE): reachable
 *    from C only; tests/test_backend_options.c exercises each of them.
 * Nothing a case can reach is marked: a case reaches it or it counts. */
#include "backends/layer_plans.h"

#include <stdio.h>
#include <string.h>

swa_case swa_layer_case(const swa_case *c, int l)
{
    swa_case lc = *c;
    if (l >= 0 && l < c->num_layers) /* GCOVR_EXCL_BR_LINE api-only */
        lc.window_left = c->layer_window_left[l];
    return lc;
}

swa_status swa_layer_plans_build(const swa_backend *b, const swa_case *c, const swa_inputs *in,
                                 const swa_plan_opts *o, swa_layer_plans *lp, swa_error *err)
{
    memset(lp, 0, sizeof *lp);
    if (c->num_layers < 1 || c->num_layers > SWA_MAX_LAYERS) /* GCOVR_EXCL_BR_LINE defensive */
        return swa_error_set(err, SWA_ERR_INVALID, "case %s: expected 1 to %d layers, got %d", c->id, SWA_MAX_LAYERS, /* GCOVR_EXCL_LINE defensive */
                             c->num_layers); /* GCOVR_EXCL_LINE defensive */
    bool keyed_by_window = !(o && o->mutant == SWA_MUTANT_PLAN_REUSED_ACROSS_WINDOWS); /* GCOVR_EXCL_BR_LINE mutant switch */
    for (int l = 0; l < c->num_layers; l++) {
        /* the cache: an earlier layer with the same key */
        int hit = -1;
        for (int e = 0; e < l && hit < 0; e++)
            if (!keyed_by_window || c->layer_window_left[e] == c->layer_window_left[l]) /* GCOVR_EXCL_BR_LINE mutant switch */
                hit = e;
        if (hit >= 0) {
            lp->plan[l] = lp->plan[hit];
            lp->num_layers = l + 1;
            continue;
        }
        lp->layer_case[l] = swa_layer_case(c, l);
        const swa_case *lc = &lp->layer_case[l];
        swa_status st = b->plan(lc, in, o, &lp->plan[l], err);
        if (st != SWA_OK) {
            char why[sizeof err->message];
            snprintf(why, sizeof why, "%s", err->message);
            swa_layer_plans_free(b, lp);
            return swa_error_set(err, st, "layer %d (window_left %d): %s", l, c->layer_window_left[l], why);
        }
        lp->owner[l] = true;
        lp->num_layers = l + 1;
    }
    return SWA_OK;
}

void swa_layer_plans_free(const swa_backend *b, swa_layer_plans *lp)
{
    for (int l = 0; l < lp->num_layers; l++)
        if (lp->owner[l] && lp->plan[l]) /* GCOVR_EXCL_BR_LINE api-only */
            b->free(lp->plan[l]);
    memset(lp, 0, sizeof *lp);
}
