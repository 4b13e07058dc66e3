/* bad_abi.c — a plug-in built for an ABI version no swadiff speaks
 * (abi_version = 42).  swadiff must refuse to load it, naming
 * both versions, and never call any of its functions. */
#include <swadiff/plugin.h>

#include <stdio.h>

static swadiff_rc run(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg,
                      size_t msg_size)
{
    (void)plan, (void)p, (void)o;
    snprintf(msg, msg_size, "bad_abi: run must never be called (the ABI check should refuse this plug-in)");
    return SWADIFF_RC_ERROR;
}

static const swadiff_plugin_backend backends[] = {
    {"ok", "would be fine, but the table's ABI version is wrong", SWADIFF_MEM_HOST, 0.0, NULL,
     NULL, run, NULL, NULL},
};

static const swadiff_plugin plugin = {42, "bad_abi", 1, backends};

SWADIFF_PLUGIN_EXPORT const swadiff_plugin *swadiff_plugin_entry(void) { return &plugin; }
