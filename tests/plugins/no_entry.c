/* no_entry.c — a valid shared object whose entry point is misspelled: it
 * exports swadiff_plugin_init, not swadiff_plugin_entry.  swadiff must refuse
 * it, saying that the symbol swadiff_plugin_entry is missing from the file. */
#include <swadiff/plugin.h>

#include <stdio.h>

static swadiff_rc run(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg,
                      size_t msg_size)
{
    (void)plan, (void)p, (void)o;
    snprintf(msg, msg_size, "no_entry: run must never be called");
    return SWADIFF_RC_ERROR;
}

static const swadiff_plugin_backend backends[] = {
    {"ok", "unreachable: the entry point has the wrong name", SWADIFF_MEM_HOST, 0.0, NULL, NULL,
     run, NULL, NULL},
};

static const swadiff_plugin plugin = {SWADIFF_PLUGIN_ABI_VERSION, "no_entry", 1, backends};

/* The typo under test: the wrong name, exported. */
SWADIFF_PLUGIN_EXPORT const swadiff_plugin *swadiff_plugin_init(void);
SWADIFF_PLUGIN_EXPORT const swadiff_plugin *swadiff_plugin_init(void) { return &plugin; }
