/* nan.c — a kernel whose every output is NaN (quiet: 0x7e00 fp16, 0x7fc0
 * bf16, NAN fp32), LSE included.  swadiff must report a mismatch with the NaN
 * count of the output (and of the LSE when asked), never a pass. */
#include <swadiff/plugin.h>

#include <math.h>
#include <stdint.h>

static swadiff_rc run(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg,
                      size_t msg_size)
{
    (void)plan, (void)msg, (void)msg_size;
    const size_t rows = (size_t)p->total_qo * (size_t)p->num_qo_heads;
    const size_t n = rows * (size_t)p->head_dim;
    for (size_t i = 0; i < n; i++) {
        if (p->dtype == SWADIFF_FP32)
            ((float *)o->out)[i] = NAN;
        else
            ((uint16_t *)o->out)[i] = p->dtype == SWADIFF_FP16 ? 0x7e00 : 0x7fc0;
    }
    if (p->return_lse && o->lse)
        for (size_t i = 0; i < rows; i++)
            o->lse[i] = NAN;
    return SWADIFF_RC_OK;
}

static const swadiff_plugin_backend backends[] = {
    {"nan", "writes NaN into every output element and LSE", SWADIFF_MEM_HOST, 2.718281828459045,
     NULL, NULL, run, NULL, NULL},
};

static const swadiff_plugin plugin = {SWADIFF_PLUGIN_ABI_VERSION, "nan", 1, backends};

SWADIFF_PLUGIN_EXPORT const swadiff_plugin *swadiff_plugin_entry(void) { return &plugin; }
