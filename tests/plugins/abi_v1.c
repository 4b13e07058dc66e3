/* abi_v1.c — a plug-in built against ABI version 1 (before device memory
 * added qo_indptr_dev, stream and device to swadiff_problem): its table
 * says abi_version 1.  swadiff must refuse it naming version 1 and its
 * own, never call it, and not read its swadiff_problem the new way. */
#include <swadiff/plugin.h>

#include <stdio.h>

static swadiff_rc run(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg,
                      size_t msg_size)
{
    (void)plan, (void)p, (void)o;
    snprintf(msg, msg_size, "abi_v1: run must never be called (a version 1 problem has another layout)");
    return SWADIFF_RC_ERROR;
}

static const swadiff_plugin_backend backends[] = {
    {"old", "a version 1 backend", SWADIFF_MEM_HOST, 0.0, NULL, NULL, run, NULL},
};

static const swadiff_plugin plugin = {1, "abi_v1", 1, backends};

SWADIFF_PLUGIN_EXPORT const swadiff_plugin *swadiff_plugin_entry(void) { return &plugin; }
