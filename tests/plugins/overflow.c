/* overflow.c — a kernel that writes one element past the end of out (element
 * total_qo * Hq * D, in the dtype's size), and nothing else outside.  The
 * output itself is zeros.  swadiff's guard bytes must catch the write. */
#include <swadiff/plugin.h>

#include <stddef.h>
#include <string.h>

static swadiff_rc run(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg,
                      size_t msg_size)
{
    (void)plan, (void)msg, (void)msg_size;
    const size_t elem = p->dtype == SWADIFF_FP32 ? 4 : 2;
    const size_t n = (size_t)p->total_qo * (size_t)p->num_qo_heads * (size_t)p->head_dim;
    unsigned char *out = o->out;
    memset(out, 0, n * elem); /* every element written (zeros: 0.0 in each dtype) */
    /* The extra element gets the complement of what is there, so the write
     * changes the guard whatever its pattern. */
    for (size_t b = 0; b < elem; b++)
        out[n * elem + b] = (unsigned char)~out[n * elem + b];
    return SWADIFF_RC_OK;
}

static const swadiff_plugin_backend backends[] = {
    {"guard", "writes one element past the end of out", SWADIFF_MEM_HOST, 0.0, NULL, NULL, run,
     NULL, NULL},
};

static const swadiff_plugin plugin = {SWADIFF_PLUGIN_ABI_VERSION, "overflow", 1, backends};

SWADIFF_PLUGIN_EXPORT const swadiff_plugin *swadiff_plugin_entry(void) { return &plugin; }
