/* attn_engine_sm90.cuh — the Hopper (sm_90a) prefill tile engine: the
 * same attention as swa_attn_engine (attn_engine.cuh), with the two
 * products on wgmma.mma_async instead of mma.sync.
 *
 * Why: the mma.sync engine is bound by shared-memory reads (every warp
 * ldmatrix-reads every K and V tile).  wgmma lets one warpgroup (4 warps,
 * 64 query rows) read a B operand from shared memory once.
 *
 * Shape (swa_wgmma_ws_cfg): WG consumer warpgroups (2 for 128-row plan tiles,
 * 1 for 64-row ones), 64 rows each, and one producer warpgroup; KV tiles of
 * 64 keys, head_dim 64 or 128 (head_dim 256: one consumer warpgroup, so a
 * 128-row plan tile runs as two CTAs, and P V as two m64n128k16 per
 * k-step), fp16 and bf16.  Per KV tile:
 *  - the producer fills a STAGES-deep cp.async ring (16-byte copies, page
 *    lookup one tile ahead, invalid keys zero-filled: swa_ws_gather) in the
 *    wgmma layout below;
 *  - S = Q K^T: D/16 x wgmma m64n64k16, A = Q and B = K both from shared
 *    memory (descriptors), both K-major;
 *  - scale / soft cap / mask / online softmax on the accumulator with the
 *    mma.sync engine's helpers (swa_logits_capped, swa_tile_row_lo,
 *    swa_apply_mask, the per-warp full-tile vote, exp2 with the scale
 *    folded in): the m64nN accumulator gives warp w of the warpgroup rows
 *    16w..16w+15 in the m16n8 C layout of mma.sync (lane g = lane/4 has
 *    rows g and g+8, lane t4 = lane%4 columns 2*t4, 2*t4+1 of each 8), so
 *    it is viewed as the old s[1][64/8][4];
 *  - O += P V: 4 x wgmma m64n{D}k16 with A = P from registers (P rounded
 *    to the dtype, packed pairwise as the mma.sync A fragment, which is
 *    also the wgmma register A layout) and B = V from shared memory,
 *    MN-major (imm-trans-b = 1); fp32 accumulators in registers;
 *  - epilogue as the mma.sync engine's with one key split:
 *    swa_state_inv_sum, the FINITE_SENTINEL hook, write_row per 8 dims.
 *
 * One engine, warp-specialised (swa_attn_engine_wgmma_ws below), on one
 * CTA per work item or on the persistent grid: the ring is guarded by
 * mbarriers, and the consumers overlap the softmax of one tile with the
 * P V of the previous one.  The serial wgmma engine,
 * the TMA K/V loads, ping-pong and the other ring and rescale variants it
 * was measured against are gone (issue 31; their figures are in
 * docs/kernels.md, Measured choices, and in git history).
 *
 * Shared memory (base aligned to 1024 bytes by hand; the swizzle pattern
 * repeats every 1024 bytes and the descriptors' base offset is 0):
 *   QBUF x Q [ROWS x D], then STAGES x (K [64 x D], V [64 x D]), then
 *   the mbarriers.  Each matrix is D/64 blocks of [rows][64 elements]
 *   (128-byte rows), in the canonical 128-byte swizzle:
 *     byte(row, dim) = (dim/64) * rows*128 + row*128
 *                      + (((dim%64)/8) ^ (row%8)) * 16 + (dim%8) * 2
 *   (CuTe's Swizzle<3,4,3>: address bits [4,7) ^= bits [7,10)).  Q and K
 *   are read K-major (the reduction dim, head_dim, contiguous); V is read
 *   MN-major for P V (its N, head_dim, contiguous; K = keys strided).
 *
 * wgmma shared-memory descriptor (64 bits), as used here:
 *   [0,14)  start address >> 4
 *   [16,30) leading-dimension byte offset >> 4 (LBO)
 *   [32,46) stride-dimension byte offset >> 4 (SBO)
 *   [49,52) base offset: 0 (every pattern starts on a 1024-byte boundary)
 *   [62,64) layout: 1 = 128-byte swizzle
 * K-major, 128B swizzle (Q as A, K as B): SBO = 1024 (8 rows of 128 bytes
 *   to the next 8 rows), LBO unused (encoded 1); a k16 step moves the start
 *   by 32 bytes inside a 128-byte row, and by a whole [rows][64] block
 *   every 4 steps.
 * MN-major, 128B swizzle (V as B, trans-b = 1): LBO = the byte distance
 *   between two 64-element blocks along N (head_dim), here 64 keys x 128
 *   bytes = 8192; SBO = 1024 (8 keys to the next 8 keys along K); a k16
 *   step (16 keys) moves the start by 2048 bytes.
 * Checked against: the PTX ISA, "Matrix Descriptor Format" and
 * "Shared Memory Matrix Layout" / canonical layouts of wgmma (section
 * 9.7.15.5.1); NVIDIA/cutlass include/cute/arch/mma_sm90_desc.hpp (the
 * GmmaDescriptor bit fields, layout type 1 = B128) and
 * include/cute/atom/mma_traits_sm90_gmma.hpp (make_gmma_desc: K-major
 * SW128 ((8,n),2):((8,SBO),1) in 16-byte units, LBO "assumed 1"; MN-major
 * SW128 ((8,n),(8,k)):((1,LBO),(8,SBO)), i.e. LBO strides the 64-element
 * MN blocks and SBO the 8-row K groups; imm-trans = 1 for Major::MN);
 * HazyResearch/ThunderKittens include/types/shared/descriptor.cuh (MN-major
 * 128B: LBO = one [rows][64] block, SBO = 1024, k-step + 2048; K-major 128B:
 * SBO = 1024, k-step +32 bytes and a block jump every 4 steps).
 *
 * Ordering (PTX rules for wgmma): cp.async data is waited for by the
 * thread that copied it and made visible to the async proxy
 * (fence.proxy.async.shared::cta, which wgmma's shared-memory reads go
 * through) before the mbarrier arrival that publishes it; a
 * wgmma.fence precedes each batch (the accumulators and the P fragments
 * were written by ordinary instructions); commit_group + wait_group
 * before S or O is read, and before the arrival that lets the producer
 * refill the ring stage.  Empty asm statements pin the accumulator
 * registers on either side of a batch so the compiler does not move
 * ordinary reads or writes of them across it (CuTe's
 * warpgroup_fence_operand does the same).
 *
 * Build: the device code exists only in an sm_90a compilation pass
 * (__CUDA_ARCH_FEAT_SM90_ALL); other NVIDIA targets compile an empty
 * kernel and prefill.cu asks the loaded image (swa_prefill_wgmma_built)
 * before dispatching here.  Nothing of it is in the ROCm or portable build.
 *
 * Test: tests/gpu_test_kernels.c (gpu_variants: prefill on the wgmma
 * engine and its grids, skipped on a GPU that is not compute capability
 * 9.0). */
#ifndef SWADIFF_CUDA_ATTN_ENGINE_SM90_CUH
#define SWADIFF_CUDA_ATTN_ENGINE_SM90_CUH

#include "backends/cuda/attn_engine.cuh"

#if SWA_TENSOR_CORE_ENGINE

/* 1 in the device pass for sm_90a (wgmma exists there and nowhere else) */
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define SWA_WGMMA_DEVICE 1
#else
#define SWA_WGMMA_DEVICE 0
#endif

namespace SWA_NS {

/* Shape of the warp-specialised engine (swa_attn_engine_wgmma_ws): WG
 * consumer warpgroups of 64 rows and one producer warpgroup (the last),
 * a STAGES-deep ring with a full and an empty mbarrier per stage; the
 * producer signals a stage LAG = 1 tile after issuing it (once its copies
 * have landed: cp.async.wait_group LAG); KV_TPK = 8 producer threads per
 * key row (a 128-byte line each).  QBUF Q buffers, each with a full and an
 * empty mbarrier: two where they fit (a CTA runs several work items and
 * the producer loads the next item's Q while the consumers finish the
 * current one), one for head_dim 256 (its 3-stage ring and two 32 KB Q
 * buffers would pass the 227 KB limit).  No epilogue buffer: the consumers
 * write their rows from registers. */
template <int D_, int WG_> struct swa_wgmma_ws_cfg {
    static constexpr int D = D_, WG = WG_;
    static constexpr int KV_TPK = 8;
    static constexpr int NW = 4 * (WG + 1), THREADS = NW * 32, ROWS = 64 * WG;
    static constexpr int CONSUMERS = 128 * WG, PRODUCERS = 128;
    /* 64-key tiles, as the host emulation's and the other engines': 128-key
     * tiles (m64n128k16 for S) were a little faster (docs/kernels.md,
     * Measured choices), but move the edge tiles away from the spec's (the
     * edge-tile mutant then no longer breaks the same elements as on the
     * host) */
    static constexpr int TK = 64, NT = 64;
    static constexpr int STAGES = D_ == 256 ? 3 : 5, LAG = 1;
    static constexpr int Q_BYTES = ROWS * D * 2;
    static constexpr int TILE_BYTES = TK * D * 2;
    static constexpr int STAGE_BYTES = 2 * TILE_BYTES;
    static constexpr int RING_BYTES = STAGES * STAGE_BYTES;
    static constexpr int ALIGN = 1024;
    static constexpr int QBUF = ALIGN + 2 * Q_BYTES + RING_BYTES + (2 * STAGES + 4) * 8 <= 227 * 1024 ? 2 : 1;
    static constexpr int BAR_BYTES = (2 * STAGES + 2 * QBUF) * 8; /* full[], empty[], q_full[], q_empty[] */
    static constexpr int SMEM_BYTES = ALIGN + QBUF * Q_BYTES + RING_BYTES + BAR_BYTES;
    static constexpr int CHUNKS = D / 8;
    static constexpr int LOADS = TK * CHUNKS / PRODUCERS;
    /* registers per thread after setmaxnreg (two consumer warpgroups only:
     * 384 threads launch with 168; 128 x (168 - 56) = 256 x (224 - 168)) */
    static constexpr int PRODUCER_REGS = 56, CONSUMER_REGS = 224;
    static_assert(D == 64 || D == 128 || (D == 256 && WG == 1),
                  "wgmma engine: head_dim 64 or 128, or 256 with one consumer warpgroup (O is 128 registers per "
                  "thread, over the 224 that setmaxnreg leaves two consumers)");
    static_assert(WG == 1 || WG == 2, "wgmma engine: one or two consumer warpgroups");
    static_assert(LAG >= 0 && LAG <= STAGES - 2, "ring: the producer may lag at most STAGES - 2 tiles (deadlock-free)");
    static_assert((TK * CHUNKS) % PRODUCERS == 0, "tile loads must split evenly over the producer");
    static_assert(SMEM_BYTES <= 227 * 1024, "wgmma engine: shared memory over the sm_90 limit");
};

/* The work items of one warp-specialised CTA: item k of CTA b in a grid
 * of G is number k G + b for even k and k G + G - 1 - b for odd k (a
 * snake, so that a CTA that took one of the longest items of a round
 * takes one of the shortest of the next: the prefill launcher orders
 * items longest first under a causal mask), counted from the end as the
 * other engines' CTAs are (swa_prefill_prob::init); -1 past the last.
 * With one CTA per item (G = items) each CTA runs exactly its own, in the
 * order the other engines' CTAs run theirs. */
struct swa_ws_sched {
    int items;
    __device__ int item(int k) const
    {
        const int G = (int)gridDim.x, b = (int)blockIdx.x;
        const long long idx = (long long)k * G + ((k & 1) ? G - 1 - b : b);
        return idx < items ? items - 1 - (int)idx : -1;
    }
};

/* Byte offset of (row, 16-byte chunk) in a [ROWS x D] matrix stored as
 * D/64 blocks of [ROWS][64] elements with the 128-byte swizzle. */
template <int ROWS> __device__ __forceinline__ uint32_t swa_sw128_off(int row, int chunk)
{
    return (uint32_t)((chunk >> 3) * (ROWS * 128) + row * 128 + (((chunk & 7) ^ (row & 7)) << 4));
}

#if SWA_WGMMA_DEVICE
/* ---------------------------------------------------------------------------
 * wgmma PTX (sm_90a). */

/* Descriptor of a 128-byte-swizzled operand at shared address saddr. */
__device__ __forceinline__ uint64_t swa_wg_desc(uint32_t saddr, uint32_t lbo_bytes, uint32_t sbo_bytes)
{
    return (uint64_t)((saddr & 0x3ffffu) >> 4) | ((uint64_t)((lbo_bytes & 0x3ffffu) >> 4) << 16) |
           ((uint64_t)((sbo_bytes & 0x3ffffu) >> 4) << 32) | (1ull << 62);
}
/* The same descriptor with the start address moved by `bytes` (a multiple
 * of 16; the 14-bit address field cannot carry: shared addresses < 256 KiB). */
__device__ __forceinline__ uint64_t swa_wg_desc_add(uint64_t desc, uint32_t bytes) { return desc + (bytes >> 4); }

__device__ __forceinline__ void swa_wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void swa_wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void swa_wg_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
/* Generic-proxy writes of this thread (cp.async, st.shared) -> visible to
 * the async proxy, which wgmma's shared-memory operand reads use. */
__device__ __forceinline__ void swa_fence_proxy_async_smem()
{
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
/* mbarrier (shared::cta): init, arrive (release), wait on a phase parity
 * (acquire; try_wait suspends the thread for a while before it polls
 * again). */
__device__ __forceinline__ void swa_mbar_init(uint32_t bar, uint32_t count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void swa_mbar_arrive(uint32_t bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void swa_mbar_wait(uint32_t bar, uint32_t parity)
{
    uint32_t done;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(bar), "r"(parity)
                     : "memory");
    } while (!done);
}
/* Named barrier `id` over `count` threads (whole warps). */
__device__ __forceinline__ void swa_named_sync(int id, int count)
{
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
template <int N> __device__ __forceinline__ void swa_setmaxnreg_inc()
{
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N> __device__ __forceinline__ void swa_setmaxnreg_dec()
{
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
/* Pins registers: the compiler may not move ordinary accesses of them
 * across this point (it sees them read and rewritten here). */
template <int A, int B> __device__ __forceinline__ void swa_wg_pin(float (&r)[A][B])
{
#pragma unroll
    for (int i = 0; i < A; i++)
#pragma unroll
        for (int j = 0; j < B; j++) asm volatile("" : "+f"(r[i][j])::"memory");
}
template <int A, int B> __device__ __forceinline__ void swa_wg_pin(uint32_t (&r)[A][B])
{
#pragma unroll
    for (int i = 0; i < A; i++)
#pragma unroll
        for (int j = 0; j < B; j++) asm volatile("" : "+r"(r[i][j])::"memory");
}

/* Accumulator register lists: N/2 fp32 registers, viewed as d[N/8][4]. */
#define SWA_WG_D32 "{" \
    "%0, %1, %2, %3, %4, %5, %6, %7, " \
    "%8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, " \
    "%24, %25, %26, %27, %28, %29, %30, %31" "}"

#define SWA_WG_OUT32(d) \
    "+f"((d)[0][0]), "+f"((d)[0][1]), "+f"((d)[0][2]), "+f"((d)[0][3]), \
    "+f"((d)[1][0]), "+f"((d)[1][1]), "+f"((d)[1][2]), "+f"((d)[1][3]), \
    "+f"((d)[2][0]), "+f"((d)[2][1]), "+f"((d)[2][2]), "+f"((d)[2][3]), \
    "+f"((d)[3][0]), "+f"((d)[3][1]), "+f"((d)[3][2]), "+f"((d)[3][3]), \
    "+f"((d)[4][0]), "+f"((d)[4][1]), "+f"((d)[4][2]), "+f"((d)[4][3]), \
    "+f"((d)[5][0]), "+f"((d)[5][1]), "+f"((d)[5][2]), "+f"((d)[5][3]), \
    "+f"((d)[6][0]), "+f"((d)[6][1]), "+f"((d)[6][2]), "+f"((d)[6][3]), \
    "+f"((d)[7][0]), "+f"((d)[7][1]), "+f"((d)[7][2]), "+f"((d)[7][3])

#define SWA_WG_D64 "{" \
    "%0, %1, %2, %3, %4, %5, %6, %7, " \
    "%8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, " \
    "%24, %25, %26, %27, %28, %29, %30, %31, " \
    "%32, %33, %34, %35, %36, %37, %38, %39, " \
    "%40, %41, %42, %43, %44, %45, %46, %47, " \
    "%48, %49, %50, %51, %52, %53, %54, %55, " \
    "%56, %57, %58, %59, %60, %61, %62, %63" "}"

#define SWA_WG_OUT64(d) \
    "+f"((d)[0][0]), "+f"((d)[0][1]), "+f"((d)[0][2]), "+f"((d)[0][3]), \
    "+f"((d)[1][0]), "+f"((d)[1][1]), "+f"((d)[1][2]), "+f"((d)[1][3]), \
    "+f"((d)[2][0]), "+f"((d)[2][1]), "+f"((d)[2][2]), "+f"((d)[2][3]), \
    "+f"((d)[3][0]), "+f"((d)[3][1]), "+f"((d)[3][2]), "+f"((d)[3][3]), \
    "+f"((d)[4][0]), "+f"((d)[4][1]), "+f"((d)[4][2]), "+f"((d)[4][3]), \
    "+f"((d)[5][0]), "+f"((d)[5][1]), "+f"((d)[5][2]), "+f"((d)[5][3]), \
    "+f"((d)[6][0]), "+f"((d)[6][1]), "+f"((d)[6][2]), "+f"((d)[6][3]), \
    "+f"((d)[7][0]), "+f"((d)[7][1]), "+f"((d)[7][2]), "+f"((d)[7][3]), \
    "+f"((d)[8][0]), "+f"((d)[8][1]), "+f"((d)[8][2]), "+f"((d)[8][3]), \
    "+f"((d)[9][0]), "+f"((d)[9][1]), "+f"((d)[9][2]), "+f"((d)[9][3]), \
    "+f"((d)[10][0]), "+f"((d)[10][1]), "+f"((d)[10][2]), "+f"((d)[10][3]), \
    "+f"((d)[11][0]), "+f"((d)[11][1]), "+f"((d)[11][2]), "+f"((d)[11][3]), \
    "+f"((d)[12][0]), "+f"((d)[12][1]), "+f"((d)[12][2]), "+f"((d)[12][3]), \
    "+f"((d)[13][0]), "+f"((d)[13][1]), "+f"((d)[13][2]), "+f"((d)[13][3]), \
    "+f"((d)[14][0]), "+f"((d)[14][1]), "+f"((d)[14][2]), "+f"((d)[14][3]), \
    "+f"((d)[15][0]), "+f"((d)[15][1]), "+f"((d)[15][2]), "+f"((d)[15][3])

/* The three products the engine issues, per dtype:
 *   qk:  d[8][4]      (+)= A(smem desc, K-major) x B(smem desc, K-major), m64n64k16
 *   pv:  d[D/8][4]     += A(registers)          x B(smem desc, MN-major), m64n{D}k16
 * scale_d = 0 makes the first k-step overwrite d (qk). */
#define SWA_WG_DEFINE_OPS(CTYPE, PTXT)                                                                          \
    template <> struct swa_wg_ops<CTYPE> {                                                                      \
        static __device__ __forceinline__ void qk(float (&d)[8][4], uint64_t desc_a, uint64_t desc_b, int scale_d) \
        {                                                                                                       \
            asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"                                           \
                         "wgmma.mma_async.sync.aligned.m64n64k16.f32." PTXT "." PTXT " " SWA_WG_D32           \
                         ", %32, %33, p, 1, 1, 0, 0;\n}\n"                                                      \
                         : SWA_WG_OUT32(d)                                                                      \
                         : "l"(desc_a), "l"(desc_b), "r"(scale_d));                                             \
        }                                                                                                       \
        static __device__ __forceinline__ void pv(float (&d)[8][4], const uint32_t (&a)[4], uint64_t desc_b)    \
        {                                                                                                       \
            asm volatile("wgmma.mma_async.sync.aligned.m64n64k16.f32." PTXT "." PTXT " " SWA_WG_D32            \
                         ", {%32, %33, %34, %35}, %36, 1, 1, 1, 1;\n"                                           \
                         : SWA_WG_OUT32(d)                                                                      \
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b));                            \
        }                                                                                                       \
        static __device__ __forceinline__ void pv(float (&d)[16][4], const uint32_t (&a)[4], uint64_t desc_b)   \
        {                                                                                                       \
            asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32." PTXT "." PTXT " " SWA_WG_D64           \
                         ", {%64, %65, %66, %67}, %68, 1, 1, 1, 1;\n"                                           \
                         : SWA_WG_OUT64(d)                                                                      \
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b));                            \
        }                                                                                                       \
    };

template <typename T> struct swa_wg_ops;
SWA_WG_DEFINE_OPS(swa_half_t, "f16")
SWA_WG_DEFINE_OPS(swa_bf16_t, "bf16")
#undef SWA_WG_DEFINE_OPS
/* ---------------------------------------------------------------------------
 * The engine's pieces: Q loads, row state, the two products, P's packing,
 * the epilogue. */

/* Q rows [row0, row0 + nrows) -> shared (invalid rows zero-filled), by
 * nthreads threads; one commit group. */
template <int ROWS, int CHUNKS, typename T, class Prob>
__device__ __forceinline__ void swa_wg_load_q(const Prob &prob, unsigned char *sQ, const T *qg, int row0, int nrows,
                                              int tid, int nthreads)
{
    for (int idx = tid; idx < nrows * CHUNKS; idx += nthreads) {
        int row = row0 + idx / CHUNKS, c = idx % CHUNKS;
        swa_row_info ri = prob.row(row);
        swa_cp_async16(sQ + swa_sw128_off<ROWS>(row, c), qg + (ri.valid ? ri.q_off + c * 8 : 0), ri.valid);
    }
    swa_cp_async_commit();
}

/* The warp's two rows (16 warp + g and + 8: warp w % 4 of warpgroup w / 4
 * owns the m64 accumulator's rows 16 (w % 4) + ..), their key bounds, and
 * the online-softmax state reset. */
template <int D, class Prob>
__device__ __forceinline__ void swa_wg_rows_init(const Prob &prob, int warp, int g, int (&lo)[2], int (&hi)[2],
                                                 float (&o)[1][D / 8][4], float (&m)[2], float (&dsum)[2])
{
#pragma unroll
    for (int r = 0; r < 2; r++) {
        swa_row_info ri = prob.row(warp * 16 + g + r * 8);
        lo[r] = ri.lo;
        hi[r] = min(ri.hi, prob.kv_end - 1);
        m[r] = -CUDART_INF_F;
        dsum[r] = 0.f;
    }
#pragma unroll
    for (int i = 0; i < D / 8; i++) o[0][i][0] = o[0][i][1] = o[0][i][2] = o[0][i][3] = 0.f;
}

/* S = Q K^T, the D/16 k-steps (no fence, no commit): k-step ks reads dims
 * 16ks..16ks+15, 32 bytes into the 128-byte rows of block ks/4. */
template <int D, int ROWS, int TK, typename T>
__device__ __forceinline__ void swa_wg_qk_steps(float (&s)[1][8][4], uint64_t q_desc, uint64_t k_desc)
{
#pragma unroll
    for (int ks = 0; ks < D / 16; ks++) {
        const uint32_t kbytes = (uint32_t)((ks % 4) * 32);
        swa_wg_ops<T>::qk(s[0], swa_wg_desc_add(q_desc, kbytes + (uint32_t)((ks / 4) * ROWS * 128)),
                          swa_wg_desc_add(k_desc, kbytes + (uint32_t)((ks / 4) * TK * 128)), ks > 0);
    }
}

/* O += P V, the NT/16 k-steps (no fence, no commit): k-step kk reads V keys
 * 16kk.. (2048 bytes per 16 rows of 128 bytes).  head_dim 256: two
 * m64n128k16 per k-step, dims 0-127 and 128-255 (V's 64-dim blocks 2 and 3
 * start 2 x NT x 128 bytes on; the same LBO and SBO). */
template <int NT, int D, typename T>
__device__ __forceinline__ void swa_wg_pv_steps(float (&o)[1][D / 8][4], const uint32_t (&a)[NT / 16][4],
                                                uint64_t v_desc)
{
#pragma unroll
    for (int kk = 0; kk < NT / 16; kk++) {
        const uint64_t d = swa_wg_desc_add(v_desc, (uint32_t)(kk * 16 * 128));
        if constexpr (D <= 128) {
            swa_wg_ops<T>::pv(o[0], a[kk], d);
        } else {
            static_assert(D == 256, "wgmma P V: head_dim 64, 128 or 256");
            swa_wg_ops<T>::pv(*reinterpret_cast<float(*)[16][4]>(&o[0][0]), a[kk], d);
            swa_wg_ops<T>::pv(*reinterpret_cast<float(*)[16][4]>(&o[0][16]), a[kk],
                              swa_wg_desc_add(d, (uint32_t)(2 * NT * 128)));
        }
    }
}

/* P in the dtype as the A fragments of 16 keys each (the mma.sync engine's
 * packing, which is also wgmma's register A layout). */
template <int NT, typename T>
__device__ __forceinline__ void swa_wg_pack_p(uint32_t (&a)[NT / 16][4], const float (&s)[1][NT / 8][4])
{
    typedef swa_dt<T> dt;
#pragma unroll
    for (int kk = 0; kk < NT / 16; kk++) {
        a[kk][0] = dt::pack(s[0][2 * kk][0], s[0][2 * kk][1]);
        a[kk][1] = dt::pack(s[0][2 * kk][2], s[0][2 * kk][3]);
        a[kk][2] = dt::pack(s[0][2 * kk + 1][0], s[0][2 * kk + 1][1]);
        a[kk][3] = dt::pack(s[0][2 * kk + 1][2], s[0][2 * kk + 1][3]);
    }
}

/* The epilogue, from registers, as the mma.sync engine's with one key
 * split, with no shared memory and no barrier (the ring is already being
 * refilled with the next work item's tiles).  In the m64 accumulator lane t4 of a quad holds
 * dims 2 t4, 2 t4 + 1 of every 8-dim chunk of its rows; a 4 x 4 transpose
 * of those pairs inside the quad (two xor-shuffle stages: at stage x the
 * pairs whose lane bit x differs from their slot bit x trade places with
 * the partner lane's) leaves lane t4 with all 8 dims of chunks 4 q + t4,
 * which it finishes and writes (swa_finish_chunk: a warp's store covers 8
 * rows x 4 consecutive chunks). */
template <int D, class Prob>
__device__ __forceinline__ void swa_wg_epilogue_regs(const Prob &prob, const float (&o)[1][D / 8][4],
                                                     const float (&m)[2], const float (&dsum)[2], int warp, int g,
                                                     int t4)
{
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const float mmax = fmaxf(-CUDART_INF_F, m[r]); /* as the shared-memory epilogue reads it */
#pragma unroll
        for (int q = 0; q < D / 32; q++) {
            float x[4][2]; /* slot k: chunk 4q + k's pair of this lane; after the transpose, lane k's pair of chunk 4q + t4 */
#pragma unroll
            for (int k = 0; k < 4; k++) {
                x[k][0] = o[0][4 * q + k][2 * r];
                x[k][1] = o[0][4 * q + k][2 * r + 1];
            }
#pragma unroll
            for (int bit = 2; bit >= 1; bit >>= 1) {
                const bool hi = (t4 & bit) != 0;
#pragma unroll
                for (int k0 = 0; k0 < 4; k0++) {
                    if (k0 & bit) continue;
                    const int k1 = k0 | bit; /* a lane with the bit clear gives slot k1 and takes the partner's k0 */
#pragma unroll
                    for (int e = 0; e < 2; e++) {
                        const float got = swa_shfl_xor(hi ? x[k0][e] : x[k1][e], bit);
                        if (hi) x[k0][e] = got;
                        else x[k1][e] = got;
                    }
                }
            }
            float acc[8];
#pragma unroll
            for (int k = 0; k < 4; k++) {
                acc[2 * k] = x[k][0];
                acc[2 * k + 1] = x[k][1];
            }
            swa_finish_chunk(prob, warp * 16 + g + 8 * r, 4 * q + t4, acc, mmax, dsum[r]);
        }
    }
}
#endif /* SWA_WGMMA_DEVICE */

/* ---------------------------------------------------------------------------
 * The warp-specialised roles: the producer's gather and tile step, the
 * consumers' loop over one work item's tiles. */
#if SWA_WGMMA_DEVICE

/* Where the K/V rows of one kv head live (the problem class's kv_rows):
 * key t at byte base + page(t) * page_bytes + (t % page_size) *
 * slot_bytes, page(t) = pages[t / page_size], or t itself where pages is
 * null (ragged: page size 1, slot_bytes 0). */
struct swa_kv_rows {
    const int *pages;
    swa_divmod pdiv;
    unsigned long long page_bytes, slot_bytes, head_bytes;
};

/* The warp-specialised producer's cp.async gather of one ring stage: the
 * work swa_ring_loads does for the other engines (TPK threads per key
 * row; thread tid takes keys tid / TPK + k * STEP of the tile and, of
 * each, the 16-byte chunks h, h + TPK, .. with h = tid % TPK; page-table
 * reads a tile ahead, keys past the KV range zero-filled), with the
 * address work per key cut down, because the producer warp shares its
 * scheduler with two consumer warps and its instructions are theirs lost:
 *  - the page-table read keeps the key's slot (t % page_size) with it, so
 *    the copy does not divide again;
 *  - the source address is two wide multiply-adds from a per-thread base
 *    (K's; V's is a fixed distance away), not a 64-bit product chain in a
 *    branch per key (an out-of-range key copies from the base, with
 *    src-size 0: nothing is read);
 * TPK_MAX caps TPK below 8 (a 128-byte line per 8 threads): fewer threads
 * per key row, so fewer keys, page-table reads and addresses per thread,
 * each chunk copy of a warp spread over more rows. */
template <int TK, int THREADS, int CHUNKS, int TPK_MAX>
struct swa_ws_gather : swa_ring_split<TK, THREADS, CHUNKS, TPK_MAX> {
    typedef swa_ring_split<TK, THREADS, CHUNKS, TPK_MAX> split;
    using split::TPK;
    using split::STEP;
    using split::KEYS;
    using split::CPT;
    const swa_kv_rows rows;
    const unsigned long long kbase, vdist; /* K's row base + this thread's first chunk; V - K */
    const int ld_h, ld_j0, kv_begin, kv_end, num_tiles;
    int page[KEYS], slot[KEYS]; /* page -1: past the KV range */
    __device__ swa_ws_gather(int tid, int begin, int end, int tiles, const swa_kv_rows &r, const void *kg,
                             const void *vg)
        : rows(r), kbase((unsigned long long)kg + r.head_bytes + (unsigned long long)(tid % TPK) * 16),
          vdist((unsigned long long)vg - (unsigned long long)kg), ld_h(tid % TPK), ld_j0(tid / TPK),
          kv_begin(begin), kv_end(end), num_tiles(tiles)
    {
    }
    __device__ __forceinline__ void lookup(int tile)
    {
        const int t0 = kv_begin + tile * TK + ld_j0;
#pragma unroll
        for (int k = 0; k < KEYS; k++) {
            const int t = t0 + k * STEP, q = rows.pdiv.div(t);
            slot[k] = t - q * rows.pdiv.d;
            page[k] = (tile < num_tiles && t < kv_end) ? (rows.pages ? rows.pages[q] : q) : -1;
        }
    }
    template <class Dst>
    __device__ __forceinline__ void issue(unsigned char *sK, unsigned char *sV, Dst dst) const
    {
#pragma unroll
        for (int k = 0; k < KEYS; k++) {
            const int j = ld_j0 + k * STEP;
            const bool valid = page[k] >= 0;
            const unsigned pg = valid ? (unsigned)page[k] : 0u, sl = valid ? (unsigned)slot[k] : 0u;
            const unsigned long long src = kbase + pg * rows.page_bytes + sl * rows.slot_bytes;
#pragma unroll
            for (int i = 0; i < CPT; i++) {
                const uint32_t b = dst(j, i * TPK + ld_h);
                swa_cp_async16(sK + b, reinterpret_cast<const void *>(src + i * TPK * 16), valid);
                swa_cp_async16(sV + b, reinterpret_cast<const void *>(src + vdist + i * TPK * 16), valid);
            }
        }
    }
};

/* The producer's step for tile t of a work item, at ring position n (the
 * CTA's count of tiles before it): wait until the stage is free (its
 * previous tile's consumers have released it), gather the tile into it,
 * close the tile's cp.async group, and read the next tile's pages while
 * these copies fly.  Signalling the stage full stays with the engine (LAG
 * tiles later). */
template <class Cfg, class Gather>
__device__ __forceinline__ void swa_ws_produce_tile(Gather &loads, unsigned char *sRing, uint32_t bar_empty, int t,
                                                    int n)
{
    constexpr int STAGES = Cfg::STAGES;
    const int st = n % STAGES;
    if (n >= STAGES) swa_mbar_wait(bar_empty + st * 8, (uint32_t)((n / STAGES - 1) & 1));
    unsigned char *sK = sRing + st * Cfg::STAGE_BYTES;
    loads.issue(sK, sK + Cfg::TILE_BYTES, [](int j, int c) { return swa_sw128_off<Cfg::TK>(j, c); });
    swa_cp_async_commit();
    loads.lookup(t + 1);
}

/* A consumer warpgroup's tiles of one work item: per tile j, wait for its
 * stage (the CTA's ring position n0 + j), issue S = Q K_j^T and, in the
 * same fence, O += P_{j-1} V_{j-1}; wait for S only (wait_group 1), mask
 * and online softmax while P V runs, wait for it, release tile j-1's
 * stage (lane 0 of each warp arrives on empty), rescale O by tile j's
 * change of maximum and pack P_j.  The last tile's P V follows the loop,
 * and its stage is released too (the CTA's next item reuses it).
 * ptxas needs every wgmma batch and its wait on every path, so the first
 * tile is peeled off the loop and nothing in the loop is conditional on j.
 * (O rescaled under the next Q K^T lost on the persistent grid, ping-pong
 * of the two consumer warpgroups gained nothing: docs/kernels.md, Measured
 * choices.) */
template <class Cfg, typename T, class Prob>
__device__ __forceinline__ void swa_ws_consume_tiles(const Prob &prob, int num_tiles, int n0, uint64_t q_desc,
                                                     uint32_t ring_addr, uint32_t bar_full, uint32_t bar_empty,
                                                     const int (&lo)[2], const int (&hi)[2],
                                                     float (&o)[1][Cfg::D / 8][4], float (&m)[2], float (&dsum)[2],
                                                     int lane, int t4)
{
    constexpr int D = Cfg::D, NT = Cfg::NT, TK = Cfg::TK, ROWS = Cfg::ROWS, STAGES = Cfg::STAGES;
    const float masked_low = prob.masked_low_logit();
    const float scale2 = prob.sm_scale * SWA_LOG2E;
    const int kv_begin = prob.kv_begin;
    auto stage_addr = [&](int j) { return ring_addr + (uint32_t)(((n0 + j) % STAGES) * Cfg::STAGE_BYTES); };
    auto full_wait = [&](int j) {
        const int n = n0 + j;
        swa_mbar_wait(bar_full + (n % STAGES) * 8, (uint32_t)((n / STAGES) & 1));
    };
    auto release = [&](int j) {
        __syncwarp();
        if (lane == 0) swa_mbar_arrive(bar_empty + ((n0 + j) % STAGES) * 8);
    };

    uint32_t a[NT / 16][4]; /* P of the previous tile, the A operand of its P V */
    auto issue_qk = [&](int j, float (&s)[1][NT / 8][4]) {
        const uint64_t k_desc = swa_wg_desc(stage_addr(j), 16, 1024);
        swa_wg_fence();
        swa_wg_qk_steps<D, ROWS, TK, T>(s, q_desc, k_desc);
        swa_wg_commit();
    };
    auto issue_pv = [&](int j) {
        const uint64_t v_desc = swa_wg_desc(stage_addr(j) + Cfg::TILE_BYTES, TK * 128, 1024);
        swa_wg_fence();
        swa_wg_pv_steps<NT, D, T>(o, a, v_desc);
        swa_wg_commit();
    };
    /* mask and online softmax of S_j (corr: each row's change of maximum) */
    auto softmax = [&](int j, float (&s)[1][NT / 8][4], float (&corr)[2]) {
        const int key0 = kv_begin + j * TK;
        const float mul = swa_tile_logits<1, NT>(s, prob, lo, hi, key0, key0, t4, masked_low, scale2);
        swa_tile_softmax_p<1, NT>(s, m, dsum, corr, mul);
    };
    /* O rescaled (its previous products landed), P_j packed as the A operand */
    auto rescale_pack = [&](float (&s)[1][NT / 8][4], const float (&corr)[2]) {
        swa_rescale_o<1, D / 8>(o, corr);
        swa_wg_pack_p<NT, T>(a, s);
    };

    if (num_tiles > 0) {
        {
            full_wait(0);
            float s[1][NT / 8][4], corr[2];
            issue_qk(0, s);
            swa_wg_wait<0>();
            swa_wg_pin(s[0]);
            softmax(0, s, corr);
            rescale_pack(s, corr);
        }
        for (int j = 1; j < num_tiles; j++) {
            full_wait(j);
            float s[1][NT / 8][4], corr[2];
            swa_wg_pin(o[0]);
            swa_wg_pin(a);
            issue_qk(j, s);
            issue_pv(j - 1);
            swa_wg_wait<1>(); /* S_j has landed; P_{j-1} V_{j-1} may still run */
            swa_wg_pin(s[0]);
            softmax(j, s, corr);
            swa_wg_wait<0>(); /* P_{j-1} V_{j-1} has landed: O and a are mine again */
            swa_wg_pin(o[0]);
            swa_wg_pin(a);
            release(j - 1);
            rescale_pack(s, corr);
        }
        swa_wg_pin(o[0]);
        swa_wg_pin(a);
        issue_pv(num_tiles - 1);
        swa_wg_wait<0>();
        swa_wg_pin(o[0]);
        release(num_tiles - 1);
    }
}
#endif /* SWA_WGMMA_DEVICE */

/* ---------------------------------------------------------------------------
 * The warp-specialised engine: the mma.sync engine's attention, tiles and
 * rounding points, with the two products on wgmma, the work split by role,
 * the products overlapped with the softmax, and a CTA running the work
 * items swa_ws_sched gives it back to back (one each in a grid of one CTA
 * per item; several in the persistent grid of one CTA per SM, or fewer),
 * the next item's Q and K/V loads overlapping the current item's last
 * tiles and epilogue.
 *
 *  - The producer warpgroup (the last, 128 threads; setmaxnreg down to
 *    Cfg::PRODUCER_REGS = 56 registers when there are two consumers), per
 *    item with at least one KV tile: waits for the item's Q buffer
 *    (q_empty[b], b = i % QBUF for the CTA's i-th such item: the consumers
 *    are done with the item QBUF back), gathers the item's ROWS Q rows into it by
 *    cp.async (invalid rows zero-filled; one commit group, signalled on
 *    q_full[b] with the first tile), then fills the ring: for the CTA's
 *    n-th tile it waits for empty[n % STAGES] (every consumer warp done
 *    with the tile that was there), gathers it by cp.async (swa_ws_gather;
 *    keys past the KV range zero-filled), and once the tile's copies have
 *    landed (wait_group LAG, LAG tiles later; all of them at the item's
 *    end) makes them visible to the async proxy (fence.proxy.async) and
 *    arrives on full[].
 *  - Each consumer warpgroup (64 query rows; setmaxnreg up to
 *    Cfg::CONSUMER_REGS = 224), per item: waits for q_full[b], then per
 *    tile j: waits for full[], issues S = Q K_j^T and, in the same fence,
 *    O += P_{j-1} V_{j-1} (the previous tile's product), waits for S only
 *    (wait_group 1), runs the mask and the online softmax while P V runs,
 *    waits for it, releases tile j-1's stage (lane 0 of each warp arrives
 *    on empty), rescales O by the change of maximum and packs P_j.  The
 *    last tile's P V follows the loop; then the last stage and the Q
 *    buffer are released and the rows written from registers
 *    (swa_wg_epilogue_regs), while the producer already loads the next
 *    item.  O_j = corr_j (O_{j-1} + P_{j-1} V_{j-1}) + ... is the same sum
 *    in the same order whatever the grid.  An item with no KV tile
 *    (every row's window empty) writes its rows without Q or the ring.
 *  - The two consumer warpgroups never wait for each other (no
 *    __syncthreads, no shared epilogue): one runs its softmax while the
 *    other's products occupy the tensor cores, as far as the ring allows.
 *
 * Ordering: full[] and q_full[] make the producer's copies (fenced to the
 * async proxy by the thread that made them) visible to the consumer's wgmma reads
 * (release by mbarrier.arrive, acquire by try_wait); empty[] and q_empty[]
 * are arrived on after wgmma.wait_group, when the warp's reads of the
 * stage or the Q buffer are done.  Phases: the CTA's n-th tile (counted
 * over its items) is the (n / STAGES)-th use of its stage, so full is
 * waited on with parity (n / STAGES) & 1 and empty, for n >= STAGES, with
 * parity (n / STAGES - 1) & 1; the i-th item with tiles uses Q buffer i %
 * QBUF for the (i / QBUF)-th time, likewise.  The producer signals tile t only
 * after issuing tile t + LAG, which needs tile t + LAG - STAGES released;
 * the consumers release tile j - 2 before they wait for tile j, so LAG <=
 * STAGES - 2 cannot deadlock (static_assert in swa_wgmma_ws_cfg); at an
 * item's end the producer signals every tile it has not yet, so no wait
 * crosses an item. */
template <class Cfg, typename T, class Prob>
__device__ __forceinline__ void swa_attn_engine_wgmma_ws(Prob &prob, unsigned char *smem_raw,
                                                        const swa_ws_sched &sched)
{
#if SWA_WGMMA_DEVICE
    constexpr int D = Cfg::D, TK = Cfg::TK, ROWS = Cfg::ROWS, WG = Cfg::WG;
    constexpr int STAGES = Cfg::STAGES, LAG = Cfg::LAG, CHUNKS = Cfg::CHUNKS, CONSUMERS = Cfg::CONSUMERS;

    unsigned char *smem = smem_raw + ((Cfg::ALIGN - (swa_smem_addr(smem_raw) & (Cfg::ALIGN - 1))) & (Cfg::ALIGN - 1));
    constexpr int QBUF = Cfg::QBUF;
    constexpr unsigned UQBUF = QBUF;
    unsigned char *sQ = smem; /* QBUF buffers of Q_BYTES */
    unsigned char *sRing = smem + QBUF * Cfg::Q_BYTES;
    const uint32_t bar_full = swa_smem_addr(sRing + Cfg::RING_BYTES);
    const uint32_t bar_empty = bar_full + STAGES * 8;
    const uint32_t bar_qfull = bar_empty + STAGES * 8, bar_qempty = bar_qfull + QBUF * 8;

    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32, wgi = warp / 4;
    const int g = lane / 4, t4 = lane % 4;

    const T *qg = reinterpret_cast<const T *>(prob.q);
    const T *kg = reinterpret_cast<const T *>(prob.k);
    const T *vg = reinterpret_cast<const T *>(prob.v);

    if (tid == 0) {
#pragma unroll
        for (int st = 0; st < STAGES; st++) {
            swa_mbar_init(bar_full + st * 8, Cfg::PRODUCERS);
            swa_mbar_init(bar_empty + st * 8, 4 * WG);
        }
#pragma unroll
        for (int b = 0; b < QBUF; b++) {
            swa_mbar_init(bar_qfull + b * 8, Cfg::PRODUCERS);
            swa_mbar_init(bar_qempty + b * 8, 4 * WG);
        }
    }
    __syncthreads(); /* the barriers exist before anyone arrives or waits */

    /* ring position of the CTA's next tile, and how many items with tiles
     * came before (their Q buffers take turns); both roles count alike */
    int n0 = 0;
    unsigned qn = 0; /* unsigned: qn % UQBUF and qn / UQBUF are a mask and a shift */

    if (wgi == WG) {
        /* ---- producer ---- */
        if constexpr (WG == 2) swa_setmaxnreg_dec<Cfg::PRODUCER_REGS>();
        const int ptid = tid - CONSUMERS;
        for (int k = 0;; k++) {
            const int item = sched.item(k);
            if (item < 0) break;
            if (!prob.template init_at<ROWS>(item)) continue;
            const int kv_begin = prob.kv_begin, kv_end = prob.kv_end;
            const int num_tiles = kv_end > kv_begin ? (kv_end - kv_begin + TK - 1) / TK : 0;
            if (num_tiles == 0) continue;
            const int qb = (int)(qn % UQBUF);
            if (qn >= UQBUF) swa_mbar_wait(bar_qempty + qb * 8, (uint32_t)((qn / UQBUF - 1) & 1));
            swa_wg_load_q<ROWS, CHUNKS>(prob, sQ + qb * Cfg::Q_BYTES, qg, 0, ROWS, ptid, Cfg::PRODUCERS);

            swa_ws_gather<TK, Cfg::PRODUCERS, CHUNKS, Cfg::KV_TPK> loads(ptid, kv_begin, kv_end, num_tiles,
                                                                          prob.template kv_rows<T>(), kg, vg);
            static_assert(decltype(loads)::LOADS == Cfg::LOADS, "ring loads per thread");
            loads.lookup(0);
            for (int t = 0; t < num_tiles; t++) {
                const int n = n0 + t;
                swa_ws_produce_tile<Cfg>(loads, sRing, bar_empty, t, n);
                if (t >= LAG) {
                    /* the Q group (older than tile 0's) has landed with tile t - LAG's */
                    swa_cp_async_wait<LAG>();
                    swa_fence_proxy_async_smem();
                    if (t == LAG) swa_mbar_arrive(bar_qfull + qb * 8);
                    swa_mbar_arrive(bar_full + ((n - LAG) % STAGES) * 8);
                }
            }
            swa_cp_async_wait<0>();
            swa_fence_proxy_async_smem();
            if (num_tiles <= LAG) swa_mbar_arrive(bar_qfull + qb * 8);
            for (int t = num_tiles > LAG ? num_tiles - LAG : 0; t < num_tiles; t++)
                swa_mbar_arrive(bar_full + ((n0 + t) % STAGES) * 8);
            n0 += num_tiles;
            qn++;
        }
        return; /* the consumers write the rows */
    }

    /* ---- consumers ---- */
    if constexpr (WG == 2) swa_setmaxnreg_inc<Cfg::CONSUMER_REGS>();
    const uint32_t ring_addr = swa_smem_addr(sRing);

    for (int k = 0;; k++) {
        const int item = sched.item(k);
        if (item < 0) break;
        if (!prob.template init_at<ROWS>(item)) continue;
        const int kv_begin = prob.kv_begin, kv_end = prob.kv_end;
        const int num_tiles = kv_end > kv_begin ? (kv_end - kv_begin + TK - 1) / TK : 0;

        int lo[2], hi[2];
        float o[1][D / 8][4], m[2], dsum[2];
        swa_wg_rows_init<D>(prob, warp, g, lo, hi, o, m, dsum);

        if (num_tiles > 0) {
            const int qb = (int)(qn % UQBUF);
            /* my warpgroup's 64 rows of Q buffer qb */
            const uint64_t q_desc =
                swa_wg_desc(swa_smem_addr(sQ) + (uint32_t)(qb * Cfg::Q_BYTES + wgi * 64 * 128), 16, 1024);
            swa_mbar_wait(bar_qfull + qb * 8, (uint32_t)((qn / UQBUF) & 1));
            swa_ws_consume_tiles<Cfg, T>(prob, num_tiles, n0, q_desc, ring_addr, bar_full, bar_empty, lo, hi, o, m,
                                         dsum, lane, t4);
            __syncwarp();
            if (lane == 0) swa_mbar_arrive(bar_qempty + qb * 8); /* my last wgmma read of Q has completed */
            n0 += num_tiles;
            qn++;
        }

        swa_quad_sum(dsum);
        swa_wg_epilogue_regs<D>(prob, o, m, dsum, warp, g, t4);
    }
#else
    (void)prob;
    (void)smem_raw;
    (void)sched;
#endif /* SWA_WGMMA_DEVICE */
}

} /* namespace SWA_NS */

#endif /* SWA_TENSOR_CORE_ENGINE */

#endif /* SWADIFF_CUDA_ATTN_ENGINE_SM90_CUH */
