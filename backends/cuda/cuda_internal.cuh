/* cuda_internal.cuh — shared by the CUDA device files: the error macro, the
 * kernel parameter blocks, the launchers each kernel file exports, and the
 * small device-buffer helpers used by the device table and the benchmark.
 *
 * Error rule: every runtime call goes through SWA_CUDA_TRY, which records
 * "cudaXxx(...) failed at file:line: <cuda error name>: <text>" in the
 * swa_error and returns SWA_ERR_DEVICE — a launch failure or a device fault
 * becomes a status the harness records, never an abort.
 *
 * Everything here is in namespace SWA_NS (swa_cuda / swa_hip, vendor.cuh):
 * the NVIDIA and the ROCm build of these sources link into one binary.
 *
 * Test: tests/gpu_test_kernels.c (needs a GPU; exits 77 without one). */
#ifndef SWADIFF_CUDA_INTERNAL_CUH
#define SWADIFF_CUDA_INTERNAL_CUH

#include "backends/cuda/vendor.cuh"
#include "backends/launch_choice.h"
#include "backends/plan.h"
#include "core/common.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <type_traits>

namespace SWA_NS {

swa_status swa_cuda_fail(swa_error *err, cudaError_t code, const char *stmt, const char *file,
                         int line);

#define SWA_CUDA_TRY(stmt)                                                             \
    do {                                                                               \
        cudaError_t swa_cuda_rc_ = (stmt);                                             \
        if (swa_cuda_rc_ != cudaSuccess)                                               \
            return swa_cuda_fail(err, swa_cuda_rc_, #stmt, __FILE__, __LINE__);        \
    } while (0)

/* A launch is checked twice: the configuration at once, faults at the next sync. */
#define SWA_CUDA_TRY_LAUNCH(what) SWA_CUDA_TRY(cudaGetLastError())

/* -------------------------------------------------------------------------
 * Kernel parameter blocks (plain structs passed by value). */

typedef struct swa_cuda_prefill_params {
    const void *q, *k, *v;           /* q [total_qo][Hq][D]; k/v pools or ragged [total_kv][Hkv][D] */
    void *out;                       /* [total_qo][Hq][D] dtype */
    float *lse;                      /* [total_qo][Hq] or NULL */
    float *o_part, *lse_part;        /* split-KV partials */
    const int *work_request, *work_qo_tile, *work_kv_chunk;
    const int *qo_indptr, *kv_indptr, *qo_len, *kv_len;
    const int *req_num_chunks, *req_partial_offset;
    const int *page_indptr, *page_indices;   /* FlashInfer page table (paged mode) */
    int num_requests, total_qo;
    int num_pages, total_kv;         /* pool pages (paged) / rows (ragged): the TMA maps' extents */
    int num_qo_heads, num_kv_heads, group_size, page_size;
    int cta_tile_q, cta_tile_kv, kv_chunk_size;
    int window_left, run_window_left, mutant;
    int window_right, chunk_size;    /* R (-1 unbounded, 0 when causal), C (0 off) */
    int sub_tiles;                   /* CTAs per work item: cta_tile_q / rows per CTA */
    int ws_items;                    /* warp-specialised kernel: work items x sub_tiles x kv heads (its grid may be smaller) */
    bool causal, mask_window, split_kv, ragged, nhd;
    float sm_scale, soft_cap;
} swa_cuda_prefill_params;

typedef struct swa_cuda_fa2_params {
    const void *q, *k, *v;
    void *out;
    float *lse;
    float *o_part, *lse_part;
    const int *work_request, *work_chunk;      /* [capacity_work] */
    const int *req_num_chunks, *req_partial_offset;
    const int *kv_indptr, *kv_indices, *kv_last_page_len;
    const int *scalars;              /* device: [0] num_work, [1] num_requests (graph mode reads these) */
    int num_qo_heads, num_kv_heads, group_size, page_size, num_pages;
    int kv_chunk_size, window_left, mutant;
    int chunk_size;                  /* chunked local attention: C (0 off) */
    int row_blocks;                  /* ceil(group_size / 16) */
    bool split_kv, nhd;
    float sm_scale, soft_cap;
    /* mutant OOB_WRITE: oob_bytes of oob_value at oob_at (just past out) */
    unsigned char *oob_at;
    int oob_bytes;
    unsigned char oob_value;
} swa_cuda_fa2_params;

typedef struct swa_cuda_aiter_params {
    const void *q, *k, *v;
    void *out;                       /* [num_seqs][Hq][D] */
    float *tmp_out, *max_logits, *exp_sums; /* [num_seqs][Hq][max_parts]([D]) */
    const int *block_tables, *context_lens;
    int num_seqs, num_qo_heads, num_kv_heads, group_size, block_size, num_pages;
    int max_blocks_per_seq, partition_size, max_num_partitions, sliding_window, mutant;
    int row_blocks;
    bool nhd;
    float scale, soft_cap;
} swa_cuda_aiter_params;

/* Launchers (one per kernel file).  They only enqueue work on `stream`;
 * the caller synchronises and checks.  head_dim 64/128/256, fp16/bf16. */
swa_status swa_cuda_prefill_launch(const swa_cuda_prefill_params *p, swa_dtype dtype, int head_dim,
                                   int num_work, bool write_lse, cudaStream_t stream, swa_error *err);
swa_status swa_cuda_fa2_launch(const swa_cuda_fa2_params *p, swa_dtype dtype, int head_dim,
                               int grid_work, int capacity_requests, bool write_lse,
                               cudaStream_t stream, swa_error *err);
swa_status swa_cuda_aiter_launch(const swa_cuda_aiter_params *p, swa_dtype dtype, int head_dim,
                                 cudaStream_t stream, swa_error *err);

/* Kernel configuration knobs (defaults chosen from H200 measurements;
 * the benchmark flips them to compare variants).  0 = default. */
typedef struct swa_cuda_tuning {
    int prefill_rows_per_warp; /* 128-row tiles: 16 (two 64-row CTAs) or 32 (one CTA, two m-tiles per warp) */
    int decode_warps;          /* warps splitting each decode KV tile: 4 (64 keys) or 2 (32 keys) */
    int prefill_engine;        /* Hopper (sm_90a image, 64/128-row tiles): 2 (default) the
                                  warp-specialised wgmma engine, mma.sync elsewhere; 0 mma.sync everywhere */
    int prefill_ws_ctas;       /* the warp-specialised engine's grid for 128-row tiles:
                                  SWA_WS_CTAS_PER_SM (0, the default) the persistent kernel on one CTA
                                  per SM, N > 0 the persistent kernel on at most N CTAs (the GPU test
                                  makes one CTA run every item), SWA_WS_CTAS_PER_ITEM (-1) one CTA per
                                  work item (as every grid with no more items than CTAs runs) */
} swa_cuda_tuning;
#define SWA_WS_CTAS_PER_SM 0
#define SWA_WS_CTAS_PER_ITEM (-1)
extern swa_cuda_tuning swa_cuda_tune; /* cuda_common.cu */
/* The kernel variant a launcher enqueued (printf-style; the device table's
 * last_kernel reports it): the latest call wins. */
void swa_cuda_note_kernel(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void swa_cuda_last_kernel(char *buf, size_t n);
/* The launch choices (backends/launch_choice.h): the target the launchers
 * choose for (this GPU, swa_cuda_tune), and the record of what they
 * launched since the last reset (the union over launches; NULL resets). */
void swa_cuda_launch_target(swa_launch_target *t); /* prefill.cu (it knows whether wgmma is ready) */
void swa_cuda_note_launch(const swa_launch *l);
void swa_cuda_last_launch(swa_launch *out);
/* The dtype a kernel's element type instantiates. */
template <typename T> static inline swa_dtype swa_cuda_dtype_of(void)
{
    return std::is_same<T, swa_bf16_t>::value ? SWA_DTYPE_BF16 : SWA_DTYPE_FP16;
}
/* The same knobs for C callers (tests/gpu_test_kernels.c runs every variant). */
extern "C" void SWA_DEV_SYM(set_tuning)(int prefill_rows_per_warp, int decode_warps);
extern "C" void SWA_DEV_SYM(set_prefill_engine)(int engine); /* 0 mma.sync, else the wgmma engine (2) */
/* SWADIFF_CUDA_PREFILL_ENGINE=mma|wgmma-ws[:N] picks the prefill engine
 * of a whole run (until set_prefill_engine is called): "mma" the mma.sync
 * engine everywhere, "wgmma-ws" the warp-specialised engine (the default),
 * ":N" with its persistent grid on at most N CTAs (prefill_ws_ctas);
 * another value is an error naming the variable, given to every launch.
 * Read once per process; *value: the variable's value where it applies,
 * else NULL. */
swa_status swa_cuda_prefill_engine_from_env(swa_error *err, const char **value);
/* prefill.cu: 1 when prefill_engine 2 would run a wgmma kernel on this
 * device (the loaded image is sm_90a; asks the device once), and how many
 * times the launcher has dispatched to it in this process. */
extern "C" int SWA_DEV_SYM(prefill_wgmma_available)(void);
extern "C" int SWA_DEV_SYM(prefill_wgmma_image_here)(void); /* the current device, not cached (the probe) */
extern "C" long SWA_DEV_SYM(prefill_wgmma_launches)(void);
extern "C" void SWA_DEV_SYM(set_prefill_ws_ctas)(int ctas);       /* SWA_WS_CTAS_PER_SM (0, default), N persistent on at most N, SWA_WS_CTAS_PER_ITEM (-1) */

/* Whether the kernels handle this shape (NULL) or why not. */
const char *swa_cuda_shape_unsupported(swa_dtype dtype, int head_dim, int group_size);

/* -------------------------------------------------------------------------
 * Plan arrays travel as one packed int buffer: the host appends arrays to a
 * staging vector, one copy moves them, and each array's device address is
 * base + its offset. */
typedef struct swa_int_pack {
    int *host;
    size_t count, capacity;
} swa_int_pack;

/* Appends n ints (src may be NULL: zeros) and returns the offset, or -1 on OOM.
 * Offsets are 16-byte aligned so device loads stay aligned. */
static inline long swa_int_pack_add(swa_int_pack *pk, const int *src, size_t n)
{
    size_t at = (pk->count + 3) & ~(size_t)3;
    if (at + n + 4 > pk->capacity) {
        size_t cap = pk->capacity ? pk->capacity : 1024;
        while (cap < at + n + 4) cap *= 2;
        int *grown = (int *)realloc(pk->host, cap * sizeof(int));
        if (!grown) return -1;
        pk->host = grown;
        pk->capacity = cap;
    }
    for (size_t i = pk->count; i < at; i++) pk->host[i] = 0;
    if (src) memcpy(pk->host + at, src, n * sizeof(int));
    else memset(pk->host + at, 0, n * sizeof(int));
    pk->count = at + n;
    return (long)at;
}
static inline void swa_int_pack_free(swa_int_pack *pk)
{
    free(pk->host);
    pk->host = NULL;
    pk->count = pk->capacity = 0;
}

/* A device buffer that only grows (workspace reused across runs). */
typedef struct swa_dev_buf {
    void *ptr;
    size_t bytes;
} swa_dev_buf;

static inline swa_status swa_dev_buf_reserve(swa_dev_buf *b, size_t bytes, swa_error *err)
{
    if (bytes <= b->bytes && b->ptr) return SWA_OK;
    if (b->ptr) SWA_CUDA_TRY(cudaFree(b->ptr));
    b->ptr = NULL;
    b->bytes = 0;
    if (bytes == 0) bytes = 16;
    SWA_CUDA_TRY(cudaMalloc(&b->ptr, bytes));
    b->bytes = bytes;
    return SWA_OK;
}
static inline void swa_dev_buf_free(swa_dev_buf *b)
{
    if (b->ptr) cudaFree(b->ptr);
    b->ptr = NULL;
    b->bytes = 0;
}

/* The device buffers of a case an external backend reads (q, the caches,
 * ragged K/V and seven index arrays). */
#define SWA_CUDA_EXT_INPUTS 12

/* Everything a case keeps on the device between plan runs. */
typedef struct swa_cuda_inputs {
    swa_dtype dtype;
    swa_layout layout;
    int num_requests, total_qo, total_kv, num_qo_heads, num_kv_heads, head_dim;
    int page_size, num_pages;
    void *q, *k_pages, *v_pages, *k_ragged, *v_ragged;
    int *page_indptr, *page_indices;
    cudaStream_t stream;
    swa_dev_buf ints, partial_o, partial_l, out_region, lse_region, scratch;
    /* external backends in device memory (cuda_external_run): the index
     * arrays only they read, uploaded at the case's first external run,
     * and every input's checksum taken then */
    int *qo_indptr, *kv_seq_indptr, *last_page_len, *block_tables, *context_lens;
    bool ext_ready;
    unsigned long long ext_sum[SWA_CUDA_EXT_INPUTS];
    swa_dev_buf ext_sums;
} swa_cuda_inputs;

/* Plan -> kernel parameters: packs the plan's arrays into d->ints (one
 * copy), sizes the partial buffers, fills everything but out/lse.  The
 * device table runs these per case; the benchmark once per workload. */
swa_status swa_cuda_prefill_prepare(swa_cuda_inputs *d, const swa_prefill_plan *p, swa_cuda_prefill_params *prm,
                                    swa_error *err);
/* cap_*: buffer capacities (graph mode: the captured plan's; else the plan's own sizes) */
swa_status swa_cuda_fa2_prepare(swa_cuda_inputs *d, const swa_decode_fa2_plan *p, int cap_work, int cap_req,
                                int cap_pages, int cap_partial_rows, swa_cuda_fa2_params *prm, swa_error *err);
swa_status swa_cuda_aiter_prepare(swa_cuda_inputs *d, const swa_decode_aiter_plan *p, swa_cuda_aiter_params *prm,
                                  swa_error *err);

} /* namespace SWA_NS */

#endif /* SWADIFF_CUDA_INTERNAL_CUH */
