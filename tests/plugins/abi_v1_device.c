/* abi_v1_device.c — a plug-in built against ABI version 1 whose backend
 * declares CUDA memory.  Version 1 has no stream or device field, so such a
 * backend cannot run on the harness's stream: swadiff must refuse the
 * plug-in when it loads it, naming the reason, and never call it.
 * Test: tests/test_external.c. */
#include <swadiff/plugin.h>

#include <stdio.h>

/* swadiff_plugin_backend as ABI version 1 defined it (no `tiles`) */
typedef struct v1_backend {
    const char *name;
    const char *description;
    int32_t memory;
    double lse_base;
    swadiff_rc (*supports)(const swadiff_problem *p, char *msg, size_t msg_size);
    swadiff_rc (*plan)(const swadiff_problem *p, void **plan, char *msg, size_t msg_size);
    swadiff_rc (*run)(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg, size_t msg_size);
    void (*plan_free)(void *plan);
} v1_backend;

static swadiff_rc run(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg, size_t msg_size)
{
    (void)plan, (void)p, (void)o;
    snprintf(msg, msg_size, "abi_v1_device: run must never be called");
    return SWADIFF_RC_ERROR;
}

static const v1_backend backends[] = {
    {"gpu", "a version 1 backend that asks for CUDA memory", SWADIFF_MEM_CUDA, 0.0, NULL, NULL, run, NULL},
};

static const swadiff_plugin plugin = {1, "abi_v1_device", 1, (const swadiff_plugin_backend *)(const void *)backends};

SWADIFF_PLUGIN_EXPORT const swadiff_plugin *swadiff_plugin_entry(void) { return &plugin; }
