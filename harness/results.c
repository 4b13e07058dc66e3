/* results.c — the growing list of (case, backend) results.
 * Test: tests/test_report_json.c, tests/test_cli.c. */
#include "harness/results.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int swa_run_results_add(swa_run_results *rr, swa_result *r)
{
    if (rr->count == rr->capacity) {
        int cap = rr->capacity ? rr->capacity * 2 : 64;
        swa_result *items = realloc(rr->items, (size_t)cap * sizeof *items);
        if (!items)
            return -1;
        rr->items = items;
        rr->capacity = cap;
    }
    rr->items[rr->count++] = *r;
    /* the GPU the launches were chosen for, as the workers saw it (the
     * parent never initialises the device: a CUDA context does not survive
     * fork); results of two targets leave the run with none to gate by */
    if (r->launch_target[0] && !rr->launch_target_mixed) {
        if (!rr->env.launch_target[0])
            snprintf(rr->env.launch_target, sizeof rr->env.launch_target, "%s", r->launch_target);
        else if (strcmp(rr->env.launch_target, r->launch_target) != 0) {
            rr->env.launch_target[0] = '\0';
            rr->launch_target_mixed = true;
        }
    }
    /* ownership of the compare arrays moved into the list */
    r->cmp.row_head_ratio = NULL;
    return 0;
}

void swa_run_results_free(swa_run_results *rr)
{
    for (int i = 0; i < rr->count; i++)
        swa_compare_result_free(&rr->items[i].cmp);
    free(rr->items);
    rr->items = NULL;
    rr->count = rr->capacity = 0;
}

int swa_run_results_counts(const swa_run_results *rr, int counts[SWA_OUTCOME_COUNT])
{
    int n[SWA_OUTCOME_COUNT] = {0};
    for (int i = 0; i < rr->count; i++)
        if ((unsigned)rr->items[i].outcome < SWA_OUTCOME_COUNT)
            n[rr->items[i].outcome]++;
    if (counts)
        for (int o = 0; o < SWA_OUTCOME_COUNT; o++)
            counts[o] = n[o];
    /* a wrong kernel is the headline: mismatches outrank runtime errors; a
     * known failure that passes is one too (strict, as pytest's xfail_strict:
     * the mark is stale and hides the next regression) */
    if (n[SWA_OUTCOME_FAILED] || n[SWA_OUTCOME_XPASSED]) return SWA_EXIT_MISMATCH;
    if (n[SWA_OUTCOME_ERROR] || rr->incomplete) return SWA_EXIT_RUNTIME;
    /* a run that checked no kernel is not green (every result a skip, or none) */
    if (!n[SWA_OUTCOME_PASSED] && !n[SWA_OUTCOME_XFAILED]) return SWA_EXIT_NOTHING_COMPARED;
    return SWA_EXIT_OK;
}

int swa_run_results_summary(const swa_run_results *rr, int *passed, int *failed, int *error,
                            int *skipped)
{
    int n[SWA_OUTCOME_COUNT];
    int rc = swa_run_results_counts(rr, n);
    if (passed) *passed = n[SWA_OUTCOME_PASSED];
    if (failed) *failed = n[SWA_OUTCOME_FAILED];
    if (error) *error = n[SWA_OUTCOME_ERROR];
    if (skipped) *skipped = n[SWA_OUTCOME_SKIPPED];
    return rc;
}

void swa_run_results_sort(swa_run_results *rr)
{
    /* insertion sort: stable, and results arrive nearly in order */
    for (int i = 1; i < rr->count; i++) {
        swa_result key = rr->items[i];
        int j = i - 1;
        while (j >= 0 && rr->items[j].seq > key.seq) {
            rr->items[j + 1] = rr->items[j];
            j--;
        }
        rr->items[j + 1] = key;
    }
}
