/* main.c — the swadiff command line.
 *
 *   swadiff run [CASES...] [--device D] [--backend B] [--filter ID] [--report DIR] ...
 *   swadiff validate CASES...
 *   swadiff list backends|devices|cases|mutants [CASES...]
 *   swadiff bench --reference | --device cuda
 *   swadiff merge OUT_DIR REPORT.json...
 *   swadiff selftest | explain | shrink   (detection power, see docs/internals.md)
 *   swadiff coverage [CASES...]            (plan decisions the cases exercise)
 *
 * Every subcommand has --help.  Exit codes: docs/cli.md and core/common.h. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "backends/backend.h"
#include "harness/cli.h"
#include "harness/run.h"

static int usage_main(FILE *f)
{
    fprintf(f,
            "swadiff %s — differential correctness harness for sliding-window attention kernels\n"
            "\n"
            "usage: swadiff COMMAND [OPTIONS] [ARGS]\n"
            "\n"
            "commands:\n"
            "  run [CASES...]        run cases (files or folders; default: cases/) on a device\n"
            "  validate CASES...     load and check case files, run nothing\n"
            "  list WHAT             backends | devices | cases [CASES...] | mutants\n"
            "  bench                 --reference (CPU oracle) or --device cuda (kernels)\n"
            "  merge OUT REPORT...   combine report.json files from shards\n"
            "  selftest [CASES...]   run the case library under every mutant (kill matrix)\n"
            "  explain CASE_ID       name the mask a failing backend actually applied\n"
            "  shrink CASE_ID        reduce a failing case to a minimal case file\n"
            "  coverage [CASES...]   plan decisions (and pairs) the cases never make a backend take\n"
            "\n"
            "`swadiff COMMAND --help` describes each command.\n"
            "exit codes: 0 passed, 1 mismatch, 2 usage or case-file error, 3 runtime error,\n"
            "            77 a GPU was required and none is usable\n",
            SWADIFF_VERSION);
    return f == stdout ? SWA_EXIT_OK : SWA_EXIT_USAGE;
}

static int run_command(int argc, char **argv)
{
    if (argc < 2)
        return usage_main(stderr);
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help"))
        return usage_main(stdout);
    if (!strcmp(cmd, "--version")) {
        printf("swadiff %s (git %s)\n", SWADIFF_VERSION, SWADIFF_GIT_REVISION);
        return SWA_EXIT_OK;
    }
    /* subcommands see argv[0] = "swadiff <cmd>" for getopt messages */
    int sub_argc = argc - 1;
    char **sub_argv = argv + 1;
    if (!strcmp(cmd, "run")) return swa_cmd_run(sub_argc, sub_argv, argv[0]);
    if (!strcmp(cmd, "validate")) return swa_cmd_validate(sub_argc, sub_argv);
    if (!strcmp(cmd, "list")) return swa_cmd_list(sub_argc, sub_argv);
    if (!strcmp(cmd, "bench")) return swa_cmd_bench(sub_argc, sub_argv);
    if (!strcmp(cmd, "merge")) return swa_cmd_merge(sub_argc, sub_argv);
    if (!strcmp(cmd, "selftest")) return swa_cmd_selftest(sub_argc, sub_argv, argv[0]);
    if (!strcmp(cmd, "explain")) return swa_cmd_explain(sub_argc, sub_argv, argv[0]);
    if (!strcmp(cmd, "shrink")) return swa_cmd_shrink(sub_argc, sub_argv, argv[0]);
    if (!strcmp(cmd, "coverage")) return swa_cmd_coverage(sub_argc, sub_argv);
    fprintf(stderr, "swadiff: unknown command '%s'\n\n", cmd);
    return usage_main(stderr);
}

/* True when stdout is a pipe or socket whose reader has gone (poll says
 * POLLERR or POLLHUP): the cause of a write error found after the fact, when
 * a flush other than swa_flush's failed and its errno is gone. */
static bool stdout_reader_gone(void)
{
    struct pollfd p = {.fd = STDOUT_FILENO, .events = POLLOUT};
    return poll(&p, 1, 0) == 1 && (p.revents & (POLLERR | POLLHUP));
}

/* What a command printed (a list, a verdict, a merged summary) may be what a
 * script reads: output lost to a full disk or a closed descriptor must not
 * exit as if it had been written.  stdout is block-buffered when it is not a
 * terminal, so the error often shows only at this last flush.  EPIPE is the
 * reader closing the pipe on purpose (`swadiff run | head`, which ignores
 * SIGPIPE to finish its reports): the command's own verdict stands. */
static int check_stdout(int rc)
{
    int flushed = swa_flush(stdout);
    if (flushed == 0 && !ferror(stdout))
        return rc;
    int err = swa_stdout_errno();
    if (err == EPIPE || (err == 0 && stdout_reader_gone()))
        return rc;
    if (err)
        fprintf(stderr, "swadiff: write error on standard output: %s\n", strerror(err));
    else
        fprintf(stderr, "swadiff: write error on standard output\n");
    /* a runtime error: outranks a pass and "nothing compared", never a
     * mismatch or a usage error (README, "Exit codes") */
    return rc == SWA_EXIT_OK || rc == SWA_EXIT_NOTHING_COMPARED ? SWA_EXIT_RUNTIME : rc;
}

/* Under `ulimit -v`, OpenBLAS's thread pool, started when the library is
 * loaded, cannot map its threads' buffers and retries for ever; fork()'s
 * handler then waits for those threads, and the run hung there, deaf to
 * SIGTERM.  Loaded again with OPENBLAS_NUM_THREADS=1 it starts no pool (the
 * reference still asks for threads where they fit: swa_blas_threads_cap).
 * A user's own OPENBLAS_NUM_THREADS is left alone. */
static void blas_pool_off_under_rlimit_as(char **argv)
{
    if (swa_address_space_left(NULL) == SIZE_MAX || getenv("OPENBLAS_NUM_THREADS"))
        return;
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
    execv("/proc/self/exe", argv);
    /* no /proc: go on with the pool (a tight limit may still hang in it) */
}

int main(int argc, char **argv)
{
    blas_pool_off_under_rlimit_as(argv);
    return check_stdout(run_command(argc, argv));
}
