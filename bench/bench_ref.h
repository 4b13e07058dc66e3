/* bench_ref.h — `swadiff bench --reference`: throughput of the CPU reference
 * against the naive loop oracle and plain cblas_dgemm on this machine.
 * See bench_ref.c for the shapes and what is counted. */
#ifndef SWADIFF_BENCH_REF_H
#define SWADIFF_BENCH_REF_H

#ifdef __cplusplus
extern "C" {
#endif

/* argv[0] is the mode word ("--reference"); options follow (--help lists
 * them).  Prints a table on stdout.  Returns an exit code (0, or 2 for a
 * usage error, 3 when a run failed). */
int swa_bench_reference(int argc, char **argv);

#ifdef __cplusplus
}
#endif
#endif /* SWADIFF_BENCH_REF_H */
