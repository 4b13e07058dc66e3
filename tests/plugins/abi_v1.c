/* abi_v1.c — a plug-in built against ABI version 1, whose backend entries
 * end before ABI 2's `tiles` field.  swadiff must still load it and read
 * its second entry at the version-1 stride (a version-2 stride would read
 * the second entry from the middle of the first).  Two fp32-only backends
 * over the contiguous K/V: `v1:exact` (correct) and `v1:window_long` (keys
 * [p - L - 1, p]: one key too many, for a diagnosis).
 * Test: tests/test_external.c. */
#include <swadiff/plugin.h>

#include <math.h>
#include <stdio.h>

/* swadiff_plugin_backend as ABI version 1 defined it */
typedef struct v1_backend {
    const char *name;
    const char *description;
    int32_t memory;
    double lse_base;
    swadiff_rc (*supports)(const swadiff_problem *p, char *msg, size_t msg_size);
    swadiff_rc (*plan)(const swadiff_problem *p, void **plan, char *msg, size_t msg_size);
    swadiff_rc (*run)(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg, size_t msg_size);
    void (*plan_free)(void *plan);
} v1_backend;

static swadiff_rc supports(const swadiff_problem *p, char *msg, size_t n)
{
    if (p->dtype == SWADIFF_FP32)
        return SWADIFF_RC_OK;
    snprintf(msg, n, "fp32 only");
    return SWADIFF_RC_UNSUPPORTED;
}

static swadiff_rc attend(const swadiff_problem *p, const swadiff_output *o, int extra_key)
{
    const int Hq = p->num_qo_heads, Hkv = p->num_kv_heads, D = p->head_dim, group = Hq / Hkv;
    const float *q = p->q, *k = p->k, *v = p->v;
    float *out = o->out;
    for (int r = 0; r < p->num_requests; r++)
        for (int i = 0; i < p->qo_len[r]; i++)
            for (int h = 0; h < Hq; h++) {
                long long pos = (long long)p->kv_len[r] - p->qo_len[r] + i, lo = 0, hi = p->kv_len[r] - 1;
                if (p->causal && pos < hi)
                    hi = pos;
                if (!p->causal && p->window_right >= 0 && pos + p->window_right < hi)
                    hi = pos + p->window_right;
                if (p->window_left >= 0 && pos - p->window_left - extra_key > lo)
                    lo = pos - p->window_left - extra_key;
                const size_t row = (size_t)p->qo_indptr[r] + (size_t)i, qo = (row * Hq + h) * D;
                double m = -INFINITY, sum = 0, acc[512] = {0};
                for (int pass = 0; pass < 2; pass++)
                    for (long long t = lo; t <= hi; t++) {
                        size_t ko = (((size_t)p->kv_seq_indptr[r] + (size_t)t) * Hkv + (size_t)(h / group)) * D;
                        double x = 0;
                        for (int d = 0; d < D; d++)
                            x += (double)q[qo + d] * k[ko + d];
                        x *= p->sm_scale;
                        if (p->soft_cap != 0.0f)
                            x = p->soft_cap * tanh(x / p->soft_cap);
                        if (pass == 0) {
                            m = x > m ? x : m;
                            continue;
                        }
                        double w = exp(x - m);
                        sum += w;
                        for (int d = 0; d < D && d < 512; d++)
                            acc[d] += w * v[ko + d];
                    }
                for (int d = 0; d < D; d++)
                    out[qo + d] = lo > hi ? 0.0f : (float)(acc[d < 512 ? d : 0] / sum);
                if (p->return_lse && o->lse)
                    o->lse[row * Hq + h] = lo > hi ? -INFINITY : (float)(m + log(sum));
            }
    return SWADIFF_RC_OK;
}

static swadiff_rc run_exact(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg, size_t n)
{
    (void)plan, (void)msg, (void)n;
    return attend(p, o, 0);
}

static swadiff_rc run_long(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg, size_t n)
{
    (void)plan, (void)msg, (void)n;
    return attend(p, o, 1);
}

static const v1_backend backends[] = {
    {"exact", "exact, fp32, ABI version 1 table", SWADIFF_MEM_HOST, 2.718281828459045, supports, NULL, run_exact,
     NULL},
    {"window_long", "keys [p-L-1, p]: one key too many, ABI version 1 table", SWADIFF_MEM_HOST, 2.718281828459045,
     supports, NULL, run_long, NULL},
};

static const swadiff_plugin plugin = {1, "v1", 2, (const swadiff_plugin_backend *)(const void *)backends};

SWADIFF_PLUGIN_EXPORT const swadiff_plugin *swadiff_plugin_entry(void) { return &plugin; }
