/* fields.c — checks the host problem swadiff hands a host-memory backend
 * against the contract of include/swadiff/plugin.h: struct_size, memory,
 * stream NULL and device -1, every *_dev pointer equal to its host array
 * (qo_indptr_dev too), the index arrays consistent with the sizes.  Its
 * run always returns an error: "host problem as documented" or the first
 * field that is not. */
#include <swadiff/plugin.h>

#include <stdio.h>

static const char *check(const swadiff_problem *p)
{
    if (p->struct_size != sizeof *p) return "struct_size is not sizeof(swadiff_problem)";
    if (p->memory != SWADIFF_MEM_HOST) return "memory is not SWADIFF_MEM_HOST";
    if (p->stream != NULL) return "stream is not NULL";
    if (p->device != -1) return "device is not -1";
    if (p->qo_indptr_dev != p->qo_indptr) return "qo_indptr_dev is not qo_indptr";
    if (p->kv_seq_indptr_dev != p->kv_seq_indptr) return "kv_seq_indptr_dev is not kv_seq_indptr";
    if (p->kv_indptr_dev != p->kv_indptr || p->kv_indices_dev != p->kv_indices ||
        p->kv_last_page_len_dev != p->kv_last_page_len)
        return "a FlashInfer *_dev array is not its host array";
    if (p->block_tables_dev != p->block_tables || p->context_lens_dev != p->context_lens)
        return "an AITER *_dev array is not its host array";
    if (p->qo_indptr[0] != 0 || p->qo_indptr[p->num_requests] != p->total_qo) return "qo_indptr does not span total_qo";
    if (p->kv_seq_indptr[p->num_requests] != p->total_kv) return "kv_seq_indptr does not span total_kv";
    for (int r = 0; r < p->num_requests; r++) {
        if (p->qo_indptr[r + 1] - p->qo_indptr[r] != p->qo_len[r]) return "qo_len disagrees with qo_indptr";
        if (p->context_lens[r] != p->kv_len[r]) return "context_lens is not kv_len";
        int pages = p->kv_indptr[r + 1] - p->kv_indptr[r];
        if ((pages - 1) * p->page_size + p->kv_last_page_len[r] != p->kv_len[r])
            return "the page table does not hold kv_len keys";
        for (int i = 0; i < pages; i++)
            if (p->block_tables[(size_t)r * p->max_blocks_per_seq + i] != p->kv_indices[p->kv_indptr[r] + i])
                return "block_tables disagrees with kv_indices";
    }
    return NULL;
}

static swadiff_rc run(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg,
                      size_t msg_size)
{
    (void)plan, (void)o;
    const char *bad = check(p);
    snprintf(msg, msg_size, "%s", bad ? bad : "host problem as documented");
    return SWADIFF_RC_ERROR;
}

static const swadiff_plugin_backend backends[] = {
    {"host", "checks the host problem's fields", SWADIFF_MEM_HOST, 0.0, NULL, NULL, run, NULL, NULL},
};

static const swadiff_plugin plugin = {SWADIFF_PLUGIN_ABI_VERSION, "fields", 1, backends};

SWADIFF_PLUGIN_EXPORT const swadiff_plugin *swadiff_plugin_entry(void) { return &plugin; }
