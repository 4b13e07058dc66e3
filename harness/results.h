/* results.h — the outcome of one (case, backend) run and of a whole run,
 * as the reports (console, JSON, HTML, JUnit) consume them.
 *
 * The run loop appends results as they are produced and asks the report
 * writers to flush after each one, so a killed run leaves every finished
 * result on disk (swa_report_* in report.h).
 *
 * Ownership: swa_run_results owns its results and each result owns its
 * compare arrays; swa_run_results_free releases everything. */
#ifndef SWADIFF_RESULTS_H
#define SWADIFF_RESULTS_H

#include "harness/compare.h"

enum { SWA_STAGE_DATA = 0, SWA_STAGE_REFERENCE = 1, SWA_STAGE_BACKEND = 2, SWA_STAGE_COMPARE = 3 };

typedef enum {
    SWA_OUTCOME_PASSED = 0,
    SWA_OUTCOME_FAILED = 1,
    SWA_OUTCOME_ERROR = 2,
    SWA_OUTCOME_SKIPPED = 3,
    /* known failures (--xfail FILE, a case's "xfail"; harness/xfail.h):
     * a marked result that failed or errored is xfailed (the run stays
     * green), one that passed is xpassed (strict: the run fails, exit 1) */
    SWA_OUTCOME_XFAILED = 4,
    SWA_OUTCOME_XPASSED = 5,
    SWA_OUTCOME_COUNT = 6,
} swa_outcome;

static inline const char *swa_outcome_name(swa_outcome o)
{
    return o == SWA_OUTCOME_PASSED ? "passed" : o == SWA_OUTCOME_FAILED ? "failed"
         : o == SWA_OUTCOME_ERROR ? "error" : o == SWA_OUTCOME_XFAILED ? "xfailed"
         : o == SWA_OUTCOME_XPASSED ? "xpassed" : "skipped";
}

/* --repeat N: how runs 2..N differed from run 1, bitwise (all zero when
 * they did not).  Counts are of the run that differed most (worst_run). */
typedef struct swa_nondet {
    int runs_differing;          /* repeat runs whose output, LSE or guard bytes differ from run 1's */
    int first_run;               /* the first such run (2..N); 0 when none */
    swa_index first_index;       /* its first differing output element (request -1: only LSE/guards differ) */
    int worst_run;               /* the run with the most differing elements */
    long long elements, total;   /* output elements that differ in worst_run, of total */
    long long nonfinite;         /* of those, pairs where a side is NaN or Inf */
    long long lse_entries, lse_total; /* LSE entries that differ in worst_run, of lse_total (0: no LSE) */
    long long guard_bytes;       /* guard bytes around out/lse that differ in worst_run */
    double max_abs_diff;         /* greatest |run k - run 1| over finite pairs, every run */
    swa_index max_abs_index;
    int max_abs_run;             /* 0: no finite pair differs */
} swa_nondet;

/* One self-comparison of the invariance checks (harness/invariance.h,
 * docs/invariance.md): the backend's output under a transformation of the
 * case against its own output on the case, element by element. */
#define SWA_INV_RECORDS 6            /* batch.alone, batch.reversed, pages.order, pages.size, split.on, split.off */
#define SWA_INV_GRID_ROWS 24         /* heatmap: query-row buckets of the case ... */
#define SWA_INV_GRID_HEADS 16        /* ... x qo-head buckets */
typedef enum {
    SWA_INV_SAME = 0,                /* bitwise equal */
    SWA_INV_DIFFERS = 1,             /* some element or LSE entry differs */
    SWA_INV_SKIPPED = 2,             /* the transformation does not apply (message says why) */
    SWA_INV_ERROR = 3,               /* the backend failed on the transformed case (message) */
} swa_inv_state;
typedef struct swa_inv_record {
    char name[24];                   /* "batch.alone" */
    char detail[200];                /* what was transformed, in words */
    swa_inv_state state;
    bool bitwise;                    /* the backend declares this invariance: a difference fails the result */
    char message[300];               /* skip reason or error, "" otherwise */
    int runs;                        /* backend runs the check took */
    long long elements, total;       /* output elements that differ, of those compared */
    long long nonfinite;             /* of those, pairs where a side is NaN or Inf */
    long long lse_entries, lse_total;/* LSE entries that differ, of those compared (0: no LSE) */
    double max_abs_diff;             /* greatest |transformed - case| over finite pairs */
    double max_tol_ratio;            /* greatest |transformed - case| / (atol + rtol |reference|) */
    swa_index first_index;           /* first differing element, in the case's coordinates */
    swa_index worst_index;           /* where max_tol_ratio is */
    int grid_rows, grid_heads;       /* cells of grid used; row bucket i covers rows [i*R/grid_rows, ...) */
    float grid[SWA_INV_GRID_ROWS * SWA_INV_GRID_HEADS]; /* worst ratio per cell, row-major (0: equal) */
} swa_inv_record;

typedef struct swa_result {
    char id[SWA_ID_MAX];
    char file[SWA_PATH_MAX];
    char backend[160];           /* built-in name, or NS:BACKEND of a plug-in / adapter */
    char device[16];
    swa_dtype dtype;
    char mutant[48];             /* "" when none */
    swa_outcome outcome;
    swa_status error_status;     /* for SWA_OUTCOME_ERROR: what kind */
    double duration;             /* seconds, plan + run + compare */
    swa_tolerance tol;
    bool has_compare;
    swa_compare_result cmp;
    char message[SWA_MSG_MAX];   /* first mismatch line, error text or skip reason */
    char diagnosis[1200];        /* explain's verdict for failures, "" when none */
    char xfail[SWA_XFAIL_REASON_MAX]; /* why it is a known failure, "" when it is not one */
    swa_outcome xfail_was;       /* xfailed / xpassed: the outcome it had (failed, error; passed) */
    char warnings[512];          /* plan-time warnings, "" when none */
    char reproduce[2048];        /* command line that reruns this case alone (room for a case file path
                                  * of SWA_PATH_MAX and an id of SWA_ID_MAX); a note saying why when
                                  * it does not fit, never a cut command */
    char kernel[192];            /* the device's kernel variant that computed it (swa_device_ops.last_kernel),
                                    "" when the device does not say (host emulation, external backends) */
    char decisions[1024];        /* what the plan decided, "key=value;key=v1+v2" (backends/plan_decisions.h);
                                  * "" when no plan was built (skip, refusal, external backend) */
    char launch[512];            /* what the GPU kernels launched, "prefill.kernel=wgmma_ws_128;..."
                                  * (backends/launch_choice.h; swa_device_ops.last_launch); "" when the
                                  * device has no launch choices (host) or nothing ran */
    char launch_predicted[512];  /* the chooser's prediction from the plan, kept only when it differs
                                  * from launch (a model the gate calls wrong) */
    char launch_target[160];     /* the target the launches were chosen for (launch_choice.h's text);
                                  * not written per result: swa_run_results_add makes it the run's
                                  * environment.launch_target */
    /* shape summary for the HTML heatmap captions */
    int num_requests, total_qo, num_qo_heads, num_kv_heads, head_dim, window_left;
    int window_right;            /* -1 unbounded (0 for causal cases) */
    int chunk_size;              /* attention_chunk_size, 0 when off */
    bool causal;
    int repeat;                  /* runs of this (case, backend) on the same inputs (--repeat; 1 by default) */
    swa_nondet nondet;           /* --repeat: how later runs differed from run 1 */
    unsigned traits;             /* SWA_TRAIT_* the backend declared for the case (backends/backend.h) */
    int num_invariance;          /* records in invariance (0: no invariance check asked for) */
    swa_inv_record invariance[SWA_INV_RECORDS];
    bool untrustworthy;          /* an external backend's result in a run whose marshalling controls failed
                                  * (harness/controls.h): a pass of it became an error */
    int seq;                     /* pair index in the run's order (not written): reports list results by it */
    /* where the time went (not written to reports; `bench --harness` adds
     * them up): the case's data and reference go to its first backend */
    double stage[4];
} swa_result;

typedef struct swa_environment {
    char harness_version[32];
    char git_revision[64];
    char host[128];
    char devices[512];           /* one line per device used */
    char toolkit[256];
    char command_line[1024];
    char launch_target[160];     /* the GPU the launch choices were made for (launch_choice.h's text),
                                    "" when the device has none (host) */
} swa_environment;

/* What decides a run's (case, backend) set, recorded in its report so that
 * `swadiff merge` can tell the shards of one run from anything else
 * (report 1.4: "shard" and "selection").  Digests are FNV-1a 64 in hex. */
typedef struct swa_selection {
    int shard_index, shard_count;   /* --shard I/N (1/1 unsharded); 0/0: the report does not say */
    int cases_selected;             /* cases the filters kept, before the shard took its part */
    char case_files_digest[24];     /* the bytes of every case file loaded, in load order */
    char case_ids_digest[24];       /* the ids the filters kept, in order (before sharding) */
    char paths[512];                /* the CASES arguments as given, '\n'-separated (not compared:
                                     * checkouts differ between machines) */
    char filters[512];              /* --filter values, '\n'-separated */
    char backends[512];             /* --backend, normalized ("" when not given: each case's own) */
    char external[512];             /* the plug-in / adapter backends that run, '\n'-separated */
    char mutant[48];                /* --mutant ("" none) */
    char mutant_only[SWA_ID_MAX];   /* --mutant-only ("" none) */
    char device[16];                /* the device kind (host, cuda, hip), not the GPU ids */
} swa_selection;

/* The marshalling controls of a run with external backends (harness/controls.h). */
typedef enum {
    SWA_CONTROLS_NONE = 0,   /* no external backend in the run: not run */
    SWA_CONTROLS_SOUND,      /* the positive controls passed and the negative ones failed */
    SWA_CONTROLS_BROKEN,     /* the harness's own staging is wrong: external results untrustworthy */
    SWA_CONTROLS_NOT_RUN,    /* could not run (why in summary): external results unchecked */
} swa_controls_state;
#define SWA_CONTROLS_MAX 32
typedef struct swa_control_result {
    char backend[96];        /* swadiff_control:exact, ... */
    char case_id[SWA_ID_MAX];
    bool positive;           /* true: must pass; false: must fail */
    swa_outcome outcome;
    bool as_expected;
    char message[300];
} swa_control_result;
typedef struct swa_controls {
    swa_controls_state state;
    char summary[600];       /* one line: what ran and the verdict */
    int count;
    swa_control_result items[SWA_CONTROLS_MAX];
} swa_controls;

typedef struct swa_run_results {
    swa_result *items;
    int count, capacity;
    swa_environment env;
    double started;              /* unix time, seconds */
    /* Optional: selftest's kill matrix (the object selftest.json holds:
     * "files", and "mutants" each with its "files" cells), which report.html
     * draws above the cases; owned by the caller. */
    const struct cJSON *kill_matrix;
    double duration;
    int exitcode;
    /* Truthfulness: a run that ended before every selected (case, backend)
     * pair had a result is incomplete, in every report and in the exit
     * code.  A report written while the run goes on says so too (a kill
     * leaves it marked), until the run finishes. */
    int expected;                /* pairs the run selected; 0 when unknown */
    bool incomplete;
    char incomplete_reason[200];
    double report_seconds;       /* time the parent spent recording results (reports, console) */
    swa_selection selection;     /* the shard and what selected the cases (report 1.4) */
    swa_controls controls;       /* report 1.5 */
    bool launch_target_mixed;    /* results of two launch targets: env.launch_target stays "" */
} swa_run_results;

#ifdef __cplusplus
extern "C" {
#endif
/* Appends a copy of r (takes ownership of r->cmp's arrays). Returns 0 or -1. */
int swa_run_results_add(swa_run_results *rr, swa_result *r);
void swa_run_results_free(swa_run_results *rr);
/* Orders the results by seq (stable): the same list for any number of workers. */
void swa_run_results_sort(swa_run_results *rr);
/* Counts per outcome; returns the exit code docs/spec.md gives for them:
 * 1 a mismatch, else 3 an error or an incomplete run, else 5 when nothing
 * passed (all skipped, or no result), else 0. */
int swa_run_results_summary(const swa_run_results *rr, int *passed, int *failed, int *error,
                            int *skipped);
/* The same exit code, with every outcome counted: counts[SWA_OUTCOME_*]
 * (they add up to rr->count).  An xpassed result is a mismatch (1); an
 * xfailed one counts as compared (a run of known failures only exits 0). */
int swa_run_results_counts(const swa_run_results *rr, int counts[SWA_OUTCOME_COUNT]);
#ifdef __cplusplus
}
#endif
#endif /* SWADIFF_RESULTS_H */
