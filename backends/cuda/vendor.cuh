/* vendor.cuh — the one place where the GPU vendor's names appear.
 *
 * Every kernel file includes this header and uses the names below (cuda*
 * runtime calls, SWA_WARP_SIZE, swa_shfl_xor, the tensor-core helpers of
 * attn_engine.cuh), so the ROCm build maps names here instead of copying
 * kernels (the ggml habit).  Two builds of the same sources:
 *   - NVIDIA (nvcc): the cuda* names as they are, 32-lane warps, the
 *     mma.sync / ldmatrix / cp.async engine (SWA_TENSOR_CORE_ENGINE 1).
 *   - ROCm (hipcc -DSWADIFF_HIP_BUILD): cuda* -> hip*, the wavefront width of
 *     the target (64 on CDNA), mask-free shuffles, and the portable engine
 *     (plain vector loads, FMA products; SWA_TENSOR_CORE_ENGINE 0).
 * -DSWADIFF_PORTABLE_KERNELS selects the portable engine on NVIDIA too, so
 * the code AMD runs can be validated on an NVIDIA GPU.
 *
 * Symbols: both builds link into one binary, so everything with external
 * linkage lives in namespace SWA_NS (swa_cuda / swa_hip) and the C-linkage
 * entry points are spelled SWA_DEV_SYM(name) (swa_cuda_name / swa_hip_name).
 *
 * Test: compiled into every source of backends/cuda by both builds;
 * tests/gpu_test_kernels.c (NVIDIA), tests/test_hip_build.c (ROCm build). */
#ifndef SWADIFF_CUDA_VENDOR_CUH
#define SWADIFF_CUDA_VENDOR_CUH

#if defined(SWADIFF_HIP_BUILD)
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <stdint.h>
#define cudaError_t hipError_t
#define cudaSuccess hipSuccess
#define cudaErrorIllegalAddress hipErrorIllegalAddress
#define cudaErrorLaunchFailure hipErrorLaunchFailure
#define cudaGetErrorString hipGetErrorString
#define cudaGetErrorName hipGetErrorName
#define cudaGetLastError hipGetLastError
#define cudaGetDeviceCount hipGetDeviceCount
#define cudaGetDeviceProperties hipGetDeviceProperties
#define cudaDeviceGetAttribute hipDeviceGetAttribute
#define cudaDevAttrMultiProcessorCount hipDeviceAttributeMultiprocessorCount
#define cudaDeviceProp hipDeviceProp_t
#define cudaDriverGetVersion hipDriverGetVersion
#define cudaRuntimeGetVersion hipRuntimeGetVersion
#define cudaMalloc hipMalloc
#define cudaFree hipFree
#define cudaMemGetInfo hipMemGetInfo
#define cudaMemcpy hipMemcpy
#define cudaMemcpyAsync hipMemcpyAsync
#define cudaMemset hipMemset
#define cudaMemsetAsync hipMemsetAsync
#define cudaMemcpyHostToDevice hipMemcpyHostToDevice
#define cudaMemcpyDeviceToHost hipMemcpyDeviceToHost
#define cudaMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define cudaStream_t hipStream_t
#define cudaStreamCreate hipStreamCreate
#define cudaStreamCreateWithFlags hipStreamCreateWithFlags
#define cudaStreamNonBlocking hipStreamNonBlocking
#define cudaStreamDestroy hipStreamDestroy
#define cudaStreamSynchronize hipStreamSynchronize
#define cudaStreamBeginCapture hipStreamBeginCapture
#define cudaStreamEndCapture hipStreamEndCapture
#define cudaStreamCaptureModeThreadLocal hipStreamCaptureModeThreadLocal
#define cudaStreamCaptureModeRelaxed hipStreamCaptureModeRelaxed
#define cudaGraph_t hipGraph_t
#define cudaGraphExec_t hipGraphExec_t
#define cudaGraphInstantiate(e, g, f) hipGraphInstantiate(e, g, NULL, NULL, 0)
#define cudaGraphLaunch hipGraphLaunch
#define cudaGraphDestroy hipGraphDestroy
#define cudaGraphExecDestroy hipGraphExecDestroy
#define cudaEvent_t hipEvent_t
#define cudaEventCreate hipEventCreate
#define cudaEventRecord hipEventRecord
#define cudaEventSynchronize hipEventSynchronize
#define cudaEventElapsedTime hipEventElapsedTime
#define cudaEventDestroy hipEventDestroy
/* HIP takes the kernel as const void * (CUDA has a template overload) */
#define cudaFuncSetAttribute(kernel, attr, value) \
    hipFuncSetAttribute(reinterpret_cast<const void *>(kernel), (attr), (value))
#define cudaFuncAttributeMaxDynamicSharedMemorySize hipFuncAttributeMaxDynamicSharedMemorySize
#define cudaDeviceSynchronize hipDeviceSynchronize
#define cudaSetDevice hipSetDevice
#define cudaGetDevice hipGetDevice
#define cudaStreamQuery hipStreamQuery
#define cudaErrorNotReady hipErrorNotReady
#define cudaStreamPerThread hipStreamPerThread
#define cudaPointerGetAttributes hipPointerGetAttributes
#define cudaPointerAttributes hipPointerAttribute_t
/* HIP's null stream is its legacy default stream */
#define SWA_LEGACY_STREAM ((hipStream_t)0)
#define CUDART_INF_F __builtin_huge_valf()
typedef __half swa_half_t;
/* ROCm 5.2 ships no hip_bf16.h: bf16 is 16 bits of storage here and the
 * engine's dtype traits convert it (round to nearest even). */
typedef struct swa_bf16_bits {
    uint16_t bits;
} swa_bf16_t;

/* The wavefront width must be a compile-time constant (tile shapes and
 * thread counts are constexpr and the host launches with them), so it is
 * fixed for the build and checked against every device target: CDNA
 * (gfx9: gfx90a, gfx940) runs 64-lane wavefronts.  A wave32 target (RDNA)
 * fails to compile here instead of running with the wrong lane count. */
#define SWA_WARP_SIZE 64
#if defined(__HIP_DEVICE_COMPILE__) && defined(__AMDGCN_WAVEFRONT_SIZE)
#if __AMDGCN_WAVEFRONT_SIZE != SWA_WARP_SIZE
#error "swadiff's HIP build assumes 64-lane wavefronts (CDNA gfx9 targets); this target has another width"
#endif
#endif
/* HIP shuffles and votes act on the whole wavefront and take no lane mask */
#define swa_shfl_xor(value, lane_mask) __shfl_xor((value), (lane_mask))
#define swa_all_sync(pred) __all(pred)
#define SWA_HAVE_NV_TENSOR_CORE_PTX 0
#define SWA_NS swa_hip
#define SWA_DEV_SYM(name) swa_hip_##name
#define SWA_VENDOR "hip"
#define SWA_VENDOR_GPU "ROCm"
#else
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
typedef __half swa_half_t;
typedef __nv_bfloat16 swa_bf16_t;
#define SWA_LEGACY_STREAM cudaStreamLegacy
/* NVIDIA warps are 32 lanes on every target we build for. */
#define SWA_WARP_SIZE 32
#define SWA_FULL_WARP_MASK 0xffffffffu
#define swa_shfl_xor(value, lane_mask) __shfl_xor_sync(SWA_FULL_WARP_MASK, (value), (lane_mask))
#define swa_all_sync(pred) __all_sync(SWA_FULL_WARP_MASK, (pred))
/* mma.sync / ldmatrix / cp.async inline PTX (sm_80+) */
#define SWA_HAVE_NV_TENSOR_CORE_PTX 1
#define SWA_NS swa_cuda
#define SWA_DEV_SYM(name) swa_cuda_##name
#define SWA_VENDOR "cuda"
#define SWA_VENDOR_GPU "CUDA"
#endif

/* Which attention engine attn_engine.cuh compiles: the tensor-core one
 * (NVIDIA, the validated and measured path) or the portable one (ROCm, or
 * NVIDIA under -DSWADIFF_PORTABLE_KERNELS for validating it). */
#if SWA_HAVE_NV_TENSOR_CORE_PTX && !defined(SWADIFF_PORTABLE_KERNELS)
#define SWA_TENSOR_CORE_ENGINE 1
#define SWA_ENGINE_NAME "mma.sync"
#else
#define SWA_TENSOR_CORE_ENGINE 0
#define SWA_ENGINE_NAME "portable"
#endif

#endif /* SWADIFF_CUDA_VENDOR_CUH */
