/* prefill.cu — FlashInfer-style batch prefill on CUDA (paged and ragged),
 * executing a swa_prefill_plan (backends/plan.h), plus the split-KV merge.
 *
 * Grid: (num_work * sub_tiles, num_kv_heads).  A work item is one query
 * tile (plan->cta_tile_q packed GQA rows) x one KV chunk of one request;
 * tiles of 64/128 rows run 64 rows per CTA (4 warps x 16 rows; a 128-row
 * tile runs as two CTAs that share the tile's KV range), 16-row tiles run
 * one row group with the keys split over 4 warps.  The KV range is the
 * plan's: the KV-start skip from run_window_left (aligned down to
 * cta_tile_kv, from the tile's first row), the causal end from the tile's
 * last row (plus window_right for a non-causal band); the per-element
 * window / right-bound / chunk mask only when plan->mask_window.
 *
 * Engines: on a compute capability 9.0 GPU with this binary's image
 * compiled for sm_90a (asked once from the device: swa_prefill_wgmma_built),
 * the 64- and 128-row tiles of head_dim 64/128/256 run on the warp-specialised
 * wgmma engine (attn_engine_sm90.cuh, swa_attn_engine_wgmma_ws: a producer
 * warpgroup and 1 or 2 consumer warpgroups per tile; 128-row tiles of
 * head_dim 64/128 on its persistent grid when there are more work items
 * than SMs, else one CTA per item);
 * everything else, and prefill_engine = 0 (SWADIFF_CUDA_PREFILL_ENGINE=mma),
 * runs on the mma.sync engine (attn_engine.cuh).  launch_choice.c's
 * swa_prefill_choose is the one rule; the launcher instantiates what it
 * names.
 *
 * Test: tests/gpu_test_kernels.c (prefill paged/ragged, split, GQA, windows;
 * gpu_variants runs them again on the wgmma engine's grids). */
#include "backends/cuda/cuda_internal.cuh"
#include <type_traits>

#include "backends/cuda/attn_engine.cuh"
#include "backends/cuda/attn_engine_sm90.cuh"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

namespace SWA_NS {

template <int D, bool MUT> struct swa_prefill_prob {
    const swa_cuda_prefill_params &p;
    const void *q, *k, *v;
    float sm_scale, soft_cap;
    swa_mutant m; /* SWA_MUTANT_NONE at compile time in the normal build */
    static constexpr bool FA_STYLE_MUTANTS = true; /* engine: edge-tile and finite-sentinel mutants live here */
    int kv_begin, kv_end;
    int r, chunk, kvh, qo_len, kv_len, row_base, row_limit, q_row0;
    const int *pages;      /* paged: the request's entries of page_indices */
    swa_kv_addr addr; /* set in init(): the page size's division and the strides */

    __device__ swa_prefill_prob(const swa_cuda_prefill_params &prm) : p(prm)
    {
        q = p.q; k = p.k; v = p.v;
        m = MUT ? (swa_mutant)p.mutant : SWA_MUTANT_NONE;
        sm_scale = p.sm_scale;
        soft_cap = m == SWA_MUTANT_SOFTCAP_COMPILED_OUT ? 0.f : p.soft_cap;
    }

    /* This CTA's work: the last work item first (under a causal mask the
     * plan's later tiles of a request carry the most keys; the order of
     * execution does not change any result). */
    template <int ROWS> __device__ bool init() { return init_at<ROWS>((int)(gridDim.x - 1 - blockIdx.x)); }

    /* Decodes item cta of the (num_work x sub_tiles x kv heads) grid
     * (false: its rows are past the plan tile, nothing to do). */
    template <int ROWS> __device__ bool init_at(int cta)
    {
        kvh = cta % p.num_kv_heads; /* kv heads fastest: CTAs sharing pages run together */
        cta /= p.num_kv_heads;
        int w = cta / p.sub_tiles, sub = cta % p.sub_tiles;
        r = p.work_request[w];
        int tile = p.work_qo_tile[w];
        chunk = p.split_kv ? p.work_kv_chunk[w] : 0;
        qo_len = p.qo_len[r];
        kv_len = p.kv_len[r];
        q_row0 = p.qo_indptr[r];
        int packed_rows = qo_len * p.group_size;
        int tile_begin = tile * p.cta_tile_q;
        int tile_end = min(tile_begin + p.cta_tile_q, packed_rows);
        row_base = tile_begin + sub * ROWS;
        row_limit = tile_end;
        if (row_base >= row_limit) return false;

        int chunk_begin = p.split_kv ? chunk * p.kv_chunk_size : 0;
        int chunk_end = p.split_kv ? min(chunk_begin + p.kv_chunk_size, kv_len) : kv_len;
        /* KV range of the whole plan tile (a 128-row tile's two CTAs agree) */
        int p_first = swa_query_pos(kv_len, qo_len, swa_tile_first_row(tile_begin, p.group_size, m), m);
        int p_last = swa_query_pos(kv_len, qo_len, (tile_end - 1) / p.group_size, m);
        kv_begin = swa_prefill_kv_begin(chunk_begin, p_first, swa_window_anchor(p_first, kv_len, qo_len, m),
                                        p.run_window_left, p.chunk_size, p.cta_tile_kv, m);
        kv_end = swa_prefill_kv_end(chunk_end, p_last, p.causal, p.window_right, m);

        if (p.ragged) {
            /* from (token 0 of the request, kv head) */
            addr.ragged<D>(((long long)p.kv_indptr[r] * p.num_kv_heads + kvh) * D, p.num_kv_heads);
        } else {
            pages = p.page_indices + p.page_indptr[r];
            addr.paged<D>(p.page_size, p.num_kv_heads, kvh, p.nhd);
        }
        return true;
    }

    __device__ int qo_head(int packed) const
    {
        return swa_qo_head_of(kvh, packed % p.group_size, p.group_size, p.num_kv_heads, m);
    }

    __device__ swa_row_info row(int local) const
    {
        swa_row_info ri;
        int packed = row_base + local;
        ri.valid = packed < row_limit;
        if (!ri.valid) {
            ri.q_off = 0; ri.lo = INT_MIN; ri.hi = INT_MAX;
            return ri;
        }
        int i = packed / p.group_size;
        ri.q_off = ((long long)(q_row0 + i) * p.num_qo_heads + qo_head(packed)) * D;
        int pos = swa_query_pos(kv_len, qo_len, i, m);
        swa_key_range kr = swa_mask_row_range(pos, swa_window_anchor(pos, kv_len, qo_len, m), p.window_left,
                                              p.window_right, p.chunk_size, p.mask_window, p.causal, m);
        ri.lo = kr.lo;
        ri.hi = kr.hi;
        return ri;
    }

    __device__ float masked_low_logit() const { return -CUDART_INF_F; }

    /* page id of key t (ragged: t itself) */
    __device__ int lookup(int t) const
    {
        return p.ragged ? t : pages[addr.page_of(t)];
    }
    __device__ long long offset(int page, int t) const { return addr.offset(page, t); }
#if SWA_WGMMA_DEVICE
    /* the same addresses for the warp-specialised producer's gather, in bytes */
    template <typename T> __device__ swa_kv_rows kv_rows() const
    {
        swa_kv_rows kr;
        kr.pages = p.ragged ? nullptr : pages;
        kr.pdiv = addr.pdiv;
        kr.page_bytes = (unsigned long long)addr.pg_stride * sizeof(T);
        kr.slot_bytes = (unsigned long long)addr.slot_stride * sizeof(T);
        kr.head_bytes = (unsigned long long)addr.head_off * sizeof(T);
        return kr;
    }
#endif

    template <typename T> __device__ void write_row(int local, int c, const float (&o)[8], float mx, float d) const
    {
        int packed = row_base + local;
        if (packed >= row_limit) return;
        int i = packed / p.group_size, h = qo_head(packed);
        float lse2 = swa_state_lse(mx, d);
        if (p.split_kv) {
            long long slot = (long long)p.req_partial_offset[r] + (long long)chunk * qo_len + i;
            long long rowi = slot * p.num_qo_heads + h;
            swa_store8f(p.o_part + rowi * D + c * 8, o);
            if (c == 0) p.lse_part[rowi] = lse2;
        } else {
            long long rowi = (long long)(q_row0 + i) * p.num_qo_heads + h;
            swa_store8(reinterpret_cast<T *>(p.out) + rowi * D + c * 8, o);
            if (c == 0 && p.lse) p.lse[rowi] = swa_lse_store_value(lse2, m);
        }
    }
};

/* The engine needs write_row without the dtype in the call. */
template <int D, typename T, bool MUT> struct swa_prefill_prob_t : swa_prefill_prob<D, MUT> {
    __device__ swa_prefill_prob_t(const swa_cuda_prefill_params &prm) : swa_prefill_prob<D, MUT>(prm) {}
    __device__ void write_row(int local, int c, const float (&o)[8], float m, float d) const
    {
        swa_prefill_prob<D, MUT>::template write_row<T>(local, c, o, m, d);
    }
};

template <class Cfg, typename T, bool MUT>
__global__ void __launch_bounds__(Cfg::THREADS) swa_prefill_kernel(const swa_cuda_prefill_params p)
{
    extern __shared__ __align__(128) unsigned char smem[];
    swa_prefill_prob_t<Cfg::D, T, MUT> prob(p);
    if (!prob.template init<Cfg::ROWS>()) return;
    swa_attn_engine<Cfg, T>(prob, smem);
}

#if SWA_TENSOR_CORE_ENGINE
/* The warp-specialised wgmma engine's kernel: WG consumer warpgroups and
 * one producer (Cfg::THREADS = 128 (WG + 1)), each CTA running the work
 * items swa_ws_sched gives it, of p.ws_items in all (one per CTA in a
 * grid of p.ws_items, several in the persistent grid).  Its body exists
 * only in the sm_90a image (elsewhere it is empty and never launched: see
 * swa_prefill_wgmma_ready). */
template <class Cfg, typename T, bool MUT>
__global__ void __launch_bounds__(Cfg::THREADS, 1) swa_prefill_wgmma_ws_kernel(const swa_cuda_prefill_params p)
{
#if SWA_WGMMA_DEVICE
    extern __shared__ __align__(1024) unsigned char swa_wgmma_ws_smem[];
    swa_prefill_prob_t<Cfg::D, T, MUT> prob(p);
    const swa_ws_sched sched = {p.ws_items};
    swa_attn_engine_wgmma_ws<Cfg, T>(prob, swa_wgmma_ws_smem, sched);
#else
    (void)p;
#endif
}

/* 1 in the image of this file that the device loaded when that image was
 * compiled for sm_90a (the wgmma kernel has a body), 0 in any other. */
__device__ int swa_prefill_wgmma_built = SWA_WGMMA_DEVICE;
#endif

/* One warp per (qo row, head): combines the row's KV-chunk partials. */
template <typename T, int D, bool MUT>
__global__ void __launch_bounds__(128) swa_prefill_merge_kernel(const swa_cuda_prefill_params p)
{
    int warp_global = blockIdx.x * SWA_MERGE_WARPS + threadIdx.x / SWA_WARP_SIZE;
    int lane = threadIdx.x % SWA_WARP_SIZE;
    if (warp_global >= p.total_qo * p.num_qo_heads) return;
    int row = warp_global / p.num_qo_heads, head = warp_global % p.num_qo_heads;
    /* request of this row: binary search in qo_indptr */
    int lo = 0, hi = p.num_requests - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (p.qo_indptr[mid] <= row) lo = mid;
        else hi = mid - 1;
    }
    int r = lo, i = row - p.qo_indptr[r];
    T *out_row = reinterpret_cast<T *>(p.out) + ((size_t)row * p.num_qo_heads + head) * D;
    float *lse_out = p.lse ? p.lse + (size_t)row * p.num_qo_heads + head : NULL;
    swa_merge_row<T, D, MUT>(p.o_part, p.lse_part, p.num_qo_heads, head, p.req_partial_offset[r] + i,
                             p.qo_len[r], p.req_num_chunks[r], out_row, lse_out, p.mutant, lane);
}

// ----------------------------------------------------------------------------
// launcher

/* Whether the wgmma engine can run here: this build has it (NVIDIA,
 * tensor-core engine) and the image the device loaded for prefill.cu was
 * compiled for sm_90a.  Asked once per process (a synchronous read of
 * swa_prefill_wgmma_built); an error (no image for this device) is "no". */
static long swa_prefill_wgmma_count = 0; /* launches of the wgmma kernels (tests) */

static bool swa_prefill_wgmma_ready(void)
{
#if SWA_TENSOR_CORE_ENGINE
    static int swa_prefill_wgmma_state = -1; /* -1 not asked yet, 0 no, 1 yes */
    if (swa_prefill_wgmma_state < 0) {
        int built = 0;
        cudaError_t rc = cudaMemcpyFromSymbol(&built, swa_prefill_wgmma_built, sizeof built);
        if (rc != cudaSuccess) {
            cudaGetLastError(); /* not sticky: clear it for the caller's checks */
            built = 0;
        }
        swa_prefill_wgmma_state = built == 1;
    }
    return swa_prefill_wgmma_state == 1;
#else
    return false;
#endif
}

extern "C" int SWA_DEV_SYM(prefill_wgmma_available)(void) { return swa_prefill_wgmma_ready() ? 1 : 0; }

/* The launchers' target (every launcher asks it; here because whether the
 * wgmma engine is ready is this file's to say): the current device's SM
 * count, asked once per device, and the knobs as they stand. */
void swa_cuda_launch_target(swa_launch_target *t)
{
    static int sms[64];
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) {
        cudaGetLastError();
        dev = 0;
    }
    if (sms[dev] <= 0 && cudaDeviceGetAttribute(&sms[dev], cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
        cudaGetLastError();
        sms[dev] = 0;
    }
    const char *env_engine = NULL;
    swa_error ignored = {};
    (void)swa_cuda_prefill_engine_from_env(&ignored, &env_engine); /* a bad value fails the launch itself */
    memset(t, 0, sizeof *t);
#if SWA_TENSOR_CORE_ENGINE
    t->portable = false;
#else
    t->portable = true;
#endif
    t->wgmma = swa_prefill_wgmma_ready();
    t->sm_count = sms[dev];
    t->prefill_engine = swa_cuda_tune.prefill_engine;
    t->prefill_rows_per_warp = swa_cuda_tune.prefill_rows_per_warp;
    t->decode_warps = swa_cuda_tune.decode_warps;
    t->ws_ctas = swa_cuda_tune.prefill_ws_ctas;
}


/* The same question for the current device, not cached: the device probe
 * asks it of every visible GPU in turn (they may differ). */
extern "C" int SWA_DEV_SYM(prefill_wgmma_image_here)(void)
{
#if SWA_TENSOR_CORE_ENGINE
    int built = 0;
    if (cudaMemcpyFromSymbol(&built, swa_prefill_wgmma_built, sizeof built) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return built == 1;
#else
    return 0;
#endif
}
extern "C" long SWA_DEV_SYM(prefill_wgmma_launches)(void) { return swa_prefill_wgmma_count; }

#if SWA_TENSOR_CORE_ENGINE
/* The warp-specialised kernel over `items` work items (num_work x
 * sub_tiles x kv heads): its register split checked, and the grid the
 * chooser picked (swa_cuda_tuning.prefill_ws_ctas): for 128-row tiles
 * with more items than CTAs, the persistent grid of one CTA per SM (the
 * default) or fewer, each CTA running its share of the items
 * (swa_ws_sched); else one CTA per item.  The persistent grid was slower
 * while its producer was the bottleneck; with the leaner producer
 * (swa_ws_gather) it is the faster grid on both prefill shapes
 * (docs/kernels.md, Measured choices). */
template <class Cfg, typename T, bool MUT>
static swa_status swa_prefill_launch_ws(swa_cuda_prefill_params p, int items, const char *split,
                                        swa_prefill_choice *choice, cudaStream_t stream, swa_error *err)
{
    auto kernel = swa_prefill_wgmma_ws_kernel<Cfg, T, MUT>;
    const int smem = Cfg::SMEM_BYTES;
    /* the persistent grid where the chooser says (128-row tiles only), else one CTA per item */
    const bool persist = choice->persistent;
    const int ctas = persist ? choice->ctas : items;
    if constexpr (Cfg::WG == 2) {
        /* setmaxnreg moves registers from the producer to the consumers
         * inside the CTA's allocation: the launch must get at least
         * (128 x 56 + 256 x 224) / 384 = 168 per thread, or the consumers'
         * increase never completes (a hang) */
        static int regs = -1; /* asked once per instantiation */
        if (regs < 0) {
            cudaFuncAttributes fa;
            SWA_CUDA_TRY(cudaFuncGetAttributes(&fa, kernel));
            regs = fa.numRegs;
        }
        const int need = (Cfg::PRODUCERS * Cfg::PRODUCER_REGS + Cfg::CONSUMERS * Cfg::CONSUMER_REGS) / Cfg::THREADS;
        if (regs < need)
            return swa_error_set(err, SWA_ERR_DEVICE,
                                 "cuda prefill: the warp-specialised wgmma kernel was built with %d registers "
                                 "per thread; its setmaxnreg split (producer %d, consumers %d) needs %d",
                                 regs, Cfg::PRODUCER_REGS, Cfg::CONSUMER_REGS, need);
    }
    p.ws_items = items;
    SWA_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    kernel<<<(unsigned)ctas, Cfg::THREADS, smem, stream>>>(p);
    SWA_CUDA_TRY_LAUNCH("prefill kernel");
    swa_prefill_wgmma_count++;
    char grid[80];
    if (persist)
        snprintf(grid, sizeof grid, ", persistent: %d CTA%s for %d work items", ctas, ctas == 1 ? "" : "s", items);
    else grid[0] = '\0';
    swa_cuda_note_kernel("prefill wgmma-ws: %d consumer warpgroup%s + producer, %d-stage ring, K/V by cp.async%s%s",
                         Cfg::WG, Cfg::WG == 1 ? "" : "s", Cfg::STAGES, grid, split);
    return SWA_OK;
}
#endif

/* WS: the warp-specialised wgmma engine; else mma.sync (or the portable engine) */
template <class Cfg, typename T, bool MUT, bool WS = false>
static swa_status swa_prefill_launch_cfg(const swa_cuda_prefill_params *pp, int num_work, bool write_lse,
                                         swa_prefill_choice choice, cudaStream_t stream, swa_error *err)
{
    swa_cuda_prefill_params p = *pp;
    if (!write_lse) p.lse = NULL;
    /* the kernel instantiated must be the one chosen (launch_choice.c),
     * or the record and the gate would describe another launch */
    if (Cfg::ROWS != choice.rows || Cfg::NW != choice.warps)
        return swa_error_set(err, SWA_ERR_DEVICE,
                             "cuda prefill: the launch chooser picked %s (%d rows, %d warps) but the dispatch "
                             "instantiated a kernel of %d rows, %d warps",
                             swa_prefill_kernel_name(choice.kernel), choice.rows, choice.warps, Cfg::ROWS, Cfg::NW);
    p.sub_tiles = p.cta_tile_q > Cfg::ROWS ? p.cta_tile_q / Cfg::ROWS : 1;
    const char *split = p.split_kv ? ", split-KV + merge" : "";
    if (num_work > 0) {
        const long long items = (long long)num_work * p.sub_tiles * p.num_kv_heads;
        if (items > INT_MAX)
            return swa_error_set(err, SWA_ERR_UNSUPPORTED, "cuda prefill: %lld CTAs (work items x heads) over the grid limit",
                                 items);
#if SWA_TENSOR_CORE_ENGINE
        if constexpr (WS) {
            swa_status st = swa_prefill_launch_ws<Cfg, T, MUT>(p, (int)items, split, &choice, stream, err);
            if (st != SWA_OK) return st;
        } else
#endif
        {
            void (*kernel)(const swa_cuda_prefill_params) = swa_prefill_kernel<Cfg, T, MUT>;
            swa_cuda_note_kernel("prefill %s: %d rows per CTA, %d warps%s", SWA_ENGINE_NAME, Cfg::ROWS, Cfg::NW,
                                 split);
            SWA_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::SMEM_BYTES));
            kernel<<<(unsigned)items, Cfg::THREADS, Cfg::SMEM_BYTES, stream>>>(p);
            SWA_CUDA_TRY_LAUNCH("prefill kernel");
        }
    }
    if (p.split_kv && p.total_qo > 0) {
        long long warps = (long long)p.total_qo * p.num_qo_heads;
        unsigned blocks = (unsigned)((warps + SWA_MERGE_WARPS - 1) / SWA_MERGE_WARPS);
        swa_prefill_merge_kernel<T, Cfg::D, MUT><<<blocks, 128, 0, stream>>>(p);
        SWA_CUDA_TRY_LAUNCH("prefill merge kernel");
    }
    swa_launch rec = {{0}};
    choice.launches = num_work > 0;
    choice.merge = p.split_kv && p.total_qo > 0;
    swa_launch_add_prefill(&rec, &choice, Cfg::D, swa_cuda_dtype_of<T>());
    swa_cuda_note_launch(&rec);
    return SWA_OK;
}

/* The kernel of each variant the chooser names (launch_choice.c has the
 * rule, swa_prefill_choose): 16-row tiles as one row group with the keys
 * over 4 warps; 64 rows as 4 warps x 16; 128 rows as 4 warps x 32 (two
 * m-tiles share each K/V fragment); the Hopper wgmma engine as one or two
 * consumer warpgroups and a producer; head_dim 256 on them one consumer warpgroup of 64
 * rows (O takes 128 registers per thread) with a 128-row plan tile as two
 * CTAs. */
template <int D, typename T, bool MUT>
static swa_status swa_prefill_launch_d(const swa_cuda_prefill_params *p, int num_work, bool write_lse,
                                       cudaStream_t stream, swa_error *err)
{
    swa_launch_target target;
    swa_cuda_launch_target(&target);
    swa_prefill_shape shape = {D, p->cta_tile_q, num_work, p->num_kv_heads, p->total_qo, p->split_kv};
    swa_prefill_choice c;
    swa_status st = swa_prefill_choose(&target, &shape, &c, err);
    if (st != SWA_OK) return st;
    switch (c.kernel) {
#if !SWA_TENSOR_CORE_ENGINE
    case SWA_PK_PORTABLE_16:
        return swa_prefill_launch_cfg<swa_portable_cfg<D>, T, MUT>(p, num_work, write_lse, c, stream, err);
#else
    case SWA_PK_MMA_16:
        return swa_prefill_launch_cfg<swa_engine_cfg<D, 1, 4>, T, MUT>(p, num_work, write_lse, c, stream, err);
    case SWA_PK_MMA_64:
        return swa_prefill_launch_cfg<swa_engine_cfg<D, 4, 1>, T, MUT>(p, num_work, write_lse, c, stream, err);
    case SWA_PK_MMA_128:
        if constexpr (D <= 128)
            return swa_prefill_launch_cfg<swa_engine_cfg<D, 4, 1, 2>, T, MUT>(p, num_work, write_lse, c, stream, err);
        break;
    case SWA_PK_WS_64:
        return swa_prefill_launch_cfg<swa_wgmma_ws_cfg<D, 1>, T, MUT, true>(p, num_work, write_lse, c, stream, err);
    case SWA_PK_WS_128:
        if constexpr (D <= 128)
            return swa_prefill_launch_cfg<swa_wgmma_ws_cfg<D, 2>, T, MUT, true>(p, num_work, write_lse, c, stream, err);
        break;
#endif
    default: break;
    }
    return swa_error_set(err, SWA_ERR_DEVICE, "cuda prefill: the launch chooser picked %s for head_dim %d, which this "
                         "build has no kernel for", swa_prefill_kernel_name(c.kernel), D);
}

template <typename T, bool MUT>
static swa_status swa_prefill_launch_t(const swa_cuda_prefill_params *p, int head_dim, int num_work,
                                       bool write_lse, cudaStream_t stream, swa_error *err)
{
    switch (head_dim) {
    case 64: return swa_prefill_launch_d<64, T, MUT>(p, num_work, write_lse, stream, err);
    case 128: return swa_prefill_launch_d<128, T, MUT>(p, num_work, write_lse, stream, err);
    case 256: return swa_prefill_launch_d<256, T, MUT>(p, num_work, write_lse, stream, err);
    default: return swa_error_set(err, SWA_ERR_UNSUPPORTED, "cuda prefill: head_dim %d not compiled (64, 128, 256)", head_dim);
    }
}

swa_status swa_cuda_prefill_launch(const swa_cuda_prefill_params *p, swa_dtype dtype, int head_dim,
                                   int num_work, bool write_lse, cudaStream_t stream, swa_error *err)
{
    const char *env_engine = NULL;
    swa_status est = swa_cuda_prefill_engine_from_env(err, &env_engine);
    if (est != SWA_OK) return est;
#if SWA_TENSOR_CORE_ENGINE
    if (swa_cuda_tune.prefill_engine != 0 && !swa_prefill_wgmma_ready() && env_engine)
        return swa_error_set(err, SWA_ERR_UNSUPPORTED,
                             "SWADIFF_CUDA_PREFILL_ENGINE=%.40s: this GPU or build has no wgmma engine (it needs "
                             "compute capability 9.0 and kernels built for sm_90a)",
                             env_engine);
#endif
    if (p->cta_tile_q != 16 && p->cta_tile_q != 64 && p->cta_tile_q != 128)
        return swa_error_set(err, SWA_ERR_INVALID, "cuda prefill: plan cta_tile_q %d (expected 16, 64 or 128)",
                             p->cta_tile_q);
    if (p->cta_tile_kv <= 0)
        return swa_error_set(err, SWA_ERR_INVALID, "cuda prefill: plan cta_tile_kv %d must be > 0", p->cta_tile_kv);
    bool mut = p->mutant != SWA_MUTANT_NONE;
    if (dtype == SWA_DTYPE_FP16)
        return mut ? swa_prefill_launch_t<swa_half_t, true>(p, head_dim, num_work, write_lse, stream, err)
                   : swa_prefill_launch_t<swa_half_t, false>(p, head_dim, num_work, write_lse, stream, err);
    if (dtype == SWA_DTYPE_BF16)
        return mut ? swa_prefill_launch_t<swa_bf16_t, true>(p, head_dim, num_work, write_lse, stream, err)
                   : swa_prefill_launch_t<swa_bf16_t, false>(p, head_dim, num_work, write_lse, stream, err);
    return swa_error_set(err, SWA_ERR_UNSUPPORTED, "cuda prefill: dtype %s not supported (fp16, bf16)",
                         swa_dtype_name(dtype));
}

} /* namespace SWA_NS */
