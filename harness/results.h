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
} swa_outcome;

static inline const char *swa_outcome_name(swa_outcome o)
{
    return o == SWA_OUTCOME_PASSED ? "passed" : o == SWA_OUTCOME_FAILED ? "failed"
         : o == SWA_OUTCOME_ERROR ? "error" : "skipped";
}

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
    char diagnosis[800];         /* explain's verdict for failures, "" when none */
    char warnings[512];          /* plan-time warnings, "" when none */
    char reproduce[1024];        /* command line that reruns this case alone */
    char kernel[192];            /* the device's kernel variant that computed it (swa_device_ops.last_kernel),
                                    "" when the device does not say (host emulation, external backends) */
    char decisions[1024];        /* what the plan decided, "key=value;key=v1+v2" (backends/plan_decisions.h);
                                  * "" when no plan was built (skip, refusal, external backend) */
    /* shape summary for the HTML heatmap captions */
    int num_requests, total_qo, num_qo_heads, num_kv_heads, head_dim, window_left;
    int window_right;            /* -1 unbounded (0 for causal cases) */
    int chunk_size;              /* attention_chunk_size, 0 when off */
    bool causal;
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
} swa_environment;

typedef struct swa_run_results {
    swa_result *items;
    int count, capacity;
    swa_environment env;
    double started;              /* unix time, seconds */
    /* Optional HTML section (already escaped, owned by the caller) that
     * report.html shows above the cases: selftest's kill matrix. */
    const char *extra_html;
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
} swa_run_results;

#ifdef __cplusplus
extern "C" {
#endif
/* Appends a copy of r (takes ownership of r->cmp's arrays). Returns 0 or -1. */
int swa_run_results_add(swa_run_results *rr, swa_result *r);
void swa_run_results_free(swa_run_results *rr);
/* Orders the results by seq (stable): the same list for any number of workers. */
void swa_run_results_sort(swa_run_results *rr);
/* Counts per outcome; returns the exit code docs/spec.md gives for them
 * (an incomplete run is never 0: 1 when a mismatch was seen, else 3). */
int swa_run_results_summary(const swa_run_results *rr, int *passed, int *failed, int *error,
                            int *skipped);
#ifdef __cplusplus
}
#endif
#endif /* SWADIFF_RESULTS_H */
