/* cuda_bad.cu — device-memory plug-in backends that each break one rule of
 * include/swadiff/plugin.h's device contract (built with nvcc where CUDA
 * is on; tests/gpu_test_plugins.c runs each beside the example plug-in
 * and a built-in backend, which must be unaffected):
 *
 *   overflow          writes one element past the end of out (the guard)
 *   free_q            cudaFree()s the harness's q
 *   write_kcache      overwrites the first bytes of the K cache
 *   write_page_table  overwrites the page table (kv_indices)
 *   spin              a kernel that never ends (run synchronises on it)
 *   legacy_stream     writes out from the legacy default stream, late, and
 *                     returns without synchronising
 *   own_stream        the same from a stream of its own
 *   fault             an illegal address (a sticky device error)
 *   fields            checks the device problem as documented (memory,
 *                     stream, device, every *_dev array against its host
 *                     copy, ragged K/V against the paged cache) and
 *                     returns an error saying "device problem as
 *                     documented" or what differs
 *
 * Every backend but fields writes zeros into out, so a rule broken without
 * being caught would show as a mismatch, not as the error the test wants. */
#include <swadiff/plugin.h>

#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t out_bytes(const swadiff_problem *p)
{
    return (size_t)p->total_qo * p->num_qo_heads * p->head_dim * (p->dtype == SWADIFF_FP32 ? 4 : 2);
}

static swadiff_rc fail(cudaError_t rc, const char *what, char *msg, size_t n)
{
    if (rc == cudaSuccess) return SWADIFF_RC_OK;
    snprintf(msg, n, "%s: %s", what, cudaGetErrorString(rc));
    return SWADIFF_RC_ERROR;
}

/* Zeros into out (and lse) on the given stream: every element written. */
static cudaError_t zeros(const swadiff_problem *p, const swadiff_output *o, cudaStream_t s)
{
    cudaError_t rc = cudaMemsetAsync(o->out, 0, out_bytes(p), s);
    if (rc == cudaSuccess && o->lse)
        rc = cudaMemsetAsync(o->lse, 0, (size_t)p->total_qo * p->num_qo_heads * sizeof(float), s);
    return rc;
}

static swadiff_rc run_overflow(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg, size_t n)
{
    (void)plan;
    cudaStream_t s = (cudaStream_t)p->stream;
    cudaError_t rc = zeros(p, o, s);
    if (rc == cudaSuccess) rc = cudaMemsetAsync((char *)o->out + out_bytes(p), 0x3c, 2, s); /* one fp16 past */
    return fail(rc, "overflow", msg, n);
}

static swadiff_rc run_free_q(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg, size_t n)
{
    (void)plan;
    cudaError_t rc = zeros(p, o, (cudaStream_t)p->stream);
    if (rc == cudaSuccess) rc = cudaFree((void *)p->q);
    return fail(rc, "free_q", msg, n);
}

static swadiff_rc run_write_kcache(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg,
                                   size_t n)
{
    (void)plan;
    cudaStream_t s = (cudaStream_t)p->stream;
    cudaError_t rc = zeros(p, o, s);
    if (rc == cudaSuccess) rc = cudaMemsetAsync((void *)p->k_cache, 0x5a, 64, s);
    return fail(rc, "write_kcache", msg, n);
}

static swadiff_rc run_write_page_table(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg,
                                       size_t n)
{
    (void)plan;
    cudaStream_t s = (cudaStream_t)p->stream;
    cudaError_t rc = zeros(p, o, s);
    size_t entries = (size_t)p->kv_indptr[p->num_requests];
    if (rc == cudaSuccess && entries) rc = cudaMemsetAsync((void *)p->kv_indices_dev, 0x7f, entries * sizeof(int32_t), s);
    return fail(rc, "write_page_table", msg, n);
}

__global__ void spin_forever(int *never)
{
    while (atomicAdd(never, 0) == 0) { /* nothing sets it */
    }
}

static swadiff_rc run_spin(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg, size_t n)
{
    (void)plan, (void)o;
    int *flag = NULL;
    cudaStream_t s = (cudaStream_t)p->stream;
    cudaError_t rc = cudaMalloc(&flag, sizeof *flag);
    if (rc == cudaSuccess) rc = cudaMemsetAsync(flag, 0, sizeof *flag, s);
    if (rc == cudaSuccess) {
        spin_forever<<<1, 1, 0, s>>>(flag);
        rc = cudaStreamSynchronize(s); /* never returns */
    }
    return fail(rc, "spin", msg, n);
}

/* Waits about `ns` nanoseconds on the GPU clock, then zero-fills out. */
__global__ void late_zeros(unsigned char *out, size_t bytes, long long ns)
{
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        unsigned long long t0, t;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
        do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        while ((long long)(t - t0) < ns);
    }
    __syncthreads();
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < bytes; i += (size_t)gridDim.x * blockDim.x)
        out[i] = 0;
}

static swadiff_rc run_legacy_stream(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg,
                                    size_t n)
{
    (void)plan;
    late_zeros<<<1, 256, 0, cudaStreamLegacy>>>((unsigned char *)o->out, out_bytes(p), 200 * 1000 * 1000LL);
    cudaError_t rc = cudaGetLastError();
    if (rc == cudaSuccess && o->lse) rc = cudaMemsetAsync(o->lse, 0, (size_t)p->total_qo * p->num_qo_heads * 4,
                                                          cudaStreamLegacy);
    return fail(rc, "legacy_stream", msg, n); /* no synchronisation: the bug */
}

static swadiff_rc run_own_stream(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg, size_t n)
{
    (void)plan;
    cudaStream_t own;
    cudaError_t rc = cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking);
    if (rc != cudaSuccess) return fail(rc, "own_stream", msg, n);
    late_zeros<<<1, 256, 0, own>>>((unsigned char *)o->out, out_bytes(p), 200 * 1000 * 1000LL);
    rc = cudaGetLastError();
    if (rc == cudaSuccess && o->lse) rc = cudaMemsetAsync(o->lse, 0, (size_t)p->total_qo * p->num_qo_heads * 4, own);
    cudaStreamDestroy(own); /* returns at once; the work goes on */
    return fail(rc, "own_stream", msg, n);
}

__global__ void write_at(int *p) { *p = 1; }

static swadiff_rc run_fault(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg, size_t n)
{
    (void)plan;
    cudaStream_t s = (cudaStream_t)p->stream;
    cudaError_t rc = zeros(p, o, s);
    if (rc == cudaSuccess) {
        write_at<<<1, 1, 0, s>>>((int *)(uintptr_t)0x10); /* an address nothing maps */
        rc = cudaGetLastError();
    }
    return fail(rc, "fault", msg, n);
}

/* ---- fields: the device problem as documented ------------------------------- */

static int is_device(const void *ptr)
{
    cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, ptr) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return a.type == cudaMemoryTypeDevice;
}

/* Copies n ints of a device array back and compares them with the host copy. */
static const char *same_ints(const int32_t *dev, const int32_t *host, size_t count, const char *name, char *why,
                             size_t why_n)
{
    if (!count) return NULL;
    if (!dev || !is_device(dev)) {
        snprintf(why, why_n, "%s_dev is not device memory", name);
        return why;
    }
    int32_t *back = (int32_t *)malloc(count * sizeof *back);
    if (!back) return "out of host memory";
    cudaError_t rc = cudaMemcpy(back, dev, count * sizeof *back, cudaMemcpyDeviceToHost);
    int differ = rc != cudaSuccess || memcmp(back, host, count * sizeof *back) != 0;
    free(back);
    if (!differ) return NULL;
    snprintf(why, why_n, "%s_dev differs from the host %s", name, name);
    return why;
}

static const char *check_fields(const swadiff_problem *p, char *why, size_t n)
{
    const int B = p->num_requests;
    int dev = -1;
    cudaGetDevice(&dev);
    if (p->struct_size != sizeof *p) return "struct_size is not sizeof(swadiff_problem)";
    if (p->memory != SWADIFF_MEM_CUDA) return "memory is not SWADIFF_MEM_CUDA";
    if (!p->stream) return "stream is NULL";
    if (cudaStreamQuery((cudaStream_t)p->stream) == cudaErrorInvalidResourceHandle) return "stream is not a stream";
    if (p->device != dev) return "device is not the current device";
    const void *tensors[] = {p->q, p->k_cache, p->v_cache, p->k, p->v};
    const char *names[] = {"q", "k_cache", "v_cache", "k", "v"};
    for (int i = 0; i < 5; i++)
        if (!is_device(tensors[i])) {
            snprintf(why, n, "%s is not device memory", names[i]);
            return why;
        }
    const int32_t *host[] = {p->qo_indptr, p->qo_len, p->kv_len, p->kv_seq_indptr, p->kv_indptr, p->kv_indices,
                             p->kv_last_page_len, p->block_tables, p->context_lens};
    for (int i = 0; i < 9; i++)
        if (is_device(host[i])) return "a host index array is device memory";
    const char *bad;
    if ((bad = same_ints(p->qo_indptr_dev, p->qo_indptr, B + 1, "qo_indptr", why, n)) ||
        (bad = same_ints(p->kv_seq_indptr_dev, p->kv_seq_indptr, B + 1, "kv_seq_indptr", why, n)) ||
        (bad = same_ints(p->kv_indptr_dev, p->kv_indptr, B + 1, "kv_indptr", why, n)) ||
        (bad = same_ints(p->kv_indices_dev, p->kv_indices, (size_t)p->kv_indptr[B], "kv_indices", why, n)) ||
        (bad = same_ints(p->kv_last_page_len_dev, p->kv_last_page_len, B, "kv_last_page_len", why, n)) ||
        (bad = same_ints(p->block_tables_dev, p->block_tables, (size_t)B * p->max_blocks_per_seq, "block_tables",
                         why, n)) ||
        (bad = same_ints(p->context_lens_dev, p->context_lens, B, "context_lens", why, n)))
        return bad;
    for (int r = 0; r < B; r++)
        if (p->context_lens[r] != p->kv_len[r] || p->qo_indptr[r + 1] - p->qo_indptr[r] != p->qo_len[r])
            return "context_lens / qo_len disagree with kv_len / qo_indptr";
    /* ragged K and V hold the paged cache's tokens: compare every token's rows */
    const size_t es = p->dtype == SWADIFF_FP32 ? 4 : 2, row = (size_t)p->num_kv_heads * p->head_dim * es;
    const size_t pool = (size_t)p->num_pages * p->page_size * row, ragged = (size_t)p->total_kv * row;
    unsigned char *kc = (unsigned char *)malloc(pool ? pool : 1), *vc = (unsigned char *)malloc(pool ? pool : 1);
    unsigned char *kr = (unsigned char *)malloc(ragged ? ragged : 1), *vr = (unsigned char *)malloc(ragged ? ragged : 1);
    const char *verdict = NULL;
    if (!kc || !vc || !kr || !vr) verdict = "out of host memory";
    if (!verdict && (cudaMemcpy(kc, p->k_cache, pool, cudaMemcpyDeviceToHost) != cudaSuccess ||
                     cudaMemcpy(vc, p->v_cache, pool, cudaMemcpyDeviceToHost) != cudaSuccess ||
                     cudaMemcpy(kr, p->k, ragged, cudaMemcpyDeviceToHost) != cudaSuccess ||
                     cudaMemcpy(vr, p->v, ragged, cudaMemcpyDeviceToHost) != cudaSuccess))
        verdict = "copying the tensors back failed";
    const size_t head = (size_t)p->head_dim * es, ps = (size_t)p->page_size, H = (size_t)p->num_kv_heads;
    for (int r = 0; !verdict && r < B; r++)
        for (int t = 0; !verdict && t < p->kv_len[r]; t++)
            for (size_t h = 0; !verdict && h < H; h++) {
                size_t page = (size_t)p->kv_indices[p->kv_indptr[r] + t / p->page_size], slot = (size_t)t % ps;
                size_t at = p->layout == SWADIFF_HND ? ((page * H + h) * ps + slot) * head
                                                     : ((page * ps + slot) * H + h) * head;
                size_t seq = ((size_t)(p->kv_seq_indptr[r] + t) * H + h) * head;
                if (memcmp(kc + at, kr + seq, head) || memcmp(vc + at, vr + seq, head)) {
                    snprintf(why, n, "request %d token %d head %zu: ragged k/v differ from the paged cache", r, t, h);
                    verdict = why;
                }
            }
    free(kc), free(vc), free(kr), free(vr);
    return verdict;
}

static swadiff_rc run_fields(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg, size_t n)
{
    (void)plan;
    char why[256];
    const char *bad = check_fields(p, why, sizeof why);
    int out_ok = is_device(o->out) && (!p->return_lse || !o->lse || is_device(o->lse));
    snprintf(msg, n, "%s", bad ? bad : out_ok ? "device problem as documented" : "out or lse is not device memory");
    return SWADIFF_RC_ERROR;
}

#define MEM SWADIFF_MEM_CUDA
static const swadiff_plugin_backend backends[] = {
    {"overflow", "writes one element past out", MEM, 0.0, NULL, NULL, run_overflow, NULL, NULL},
    {"free_q", "frees the harness's q", MEM, 0.0, NULL, NULL, run_free_q, NULL, NULL},
    {"write_kcache", "overwrites the K cache", MEM, 0.0, NULL, NULL, run_write_kcache, NULL, NULL},
    {"write_page_table", "overwrites kv_indices", MEM, 0.0, NULL, NULL, run_write_page_table, NULL, NULL},
    {"spin", "a kernel that never ends", MEM, 0.0, NULL, NULL, run_spin, NULL, NULL},
    {"legacy_stream", "writes out late from the legacy default stream", MEM, 0.0, NULL, NULL, run_legacy_stream, NULL, NULL},
    {"own_stream", "writes out late from a stream of its own", MEM, 0.0, NULL, NULL, run_own_stream, NULL, NULL},
    {"fault", "an illegal address", MEM, 0.0, NULL, NULL, run_fault, NULL, NULL},
    {"fields", "checks the device problem", MEM, 0.0, NULL, NULL, run_fields, NULL, NULL},
};

static const swadiff_plugin plugin = {SWADIFF_PLUGIN_ABI_VERSION, "cuda_bad",
                                      (int32_t)(sizeof backends / sizeof backends[0]), backends};

SWADIFF_PLUGIN_EXPORT const swadiff_plugin *swadiff_plugin_entry(void) { return &plugin; }
