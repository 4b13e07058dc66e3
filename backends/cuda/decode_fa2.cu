/* decode_fa2.cu — FlashInfer-style batch decode on CUDA, executing a
 * swa_decode_fa2_plan (backends/plan.h), plus its split-KV merge.
 *
 * Grid: (grid_work, num_kv_heads, ceil(group_size / 16)).  One CTA per
 * (request, KV chunk, kv head) holds all qo heads of the group as the 16
 * rows of one tensor-core tile; 4 warps split each 64-key tile (16 keys
 * each), K/V arrive through a 3-stage cp.async ring of 16-byte loads.
 * Hopper bulk copies (cp.async.bulk, one 256-byte copy per key row issued
 * by warp 0, a transaction barrier per stage) were measured against it and
 * lost, so they were dropped; HND pages or 64-token pages change nothing.
 * The K/V addressing is set up once per CTA (swa_kv_addr: strides, and the
 * page division by multiply) instead of a 64-bit product chain and a
 * power-of-two branch per copy.  The figures: docs/kernels.md, Measured
 * choices.
 * The chunk starts at align_down(window start, page_size), so pages wholly
 * before the window are never loaded; the per-element mask drops k < ws.
 *
 * CUDA-graph mode: num_work and num_requests are read from device memory
 * (p.scalars), so a graph captured with a padded grid replays correctly
 * after the plan arrays are overwritten in place with a larger batch;
 * CTAs past num_work exit at once.
 *
 * Test: tests/gpu_test_kernels.c (decode_fa2 split/non-split, graph replay). */
#include "backends/cuda/cuda_internal.cuh"
#include "backends/cuda/attn_engine.cuh"

#include <limits.h>

namespace SWA_NS {

template <int D, typename T, bool MUT> struct swa_fa2_prob {
    const swa_cuda_fa2_params &p;
    const void *q, *k, *v;
    float sm_scale, soft_cap;
    swa_mutant m; /* SWA_MUTANT_NONE at compile time in the normal build */
    static constexpr bool FA_STYLE_MUTANTS = true; /* engine: edge-tile and finite-sentinel mutants live here */
    int kv_begin, kv_end;
    int r, chunk, kvh, row_base, num_pages, window_lo;
    int page_begin;

    __device__ swa_fa2_prob(const swa_cuda_fa2_params &prm) : p(prm)
    {
        q = p.q; k = p.k; v = p.v;
        m = MUT ? (swa_mutant)p.mutant : SWA_MUTANT_NONE;
        sm_scale = p.sm_scale;
        soft_cap = m == SWA_MUTANT_SOFTCAP_COMPILED_OUT ? 0.f : p.soft_cap;
    }

    template <int ROWS> __device__ bool init()
    {
        /* 1-D grid, kv heads fastest: the CTAs of one request start
         * together and read the same pages (DRAM locality) */
        int x = blockIdx.x;
        kvh = x % p.num_kv_heads;
        x /= p.num_kv_heads;
        row_base = (x % p.row_blocks) * 16;
        int w = x / p.row_blocks;
        if (w >= p.scalars[0]) return false; /* padded grid (graph mode) */
        r = p.work_request[w];
        chunk = p.work_chunk[w];
        page_begin = p.kv_indptr[r];
        num_pages = p.kv_indptr[r + 1] - page_begin;
        int kv_len = swa_paged_kv_len(num_pages, p.page_size, p.kv_last_page_len[r]);
        int ws = swa_decode_window_start(kv_len, p.window_left, p.chunk_size, m);
        int base = swa_decode_chunk_base(ws, p.page_size, m);
        kv_begin = base + chunk * p.kv_chunk_size;
        kv_end = min(kv_begin + p.kv_chunk_size, kv_len);
        int pos = kv_len - 1;
        window_lo = swa_mask_row_range(pos, pos, p.window_left, -1, p.chunk_size, true, true, m).lo;
        addr.paged<D>(p.page_size, p.num_kv_heads, kvh, p.nhd);
        return true;
    }

    __device__ int qo_head(int hg) const { return swa_qo_head_of(kvh, hg, p.group_size, p.num_kv_heads, m); }

    __device__ swa_row_info row(int local) const
    {
        swa_row_info ri;
        int hg = row_base + local;
        ri.valid = hg < p.group_size;
        ri.q_off = ri.valid ? ((long long)r * p.num_qo_heads + qo_head(hg)) * D : 0;
        ri.lo = ri.valid ? window_lo : INT_MIN;
        ri.hi = INT_MAX;
        return ri;
    }

    __device__ float masked_low_logit() const { return -CUDART_INF_F; }

    __device__ int lookup(int t) const
    {
        int entry = MUT ? swa_page_entry(page_begin, num_pages, t, p.page_size, m)
                        : page_begin + addr.page_of(t);
        return p.kv_indices[entry];
    }
    swa_kv_addr addr; /* set in init(): the page size's division and the strides */
    __device__ long long offset(int page, int t) const { return addr.offset(page, t); }

    __device__ void write_row(int local, int c, const float (&o)[8], float mx, float d) const
    {
        int hg = row_base + local;
        if (hg >= p.group_size) return;
        int h = qo_head(hg);
        float lse2 = swa_state_lse(mx, d);
        if (p.split_kv) {
            long long rowi = (long long)(p.req_partial_offset[r] + chunk) * p.num_qo_heads + h;
            swa_store8f(p.o_part + rowi * D + c * 8, o);
            if (c == 0) p.lse_part[rowi] = lse2;
            return;
        }
        long long rowi = (long long)r * p.num_qo_heads + h;
        swa_store8(reinterpret_cast<T *>(p.out) + rowi * D + c * 8, o);
        if (c == 0 && p.lse) p.lse[rowi] = swa_lse_store_value(lse2, m);
    }
};

/* Mutant OOB_WRITE: one element just past the end of out, as the host
 * emulation does (the harness's guard bytes must catch it). */
__global__ void swa_fa2_oob_write_kernel(unsigned char *at, int bytes, unsigned char value)
{
    for (int i = 0; i < bytes; i++) at[i] = value;
}

/* Mutant DEVICE_FAULT: a store into the never-mapped first page of the
 * address space, far outside every allocation: an illegal-address fault
 * (reported as a device error; the process's CUDA context is lost, as with
 * a real bug). */
__global__ void swa_fa2_fault_kernel(unsigned char *out)
{
    volatile unsigned char *wild = (unsigned char *)(uintptr_t)0x100;
    *wild = out != NULL;
}

template <class Cfg, typename T, bool MUT>
__global__ void __launch_bounds__(Cfg::THREADS) swa_fa2_kernel(const swa_cuda_fa2_params p)
{
    extern __shared__ __align__(128) unsigned char smem[];
    swa_fa2_prob<Cfg::D, T, MUT> prob(p);
    if (!prob.template init<Cfg::ROWS>()) return;
    swa_attn_engine<Cfg, T>(prob, smem);
}

/* One warp per (request, qo head); the grid is padded to the capacity, the
 * live request count comes from device memory. */
template <typename T, int D, bool MUT>
__global__ void __launch_bounds__(128) swa_fa2_merge_kernel(const swa_cuda_fa2_params p)
{
    int warp_global = blockIdx.x * SWA_MERGE_WARPS + threadIdx.x / SWA_WARP_SIZE;
    int lane = threadIdx.x % SWA_WARP_SIZE;
    int num_requests = p.scalars[1];
    if (warp_global >= num_requests * p.num_qo_heads) return;
    int r = warp_global / p.num_qo_heads, head = warp_global % p.num_qo_heads;
    T *out_row = reinterpret_cast<T *>(p.out) + ((size_t)r * p.num_qo_heads + head) * D;
    float *lse_out = p.lse ? p.lse + (size_t)r * p.num_qo_heads + head : NULL;
    swa_merge_row<T, D, MUT>(p.o_part, p.lse_part, p.num_qo_heads, head, p.req_partial_offset[r], 1,
                             p.req_num_chunks[r], out_row, lse_out, p.mutant, lane);
}

// ----------------------------------------------------------------------------
// launcher

template <class Cfg, typename T, bool MUT>
static swa_status swa_fa2_launch_cfg(const swa_cuda_fa2_params *pp, int grid_work, int capacity_requests,
                                     bool write_lse, swa_decode_choice choice, cudaStream_t stream, swa_error *err)
{
    constexpr int D = Cfg::D;
    if (Cfg::NW != choice.warps)
        return swa_error_set(err, SWA_ERR_DEVICE, "cuda decode_fa2: the launch chooser picked %d warps, the dispatch "
                             "instantiated %d", choice.warps, Cfg::NW);
    swa_cuda_fa2_params p = *pp;
    if (!write_lse) p.lse = NULL;
    p.row_blocks = (p.group_size + 15) / 16;
    if (grid_work > 0) {
        auto kernel = swa_fa2_kernel<Cfg, T, MUT>;
        SWA_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::SMEM_BYTES));
        dim3 grid((unsigned)((long long)grid_work * p.num_kv_heads * p.row_blocks));
        kernel<<<grid, Cfg::THREADS, Cfg::SMEM_BYTES, stream>>>(p);
        SWA_CUDA_TRY_LAUNCH("decode_fa2 kernel");
        swa_cuda_note_kernel("decode_fa2 %s: %d warps, %d-key tiles%s", SWA_ENGINE_NAME, Cfg::NW, Cfg::TK,
                             p.split_kv ? ", split-KV + merge" : "");
    }
    if (p.split_kv && capacity_requests > 0) {
        long long warps = (long long)capacity_requests * p.num_qo_heads;
        unsigned blocks = (unsigned)((warps + SWA_MERGE_WARPS - 1) / SWA_MERGE_WARPS);
        swa_fa2_merge_kernel<T, D, MUT><<<blocks, 128, 0, stream>>>(p);
        SWA_CUDA_TRY_LAUNCH("decode_fa2 merge kernel");
    }
    swa_launch rec = {{0}};
    choice.row_blocks = p.row_blocks; /* what the grid was sized by */
    swa_launch_add_decode(&rec, &choice, false, D, swa_cuda_dtype_of<T>());
    swa_cuda_note_launch(&rec);
    if (MUT && p.mutant == SWA_MUTANT_OOB_WRITE && p.oob_at && p.oob_bytes > 0) {
        swa_fa2_oob_write_kernel<<<1, 1, 0, stream>>>(p.oob_at, p.oob_bytes, p.oob_value);
        SWA_CUDA_TRY_LAUNCH("decode_fa2 oob write");
    }
    if (MUT && p.mutant == SWA_MUTANT_DEVICE_FAULT) {
        swa_fa2_fault_kernel<<<1, 1, 0, stream>>>((unsigned char *)p.out);
        SWA_CUDA_TRY_LAUNCH("decode_fa2 device fault");
    }
    return SWA_OK;
}

/* keys of each KV tile split over 2 warps (32 keys; 4 CTAs per SM, the default)
 * or 4 (64 keys; 2 CTAs per SM) */
template <int D, typename T, bool MUT>
static swa_status swa_fa2_launch_d(const swa_cuda_fa2_params *p, int grid_work, int capacity_requests,
                                   bool write_lse, cudaStream_t stream, swa_error *err)
{
    swa_launch_target target;
    swa_cuda_launch_target(&target);
    swa_decode_shape shape = {false, D, p->group_size, grid_work, capacity_requests, p->split_kv, 0, 0};
    swa_decode_choice c;
    swa_status st = swa_decode_choose(&target, &shape, &c, err);
    if (st != SWA_OK) return st;
#if !SWA_TENSOR_CORE_ENGINE
    return swa_fa2_launch_cfg<swa_portable_cfg<D>, T, MUT>(p, grid_work, capacity_requests, write_lse, c, stream, err);
#else
    if (c.kernel == SWA_DK_MMA_W2)
        return swa_fa2_launch_cfg<swa_engine_cfg<D, 1, 2>, T, MUT>(p, grid_work, capacity_requests, write_lse, c, stream, err);
    return swa_fa2_launch_cfg<swa_engine_cfg<D, 1, 4>, T, MUT>(p, grid_work, capacity_requests, write_lse, c, stream, err);
#endif
}

template <typename T, bool MUT>
static swa_status swa_fa2_launch_t(const swa_cuda_fa2_params *p, int head_dim, int grid_work,
                                   int capacity_requests, bool write_lse, cudaStream_t stream, swa_error *err)
{
    switch (head_dim) {
    case 64: return swa_fa2_launch_d<64, T, MUT>(p, grid_work, capacity_requests, write_lse, stream, err);
    case 128: return swa_fa2_launch_d<128, T, MUT>(p, grid_work, capacity_requests, write_lse, stream, err);
    case 256: return swa_fa2_launch_d<256, T, MUT>(p, grid_work, capacity_requests, write_lse, stream, err);
    default: return swa_error_set(err, SWA_ERR_UNSUPPORTED, "cuda decode_fa2: head_dim %d not compiled (64, 128, 256)", head_dim);
    }
}

swa_status swa_cuda_fa2_launch(const swa_cuda_fa2_params *p, swa_dtype dtype, int head_dim, int grid_work,
                               int capacity_requests, bool write_lse, cudaStream_t stream, swa_error *err)
{
    bool mut = p->mutant != SWA_MUTANT_NONE;
    if (dtype == SWA_DTYPE_FP16)
        return mut ? swa_fa2_launch_t<swa_half_t, true>(p, head_dim, grid_work, capacity_requests, write_lse, stream, err)
                   : swa_fa2_launch_t<swa_half_t, false>(p, head_dim, grid_work, capacity_requests, write_lse, stream, err);
    if (dtype == SWA_DTYPE_BF16)
        return mut ? swa_fa2_launch_t<swa_bf16_t, true>(p, head_dim, grid_work, capacity_requests, write_lse, stream, err)
                   : swa_fa2_launch_t<swa_bf16_t, false>(p, head_dim, grid_work, capacity_requests, write_lse, stream, err);
    return swa_error_set(err, SWA_ERR_UNSUPPORTED, "cuda decode_fa2: dtype %s not supported (fp16, bf16)",
                         swa_dtype_name(dtype));
}

} /* namespace SWA_NS */
