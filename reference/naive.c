/* naive.c — the spec's attention by plain loops (see naive.h).  One query
 * row and head at a time: logits of the visible keys, max-subtracted
 * softmax, weighted sum of V.  No BLAS, no blocking: the baseline the
 * bench measures swa_reference against.  Tested in tests/test_reference.c
 * (it must agree with swa_reference). */
#include "reference/naive.h"

#include <math.h>
#include <stdlib.h>

swa_status swa_reference_naive(const swa_case *c, const swa_inputs *in, double *out, double *lse,
                               swa_error *err)
{
    if (!c || !in || !out || c->num_kv_heads <= 0 || c->num_qo_heads % c->num_kv_heads)
        return swa_error_set(err, SWA_ERR_INVALID, "naive reference: bad case, inputs or output");
    const int Hq = c->num_qo_heads, Hkv = c->num_kv_heads, D = c->head_dim;
    const int group = Hq / Hkv;
    int max_kv = 1;
    for (int r = 0; r < c->num_requests; r++)
        if (c->kv_len[r] > max_kv)
            max_kv = c->kv_len[r];
    double *logit = malloc((size_t)max_kv * sizeof *logit);
    double *acc = malloc((size_t)D * sizeof *acc);
    if (!logit || !acc) {
        free(logit);
        free(acc);
        return swa_error_set(err, SWA_ERR_NOMEM, "naive reference: out of memory");
    }
    for (int r = 0; r < c->num_requests; r++) {
        const int qo_len = c->qo_len[r], kv_len = c->kv_len[r];
        for (int i = 0; i < qo_len; i++) {
            const long long p = (long long)kv_len - qo_len + i;
            long long first = 0, last = kv_len - 1;
            if (c->causal && p < last)
                last = p;
            if (c->window_left >= 0 && p - c->window_left > first)
                first = p - c->window_left;
            if (!c->causal && c->window_right >= 0 && p + c->window_right < last)
                last = p + c->window_right;
            if (c->chunk_size > 0 && p >= 0 && p - p % c->chunk_size > first)
                first = p - p % c->chunk_size;
            for (int h = 0; h < Hq; h++) {
                const size_t qrow = (size_t)in->qo_indptr[r] + i;
                const float *q = in->q + (qrow * Hq + h) * D;
                double *o = out + (qrow * Hq + h) * D;
                const int kvh = h / group;
                double m = -INFINITY;
                for (long long k = first; k <= last; k++) {
                    const float *kk = in->k + (((size_t)in->kv_indptr[r] + k) * Hkv + kvh) * D;
                    double dot = 0.0;
                    for (int d = 0; d < D; d++)
                        dot += (double)q[d] * kk[d];
                    double s = dot * c->sm_scale;
                    if (c->soft_cap > 0)
                        s = c->soft_cap * tanh(s / c->soft_cap);
                    logit[k - first] = s;
                    if (s > m)
                        m = s;
                }
                if (last < first) {
                    for (int d = 0; d < D; d++)
                        o[d] = 0.0;
                    if (lse)
                        lse[qrow * Hq + h] = -INFINITY;
                    continue;
                }
                double sum = 0.0;
                for (int d = 0; d < D; d++)
                    acc[d] = 0.0;
                for (long long k = first; k <= last; k++) {
                    const float *vv = in->v + (((size_t)in->kv_indptr[r] + k) * Hkv + kvh) * D;
                    double e = exp(logit[k - first] - m);
                    sum += e;
                    for (int d = 0; d < D; d++)
                        acc[d] += e * vv[d];
                }
                for (int d = 0; d < D; d++)
                    o[d] = acc[d] / sum;
                if (lse)
                    lse[qrow * Hq + h] = m + log(sum);
            }
        }
    }
    free(logit);
    free(acc);
    return SWA_OK;
}
