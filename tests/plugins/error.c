/* error.c — the two polite failures.  error:fails returns SWADIFF_RC_ERROR
 * from run: swadiff must record an error carrying the message verbatim.
 * error:refuses returns SWADIFF_RC_UNSUPPORTED from supports for every
 * problem: swadiff must record a skip with that reason and never call run. */
#include <swadiff/plugin.h>

#include <stdio.h>

static swadiff_rc run_fails(void *plan, const swadiff_problem *p, const swadiff_output *o,
                            char *msg, size_t msg_size)
{
    (void)plan, (void)p, (void)o;
    snprintf(msg, msg_size, "simulated kernel failure: out of workspace");
    return SWADIFF_RC_ERROR;
}

static swadiff_rc supports_refuses(const swadiff_problem *p, char *msg, size_t msg_size)
{
    (void)p;
    snprintf(msg, msg_size, "head_dim 128 not supported by this test plug-in");
    return SWADIFF_RC_UNSUPPORTED;
}

static swadiff_rc run_refuses(void *plan, const swadiff_problem *p, const swadiff_output *o,
                              char *msg, size_t msg_size)
{
    (void)plan, (void)p, (void)o;
    snprintf(msg, msg_size, "error:refuses: run called although supports refused the problem");
    return SWADIFF_RC_ERROR;
}

static const swadiff_plugin_backend backends[] = {
    {"fails", "run always fails with an error message", SWADIFF_MEM_HOST, 0.0, NULL, NULL,
     run_fails, NULL, NULL},
    {"refuses", "supports refuses every problem", SWADIFF_MEM_HOST, 0.0, supports_refuses, NULL,
     run_refuses, NULL, NULL},
};

static const swadiff_plugin plugin = {SWADIFF_PLUGIN_ABI_VERSION, "error", 2, backends};

SWADIFF_PLUGIN_EXPORT const swadiff_plugin *swadiff_plugin_entry(void) { return &plugin; }
