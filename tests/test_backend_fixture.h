/* test_backend_fixture.h — builds cases and inputs for the backend tests
 * without the harness's case loader or data generator: a tiny local PRNG
 * fills q/k/v (rounded to the dtype), a paged cache is built by hand with
 * shuffled pages and NaN-filled spare pages, and a plain double-precision
 * attention loop (the spec of docs/spec.md, written here independently of
 * the backends' mask code) gives the expected output and LSE.
 *
 * Included by tests/test_plan_*.c, tests/test_host_*.c and
 * tests/test_backend_*.c; every function is static. */
#ifndef SWADIFF_TEST_BACKEND_FIXTURE_H
#define SWADIFF_TEST_BACKEND_FIXTURE_H

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/host/host_device.h"

typedef struct fx_spec {
    int num_requests;
    const int *qo_len, *kv_len;
    int num_qo_heads, num_kv_heads, head_dim; /* 0: 4, 4, 64 */
    swa_dtype dtype;
    int page_size;                            /* 0: 16 */
    swa_layout layout;
    swa_kv_mode kv_mode;
    bool noncausal;
    int window_left;                          /* always given */
    bool right_set;                           /* window_right given (else -1 non-causal) */
    int window_right;
    int chunk_size;                           /* 0: off */
    double soft_cap;
    uint64_t seed;
    bool cuda_graph;
    int graph_capture_requests;
    bool return_lse;
} fx_spec;

typedef struct fx {
    swa_case c;
    swa_inputs in;
    swa_out_args o;
    unsigned char *out_block, *lse_block;
    size_t out_elems, lse_elems;
    double *ref_out, *ref_lse; /* natural-log LSE */
    int warnings;
    char last_warning[512];
} fx;

#define FX_GUARD 64
#define FX_GUARD_PATTERN 0xA5

static uint64_t fx_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static inline double fx_uniform(uint64_t *s) { return (double)(fx_next(s) >> 11) / 9007199254740992.0; }

static inline void fx_case_init(swa_case *c, const fx_spec *s)
{
    memset(c, 0, sizeof *c);
    snprintf(c->id, sizeof c->id, "fixture/B%d", s->num_requests);
    c->tol.lse_atol = -1; /* per-dtype default, as the loader leaves it */
    c->num_requests = s->num_requests;
    c->qo_len = malloc(sizeof(int) * (size_t)s->num_requests);
    c->kv_len = malloc(sizeof(int) * (size_t)s->num_requests);
    for (int r = 0; r < s->num_requests; r++) {
        c->qo_len[r] = s->qo_len ? s->qo_len[r] : 1;
        c->kv_len[r] = s->kv_len[r];
    }
    c->num_qo_heads = s->num_qo_heads ? s->num_qo_heads : 4;
    c->num_kv_heads = s->num_kv_heads ? s->num_kv_heads : c->num_qo_heads;
    c->head_dim = s->head_dim ? s->head_dim : 64;
    c->dtype = s->dtype;
    c->page_size = s->page_size ? s->page_size : 16;
    c->layout = s->layout;
    c->kv_mode = s->kv_mode;
    c->causal = !s->noncausal;
    c->window_left = s->window_left;
    c->window_right = c->causal ? 0 : s->right_set ? s->window_right : -1;
    c->chunk_size = s->chunk_size;
    c->soft_cap = s->soft_cap;
    c->sm_scale = 1.0 / sqrt((double)c->head_dim);
    c->backends = 0xf;
    c->seed = s->seed ? s->seed : 1234;
    c->cuda_graph = s->cuda_graph;
    c->graph_capture_requests = s->graph_capture_requests;
    c->return_lse = s->return_lse;
}

static inline void fx_case_free(swa_case *c)
{
    free(c->qo_len);
    free(c->kv_len);
    c->qo_len = c->kv_len = NULL;
}

static inline void *fx_raw_copy(const float *src, size_t n, swa_dtype d)
{
    void *raw = malloc(n * swa_dtype_size(d));
    for (size_t i = 0; i < n; i++)
        swa_store(d, raw, i, src[i]);
    return raw;
}

/* q, k in [-2, 2), v in [-1, 1), all rounded to the dtype; paged cache with
 * shuffled pages and 3 spare NaN pages. */
static inline void fx_inputs_build(const swa_case *c, swa_inputs *in)
{
    memset(in, 0, sizeof *in);
    int B = c->num_requests, Hq = c->num_qo_heads, Hk = c->num_kv_heads, D = c->head_dim, ps = c->page_size;
    in->num_requests = B;
    in->num_qo_heads = Hq;
    in->num_kv_heads = Hk;
    in->head_dim = D;
    in->dtype = c->dtype;
    in->qo_indptr = calloc((size_t)B + 1, sizeof(int));
    in->kv_indptr = calloc((size_t)B + 1, sizeof(int));
    for (int r = 0; r < B; r++) {
        in->qo_indptr[r + 1] = in->qo_indptr[r] + c->qo_len[r];
        in->kv_indptr[r + 1] = in->kv_indptr[r] + c->kv_len[r];
    }
    in->total_qo = in->qo_indptr[B];
    in->total_kv = in->kv_indptr[B];
    uint64_t st = c->seed;
    size_t nq = (size_t)in->total_qo * Hq * D, nk = (size_t)in->total_kv * Hk * D;
    in->q = malloc((nq ? nq : 1) * sizeof(float));
    in->k = malloc((nk ? nk : 1) * sizeof(float));
    in->v = malloc((nk ? nk : 1) * sizeof(float));
    for (size_t i = 0; i < nq; i++)
        in->q[i] = swa_round_to(c->dtype, (float)(4 * fx_uniform(&st) - 2));
    for (size_t i = 0; i < nk; i++) {
        in->k[i] = swa_round_to(c->dtype, (float)(4 * fx_uniform(&st) - 2));
        in->v[i] = swa_round_to(c->dtype, (float)(2 * fx_uniform(&st) - 1));
    }
    in->q_raw = fx_raw_copy(in->q, nq, c->dtype);
    in->k_raw = fx_raw_copy(in->k, nk, c->dtype);
    in->v_raw = fx_raw_copy(in->v, nk, c->dtype);

    swa_paged_kv *kv = &in->paged;
    kv->dtype = c->dtype;
    kv->layout = c->layout;
    kv->page_size = ps;
    kv->num_kv_heads = Hk;
    kv->head_dim = D;
    kv->num_requests = B;
    kv->indptr = calloc((size_t)B + 1, sizeof(int));
    kv->last_page_len = calloc((size_t)B, sizeof(int));
    int max_pages = 0;
    for (int r = 0; r < B; r++) {
        int pages = (c->kv_len[r] + ps - 1) / ps;
        kv->indptr[r + 1] = kv->indptr[r] + pages;
        kv->last_page_len[r] = pages ? c->kv_len[r] - (pages - 1) * ps : 0;
        if (pages > max_pages)
            max_pages = pages;
    }
    int used = kv->indptr[B];
    kv->num_pages = used + 3;
    int *perm = malloc(sizeof(int) * (size_t)kv->num_pages);
    for (int i = 0; i < kv->num_pages; i++)
        perm[i] = i;
    for (int i = kv->num_pages - 1; i > 0; i--) {
        int j = (int)(fx_next(&st) % (uint64_t)(i + 1));
        int t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    kv->indices = malloc(sizeof(int) * (size_t)(used ? used : 1));
    memcpy(kv->indices, perm, sizeof(int) * (size_t)used);
    free(perm);
    size_t pool = (size_t)kv->num_pages * ps * Hk * D;
    kv->k_pages = malloc(pool * swa_dtype_size(c->dtype));
    kv->v_pages = malloc(pool * swa_dtype_size(c->dtype));
    for (size_t i = 0; i < pool; i++) {
        swa_store(c->dtype, kv->k_pages, i, NAN);
        swa_store(c->dtype, kv->v_pages, i, NAN);
    }
    for (int r = 0; r < B; r++)
        for (int t = 0; t < c->kv_len[r]; t++)
            for (int h = 0; h < Hk; h++) {
                int page = kv->indices[kv->indptr[r] + t / ps];
                size_t dst = swa_paged_offset(kv, page, t % ps, h);
                size_t src = ((size_t)(in->kv_indptr[r] + t) * Hk + h) * D;
                for (int e = 0; e < D; e++) {
                    swa_store(c->dtype, kv->k_pages, dst + e, in->k[src + e]);
                    swa_store(c->dtype, kv->v_pages, dst + e, in->v[src + e]);
                }
            }
    kv->max_blocks_per_seq = max_pages;
    kv->block_tables = malloc(sizeof(int) * (size_t)(B * max_pages + 1));
    kv->context_lens = malloc(sizeof(int) * (size_t)B);
    for (int r = 0; r < B; r++) {
        for (int j = 0; j < max_pages; j++)
            kv->block_tables[r * max_pages + j] =
                j < kv->indptr[r + 1] - kv->indptr[r] ? kv->indices[kv->indptr[r] + j] : -1;
        kv->context_lens[r] = c->kv_len[r];
    }
}

static inline void fx_inputs_free(swa_inputs *in)
{
    free(in->qo_indptr); free(in->kv_indptr);
    free(in->q); free(in->k); free(in->v);
    free(in->q_raw); free(in->k_raw); free(in->v_raw);
    swa_paged_kv *kv = &in->paged;
    free(kv->indptr); free(kv->indices); free(kv->last_page_len);
    free(kv->k_pages); free(kv->v_pages); free(kv->block_tables); free(kv->context_lens);
}

/* A mask hypothesis (what a buggy kernel may apply instead of the spec),
 * for checking that each mutant reproduces exactly the bug it names. */
typedef struct fx_variant {
    int window_left;      /* the window actually applied */
    bool top_left;        /* p = i */
    bool anchor_request;  /* window measured from the request's first new token */
    int tile_rows;        /* > 0: per-element window mask gone, only the tile's KV-start skip */
    int tile_kv_align;
} fx_variant;

static inline fx_variant fx_variant_spec(const swa_case *c)
{
    fx_variant v = {.window_left = c->window_left};
    return v;
}

/* Attention in double, as plain loops (docs/spec.md), under variant v. */
static inline void fx_reference_variant(const swa_case *c, const swa_inputs *in, const fx_variant *v, double *out,
                                        double *lse)
{
    int Hq = c->num_qo_heads, Hk = c->num_kv_heads, D = c->head_dim, group = Hq / Hk, L = v->window_left;
    int max_kv = 1;
    for (int r = 0; r < c->num_requests; r++)
        if (c->kv_len[r] > max_kv)
            max_kv = c->kv_len[r];
    double *w = malloc(sizeof(double) * (size_t)max_kv);
    for (int r = 0; r < c->num_requests; r++)
        for (int i = 0; i < c->qo_len[r]; i++)
            for (int h = 0; h < Hq; h++) {
                int row = in->qo_indptr[r] + i, hk = h / group;
                long prefix = (long)c->kv_len[r] - c->qo_len[r];
                long p = v->top_left ? i : prefix + i;
                long left = 0, right = c->causal ? p : (c->window_right >= 0 ? p + c->window_right : LONG_MAX);
                if (L >= 0 && v->tile_rows > 0) {
                    long pr0 = ((long)i * group + h % group) / v->tile_rows * v->tile_rows;
                    long i_first = pr0 / group;
                    long p_first = v->top_left ? i_first : prefix + i_first;
                    long ws = p_first - L > 0 ? p_first - L : 0;
                    left = ws - ws % v->tile_kv_align;
                } else if (L >= 0) {
                    left = (v->anchor_request ? prefix : p) - L;
                }
                if (c->chunk_size > 0 && p >= 0 && p / c->chunk_size * c->chunk_size > left)
                    left = p / c->chunk_size * c->chunk_size;
                const float *q = in->q + ((size_t)row * Hq + h) * D;
                double mx = -INFINITY;
                for (int k = 0; k < c->kv_len[r]; k++) {
                    bool visible = k <= right && k >= left;
                    if (!visible) {
                        w[k] = -INFINITY;
                        continue;
                    }
                    const float *kk = in->k + ((size_t)(in->kv_indptr[r] + k) * Hk + hk) * D;
                    double s = 0;
                    for (int e = 0; e < D; e++)
                        s += (double)q[e] * kk[e];
                    s *= c->sm_scale;
                    if (c->soft_cap > 0)
                        s = c->soft_cap * tanh(s / c->soft_cap);
                    w[k] = s;
                    if (s > mx)
                        mx = s;
                }
                double sum = 0;
                double *o = out + ((size_t)row * Hq + h) * D;
                for (int e = 0; e < D; e++)
                    o[e] = 0;
                if (mx != -INFINITY) {
                    for (int k = 0; k < c->kv_len[r]; k++) {
                        if (w[k] == -INFINITY)
                            continue;
                        double pk = exp(w[k] - mx);
                        sum += pk;
                        const float *vv = in->v + ((size_t)(in->kv_indptr[r] + k) * Hk + hk) * D;
                        for (int e = 0; e < D; e++)
                            o[e] += pk * vv[e];
                    }
                    for (int e = 0; e < D; e++)
                        o[e] /= sum;
                }
                if (lse)
                    lse[(size_t)row * Hq + h] = mx == -INFINITY ? -INFINITY : mx + log(sum);
            }
    free(w);
}

static inline void fx_reference(const swa_case *c, const swa_inputs *in, double *out, double *lse)
{
    fx_variant v = fx_variant_spec(c);
    fx_reference_variant(c, in, &v, out, lse);
}

static inline void fx_warn(void *ctx, const char *backend, const char *message)
{
    fx *f = ctx;
    f->warnings++;
    snprintf(f->last_warning, sizeof f->last_warning, "%s: %s", backend, message);
}

/* Guarded output buffers, interior poisoned with all bits set (NaN). */
static inline void fx_out_reset(fx *f)
{
    size_t ob = f->out_elems * swa_dtype_size(f->c.dtype), lb = f->lse_elems * sizeof(float);
    memset(f->out_block, FX_GUARD_PATTERN, ob + 2 * FX_GUARD);
    memset(f->out_block + FX_GUARD, 0xFF, ob);
    memset(f->lse_block, FX_GUARD_PATTERN, lb + 2 * FX_GUARD);
    memset(f->lse_block + FX_GUARD, 0xFF, lb);
}

static inline void fx_setup(fx *f, const fx_spec *s)
{
    memset(f, 0, sizeof *f);
    fx_case_init(&f->c, s);
    fx_inputs_build(&f->c, &f->in);
    f->out_elems = (size_t)f->in.total_qo * f->c.num_qo_heads * f->c.head_dim;
    f->lse_elems = (size_t)f->in.total_qo * f->c.num_qo_heads;
    size_t ob = f->out_elems * swa_dtype_size(f->c.dtype), lb = f->lse_elems * sizeof(float);
    f->out_block = malloc(ob + 2 * FX_GUARD);
    f->lse_block = malloc(lb + 2 * FX_GUARD);
    f->o.out = f->out_block + FX_GUARD;
    f->o.lse = (float *)(f->lse_block + FX_GUARD);
    f->o.out_bytes = ob;
    f->o.lse_bytes = lb;
    f->o.guard_bytes = FX_GUARD;
    f->o.guard_pattern = FX_GUARD_PATTERN;
    fx_out_reset(f);
    f->ref_out = malloc(sizeof(double) * (f->out_elems ? f->out_elems : 1));
    f->ref_lse = malloc(sizeof(double) * (f->lse_elems ? f->lse_elems : 1));
    fx_reference(&f->c, &f->in, f->ref_out, f->ref_lse);
}

static inline void fx_teardown(fx *f)
{
    fx_inputs_free(&f->in);
    fx_case_free(&f->c);
    free(f->out_block);
    free(f->lse_block);
    free(f->ref_out);
    free(f->ref_lse);
}

static inline swa_plan_opts fx_opts(fx *f, swa_mutant m)
{
    swa_plan_opts o = {.device = &swa_host_device_ops, .mutant = m, .num_sms = 0, .warn = fx_warn, .warn_ctx = f};
    return o;
}

/* Plans and runs backend b on the host device (fresh, poisoned outputs). */
static inline swa_status fx_run(fx *f, const swa_backend *b, swa_mutant m, bool return_lse, swa_error *err)
{
    fx_out_reset(f);
    swa_plan_opts o = fx_opts(f, m);
    void *plan = NULL, *dev = NULL;
    swa_status st = b->plan(&f->c, &f->in, &o, &plan, err);
    if (st != SWA_OK)
        return st;
    st = swa_host_device_ops.upload(&f->in, &dev, err);
    if (st == SWA_OK) {
        swa_run_opts r = {.window_left_set = true, .window_left = f->c.window_left, .return_lse = return_lse};
        st = b->run(plan, dev, &r, &f->o, err);
        swa_host_device_ops.release(dev);
    }
    b->free(plan);
    return st;
}

/* Elements of out outside |a - e| <= atol + rtol |e| (NaN counts). */
static inline long fx_out_mismatches(const fx *f, double atol, double rtol, double *max_err)
{
    long bad = 0;
    double worst = 0;
    for (size_t i = 0; i < f->out_elems; i++) {
        double a = swa_load(f->c.dtype, f->o.out, i), e = f->ref_out[i];
        double d = fabs(a - e);
        if (!(d <= atol + rtol * fabs(e)))
            bad++;
        if (d > worst || d != d)
            worst = d != d ? INFINITY : d;
    }
    if (max_err)
        *max_err = worst;
    return bad;
}

/* LSE mismatches after converting from `base` to natural log. */
static inline long fx_lse_mismatches(const fx *f, double base, double atol)
{
    long bad = 0;
    for (size_t i = 0; i < f->lse_elems; i++) {
        double a = f->o.lse[i] * log(base), e = f->ref_lse[i];
        if (isinf(e) ? !(a == e) : !(fabs(a - e) <= atol))
            bad++;
    }
    return bad;
}

static inline bool fx_guards_ok(const fx *f)
{
    size_t ob = f->out_elems * swa_dtype_size(f->c.dtype), lb = f->lse_elems * sizeof(float);
    for (size_t i = 0; i < FX_GUARD; i++)
        if (f->out_block[i] != FX_GUARD_PATTERN || f->out_block[FX_GUARD + ob + i] != FX_GUARD_PATTERN ||
            f->lse_block[i] != FX_GUARD_PATTERN || f->lse_block[FX_GUARD + lb + i] != FX_GUARD_PATTERN)
            return false;
    return true;
}

/* Tolerances for the host emulation against the double reference. */
static inline double fx_tol(swa_dtype d) { return d == SWA_DTYPE_BF16 ? 6e-3 : 1e-3; }

#endif /* SWADIFF_TEST_BACKEND_FIXTURE_H */
