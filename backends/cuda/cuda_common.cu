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
#include <pthread.h>
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
 * m-tiles per warp; decode CTAs of 2 warps; the warp-specialised wgmma
 * prefill where the GPU has it, its 128-row tiles on the persistent grid.
 * The figures: docs/kernels.md, Measured choices. */
swa_cuda_tuning swa_cuda_tune = {32, 2, 2, SWA_WS_CTAS_PER_SM};

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
 * 9.0 GPU, head_dim 64/128/256, 64/128-row plan tiles; prefill.cu falls back
 * to mma.sync elsewhere): 2 (the default) the warp-specialised wgmma
 * engine, 0 mma.sync everywhere (docs/kernels.md, Speed). */
extern "C" void SWA_DEV_SYM(set_prefill_ws_ctas)(int ctas) { swa_cuda_tune.prefill_ws_ctas = ctas; }

static bool swa_prefill_engine_set; /* by set_prefill_engine: the environment no longer applies */
extern "C" void SWA_DEV_SYM(set_prefill_engine)(int engine)
{
    swa_cuda_tune.prefill_engine = engine == 0 ? 0 : 2;
    swa_prefill_engine_set = true;
}

namespace {
/* SWADIFF_CUDA_PREFILL_ENGINE as read once: its value (NULL: unset or
 * empty), and the error a bad value gives every launch (empty: none). */
struct swa_engine_env {
    const char *value;
    int engine, ctas; /* what it asks for (swa_cuda_tuning's prefill_engine, prefill_ws_ctas) */
    char error[240];
};

swa_engine_env swa_engine_env_read(void)
{
    swa_engine_env e = {NULL, 2, SWA_WS_CTAS_PER_SM, ""};
    const char *v = getenv("SWADIFF_CUDA_PREFILL_ENGINE");
    if (!v || !*v) return e;
    e.value = v;
    static const char ws[] = "wgmma-ws";
    const size_t wn = sizeof ws - 1;
    if (!strcmp(v, "mma")) {
        e.engine = 0;
    } else if (!strncmp(v, ws, wn) && (v[wn] == '\0' || v[wn] == ':')) {
        /* ":N": the persistent grid on at most N CTAs, so that small cases
         * run several work items per CTA too (the sanitizer's run) */
        int ctas = SWA_WS_CTAS_PER_SM;
        if (v[wn] == ':') {
            char *end = NULL;
            errno = 0;
            long n = strtol(v + wn + 1, &end, 10);
            if (end == v + wn + 1 || *end || errno || n < 1 || n > 1000000) {
                snprintf(e.error, sizeof e.error,
                         "SWADIFF_CUDA_PREFILL_ENGINE=\"%.40s\": expected \"wgmma-ws:N\" with N a whole number of "
                         "CTAs from 1 to 1000000", v);
                return e;
            }
            ctas = (int)n;
        }
        e.ctas = ctas;
    } else {
        snprintf(e.error, sizeof e.error,
                 "SWADIFF_CUDA_PREFILL_ENGINE=\"%.40s\": expected \"mma\" (mma.sync, any GPU) or \"wgmma-ws[:N]\" "
                 "(Hopper, an sm_90a build; N: at most N persistent CTAs)", v);
    }
    return e;
}

pthread_once_t swa_engine_env_once = PTHREAD_ONCE_INIT;
swa_engine_env swa_engine_env_value;
void swa_engine_env_init(void) { swa_engine_env_value = swa_engine_env_read(); }
} /* namespace */

swa_status swa_cuda_prefill_engine_from_env(swa_error *err, const char **value)
{
    *value = NULL;
    /* once per process (pthread_once: no C++ runtime's guard in the HIP build's C link) */
    pthread_once(&swa_engine_env_once, swa_engine_env_init);
    const swa_engine_env &env = swa_engine_env_value;
    if (swa_prefill_engine_set) return SWA_OK;
    if (!env.value) return SWA_OK;
    *value = env.value;
    if (env.error[0]) return swa_error_set(err, SWA_ERR_INVALID, "%s", env.error);
    swa_cuda_tune.prefill_engine = env.engine;
    swa_cuda_tune.prefill_ws_ctas = env.ctas;
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
