/* cuda_device.cu — the CUDA device table (swa_cuda_device_ops; built by
 * hipcc as the ROCm device table swa_hip_device_ops, see vendor.cuh): device
 * discovery, input upload, the guarded output round trip, and the four
 * plan executors (prefill, decode_fa2, decode_fa2 in CUDA-graph mode,
 * decode_aiter) that feed the kernels of prefill.cu / decode_fa2.cu /
 * decode_aiter.cu.
 *
 * Output rule (backends/backend.h): the harness hands out and lse with
 * guard bytes on each side and a poisoned interior.  The whole guarded
 * region is copied to the device, the kernels run, and the whole region
 * comes back, so writes outside and elements never written are seen on the
 * host exactly as with the host emulation.
 *
 * Test: tests/gpu_test_kernels.c (exits 77 without a GPU);
 * tests/test_hip_build.c (the ROCm build reports "no ROCm device" here). */
#include "backends/cuda/cuda_internal.cuh"
#include "backends/backend.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

namespace SWA_NS {

// ----------------------------------------------------------------------------
// discovery
//
// CUDA does not survive fork(): a child of a process that has initialised
// the driver gets cudaErrorInitializationError.  The harness asks
// available()/describe() in its parent and runs the cases in forked workers,
// so the parent must never initialise CUDA: the questions are answered by a
// short-lived probe child (through a pipe) and cached.  Once this process
// uses the device itself (upload), it asks in-process.

#define SWA_PROBE_GPUS 16 /* GPUs `list devices` describes one by one */

typedef struct cuda_probe {
    int ok, sms;
    char why[512], desc[512];
    int num_gpus;                    /* visible GPUs described in gpu[] */
    char gpu[SWA_PROBE_GPUS][320];   /* one line each: model, architecture, image, engines */
} cuda_probe;

static bool g_cuda_used_here = false; /* set by upload(): CUDA is initialised in this process */

#if defined(SWADIFF_HIP_BUILD)
/* Whether the device's gfx name (gcnArchName up to its first ':', e.g.
 * "gfx90a:sramecc+:xnack-") is one the code objects were built for
 * (SWADIFF_HIP_TARGETS, ","-separated, set by cmake/hip.cmake). */
static bool hip_arch_built(const char *arch)
{
#ifdef SWADIFF_HIP_TARGETS
    size_t n = strcspn(arch, ":");
    const char *list = SWADIFF_HIP_TARGETS;
    while (*list) {
        size_t m = strcspn(list, ",");
        if (m == n && strncmp(list, arch, n) == 0) return true;
        list += m;
        if (*list == ',') list++;
    }
    return false;
#else
    return true;
#endif
}

static void cuda_probe_here(cuda_probe *pr)
{
    memset(pr, 0, sizeof *pr);
    int count = 0;
    hipError_t rc = hipGetDeviceCount(&count);
    if (rc != hipSuccess) {
        snprintf(pr->why, sizeof pr->why, "no ROCm device: hipGetDeviceCount: %s (%s)", hipGetErrorName(rc),
                 hipGetErrorString(rc));
        hipGetLastError();
        return;
    }
    if (count == 0) {
        snprintf(pr->why, sizeof pr->why, "no ROCm device: hipGetDeviceCount reports 0 devices");
        return;
    }
    hipDeviceProp_t prop;
    rc = hipGetDeviceProperties(&prop, 0);
    if (rc != hipSuccess) {
        snprintf(pr->why, sizeof pr->why, "no ROCm device: hipGetDeviceProperties: %s", hipGetErrorString(rc));
        return;
    }
    int rt = 0;
    hipRuntimeGetVersion(&rt);
    pr->sms = prop.multiProcessorCount;
    snprintf(pr->desc, sizeof pr->desc, "%.200s (%.60s), %d CUs, %.0f GiB, HIP runtime %d (ROCm build: portable engine)",
             prop.name, prop.gcnArchName, prop.multiProcessorCount, prop.totalGlobalMem / 1073741824.0, rt);
    if (!hip_arch_built(prop.gcnArchName)) {
#ifdef SWADIFF_HIP_TARGETS
        snprintf(pr->why, sizeof pr->why, "no ROCm device: %.200s is %.60s; the kernels are built for %s", prop.name,
                 prop.gcnArchName, SWADIFF_HIP_TARGETS);
#endif
        return;
    }
    pr->ok = 1;
}
#else
/* A trivial kernel of this file, compiled for the same architectures as
 * every kernel: whether the GPU can run this binary's code, and which code
 * (native SASS, or PTX the driver compiles when the module loads), is what
 * its attributes say. */
__global__ void swa_cuda_image_probe_kernel(int *flag)
{
    if (flag) *flag = 1;
}

#ifndef SWADIFF_CUDA_TARGETS
#define SWADIFF_CUDA_TARGETS "(unknown)"
#endif

/* Describes the current device's code in this binary: "" and *ok = 1 when
 * it can run the kernels, else the reason.  image: "sm_90a", "PTX
 * compute_80, JIT-compiled for sm_90" ...  Needs compute capability 8.0
 * (cp.async, ldmatrix, bf16 mma.sync). */
static void cuda_image_of_current(const cudaDeviceProp *prop, int *ok, char *image, size_t image_n, char *why,
                                  size_t why_n)
{
    *ok = 0;
    image[0] = why[0] = '\0';
    if (prop->major < 8) {
        snprintf(why, why_n,
                 "%.200s is compute capability %d.%d; the kernels need 8.0 or newer (cp.async, ldmatrix, bf16 "
                 "mma.sync)", prop->name, prop->major, prop->minor);
        return;
    }
    cudaFuncAttributes fa;
    cudaError_t rc = cudaFuncGetAttributes(&fa, swa_cuda_image_probe_kernel);
    if (rc != cudaSuccess) {
        cudaGetLastError();
        snprintf(why, why_n,
                 "%.200s (compute capability %d.%d) cannot run this build's kernels (%s: built for CUDA "
                 "architectures %s): rebuild with -DSWADIFF_CUDA_ARCHITECTURES=\"%d%d\" or include PTX (e.g. "
                 "\"80;90a-real\", the default)", prop->name, prop->major, prop->minor, cudaGetErrorName(rc),
                 SWADIFF_CUDA_TARGETS, prop->major, prop->minor);
        return;
    }
    int wgmma = SWA_DEV_SYM(prefill_wgmma_image_here)();
    if (fa.binaryVersion > fa.ptxVersion)
        snprintf(image, image_n, "PTX compute_%d, JIT-compiled for sm_%d", fa.ptxVersion, fa.binaryVersion);
    else
        snprintf(image, image_n, "sm_%d%s", fa.binaryVersion, wgmma ? "a" : "");
    *ok = 1;
}

/* The engines a GPU gets (backends/cuda/prefill.cu chooses per launch):
 * the warp-specialised wgmma prefill where the sm_90a image loaded, for
 * 64- and 128-row plan tiles; mma.sync for everything else. */
static const char *cuda_engines_text(bool wgmma)
{
    return wgmma ? "prefill wgmma-ws (64/128-row tiles; mma.sync for 16-row tiles), decode mma.sync"
                 : "prefill mma.sync, decode mma.sync";
}

static void cuda_probe_here(cuda_probe *pr)
{
    memset(pr, 0, sizeof *pr);
    int count = 0;
    cudaError_t rc = cudaGetDeviceCount(&count);
    if (rc != cudaSuccess) {
        snprintf(pr->why, sizeof pr->why, "no CUDA device: cudaGetDeviceCount: %s (%s)", cudaGetErrorName(rc),
                 cudaGetErrorString(rc));
        cudaGetLastError();
        return;
    }
    if (count == 0) {
        snprintf(pr->why, sizeof pr->why, "no CUDA device: cudaGetDeviceCount reports 0 devices");
        return;
    }
    int drv = 0, rt = 0, current = 0;
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    cudaGetDevice(&current);
    /* every visible GPU in turn (list devices names each one's engines);
     * the run's answer is the first GPU's */
    for (int g = 0; g < count && g < SWA_PROBE_GPUS; g++) {
        cudaDeviceProp prop;
        rc = cudaSetDevice(g);
        if (rc == cudaSuccess) rc = cudaGetDeviceProperties(&prop, g);
        if (rc != cudaSuccess) {
            snprintf(pr->gpu[g], sizeof pr->gpu[g], "GPU %d: cudaGetDeviceProperties: %s", g, cudaGetErrorString(rc));
            if (g == 0)
                snprintf(pr->why, sizeof pr->why, "no CUDA device: cudaGetDeviceProperties: %s",
                         cudaGetErrorString(rc));
            cudaGetLastError();
            pr->num_gpus = g + 1;
            continue;
        }
        int ok = 0;
        char image[96], why[448];
        cuda_image_of_current(&prop, &ok, image, sizeof image, why, sizeof why);
        bool wgmma = ok && SWA_DEV_SYM(prefill_wgmma_image_here)();
        if (ok)
            snprintf(pr->gpu[g], sizeof pr->gpu[g], "GPU %d: %.80s, cc %d.%d, %s image: %s", g, prop.name, prop.major,
                     prop.minor, image, cuda_engines_text(wgmma));
        else
            snprintf(pr->gpu[g], sizeof pr->gpu[g], "GPU %d: %.80s, cc %d.%d: not usable: %.200s", g, prop.name,
                     prop.major, prop.minor, why);
        pr->num_gpus = g + 1;
        if (g > 0)
            continue;
        pr->sms = prop.multiProcessorCount;
        snprintf(pr->desc, sizeof pr->desc,
                 "%.160s, %d SMs, cc %d.%d, %.0f GiB, L2 %d MiB, driver %d.%d, runtime %d.%d%s%s%s%s",
                 prop.name, prop.multiProcessorCount, prop.major, prop.minor, prop.totalGlobalMem / 1073741824.0,
                 prop.l2CacheSize >> 20, drv / 1000, (drv % 1000) / 10, rt / 1000, (rt % 1000) / 10,
                 ok ? ", " : "", ok ? image : "", ok ? " image: " : "", ok ? cuda_engines_text(wgmma) : "");
        if (!ok) {
            snprintf(pr->why, sizeof pr->why, "no CUDA device: %s", why);
            continue;
        }
        pr->ok = 1;
    }
    cudaSetDevice(current);
}
#endif

static const cuda_probe *cuda_probe_get(void)
{
    static cuda_probe cached;
    static bool have = false, have_here = false;
    if (g_cuda_used_here && !have_here) { /* the answer of this process's own CUDA context */
        cuda_probe_here(&cached);
        have = have_here = true;
    }
    if (have) return &cached;
    int fds[2];
    pid_t pid = -1;
    if (pipe(fds) == 0) {
        fflush(NULL);
        pid = fork();
        if (pid == 0) {
            close(fds[0]);
            cuda_probe pr;
            cuda_probe_here(&pr);
            ssize_t w = write(fds[1], &pr, sizeof pr);
            _exit(w == (ssize_t)sizeof pr ? 0 : 1);
        }
        close(fds[1]);
        if (pid > 0) {
            size_t got = 0;
            while (got < sizeof cached) {
                ssize_t r = read(fds[0], (char *)&cached + got, sizeof cached - got);
                if (r <= 0) break;
                got += (size_t)r;
            }
            int status = 0;
            waitpid(pid, &status, 0);
            if (got != sizeof cached) {
                memset(&cached, 0, sizeof cached);
                snprintf(cached.why, sizeof cached.why,
                         "no " SWA_VENDOR_GPU " device: the device probe process died (status %d)", status);
            }
        }
        close(fds[0]);
    }
    if (pid < 0) cuda_probe_here(&cached); /* no fork: ask here (CUDA then lives in this process) */
    have = true;
    return &cached;
}

static bool cuda_available(char *why, size_t n)
{
    const cuda_probe *pr = cuda_probe_get();
    if (n) snprintf(why, n, "%s", pr->ok ? "" : pr->why);
    return pr->ok != 0;
}

static void cuda_describe(char *buf, size_t n)
{
    const cuda_probe *pr = cuda_probe_get();
    snprintf(buf, n, "%s", pr->desc[0] ? pr->desc : SWA_VENDOR_GPU ": no device");
}

static int cuda_num_sms(void) { return cuda_probe_get()->sms; }

static void cuda_describe_each(char *buf, size_t n)
{
    const cuda_probe *pr = cuda_probe_get();
    size_t k = 0;
    buf[0] = '\0';
    for (int g = 0; g < pr->num_gpus && k < n; g++)
        k += (size_t)snprintf(buf + k, n - k, "%s%s", g ? "\n" : "", pr->gpu[g]);
}

/* Free and total memory of the current device (asked in-process: the worker
 * that uploads is the one that asks). */
static bool cuda_memory(size_t *free_bytes, size_t *total_bytes)
{
    size_t f = 0, t = 0;
    if (cudaMemGetInfo(&f, &t) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    *free_bytes = f;
    *total_bytes = t;
    return true;
}

// ----------------------------------------------------------------------------
// inputs

// Ordering rule: every copy and every launch of a case goes to the case's
// own stream (d->stream, non-blocking), never to the legacy default stream.
// A non-blocking stream does not wait for the legacy stream, and a plain
// cudaMemcpy from pageable memory returns once the bytes are staged, before
// the DMA lands: a kernel or graph launched on d->stream right after could
// read the old contents.  That is what the CUDA-graph replay once did with
// the replay batch's plan arrays (tests/gpu_test_kernels.c
// graph_replay_ordering).  Host staging buffers are freed only after a
// stream synchronisation, whatever the vendor's pageable-copy semantics.

static swa_status upload_bytes(cudaStream_t stream, void **dst, const void *src, size_t bytes, swa_error *err)
{
    *dst = NULL;
    if (bytes == 0 || !src) return SWA_OK;
    SWA_CUDA_TRY(cudaMalloc(dst, bytes));
    SWA_CUDA_TRY(cudaMemcpyAsync(*dst, src, bytes, cudaMemcpyHostToDevice, stream));
    return SWA_OK;
}

static void cuda_release(void *dev_inputs)
{
    swa_cuda_inputs *d = (swa_cuda_inputs *)dev_inputs;
    if (!d) return;
    if (d->stream) cudaStreamSynchronize(d->stream);
    void *ptrs[] = {d->q, d->k_pages, d->v_pages, d->k_ragged, d->v_ragged, d->page_indptr, d->page_indices,
                    d->qo_indptr, d->kv_seq_indptr, d->last_page_len, d->block_tables, d->context_lens};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++)
        if (ptrs[i]) cudaFree(ptrs[i]);
    swa_dev_buf *bufs[] = {&d->ints,       &d->partial_o, &d->partial_l, &d->out_region,
                           &d->lse_region, &d->scratch,   &d->ext_sums};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) swa_dev_buf_free(bufs[i]);
    if (d->stream) cudaStreamDestroy(d->stream);
    cudaGetLastError(); /* release never fails; a sticky error was reported by the run */
    free(d);
}

static swa_status cuda_upload_inner(const swa_inputs *in, swa_cuda_inputs *d, swa_error *err)
{
    size_t es = swa_dtype_size(in->dtype);
    d->dtype = in->dtype;
    d->num_requests = in->num_requests;
    d->total_qo = in->total_qo;
    d->total_kv = in->total_kv;
    d->num_qo_heads = in->num_qo_heads;
    d->num_kv_heads = in->num_kv_heads;
    d->head_dim = in->head_dim;
    const swa_paged_kv *pk = &in->paged;
    d->layout = pk->layout;
    d->page_size = pk->page_size;
    d->num_pages = pk->num_pages;
    SWA_CUDA_TRY(cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking));
    size_t row = (size_t)in->head_dim * es;
    swa_status st;
    if ((st = upload_bytes(d->stream, &d->q, in->q_raw, (size_t)in->total_qo * in->num_qo_heads * row, err))) return st;
    size_t pool = (size_t)pk->num_pages * pk->page_size * pk->num_kv_heads * row;
    if ((st = upload_bytes(d->stream, &d->k_pages, pk->k_pages, pool, err))) return st;
    if ((st = upload_bytes(d->stream, &d->v_pages, pk->v_pages, pool, err))) return st;
    size_t ragged = (size_t)in->total_kv * in->num_kv_heads * row;
    if ((st = upload_bytes(d->stream, &d->k_ragged, in->k_raw, ragged, err))) return st;
    if ((st = upload_bytes(d->stream, &d->v_ragged, in->v_raw, ragged, err))) return st;
    if (pk->indptr) {
        if ((st = upload_bytes(d->stream, (void **)&d->page_indptr, pk->indptr, (size_t)(pk->num_requests + 1) * sizeof(int), err)))
            return st;
        if ((st = upload_bytes(d->stream, (void **)&d->page_indices, pk->indices, (size_t)pk->indptr[pk->num_requests] * sizeof(int),
                               err)))
            return st;
    }
    /* the inputs are complete on the device before any plan runs; a failed
     * copy is reported by the upload, not by the first kernel */
    SWA_CUDA_TRY(cudaStreamSynchronize(d->stream));
    return SWA_OK;
}

static swa_status cuda_upload(const swa_inputs *in, void **dev_inputs, swa_error *err)
{
    *dev_inputs = NULL;
    g_cuda_used_here = true;
    swa_cuda_inputs *d = (swa_cuda_inputs *)calloc(1, sizeof *d);
    if (!d) return swa_error_set(err, SWA_ERR_NOMEM, "cuda upload: out of host memory");
    swa_status st = cuda_upload_inner(in, d, err);
    if (st != SWA_OK) {
        cuda_release(d);
        return st;
    }
    *dev_inputs = d;
    return SWA_OK;
}

// ----------------------------------------------------------------------------
// guarded outputs

typedef struct out_dev {
    void *out;
    float *lse;
} out_dev;

static swa_status outputs_to_device(swa_cuda_inputs *d, const swa_out_args *o, bool want_lse, out_dev *od,
                                    swa_error *err)
{
    size_t g = o->guard_bytes;
    swa_status st;
    if ((st = swa_dev_buf_reserve(&d->out_region, o->out_bytes + 2 * g, err))) return st;
    SWA_CUDA_TRY(cudaMemcpyAsync(d->out_region.ptr, (const uint8_t *)o->out - g, o->out_bytes + 2 * g,
                                 cudaMemcpyHostToDevice, d->stream));
    od->out = (uint8_t *)d->out_region.ptr + g;
    od->lse = NULL;
    if (want_lse && o->lse) {
        if ((st = swa_dev_buf_reserve(&d->lse_region, o->lse_bytes + 2 * g, err))) return st;
        SWA_CUDA_TRY(cudaMemcpyAsync(d->lse_region.ptr, (const uint8_t *)o->lse - g, o->lse_bytes + 2 * g,
                                     cudaMemcpyHostToDevice, d->stream));
        od->lse = (float *)((uint8_t *)d->lse_region.ptr + g);
    }
    return SWA_OK;
}

static swa_status outputs_to_host(swa_cuda_inputs *d, const swa_out_args *o, const out_dev *od, swa_error *err)
{
    size_t g = o->guard_bytes;
    SWA_CUDA_TRY(cudaStreamSynchronize(d->stream)); /* kernel faults surface here */
    SWA_CUDA_TRY(cudaMemcpyAsync((uint8_t *)o->out - g, d->out_region.ptr, o->out_bytes + 2 * g,
                                 cudaMemcpyDeviceToHost, d->stream));
    if (od->lse)
        SWA_CUDA_TRY(cudaMemcpyAsync((uint8_t *)o->lse - g, d->lse_region.ptr, o->lse_bytes + 2 * g,
                                     cudaMemcpyDeviceToHost, d->stream));
    SWA_CUDA_TRY(cudaStreamSynchronize(d->stream));
    return SWA_OK;
}

static swa_status check_common(const swa_cuda_inputs *d, swa_dtype dtype, int hq, int hkv, int head_dim,
                               const char *what, swa_error *err)
{
    if (dtype != d->dtype || hq != d->num_qo_heads || hkv != d->num_kv_heads || head_dim != d->head_dim)
        return swa_error_set(err, SWA_ERR_INVALID,
                             "cuda %s: plan (%s, %d/%d heads, head_dim %d) does not match the uploaded inputs "
                             "(%s, %d/%d heads, head_dim %d)",
                             what, swa_dtype_name(dtype), hq, hkv, head_dim, swa_dtype_name(d->dtype),
                             d->num_qo_heads, d->num_kv_heads, d->head_dim);
    const char *why = swa_cuda_shape_unsupported(dtype, head_dim, hkv > 0 ? hq / hkv : 0);
    if (why) return swa_error_set(err, SWA_ERR_UNSUPPORTED, "cuda %s: %s", what, why);
    return SWA_OK;
}

static swa_status upload_ints(swa_cuda_inputs *d, swa_int_pack *pk, swa_error *err)
{
    swa_status st = swa_dev_buf_reserve(&d->ints, pk->count * sizeof(int), err);
    if (st) return st;
    SWA_CUDA_TRY(cudaMemcpyAsync(d->ints.ptr, pk->host, pk->count * sizeof(int), cudaMemcpyHostToDevice, d->stream));
    /* the staging vector is reused right after: wait for the copy */
    SWA_CUDA_TRY(cudaStreamSynchronize(d->stream));
    return SWA_OK;
}

#define PACK(dst, src, n)                                                                         \
    do {                                                                                          \
        long at_ = swa_int_pack_add(&pk, (src), (size_t)(n));                                     \
        if (at_ < 0) { swa_int_pack_free(&pk); return swa_error_set(err, SWA_ERR_NOMEM, "cuda: out of host memory"); } \
        dst = at_;                                                                                \
    } while (0)

// ----------------------------------------------------------------------------
// prefill

swa_status swa_cuda_prefill_prepare(swa_cuda_inputs *d, const swa_prefill_plan *p, swa_cuda_prefill_params *prm,
                                    swa_error *err)
{
    int B = p->num_requests;
    bool ragged = p->kv_mode == SWA_KV_RAGGED;
    swa_int_pack pk = {0};
    long o_wr, o_wt, o_wc, o_qi, o_ki, o_ql, o_kl, o_nc, o_po;
    PACK(o_wr, p->work_request, p->num_work);
    PACK(o_wt, p->work_qo_tile, p->num_work);
    PACK(o_wc, p->work_kv_chunk, p->num_work);
    PACK(o_qi, p->qo_indptr, B + 1);
    PACK(o_ki, p->kv_indptr, B + 1);
    PACK(o_ql, p->qo_len, B);
    PACK(o_kl, p->kv_len, B);
    PACK(o_nc, p->req_num_chunks, B);
    PACK(o_po, p->req_partial_offset, B);
    swa_status st = upload_ints(d, &pk, err);
    swa_int_pack_free(&pk);
    if (st) return st;
    const int *ib = (const int *)d->ints.ptr;

    memset(prm, 0, sizeof *prm);
    prm->q = d->q;
    prm->k = ragged ? d->k_ragged : d->k_pages;
    prm->v = ragged ? d->v_ragged : d->v_pages;
    prm->work_request = ib + o_wr;
    prm->work_qo_tile = ib + o_wt;
    prm->work_kv_chunk = ib + o_wc;
    prm->qo_indptr = ib + o_qi;
    prm->kv_indptr = ib + o_ki;
    prm->qo_len = ib + o_ql;
    prm->kv_len = ib + o_kl;
    prm->req_num_chunks = ib + o_nc;
    prm->req_partial_offset = ib + o_po;
    prm->page_indptr = d->page_indptr;
    prm->page_indices = d->page_indices;
    prm->num_requests = B;
    prm->total_qo = p->qo_indptr[B];
    prm->num_pages = d->num_pages;
    prm->total_kv = d->total_kv;
    prm->num_qo_heads = p->num_qo_heads;
    prm->num_kv_heads = p->num_kv_heads;
    prm->group_size = p->group_size;
    prm->page_size = p->page_size;
    prm->cta_tile_q = p->cta_tile_q;
    prm->cta_tile_kv = p->cta_tile_kv;
    prm->kv_chunk_size = p->kv_chunk_size;
    prm->window_left = p->window_left;
    prm->run_window_left = p->run_window_left;
    prm->window_right = p->window_right;
    prm->chunk_size = p->chunk_size;
    prm->mutant = p->mutant;
    prm->causal = p->causal;
    prm->mask_window = p->mask_window;
    prm->split_kv = p->split_kv;
    prm->ragged = ragged;
    prm->nhd = p->layout == SWA_LAYOUT_NHD;
    prm->sm_scale = p->sm_scale;
    prm->soft_cap = p->soft_cap;
    if (p->split_kv) {
        size_t rows = (size_t)p->total_partial_rows * p->num_qo_heads;
        if ((st = swa_dev_buf_reserve(&d->partial_o, rows * p->head_dim * sizeof(float), err))) return st;
        if ((st = swa_dev_buf_reserve(&d->partial_l, rows * sizeof(float), err))) return st;
        prm->o_part = (float *)d->partial_o.ptr;
        prm->lse_part = (float *)d->partial_l.ptr;
    }
    return SWA_OK;
}

static swa_status cuda_prefill(const swa_prefill_plan *p, void *dev_inputs, const swa_out_args *o, bool write_lse,
                               swa_error *err)
{
    swa_cuda_inputs *d = (swa_cuda_inputs *)dev_inputs;
    swa_status st = check_common(d, p->dtype, p->num_qo_heads, p->num_kv_heads, p->head_dim, "prefill", err);
    if (st) return st;
    bool ragged = p->kv_mode == SWA_KV_RAGGED;
    if (ragged ? !d->k_ragged && d->total_kv > 0 : !d->k_pages && d->num_pages > 0)
        return swa_error_set(err, SWA_ERR_INVALID, "cuda prefill: inputs have no %s K/V", ragged ? "ragged" : "paged");
    if (!ragged && (p->page_size != d->page_size || p->layout != d->layout))
        return swa_error_set(err, SWA_ERR_INVALID, "cuda prefill: plan page_size %d / %s differs from the cache (%d / %s)",
                             p->page_size, swa_layout_name(p->layout), d->page_size, swa_layout_name(d->layout));
    swa_cuda_prefill_params prm;
    if ((st = swa_cuda_prefill_prepare(d, p, &prm, err))) return st;
    out_dev od;
    if ((st = outputs_to_device(d, o, write_lse, &od, err))) return st;
    prm.out = od.out;
    prm.lse = od.lse;
    if ((st = swa_cuda_prefill_launch(&prm, p->dtype, p->head_dim, p->num_work, od.lse != NULL, d->stream, err)))
        return st;
    return outputs_to_host(d, o, &od, err);
}

// ----------------------------------------------------------------------------
// decode_fa2 (plain and CUDA graph)

/* Packs a plan's arrays at fixed capacities (graph mode: the captured
 * plan's, so capture and replay see the same layout). */
static swa_status fa2_pack(const swa_decode_fa2_plan *p, int cap_work, int cap_req, int cap_pages, swa_int_pack *out,
                           long of[8], swa_error *err)
{
    swa_int_pack pk = {0};
    int B = p->num_requests, entries = p->kv_indptr[B];
    if (p->num_work > cap_work || B > cap_req || entries > cap_pages)
        return swa_error_set(err, SWA_ERR_INVALID,
                             "cuda decode_fa2: batch (%d work items, %d requests, %d pages) exceeds the buffers "
                             "sized at plan time (%d, %d, %d)",
                             p->num_work, B, entries, cap_work, cap_req, cap_pages);
    const int *src[7] = {p->work_request, p->work_chunk, p->req_num_chunks, p->req_partial_offset, p->kv_indptr,
                         p->kv_indices, p->kv_last_page_len};
    /* kv_indices: +1, the plans keep one spare entry past the table (FOREIGN_PAGE_READ) */
    size_t used[7] = {(size_t)p->num_work, (size_t)p->num_work, (size_t)B, (size_t)B, (size_t)B + 1,
                      (size_t)entries + 1, (size_t)B};
    size_t cap[7] = {(size_t)cap_work, (size_t)cap_work, (size_t)cap_req, (size_t)cap_req, (size_t)cap_req + 1,
                     (size_t)cap_pages + 1, (size_t)cap_req};
    for (int i = 0; i < 7; i++) {
        PACK(of[i], NULL, cap[i]);
        memcpy(pk.host + of[i], src[i], used[i] * sizeof(int));
    }
    int scalars[2] = {p->num_work, B};
    PACK(of[7], scalars, 2);
    *out = pk;
    return SWA_OK;
}

swa_status swa_cuda_fa2_prepare(swa_cuda_inputs *d, const swa_decode_fa2_plan *p, int cap_work, int cap_req,
                                int cap_pages, int cap_partial_rows, swa_cuda_fa2_params *prm, swa_error *err)
{
    swa_int_pack pk;
    long of[8];
    swa_status st = fa2_pack(p, cap_work, cap_req, cap_pages, &pk, of, err);
    if (st) return st;
    st = upload_ints(d, &pk, err);
    swa_int_pack_free(&pk);
    if (st) return st;
    const int *ib = (const int *)d->ints.ptr;
    memset(prm, 0, sizeof *prm);
    prm->q = d->q;
    prm->k = d->k_pages;
    prm->v = d->v_pages;
    prm->work_request = ib + of[0];
    prm->work_chunk = ib + of[1];
    prm->req_num_chunks = ib + of[2];
    prm->req_partial_offset = ib + of[3];
    prm->kv_indptr = ib + of[4];
    prm->kv_indices = ib + of[5];
    prm->kv_last_page_len = ib + of[6];
    prm->scalars = ib + of[7];
    prm->num_qo_heads = p->num_qo_heads;
    prm->num_kv_heads = p->num_kv_heads;
    prm->group_size = p->group_size;
    prm->page_size = p->page_size;
    prm->num_pages = d->num_pages;
    prm->kv_chunk_size = p->kv_chunk_size;
    prm->window_left = p->window_left;
    prm->chunk_size = p->chunk_size;
    prm->mutant = p->mutant;
    prm->split_kv = p->split_kv;
    prm->nhd = p->layout == SWA_LAYOUT_NHD;
    prm->sm_scale = p->sm_scale;
    prm->soft_cap = p->soft_cap;
    if (p->split_kv) {
        size_t rows = (size_t)cap_partial_rows * p->num_qo_heads;
        if ((st = swa_dev_buf_reserve(&d->partial_o, rows * p->head_dim * sizeof(float), err))) return st;
        if ((st = swa_dev_buf_reserve(&d->partial_l, rows * sizeof(float), err))) return st;
        prm->o_part = (float *)d->partial_o.ptr;
        prm->lse_part = (float *)d->partial_l.ptr;
    }
    return SWA_OK;
}

/* Mutant OOB_WRITE: where the kernel's stray element lands (just past out,
 * inside the guard; nothing when there is no guard to absorb it). */
static void fa2_oob_target(const swa_decode_fa2_plan *p, const swa_out_args *o, const out_dev *od,
                           swa_cuda_fa2_params *prm)
{
    size_t es = swa_dtype_size(p->dtype);
    if (p->mutant != SWA_MUTANT_OOB_WRITE || o->guard_bytes < es) return;
    prm->oob_at = (unsigned char *)od->out + o->out_bytes;
    prm->oob_bytes = (int)es;
    prm->oob_value = (unsigned char)~o->guard_pattern;
}

static swa_status fa2_check(const swa_cuda_inputs *d, const swa_decode_fa2_plan *p, swa_error *err)
{
    swa_status st = check_common(d, p->dtype, p->num_qo_heads, p->num_kv_heads, p->head_dim, "decode_fa2", err);
    if (st) return st;
    if (p->page_size != d->page_size || p->layout != d->layout)
        return swa_error_set(err, SWA_ERR_INVALID, "cuda decode_fa2: plan page_size %d / %s differs from the cache (%d / %s)",
                             p->page_size, swa_layout_name(p->layout), d->page_size, swa_layout_name(d->layout));
    return SWA_OK;
}

static swa_status cuda_decode_fa2(const swa_decode_fa2_plan *p, void *dev_inputs, const swa_out_args *o,
                                  bool write_lse, swa_error *err)
{
    swa_cuda_inputs *d = (swa_cuda_inputs *)dev_inputs;
    swa_status st = fa2_check(d, p, err);
    if (st) return st;
    swa_cuda_fa2_params prm;
    if ((st = swa_cuda_fa2_prepare(d, p, p->num_work, p->num_requests, p->kv_indptr[p->num_requests],
                                   p->total_partial_rows, &prm, err)))
        return st;
    out_dev od;
    if ((st = outputs_to_device(d, o, write_lse, &od, err))) return st;
    prm.out = od.out;
    prm.lse = od.lse;
    fa2_oob_target(p, o, &od, &prm);
    if ((st = swa_cuda_fa2_launch(&prm, p->dtype, p->head_dim, p->grid_work, p->num_requests, od.lse != NULL,
                                  d->stream, err)))
        return st;
    return outputs_to_host(d, o, &od, err);
}

static swa_status graph_run(swa_cuda_inputs *d, swa_decode_fa2_plan *captured, const swa_decode_fa2_plan *full,
                            const swa_out_args *o, bool write_lse, cudaGraph_t *graph, cudaGraphExec_t *exec,
                            swa_error *err)
{
    int cap_work = captured->capacity_work, cap_req = captured->capacity_requests;
    int cap_pages = captured->capacity_pages, cap_partial = captured->capacity_partial_rows;
    if (full->split_kv != captured->split_kv || full->kv_chunk_size != captured->kv_chunk_size)
        return swa_error_set(err, SWA_ERR_INVALID, "cuda decode_fa2 graph: the replay plan changes split_kv/kv_chunk_size "
                                                   "(launch scalars baked into the graph)");
    if (full->total_partial_rows > cap_partial)
        return swa_error_set(err, SWA_ERR_INVALID, "cuda decode_fa2 graph: replay needs %d partial rows, the graph "
                                                   "buffers hold %d", full->total_partial_rows, cap_partial);
    /* capture with the captured batch in buffers sized for the worst case */
    swa_cuda_fa2_params prm;
    swa_status st = swa_cuda_fa2_prepare(d, captured, cap_work, cap_req, cap_pages, cap_partial, &prm, err);
    if (st) return st;
    out_dev od;
    if ((st = outputs_to_device(d, o, write_lse, &od, err))) return st;
    SWA_CUDA_TRY(cudaStreamSynchronize(d->stream));
    prm.out = od.out;
    prm.lse = od.lse;
    fa2_oob_target(captured, o, &od, &prm);

    SWA_CUDA_TRY(cudaStreamBeginCapture(d->stream, cudaStreamCaptureModeRelaxed));
    st = swa_cuda_fa2_launch(&prm, captured->dtype, captured->head_dim, captured->grid_work, cap_req,
                             od.lse != NULL, d->stream, err);
    cudaError_t end_rc = cudaStreamEndCapture(d->stream, graph);
    if (st) return st;
    if (end_rc != cudaSuccess) return swa_cuda_fail(err, end_rc, "cudaStreamEndCapture(stream, &graph)", __FILE__, __LINE__);
    SWA_CUDA_TRY(cudaGraphInstantiate(exec, *graph, 0));

    /* the full batch overwrites the same buffers in place; the graph reads
     * num_work / num_requests from device memory */
    swa_int_pack pk;
    long of[8];
    if ((st = fa2_pack(full, cap_work, cap_req, cap_pages, &pk, of, err))) return st;
    /* on the graph's stream, so the replay reads this batch's arrays (see
     * the ordering rule above upload_bytes); pk lives until the sync */
    cudaError_t rc = cudaMemcpyAsync(d->ints.ptr, pk.host, pk.count * sizeof(int), cudaMemcpyHostToDevice, d->stream);
    if (rc == cudaSuccess) rc = cudaGraphLaunch(*exec, d->stream);
    if (rc == cudaSuccess) rc = cudaStreamSynchronize(d->stream);
    swa_int_pack_free(&pk);
    if (rc != cudaSuccess)
        return swa_cuda_fail(err, rc, "plan arrays of the full batch, then cudaGraphLaunch(exec, stream)", __FILE__,
                             __LINE__);
    return outputs_to_host(d, o, &od, err);
}

static swa_status cuda_decode_fa2_graph(swa_decode_fa2_plan *captured, const swa_decode_fa2_plan *full,
                                        void *dev_inputs, const swa_out_args *o, bool write_lse, swa_error *err)
{
    swa_cuda_inputs *d = (swa_cuda_inputs *)dev_inputs;
    swa_status st = fa2_check(d, captured, err);
    if (st) return st;
    if ((st = fa2_check(d, full, err))) return st;
    if (!captured->graph)
        return swa_error_set(err, SWA_ERR_INVALID, "cuda decode_fa2 graph: the captured plan was not built in CUDA-graph mode");
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    st = graph_run(d, captured, full, o, write_lse, &graph, &exec, err);
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    return st;
}

// ----------------------------------------------------------------------------
// decode_aiter

swa_status swa_cuda_aiter_prepare(swa_cuda_inputs *d, const swa_decode_aiter_plan *p, swa_cuda_aiter_params *prm,
                                  swa_error *err)
{
    swa_int_pack pk = {0};
    long o_bt, o_cl;
    PACK(o_bt, p->block_tables, (size_t)p->num_seqs * p->max_blocks_per_seq);
    PACK(o_cl, p->context_lens, p->num_seqs);
    swa_status st = upload_ints(d, &pk, err);
    swa_int_pack_free(&pk);
    if (st) return st;
    const int *ib = (const int *)d->ints.ptr;
    size_t slots = (size_t)p->num_seqs * p->num_qo_heads * (p->max_num_partitions > 0 ? p->max_num_partitions : 1);
    if ((st = swa_dev_buf_reserve(&d->partial_o, slots * p->head_dim * sizeof(float), err))) return st;
    if ((st = swa_dev_buf_reserve(&d->partial_l, 2 * slots * sizeof(float), err))) return st;
    memset(prm, 0, sizeof *prm);
    prm->q = d->q;
    prm->k = d->k_pages;
    prm->v = d->v_pages;
    prm->tmp_out = (float *)d->partial_o.ptr;
    prm->max_logits = (float *)d->partial_l.ptr;
    prm->exp_sums = prm->max_logits + slots;
    prm->block_tables = ib + o_bt;
    prm->context_lens = ib + o_cl;
    prm->num_seqs = p->num_seqs;
    prm->num_qo_heads = p->num_qo_heads;
    prm->num_kv_heads = p->num_kv_heads;
    prm->group_size = p->group_size;
    prm->block_size = p->block_size;
    prm->num_pages = d->num_pages;
    prm->max_blocks_per_seq = p->max_blocks_per_seq;
    prm->partition_size = p->partition_size;
    prm->max_num_partitions = p->max_num_partitions;
    prm->sliding_window = p->sliding_window;
    prm->mutant = p->mutant;
    prm->nhd = p->layout == SWA_LAYOUT_NHD;
    prm->scale = p->scale;
    prm->soft_cap = p->soft_cap;
    return SWA_OK;
}

static swa_status cuda_decode_aiter(const swa_decode_aiter_plan *p, void *dev_inputs, const swa_out_args *o,
                                    swa_error *err)
{
    swa_cuda_inputs *d = (swa_cuda_inputs *)dev_inputs;
    swa_status st = check_common(d, p->dtype, p->num_qo_heads, p->num_kv_heads, p->head_dim, "decode_aiter", err);
    if (st) return st;
    if (p->block_size != d->page_size || p->layout != d->layout)
        return swa_error_set(err, SWA_ERR_INVALID, "cuda decode_aiter: plan block_size %d / %s differs from the cache (%d / %s)",
                             p->block_size, swa_layout_name(p->layout), d->page_size, swa_layout_name(d->layout));
    swa_cuda_aiter_params prm;
    if ((st = swa_cuda_aiter_prepare(d, p, &prm, err))) return st;
    out_dev od;
    if ((st = outputs_to_device(d, o, false, &od, err))) return st;
    prm.out = od.out;
    if ((st = swa_cuda_aiter_launch(&prm, p->dtype, p->head_dim, d->stream, err))) return st;
    return outputs_to_host(d, o, &od, err);
}

// ----------------------------------------------------------------------------
// external backends in device memory (plug-ins that declare CUDA / HIP
// memory, include/swadiff/plugin.h)
//
// A plug-in's kernel runs in swadiff's own context, on the case's stream,
// over the case's own device copy.  What it may break is checked after each
// call, in the order that keeps the checks themselves safe:
//   1. work left on the legacy or per-thread default stream (queried at
//      once: a later synchronisation would hide it);
//   2. the case's stream synchronised: a fault is SWA_ERR_DEVICE, and the
//      worker restarts (the context is gone);
//   3. every harness buffer still allocated (a freed one is allocated and
//      uploaded again: its old address must not be read);
//   4. the outputs copied back, the whole device synchronised, the outputs
//      copied again: a difference is work the given stream did not cover;
//   5. each input's checksum against the one taken at the first external
//      run of the case: a changed input is copied again from the host.
// Every finding is the call's error; the inputs are as uploaded afterwards,
// so the next backends and cases see what they would have seen.

typedef struct ext_input {
    const char *name; /* as include/swadiff/plugin.h names it */
    void **dev;
    const void *host;
    size_t bytes;
} ext_input;

/* The case's device inputs an external backend reads, in the ABI's names;
 * sizes as cuda_upload_inner uploads them (0: nothing on the device). */
static int ext_inputs(swa_cuda_inputs *d, const swa_inputs *in, ext_input *e)
{
    size_t row = (size_t)in->head_dim * swa_dtype_size(in->dtype), I = sizeof(int);
    const swa_paged_kv *pk = &in->paged;
    size_t pool = (size_t)pk->num_pages * pk->page_size * pk->num_kv_heads * row;
    size_t ragged = (size_t)in->total_kv * in->num_kv_heads * row;
    size_t B = (size_t)in->num_requests;
    const ext_input all[SWA_CUDA_EXT_INPUTS] = {
        {"q", &d->q, in->q_raw, (size_t)in->total_qo * in->num_qo_heads * row},
        {"k_cache", &d->k_pages, pk->k_pages, pool},
        {"v_cache", &d->v_pages, pk->v_pages, pool},
        {"k", &d->k_ragged, in->k_raw, ragged},
        {"v", &d->v_ragged, in->v_raw, ragged},
        {"kv_indptr", (void **)&d->page_indptr, pk->indptr, pk->indptr ? (B + 1) * I : 0},
        {"kv_indices", (void **)&d->page_indices, pk->indices, pk->indptr ? (size_t)pk->indptr[B] * I : 0},
        {"qo_indptr", (void **)&d->qo_indptr, in->qo_indptr, in->qo_indptr ? (B + 1) * I : 0},
        {"kv_seq_indptr", (void **)&d->kv_seq_indptr, in->kv_indptr, in->kv_indptr ? (B + 1) * I : 0},
        {"kv_last_page_len", (void **)&d->last_page_len, pk->last_page_len, pk->last_page_len ? B * I : 0},
        {"block_tables", (void **)&d->block_tables, pk->block_tables,
         pk->block_tables ? B * (size_t)pk->max_blocks_per_seq * I : 0},
        {"context_lens", (void **)&d->context_lens, pk->context_lens, pk->context_lens ? B * I : 0},
    };
    int n = 0;
    for (int i = 0; i < SWA_CUDA_EXT_INPUTS; i++)
        e[n++] = all[i].host ? all[i] : ext_input{all[i].name, all[i].dev, NULL, 0};
    return n;
}

/* splitmix64's finaliser: every input bit reaches every output bit */
__device__ __forceinline__ unsigned long long ext_mix(unsigned long long x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Sum of mix(word + position): position-dependent, so moved bytes count. */
__global__ void ext_checksum_kernel(const unsigned char *p, size_t bytes, unsigned long long *sum)
{
    const unsigned long long *w = (const unsigned long long *)p; /* cudaMalloc: 256-byte aligned */
    size_t words = bytes / 8, stride = (size_t)gridDim.x * blockDim.x;
    unsigned long long acc = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < words; i += stride)
        acc += ext_mix(w[i] + i * 0x9e3779b97f4a7c15ull);
    if (blockIdx.x == 0 && threadIdx.x == 0)
        for (size_t b = words * 8; b < bytes; b++) acc += ext_mix(p[b] + (b << 40));
    atomicAdd(sum, acc);
}

static swa_status ext_checksums(swa_cuda_inputs *d, const ext_input *e, int n, const bool *skip,
                                unsigned long long *sums, swa_error *err)
{
    swa_status st = swa_dev_buf_reserve(&d->ext_sums, SWA_CUDA_EXT_INPUTS * sizeof(unsigned long long), err);
    if (st) return st;
    unsigned long long *dev = (unsigned long long *)d->ext_sums.ptr;
    SWA_CUDA_TRY(cudaMemsetAsync(dev, 0, SWA_CUDA_EXT_INPUTS * sizeof(unsigned long long), d->stream));
    for (int i = 0; i < n; i++) {
        if (!*e[i].dev || !e[i].bytes || (skip && skip[i])) continue;
        size_t blocks = (e[i].bytes / 8 + 255) / 256;
        ext_checksum_kernel<<<(unsigned)(blocks < 1 ? 1 : blocks > 1024 ? 1024 : blocks), 256, 0, d->stream>>>(
            (const unsigned char *)*e[i].dev, e[i].bytes, dev + i);
        SWA_CUDA_TRY_LAUNCH("ext_checksum_kernel");
    }
    SWA_CUDA_TRY(cudaMemcpyAsync(sums, dev, SWA_CUDA_EXT_INPUTS * sizeof(unsigned long long), cudaMemcpyDeviceToHost,
                                 d->stream));
    SWA_CUDA_TRY(cudaStreamSynchronize(d->stream));
    return SWA_OK;
}

/* Whether p is still the start of a device allocation of this process
 * (a buffer the plug-in freed is not). */
static bool ext_alive(const void *p)
{
    cudaPointerAttributes a;
    memset(&a, 0, sizeof a);
    cudaError_t rc = cudaPointerGetAttributes(&a, p);
    cudaGetLastError(); /* an unknown pointer is an answer, not an error */
#if defined(SWADIFF_HIP_BUILD)
    return rc == cudaSuccess && a.devicePointer != NULL;
#else
    return rc == cudaSuccess && a.type == cudaMemoryTypeDevice;
#endif
}

/* Appends "; " and a formatted finding to buf. */
static void ext_note(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void ext_note(char *buf, size_t n, const char *fmt, ...)
{
    size_t used = strlen(buf);
    if (used + 3 >= n) return;
    if (used) {
        memcpy(buf + used, "; ", 3);
        used += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, n - used, fmt, ap);
    va_end(ap);
}

/* Prefixes a device error raised after the call with who. */
static swa_status ext_after(swa_status st, const char *who, swa_error *err)
{
    char msg[sizeof err->message];
    snprintf(msg, sizeof msg, "%s", err->message);
    return swa_error_set(err, st, "%s: after run() returned: %s", who, msg);
}

static swa_status cuda_external_run(void *dev_inputs, const swa_inputs *in, const swa_out_args *o, bool want_lse,
                                    const char *who, swa_device_call_fn call, void *call_ctx, swa_error *err)
{
    swa_cuda_inputs *d = (swa_cuda_inputs *)dev_inputs;
    ext_input e[SWA_CUDA_EXT_INPUTS];
    int n = ext_inputs(d, in, e);
    swa_status st;
    if (!d->ext_ready) { /* once per case: the arrays cuda_upload leaves out, then the reference checksums */
        for (int i = 0; i < n; i++)
            if (!*e[i].dev && e[i].bytes && (st = upload_bytes(d->stream, e[i].dev, e[i].host, e[i].bytes, err)))
                return st;
        if ((st = ext_checksums(d, e, n, NULL, d->ext_sum, err))) return st;
        d->ext_ready = true;
    }
    out_dev od;
    if ((st = outputs_to_device(d, o, want_lse, &od, err))) return st;
    SWA_CUDA_TRY(cudaStreamSynchronize(d->stream)); /* the poison is in place whatever stream the call uses */
    swa_device_view v;
    memset(&v, 0, sizeof v);
    v.q = d->q;
    v.k_pages = d->k_pages;
    v.v_pages = d->v_pages;
    v.k_ragged = d->k_ragged;
    v.v_ragged = d->v_ragged;
    v.qo_indptr = d->qo_indptr;
    v.kv_indptr = d->kv_seq_indptr;
    v.page_indptr = d->page_indptr;
    v.page_indices = d->page_indices;
    v.last_page_len = d->last_page_len;
    v.block_tables = d->block_tables;
    v.context_lens = d->context_lens;
    v.stream = (void *)d->stream;
    SWA_CUDA_TRY(cudaGetDevice(&v.device));

    swa_error call_err = {SWA_OK, ""};
    swa_status call_st = call(call_ctx, &v, od.out, od.lse, &call_err);
    char found[SWA_MSG_MAX] = "";

    /* 1. the default streams, before anything here waits */
    cudaStream_t defaults[2] = {SWA_LEGACY_STREAM, cudaStreamPerThread};
    const char *default_names[2] = {"the legacy default stream (stream 0)", "the per-thread default stream"};
    for (int i = 0; i < 2; i++)
        if (cudaStreamQuery(defaults[i]) == cudaErrorNotReady)
            ext_note(found, sizeof found, "run() returned with work still running on %s: enqueue on "
                     "problem->stream or synchronise before returning", default_names[i]);
    cudaGetLastError(); /* a query's error is not the call's */
    /* 2. the call's work on the given stream; a fault ends the context */
    cudaError_t rc = cudaStreamSynchronize(d->stream);
    if (rc != cudaSuccess)
        return ext_after(swa_cuda_fail(err, rc, "cudaStreamSynchronize(problem->stream)", __FILE__, __LINE__), who,
                         err);
    /* 3. every buffer of the case still allocated */
    bool restored[SWA_CUDA_EXT_INPUTS] = {false};
    for (int i = 0; i < n; i++) {
        if (!*e[i].dev || ext_alive(*e[i].dev)) continue;
        ext_note(found, sizeof found, "run() freed swadiff's input %s (inputs belong to swadiff: free only what the "
                 "plug-in allocated); it was allocated and uploaded again", e[i].name);
        *e[i].dev = NULL; /* the old address is no longer ours to free */
        if ((st = upload_bytes(d->stream, e[i].dev, e[i].host, e[i].bytes, err))) return ext_after(st, who, err);
        restored[i] = true;
    }
    swa_dev_buf *work[] = {&d->ints, &d->partial_o, &d->partial_l, &d->out_region, &d->lse_region, &d->scratch};
    const char *work_names[] = {"plan arrays", "split-KV partial outputs", "split-KV partial LSE", "out",
                                "lse", "scratch"};
    bool outputs_gone = false;
    for (size_t i = 0; i < sizeof work / sizeof work[0]; i++) {
        if (!work[i]->ptr || ext_alive(work[i]->ptr)) continue;
        ext_note(found, sizeof found, "run() freed swadiff's %s buffer", work_names[i]);
        outputs_gone |= work[i] == &d->out_region || work[i] == &d->lse_region;
        work[i]->ptr = NULL; /* allocated afresh at its next use */
        work[i]->bytes = 0;
    }
    /* 4. the outputs, after the given stream and after the whole device */
    if (!outputs_gone) {
        if ((st = outputs_to_host(d, o, &od, err))) return ext_after(st, who, err);
        rc = cudaDeviceSynchronize();
        if (rc != cudaSuccess)
            return ext_after(swa_cuda_fail(err, rc, "cudaDeviceSynchronize()", __FILE__, __LINE__), who, err);
        size_t g = o->guard_bytes;
        const void *regions[2] = {(const uint8_t *)o->out - g, od.lse ? (const uint8_t *)o->lse - g : NULL};
        const void *dev_regions[2] = {d->out_region.ptr, d->lse_region.ptr};
        size_t sizes[2] = {o->out_bytes + 2 * g, o->lse_bytes + 2 * g};
        const char *names[2] = {"out", "lse"};
        for (int i = 0; i < 2; i++) {
            if (!regions[i]) continue;
            uint8_t *again = (uint8_t *)malloc(sizes[i]);
            if (!again) return swa_error_set(err, SWA_ERR_NOMEM, "%s: no host memory to check %s", who, names[i]);
            rc = cudaMemcpyAsync(again, dev_regions[i], sizes[i], cudaMemcpyDeviceToHost, d->stream);
            if (rc == cudaSuccess) rc = cudaStreamSynchronize(d->stream);
            bool differs = rc == cudaSuccess && memcmp(again, regions[i], sizes[i]) != 0;
            free(again);
            if (rc != cudaSuccess)
                return ext_after(swa_cuda_fail(err, rc, "copying the outputs again", __FILE__, __LINE__), who, err);
            if (differs)
                ext_note(found, sizeof found, "%s still changed after problem->stream was synchronised: run() "
                         "returned while work on another stream was writing it (enqueue on problem->stream, or "
                         "synchronise your own stream before returning)", names[i]);
        }
    }
    /* 5. the inputs as uploaded */
    unsigned long long now[SWA_CUDA_EXT_INPUTS];
    if ((st = ext_checksums(d, e, n, restored, now, err))) return ext_after(st, who, err);
    for (int i = 0; i < n; i++) {
        if (restored[i] || !*e[i].dev || !e[i].bytes || now[i] == d->ext_sum[i]) continue;
        ext_note(found, sizeof found, "run() wrote into swadiff's input %s (inputs are const); it was restored from "
                 "the host copy", e[i].name);
        rc = cudaMemcpyAsync(*e[i].dev, e[i].host, e[i].bytes, cudaMemcpyHostToDevice, d->stream);
        if (rc != cudaSuccess)
            return ext_after(swa_cuda_fail(err, rc, "restoring an input", __FILE__, __LINE__), who, err);
    }
    SWA_CUDA_TRY(cudaStreamSynchronize(d->stream)); /* the restores land before the host copies can change */
    if (!found[0]) {
        if (call_st != SWA_OK) *err = call_err;
        return call_st;
    }
    if (call_st != SWA_OK)
        return swa_error_set(err, SWA_ERR_INVALID, "%s; and %s", call_err.message, found);
    return swa_error_set(err, SWA_ERR_INVALID, "%s: %s", who, found);
}

#if defined(SWADIFF_HIP_BUILD)
#define SWA_DEVICE_KIND SWA_DEVICE_HIP
#else
#define SWA_DEVICE_KIND SWA_DEVICE_CUDA
#endif
/* Host data only: clang's HIP device pass would otherwise treat the
 * constant table as a device constant that names host functions. */
#if !defined(__HIP_DEVICE_COMPILE__)
extern "C" const swa_device_ops SWA_DEV_SYM(device_ops) = {
    SWA_DEVICE_KIND,
    SWA_VENDOR,
    cuda_available,
    cuda_describe,
    cuda_num_sms,
    cuda_upload,
    cuda_release,
    cuda_prefill,
    cuda_decode_fa2,
    cuda_decode_fa2_graph,
    cuda_decode_aiter,
    cuda_memory,
    swa_cuda_last_kernel,
    cuda_describe_each,
    cuda_external_run,
    swa_cuda_launch_target,
    swa_cuda_last_launch,
};
#endif

} /* namespace SWA_NS */
