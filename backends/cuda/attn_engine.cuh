/* attn_engine.cuh — the tensor-core attention tile engine shared by the
 * three CUDA kernels (prefill, decode_fa2, decode_aiter).
 *
 * One CTA = WR row groups x WK key splits of warps.  Each warp owns 16
 * packed query rows (GQA: the qo heads of one kv head stacked) and, per KV
 * tile, NT keys.  Prefill uses WR=4, WK=1 (64 rows share every K/V tile);
 * decode uses WR=1, WK=4 (the group's rows, keys split over 4 warps, warp
 * states merged through shared memory at the end).
 *
 * Per KV tile: cp.async 16-byte loads of K and V into a STAGES-deep ring of
 * XOR-swizzled shared tiles (page-table lookup per key), S = Q K^T with
 * mma.sync m16n8k16 (fp32 accumulate), scale / soft cap / mask, online
 * softmax in the exp2 domain, O += P V with mma.sync.  The mask is an
 * interval per row: key k is kept when lo <= k <= hi (the problem class
 * derives lo/hi from the plan: causal bound, window left bound and the
 * kernel-level mutants); keys past the KV range are always excluded.
 *
 * The problem class (Prob) maps blockIdx to work, rows to q/out addresses,
 * keys to pool offsets, and writes results (final or partial).
 *
 * Two engines, one tile structure (vendor.cuh picks SWA_TENSOR_CORE_ENGINE):
 *  - tensor-core (NVIDIA): cp.async ring, ldmatrix, mma.sync, ex2.approx.
 *  - portable (ROCm; NVIDIA under -DSWADIFF_PORTABLE_KERNELS): the same
 *    ring filled by plain 16-byte loads, Q K^T and P V as FMA loops over
 *    shared memory that produce exactly the mma fragments (each lane owns
 *    the same (row, key) and (row, dim) elements), so the mask, the online
 *    softmax, the epilogue and the problem classes are the same code.
 *    Lanes are grouped as the m16n8k16 fragment wants them: 32 lanes (8 row
 *    groups x 4) per engine "warp" (SWA_FRAG_LANES).  On a 64-lane CDNA
 *    wavefront two such groups share the wavefront; every cross-lane step
 *    of the engine stays inside a quad (xor 1, 2, 3), and the one vote
 *    (swa_all_sync, wavefront-wide on AMD) only gates the mask skip, so a
 *    wider vote is merely more conservative.
 *
 * Test: tests/gpu_test_kernels.c compares every kernel against a double
 * precision CPU attention (NVIDIA; build with -DSWADIFF_PORTABLE_KERNELS to
 * run the portable engine there).  The ROCm build is compiled, not run. */
#ifndef SWADIFF_CUDA_ATTN_ENGINE_CUH
#define SWADIFF_CUDA_ATTN_ENGINE_CUH

#include "backends/cuda/vendor.cuh"
#include "backends/attn_primitives.h"
#if !defined(SWADIFF_HIP_BUILD)
#include <math_constants.h>
#endif
#include <stdint.h>

namespace SWA_NS {

/* Lanes of one engine warp: the m16n8k16 fragment layout's 8 x 4 lanes. */
#if SWA_TENSOR_CORE_ENGINE
#define SWA_FRAG_LANES SWA_WARP_SIZE
#else
#define SWA_FRAG_LANES 32
#endif
static_assert(SWA_WARP_SIZE % SWA_FRAG_LANES == 0, "an engine warp must not straddle hardware warps");

#if SWA_TENSOR_CORE_ENGINE
/* ---------------------------------------------------------------------------
 * PTX helpers (NVIDIA sm_80+; the portable engine below replaces them). */

__device__ __forceinline__ uint32_t swa_smem_addr(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void swa_cp_async16(void *smem, const void *gmem, bool valid)
{
    /* src-size 0 zero-fills the 16 bytes without touching gmem */
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(swa_smem_addr(smem)),
                 "l"(gmem), "r"(valid ? 16 : 0)
                 : "memory");
}
__device__ __forceinline__ void swa_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void swa_cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void swa_ldsm_x4(uint32_t (&r)[4], uint32_t saddr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(saddr)
                 : "memory");
}
__device__ __forceinline__ void swa_ldsm_x4_trans(uint32_t (&r)[4], uint32_t saddr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(saddr)
                 : "memory");
}

__device__ __forceinline__ float swa_exp2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}
#else
/* ---------------------------------------------------------------------------
 * Portable stand-ins: a synchronous 16-byte copy (zero-fill when !valid, the
 * global address is then never read), no groups to commit or wait for. */
__device__ __forceinline__ void swa_cp_async16(void *smem, const void *gmem, bool valid)
{
    uint4 v = make_uint4(0u, 0u, 0u, 0u);
    if (valid) v = *reinterpret_cast<const uint4 *>(gmem);
    *reinterpret_cast<uint4 *>(smem) = v;
}
__device__ __forceinline__ void swa_cp_async_commit() {}
template <int N> __device__ __forceinline__ void swa_cp_async_wait() {}
__device__ __forceinline__ float swa_exp2(float x) { return exp2f(x); }
#endif

/* dtype traits: the mma instruction and the float<->storage conversions */
template <typename T> struct swa_dt;
template <> struct swa_dt<swa_half_t> {
#if SWA_TENSOR_CORE_ENGINE
    static __device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
    {
        asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};\n"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
#endif
    static __device__ __forceinline__ uint32_t pack(float lo, float hi)
    {
        __half2 h = __floats2half2_rn(lo, hi);
        return *reinterpret_cast<uint32_t *>(&h);
    }
    static __device__ __forceinline__ float2 unpack(uint32_t u)
    {
        return __half22float2(*reinterpret_cast<__half2 *>(&u));
    }
};
#if !defined(SWADIFF_HIP_BUILD)
template <> struct swa_dt<swa_bf16_t> {
#if SWA_TENSOR_CORE_ENGINE
    static __device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
    {
        asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};\n"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
#endif
    static __device__ __forceinline__ uint32_t pack(float lo, float hi)
    {
        __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
        return *reinterpret_cast<uint32_t *>(&h);
    }
    static __device__ __forceinline__ float2 unpack(uint32_t u)
    {
        return __bfloat1622float2(*reinterpret_cast<__nv_bfloat162 *>(&u));
    }
};
#else
/* ROCm 5.2 has no bf16 pair type: bf16 is the upper half of a float,
 * rounded to nearest even; NaN stays a (quiet) NaN. */
template <> struct swa_dt<swa_bf16_t> {
    static __device__ __forceinline__ uint32_t bits(float f)
    {
        uint32_t u = __float_as_uint(f);
        if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 16) | 0x40u;
        return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    }
    static __device__ __forceinline__ uint32_t pack(float lo, float hi) { return bits(lo) | (bits(hi) << 16); }
    static __device__ __forceinline__ float2 unpack(uint32_t u)
    {
        return make_float2(__uint_as_float(u << 16), __uint_as_float(u & 0xffff0000u));
    }
};
#endif

/* Swizzled element offset of (row, 16-byte chunk) in a [rows][D] tile:
 * chunk ^ (row % 8) spreads the 8 rows an ldmatrix reads over all banks. */
template <int D> __device__ __forceinline__ int swa_swz(int row, int chunk)
{
    return row * D + ((chunk ^ (row & 7)) << 3);
}

/* t / d and t % d for a divisor fixed per CTA (the page size), without a
 * branch or a division: Granlund and Montgomery's round-up multiply
 * ("Division by invariant integers using multiplication", 1994, fig. 4.1),
 * exact for every 32-bit unsigned t and 1 <= d < 2^31:
 *   l = ceil(log2 d), m = floor(2^32 (2^l - d) / d) + 1,
 *   q = (hi32(m t) + ((t - hi32(m t)) >> min(l, 1))) >> max(l - 1, 0).
 * A power of two gives m = 1 and q = t >> l.  The kernels used to branch on
 * "power of two?" and divide otherwise, per 16-byte copy; those tests were
 * the decode kernel's most stalled instructions, and this multiply made
 * decode measurably faster (docs/kernels.md, Measured choices). */
struct swa_divmod {
    unsigned m;
    int d, sh1, sh2;
    __device__ void init(int divisor)
    {
        d = divisor;
        const int l = divisor > 1 ? 32 - __clz(divisor - 1) : 0;
        m = (unsigned)((((unsigned long long)1 << 32) * (((unsigned long long)1 << l) - (unsigned)divisor)) /
                       (unsigned)divisor) + 1u;
        sh1 = l < 1 ? l : 1;
        sh2 = l > 1 ? l - 1 : 0;
    }
    __device__ __forceinline__ int div(int t) const
    {
        const unsigned n = (unsigned)t, hi = __umulhi(m, n);
        return (int)((hi + ((n - hi) >> sh1)) >> sh2);
    }
    __device__ __forceinline__ int mod(int t) const { return t - div(t) * d; }
};

/* Element offset of key t of one kv head in a K/V cache:
 *   page * pg_stride + (t % page_size) * slot_stride + head_off,
 * the strides set once per CTA.  Paged NHD [page][slot][head][D], HND
 * [page][head][slot][D]; ragged [token][head][D] from `base` with page = t
 * (page size 1, so the slot term is 0).  64-bit strides: a page of 65536
 * slots x 1024 heads x 256 dims is 2^34 elements.  Set once per CTA rather
 * than a 64-bit product chain and three layout branches per 16-byte copy,
 * which had been a large share of the kernels' instructions (the profile
 * and the figures: docs/kernels.md, What the figures rest on and Measured
 * choices). */
struct swa_kv_addr {
    long long pg_stride, slot_stride, head_off;
    swa_divmod pdiv;
    template <int D> __device__ void paged(int page_size, int num_kv_heads, int kvh, bool nhd)
    {
        pdiv.init(page_size);
        pg_stride = (long long)page_size * num_kv_heads * D;
        slot_stride = nhd ? (long long)num_kv_heads * D : (long long)D;
        head_off = nhd ? (long long)kvh * D : (long long)kvh * page_size * D;
    }
    template <int D> __device__ void ragged(long long base, int num_kv_heads)
    {
        pdiv.init(1);
        pg_stride = (long long)num_kv_heads * D;
        slot_stride = 0;
        head_off = base;
    }
    __device__ __forceinline__ int page_of(int t) const { return pdiv.div(t); }
    __device__ __forceinline__ long long offset(int page, int t) const
    {
        return page * pg_stride + pdiv.mod(t) * slot_stride + head_off;
    }
};

/* Per-row facts the problem class provides. */
struct swa_row_info {
    bool valid;
    long long q_off;  /* element offset of the row's q vector */
    int lo, hi;       /* visible keys: lo <= k <= hi (before the KV range bound) */
};

/* Shape of one engine configuration: WR row groups x WK key splits of
 * warps, MT m-tiles (16 rows each) per warp. */
template <int D_, int WR_, int WK_, int MT_ = 1, int STAGES_ = 0> struct swa_engine_cfg {
    static constexpr int D = D_, WR = WR_, WK = WK_, MT = MT_;
    static constexpr int NW = WR * WK, THREADS = NW * SWA_FRAG_LANES, ROWS = WR * 16 * MT;
    /* keys per warp per tile: decode 16; prefill 64, or 32 where the
     * accumulators need the registers (D = 256, two m-tiles) */
    static constexpr int NT = WK > 1 ? 16 : (D * MT > 128 ? 32 : 64);
    static constexpr int TK = NT * WK;
#if SWA_TENSOR_CORE_ENGINE
    static constexpr int STAGES = STAGES_ ? STAGES_ : (D > 128) ? 2 : 3; /* cp.async ring depth */
#else
    /* synchronous loads: a deeper ring buys nothing and costs LDS */
    static constexpr int STAGES = STAGES_ ? STAGES_ : 1;
#endif
    static constexpr bool Q_IN_REGS = MT == 1 && D <= 128; /* one m-tile's Q fragments in registers */
    static constexpr int Q_BYTES = ROWS * D * 2;
    static constexpr int STAGE_BYTES = 2 * TK * D * 2;
    static constexpr int EPI_STRIDE = D + 8; /* floats; the pad spreads the quad's rows over the banks */
    static constexpr int EPI_BYTES = NW * 16 * MT * EPI_STRIDE * 4 + 2 * NW * 16 * MT * 4;
    static constexpr int RING_BYTES = STAGES * STAGE_BYTES;
    static constexpr int SMEM_BYTES = Q_BYTES + (RING_BYTES > EPI_BYTES ? RING_BYTES : EPI_BYTES);
    static constexpr int CHUNKS = D / 8;                       /* 16-byte chunks per row */
    static constexpr int LOADS = TK * CHUNKS / THREADS;         /* K (and V) chunks per thread per tile */
    static_assert(THREADS % CHUNKS == 0 && (TK * CHUNKS) % THREADS == 0, "tile loads must split evenly");
    static_assert(THREADS % SWA_WARP_SIZE == 0, "a CTA is whole hardware warps / wavefronts");
};

#if !SWA_TENSOR_CORE_ENGINE
/* The one shape the portable engine runs (every kernel, every tile size):
 * 16 rows per CTA, keys split over 2 warps, a 1-stage ring.  Its shared
 * memory (42 KiB at head_dim 256) fits the 64 KiB LDS of CDNA, which the
 * tensor-core shapes (up to 136 KiB) do not. */
template <int D> using swa_portable_cfg = swa_engine_cfg<D, 1, 2>;
static_assert(swa_portable_cfg<256>::SMEM_BYTES <= 65536, "portable engine must fit 64 KiB of LDS");
#endif

/* Soft-capped logits in the base-2 domain: c * tanh(s * scale / c) * log2(e). */
template <int MT, int NT>
__device__ __forceinline__ void swa_logits_capped(float (&s)[MT][NT / 8][4], float cap, float scale_over_cap,
                                                  float cap_log2e, swa_mutant m)
{
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int nt = 0; nt < NT / 8; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) s[mt][nt][e] = cap_log2e * swa_cap_tanh(s[mt][nt][e] * scale_over_cap, m);
}

/* The per-element mask of one tile: keys past a row's hi (causal bound or
 * the KV range) get -inf, keys before its lo (window) get masked_low
 * (-inf, or AITER's -soft_cap under SOFTCAP_BEFORE_MASK), both in the
 * domain s is in. */
template <int MT, int NT>
__device__ __forceinline__ void swa_apply_mask(float (&s)[MT][NT / 8][4], const int (&lo)[2 * MT],
                                               const int (&hi)[2 * MT], int key0, int t4, float masked_low)
{
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int nt = 0; nt < NT / 8; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int r = mt * 2 + (e >> 1), key = key0 + nt * 8 + 2 * t4 + (e & 1);
                if (key > hi[r]) s[mt][nt][e] = -CUDART_INF_F;
                else if (key < lo[r]) s[mt][nt][e] = masked_low;
            }
}

#if !SWA_TENSOR_CORE_ENGINE
/* ---------------------------------------------------------------------------
 * Portable products.  They fill the mma fragments element for element:
 * s[mt][nt][2h + j] is (row g + 8h of m-tile mt, key nt*8 + 2*t4 + j) and
 * o[mt][dn][2h + j] is (row g + 8h, dim dn*8 + 2*t4 + j), fp32 accumulation
 * of dtype inputs as mma.sync does (the products of fp16/bf16 values are
 * exact in fp32; only the summation order differs). */

/* S += Q K^T for this warp's 16*MT rows x NT keys, from the swizzled Q tile
 * and the stage's K tile (tile-local key rows wk*NT ..). */
template <class Cfg, typename T>
__device__ __forceinline__ void swa_qk_fma(float (&s)[Cfg::MT][Cfg::NT / 8][4], const T *sQ, const T *sK, int wr,
                                           int wk, int g, int t4)
{
    constexpr int D = Cfg::D, MT = Cfg::MT, NT = Cfg::NT;
    typedef swa_dt<T> dt;
    for (int c = 0; c < D / 8; c++) { /* one 16-byte chunk (8 dims) per step */
        float2 q[MT][2][4];
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int row = wr * 16 * MT + mt * 16 + g + 8 * h;
                uint4 u = *reinterpret_cast<const uint4 *>(sQ + swa_swz<D>(row, c));
                q[mt][h][0] = dt::unpack(u.x);
                q[mt][h][1] = dt::unpack(u.y);
                q[mt][h][2] = dt::unpack(u.z);
                q[mt][h][3] = dt::unpack(u.w);
            }
#pragma unroll
        for (int nt = 0; nt < NT / 8; nt++)
#pragma unroll
            for (int j = 0; j < 2; j++) {
                uint4 u = *reinterpret_cast<const uint4 *>(sK + swa_swz<D>(wk * NT + nt * 8 + 2 * t4 + j, c));
                float2 k[4] = {dt::unpack(u.x), dt::unpack(u.y), dt::unpack(u.z), dt::unpack(u.w)};
#pragma unroll
                for (int mt = 0; mt < MT; mt++)
#pragma unroll
                    for (int h = 0; h < 2; h++) {
                        float acc = s[mt][nt][2 * h + j];
#pragma unroll
                        for (int e = 0; e < 4; e++) {
                            acc = fmaf(q[mt][h][e].x, k[e].x, acc);
                            acc = fmaf(q[mt][h][e].y, k[e].y, acc);
                        }
                        s[mt][nt][2 * h + j] = acc;
                    }
            }
    }
}

/* O += P V.  P is rounded to the dtype first (the tensor-core path feeds
 * it to mma.sync in the dtype).  A row's NT probabilities are spread over
 * its quad (lane t4 holds keys 2*t4, 2*t4 + 1 of every 8): step x takes
 * the pairs of quad lane t4 ^ x, whose keys are 2*(t4 ^ x) + {0, 1}. */
template <class Cfg, typename T>
__device__ __forceinline__ void swa_pv_fma(float (&o)[Cfg::MT][Cfg::D / 8][4],
                                           const float (&s)[Cfg::MT][Cfg::NT / 8][4], const T *sV, int wk, int t4)
{
    constexpr int D = Cfg::D, MT = Cfg::MT, NT = Cfg::NT;
    typedef swa_dt<T> dt;
    uint32_t pk[MT][NT / 8][2];
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int nt = 0; nt < NT / 8; nt++)
#pragma unroll
            for (int h = 0; h < 2; h++) pk[mt][nt][h] = dt::pack(s[mt][nt][2 * h], s[mt][nt][2 * h + 1]);
#pragma unroll
    for (int x = 0; x < 4; x++)
#pragma unroll
        for (int nt = 0; nt < NT / 8; nt++) {
            float2 p[MT][2];
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int h = 0; h < 2; h++) p[mt][h] = dt::unpack(swa_shfl_xor(pk[mt][nt][h], x));
            const int key = wk * NT + nt * 8 + 2 * (t4 ^ x); /* tile-local row of the pair's first key */
            for (int dn = 0; dn < D / 8; dn++) {
                float2 v0 = dt::unpack(*reinterpret_cast<const uint32_t *>(sV + swa_swz<D>(key, dn) + 2 * t4));
                float2 v1 = dt::unpack(*reinterpret_cast<const uint32_t *>(sV + swa_swz<D>(key + 1, dn) + 2 * t4));
#pragma unroll
                for (int mt = 0; mt < MT; mt++)
#pragma unroll
                    for (int h = 0; h < 2; h++) {
                        o[mt][dn][2 * h] = fmaf(p[mt][h].y, v1.x, fmaf(p[mt][h].x, v0.x, o[mt][dn][2 * h]));
                        o[mt][dn][2 * h + 1] = fmaf(p[mt][h].y, v1.y, fmaf(p[mt][h].x, v0.y, o[mt][dn][2 * h + 1]));
                    }
            }
        }
}
#endif /* !SWA_TENSOR_CORE_ENGINE */

/* ---------------------------------------------------------------------------
 * Pieces both engines (this one and the wgmma engine of attn_engine_sm90.cuh)
 * run, so that a kernel-level mutant hook lives in one place. */

/* The cp.async fill of one ring stage.  TPK = 8 threads share a key row
 * (fewer for short rows, more where the threads outnumber the keys): thread
 * tid takes keys tid / TPK + k * (THREADS / TPK) of the tile and, of each,
 * the 16-byte chunks h, h + TPK, .. with h = tid % TPK, so the TPK lanes of
 * a key copy one whole 128-byte line per instruction (a warp: 4 lines, as
 * coalesced as 16 lanes per row) with one page-table read and one address
 * per key and thread.  (Each thread used to take one chunk of 8 keys: 8
 * page-table reads and 8 64-bit address chains per tile and thread.)  The
 * page-table reads of a tile are issued a tile ahead (lookup); the copies
 * (issue) zero-fill keys past the KV range.  Where (key row j, chunk c)
 * lives in a stage is the engine's layout: dst(j, c) -> byte offset.
 * swa_ring_split is the split of a tile over the threads (TPK at most
 * TPK_MAX), which the Hopper producer's gather (swa_ws_gather) shares. */
template <int TK, int THREADS, int CHUNKS, int TPK_MAX = 8> struct swa_ring_split {
    static constexpr int CAP = CHUNKS < TPK_MAX ? CHUNKS : TPK_MAX;
    static constexpr int TPK = THREADS / TK > CAP ? THREADS / TK : CAP; /* threads per key row */
    static constexpr int STEP = THREADS / TPK;                          /* keys per pass */
    static constexpr int KEYS = TK / STEP;                              /* keys per thread */
    static constexpr int CPT = CHUNKS / TPK;                            /* chunks per thread and key */
    static constexpr int LOADS = KEYS * CPT;                            /* K (and V) chunks per thread */
    static_assert(THREADS % TPK == 0 && TK % STEP == 0 && CHUNKS % TPK == 0 && CPT >= 1,
                  "ring loads: the tile must split evenly over the threads");
};
template <int TK, int THREADS, int CHUNKS> struct swa_ring_loads : swa_ring_split<TK, THREADS, CHUNKS> {
    typedef swa_ring_split<TK, THREADS, CHUNKS> split;
    using split::TPK;
    using split::STEP;
    using split::KEYS;
    using split::CPT;
    const int ld_h, ld_j0, kv_begin, kv_end, num_tiles;
    int looked[KEYS];
    __device__ swa_ring_loads(int tid, int begin, int end, int tiles)
        : ld_h(tid % TPK), ld_j0(tid / TPK), kv_begin(begin), kv_end(end), num_tiles(tiles)
    {
    }
    template <class Prob> __device__ __forceinline__ void lookup(const Prob &prob, int tile)
    {
        const int t0 = kv_begin + tile * TK + ld_j0;
#pragma unroll
        for (int k = 0; k < KEYS; k++) {
            int t = t0 + k * STEP;
            looked[k] = (tile < num_tiles && t < kv_end) ? prob.lookup(t) : -1;
        }
    }
    template <class Prob, typename T, class Dst>
    __device__ __forceinline__ void issue(const Prob &prob, const T *kg, const T *vg, unsigned char *sK,
                                          unsigned char *sV, int tile, Dst dst) const
    {
        const int t0 = kv_begin + tile * TK + ld_j0;
#pragma unroll
        for (int k = 0; k < KEYS; k++) {
            const int j = ld_j0 + k * STEP, t = t0 + k * STEP;
            const bool valid = looked[k] >= 0;
            const long long off = valid ? prob.offset(looked[k], t) + ld_h * 8 : 0;
            const T *srcK = kg + off, *srcV = vg + off;
#pragma unroll
            for (int i = 0; i < CPT; i++) {
                const uint32_t b = dst(j, i * TPK + ld_h);
                swa_cp_async16(sK + b, srcK + i * TPK * 8, valid);
                swa_cp_async16(sV + b, srcV + i * TPK * 8, valid);
            }
        }
    }
};

/* The logits of one tile, in place, to the base-2 domain with the mask:
 * the rows' left bounds in this tile (WINDOW_MASK_SKIPPED_IN_EDGE_TILE
 * drops them in the loop's first tile, in the FlashInfer-style kernels
 * Prob::FA_STYLE_MUTANTS marks, not AITER's), the soft cap, then the mask
 * unless every row of the warp sees all NT keys from key0 on.  Without a
 * soft cap the scores stay raw and the scale folds into the exponent: the
 * factor the softmax applies is returned. */
template <int MT, int NT, class Prob>
__device__ __forceinline__ float swa_tile_logits(float (&s)[MT][NT / 8][4], const Prob &prob,
                                                 const int (&lo)[2 * MT], const int (&hi)[2 * MT], int tile_key0,
                                                 int key0, int t4, float masked_low, float scale2)
{
    int lo_t[2 * MT];
#pragma unroll
    for (int r = 0; r < 2 * MT; r++)
        lo_t[r] = Prob::FA_STYLE_MUTANTS ? swa_tile_row_lo(lo[r], tile_key0, prob.kv_begin, prob.m) : lo[r];
    bool full = true;
#pragma unroll
    for (int r = 0; r < 2 * MT; r++) full = full && key0 >= lo_t[r] && key0 + NT - 1 <= hi[r];
    const bool warp_full = swa_all_sync(full);
    const float cap = prob.soft_cap;
    if (cap > 0.f) swa_logits_capped<MT, NT>(s, cap, prob.sm_scale / cap, cap * SWA_LOG2E, prob.m);
    if (!warp_full) swa_apply_mask<MT, NT>(s, lo_t, hi, key0, t4, cap > 0.f ? masked_low : masked_low / scale2);
    return cap > 0.f ? 1.f : scale2;
}

/* Online softmax of one tile (the quad, 4 lanes, shares a row): s becomes
 * 2^(s * mul - m), m and dsum move on, and corr_r gets each row's change of
 * maximum; swa_rescale_o then rescales O by it (swa_tile_softmax does both;
 * the Hopper warp-specialised engine rescales only once the previous
 * tile's P V product, still in flight during the softmax, has landed),
 * skipped while no row of the warp saw a new one (the factor is
 * then exactly 1, so the skip changes no bit; it saves D/2 multiplies per
 * row and tile, which both decode and prefill measured as a gain:
 * docs/kernels.md, Measured choices). */
template <int MT, int NT>
__device__ __forceinline__ void swa_tile_softmax_p(float (&s)[MT][NT / 8][4], float (&m)[2 * MT],
                                                   float (&dsum)[2 * MT], float (&corr_r)[2 * MT], float mul)
{
#pragma unroll
    for (int r = 0; r < 2 * MT; r++) {
        const int mt = r / 2, h = r % 2;
        /* the row's maximum and sum as trees (log2(NT/4) dependent steps,
         * not NT/8: the chains were the kernels' most common stall, a
         * fixed-latency dependency); the maximum is exact in any order */
        float part[NT / 8];
#pragma unroll
        for (int nt = 0; nt < NT / 8; nt++) part[nt] = fmaxf(s[mt][nt][2 * h], s[mt][nt][2 * h + 1]);
#pragma unroll
        for (int w = NT / 16; w >= 1; w /= 2)
#pragma unroll
            for (int i = 0; i < w; i++) part[i] = fmaxf(part[i], part[i + w]);
        float mx = fmaxf(-CUDART_INF_F, part[0]);
        mx = fmaxf(mx, swa_shfl_xor(mx, 1));
        mx = fmaxf(mx, swa_shfl_xor(mx, 2));
        float m_new = fmaxf(m[r], mx * mul);
        float m_use = m_new == -CUDART_INF_F ? 0.f : m_new;
        float corr = swa_exp2(m[r] - m_use);
        m[r] = m_new;
#pragma unroll
        for (int nt = 0; nt < NT / 8; nt++) {
            s[mt][nt][2 * h] = swa_exp2(fmaf(s[mt][nt][2 * h], mul, -m_use));
            s[mt][nt][2 * h + 1] = swa_exp2(fmaf(s[mt][nt][2 * h + 1], mul, -m_use));
            part[nt] = s[mt][nt][2 * h] + s[mt][nt][2 * h + 1];
        }
#pragma unroll
        for (int w = NT / 16; w >= 1; w /= 2)
#pragma unroll
            for (int i = 0; i < w; i++) part[i] += part[i + w];
        dsum[r] = dsum[r] * corr + part[0];
        corr_r[r] = corr;
    }
}

/* O rescaled by the change of maximum of swa_tile_softmax_p (every row). */
template <int MT, int DN>
__device__ __forceinline__ void swa_rescale_o_by(float (&o)[MT][DN][4], const float (&corr_r)[2 * MT])
{
#pragma unroll
    for (int r = 0; r < 2 * MT; r++) {
        const int mt = r / 2, h = r % 2;
#pragma unroll
        for (int dn = 0; dn < DN; dn++) {
            o[mt][dn][2 * h] *= corr_r[r];
            o[mt][dn][2 * h + 1] *= corr_r[r];
        }
    }
}

/* The same, skipped while no row of the warp saw a new maximum. */
template <int MT, int DN>
__device__ __forceinline__ void swa_rescale_o(float (&o)[MT][DN][4], const float (&corr_r)[2 * MT])
{
    bool moved = false;
#pragma unroll
    for (int r = 0; r < 2 * MT; r++) moved = moved || corr_r[r] != 1.f;
    if (!swa_all_sync(!moved)) swa_rescale_o_by<MT, DN>(o, corr_r);
}

template <int MT, int NT, int DN>
__device__ __forceinline__ void swa_tile_softmax(float (&s)[MT][NT / 8][4], float (&m)[2 * MT],
                                                 float (&dsum)[2 * MT], float (&o)[MT][DN][4], float mul)
{
    float corr_r[2 * MT];
    swa_tile_softmax_p<MT, NT>(s, m, dsum, corr_r, mul);
    swa_rescale_o<MT, DN>(o, corr_r);
}

/* Row sums live spread over the quad: each lane ends with the whole sum. */
template <int R> __device__ __forceinline__ void swa_quad_sum(float (&d)[R])
{
#pragma unroll
    for (int r = 0; r < R; r++) {
        d[r] += swa_shfl_xor(d[r], 1);
        d[r] += swa_shfl_xor(d[r], 2);
    }
}

/* One output chunk (row, 8 dims) of the combined state: normalised (as the
 * host: a NaN sum, from a poisoned key, stays NaN), the empty-row hook of
 * FINITE_SENTINEL_EMPTY_ROW ("fully masked" read from a finite sentinel,
 * FlashInfer-style kernels only), written through the problem class. */
template <class Prob>
__device__ __forceinline__ void swa_finish_chunk(const Prob &prob, int row, int c, float (&acc)[8], float mmax,
                                                 float den)
{
    float inv = swa_state_inv_sum(den, prob.m);
    if (Prob::FA_STYLE_MUTANTS && swa_row_empty_by_sentinel(mmax, prob.m)) {
        inv = 0.f;
        den = 0.f;
        mmax = -CUDART_INF_F;
#pragma unroll
        for (int e = 0; e < 8; e++) acc[e] = 0.f;
    }
#pragma unroll
    for (int e = 0; e < 8; e++) acc[e] *= inv;
    prob.write_row(row, c, acc, mmax, den);
}

/* ---------------------------------------------------------------------------
 * The engine.  Prob: constructed from the params, init() decodes the CTA's
 * work (false: nothing to do), then row(), lookup(t) (the page-table read
 * for key t, issued one tile ahead so its latency hides behind a tile of
 * math), offset(looked_up, t), write_row(). */
template <class Cfg, typename T, class Prob>
__device__ __forceinline__ void swa_attn_engine(Prob &prob, unsigned char *smem)
{
    constexpr int D = Cfg::D, WK = Cfg::WK, MT = Cfg::MT, NT = Cfg::NT, TK = Cfg::TK;
    constexpr int STAGES = Cfg::STAGES, THREADS = Cfg::THREADS, CHUNKS = Cfg::CHUNKS, LOADS = Cfg::LOADS;
    constexpr int ES = Cfg::EPI_STRIDE;
    typedef swa_dt<T> dt;

    T *sQ = reinterpret_cast<T *>(smem);
    T *sRing = reinterpret_cast<T *>(smem + Cfg::Q_BYTES);
    float *sEpiO = reinterpret_cast<float *>(smem + Cfg::Q_BYTES);
    float *sEpiM = sEpiO + Cfg::NW * 16 * MT * ES;
    float *sEpiD = sEpiM + Cfg::NW * 16 * MT;

    const int tid = threadIdx.x, lane = tid % SWA_FRAG_LANES, warp = tid / SWA_FRAG_LANES;
    const int wr = warp / WK, wk = warp % WK;
    const int g = lane / 4, t4 = lane % 4;

    const T *qg = reinterpret_cast<const T *>(prob.q);
    const T *kg = reinterpret_cast<const T *>(prob.k);
    const T *vg = reinterpret_cast<const T *>(prob.v);

    /* Q tile -> shared (invalid rows zero) */
    for (int idx = tid; idx < Cfg::ROWS * CHUNKS; idx += THREADS) {
        int row = idx / CHUNKS, c = idx % CHUNKS;
        swa_row_info ri = prob.row(row);
        swa_cp_async16(sQ + swa_swz<D>(row, c), qg + (ri.valid ? ri.q_off + c * 8 : 0), ri.valid);
    }
    swa_cp_async_commit();

    const int kv_begin = prob.kv_begin, kv_end = prob.kv_end;
    const int num_tiles = kv_end > kv_begin ? (kv_end - kv_begin + TK - 1) / TK : 0;

    /* K/V ring fill, into XOR-swizzled [TK][D] tiles */
    swa_ring_loads<TK, THREADS, CHUNKS> loads(tid, kv_begin, kv_end, num_tiles);
    static_assert(decltype(loads)::LOADS == LOADS, "ring loads per thread");
    auto lookup_tile = [&](int tile) { loads.lookup(prob, tile); };
    auto issue_tile = [&](int tile, int stage) {
        unsigned char *sK = reinterpret_cast<unsigned char *>(sRing) + stage * Cfg::STAGE_BYTES;
        loads.issue(prob, kg, vg, sK, sK + TK * D * 2, tile,
                    [](int j, int c) { return (uint32_t)(swa_swz<D>(j, c) * 2); });
    };

#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < num_tiles) {
            lookup_tile(s);
            issue_tile(s, s);
        }
        swa_cp_async_commit();
    }
    lookup_tile(STAGES - 1);

    /* my rows: g and g+8 of each of my m-tiles */
    int lo[2 * MT], hi[2 * MT];
#pragma unroll
    for (int r = 0; r < 2 * MT; r++) {
        swa_row_info ri = prob.row(wr * 16 * MT + (r / 2) * 16 + g + (r % 2) * 8);
        lo[r] = ri.lo;
        hi[r] = min(ri.hi, kv_end - 1);
    }
    const float masked_low = prob.masked_low_logit(); /* base-2 logit of a window-masked key */
    const float scale2 = prob.sm_scale * SWA_LOG2E;

    float o[MT][D / 8][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int i = 0; i < D / 8; i++) o[mt][i][0] = o[mt][i][1] = o[mt][i][2] = o[mt][i][3] = 0.f;
    float m[2 * MT], dsum[2 * MT];
#pragma unroll
    for (int r = 0; r < 2 * MT; r++) {
        m[r] = -CUDART_INF_F;
        dsum[r] = 0.f;
    }

#if SWA_TENSOR_CORE_ENGINE
    uint32_t qf[Cfg::Q_IN_REGS ? D / 16 : 1][4];

    /* ldmatrix lane addresses.  Every row an ldmatrix lane points at has
     * row % 8 == lane % 8, so the swizzled 16-byte chunk of logical chunk
     * 8j + c (c < 8) is 8j + (c ^ lane % 8): four per-lane offsets cover all
     * k-steps and the rest are compile-time immediates. */
    const int mi = lane / 8;
    uint32_t xo_a[4], xo_b[4];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        xo_a[i] = (uint32_t)(((2 * i + (mi >> 1)) ^ (lane & 7)) * 16);
        xo_b[i] = (uint32_t)(((2 * i + (mi & 1)) ^ (lane & 7)) * 16);
    }
    const uint32_t q_lane = swa_smem_addr(sQ) + (uint32_t)((wr * 16 * MT + (mi & 1) * 8 + lane % 8) * D * 2);
    const uint32_t ring_addr = swa_smem_addr(sRing);
    const uint32_t k_row_off = (uint32_t)((wk * NT + (mi >> 1) * 8 + lane % 8) * D * 2);
    const uint32_t v_row_off = (uint32_t)((wk * NT + (mi & 1) * 8 + lane % 8) * D * 2);
#endif

    for (int tile = 0; tile < num_tiles; tile++) {
        {
            int nt = tile + STAGES - 1;
            if (nt < num_tiles) issue_tile(nt, nt % STAGES);
            swa_cp_async_commit();
            lookup_tile(nt + 1); /* consumed next iteration */
        }
        swa_cp_async_wait<STAGES - 1>();
        __syncthreads();

#if SWA_TENSOR_CORE_ENGINE
        if (Cfg::Q_IN_REGS && tile == 0) {
#pragma unroll
            for (int ks = 0; ks < D / 16; ks++)
                swa_ldsm_x4(qf[Cfg::Q_IN_REGS ? ks : 0], q_lane + (ks / 4) * 128 + xo_a[ks % 4]);
        }

        const uint32_t stage_addr = ring_addr + (tile % STAGES) * Cfg::STAGE_BYTES;
        const uint32_t k_lane = stage_addr + k_row_off, v_lane = stage_addr + TK * D * 2 + v_row_off;
#else
        const T *sK = sRing + (tile % STAGES) * (2 * TK * D), *sV = sK + TK * D;
#endif
        const int key0 = kv_begin + tile * TK + wk * NT; /* my first key of the tile */

        float s[MT][NT / 8][4];
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int i = 0; i < NT / 8; i++) s[mt][i][0] = s[mt][i][1] = s[mt][i][2] = s[mt][i][3] = 0.f;
#if SWA_TENSOR_CORE_ENGINE
#pragma unroll
        for (int ks = 0; ks < D / 16; ks++) {
            uint32_t a[MT][4];
#pragma unroll
            for (int mt = 0; mt < MT; mt++) {
                if (Cfg::Q_IN_REGS) {
#pragma unroll
                    for (int e = 0; e < 4; e++) a[mt][e] = qf[Cfg::Q_IN_REGS ? ks : 0][e];
                } else {
                    swa_ldsm_x4(a[mt], q_lane + mt * 16 * D * 2 + (ks / 4) * 128 + xo_a[ks % 4]);
                }
            }
#pragma unroll
            for (int np = 0; np < NT / 16; np++) {
                uint32_t b[4];
                swa_ldsm_x4(b, k_lane + np * 16 * D * 2 + (ks / 4) * 128 + xo_b[ks % 4]);
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    dt::mma(s[mt][2 * np], a[mt], b[0], b[1]);
                    dt::mma(s[mt][2 * np + 1], a[mt], b[2], b[3]);
                }
            }
        }
#else
        swa_qk_fma<Cfg, T>(s, sQ, sK, wr, wk, g, t4);
#endif

        /* logits -> base-2 domain, masked; online softmax; O rescaled */
        const float mul = swa_tile_logits<MT, NT>(s, prob, lo, hi, kv_begin + tile * TK, key0, t4, masked_low, scale2);
        swa_tile_softmax<MT, NT, D / 8>(s, m, dsum, o, mul);

        /* O += P V */
#if SWA_TENSOR_CORE_ENGINE
#pragma unroll
        for (int kk = 0; kk < NT / 16; kk++) {
            uint32_t a[MT][4];
#pragma unroll
            for (int mt = 0; mt < MT; mt++) {
                a[mt][0] = dt::pack(s[mt][2 * kk][0], s[mt][2 * kk][1]);
                a[mt][1] = dt::pack(s[mt][2 * kk][2], s[mt][2 * kk][3]);
                a[mt][2] = dt::pack(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
                a[mt][3] = dt::pack(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
            }
#pragma unroll
            for (int dp = 0; dp < D / 16; dp++) {
                uint32_t b[4];
                swa_ldsm_x4_trans(b, v_lane + kk * 16 * D * 2 + (dp / 4) * 128 + xo_a[dp % 4]);
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    dt::mma(o[mt][2 * dp], a[mt], b[0], b[1]);
                    dt::mma(o[mt][2 * dp + 1], a[mt], b[2], b[3]);
                }
            }
        }
#else
        swa_pv_fma<Cfg, T>(o, s, sV, wk, t4);
#endif
        __syncthreads(); /* the stage is refilled next iteration */
    }
    swa_cp_async_wait<0>();
    __syncthreads();

    swa_quad_sum(dsum);

    /* epilogue: every warp's (m, d, O) to shared, then combine the WK key
     * splits and write through the problem class, 8 dims per step */
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
        float *myO = sEpiO + (warp * MT + mt) * 16 * ES;
#pragma unroll
        for (int dn = 0; dn < D / 8; dn++) {
            int col = dn * 8 + 2 * t4;
            *reinterpret_cast<float2 *>(myO + g * ES + col) = make_float2(o[mt][dn][0], o[mt][dn][1]);
            *reinterpret_cast<float2 *>(myO + (g + 8) * ES + col) = make_float2(o[mt][dn][2], o[mt][dn][3]);
        }
        if (t4 == 0) {
            sEpiM[(warp * MT + mt) * 16 + g] = m[2 * mt];
            sEpiM[(warp * MT + mt) * 16 + g + 8] = m[2 * mt + 1];
            sEpiD[(warp * MT + mt) * 16 + g] = dsum[2 * mt];
            sEpiD[(warp * MT + mt) * 16 + g + 8] = dsum[2 * mt + 1];
        }
    }
    __syncthreads();

    /* CTA row `row` = row group rw, m-tile, row in tile; the WK warps of the
     * row group hold its key-split states */
    for (int idx = tid; idx < Cfg::ROWS * CHUNKS; idx += THREADS) {
        int row = idx / CHUNKS, c = idx % CHUNKS;
        int rw = row / (16 * MT), mt = (row / 16) % MT, rr = row % 16;
        float mmax = -CUDART_INF_F;
#pragma unroll
        for (int w = 0; w < WK; w++) mmax = fmaxf(mmax, sEpiM[((rw * WK + w) * MT + mt) * 16 + rr]);
        float m_use = mmax == -CUDART_INF_F ? 0.f : mmax;
        float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
        float den = 0.f;
#pragma unroll
        for (int w = 0; w < WK; w++) {
            int ws = ((rw * WK + w) * MT + mt) * 16 + rr;
            float wgt = WK == 1 ? 1.f : swa_exp2(sEpiM[ws] - m_use);
            den += sEpiD[ws] * wgt;
            const float *src = sEpiO + ws * ES + c * 8;
#pragma unroll
            for (int e = 0; e < 8; e++) acc[e] += src[e] * wgt;
        }
        swa_finish_chunk(prob, row, c, acc, mmax, den);
    }
}

/* Stores 8 floats as 8 dtype elements (one 16-byte store). */
template <typename T> __device__ __forceinline__ void swa_store8(T *dst, const float (&v)[8])
{
    uint4 u;
    u.x = swa_dt<T>::pack(v[0], v[1]);
    u.y = swa_dt<T>::pack(v[2], v[3]);
    u.z = swa_dt<T>::pack(v[4], v[5]);
    u.w = swa_dt<T>::pack(v[6], v[7]);
    *reinterpret_cast<uint4 *>(dst) = u;
}
/* Stores one float as one dtype element. */
template <typename T> __device__ __forceinline__ void swa_store1(T *dst, float v)
{
    *reinterpret_cast<uint16_t *>(dst) = (uint16_t)(swa_dt<T>::pack(v, 0.f) & 0xffffu);
}
__device__ __forceinline__ void swa_store8f(float *dst, const float (&v)[8])
{
    reinterpret_cast<float4 *>(dst)[0] = make_float4(v[0], v[1], v[2], v[3]);
    reinterpret_cast<float4 *>(dst)[1] = make_float4(v[4], v[5], v[6], v[7]);
}

/* Warps (wavefronts) in the 128-thread blocks of the merge / reduce kernels,
 * one output row per warp: 4 on NVIDIA, 2 on CDNA. */
static constexpr int SWA_MERGE_WARPS = 128 / SWA_WARP_SIZE;

/* ---------------------------------------------------------------------------
 * Merge of split-KV partials (prefill and decode_fa2): one warp per output
 * (row, head); partial k of the row sits at slot base + k * stride.  The
 * arithmetic mirrors the host emulation's merge (host_attend.h) step for
 * step, including what happens to empty (-inf) and NaN partials: weights
 * 2^(lse - lse_max), zero-weight partials skipped, no partial -> 0 / -inf.
 * LSE_MERGE_DROPPED (mutant build only) averages the partial outputs. */
template <typename T, int D, bool MUT>
__device__ __forceinline__ void swa_merge_row(const float *o_part, const float *lse_part, int num_heads,
                                              int head, int slot_base, int slot_stride, int n,
                                              T *out_row, float *lse_out, int mutant, int lane)
{
    constexpr int PER = D / SWA_WARP_SIZE; /* dims per lane: 2, 4, 8 (32 lanes); 1, 2, 4 (64) */
    const swa_mutant m = MUT ? (swa_mutant)mutant : SWA_MUTANT_NONE;
    float lmax = -CUDART_INF_F;
    bool any = false; /* a partial that saw a key (finite or NaN LSE) */
    for (int k = 0; k < n; k++) {
        float l = lse_part[(size_t)(slot_base + k * slot_stride) * num_heads + head];
        if (l != -CUDART_INF_F) any = true;
        if (l > lmax) lmax = l;
    }
    float acc[PER];
#pragma unroll
    for (int e = 0; e < PER; e++) acc[e] = 0.f;
    float wsum = 0.f;
    if (any) {
        for (int k = 0; k < n; k++) {
            size_t slot = (size_t)(slot_base + k * slot_stride) * num_heads + head;
            float w_true = swa_merge_weight(lse_part[slot], lmax);
            float w = m == SWA_MUTANT_LSE_MERGE_DROPPED ? 1.0f / (float)n : w_true;
            wsum += w_true;
            if (w == 0.0f) continue;
            const float *src = o_part + slot * D + lane * PER;
#pragma unroll
            for (int e = 0; e < PER; e++) acc[e] += w * src[e];
        }
    }
    float inv = (m == SWA_MUTANT_LSE_MERGE_DROPPED || wsum == 0.0f) ? 1.0f : 1.0f / wsum;
    if constexpr (PER % 2 == 0) {
#pragma unroll
        for (int e = 0; e < PER; e += 2) {
            float none = 0.f * swa_state_inv_sum(0.f, m); /* 0; NaN under EMPTY_ROW_NAN */
            float a = any ? acc[e] * inv : none, b = any ? acc[e + 1] * inv : none;
            *reinterpret_cast<uint32_t *>(out_row + lane * PER + e) = swa_dt<T>::pack(a, b);
        }
    } else { /* one dim per lane (head_dim 64 on a 64-lane wavefront) */
        swa_store1(out_row + lane * PER, any ? acc[0] * inv : 0.f * swa_state_inv_sum(0.f, m));
    }
    if (lse_out && lane == 0) {
        float l = any ? lmax + log2f(wsum) : -CUDART_INF_F;
        *lse_out = swa_lse_store_value(l, m);
    }
}

} /* namespace SWA_NS */

#endif /* SWADIFF_CUDA_ATTN_ENGINE_CUH */
