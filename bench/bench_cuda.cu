/* bench_cuda.cu — `swadiff bench --device cuda`: kernel timings of the three
 * CUDA backends on the shapes of docs/kernels.md, next to its ceilings.
 *
 *   swadiff bench --device cuda [--json PATH] [--iters N] [--quick]
 *
 * Each workload: the backends' real host plans (swa_*_plan_build), inputs
 * generated on the device (hash-based uniform values, pages in shuffled
 * order), a spot check of a few output rows against a double-precision CPU
 * attention, then CUDA-event timings (warm-up, then the median of N single
 * launches).  Decode reports GB/s over the bytes the window needs (K+V of
 * visible keys, q, out); prefill TFLOP/s over visible (q, k) pairs
 * (4 * pairs * head_dim per qo head).  Working sets beyond L2: decode
 * touches ~0.3-1 GB per launch; prefill rotates over several input copies.
 * Also measured on the spot: device-to-device copy bandwidth.
 *
 * Returns 0, 3 on a CUDA or check failure, 77 without a device, 2 on usage.
 *
 * What it measured on one H200 is docs/kernels.md's (Speed; the runs in
 * reports/gpu/h200/bench*.txt).  The targets in the table below are the
 * Hopper kernels issue's. */
#include "bench/bench_cuda.h"
#include "backends/cuda/cuda_internal.cuh"
#include "backends/backend.h"
extern "C" { /* the plan builders' headers are plain C */
#include "backends/decode_aiter.h"
#include "backends/decode_fa2.h"
#include "backends/prefill.h"
}

extern "C" const swa_device_ops swa_cuda_device_ops; /* cuda_device.cu */
/* the kernels' launchers and parameter blocks (NVIDIA build only: the
 * ROCm build leaves the benchmark out) */
using namespace swa_cuda;

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// ----------------------------------------------------------------------------
// device data

__device__ __forceinline__ uint32_t bench_hash(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return (uint32_t)x;
}

/* uniform in [lo, hi), never zero-heavy: timings must not run on zeros */
template <typename T>
__global__ void bench_fill_kernel(T *dst, size_t n, uint64_t seed, float lo, float hi)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float u = bench_hash(seed * 0x9E3779B97F4A7C15ull + i) * (1.0f / 4294967296.0f);
        dst[i] = (T)(lo + (hi - lo) * u);
    }
}

static swa_status bench_fill(void *dst, swa_dtype dt, size_t n, uint64_t seed, float lo, float hi, swa_error *err)
{
    if (dt == SWA_DTYPE_FP16) bench_fill_kernel<swa_half_t><<<1024, 256>>>((swa_half_t *)dst, n, seed, lo, hi);
    else bench_fill_kernel<swa_bf16_t><<<1024, 256>>>((swa_bf16_t *)dst, n, seed, lo, hi);
    SWA_CUDA_TRY(cudaGetLastError());
    return SWA_OK;
}

static float bench_to_float(swa_dtype dt, uint16_t v)
{
    return dt == SWA_DTYPE_FP16 ? swa_fp16_to_f32(v) : swa_bf16_to_f32(v);
}

// ----------------------------------------------------------------------------
// one workload

typedef struct bench_shape {
    const char *name;
    const char *backend; /* prefill | decode_fa2 | decode_aiter */
    int batch, qo_len, kv_len, hq, hk, head_dim, page_size, window_left;
    bool causal;
    const char *target_text;
    double target;       /* GB/s (decode) or TFLOP/s (prefill) */
    int rows_per_warp, decode_warps; /* kernel variant (swa_cuda_tuning) */
    bool hnd;                        /* HND pages (one head's keys contiguous); NHD otherwise */
    bool sweep;                      /* a variant row: runs under --sweep only */
    int prefill_engine;              /* 0 mma.sync, 2 the warp-specialised wgmma engine */
    int ws_ctas;                     /* swa_cuda_tuning.prefill_ws_ctas: SWA_WS_CTAS_PER_SM (0, the default:
                                        the persistent kernel), SWA_WS_CTAS_PER_ITEM (-1) */
    bool deterministic;              /* planned in the deterministic mode (case "deterministic",
                                        docs/invariance.md): its cost against the row above it */
} bench_shape;

typedef struct bench_result {
    double median_ms, min_ms, max_ms, work; /* work: bytes or flops per launch */
    double check_max_err;
    int check_rows;
    char plan[160];
} bench_result;

typedef struct bench_set {
    swa_cuda_inputs d;
    swa_paged_kv kv;     /* host page table only (no pool data) */
    int *qo_indptr, *kv_indptr;
    void *out;
    float *lse;
} bench_set;

static void bench_set_free(bench_set *s)
{
    void *ptrs[] = {s->d.q, s->d.k_pages, s->d.v_pages, s->d.page_indptr, s->d.page_indices, s->out, s->lse};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++)
        if (ptrs[i]) cudaFree(ptrs[i]);
    swa_dev_buf_free(&s->d.ints);
    swa_dev_buf_free(&s->d.partial_o);
    swa_dev_buf_free(&s->d.partial_l);
    free(s->kv.indptr);
    free(s->kv.indices);
    free(s->kv.last_page_len);
    free(s->kv.block_tables);
    free(s->kv.context_lens);
    free(s->qo_indptr);
    free(s->kv_indptr);
    memset(s, 0, sizeof *s);
}

static void bench_case_init(swa_case *c, const bench_shape *b, int *qo, int *kv)
{
    memset(c, 0, sizeof *c);
    snprintf(c->id, sizeof c->id, "bench/%s", b->name);
    c->num_requests = b->batch;
    for (int r = 0; r < b->batch; r++) {
        qo[r] = b->qo_len;
        kv[r] = b->kv_len;
    }
    c->qo_len = qo;
    c->kv_len = kv;
    c->num_qo_heads = b->hq;
    c->num_kv_heads = b->hk;
    c->head_dim = b->head_dim;
    c->dtype = SWA_DTYPE_FP16;
    c->page_size = b->page_size;
    c->layout = b->hnd ? SWA_LAYOUT_HND : SWA_LAYOUT_NHD;
    c->kv_mode = SWA_KV_PAGED;
    c->causal = b->causal;
    c->window_left = b->window_left;
    c->window_right = b->causal ? 0 : -1;
    c->sm_scale = 1.0 / sqrt((double)b->head_dim);
    c->seed = 1;
    c->deterministic = b->deterministic;
}

/* Page table (shuffled pages) on the host, pools/q/out on the device. */
static swa_status bench_set_build(bench_set *s, const swa_case *c, uint64_t seed, swa_error *err)
{
    memset(s, 0, sizeof *s);
    int B = c->num_requests, ps = c->page_size, Hk = c->num_kv_heads, D = c->head_dim;
    swa_paged_kv *kv = &s->kv;
    kv->dtype = c->dtype;
    kv->layout = c->layout;
    kv->page_size = ps;
    kv->num_kv_heads = Hk;
    kv->head_dim = D;
    kv->num_requests = B;
    kv->indptr = (int *)calloc((size_t)B + 1, sizeof(int));
    kv->last_page_len = (int *)calloc((size_t)B, sizeof(int));
    s->qo_indptr = (int *)calloc((size_t)B + 1, sizeof(int));
    s->kv_indptr = (int *)calloc((size_t)B + 1, sizeof(int));
    if (!kv->indptr || !kv->last_page_len || !s->qo_indptr || !s->kv_indptr)
        return swa_error_set(err, SWA_ERR_NOMEM, "bench: out of host memory");
    int max_pages = 0;
    for (int r = 0; r < B; r++) {
        int pages = (c->kv_len[r] + ps - 1) / ps;
        kv->indptr[r + 1] = kv->indptr[r] + pages;
        kv->last_page_len[r] = c->kv_len[r] - (pages - 1) * ps;
        max_pages = pages > max_pages ? pages : max_pages;
        s->qo_indptr[r + 1] = s->qo_indptr[r] + c->qo_len[r];
        s->kv_indptr[r + 1] = s->kv_indptr[r] + c->kv_len[r];
    }
    int used = kv->indptr[B];
    kv->num_pages = used + 1; /* one spare page */
    kv->indices = (int *)malloc(sizeof(int) * (size_t)used);
    kv->max_blocks_per_seq = max_pages;
    kv->block_tables = (int *)malloc(sizeof(int) * (size_t)B * max_pages);
    kv->context_lens = (int *)malloc(sizeof(int) * (size_t)B);
    if (!kv->indices || !kv->block_tables || !kv->context_lens)
        return swa_error_set(err, SWA_ERR_NOMEM, "bench: out of host memory");
    for (int i = 0; i < used; i++) kv->indices[i] = i;
    uint64_t st = seed;
    for (int i = used - 1; i > 0; i--) {
        st = st * 6364136223846793005ull + 1442695040888963407ull; /* LCG: page order only */
        int j = (int)((st >> 33) % (uint64_t)(i + 1));
        int t = kv->indices[i];
        kv->indices[i] = kv->indices[j];
        kv->indices[j] = t;
    }
    for (int r = 0; r < B; r++) {
        for (int j = 0; j < max_pages; j++)
            kv->block_tables[(size_t)r * max_pages + j] =
                j < kv->indptr[r + 1] - kv->indptr[r] ? kv->indices[kv->indptr[r] + j] : -1;
        kv->context_lens[r] = c->kv_len[r];
    }

    swa_cuda_inputs *d = &s->d;
    d->dtype = c->dtype;
    d->layout = c->layout;
    d->num_requests = B;
    d->total_qo = s->qo_indptr[B];
    d->total_kv = s->kv_indptr[B];
    d->num_qo_heads = c->num_qo_heads;
    d->num_kv_heads = Hk;
    d->head_dim = D;
    d->page_size = ps;
    d->num_pages = kv->num_pages;
    d->stream = 0;
    size_t es = swa_dtype_size(c->dtype);
    size_t nq = (size_t)d->total_qo * c->num_qo_heads * D, pool = (size_t)kv->num_pages * ps * Hk * D;
    SWA_CUDA_TRY(cudaMalloc(&d->q, nq * es));
    SWA_CUDA_TRY(cudaMalloc(&d->k_pages, pool * es));
    SWA_CUDA_TRY(cudaMalloc(&d->v_pages, pool * es));
    SWA_CUDA_TRY(cudaMalloc(&s->out, nq * es));
    SWA_CUDA_TRY(cudaMalloc((void **)&s->lse, (size_t)d->total_qo * c->num_qo_heads * sizeof(float)));
    SWA_CUDA_TRY(cudaMalloc((void **)&d->page_indptr, sizeof(int) * ((size_t)B + 1)));
    SWA_CUDA_TRY(cudaMalloc((void **)&d->page_indices, sizeof(int) * ((size_t)used + 1)));
    SWA_CUDA_TRY(cudaMemcpy(d->page_indptr, kv->indptr, sizeof(int) * ((size_t)B + 1), cudaMemcpyHostToDevice));
    SWA_CUDA_TRY(cudaMemcpy(d->page_indices, kv->indices, sizeof(int) * (size_t)used, cudaMemcpyHostToDevice));
    swa_status rc;
    if ((rc = bench_fill(d->q, c->dtype, nq, seed * 3 + 1, -2.f, 2.f, err))) return rc;
    if ((rc = bench_fill(d->k_pages, c->dtype, pool, seed * 3 + 2, -2.f, 2.f, err))) return rc;
    if ((rc = bench_fill(d->v_pages, c->dtype, pool, seed * 3 + 3, -1.f, 1.f, err))) return rc;
    SWA_CUDA_TRY(cudaDeviceSynchronize());
    return SWA_OK;
}

/* Visible keys of query row i (spec of docs/spec.md) for work accounting and checks. */
static void visible_range(const bench_shape *b, int i, int *lo, int *hi)
{
    int p = b->kv_len - b->qo_len + i;
    *hi = b->causal ? p : b->kv_len - 1;
    *lo = b->window_left >= 0 ? (p - b->window_left > 0 ? p - b->window_left : 0) : 0;
}

/* Copies one (request, row, head)'s inputs back and compares the GPU output
 * with a double-precision softmax; returns the max abs error. */
static swa_status spot_check(bench_set *s, const swa_case *c, const bench_shape *b, int r, int i, int h,
                             double *max_err, swa_error *err)
{
    int D = c->head_dim, G = c->num_qo_heads / c->num_kv_heads, hk = h / G, ps = c->page_size;
    size_t es = 2;
    uint16_t qv[256], ov[256], kr[256], vr[256];
    size_t row = (size_t)(s->qo_indptr[r] + i) * c->num_qo_heads + h;
    SWA_CUDA_TRY(cudaMemcpy(qv, (char *)s->d.q + row * D * es, D * es, cudaMemcpyDeviceToHost));
    SWA_CUDA_TRY(cudaMemcpy(ov, (char *)s->out + row * D * es, D * es, cudaMemcpyDeviceToHost));
    int lo, hi;
    visible_range(b, i, &lo, &hi);
    int n = hi - lo + 1;
    double *sc = (double *)malloc(sizeof(double) * (n > 0 ? n : 1));
    double *acc = (double *)calloc(D, sizeof(double));
    uint16_t *vals = (uint16_t *)malloc((size_t)(n > 0 ? n : 1) * D * es);
    if (!sc || !acc || !vals) {
        free(sc); free(acc); free(vals);
        return swa_error_set(err, SWA_ERR_NOMEM, "bench: out of host memory");
    }
    double mx = -INFINITY;
    for (int k = lo; k <= hi; k++) {
        int page = s->kv.indices[s->kv.indptr[r] + k / ps];
        size_t off = swa_paged_offset(&s->kv, page, k % ps, hk);
        cudaError_t e1 = cudaMemcpy(kr, (char *)s->d.k_pages + off * es, D * es, cudaMemcpyDeviceToHost);
        cudaError_t e2 = cudaMemcpy(vals + (size_t)(k - lo) * D, (char *)s->d.v_pages + off * es, D * es,
                                    cudaMemcpyDeviceToHost);
        if (e1 != cudaSuccess || e2 != cudaSuccess) {
            free(sc); free(acc); free(vals);
            return swa_cuda_fail(err, e1 != cudaSuccess ? e1 : e2, "cudaMemcpy(spot-check K/V row)", __FILE__, __LINE__);
        }
        double dot = 0;
        for (int e = 0; e < D; e++) dot += (double)bench_to_float(c->dtype, qv[e]) * bench_to_float(c->dtype, kr[e]);
        sc[k - lo] = dot * c->sm_scale;
        mx = sc[k - lo] > mx ? sc[k - lo] : mx;
    }
    double sum = 0;
    for (int k = 0; k < n; k++) {
        double w = exp(sc[k] - mx);
        sum += w;
        memcpy(vr, vals + (size_t)k * D, D * es);
        for (int e = 0; e < D; e++) acc[e] += w * bench_to_float(c->dtype, vr[e]);
    }
    double worst = 0;
    for (int e = 0; e < D; e++) {
        double ref = n > 0 ? acc[e] / sum : 0, got = bench_to_float(c->dtype, ov[e]);
        double dlt = fabs(got - ref);
        if (!(dlt <= worst)) worst = isnan(dlt) ? INFINITY : dlt;
    }
    free(sc);
    free(acc);
    free(vals);
    if (worst > *max_err) *max_err = worst;
    return SWA_OK;
}

typedef swa_status (*bench_launch_fn)(void *ctx, int set, swa_error *err);

typedef struct launch_ctx {
    const bench_shape *b;
    const swa_case *c;
    bench_set *sets;
    swa_cuda_prefill_params pre[8];
    swa_cuda_fa2_params fa2[8];
    swa_cuda_aiter_params ait[8];
    int num_work, grid_work, num_requests;
} launch_ctx;

static swa_status launch_one(void *vctx, int set, swa_error *err)
{
    launch_ctx *x = (launch_ctx *)vctx;
    if (!strcmp(x->b->backend, "prefill"))
        return swa_cuda_prefill_launch(&x->pre[set], x->c->dtype, x->c->head_dim, x->num_work, true, 0, err);
    if (!strcmp(x->b->backend, "decode_fa2"))
        return swa_cuda_fa2_launch(&x->fa2[set], x->c->dtype, x->c->head_dim, x->grid_work, x->num_requests, true, 0,
                                   err);
    return swa_cuda_aiter_launch(&x->ait[set], x->c->dtype, x->c->head_dim, 0, err);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static swa_status time_launches(launch_ctx *x, int nsets, int iters, bench_result *res, swa_error *err)
{
    cudaEvent_t ev[2];
    SWA_CUDA_TRY(cudaEventCreate(&ev[0]));
    SWA_CUDA_TRY(cudaEventCreate(&ev[1]));
    swa_status st;
    for (int w = 0; w < 3; w++)
        if ((st = launch_one(x, w % nsets, err))) return st;
    SWA_CUDA_TRY(cudaDeviceSynchronize());
    double *ms = (double *)malloc(sizeof(double) * iters);
    if (!ms) return swa_error_set(err, SWA_ERR_NOMEM, "bench: out of host memory");
    for (int it = 0; it < iters; it++) {
        SWA_CUDA_TRY(cudaEventRecord(ev[0], 0));
        if ((st = launch_one(x, it % nsets, err))) { free(ms); return st; }
        SWA_CUDA_TRY(cudaEventRecord(ev[1], 0));
        SWA_CUDA_TRY(cudaEventSynchronize(ev[1]));
        float t = 0;
        SWA_CUDA_TRY(cudaEventElapsedTime(&t, ev[0], ev[1]));
        ms[it] = t;
    }
    qsort(ms, iters, sizeof(double), cmp_double);
    res->median_ms = ms[iters / 2];
    res->min_ms = ms[0];
    res->max_ms = ms[iters - 1];
    free(ms);
    cudaEventDestroy(ev[0]);
    cudaEventDestroy(ev[1]);
    return SWA_OK;
}

static swa_status bench_run_shape(const bench_shape *b, int iters, bench_result *res, swa_error *err)
{
    memset(res, 0, sizeof *res);
    int *qo = (int *)malloc(sizeof(int) * b->batch), *kvl = (int *)malloc(sizeof(int) * b->batch);
    if (!qo || !kvl) { free(qo); free(kvl); return swa_error_set(err, SWA_ERR_NOMEM, "bench: out of host memory"); }
    swa_case c;
    bench_case_init(&c, b, qo, kvl);
    bool prefill = !strcmp(b->backend, "prefill");
    /* working set per launch: rotate copies until well past the 50 MB L2 */
    size_t es = 2;
    double set_bytes = ((double)b->batch * b->kv_len * b->hk * 2 + (double)b->batch * b->qo_len * b->hq * 2) *
                       b->head_dim * es;
    int nsets = set_bytes >= 400e6 ? 1 : (int)fmin(8, ceil(400e6 / set_bytes));
    launch_ctx *x = (launch_ctx *)calloc(1, sizeof *x);
    bench_set *sets = (bench_set *)calloc(nsets, sizeof *sets);
    swa_plan_opts o;
    memset(&o, 0, sizeof o);
    o.device = &swa_cuda_device_ops;
    swa_prefill_plan *pp = NULL;
    swa_decode_fa2_plan *fp = NULL;
    swa_decode_aiter_plan *ap = NULL;
    swa_status st = SWA_OK;
    if (!x || !sets) { st = swa_error_set(err, SWA_ERR_NOMEM, "bench: out of host memory"); goto done; }
    x->b = b;
    x->c = &c;
    x->sets = sets;
    for (int i = 0; i < nsets && st == SWA_OK; i++) st = bench_set_build(&sets[i], &c, 1000 + i, err);
    if (st) goto done;
    if (prefill) {
        if ((st = swa_prefill_plan_build(&c, &o, &pp, err))) goto done;
        snprintf(res->plan, sizeof res->plan, "tile_q %d, split %d (chunk %d), %d work items x %d kv heads",
                 pp->cta_tile_q, pp->split_kv, pp->kv_chunk_size, pp->num_work, c.num_kv_heads);
        x->num_work = pp->num_work;
        for (int i = 0; i < nsets && st == SWA_OK; i++) {
            st = swa_cuda_prefill_prepare(&sets[i].d, pp, &x->pre[i], err);
            x->pre[i].out = sets[i].out;
            x->pre[i].lse = sets[i].lse;
        }
    } else if (!strcmp(b->backend, "decode_fa2")) {
        if ((st = swa_decode_fa2_plan_build(&c, &sets[0].kv, c.num_requests, &o, &fp, err))) goto done;
        snprintf(res->plan, sizeof res->plan, "split %d (chunk %d), %d work items x %d kv heads", fp->split_kv,
                 fp->kv_chunk_size, fp->num_work, c.num_kv_heads);
        x->grid_work = fp->grid_work;
        x->num_requests = fp->num_requests;
        for (int i = 0; i < nsets && st == SWA_OK; i++) {
            st = swa_cuda_fa2_prepare(&sets[i].d, fp, fp->num_work, fp->num_requests, fp->kv_indptr[fp->num_requests],
                                      fp->total_partial_rows, &x->fa2[i], err);
            x->fa2[i].out = sets[i].out;
            x->fa2[i].lse = sets[i].lse;
        }
    } else {
        if ((st = swa_decode_aiter_plan_build(&c, &sets[0].kv, &o, &ap, err))) goto done;
        snprintf(res->plan, sizeof res->plan, "S %d, %d partitions of %d", ap->sliding_window,
                 ap->max_num_partitions, ap->partition_size);
        for (int i = 0; i < nsets && st == SWA_OK; i++) {
            st = swa_cuda_aiter_prepare(&sets[i].d, ap, &x->ait[i], err);
            x->ait[i].out = sets[i].out;
        }
    }
    if (st) goto done;

    /* correctness first: one launch per set... then spot rows of set 0 */
    if ((st = launch_one(x, 0, err))) goto done;
    if (cudaDeviceSynchronize() != cudaSuccess) {
        st = swa_cuda_fail(err, cudaGetLastError(), "cudaDeviceSynchronize() after the check launch", __FILE__, __LINE__);
        goto done;
    }
    {
        int rows[3][3] = {{0, 0, 0}, {b->batch / 2, b->qo_len / 2, b->hq - 1}, {b->batch - 1, b->qo_len - 1, b->hq / 2}};
        for (int k = 0; k < 3 && st == SWA_OK; k++, res->check_rows++)
            st = spot_check(&sets[0], &c, b, rows[k][0], rows[k][1], rows[k][2], &res->check_max_err, err);
        if (st) goto done;
        if (!(res->check_max_err <= 2e-3)) {
            st = swa_error_set(err, SWA_ERR_DEVICE, "bench %s: spot check failed, max abs error %g vs a double "
                                                    "reference (tolerance 2e-3)", b->name, res->check_max_err);
            goto done;
        }
    }
    if ((st = time_launches(x, nsets, iters, res, err))) goto done;

    /* work per launch */
    if (prefill) {
        double pairs = 0;
        for (int i = 0; i < b->qo_len; i++) {
            int lo, hi;
            visible_range(b, i, &lo, &hi);
            pairs += hi >= lo ? hi - lo + 1 : 0;
        }
        res->work = 4.0 * pairs * b->head_dim * b->hq * b->batch;
    } else {
        int lo, hi;
        visible_range(b, 0, &lo, &hi);
        double keys = hi - lo + 1;
        res->work = ((double)b->batch * keys * b->hk * 2 + 2.0 * b->batch * b->hq) * b->head_dim * es;
    }
done:
    for (int i = 0; sets && i < nsets; i++) bench_set_free(&sets[i]);
    free(sets);
    free(x);
    if (pp) swa_prefill_plan_free(pp);
    if (fp) swa_decode_fa2_plan_free(fp);
    if (ap) swa_decode_aiter_plan_free(ap);
    free(qo);
    free(kvl);
    return st;
}

static swa_status bench_copy_bandwidth(double *tbps, swa_error *err)
{
    size_t bytes = (size_t)2 << 30;
    void *a = NULL, *b = NULL;
    SWA_CUDA_TRY(cudaMalloc(&a, bytes));
    SWA_CUDA_TRY(cudaMalloc(&b, bytes));
    SWA_CUDA_TRY(cudaMemset(a, 1, bytes));
    cudaEvent_t e0, e1;
    SWA_CUDA_TRY(cudaEventCreate(&e0));
    SWA_CUDA_TRY(cudaEventCreate(&e1));
    SWA_CUDA_TRY(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
    SWA_CUDA_TRY(cudaEventRecord(e0, 0));
    for (int i = 0; i < 10; i++) SWA_CUDA_TRY(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, 0));
    SWA_CUDA_TRY(cudaEventRecord(e1, 0));
    SWA_CUDA_TRY(cudaEventSynchronize(e1));
    float ms = 0;
    SWA_CUDA_TRY(cudaEventElapsedTime(&ms, e0, e1));
    *tbps = 10.0 * 2.0 * bytes / (ms * 1e-3) / 1e12;
    cudaFree(a);
    cudaFree(b);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    return SWA_OK;
}

// ----------------------------------------------------------------------------
// command

/* The "% ceil" column's ceilings (docs/kernels.md), one H200:
 * decode against the device-to-device copy measured there (read + write;
 * each run also measures and prints its own), prefill against NVIDIA's
 * dense fp16/bf16 tensor-core peak for the H200 SXM (1,979 TFLOP/s with
 * sparsity, halved).  The peers are timed in the same run by --peers. */
#define CEIL_COPY_TBPS 4.27
#define CEIL_TENSOR_TFLOPS 989.0

#define FA2_B64 "decode_fa2", 64, 1, 4096, 32, 8, 128, 16
#define AIT_B64 "decode_aiter", 64, 1, 4096, 32, 8, 128, 16
#define PF_8K "prefill", 1, 8192, 8192, 32, 8, 128, 16
#define FA2_B64_P64 "decode_fa2", 64, 1, 4096, 32, 8, 128, 64
#define PF_8K_HD256 "prefill", 1, 8192, 8192, 32, 8, 256, 16
static const bench_shape bench_shapes[] = {
    {"decode_fa2 b64 kv4096 32/8 hd128 p16 [2 warps]", FA2_B64, -1, true, ">= 4.0 TB/s", 4000, 32, 2},
    {"decode_fa2 b64 kv4096 32/8 hd128 p16 [4 warps]", FA2_B64, -1, true, ">= 4.0 TB/s", 4000, 32, 4},
    {"decode_aiter b64 kv4096 32/8 hd128 p16 [2 warps]", AIT_B64, -1, true, ">= 3.3 TB/s", 3300, 32, 2},
    {"decode_aiter b64 kv4096 32/8 hd128 p16 [4 warps]", AIT_B64, -1, true, ">= 3.3 TB/s", 3300, 32, 4},
    {"decode_fa2 L1023 b64 kv4096 [2 warps]", FA2_B64, 1023, true, ">= 3.6 TB/s of window bytes", 3600, 32, 2},
    {"decode_aiter S1024 b64 kv4096 [2 warps]", AIT_B64, 1023, true, "(none)", 0, 32, 2},
    {"prefill causal 8192 32/8 hd128 p16 [32 rows/warp]", PF_8K, -1, true, ">= 200 TFLOP/s", 200, 32, 2},
    {"prefill causal 8192 32/8 hd128 p16 [16 rows/warp]", PF_8K, -1, true, ">= 200 TFLOP/s", 200, 16, 2},
    {"prefill causal L1023 8192 [32 rows/warp]", PF_8K, 1023, true, "(none; flex_attention 307)", 0, 32, 2},
    {"prefill causal 8192 32/8 hd128 p16 [wgmma-ws]", PF_8K, -1, true, ">= 450 TFLOP/s", 450, 32, 2, false, false, 2},
    {"prefill causal L1023 8192 [wgmma-ws]", PF_8K, 1023, true, ">= 320 TFLOP/s", 320, 32, 2, false, false, 2},
    /* the deterministic mode (split-KV always on, in fixed chunks; docs/invariance.md): its cost
     * against the same shape above, in the same run */
    {"decode_fa2 b64 kv4096 32/8 hd128 p16 [2 warps] deterministic", FA2_B64, -1, true, "(cost)", 0, 32, 2, false,
     false, 0, 0, true},
    {"decode_fa2 L1023 b64 kv4096 [2 warps] deterministic", FA2_B64, 1023, true, "(cost)", 0, 32, 2, false, false, 0,
     0, true},
    {"prefill causal 8192 32/8 hd128 p16 [wgmma-ws] deterministic", PF_8K, -1, true, "(cost)", 0, 32, 2, false, false,
     2, 0, true},
    {"prefill causal L1023 8192 [wgmma-ws] deterministic", PF_8K, 1023, true, "(cost)", 0, 32, 2, false, false, 2, 0,
     true},
    /* the first workload again: the spread between two timings of one version */
    {"decode_fa2 b64 kv4096 32/8 hd128 p16 [2 warps] again", FA2_B64, -1, true, ">= 4.0 TB/s", 4000, 32, 2},
    /* --sweep: variants measured when the defaults were chosen (page layout and size;
     * their figures: docs/kernels.md, Measured choices) */
    {"sweep decode_fa2 b64 kv4096 p16 HND [2 warps]", FA2_B64, -1, true, "(sweep)", 0, 32, 2, true, true},
    {"sweep decode_fa2 b64 kv4096 p64 NHD [2 warps]", FA2_B64_P64, -1, true, "(sweep)", 0, 32, 2, false, true},
    {"sweep decode_aiter b64 kv4096 p16 HND [2 warps]", AIT_B64, -1, true, "(sweep)", 0, 32, 2, true, true},
    {"sweep decode_fa2 L1023 b64 kv4096 [4 warps]", FA2_B64, 1023, true, "(sweep)", 0, 32, 4, false, true},
    /* the warp-specialised engine's grid for 128-row tiles: one CTA per work item of 128 rows x kv
     * head against the default, the persistent kernel (one CTA per SM running its share of the
     * work items, the next item's loads overlapping the current one's last tiles and epilogue) */
    {"sweep prefill causal 8192 [wgmma-ws per item]", PF_8K, -1, true, "(sweep)", 0, 32, 2, false, true, 2, -1},
    {"sweep prefill causal L1023 8192 [wgmma-ws per item]", PF_8K, 1023, true, "(sweep)", 0, 32, 2, false, true, 2, -1},
    /* head_dim 256: the warp-specialised engine (one consumer warpgroup per CTA) against mma.sync */
    {"sweep prefill causal 8192 hd256 [wgmma-ws]", PF_8K_HD256, -1, true, "(sweep)", 0, 32, 2, false, true, 2},
    {"sweep prefill causal L1023 8192 hd256 [wgmma-ws]", PF_8K_HD256, 1023, true, "(sweep)", 0, 32, 2, false, true, 2},
    {"sweep prefill causal 8192 hd256 [mma.sync]", PF_8K_HD256, -1, true, "(sweep)", 0, 32, 2, false, true, 0},
    {"sweep prefill causal L1023 8192 hd256 [mma.sync]", PF_8K_HD256, 1023, true, "(sweep)", 0, 32, 2, false, true, 0},
};

static int bench_usage(FILE *f)
{
    fprintf(f, "usage: swadiff bench --device cuda [--json PATH] [--iters N] [--quick] [--only SUBSTRING]\n"
               "                                  [--sweep] [--peers] [--peers-script PATH] [--peers-budget SECONDS]\n"
               "  times the CUDA kernels on the docs/kernels.md shapes (CUDA events, median of N)\n"
               "  --peers: also times PyTorch SDPA (flash, cuDNN), flex_attention and JAX cuDNN on the same\n"
               "  shapes in the same run (bench/peers_bench.py, run with $SWADIFF_PYTHON or python3) and\n"
               "  prints swadiff/peer per row (a ratio of rates: above 1, swadiff is faster)\n"
               "  --sweep: also the variant rows (page layout and size) the kernel defaults were chosen from\n");
    return f == stdout ? SWA_EXIT_OK : SWA_EXIT_USAGE;
}

// ----------------------------------------------------------------------------
// peers timed in the same run

/* One geometry per distinct shape (the kernel-variant rows share it). */
static void peer_key(const bench_shape *b, char *buf, size_t n)
{
    snprintf(buf, n, "%s b%d q%d kv%d %d/%d hd%d L%d %s", b->backend, b->batch, b->qo_len, b->kv_len, b->hq, b->hk,
             b->head_dim, b->window_left, b->causal ? "causal" : "non-causal");
}

/* Runs the peers script over the distinct geometries of the rows that ran
 * and returns its JSON (NULL with *why set when it could not run). */
static cJSON *run_peers(const bench_shape *const *rows, int nrows, int iters, const char *script, double budget,
                        char *why, size_t whylen)
{
    char dir[] = "/tmp/swadiff-peers-XXXXXX";
    if (!mkdtemp(dir)) {
        snprintf(why, whylen, "cannot create a temporary folder");
        return NULL;
    }
    char shapes_path[128], out_path[128], log_path[128];
    snprintf(shapes_path, sizeof shapes_path, "%s/shapes.json", dir);
    snprintf(out_path, sizeof out_path, "%s/peers.json", dir);
    snprintf(log_path, sizeof log_path, "%s/peers.log", dir);
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; i < nrows; i++) {
        char key[160];
        peer_key(rows[i], key, sizeof key);
        bool seen = false;
        for (int j = 0; j < cJSON_GetArraySize(arr) && !seen; j++)
            seen = !strcmp(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, j), "name")->valuestring, key);
        if (seen) continue;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", key);
        cJSON_AddStringToObject(o, "backend", rows[i]->backend);
        cJSON_AddNumberToObject(o, "batch", rows[i]->batch);
        cJSON_AddNumberToObject(o, "qo_len", rows[i]->qo_len);
        cJSON_AddNumberToObject(o, "kv_len", rows[i]->kv_len);
        cJSON_AddNumberToObject(o, "num_qo_heads", rows[i]->hq);
        cJSON_AddNumberToObject(o, "num_kv_heads", rows[i]->hk);
        cJSON_AddNumberToObject(o, "head_dim", rows[i]->head_dim);
        cJSON_AddNumberToObject(o, "window_left", rows[i]->window_left);
        cJSON_AddBoolToObject(o, "causal", rows[i]->causal);
        cJSON_AddStringToObject(o, "dtype", "fp16");
        cJSON_AddItemToArray(arr, o);
    }
    char *text = cJSON_Print(arr);
    cJSON_Delete(arr);
    bool ok = text && swa_write_text_file(shapes_path, text) == 0;
    free(text);
    if (!ok) {
        snprintf(why, whylen, "cannot write %s", shapes_path);
        return NULL;
    }
    const char *py = getenv("SWADIFF_PYTHON");
    if (!py || !*py) py = "python3";
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' '%s' --shapes '%s' --out '%s' --iters %d --budget %.0f > '%s' 2>&1", py, script,
             shapes_path, out_path, iters, budget, log_path);
    printf("peers: %s (log %s)\n", cmd, log_path);
    fflush(stdout);
    int st = system(cmd);
    FILE *in = fopen(out_path, "r");
    if (!in) {
        snprintf(why, whylen, "the peers script exited with status %d and wrote no result (see %s)", st, log_path);
        return NULL;
    }
    fseek(in, 0, SEEK_END);
    long len = ftell(in);
    fseek(in, 0, SEEK_SET);
    char *buf = (char *)malloc((size_t)len + 1);
    size_t got = buf ? fread(buf, 1, (size_t)len, in) : 0;
    fclose(in);
    if (!buf) {
        snprintf(why, whylen, "out of memory reading %s", out_path);
        return NULL;
    }
    buf[got] = '\0';
    cJSON *res = cJSON_Parse(buf);
    free(buf);
    if (!res) snprintf(why, whylen, "%s is not JSON", out_path);
    return res;
}

/* Prints each row's peers with swadiff/peer and adds them to the row's JSON. */
static void report_peers(cJSON *results, const bench_shape *const *rows, int nrows, const cJSON *peers)
{
    const cJSON *by_shape = cJSON_GetObjectItem(peers, "peers");
    printf("\n%-50s %-16s %9s %12s %14s  %s\n", "workload", "peer", "median ms", "rate", "swadiff/peer", "how");
    for (int i = 0; i < nrows; i++) {
        cJSON *item = NULL;
        for (int j = 0; j < cJSON_GetArraySize(results) && !item; j++) {
            cJSON *x = cJSON_GetArrayItem(results, j);
            if (!strcmp(cJSON_GetObjectItem(x, "name")->valuestring, rows[i]->name)) item = x;
        }
        const cJSON *ms = item ? cJSON_GetObjectItem(item, "median_ms") : NULL;
        if (!item || !cJSON_IsNumber(ms)) continue;
        bool decode = strcmp(rows[i]->backend, "prefill") != 0;
        double work = cJSON_GetObjectItem(item, decode ? "bytes" : "flops")->valuedouble;
        char key[160];
        peer_key(rows[i], key, sizeof key);
        const cJSON *list = cJSON_GetObjectItem(by_shape, key);
        cJSON *out = cJSON_AddArrayToObject(item, "peers");
        const cJSON *p;
        cJSON_ArrayForEach(p, list)
        {
            const char *peer = cJSON_GetStringValue(cJSON_GetObjectItem(p, "peer"));
            cJSON *o = cJSON_Duplicate(p, 1);
            const cJSON *pm = cJSON_GetObjectItem(p, "median_ms");
            if (cJSON_IsNumber(pm) && pm->valuedouble > 0) {
                double rate = decode ? work / (pm->valuedouble * 1e-3) / 1e9 : work / (pm->valuedouble * 1e-3) / 1e12;
                double ratio = pm->valuedouble / ms->valuedouble; /* rate(swadiff) / rate(peer) */
                cJSON_AddNumberToObject(o, decode ? "gbps" : "tflops", rate);
                cJSON_AddNumberToObject(o, "swadiff_over_peer", ratio);
                const char *how = cJSON_GetStringValue(cJSON_GetObjectItem(p, "how"));
                printf("%-50s %-16s %9.3f %8.0f %s %13.2fx  %s\n", rows[i]->name, peer ? peer : "?", pm->valuedouble,
                       rate, decode ? "GB/s" : "TF/s", ratio, how ? how : "");
            } else {
                const char *why = cJSON_GetStringValue(cJSON_GetObjectItem(p, "unsupported"));
                printf("%-50s %-16s %9s %12s %14s  %s\n", rows[i]->name, peer ? peer : "?", "-", "-", "-",
                       why ? why : "no timing");
            }
            cJSON_AddItemToArray(out, o);
        }
    }
}

extern "C" int swa_bench_cuda(int argc, char **argv)
{
    const char *json_path = NULL, *only = NULL, *peers_script = "bench/peers_bench.py";
    bool peers = false, sweep = false;
    double peers_budget = 400;
    int iters = 30;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
        else if (!strcmp(argv[i], "--peers")) peers = true;
        else if (!strcmp(argv[i], "--peers-script") && i + 1 < argc) peers_script = argv[++i];
        else if (!strcmp(argv[i], "--peers-budget") && i + 1 < argc) peers_budget = atof(argv[++i]);
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--quick")) iters = 5;
        else if (!strcmp(argv[i], "--sweep")) sweep = true;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return bench_usage(stdout);
        else {
            fprintf(stderr, "swadiff bench --device cuda: unknown argument '%s'\n", argv[i]);
            return bench_usage(stderr);
        }
    }
    if (iters < 1) {
        fprintf(stderr, "swadiff bench --device cuda: --iters must be >= 1\n");
        return SWA_EXIT_USAGE;
    }
    if (peers && access(peers_script, R_OK) != 0) {
        fprintf(stderr, "swadiff bench --device cuda: --peers: cannot read the peers script %s (run from the "
                        "repository root or give --peers-script PATH)\n", peers_script);
        return SWA_EXIT_USAGE;
    }
    if (peers && !(peers_budget > 0)) {
        fprintf(stderr, "swadiff bench --device cuda: --peers-budget must be > 0 seconds\n");
        return SWA_EXIT_USAGE;
    }
    char why[256];
    if (!swa_cuda_device_ops.available(why, sizeof why)) {
        fprintf(stderr, "swadiff bench: %s\n", why);
        return SWA_EXIT_NO_GPU;
    }
    char desc[256];
    swa_cuda_device_ops.describe(desc, sizeof desc);
    printf("device: %s\n", desc);
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "device", desc);
    cJSON_AddNumberToObject(root, "iters", iters);
    cJSON *ceil = cJSON_AddObjectToObject(root, "ceilings");
    cJSON_AddNumberToObject(ceil, "d2d_copy_tbps", CEIL_COPY_TBPS);
    cJSON_AddNumberToObject(ceil, "dense_fp16_tensor_tflops", CEIL_TENSOR_TFLOPS);
    swa_error err = {SWA_OK, ""};
    double copy_tbps = 0;
    int rc = SWA_EXIT_OK;
    if (bench_copy_bandwidth(&copy_tbps, &err) == SWA_OK) {
        printf("device-to-device copy: %.2f TB/s (read + write; docs/kernels.md: %.2f)\n", copy_tbps, CEIL_COPY_TBPS);
        cJSON_AddNumberToObject(root, "measured_d2d_copy_tbps", copy_tbps);
    } else {
        printf("device-to-device copy: failed: %s\n", err.message);
    }
    cJSON *arr = cJSON_AddArrayToObject(root, "results");
    const bench_shape *ran[sizeof bench_shapes / sizeof bench_shapes[0]];
    int nran = 0;
    printf("%-50s %9s %9s %12s %8s %8s %s\n", "workload", "median ms", "min ms", "rate", "% ceil", "target",
           "met");
    for (size_t n = 0; n < sizeof bench_shapes / sizeof bench_shapes[0]; n++) {
        const bench_shape *b = &bench_shapes[n];
        if (only && !strstr(b->name, only)) continue;
        if (b->sweep && !sweep) continue;
        bench_result res;
        swa_error e = {SWA_OK, ""};
        swa_cuda_tuning saved = swa_cuda_tune;
        swa_cuda_tune.prefill_rows_per_warp = b->rows_per_warp;
        swa_cuda_tune.decode_warps = b->decode_warps;
        swa_cuda_tune.prefill_ws_ctas = b->ws_ctas;
        SWA_DEV_SYM(set_prefill_engine)(b->prefill_engine);
        long wgmma_before = SWA_DEV_SYM(prefill_wgmma_launches)();
        swa_cuda_last_kernel(NULL, 0);
        swa_status st = bench_run_shape(b, iters, &res, &e);
        if (st == SWA_OK && b->prefill_engine != 0 && SWA_DEV_SYM(prefill_wgmma_launches)() == wgmma_before)
            st = swa_error_set(&e, SWA_ERR_UNSUPPORTED, "no wgmma engine here (compute capability 9.0 and an sm_90a "
                                                         "build needed): mma.sync ran, not timed as wgmma");
        char kernel_note[192];
        swa_cuda_last_kernel(kernel_note, sizeof kernel_note); /* the variant the row timed */
        swa_cuda_tune = saved;
        cJSON *item = cJSON_CreateObject();
        cJSON_AddStringToObject(item, "name", b->name);
        cJSON_AddStringToObject(item, "backend", b->backend);
        cJSON *shape = cJSON_AddObjectToObject(item, "shape");
        cJSON_AddNumberToObject(shape, "batch", b->batch);
        cJSON_AddNumberToObject(shape, "qo_len", b->qo_len);
        cJSON_AddNumberToObject(shape, "kv_len", b->kv_len);
        cJSON_AddNumberToObject(shape, "num_qo_heads", b->hq);
        cJSON_AddNumberToObject(shape, "num_kv_heads", b->hk);
        cJSON_AddNumberToObject(shape, "head_dim", b->head_dim);
        cJSON_AddNumberToObject(shape, "page_size", b->page_size);
        cJSON_AddNumberToObject(shape, "window_left", b->window_left);
        cJSON_AddStringToObject(shape, "dtype", "fp16");
        cJSON_AddStringToObject(shape, "layout", b->hnd ? "HND" : "NHD");
        cJSON_AddNumberToObject(item, "rows_per_warp", b->rows_per_warp);
        cJSON_AddNumberToObject(item, "decode_warps", b->decode_warps);
        if (!strcmp(b->backend, "prefill"))
            cJSON_AddStringToObject(item, "prefill_engine", b->prefill_engine == 2 ? "wgmma-ws" : "mma.sync");
        if (b->prefill_engine == 2) cJSON_AddStringToObject(item, "kv_loads", "cp.async");
        if (st == SWA_OK && kernel_note[0]) cJSON_AddStringToObject(item, "kernel", kernel_note);
        cJSON_AddItemToArray(arr, item);
        if (st != SWA_OK) {
            printf("%-50s FAILED: %s\n", b->name, e.message);
            cJSON_AddStringToObject(item, "error", e.message);
            rc = SWA_EXIT_RUNTIME;
            if (st == SWA_ERR_DEVICE && strstr(e.message, "unusable")) break;
            continue;
        }
        bool decode = strcmp(b->backend, "prefill") != 0;
        double rate = decode ? res.work / (res.median_ms * 1e-3) / 1e9 : res.work / (res.median_ms * 1e-3) / 1e12;
        double ceiling = decode ? CEIL_COPY_TBPS * 1000 : CEIL_TENSOR_TFLOPS;
        bool met = b->target <= 0 || rate >= b->target;
        printf("%-50s %9.3f %9.3f %8.0f %s %7.1f%% %8.0f %s\n", b->name, res.median_ms, res.min_ms, rate,
               decode ? "GB/s" : "TF/s", 100.0 * rate / ceiling, b->target, b->target > 0 ? (met ? "yes" : "NO") : "-");
        printf("%-50s   plan: %s;%s spot check %d rows, max abs err %.2e\n", "", res.plan,
               b->prefill_engine == 2 ? " K/V by cp.async;" : "", res.check_rows,
               res.check_max_err);
        if (!b->sweep) ran[nran++] = b; /* peers time the docs/kernels.md rows */
        cJSON_AddStringToObject(item, "plan", res.plan);
        cJSON_AddNumberToObject(item, "median_ms", res.median_ms);
        cJSON_AddNumberToObject(item, "min_ms", res.min_ms);
        cJSON_AddNumberToObject(item, "max_ms", res.max_ms);
        cJSON_AddNumberToObject(item, decode ? "bytes" : "flops", res.work);
        cJSON_AddNumberToObject(item, decode ? "gbps" : "tflops", rate);
        cJSON_AddStringToObject(item, "ceiling", decode ? "device-to-device copy 4.27 TB/s (docs/kernels.md)"
                                                        : "dense fp16 tensor-core peak 989 TFLOP/s (docs/kernels.md)");
        cJSON_AddNumberToObject(item, "pct_of_ceiling", 100.0 * rate / ceiling);
        if (decode && copy_tbps > 0) cJSON_AddNumberToObject(item, "pct_of_measured_copy", 100.0 * rate / (copy_tbps * 1000));
        cJSON_AddStringToObject(item, "target", b->target_text);
        if (b->target > 0) cJSON_AddBoolToObject(item, "target_met", met);
        cJSON_AddNumberToObject(item, "spot_check_max_abs_err", res.check_max_err);
    }
    if (peers && nran > 0) {
        char why[512] = "";
        cJSON *pj = run_peers(ran, nran, iters, peers_script, peers_budget, why, sizeof why);
        if (pj) {
            report_peers(arr, ran, nran, pj);
            cJSON *v = cJSON_GetObjectItem(pj, "versions");
            if (v) cJSON_AddItemToObject(root, "peer_versions", cJSON_Duplicate(v, 1));
            cJSON_Delete(pj);
        } else {
            printf("peers: not timed: %s\n", why);
            cJSON_AddStringToObject(root, "peers_error", why);
            rc = SWA_EXIT_RUNTIME;
        }
    }
    if (json_path) {
        char *text = cJSON_Print(root);
        if (!text || swa_write_text_file(json_path, text) != 0) {
            fprintf(stderr, "swadiff bench: cannot write %s\n", json_path);
            rc = SWA_EXIT_RUNTIME;
        }
        free(text);
    }
    cJSON_Delete(root);
    return rc;
}
