/* decode_auto.c — the decode selector: routes a case to decode_fa2 when it
 * asks for CUDA-graph mode (decode_fa2 pads its grid and reads num_work from
 * memory, so replay with another batch is correct) or for chunked local
 * attention (AITER PA v1 cannot express a chunk start), and to decode_aiter
 * otherwise (the fast path for plain decode, sliding window included now
 * that the S = L + 1 mapping is right).  The choice is recorded in the plan
 * (swa_decode_auto_chosen) and reported through the plan-time warning hook.
 * Tested by tests/test_backend_decode.c. */
/* Coverage: what no case reaches (mutant switches, allocation failures,
 * guards against calls the harness never makes: backends/guards.h) is left
 * out by the patterns of ci/coverage.sh, which says why. */
#include "backends/decode_aiter.h"
#include "backends/decode_fa2.h"
#include "backends/plan_common.h"

#define BACKEND "decode_auto"

typedef struct auto_state {
    const swa_backend *chosen;
    void *plan; /* the chosen backend's plan */
} auto_state;

const swa_backend *swa_decode_auto_route(const swa_case *c)
{
    return c->cuda_graph || c->chunk_size > 0 ? &swa_backend_decode_fa2 : &swa_backend_decode_aiter;
}

static const char *auto_supports(const swa_case *c, const swa_device_ops *dev, char *buf, size_t n)
{
    const swa_backend *b = swa_decode_auto_route(c);
    char inner[256];
    if (!b->supports(c, dev, inner, sizeof inner))
        return NULL;
    snprintf(buf, n, "%s routes this case to %s, which cannot run it: %s", BACKEND, b->name, inner);
    return buf;
}

static swa_status auto_plan(const swa_case *c, const swa_inputs *in, const swa_plan_opts *o, void **plan,
                            swa_error *err)
{
    *plan = NULL;
    auto_state *s = swa_plan_calloc(1, sizeof *s, BACKEND, err);
    if (SWA_ALLOC_FAILED(s))
        return SWA_ERR_NOMEM;
    s->chosen = swa_decode_auto_route(c);
    swa_status st = s->chosen->plan(c, in, o, &s->plan, err);
    if (SWA_API_GUARD(st != SWA_OK)) { free(s); return st; }
    if (o && o->warn) {
        char msg[256];
        snprintf(msg, sizeof msg, "decode_auto routed this case to %s (%s)", s->chosen->name,
                 c->cuda_graph ? "CUDA-graph mode needs decode_fa2's padded grid"
                 : c->chunk_size > 0 ? "chunked local attention: AITER PA v1 has no chunk mask"
                                     : "no CUDA graph: the AITER path");
        o->warn(o->warn_ctx, BACKEND, msg);
    }
    *plan = s;
    return SWA_OK;
}

const swa_backend *swa_decode_auto_chosen(const void *backend_plan)
{
    return backend_plan ? ((const auto_state *)backend_plan)->chosen : NULL;
}

const void *swa_decode_auto_plan_of(const void *backend_plan)
{
    return backend_plan ? ((const auto_state *)backend_plan)->plan : NULL;
}

static double auto_run_lse_base(const void *plan, const swa_run_opts *r)
{
    const auto_state *s = plan;
    return s->chosen->run_lse_base(s->plan, r);
}

static swa_status auto_run(void *plan, void *dev_inputs, const swa_run_opts *r, const swa_out_args *o,
                           swa_error *err)
{
    auto_state *s = plan;
    return s->chosen->run(s->plan, dev_inputs, r, o, err);
}

static void auto_free(void *plan)
{
    auto_state *s = plan;
    if (SWA_API_GUARD(!s)) return;
    s->chosen->free(s->plan);
    free(s);
}

/* The route depends on the case alone (cuda_graph, chunk size), never on
 * the batch: the routed backend's traits. */
static unsigned auto_traits(const swa_backend *b, const swa_case *c)
{
    (void)b;
    const swa_backend *inner = swa_decode_auto_route(c);
    return inner->traits ? inner->traits(inner, c) : 0u;
}

const swa_backend swa_backend_decode_auto = {
    .name = BACKEND,
    .description = "decode selector: CUDA-graph cases run on decode_fa2, the rest on decode_aiter",
    .api_version = SWA_BACKEND_API_VERSION,
    .flag = SWA_BACKEND_DECODE_AUTO,
    .lse_base = 0.0, /* may route to decode_aiter, which has none; run_lse_base tells per plan */
    .supports = auto_supports,
    .plan = auto_plan,
    .run_lse_base = auto_run_lse_base,
    .run = auto_run,
    .free = auto_free,
    .traits = auto_traits,
};
