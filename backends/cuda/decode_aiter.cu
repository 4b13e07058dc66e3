/* decode_aiter.cu — AITER PA v1-style paged decode on CUDA, executing a
 * swa_decode_aiter_plan (backends/plan.h): partition kernel + reduce.
 *
 * Grid: (num_seqs, num_kv_heads, max_num_partitions * ceil(group/16)).
 * Partition j of seq s covers tokens [j * partition_size, min(.., ctx)),
 * read through block_tables; all group heads of the kv head are the 16
 * rows of one tensor-core tile (2 warps split each 32-key tile, or 4 each
 * 64-key tile).  AITER's
 * window: with sliding_window S > 0 token t is masked when t < ctx - S.
 * Each partition writes (max_logit, exp_sum, tmp_out) per head — here in
 * the exp2 domain — and the reduce kernel combines the partitions that
 * exist (ceil(ctx / partition_size)).  Partitions wholly before the window
 * skip their loads (nothing visible) unless a mutant is compiled in:
 * SOFTCAP_BEFORE_MASK gives masked keys logit -soft_cap, as AITER does.
 *
 * Test: tests/gpu_test_kernels.c (decode_aiter with and without window). */
#include "backends/cuda/cuda_internal.cuh"
#include "backends/cuda/attn_engine.cuh"

#include <limits.h>

namespace SWA_NS {

template <int D, bool MUT> struct swa_aiter_prob {
    const swa_cuda_aiter_params &p;
    const void *q, *k, *v;
    float sm_scale, soft_cap;
    swa_mutant m; /* SWA_MUTANT_NONE at compile time in the normal build */
    static constexpr bool FA_STYLE_MUTANTS = false; /* engine: edge-tile and finite-sentinel mutants live here */
    int kv_begin, kv_end;
    int s, kvh, part, row_base, ctx, num_blocks, window_lo;
    const int *blocks;

    __device__ swa_aiter_prob(const swa_cuda_aiter_params &prm) : p(prm)
    {
        q = p.q; k = p.k; v = p.v;
        m = MUT ? (swa_mutant)p.mutant : SWA_MUTANT_NONE;
        sm_scale = p.scale;
        soft_cap = p.soft_cap;
    }

    template <int ROWS> __device__ bool init()
    {
        /* 1-D grid, kv heads fastest, then row blocks, partitions, seqs:
         * CTAs reading the same pages run together (DRAM locality) */
        int x = blockIdx.x;
        kvh = x % p.num_kv_heads;
        x /= p.num_kv_heads;
        row_base = (x % p.row_blocks) * 16;
        x /= p.row_blocks;
        part = x % p.max_num_partitions;
        s = x / p.max_num_partitions;
        ctx = p.context_lens[s];
        kv_begin = part * p.partition_size;
        if (kv_begin >= ctx) return false; /* the reduce never reads it */
        kv_end = min(kv_begin + p.partition_size, ctx);
        window_lo = p.sliding_window > 0 ? ctx - p.sliding_window : INT_MIN;
        /* nothing visible: an empty partition, no loads (SOFTCAP_BEFORE_MASK
         * keeps the loads so it sees its -soft_cap logits; any other mutant
         * skips as the normal build does, so evicted pages before the window
         * stay unread as in the host emulation) */
        bool quirk = MUT && m == SWA_MUTANT_SOFTCAP_BEFORE_MASK && soft_cap > 0.f;
        if (!quirk && kv_end <= window_lo) kv_end = kv_begin;
        blocks = p.block_tables + (long long)s * p.max_blocks_per_seq;
        num_blocks = (ctx + p.block_size - 1) / p.block_size;
        addr.paged<D>(p.block_size, p.num_kv_heads, kvh, p.nhd);
        return true;
    }

    __device__ int qo_head(int hg) const { return swa_qo_head_of(kvh, hg, p.group_size, p.num_kv_heads, m); }

    __device__ swa_row_info row(int local) const
    {
        swa_row_info ri;
        int hg = row_base + local;
        ri.valid = hg < p.group_size;
        ri.q_off = ri.valid ? ((long long)s * p.num_qo_heads + qo_head(hg)) * D : 0;
        ri.lo = ri.valid ? window_lo : INT_MIN;
        ri.hi = INT_MAX;
        return ri;
    }

    /* AITER masks with -FLT_MAX before its soft cap: a masked key's logit
     * becomes -soft_cap (mutant SOFTCAP_BEFORE_MASK); the spec excludes it */
    __device__ float masked_low_logit() const
    {
        if (m == SWA_MUTANT_SOFTCAP_BEFORE_MASK && soft_cap > 0.f) return -soft_cap * SWA_LOG2E;
        return -CUDART_INF_F;
    }

    __device__ int lookup(int t) const
    {
        int entry = MUT ? swa_page_entry(0, num_blocks, t, p.block_size, m)
                        : addr.page_of(t);
        return blocks[entry];
    }
    swa_kv_addr addr; /* set in init(): the page size's division and the strides */
    __device__ long long offset(int page, int t) const { return addr.offset(page, t); }

    __device__ void write_row(int local, int c, const float (&o)[8], float mx, float d) const
    {
        int hg = row_base + local;
        if (hg >= p.group_size) return;
        long long idx = ((long long)s * p.num_qo_heads + qo_head(hg)) * p.max_num_partitions + part;
        if (c * 8 >= swa_pv_dims(D, m)) { /* HEAD_DIM_LOOP_TRUNCATED: the P.V loop never reached these dims */
            const float zero[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
            swa_store8f(p.tmp_out + idx * D + c * 8, zero);
        } else {
            swa_store8f(p.tmp_out + idx * D + c * 8, o);
        }
        if (c == 0) {
            p.max_logits[idx] = mx;
            p.exp_sums[idx] = d;
        }
    }
};

template <class Cfg, typename T, bool MUT>
__global__ void __launch_bounds__(Cfg::THREADS) swa_aiter_kernel(const swa_cuda_aiter_params p)
{
    extern __shared__ __align__(128) unsigned char smem[];
    swa_aiter_prob<Cfg::D, MUT> prob(p);
    if (!prob.template init<Cfg::ROWS>()) return;
    swa_attn_engine<Cfg, T>(prob, smem);
}

/* One warp per (seq, qo head): out = sum_j w_j o_j / sum_j w_j with
 * w_j = exp_sum_j * 2^(max_j - max) over the partitions that exist; as the
 * host emulation's reduce (empty partitions (-inf, 0) skipped, den == 0 ->
 * 0, a NaN from a poisoned key stays NaN). */
template <typename T, int D>
__global__ void __launch_bounds__(128) swa_aiter_reduce_kernel(const swa_cuda_aiter_params p)
{
    constexpr int PER = D / SWA_WARP_SIZE;
    int warp_global = blockIdx.x * SWA_MERGE_WARPS + threadIdx.x / SWA_WARP_SIZE;
    int lane = threadIdx.x % SWA_WARP_SIZE;
    if (warp_global >= p.num_seqs * p.num_qo_heads) return;
    int s = warp_global / p.num_qo_heads, h = warp_global % p.num_qo_heads;
    int ctx = p.context_lens[s];
    int parts = (ctx + p.partition_size - 1) / p.partition_size;
    long long base = ((long long)s * p.num_qo_heads + h) * p.max_num_partitions;
    float gmax = -CUDART_INF_F;
    for (int j = 0; j < parts; j++)
        if (p.max_logits[base + j] > gmax) gmax = p.max_logits[base + j];
    float acc[PER];
#pragma unroll
    for (int e = 0; e < PER; e++) acc[e] = 0.f;
    float den = 0.f;
    for (int j = 0; j < parts; j++) {
        float mj = p.max_logits[base + j], sj = p.exp_sums[base + j];
        if (mj == -CUDART_INF_F && sj == 0.f) continue; /* empty partition */
        float w = sj * exp2f(mj - gmax);
        den += w;
        const float *src = p.tmp_out + (base + j) * D + lane * PER;
#pragma unroll
        for (int e = 0; e < PER; e++) acc[e] += w * src[e];
    }
    T *out_row = reinterpret_cast<T *>(p.out) + ((long long)s * p.num_qo_heads + h) * D;
    if constexpr (PER % 2 == 0) {
#pragma unroll
        for (int e = 0; e < PER; e += 2) {
            float a = den == 0.f ? 0.f : acc[e] / den, b = den == 0.f ? 0.f : acc[e + 1] / den;
            *reinterpret_cast<uint32_t *>(out_row + lane * PER + e) = swa_dt<T>::pack(a, b);
        }
    } else { /* one dim per lane (head_dim 64 on a 64-lane wavefront) */
        swa_store1(out_row + lane * PER, den == 0.f ? 0.f : acc[0] / den);
    }
}

// ----------------------------------------------------------------------------
// launcher

template <class Cfg, typename T, bool MUT>
static swa_status swa_aiter_launch_cfg(const swa_cuda_aiter_params *pp, swa_decode_choice choice, cudaStream_t stream,
                                       swa_error *err)
{
    constexpr int D = Cfg::D;
    if (Cfg::NW != choice.warps)
        return swa_error_set(err, SWA_ERR_DEVICE, "cuda decode_aiter: the launch chooser picked %d warps, the "
                             "dispatch instantiated %d", choice.warps, Cfg::NW);
    swa_cuda_aiter_params p = *pp;
    p.row_blocks = (p.group_size + 15) / 16;
    if (p.num_seqs <= 0) return SWA_OK;
    if (p.max_num_partitions > 0) {
        auto kernel = swa_aiter_kernel<Cfg, T, MUT>;
        SWA_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::SMEM_BYTES));
        dim3 grid((unsigned)((long long)p.num_seqs * p.num_kv_heads * p.max_num_partitions * p.row_blocks));
        kernel<<<grid, Cfg::THREADS, Cfg::SMEM_BYTES, stream>>>(p);
        SWA_CUDA_TRY_LAUNCH("decode_aiter kernel");
        swa_cuda_note_kernel("decode_aiter %s: %d warps, %d-key tiles, partitions of %d + reduce", SWA_ENGINE_NAME,
                             Cfg::NW, Cfg::TK, p.partition_size);
    }
    long long warps = (long long)p.num_seqs * p.num_qo_heads;
    swa_aiter_reduce_kernel<T, D><<<(unsigned)((warps + SWA_MERGE_WARPS - 1) / SWA_MERGE_WARPS), 128, 0, stream>>>(p);
    SWA_CUDA_TRY_LAUNCH("decode_aiter reduce kernel");
    swa_launch rec = {{0}};
    choice.row_blocks = p.row_blocks; /* what the grid was sized by */
    choice.partitions = p.max_num_partitions;
    swa_launch_add_decode(&rec, &choice, true, D, swa_cuda_dtype_of<T>());
    swa_cuda_note_launch(&rec);
    return SWA_OK;
}

/* keys of each KV tile split over 2 warps (32 keys; 4 CTAs per SM, the default)
 * or 4 (64 keys; 2 CTAs per SM) */
template <int D, typename T, bool MUT>
static swa_status swa_aiter_launch_d(const swa_cuda_aiter_params *p, cudaStream_t stream, swa_error *err)
{
    swa_launch_target target;
    swa_cuda_launch_target(&target);
    swa_decode_shape shape = {true, D, p->group_size, 0, 0, false, p->num_seqs, p->max_num_partitions};
    swa_decode_choice c;
    swa_status st = swa_decode_choose(&target, &shape, &c, err);
    if (st != SWA_OK) return st;
#if !SWA_TENSOR_CORE_ENGINE
    return swa_aiter_launch_cfg<swa_portable_cfg<D>, T, MUT>(p, c, stream, err);
#else
    if (c.kernel == SWA_DK_MMA_W2)
        return swa_aiter_launch_cfg<swa_engine_cfg<D, 1, 2>, T, MUT>(p, c, stream, err);
    return swa_aiter_launch_cfg<swa_engine_cfg<D, 1, 4>, T, MUT>(p, c, stream, err);
#endif
}

template <typename T, bool MUT>
static swa_status swa_aiter_launch_t(const swa_cuda_aiter_params *p, int head_dim, cudaStream_t stream, swa_error *err)
{
    switch (head_dim) {
    case 64: return swa_aiter_launch_d<64, T, MUT>(p, stream, err);
    case 128: return swa_aiter_launch_d<128, T, MUT>(p, stream, err);
    case 256: return swa_aiter_launch_d<256, T, MUT>(p, stream, err);
    default: return swa_error_set(err, SWA_ERR_UNSUPPORTED, "cuda decode_aiter: head_dim %d not compiled (64, 128, 256)", head_dim);
    }
}

swa_status swa_cuda_aiter_launch(const swa_cuda_aiter_params *p, swa_dtype dtype, int head_dim,
                                 cudaStream_t stream, swa_error *err)
{
    if (p->partition_size <= 0)
        return swa_error_set(err, SWA_ERR_INVALID, "cuda decode_aiter: plan partition_size %d must be > 0", p->partition_size);
    bool mut = p->mutant != SWA_MUTANT_NONE;
    if (dtype == SWA_DTYPE_FP16)
        return mut ? swa_aiter_launch_t<swa_half_t, true>(p, head_dim, stream, err)
                   : swa_aiter_launch_t<swa_half_t, false>(p, head_dim, stream, err);
    if (dtype == SWA_DTYPE_BF16)
        return mut ? swa_aiter_launch_t<swa_bf16_t, true>(p, head_dim, stream, err)
                   : swa_aiter_launch_t<swa_bf16_t, false>(p, head_dim, stream, err);
    return swa_error_set(err, SWA_ERR_UNSUPPORTED, "cuda decode_aiter: dtype %s not supported (fp16, bf16)",
                         swa_dtype_name(dtype));
}

} /* namespace SWA_NS */
