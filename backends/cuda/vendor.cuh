/* vendor.cuh — the one place where the GPU vendor's names appear.
 *
 * Every kernel file includes this header and uses the names below (cuda*
 * runtime calls, SWA_WARP_SIZE, swa_shfl_xor, the tensor-core helpers of
 * attn_engine.cuh) so a ROCm port maps names here instead of copying
 * kernels (the ggml habit).  Built for NVIDIA today; the HIP branch maps the
 * runtime names and the warp width, the mma/ldmatrix/cp.async paths need a
 * HIP equivalent (MFMA) before they run on AMD.
 *
 * Test: compiled into every CUDA source of backends/cuda; tests/gpu_test_kernels.c. */
#ifndef SWADIFF_CUDA_VENDOR_CUH
#define SWADIFF_CUDA_VENDOR_CUH

#if defined(SWADIFF_HIP_BUILD)
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include <hip/hip_bf16.h>
#define cudaError_t hipError_t
#define cudaSuccess hipSuccess
#define cudaGetErrorString hipGetErrorString
#define cudaGetErrorName hipGetErrorName
#define cudaGetLastError hipGetLastError
#define cudaGetDeviceCount hipGetDeviceCount
#define cudaGetDeviceProperties hipGetDeviceProperties
#define cudaDeviceProp hipDeviceProp_t
#define cudaDriverGetVersion hipDriverGetVersion
#define cudaRuntimeGetVersion hipRuntimeGetVersion
#define cudaMalloc hipMalloc
#define cudaFree hipFree
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
#define cudaFuncSetAttribute hipFuncSetAttribute
#define cudaFuncAttributeMaxDynamicSharedMemorySize hipFuncAttributeMaxDynamicSharedMemorySize
#define cudaDeviceSynchronize hipDeviceSynchronize
#define cudaSetDevice hipSetDevice
typedef __half swa_half_t;
typedef __hip_bfloat16 swa_bf16_t;
#define SWA_WARP_SIZE warpSize
#define swa_shfl_xor(value, lane_mask) __shfl_xor((value), (lane_mask))
#define swa_all_sync(pred) __all(pred)
#define SWA_HAVE_NV_TENSOR_CORE_PTX 0
#else
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
typedef __half swa_half_t;
typedef __nv_bfloat16 swa_bf16_t;
/* NVIDIA warps are 32 lanes on every target we build for. */
#define SWA_WARP_SIZE 32
#define SWA_FULL_WARP_MASK 0xffffffffu
#define swa_shfl_xor(value, lane_mask) __shfl_xor_sync(SWA_FULL_WARP_MASK, (value), (lane_mask))
#define swa_all_sync(pred) __all_sync(SWA_FULL_WARP_MASK, (pred))
/* mma.sync / ldmatrix / cp.async inline PTX (sm_80+) */
#define SWA_HAVE_NV_TENSOR_CORE_PTX 1
#endif

#endif /* SWADIFF_CUDA_VENDOR_CUH */
