/* plan_common.h — host-side helpers shared by the plan builders
 * (prefill.c, decode_fa2.c, decode_aiter.c, decode_auto.c): argument checks
 * that every backend words the same way, the occupancy target, small array
 * helpers.  Not part of the device contract (that is plan.h/backend.h).
 * Tested through tests/test_plan_*.c. */
#ifndef SWADIFF_PLAN_COMMON_H
#define SWADIFF_PLAN_COMMON_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/guards.h"

/* The host device emulates an H200; also the fallback when no device is
 * known at plan time (tests that only plan). */
#define SWA_DEFAULT_NUM_SMS 132

static inline int swa_plan_target_sms(const swa_plan_opts *o)
{
    if (o && o->num_sms > 0)
        return o->num_sms;
    if (o && o->device && o->device->num_sms)
        return o->device->num_sms();
    return SWA_DEFAULT_NUM_SMS;
}

/* A closed list of value names (NULL-terminated, at most max): how many,
 * and the index of value (-1 when it is not one).  The plan decisions'
 * and the launch choices' tables (plan_decisions.c, launch_choice.c). */
static inline int swa_closed_count(const char *const *values, int max)
{
    int n = 0;
    while (values && n < max && values[n])
        n++;
    return n;
}

static inline int swa_closed_index(const char *const *values, int max, const char *value)
{
    int n = swa_closed_count(values, max);
    for (int v = 0; value && v < n; v++)
        if (!strcmp(values[v], value))
            return v;
    return -1;
}

static inline swa_mutant swa_plan_mutant(const swa_plan_opts *o) { return o ? o->mutant : SWA_MUTANT_NONE; }

static inline float swa_plan_sm_scale(const swa_case *c)
{
    return c->sm_scale > 0 ? (float)c->sm_scale : (float)(1.0 / sqrt((double)c->head_dim));
}

/* Checks shared by every backend: shape sanity, the request arrays.  Returns
 * SWA_OK or SWA_ERR_INVALID with a message naming the backend and the field. */
static inline swa_status swa_plan_check_case(const char *backend, const swa_case *c, swa_error *err)
{
    if (c->num_requests < 1)
        return swa_error_set(err, SWA_ERR_INVALID, "%s: case %s has %d requests (expected at least 1)",
                             backend, c->id, c->num_requests);
    if (!c->qo_len || !c->kv_len)
        return swa_error_set(err, SWA_ERR_INVALID, "%s: case %s has no qo_len/kv_len arrays", backend, c->id);
    if (c->num_kv_heads < 1 || c->num_qo_heads < 1 || c->num_qo_heads % c->num_kv_heads != 0)
        return swa_error_set(err, SWA_ERR_INVALID,
                             "%s: case %s has %d qo heads and %d kv heads (expected num_qo_heads a "
                             "positive multiple of num_kv_heads)",
                             backend, c->id, c->num_qo_heads, c->num_kv_heads);
    if (c->head_dim < 1)
        return swa_error_set(err, SWA_ERR_INVALID, "%s: case %s has head_dim %d (expected >= 1)", backend,
                             c->id, c->head_dim);
    if (c->window_left < -1)
        return swa_error_set(err, SWA_ERR_INVALID,
                             "%s: case %s has window_left %d (expected -1 for no window or >= 0)", backend,
                             c->id, c->window_left);
    if (c->window_right < -1 || c->chunk_size < 0 || (c->chunk_size > 0 && !c->causal))
        return swa_error_set(err, SWA_ERR_INVALID,
                             "%s: case %s has window_right %d, attention_chunk_size %d, causal %s (expected "
                             "window_right -1 or >= 0; chunk size 0 (off) or >= 1, only with causal)",
                             backend, c->id, c->window_right, c->chunk_size, c->causal ? "true" : "false");
    /* qo_len > kv_len is allowed: the first qo_len - kv_len rows sit at
     * p < 0 and see no key (output 0, LSE -inf) */
    for (int r = 0; r < c->num_requests; r++)
        if (c->qo_len[r] < 0 || c->kv_len[r] < 0)
            return swa_error_set(err, SWA_ERR_INVALID,
                                 "%s: case %s request %d has qo_len %d, kv_len %d (expected both >= 0)",
                                 backend, c->id, r, c->qo_len[r], c->kv_len[r]);
    return SWA_OK;
}

/* Reason text for head dims the tensor-core kernels are not instantiated for. */
static inline const char *swa_plan_head_dim_reason(const char *backend, const swa_case *c, char *buf, size_t n)
{
    if (c->head_dim == 64 || c->head_dim == 128 || c->head_dim == 256)
        return NULL;
    snprintf(buf, n, "%s supports head_dim 64, 128 and 256 only; this case has head_dim %d.", backend,
             c->head_dim);
    return buf;
}

static inline const char *swa_plan_dtype_reason(const char *backend, const swa_case *c, char *buf, size_t n)
{
    if (c->dtype == SWA_DTYPE_FP16 || c->dtype == SWA_DTYPE_BF16)
        return NULL;
    snprintf(buf, n, "%s runs fp16 and bf16 only (its kernels have no %s path).", backend,
             swa_dtype_name(c->dtype));
    return buf;
}

static inline const char *swa_plan_decode_reason(const char *backend, const swa_case *c, char *buf, size_t n)
{
    for (int r = 0; r < c->num_requests; r++)
        if (c->qo_len[r] != 1) {
            snprintf(buf, n, "%s is a decode kernel: it needs qo_len 1 for every request, and request %d "
                     "has qo_len %d.", backend, r, c->qo_len[r]);
            return buf;
        }
    if (c->kv_mode != SWA_KV_PAGED) {
        snprintf(buf, n, "%s reads a paged KV cache only; this case asks for ragged K/V.", backend);
        return buf;
    }
    return NULL;
}

/* What both decode backends refuse: an unsupported dtype, qo_len != 1 or
 * ragged K/V, an unsupported head_dim.  NULL when the case is runnable. */
/* When a device slot a backend needs is NULL: writes "device D has no WHAT
 * (needed by BACKEND)" to buf and returns buf (see backend.h, "Slots"). */
static inline const char *swa_device_lacks(const swa_device_ops *dev, const char *backend, const char *what,
                                           char *buf, size_t n)
{
    snprintf(buf, n, "device %s has no %s (needed by %s)", dev ? dev->name : "(none)", what, backend);
    return buf;
}

static inline const char *swa_plan_decode_supports(const char *backend, const swa_case *c, char *buf, size_t n)
{
    const char *why;
    if ((why = swa_plan_dtype_reason(backend, c, buf, n)) || (why = swa_plan_decode_reason(backend, c, buf, n)) ||
        (why = swa_plan_head_dim_reason(backend, c, buf, n)))
        return why;
    return NULL;
}

/* calloc that reports.  n may be 0 (returns a 1-element block so callers
 * can tell success from failure). */
static inline void *swa_plan_calloc(size_t n, size_t size, const char *backend, swa_error *err)
{
    void *p = calloc(n ? n : 1, size);
    if (!p)
        swa_error_set(err, SWA_ERR_NOMEM, "%s: out of memory allocating %zu x %zu bytes for the plan", backend,
                      n, size);
    return p;
}

#endif /* SWADIFF_PLAN_COMMON_H */
