/* cli.h — the subcommands of the swadiff command line (one function each,
 * argv[0] being the subcommand name, options parsed with getopt_long), and
 * the helpers they share.  No command file includes another command file. */
#ifndef SWADIFF_CLI_H
#define SWADIFF_CLI_H

#include "backends/backend.h"
#include "core/case.h"
#include "harness/case_load.h"
#include "harness/case_select.h"
#include "harness/results.h"

/* defined in cli_run.c */
int swa_cmd_run(int argc, char **argv, const char *prog);
int swa_cmd_validate(int argc, char **argv);
int swa_cmd_list(int argc, char **argv);
/* defined in bench/cli_bench.c, the benchmarks' layer above harness/ (merge
 * is report_merge.c's swa_merge_main) */
int swa_cmd_bench(int argc, char **argv);
/* defined in cli_selftest.c */
int swa_cmd_selftest(int argc, char **argv, const char *prog);
/* defined in cli_coverage.c */
int swa_cmd_coverage(int argc, char **argv);
/* defined in cli_explain.c */
int swa_cmd_explain(int argc, char **argv, const char *prog);
int swa_cmd_shrink(int argc, char **argv, const char *prog);

/* What a command's step (parse, select) returns to let the next one run:
 * not an exit code.  The command frees everything in one place. */
enum { SWA_CLI_GO_ON = -1 };

/* Shared helpers for the subcommands, defined in cli.c. */
/* Loads every path (default "cases" when npaths == 0); prints located
 * errors; returns 0 or SWA_EXIT_USAGE. */
int swa_cli_load_cases(int npaths, char **paths, swa_case_list *list);
/* Resolves --device (host|cuda|hip|auto).  Returns the device or NULL with
 * *exit_code set (77 when a GPU was asked for and none is usable, 2 for an
 * unknown name) and the reason printed. */
const swa_device_ops *swa_cli_device(const char *name, int *exit_code);
/* The same; when auto falls back to the host, why_host says why no GPU was used. */
const swa_device_ops *swa_cli_device_why(const char *name, int *exit_code, char *why_host, size_t why_n);
/* The GPUs a GPU device runs on: "cuda:0,2" names them (each probed on its
 * own), plain "cuda" means every visible one.  Returns their count (0 for
 * the host), or -1 with *exit_code set (2 bad list, 77 a GPU not usable). */
int swa_cli_gpu_ids(const char *device_arg, const swa_device_ops *dev, int *ids, int max, int *exit_code);
/* Parses "I/N" (1 <= I <= N).  Returns 0 or -1. */
int swa_cli_parse_shard(const char *s, int *index, int *count);
/* Fills the report environment: version, git revision, host, device, the
 * command line (prog followed by argv). */
void swa_cli_environment(swa_environment *env, const swa_device_ops *dev, int argc, char **argv,
                         const char *prog);
/* --repeat N: the most runs of one (case, backend) a run accepts (more is
 * a typo, not a test plan: 10,000 runs of a small decode case take hours). */
#define SWA_REPEAT_MAX 10000
/* Parses a run count: decimal digits only, 1 <= N <= SWA_REPEAT_MAX.
 * Returns 0 or -1 (a sign, a space, a suffix, 0 or too many). */
int swa_cli_parse_repeat(const char *s, int *count);
/* --invariance LIST: "batch,pages", "split" or "all" into SWA_INV_* bits;
 * -1 for an unknown name or an empty item. */
int swa_cli_parse_invariance(const char *s, unsigned *set);
/* Parses a duration in seconds (--timeout, --adapter-timeout): a number
 * with 0 < t <= SWA_SECONDS_MAX.  Returns 0 or -1 (not a number, 0 or less,
 * inf, NaN, past the limit: later arithmetic in milliseconds would overflow). */
#define SWA_SECONDS_MAX 1e6 /* about 11.6 days */
int swa_cli_parse_seconds(const char *s, double *out);
/* Fills what `run` selected (report 1.4): the shard, the case paths, the
 * digests of the case files loaded and of the ids the filters keep (before
 * the shard takes its part), --backend, the external backends that run,
 * the mutant and the device kind.  merge compares these across shards. */
struct swa_run_config;
void swa_cli_selection(swa_selection *sel, const swa_case_list *all, int npaths, char **paths,
                       const char *const *filters, int nfilters, const struct swa_where *where,
                       const char *where_text, int shard_i, int shard_n, const struct swa_run_config *cfg);

/* True when `run` selects case c: its id matches one of the filters (none:
 * any) and, with a --where, the case run by one of the backends cfg lets
 * run (its own built-in ones, the plug-in and adapter ones) meets it. */
bool swa_cli_case_selected(const swa_case *c, const char *const *filters, int nfilters,
                           const struct swa_where *where, const struct swa_run_config *cfg);
/* Registers the plug-ins (paths) and adapters (NAME=COMMAND, or NAME looked
 * up in the registry file) of a command's --plugin / --adapter options:
 * probed here, loaded in the worker.  Prints one note each unless quiet.
 * Returns 0, or SWA_EXIT_USAGE with the error printed as "swadiff CMD: ...". */
int swa_cli_register_externals(const char *cmd, const char *const *plugins, int nplugins,
                               const char *const *adapters, int nadapters, const char *registry, bool quiet);
/* Parses a comma-separated backend list into SWA_BACKEND_* flags; 0 on error. */
unsigned swa_cli_parse_backends(const char *s, char *bad, size_t n);

#endif /* SWADIFF_CLI_H */
