/* plugin_cuda.cu — a swadiff plug-in whose kernel runs on the GPU, in
 * device memory, on the stream swadiff hands it.
 *
 * One thread block per (query row, qo head): the block walks the row's
 * visible keys in chunks, 128 keys at a time, straight from the paged KV
 * cache (FlashInfer form, NHD or HND), with an online softmax in double.
 * Readable rather than fast.  Three backends:
 *
 *   cuda_example:exact         the kernel, launched on problem->stream; run
 *                              returns without synchronising (swadiff does)
 *   cuda_example:exact_graph   plan captures the same kernel into a CUDA
 *                              graph on problem->stream, into a buffer of
 *                              its own; run replays the graph and copies the
 *                              result out, as a serving engine replays its
 *                              captured decode step
 *   cuda_example:window_short  deliberately wrong: keeps [p - L + 1, p], L
 *                              keys instead of L + 1, for swadiff to find
 *
 * Build: nvcc -O2 -std=c++17 -shared -Xcompiler -fPIC -arch=sm_90 \
 *            -I<swadiff>/include plugin_cuda.cu -o libswadiff_cuda_example.so
 * Run:   swadiff run --device cuda --plugin ./libswadiff_cuda_example.so \
 *            --backend 'cuda_example:exact' cases */
#include <swadiff/plugin.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 128  /* keys scored per chunk, and the block size */
#define MAX_DIMS 4   /* head_dim <= THREADS * MAX_DIMS (512) */

/* ---- the kernel ---------------------------------------------------------- */

struct attn_args {
    const void *q, *k_cache, *v_cache;
    const int *qo_indptr, *kv_indptr, *kv_indices, *kv_len;
    void *out;
    float *lse; /* NULL: not asked */
    int num_requests, num_qo_heads, num_kv_heads, head_dim, page_size, dtype, hnd;
    int causal, window_left, window_right, short_window;
    double sm_scale, soft_cap;
};

__device__ double load(const void *base, size_t i, int dtype)
{
    if (dtype == SWADIFF_FP16) return __half2float(((const __half *)base)[i]);
    if (dtype == SWADIFF_BF16) return __bfloat162float(((const __nv_bfloat16 *)base)[i]);
    return ((const float *)base)[i];
}

__device__ void store(void *base, size_t i, int dtype, double x) /* one rounding, to nearest even */
{
    if (dtype == SWADIFF_FP16) ((__half *)base)[i] = __double2half(x);
    else if (dtype == SWADIFF_BF16) ((__nv_bfloat16 *)base)[i] = __double2bfloat16(x);
    else ((float *)base)[i] = (float)x;
}

/* Element offset of (request r, token t, kv head h, d = 0) in the pool. */
__device__ size_t kv_offset(const attn_args &a, int r, int t, int h)
{
    size_t page = (size_t)a.kv_indices[a.kv_indptr[r] + t / a.page_size], slot = (size_t)(t % a.page_size);
    size_t ps = (size_t)a.page_size, H = (size_t)a.num_kv_heads, D = (size_t)a.head_dim;
    return a.hnd ? ((page * H + h) * ps + slot) * D : ((page * ps + slot) * H + h) * D;
}

/* Sum (op 0) or maximum (op 1) over the block; every thread gets it. */
__device__ double block_reduce(double x, int op, double *scratch)
{
    scratch[threadIdx.x] = x;
    __syncthreads();
    for (int half = THREADS / 2; half > 0; half /= 2) {
        if ((int)threadIdx.x < half) {
            double y = scratch[threadIdx.x + half];
            scratch[threadIdx.x] = op ? fmax(scratch[threadIdx.x], y) : scratch[threadIdx.x] + y;
        }
        __syncthreads();
    }
    double r = scratch[0];
    __syncthreads();
    return r;
}

__global__ void __launch_bounds__(THREADS) attend(attn_args a)
{
    __shared__ double qs[THREADS * MAX_DIMS]; /* the query row, as double */
    __shared__ double w[THREADS];             /* this chunk's logits, then weights */
    __shared__ double scratch[THREADS];
    const int row = blockIdx.x, h = blockIdx.y, D = a.head_dim, tid = threadIdx.x;
    int r = 0; /* the request of this row: the last r with qo_indptr[r] <= row */
    for (int lo = 0, hi = a.num_requests - 1; lo <= hi;) {
        int mid = (lo + hi) / 2;
        if (a.qo_indptr[mid] <= row) r = mid, lo = mid + 1;
        else hi = mid - 1;
    }
    const int qo_len = a.qo_indptr[r + 1] - a.qo_indptr[r], kv_len = a.kv_len[r];
    const int pos = kv_len - qo_len + (row - a.qo_indptr[r]); /* bottom-right alignment */
    /* the visible keys [first, last] */
    long long first = 0, last = (long long)kv_len - 1;
    if (a.causal && pos < last) last = pos;
    if (a.window_right >= 0 && (long long)pos + a.window_right < last) last = (long long)pos + a.window_right;
    if (a.window_left >= 0) {
        long long L = a.window_left;
        if (a.short_window && L >= 1) L -= 1; /* BUG on purpose (window_short): drops the oldest key */
        if (pos - L > first) first = pos - L;
    }
    const int kvh = h / (a.num_qo_heads / a.num_kv_heads); /* GQA */
    const size_t qo = ((size_t)row * a.num_qo_heads + h) * D;  /* q and out share the layout */
    for (int d = tid; d < D; d += THREADS) qs[d] = load(a.q, qo + d, a.dtype);
    __syncthreads();

    double m = -INFINITY, sum = 0.0, acc[MAX_DIMS] = {0.0, 0.0, 0.0, 0.0};
    for (long long c0 = first; c0 <= last; c0 += THREADS) {
        const int n = (int)(last - c0 + 1 < THREADS ? last - c0 + 1 : THREADS);
        double s = -INFINITY; /* thread tid scores key c0 + tid */
        if (tid < n) {
            const size_t ko = kv_offset(a, r, (int)(c0 + tid), kvh);
            double dot = 0.0;
            for (int d = 0; d < D; d++) dot += qs[d] * load(a.k_cache, ko + d, a.dtype);
            s = dot * a.sm_scale;
            if (a.soft_cap != 0.0) s = a.soft_cap * tanh(s / a.soft_cap);
        }
        const double m_new = fmax(m, block_reduce(s, 1, scratch));
        const double rescale = exp(m - m_new); /* 0 on the first chunk (m = -inf) */
        const double p = tid < n ? exp(s - m_new) : 0.0;
        sum = sum * rescale + block_reduce(p, 0, scratch);
        w[tid] = p;
        __syncthreads();
        for (int i = 0; i < MAX_DIMS; i++) {   /* thread tid owns dims tid, tid + THREADS, ... */
            const int d = tid + i * THREADS;
            if (d >= D) break;
            double x = acc[i] * rescale;
            for (int j = 0; j < n; j++) x += w[j] * load(a.v_cache, kv_offset(a, r, (int)(c0 + j), kvh) + d, a.dtype);
            acc[i] = x;
        }
        __syncthreads();
        m = m_new;
    }
    const bool empty = first > last; /* no visible key: output 0, lse -inf */
    for (int i = 0; i < MAX_DIMS; i++) {
        const int d = tid + i * THREADS;
        if (d < D) store(a.out, qo + d, a.dtype, empty ? 0.0 : acc[i] / sum);
    }
    if (a.lse && tid == 0) a.lse[(size_t)row * a.num_qo_heads + h] = empty ? -INFINITY : (float)(m + log(sum));
}

/* ---- launching ----------------------------------------------------------- */

static attn_args args_of(const swadiff_problem *p, void *out, float *lse, int short_window)
{
    attn_args a;
    a.q = p->q;
    a.k_cache = p->k_cache;
    a.v_cache = p->v_cache;
    a.qo_indptr = p->qo_indptr_dev;   /* device memory: the *_dev arrays */
    a.kv_indptr = p->kv_indptr_dev;
    a.kv_indices = p->kv_indices_dev;
    a.kv_len = p->context_lens_dev;   /* context_lens is kv_len */
    a.out = out;
    a.lse = p->return_lse ? lse : NULL;
    a.num_requests = p->num_requests;
    a.num_qo_heads = p->num_qo_heads;
    a.num_kv_heads = p->num_kv_heads;
    a.head_dim = p->head_dim;
    a.page_size = p->page_size;
    a.dtype = p->dtype;
    a.hnd = p->layout == SWADIFF_HND;
    a.causal = p->causal;
    a.window_left = p->window_left;
    a.window_right = p->window_right;
    a.short_window = short_window;
    a.sm_scale = p->sm_scale;
    a.soft_cap = p->soft_cap;
    return a;
}

/* Enqueues the kernel on the problem's stream. */
static swadiff_rc launch(const swadiff_problem *p, void *out, float *lse, int short_window, char *msg,
                         size_t msg_size)
{
    if (p->total_qo == 0) return SWADIFF_RC_OK;
    attend<<<dim3((unsigned)p->total_qo, (unsigned)p->num_qo_heads), THREADS, 0, (cudaStream_t)p->stream>>>(
        args_of(p, out, lse, short_window));
    cudaError_t rc = cudaGetLastError();
    if (rc == cudaSuccess) return SWADIFF_RC_OK;
    snprintf(msg, msg_size, "launching the kernel: %s", cudaGetErrorString(rc));
    return SWADIFF_RC_ERROR;
}

/* ---- the ABI ------------------------------------------------------------- */

static swadiff_rc supports(const swadiff_problem *p, char *msg, size_t msg_size)
{
    const char *why = NULL;
    if (p->struct_size < sizeof *p)
        why = "swadiff_problem is older than this plug-in's header";
    else if (p->memory != SWADIFF_MEM_CUDA || !p->stream)
        why = "not handed CUDA memory and a stream";
    else if (p->head_dim < 1 || p->head_dim > THREADS * MAX_DIMS)
        why = "head_dim over 512";
    else if (p->num_kv_heads < 1 || p->num_qo_heads % p->num_kv_heads != 0)
        why = "num_qo_heads is not a multiple of num_kv_heads";
    if (!why) return SWADIFF_RC_OK;
    snprintf(msg, msg_size, "%s", why);
    return SWADIFF_RC_UNSUPPORTED;
}

static swadiff_rc run_exact(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg, size_t msg_size)
{
    (void)plan;
    return launch(p, o->out, o->lse, 0, msg, msg_size);
}

static swadiff_rc run_window_short(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg,
                                   size_t msg_size)
{
    (void)plan;
    return launch(p, o->out, o->lse, 1, msg, msg_size);
}

/* exact_graph: the graph and the buffers it writes, made by plan. */
struct graph_plan {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    void *out;
    float *lse;
    size_t out_bytes, lse_bytes;
};

static void plan_free_graph(void *plan)
{
    graph_plan *g = (graph_plan *)plan;
    if (!g) return;
    if (g->exec) cudaGraphExecDestroy(g->exec);
    if (g->graph) cudaGraphDestroy(g->graph);
    cudaFree(g->out);
    cudaFree(g->lse);
    free(g);
}

static swadiff_rc plan_graph(const swadiff_problem *p, void **plan, char *msg, size_t msg_size)
{
    graph_plan *g = (graph_plan *)calloc(1, sizeof *g);
    if (!g) {
        snprintf(msg, msg_size, "out of host memory");
        return SWADIFF_RC_ERROR;
    }
    size_t rows = (size_t)p->total_qo * p->num_qo_heads;
    g->out_bytes = rows * p->head_dim * (p->dtype == SWADIFF_FP32 ? 4 : 2);
    g->lse_bytes = rows * sizeof(float);
    cudaStream_t stream = (cudaStream_t)p->stream;
    cudaError_t rc = cudaMalloc(&g->out, g->out_bytes ? g->out_bytes : 16);
    if (rc == cudaSuccess) rc = cudaMalloc((void **)&g->lse, g->lse_bytes ? g->lse_bytes : 16);
    if (rc == cudaSuccess) rc = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
    if (rc == cudaSuccess) {
        swadiff_rc launched = launch(p, g->out, g->lse, 0, msg, msg_size);
        rc = cudaStreamEndCapture(stream, &g->graph);
        if (launched != SWADIFF_RC_OK) {
            plan_free_graph(g);
            return launched;
        }
    }
    if (rc == cudaSuccess) rc = cudaGraphInstantiate(&g->exec, g->graph, 0);
    if (rc != cudaSuccess) {
        snprintf(msg, msg_size, "capturing the CUDA graph: %s", cudaGetErrorString(rc));
        plan_free_graph(g);
        return SWADIFF_RC_ERROR;
    }
    *plan = g;
    return SWADIFF_RC_OK;
}

static swadiff_rc run_graph(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg, size_t msg_size)
{
    graph_plan *g = (graph_plan *)plan;
    cudaStream_t stream = (cudaStream_t)p->stream;
    cudaError_t rc = cudaGraphLaunch(g->exec, stream);
    if (rc == cudaSuccess && g->out_bytes)
        rc = cudaMemcpyAsync(o->out, g->out, g->out_bytes, cudaMemcpyDeviceToDevice, stream);
    if (rc == cudaSuccess && p->return_lse && o->lse && g->lse_bytes)
        rc = cudaMemcpyAsync(o->lse, g->lse, g->lse_bytes, cudaMemcpyDeviceToDevice, stream);
    if (rc == cudaSuccess) return SWADIFF_RC_OK;
    snprintf(msg, msg_size, "replaying the CUDA graph: %s", cudaGetErrorString(rc));
    return SWADIFF_RC_ERROR;
}

#define LN 2.718281828459045 /* the LSE is a natural log */
/* each output element on its own, in double: deterministic and
 * batch-invariant (plug-in ABI 3, docs/invariance.md) */
#define HELD (SWADIFF_INVARIANCE_DETERMINISTIC | SWADIFF_INVARIANCE_BATCH)

static const swadiff_plugin_backend backends[] = {
    {"exact", "one block per (row, head), double accumulation, on the given stream", SWADIFF_MEM_CUDA, LN,
     supports, NULL, run_exact, NULL, NULL, HELD},
    {"exact_graph", "the same kernel captured into a CUDA graph by plan, replayed by run", SWADIFF_MEM_CUDA, LN,
     supports, plan_graph, run_graph, plan_free_graph, NULL, HELD},
    {"window_short", "deliberately wrong: the window loses its oldest key", SWADIFF_MEM_CUDA, LN, supports, NULL,
     run_window_short, NULL, NULL, HELD},
};

static const swadiff_plugin plugin = {SWADIFF_PLUGIN_ABI_VERSION, "cuda_example",
                                      (int32_t)(sizeof backends / sizeof backends[0]), backends};

SWADIFF_PLUGIN_EXPORT const swadiff_plugin *swadiff_plugin_entry(void) { return &plugin; }
