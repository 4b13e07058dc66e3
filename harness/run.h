/* run.h — the run loop: cases x backends on one device, compared with the
 * reference, results streamed to the reports.  Used by `swadiff run`, and
 * by selftest / explain / shrink, which run the same pipeline under mutants.
 *
 * Ownership: swa_case_ctx_* allocate the per-case state (inputs, reference,
 * device copy) and free it; results are owned by the swa_run_results they
 * are added to. */
#ifndef SWADIFF_RUN_H
#define SWADIFF_RUN_H

#include "backends/backend.h"
#include "backends/external/external.h"
#include "core/case.h"
#include "core/data.h"
#include "harness/compare.h"
#include "harness/results.h"

typedef struct swa_run_config {
    const swa_device_ops *device;
    unsigned backend_mask;      /* 0: every backend the case names */
    bool backends_selected;     /* --backend given: backend_mask is exact (0: no built-in) and
                                 * only external backends matching external_globs run */
    const char *const *external_globs; /* NS:BACKEND globs from --backend */
    int num_external_globs;
    swa_mutant mutant;
    const char *mutant_only;    /* NULL, or an id glob: the mutant applies to matching cases only */
    const char *dump_dir;       /* NULL: no dump */
    double timeout;             /* seconds per (case, backend); 0: none */
    bool explain_failures;      /* attach a diagnosis to failing results */
    bool quiet;                 /* no console lines (selftest) */
    bool no_isolate;            /* run in-process instead of a worker (debuggers) */
    int jobs;                   /* isolated workers pulling cases from one queue (0: 1) */
    int repeat;                 /* runs of each (case, backend) on the same inputs, bitwise against
                                 * run 1 (0 or 1: once); --timeout then covers all of them */
    const int *gpus;            /* GPU ids the workers are pinned to, round robin (num_gpus 0: none) */
    int num_gpus;
    /* for reproduce commands: the program name as the user typed it */
    const char *argv0;
    /* --xfail FILE's known failures (NULL: none; a case's own "xfail"
     * applies either way): marked results become xfailed / xpassed as they
     * are recorded (harness/xfail.h) */
    const struct swa_xfail_list *xfail;
    /* --invariance LIST and --deterministic: added to every case of the run
     * by the command (cli_run.c) and repeated in the reproduce commands */
    unsigned invariance;
    bool deterministic;
} swa_run_config;

/* Everything one case needs, built once and shared by its backends. */
typedef struct swa_case_ctx {
    const swa_case *c;
    swa_inputs in;
    double *ref_out, *ref_lse;  /* spec reference */
    float *lowp_out, *lowp_lse; /* only for SWA_TOL_BASELINE */
    void *dev_inputs;           /* device copy (NULL until uploaded) */
    double t_data, t_reference; /* seconds spent making the inputs and the reference (and upload) */
    bool inputs_borrowed;       /* in is lent by the input cache of run.c (not freed here) */
    const swa_device_ops *device;
    bool ready;
    char dump_error[SWA_MSG_MAX]; /* --dump could not write the case's files: why ("" when it could) */
} swa_case_ctx;

#ifdef __cplusplus
extern "C" {
#endif

/* Builds inputs and the reference; uploads to the device. */
swa_status swa_case_ctx_init(swa_case_ctx *ctx, const swa_case *c, const swa_device_ops *dev,
                             swa_error *err);
/* The same, also writing the case's inputs and reference under dump_dir
 * (NULL: no dump) — see harness/dump.h for the layout. */
swa_status swa_case_ctx_init_dump(swa_case_ctx *ctx, const swa_case *c, const swa_device_ops *dev,
                                  const char *dump_dir, swa_error *err);
void swa_case_ctx_free(swa_case_ctx *ctx);

/* Runs one backend on one prepared case and fills r (outcome, comparison,
 * message, reproduce command).  Never aborts: failures become outcomes.
 * If out_copy is non-NULL it receives a malloc'd copy of the backend output
 * (dtype storage, no guards) and *lse_copy the LSE in natural log (or NULL). */
void swa_run_one(const swa_run_config *cfg, swa_case_ctx *ctx, const swa_backend *b,
                 swa_result *r, void **out_copy, float **lse_copy);

/* "Nondeterministic: 3 of 19 repeat runs differ bitwise from run 1; ..."
 * for a result whose --repeat runs differed (r->nondet, r->repeat). */
void swa_nondet_format(const swa_nondet *nd, int repeat, char *buf, size_t n);

/* Runs the selected cases (indices into all) in an isolated worker process,
 * streaming results to the console and, when report_dir is set, to the
 * report files.  Fills rr; returns the exit code. */
int swa_run_selected(const swa_run_config *cfg, const swa_case_list *all, const int *selected, int nsel,
                     const char *report_dir, swa_run_results *rr);

/* True when a and b get identical input tensors (shapes, lengths, dtype,
 * paging, seed, and a window-independent distribution): a worker then lends
 * the first case's inputs to the second (defined in run.c). */
bool swa_case_same_inputs(const swa_case *a, const swa_case *b);

/* In a worker: BLAS threads so that `jobs` workers share the cores
 * without oversubscribing them (defined in run_loop.c). */
void swa_run_worker_threads(int jobs);

/* The (case, backend) pairs a run of the selected cases would produce. */
int swa_run_count_pairs(const swa_run_config *cfg, const swa_case_list *all, const int *selected, int nsel);

/* cfg as it applies to case c: the mutant only where --mutant-only matches. */
swa_run_config swa_config_for_case(const swa_run_config *cfg, const swa_case *c);

/* Fills the identity of a (case, backend) result — id, file, backend,
 * device, mutant, dtype, tolerance, shape, reproduce command — and zeroes
 * the rest.  Every result, produced or recorded for a crash, starts here. */
void swa_result_init(const swa_run_config *cfg, const swa_case *c, const char *backend, swa_result *r);

/* The reproduce command for (case, backend) under cfg. */
void swa_reproduce_command(const swa_run_config *cfg, const swa_case *c, const char *backend,
                           char *buf, size_t n);


#ifdef __cplusplus
}
#endif
#endif /* SWADIFF_RUN_H */
