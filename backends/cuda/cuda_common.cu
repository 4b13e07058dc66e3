/* cuda_common.cu — what every CUDA (and HIP) source of backends/cuda/
 * shares and defines once: the error recorder behind SWA_CUDA_TRY, the
 * tuning knobs the launchers read, and the shape check.  Declared in
 * cuda_internal.cuh.  Kept apart from cuda_device.cu so the kernels'
 * launchers and the device table do not call each other in a loop
 * (tests/check_layout.py).
 *
 * Test: tests/gpu_test_kernels.c. */
#include "backends/cuda/cuda_internal.cuh"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

namespace SWA_NS {

swa_status swa_cuda_fail(swa_error *err, cudaError_t code, const char *stmt, const char *file, int line)
{
    const char *base = strrchr(file, '/');
    return swa_error_set(err, SWA_ERR_DEVICE, "%s failed at %s:%d: %s (%s)%s", stmt, base ? base + 1 : file, line,
                         cudaGetErrorName(code), cudaGetErrorString(code),
#if defined(SWADIFF_HIP_BUILD) /* HIP has no misaligned / illegal-instruction codes */
                         (code == cudaErrorIllegalAddress || code == cudaErrorLaunchFailure)
#else
                         (code == cudaErrorIllegalAddress || code == cudaErrorLaunchFailure ||
                          code == cudaErrorMisalignedAddress || code == cudaErrorIllegalInstruction)
#endif
                             ? "; the device faulted (a kernel read or wrote outside its buffers), the " SWA_VENDOR_GPU
                               " context is unusable for the rest of this process"
                             : "");
}

/* Defaults from H200 timings (the bench compares the variants, the gpu
 * test validates every one): 128-row prefill tiles as one CTA with two
 * m-tiles per warp; decode CTAs of 2 warps.  A 4-deep ring for 2-warp
 * decode was slower and dropped.  The figures: docs/kernels.md, Measured
 * choices. */
swa_cuda_tuning swa_cuda_tune = {32, 2, 2, 0, 0, SWA_WS_CTAS_PER_SM};

static char swa_cuda_kernel_note[192];

void swa_cuda_note_kernel(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(swa_cuda_kernel_note, sizeof swa_cuda_kernel_note, fmt, ap);
    va_end(ap);
}

void swa_cuda_last_kernel(char *buf, size_t n)
{
    if (!buf) {
        swa_cuda_kernel_note[0] = '\0';
        return;
    }
    if (n) snprintf(buf, n, "%s", swa_cuda_kernel_note);
}

static swa_launch swa_cuda_launch_rec;

void swa_cuda_note_launch(const swa_launch *l) { swa_launch_union(&swa_cuda_launch_rec, l); }

void swa_cuda_last_launch(swa_launch *out)
{
    if (!out) {
        memset(&swa_cuda_launch_rec, 0, sizeof swa_cuda_launch_rec);
        return;
    }
    *out = swa_cuda_launch_rec;
}

extern "C" void SWA_DEV_SYM(set_tuning)(int prefill_rows_per_warp, int decode_warps)
{
    swa_cuda_tune.prefill_rows_per_warp = prefill_rows_per_warp;
    swa_cuda_tune.decode_warps = decode_warps;
}

/* Prefill engine where it applies (an sm_90a image on a compute capability
 * 9.0 GPU, head_dim 64/128/256, 64/128-row plan tiles; prefill.cu falls back to
 * mma.sync elsewhere): 2 (the default) the warp-specialised wgmma engine, 1
 * the serial wgmma engine, 0 mma.sync everywhere.  2 is the fastest of
 * the three on the H200 on both prefill shapes (docs/kernels.md, Speed). */
extern "C" void SWA_DEV_SYM(set_prefill_kv_loads)(int kv_loads) { swa_cuda_tune.prefill_kv_loads = kv_loads; }
extern "C" void SWA_DEV_SYM(set_prefill_ws_ctas)(int ctas) { swa_cuda_tune.prefill_ws_ctas = ctas; }

static bool swa_prefill_engine_set; /* by set_prefill_engine: the environment no longer applies */
extern "C" void SWA_DEV_SYM(set_prefill_engine)(int engine)
{
    swa_cuda_tune.prefill_engine = engine;
    swa_prefill_engine_set = true;
}

swa_status swa_cuda_prefill_engine_from_env(swa_error *err, const char **value)
{
    *value = NULL;
    if (swa_prefill_engine_set) return SWA_OK;
    const char *v = getenv("SWADIFF_CUDA_PREFILL_ENGINE");
    if (!v || !*v) return SWA_OK;
    *value = v;
    static const char persistent[] = "wgmma-ws-persistent";
    const size_t pn = sizeof persistent - 1;
    if (!strcmp(v, "mma")) swa_cuda_tune.prefill_engine = 0;
    else if (!strcmp(v, "wgmma")) swa_cuda_tune.prefill_engine = 1;
    else if (!strcmp(v, "wgmma-ws")) {
        swa_cuda_tune.prefill_engine = 2;
        swa_cuda_tune.prefill_ws_ctas = SWA_WS_CTAS_PER_SM;
    } else if (!strcmp(v, "wgmma-ws-per-item")) {
        swa_cuda_tune.prefill_engine = 2;
        swa_cuda_tune.prefill_ws_ctas = SWA_WS_CTAS_PER_ITEM;
    } else if (!strncmp(v, persistent, pn) && (v[pn] == '\0' || v[pn] == ':')) {
        /* the persistent kernel (128-row plan tiles): one CTA per SM (the
         * default), or ":N" at most N CTAs, so that small cases run several
         * work items per CTA too */
        int ctas = SWA_WS_CTAS_PER_SM;
        if (v[pn] == ':') {
            char *end = NULL;
            errno = 0;
            long n = strtol(v + pn + 1, &end, 10);
            if (end == v + pn + 1 || *end || errno || n < 1 || n > 1000000)
                return swa_error_set(err, SWA_ERR_INVALID,
                                     "SWADIFF_CUDA_PREFILL_ENGINE=\"%.40s\": expected \"wgmma-ws-persistent:N\" with N "
                                     "a whole number of CTAs from 1 to 1000000", v);
            ctas = (int)n;
        }
        swa_cuda_tune.prefill_engine = 2;
        swa_cuda_tune.prefill_ws_ctas = ctas;
    } else
        return swa_error_set(err, SWA_ERR_INVALID,
                             "SWADIFF_CUDA_PREFILL_ENGINE=\"%.40s\": expected \"mma\" (mma.sync, any GPU), \"wgmma\", "
                             "\"wgmma-ws\", \"wgmma-ws-per-item\" or \"wgmma-ws-persistent[:N]\" (Hopper, an sm_90a "
                             "build)", v);
    return SWA_OK;
}

const char *swa_cuda_shape_unsupported(swa_dtype dtype, int head_dim, int group_size)
{
    if (dtype == SWA_DTYPE_FP32) return "cuda kernels run fp16 and bf16 only (fp32 has no mma.sync path here)";
    if (head_dim != 64 && head_dim != 128 && head_dim != 256) return "cuda kernels are compiled for head_dim 64, 128, 256";
    if (group_size < 1) return "num_qo_heads must be a multiple of num_kv_heads";
    return NULL;
}

} /* namespace SWA_NS */
