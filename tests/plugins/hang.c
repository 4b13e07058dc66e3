/* hang.c — a kernel that never returns: run sleeps forever.  swadiff must
 * kill the worker after --timeout, record a timeout error for this
 * (case, backend), and go on with a fresh worker. */
#define _POSIX_C_SOURCE 200809L /* sleep() */
#include <swadiff/plugin.h>

#include <unistd.h>

static swadiff_rc run(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg,
                      size_t msg_size)
{
    (void)plan, (void)p, (void)o, (void)msg, (void)msg_size;
    for (;;)
        sleep(1);
    return SWADIFF_RC_ERROR; /* never reached */
}

static const swadiff_plugin_backend backends[] = {
    {"sleep", "never returns", SWADIFF_MEM_HOST, 0.0, NULL, NULL, run, NULL, NULL},
};

static const swadiff_plugin plugin = {SWADIFF_PLUGIN_ABI_VERSION, "hang", 1, backends};

SWADIFF_PLUGIN_EXPORT const swadiff_plugin *swadiff_plugin_entry(void) { return &plugin; }
