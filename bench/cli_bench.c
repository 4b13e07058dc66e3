/* cli_bench.c — `swadiff bench`: the dispatcher to the reference benchmark
 * (bench_ref.c), the harness benchmark (bench_harness.c) and the CUDA
 * benchmark (bench_cuda.cu), all in bench/; declared in harness/cli.h with
 * the other commands. */
#include <stdio.h>
#include <string.h>

#include "harness/cli.h"

#include "bench/bench_harness.h"
#include "bench/bench_ref.h"
#ifdef SWADIFF_HAVE_CUDA
#include "bench/bench_cuda.h"
#endif

static int bench_usage(FILE *f)
{
    fprintf(f,
            "usage: swadiff bench --reference [OPTIONS]\n"
            "       swadiff bench --harness [--device D] [--jobs N[,M]] [--json FILE]\n"
            "       swadiff bench --device cuda [--json FILE] [OPTIONS]\n"
            "\n"
            "--reference: GFLOP/s of the CPU reference against the naive loop oracle and\n"
            "             plain cblas_dgemm on this machine (Gemma-3-1B prefill, Mistral decode).\n"
            "--harness:   results/s of the whole harness over a generated ~3,000-pair matrix and\n"
            "             the share of time per stage, for each --jobs value.\n"
            "--device cuda: kernel time with CUDA events over working sets beyond L2; GB/s for\n"
            "             decode (window bytes), TFLOP/s for prefill (visible pairs), next to\n"
            "             the H200 ceilings of docs/kernels.md.\n"
            "Options after the mode are passed to it (`swadiff bench --reference --help`).\n");
    return f == stdout ? SWA_EXIT_OK : SWA_EXIT_USAGE;
}

int swa_cmd_bench(int argc, char **argv)
{
    if (argc < 2)
        return bench_usage(stderr);
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
        return bench_usage(stdout);
    if (!strcmp(argv[1], "--reference"))
        return swa_bench_reference(argc - 1, argv + 1);
    if (!strcmp(argv[1], "--harness"))
        return swa_bench_harness(argc - 1, argv + 1, "swadiff");
    if (!strcmp(argv[1], "--device") && argc >= 3) {
        if (!strcmp(argv[2], "cuda")) {
#ifdef SWADIFF_HAVE_CUDA
            return swa_bench_cuda(argc - 2, argv + 2);
#else
            fprintf(stderr, "swadiff bench: this swadiff was built without the CUDA device\n");
            return SWA_EXIT_NO_GPU;
#endif
        }
        fprintf(stderr, "swadiff bench: --device %s: only cuda has kernel benchmarks\n", argv[2]);
        return SWA_EXIT_USAGE;
    }
    return bench_usage(stderr);
}
