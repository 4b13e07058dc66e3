/* control.c — the marshalling controls' plug-in, built into swadiff.
 *
 * A run that uses external backends also runs these two backends, through
 * the same staging code (external.c's swadiff_problem, plugin.c's calls),
 * on a sample of its cases (harness/controls.c):
 *
 *   exact         the positive control.  It reads every form of the problem
 *                 the harness hands a plug-in (contiguous K/V with
 *                 kv_seq_indptr; the paged pool through FlashInfer's
 *                 kv_indptr / kv_indices / kv_last_page_len in the declared
 *                 layout; through AITER's block_tables / context_lens; every
 *                 indptr and length), checks that they describe one problem
 *                 (a disagreement is an error naming it), and computes exact
 *                 attention in double from the fields as handed over.  It
 *                 must pass.
 *   window_short  the negative control: the same with every window one key
 *                 short (L - 1 for L >= 1).  It must fail where a window binds.
 *
 * The arithmetic is written out here, independent of reference/: a staging
 * fault cannot be cancelled by the reference reading the same wrong field.
 *
 * Test: tests/test_controls.c. */
#include "backends/external/external_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"

static swa_dtype dtype_of(int32_t d)
{
    return d == SWADIFF_FP16 ? SWA_DTYPE_FP16 : d == SWADIFF_BF16 ? SWA_DTYPE_BF16 : SWA_DTYPE_FP32;
}

static size_t elem_size(int32_t d) { return d == SWADIFF_FP32 ? 4 : 2; }

/* The byte offset of token t of request r's K/V row for kv head h, through
 * each form; -1 when the form's tables do not reach it (said in why). */
static long long ragged_at(const swadiff_problem *p, int r, int t, int h)
{
    return (((long long)p->kv_seq_indptr[r] + t) * p->num_kv_heads + h) * p->head_dim;
}

static long long page_at(const swadiff_problem *p, int32_t page, int t, int h)
{
    int slot = t % p->page_size;
    if (p->layout == SWADIFF_NHD)
        return (((long long)page * p->page_size + slot) * p->num_kv_heads + h) * p->head_dim;
    return (((long long)page * p->num_kv_heads + h) * p->page_size + slot) * p->head_dim;
}

/* The tables' own consistency: lengths, indptrs, page ids, unused slots. */
static const char *check_tables(const swadiff_problem *p, char *why, size_t n)
{
    int B = p->num_requests, ps = p->page_size;
    if (B < 1 || ps < 1 || p->num_pages < 0 || p->num_kv_heads < 1 || p->num_qo_heads % p->num_kv_heads)
        return snprintf(why, n, "num_requests %d, page_size %d, num_pages %d, heads %d/%d", B, ps, p->num_pages,
                        p->num_qo_heads, p->num_kv_heads), why;
    if (p->qo_indptr[0] != 0 || p->kv_seq_indptr[0] != 0 || p->kv_indptr[0] != 0)
        return snprintf(why, n, "an indptr does not start at 0 (qo %d, kv_seq %d, kv %d)", p->qo_indptr[0],
                        p->kv_seq_indptr[0], p->kv_indptr[0]), why;
    for (int r = 0; r < B; r++) {
        int qo = p->qo_len[r], kv = p->kv_len[r], pages = (kv + ps - 1) / ps;
        if (p->qo_indptr[r + 1] - p->qo_indptr[r] != qo)
            return snprintf(why, n, "request %d: qo_indptr gives %d rows, qo_len %d", r,
                            p->qo_indptr[r + 1] - p->qo_indptr[r], qo), why;
        if (p->kv_seq_indptr[r + 1] - p->kv_seq_indptr[r] != kv)
            return snprintf(why, n, "request %d: kv_seq_indptr gives %d keys, kv_len %d", r,
                            p->kv_seq_indptr[r + 1] - p->kv_seq_indptr[r], kv), why;
        if (p->kv_indptr[r + 1] - p->kv_indptr[r] != pages)
            return snprintf(why, n, "request %d: kv_indptr gives %d pages, kv_len %d needs %d", r,
                            p->kv_indptr[r + 1] - p->kv_indptr[r], kv, pages), why;
        if (kv > 0 && p->kv_last_page_len[r] != kv - (pages - 1) * ps)
            return snprintf(why, n, "request %d: kv_last_page_len %d, kv_len %d over pages of %d gives %d", r,
                            p->kv_last_page_len[r], kv, ps, kv - (pages - 1) * ps), why;
        if (p->context_lens[r] != kv)
            return snprintf(why, n, "request %d: context_lens %d, kv_len %d", r, p->context_lens[r], kv), why;
        if (pages > p->max_blocks_per_seq)
            return snprintf(why, n, "request %d: %d pages, block_tables has %d columns", r, pages,
                            p->max_blocks_per_seq), why;
        for (int j = 0; j < p->max_blocks_per_seq; j++) {
            int32_t bt = p->block_tables[(size_t)r * p->max_blocks_per_seq + j];
            if (j < pages && bt != p->kv_indices[p->kv_indptr[r] + j])
                return snprintf(why, n, "request %d: block_tables[%d] is page %d, kv_indices has page %d", r, j, bt,
                                p->kv_indices[p->kv_indptr[r] + j]), why;
            if (j >= pages && bt != -1)
                return snprintf(why, n, "request %d: unused block_tables slot %d holds %d, not -1", r, j, bt), why;
        }
        for (int j = 0; j < pages; j++) {
            int32_t page = p->kv_indices[p->kv_indptr[r] + j];
            if (page < 0 || page >= p->num_pages)
                return snprintf(why, n, "request %d: page %d of %d is id %d, the pool has %d", r, j, pages, page,
                                p->num_pages), why;
        }
    }
    if (p->qo_indptr[B] != p->total_qo || p->kv_seq_indptr[B] != p->total_kv)
        return snprintf(why, n, "totals: qo_indptr ends at %d (total_qo %d), kv_seq_indptr at %d (total_kv %d)",
                        p->qo_indptr[B], p->total_qo, p->kv_seq_indptr[B], p->total_kv), why;
    return NULL;
}

/* The first key some row of request r may see under the window handed
 * over: keys before it may legitimately differ between the forms (poison
 * data evicts their pages to one NaN page; core/data.c). */
static int first_visible(const swadiff_problem *p, int r)
{
    long long p0 = (long long)p->kv_len[r] - p->qo_len[r];
    if (p0 < 0)
        p0 = 0;
    long long lo = p->window_left >= 0 && p0 - p->window_left > 0 ? p0 - p->window_left : 0;
    return lo > p->kv_len[r] ? p->kv_len[r] : (int)lo;
}

/* Every K/V element a row may see, of every request, through the three
 * forms, bitwise. */
static const char *check_forms(const swadiff_problem *p, char *why, size_t n)
{
    size_t es = elem_size(p->dtype);
    const void *rag[2] = {p->k, p->v}, *pool[2] = {p->k_cache, p->v_cache};
    for (int r = 0; r < p->num_requests; r++)
        for (int t = first_visible(p, r); t < p->kv_len[r]; t++) {
            int32_t pg = p->kv_indices[p->kv_indptr[r] + t / p->page_size];
            int32_t bt = p->block_tables[(size_t)r * p->max_blocks_per_seq + t / p->page_size];
            for (int h = 0; h < p->num_kv_heads; h++)
                for (int w = 0; w < 2; w++) {
                    const char *a = (const char *)rag[w] + (size_t)ragged_at(p, r, t, h) * es;
                    const char *b = (const char *)pool[w] + (size_t)page_at(p, pg, t, h) * es;
                    const char *c = (const char *)pool[w] + (size_t)page_at(p, bt, t, h) * es;
                    if (memcmp(a, b, (size_t)p->head_dim * es))
                        return snprintf(why, n, "request %d key %d kv head %d: %s differs between the contiguous "
                                        "%s and the paged pool through kv_indices (%s)", r, t, h, w ? "V" : "K",
                                        w ? "v" : "k", p->layout == SWADIFF_NHD ? "NHD" : "HND"), why;
                    if (memcmp(b, c, (size_t)p->head_dim * es))
                        return snprintf(why, n, "request %d key %d kv head %d: %s differs between kv_indices and "
                                        "block_tables", r, t, h, w ? "V" : "K"), why;
                }
        }
    return NULL;
}

static int window_of(const swadiff_problem *p, bool short_by_one)
{
    return short_by_one && p->window_left >= 1 ? p->window_left - 1 : p->window_left;
}

static swadiff_rc attend(const swadiff_problem *p, const swadiff_output *o, bool short_by_one, char *msg, size_t n)
{
    if (p->memory != SWADIFF_MEM_HOST)
        return snprintf(msg, n, "the control reads host memory, was handed memory kind %d", p->memory),
               SWADIFF_RC_ERROR;
    char why[400];
    const char *bad = check_tables(p, why, sizeof why);
    if (!bad)
        bad = check_forms(p, why, sizeof why);
    if (bad)
        return snprintf(msg, n, "the problem's forms disagree: %s", bad), SWADIFF_RC_ERROR;
    swa_dtype dt = dtype_of(p->dtype);
    int Hq = p->num_qo_heads, Hkv = p->num_kv_heads, D = p->head_dim, group = Hq / Hkv;
    int L = window_of(p, short_by_one), R = p->causal ? 0 : p->window_right;
    double *s = malloc(sizeof(double) * (size_t)(p->total_kv > 0 ? p->total_kv : 1));
    double *acc = malloc(sizeof(double) * (size_t)D);
    if (!s || !acc) {
        free(s);
        free(acc);
        return snprintf(msg, n, "out of memory"), SWADIFF_RC_ERROR;
    }
    for (int r = 0; r < p->num_requests; r++)
        for (int i = 0; i < p->qo_len[r]; i++) {
            long long pos = (long long)p->kv_len[r] - p->qo_len[r] + i, row = p->qo_indptr[r] + i;
            for (int h = 0; h < Hq; h++) {
                int kh = h / group;
                double mx = -INFINITY;
                for (int k = 0; k < p->kv_len[r]; k++) {
                    bool vis = (!p->causal || k <= pos) && (L < 0 || k >= pos - L) && (R < 0 || k <= pos + R);
                    if (!vis) {
                        s[k] = -INFINITY;
                        continue;
                    }
                    double dot = 0;
                    size_t qo = ((size_t)row * Hq + h) * D, ko = (size_t)ragged_at(p, r, k, kh);
                    for (int d = 0; d < D; d++)
                        dot += (double)swa_load(dt, p->q, qo + d) * (double)swa_load(dt, p->k, ko + d);
                    double x = dot * p->sm_scale;
                    if (p->soft_cap > 0)
                        x = p->soft_cap * tanh(x / p->soft_cap);
                    s[k] = x;
                    if (x > mx)
                        mx = x;
                }
                double sum = 0;
                for (int d = 0; d < D; d++)
                    acc[d] = 0;
                for (int k = 0; k < p->kv_len[r] && mx > -INFINITY; k++) {
                    if (s[k] == -INFINITY)
                        continue;
                    double w = exp(s[k] - mx);
                    sum += w;
                    size_t vo = (size_t)ragged_at(p, r, k, kh);
                    for (int d = 0; d < D; d++)
                        acc[d] += w * (double)swa_load(dt, p->v, vo + d);
                }
                size_t oo = ((size_t)row * Hq + h) * D;
                for (int d = 0; d < D; d++)
                    swa_store(dt, o->out, oo + d, sum > 0 ? (float)(acc[d] / sum) : 0.0f);
                if (o->lse)
                    o->lse[(size_t)row * Hq + h] = sum > 0 ? (float)(mx + log(sum)) : -INFINITY;
            }
        }
    free(s);
    free(acc);
    return SWADIFF_RC_OK;
}

static swadiff_rc run_exact(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg, size_t n)
{
    (void)plan;
    return attend(p, o, false, msg, n);
}

static swadiff_rc run_short(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg, size_t n)
{
    (void)plan;
    return attend(p, o, true, msg, n);
}

static const swadiff_plugin_backend control_backends[] = {
    {"exact", "positive control: reads every form of the problem, checks they agree, exact attention in double",
     SWADIFF_MEM_HOST, 2.718281828459045, NULL, NULL, run_exact, NULL, NULL,
     SWADIFF_INVARIANCE_DETERMINISTIC | SWADIFF_INVARIANCE_BATCH},
    {"window_short", "negative control: the same, every window one key short (L - 1 for L >= 1)", SWADIFF_MEM_HOST,
     2.718281828459045, NULL, NULL, run_short, NULL, NULL, SWADIFF_INVARIANCE_DETERMINISTIC | SWADIFF_INVARIANCE_BATCH},
};

static const swadiff_plugin control_plugin = {SWADIFF_PLUGIN_ABI_VERSION, SWA_CONTROL_PLUGIN_NAME, 2,
                                              control_backends};

const swadiff_plugin *swa_control_plugin(void) { return &control_plugin; }
