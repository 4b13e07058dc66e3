/* bench_cuda.h — `swadiff bench --device cuda`: kernel times with CUDA
 * events.  Defined in bench/bench_cuda.cu (built with the CUDA
 * device only). */
#ifndef SWADIFF_BENCH_CUDA_H
#define SWADIFF_BENCH_CUDA_H

#ifdef __cplusplus
extern "C" {
#endif
int swa_bench_cuda(int argc, char **argv);
#ifdef __cplusplus
}
#endif
#endif /* SWADIFF_BENCH_CUDA_H */
