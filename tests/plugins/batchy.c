/* batchy.c — the example plug-in's exact attention (examples/plugin_minimal)
 * made to depend on what a batch-invariant kernel must ignore, for the
 * invariance checks (tests/test_invariance.c):
 *   batchy:batch_declared   declares itself batch-invariant, but when the
 *                           batch holds more than one request flips the
 *                           lowest bit of each request's first output
 *                           element (a split or tile chosen from the batch);
 *   batchy:batch_measured   the same, declaring nothing;
 *   batchy:pages_declared   declares itself batch-invariant, but flips that
 *                           bit of request r when its first physical page
 *                           id is odd (a read that depends on where the
 *                           pages lie);
 *   batchy:exact_declared   exact and declared: every transformed case must
 *                           give the same bits, so a harness that handed
 *                           it the wrong rows, keys or pages would fail it.
 * Built like the other fixtures of tests/plugins/ (tests/CMakeLists.txt). */
#define swadiff_plugin_entry minimal_plugin_entry
#include "../../examples/plugin_minimal/plugin_minimal.c"
#undef swadiff_plugin_entry

static void flip_first(const swadiff_problem *p, const swadiff_output *o, int r)
{
    if (p->qo_len[r] < 1)
        return;
    size_t es = p->dtype == SWADIFF_FP32 ? 4 : 2;
    size_t i = (size_t)p->qo_indptr[r] * (size_t)p->num_qo_heads * (size_t)p->head_dim;
    ((unsigned char *)o->out)[i * es] ^= 1; /* little endian: the lowest mantissa bit */
}

static swadiff_rc run_batch_dependent(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg,
                                      size_t msg_size)
{
    swadiff_rc rc = run_exact(plan, p, o, msg, msg_size);
    for (int r = 0; rc == SWADIFF_RC_OK && p->num_requests > 1 && r < p->num_requests; r++)
        flip_first(p, o, r);
    return rc;
}

static swadiff_rc run_page_dependent(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg,
                                     size_t msg_size)
{
    swadiff_rc rc = run_exact(plan, p, o, msg, msg_size);
    for (int r = 0; rc == SWADIFF_RC_OK && r < p->num_requests; r++)
        if (p->kv_indices[p->kv_indptr[r]] % 2)
            flip_first(p, o, r);
    return rc;
}

#define HELD (SWADIFF_INVARIANCE_DETERMINISTIC | SWADIFF_INVARIANCE_BATCH)
static const swadiff_plugin_backend batchy_backends[] = {
    {"batch_declared", "exact, one bit off when batched; declared batch-invariant", SWADIFF_MEM_HOST, LN_BASE,
     supports, NULL, run_batch_dependent, NULL, NULL, HELD},
    {"batch_measured", "exact, one bit off when batched; declares nothing", SWADIFF_MEM_HOST, LN_BASE, supports, NULL,
     run_batch_dependent, NULL, NULL, 0},
    {"pages_declared", "exact, one bit off on odd first pages; declared batch-invariant", SWADIFF_MEM_HOST, LN_BASE,
     supports, NULL, run_page_dependent, NULL, NULL, HELD},
    {"exact_declared", "exact; declared deterministic and batch-invariant", SWADIFF_MEM_HOST, LN_BASE, supports, NULL,
     run_exact, NULL, NULL, HELD},
};

static const swadiff_plugin batchy = {SWADIFF_PLUGIN_ABI_VERSION, "batchy",
                                      (int32_t)(sizeof batchy_backends / sizeof batchy_backends[0]), batchy_backends};

SWADIFF_PLUGIN_EXPORT const swadiff_plugin *swadiff_plugin_entry(void) { return &batchy; }
