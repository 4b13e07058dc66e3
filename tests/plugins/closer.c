/* closer.c — kernels that break the worker around them rather than crash:
 *   close_fds  closes every descriptor from 3 to 1023 (swadiff's result
 *              pipe among them) and returns;
 *   exit4      calls exit(4), a status a worker once used for "sticky
 *              device error".
 * Each must cost its own result, reported as what happened: not as a
 * signal 9 (swadiff's own kill reads as the OOM killer) and not as a device
 * error on the host. */
#include <swadiff/plugin.h>

#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>

static swadiff_rc close_fds(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg,
                            size_t msg_size)
{
    (void)plan, (void)p, (void)o, (void)msg, (void)msg_size;
    for (int fd = 3; fd < 1024; fd++)
        close(fd);
    return SWADIFF_RC_OK;
}

static swadiff_rc exit4(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg, size_t msg_size)
{
    (void)plan, (void)p, (void)o, (void)msg, (void)msg_size;
    exit(4);
}

static const swadiff_plugin_backend backends[] = {
    {"close_fds", "closes descriptors 3..1023", SWADIFF_MEM_HOST, 0.0, NULL, NULL, close_fds, NULL, NULL},
    {"exit4", "calls exit(4)", SWADIFF_MEM_HOST, 0.0, NULL, NULL, exit4, NULL, NULL},
};

static const swadiff_plugin plugin = {SWADIFF_PLUGIN_ABI_VERSION, "closer", 2, backends};

SWADIFF_PLUGIN_EXPORT const swadiff_plugin *swadiff_plugin_entry(void) { return &plugin; }
