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
#include "harness/report.h"
#include "harness/run.h"

/* The commands: one table drives dispatch and the help text.  A command
 * gets argv[0] = "COMMAND" (getopt's messages name it) and, where it
 * prints reproduce lines or re-runs itself, the program's own path. */
typedef struct command {
    const char *name, *args, *summary;
    int (*fn)(int argc, char **argv);                    /* or: */
    int (*fn_prog)(int argc, char **argv, const char *prog);
} command;

static const command commands[] = {
    {"run", "[CASES...]", "run cases (files or folders; default: cases/) on a device", NULL, swa_cmd_run},
    {"validate", "CASES...", "load and check case files, run nothing", swa_cmd_validate, NULL},
    {"list", "WHAT", "backends | devices | cases [CASES...] | mutants", swa_cmd_list, NULL},
    {"bench", "", "--reference (CPU oracle), --harness, or --device cuda (kernels)", swa_cmd_bench, NULL},
    {"merge", "OUT REPORT...", "combine report.json files from shards", swa_merge_main, NULL},
    {"selftest", "[CASES...]", "run the case library under every mutant (kill matrix)", NULL, swa_cmd_selftest},
    {"explain", "CASE_ID", "name the mask a failing backend actually applied", NULL, swa_cmd_explain},
    {"shrink", "CASE_ID", "reduce a failing case to a minimal case file", NULL, swa_cmd_shrink},
    {"coverage", "[CASES...]",
     "plan decisions (and pairs) the cases never make a backend take;\n"
     "                        --launches T / --launches-from R: the GPU kernels' launch choices",
     swa_cmd_coverage, NULL},
};
#define NUM_COMMANDS ((int)(sizeof commands / sizeof commands[0]))

static int usage_main(FILE *f)
{
    fprintf(f,
            "swadiff %s — differential correctness harness for sliding-window attention kernels\n"
            "\n"
            "usage: swadiff COMMAND [OPTIONS] [ARGS]\n"
            "\n"
            "commands:\n",
            SWADIFF_VERSION);
    for (int i = 0; i < NUM_COMMANDS; i++) {
        char head[64];
        snprintf(head, sizeof head, "%s%s%s", commands[i].name, commands[i].args[0] ? " " : "", commands[i].args);
        fprintf(f, "  %-22s%s\n", head, commands[i].summary);
    }
    fprintf(f, "\n"
               "`swadiff COMMAND --help` describes each command.\n"
               "exit codes: 0 passed, 1 mismatch, 2 usage or case-file error, 3 runtime error,\n"
               "            5 nothing compared, 77 a GPU was required and none is usable\n");
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
    /* subcommands see argv[0] = "<cmd>" for getopt messages */
    for (int i = 0; i < NUM_COMMANDS; i++)
        if (!strcmp(cmd, commands[i].name))
            return commands[i].fn ? commands[i].fn(argc - 1, argv + 1)
                                  : commands[i].fn_prog(argc - 1, argv + 1, argv[0]);
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
