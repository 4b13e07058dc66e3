/* const_writer.c — backends that write into the inputs the ABI hands them
 * as const, the way a buggy kernel does (in-place RoPE on q, a page table
 * "fixed up" in place).  swadiff must record an error for the backend that
 * wrote, naming the input, and restore the inputs so that the backends and
 * the cases after it (a window sweep lends one case's inputs to the next)
 * are judged on what they should have read.  The outputs are zeros: the
 * result is an error for the write, whatever they hold.
 *
 *   zero_q          zeroes q
 *   scribble_pages  fills kv_indices with 0x7f bytes (page id 2139062143)
 *   plan_writes     zeroes kv_last_page_len in plan(), then runs cleanly */
#include <swadiff/plugin.h>

#include <stdint.h>
#include <string.h>

static size_t dtype_bytes(const swadiff_problem *p) { return p->dtype == SWADIFF_FP32 ? 4 : 2; }

static void zero_out(const swadiff_problem *p, const swadiff_output *o)
{
    memset(o->out, 0, (size_t)p->total_qo * p->num_qo_heads * p->head_dim * dtype_bytes(p));
    if (p->return_lse && o->lse)
        memset(o->lse, 0, (size_t)p->total_qo * p->num_qo_heads * sizeof(float));
}

static swadiff_rc zero_q(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg, size_t n)
{
    (void)plan, (void)msg, (void)n;
    memset((void *)p->q, 0, (size_t)p->total_qo * p->num_qo_heads * p->head_dim * dtype_bytes(p));
    zero_out(p, o);
    return SWADIFF_RC_OK;
}

static swadiff_rc scribble_pages(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg, size_t n)
{
    (void)plan, (void)msg, (void)n;
    if (p->kv_indices && p->kv_indptr)
        memset((void *)p->kv_indices, 0x7f, (size_t)p->kv_indptr[p->num_requests] * sizeof(int32_t));
    zero_out(p, o);
    return SWADIFF_RC_OK;
}

static swadiff_rc plan_writes(const swadiff_problem *p, void **plan, char *msg, size_t n)
{
    (void)msg, (void)n;
    if (p->kv_last_page_len)
        memset((void *)p->kv_last_page_len, 0, (size_t)p->num_requests * sizeof(int32_t));
    *plan = (void *)p;
    return SWADIFF_RC_OK;
}

static void plan_free(void *plan) { (void)plan; }

static swadiff_rc clean_run(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg, size_t n)
{
    (void)plan, (void)msg, (void)n;
    zero_out(p, o);
    return SWADIFF_RC_OK;
}

static const swadiff_plugin_backend backends[] = {
    {"zero_q", "zeroes q, then writes zeros", SWADIFF_MEM_HOST, 0, NULL, NULL, zero_q, NULL, NULL},
    {"scribble_pages", "overwrites kv_indices, then writes zeros", SWADIFF_MEM_HOST, 0, NULL, NULL, scribble_pages,
     NULL, NULL},
    {"plan_writes", "zeroes kv_last_page_len in plan(), then writes zeros", SWADIFF_MEM_HOST, 0, NULL, plan_writes,
     clean_run, plan_free, NULL},
};

static const swadiff_plugin plugin = {SWADIFF_PLUGIN_ABI_VERSION, "const_writer", 3, backends};

SWADIFF_PLUGIN_EXPORT const swadiff_plugin *swadiff_plugin_entry(void) { return &plugin; }
