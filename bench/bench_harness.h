/* bench_harness.h — `swadiff bench --harness`: harness throughput (results
 * per second) over a generated matrix of about 3,000 (case, backend) pairs
 * from the seeds' grid, and where the time goes (data, reference, backend,
 * comparison, reporting).  Defined in bench/bench_harness.c. */
#ifndef SWADIFF_BENCH_HARNESS_H
#define SWADIFF_BENCH_HARNESS_H

#ifdef __cplusplus
extern "C" {
#endif
/* argv[0] is "--harness".  Returns an exit code. */
int swa_bench_harness(int argc, char **argv, const char *prog);
#ifdef __cplusplus
}
#endif
#endif /* SWADIFF_BENCH_HARNESS_H */
