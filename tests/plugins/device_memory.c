/* device_memory.c — backends that declare device memory, built as plain C
 * (no GPU toolkit): device_memory:cuda (SWADIFF_MEM_CUDA) and
 * device_memory:hip (SWADIFF_MEM_HIP).  Under --device host each result
 * must be a skip saying which --device the backend needs; none of their
 * functions may be called there. */
#include <swadiff/plugin.h>

#include <stdio.h>

static swadiff_rc supports(const swadiff_problem *p, char *msg, size_t msg_size)
{
    (void)p;
    snprintf(msg, msg_size, "device_memory: supports called on a device without that memory");
    return SWADIFF_RC_ERROR;
}

static swadiff_rc run(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg,
                      size_t msg_size)
{
    (void)plan, (void)p, (void)o;
    snprintf(msg, msg_size, "device_memory: run called on a device without that memory");
    return SWADIFF_RC_ERROR;
}

static const swadiff_plugin_backend backends[] = {
    {"cuda", "wants CUDA device pointers", SWADIFF_MEM_CUDA, 0.0, supports, NULL, run, NULL, NULL},
    {"hip", "wants HIP device pointers", SWADIFF_MEM_HIP, 0.0, supports, NULL, run, NULL, NULL},
};

static const swadiff_plugin plugin = {SWADIFF_PLUGIN_ABI_VERSION, "device_memory", 2, backends};

SWADIFF_PLUGIN_EXPORT const swadiff_plugin *swadiff_plugin_entry(void) { return &plugin; }
