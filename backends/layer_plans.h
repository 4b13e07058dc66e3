/* layer_plans.h — the plans of an interleaved-layer case (core/case.h,
 * "layers"): the same batch planned once per distinct layer window, the
 * way a serving wrapper keeps one plan (or wrapper object) per window for
 * models that interleave local and global layers (Gemma 2/3, GPT-OSS).
 *
 * The cache is keyed by the batch (every layer of a case has the same one)
 * and the window, so layers that share a window share a plan and layers
 * with different windows never do.  Mutant PLAN_REUSED_ACROSS_WINDOWS keys
 * it by the batch alone: every later layer runs with the first layer's plan
 * and window (the bug of a plan cache or graph-replay refresh that forgets
 * the window).
 *
 * Defined in backends/layer_plans.c.  Tested through
 * tests/test_detection_power.c (the layers of a case, each planned with its
 * window, run in order) and the layered cases of the library. */
#ifndef SWADIFF_LAYER_PLANS_H
#define SWADIFF_LAYER_PLANS_H

#include "backends/backend.h"

typedef struct swa_layer_plans {
    int num_layers;
    void *plan[SWA_MAX_LAYERS];  /* plan of layer l (shared between layers of one key) */
    bool owner[SWA_MAX_LAYERS];  /* layer l built plan[l]: free it */
    /* the case each layer was planned with (c with the layer's window; it
     * shares c's arrays): a plan may keep a pointer to its case, so lp
     * stays where it is while its plans live */
    swa_case layer_case[SWA_MAX_LAYERS];
} swa_layer_plans;

#ifdef __cplusplus
extern "C" {
#endif

/* Plans every layer of c (c->num_layers >= 1) with backend b: layer l is c
 * with window_left = c->layer_window_left[l].  On failure nothing is left
 * allocated and err names the layer. */
swa_status swa_layer_plans_build(const swa_backend *b, const swa_case *c, const swa_inputs *in,
                                 const swa_plan_opts *o, swa_layer_plans *lp, swa_error *err);
void swa_layer_plans_free(const swa_backend *b, swa_layer_plans *lp);

/* The case as layer l sees it: c with layer l's window (shares c's arrays;
 * do not free). */
swa_case swa_layer_case(const swa_case *c, int l);

#ifdef __cplusplus
}
#endif
#endif /* SWADIFF_LAYER_PLANS_H */
