/* crash.c — a kernel that segfaults: run stores through a NULL pointer.
 * swadiff's isolated worker must record an error for this (case, backend)
 * naming the signal (SIGSEGV), and go on with a fresh worker. */
#include <swadiff/plugin.h>

#include <stddef.h>

static swadiff_rc run(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg,
                      size_t msg_size)
{
    (void)plan, (void)p, (void)o, (void)msg, (void)msg_size;
    /* The pointer itself is volatile: the compiler cannot prove it is NULL,
     * so it emits a plain store (a SIGSEGV), not a trap instruction. */
    volatile int *volatile null = NULL;
    *null = 42;
    return SWADIFF_RC_OK;
}

static const swadiff_plugin_backend backends[] = {
    {"segv", "writes through a NULL pointer", SWADIFF_MEM_HOST, 0.0, NULL, NULL, run, NULL, NULL},
};

static const swadiff_plugin plugin = {SWADIFF_PLUGIN_ABI_VERSION, "crash", 1, backends};

SWADIFF_PLUGIN_EXPORT const swadiff_plugin *swadiff_plugin_entry(void) { return &plugin; }
