/* layer_plans.c — per-layer plans of an interleaved-layer case, with the
 * plan cache and its mutant (layer_plans.h). */
/* Coverage: what no case reaches (mutant switches, allocation failures,
 * guards against calls the harness never makes: backends/guards.h) is left
 * out by the patterns of ci/coverage.sh, which says why; the exclusion
 * markers below are the few places no pattern can tell, each with its
 * reason. */
#include "backends/layer_plans.h"

#include <stdio.h>
#include <string.h>

#include "backends/guards.h"

swa_case swa_layer_case(const swa_case *c, int l)
{
    swa_case lc = *c;
    if (SWA_API_GUARD(l >= 0 && l < c->num_layers))
        lc.window_left = c->layer_window_left[l];
    return lc;
}

swa_status swa_layer_plans_build(const swa_backend *b, const swa_case *c, const swa_inputs *in,
                                 const swa_plan_opts *o, swa_layer_plans *lp, swa_error *err)
{
    memset(lp, 0, sizeof *lp);
    if (SWA_API_GUARD(c->num_layers < 1 || c->num_layers > SWA_MAX_LAYERS))
        return SWA_API_ERROR(err, SWA_ERR_INVALID, "case %s: expected 1 to %d layers, got %d", c->id, SWA_MAX_LAYERS,
                             c->num_layers);
    bool keyed_by_window = !(o && o->mutant == SWA_MUTANT_PLAN_REUSED_ACROSS_WINDOWS);
    for (int l = 0; l < c->num_layers; l++) {
        /* the cache: an earlier layer with the same key */
        int hit = -1;
        for (int e = 0; e < l && hit < 0; e++)
            if (!keyed_by_window || /* GCOVR_EXCL_BR_LINE mutant switch (PLAN_REUSED_ACROSS_WINDOWS) */
                c->layer_window_left[e] == c->layer_window_left[l])
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
        if (lp->owner[l] &&
            SWA_API_GUARD(lp->plan[l]))
            b->free(lp->plan[l]);
    memset(lp, 0, sizeof *lp);
}
