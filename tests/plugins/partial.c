/* partial.c — a kernel that writes only the first half of the output
 * elements (zeros) and leaves the rest as swadiff poisoned them.  swadiff's
 * unwritten-element check must report the untouched second half. */
#include <swadiff/plugin.h>

#include <stddef.h>
#include <string.h>

static swadiff_rc run(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg,
                      size_t msg_size)
{
    (void)plan, (void)msg, (void)msg_size;
    const size_t elem = p->dtype == SWADIFF_FP32 ? 4 : 2;
    const size_t n = (size_t)p->total_qo * (size_t)p->num_qo_heads * (size_t)p->head_dim;
    memset(o->out, 0, n / 2 * elem); /* elements [0, n/2): 0.0 in each dtype */
    return SWADIFF_RC_OK;
}

static const swadiff_plugin_backend backends[] = {
    {"half", "writes only the first half of the output", SWADIFF_MEM_HOST, 0.0, NULL, NULL, run,
     NULL, NULL},
};

static const swadiff_plugin plugin = {SWADIFF_PLUGIN_ABI_VERSION, "partial", 1, backends};

SWADIFF_PLUGIN_EXPORT const swadiff_plugin *swadiff_plugin_entry(void) { return &plugin; }
