/* cli_coverage.c — `swadiff coverage`: which plan decisions, and which
 * pairs of them, the case library makes each backend's planner take (issue
 * 14, "Detection power").  A held-out bug in a branch of the plan logic is
 * found only if some case makes the planner take that branch, so this
 * command plans every (case, backend) pair of the library — kernels are not
 * run, tensors are not made: the planners read only shapes and the page
 * table — and lists the values and pairs that the library never exercises
 * although some valid case could (backends/plan_decisions.c says which are
 * reachable, with a reason for each rule).
 *
 * With --launches TARGET the same question for the GPU kernels' launch
 * choices (backends/launch_choice.h): the cases are planned for the target
 * and what its launchers would take is predicted by the chooser the
 * dispatch itself calls; with --launches-from REPORT the launches a GPU run
 * recorded are tallied instead, against the target the report names, and
 * every result whose launch differs from the chooser's prediction is a
 * fault of the model.
 *
 * Exit: 0 no gap, 1 (SWA_EXIT_MISMATCH: a failure) at least one gap (or a
 * launch the model did not predict), 2 usage or case-file error, 3 a plan
 * failed that no expect_error pinned.
 *
 * Tested by tests/test_coverage.c. */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/launch_choice.h"
#include "backends/layer_plans.h"
#include "backends/plan_decisions.h"
#include "harness/cli.h"
#include "harness/report.h"

#define MAX_PAIRS 32
#define MAXV SWA_DECISION_MAX_VALUES

typedef struct backend_tally {
    const swa_backend *b;
    int plans, skipped, refused, errors;
    long value[SWA_DEC_COUNT][MAXV];
    long pair[MAX_PAIRS][MAXV][MAXV];
    char first_error[512];
} backend_tally;

static int coverage_usage(FILE *f)
{
    char backend_names[256];
    swa_backend_names_text(backend_names, sizeof backend_names);
    fprintf(f,
            "usage: swadiff coverage [OPTIONS] [CASES...]\n"
            "\n"
            "Plans every (case, backend) pair of the case files or folders (default ./cases)\n"
            "without running a kernel, records the decisions each plan took, and lists per\n"
            "backend the decision values and the pairs of values the cases never exercise\n"
            "although the backend's planner can take them (backends/plan_decisions.c has\n"
            "each reachability rule and its reason).  Every decision is read back from the\n"
            "plan except layers, which is the case's: how many plans it makes over its batch.\n"
            "\n"
            "  -d, --device D      the device whose SM count the planners target (default host)\n"
            "  -b, --backend B     only these backends (comma-separated): %s\n"
            "      --json FILE     write the counts, the gaps and the unreachable values with\n"
            "                      their reasons as JSON\n"
            "  -q, --quiet         print the gaps only, not the table of counts\n"
            "      --launches T    the GPU kernels' launch choices instead: plan for target T (%s)\n"
            "                      and predict every launch with the chooser the dispatch calls\n"
            "                      (backends/launch_choice.c); gaps are launch values and pairs T\n"
            "                      takes that no case makes it take\n"
            "      --launches-from REPORT\n"
            "                      the same over the launches a GPU run recorded (report.json 1.6),\n"
            "                      for the target it names; a result whose launch differs from the\n"
            "                      chooser's prediction fails the gate too\n"
            "  -h, --help          this text\n"
            "\n"
            "decisions:\n",
            backend_names, swa_launch_target_names());
    for (int k = 0; k < SWA_DEC_COUNT; k++) {
        const swa_decision_def *d = swa_decision_def_at(k);
        fprintf(f, "  %-15s", d->key);
        for (int v = 0; v < swa_decision_value_count(k); v++)
            fprintf(f, "%s%s", v ? " | " : "", d->values[v]);
        fprintf(f, "%s\n                   %s\n", d->multi ? "  (set, per request)" : "", d->meaning);
    }
    fprintf(f, "pairs:\n ");
    int np;
    const swa_decision_pair *pairs = swa_decision_pairs(&np);
    for (int i = 0; i < np; i++)
        fprintf(f, " %s x %s%s", swa_decision_def_at(pairs[i].a)->key, swa_decision_def_at(pairs[i].b)->key,
                i + 1 < np ? "," : "\n");
    fprintf(f, "\nexit: 0 no gap, 1 some reachable value or pair never exercised, 2 usage or\n"
               "      case-file error, 3 a plan failed that the case did not expect to fail\n");
    return f == stdout ? SWA_EXIT_OK : SWA_EXIT_USAGE;
}

/* The inputs a planner reads: the page table (FlashInfer form; page ids in
 * order, one spare page) and the index arrays.  No tensors. */
static swa_status plan_inputs(const swa_case *c, swa_inputs *in, swa_error *err)
{
    memset(in, 0, sizeof *in);
    int B = c->num_requests;
    in->num_requests = B;
    in->num_qo_heads = c->num_qo_heads;
    in->num_kv_heads = c->num_kv_heads;
    in->head_dim = c->head_dim;
    in->dtype = c->dtype;
    in->qo_indptr = calloc((size_t)B + 1, sizeof(int));
    in->kv_indptr = calloc((size_t)B + 1, sizeof(int));
    if (!in->qo_indptr || !in->kv_indptr)
        return swa_error_set(err, SWA_ERR_NOMEM, "case %s: out of memory for the request offsets", c->id);
    for (int r = 0; r < B; r++) {
        in->qo_indptr[r + 1] = in->qo_indptr[r] + c->qo_len[r];
        in->kv_indptr[r + 1] = in->kv_indptr[r] + c->kv_len[r];
    }
    in->total_qo = in->qo_indptr[B];
    in->total_kv = in->kv_indptr[B];
    /* the page table only: plans never read K/V */
    swa_status st = swa_paged_table_only(&in->paged, c->dtype, c->layout, c->page_size > 0 ? c->page_size : 1, B,
                                         c->kv_len, c->num_kv_heads, c->head_dim, err);
    if (st != SWA_OK) {
        char why[SWA_MSG_MAX];
        snprintf(why, sizeof why, "%s", err->message);
        return swa_error_set(err, st, "case %s: %s", c->id, why);
    }
    return SWA_OK;
}

static void plan_inputs_free(swa_inputs *in)
{
    free(in->qo_indptr);
    free(in->kv_indptr);
    swa_paged_free(&in->paged);
    memset(in, 0, sizeof *in);
}

static void tally_plan(backend_tally *t, const swa_decisions *d)
{
    int np;
    const swa_decision_pair *pairs = swa_decision_pairs(&np);
    t->plans++;
    for (int k = 0; k < SWA_DEC_COUNT; k++)
        for (int v = 0; v < MAXV; v++)
            if (d->set[k] & (1u << v))
                t->value[k][v]++;
    for (int i = 0; i < np && i < MAX_PAIRS; i++)
        for (int va = 0; va < MAXV; va++)
            for (int vb = 0; vb < MAXV; vb++)
                if ((d->set[pairs[i].a] & (1u << va)) && (d->set[pairs[i].b] & (1u << vb)))
                    t->pair[i][va][vb]++;
}

/* Plans case c with backend b on dev and tallies the decisions. */
static void cover_pair(const swa_case *c, const swa_backend *b, const swa_device_ops *dev, backend_tally *t)
{
    char why[512];
    if (b->supports(c, dev, why, sizeof why)) {
        t->skipped++;
        return;
    }
    swa_error err = {0};
    swa_inputs in;
    void *plan = NULL;
    swa_plan_opts po = {.device = dev, .mutant = SWA_MUTANT_NONE, .num_sms = dev->num_sms(), .backend = b};
    swa_status st = plan_inputs(c, &in, &err);
    if (st == SWA_OK)
        st = b->plan(c, &in, &po, &plan, &err);
    if (st == SWA_OK) {
        swa_decisions d;
        st = swa_plan_decisions(b, c, plan, &d, &err);
        if (st == SWA_OK)
            tally_plan(t, &d);
        b->free(plan);
    }
    plan_inputs_free(&in);
    if (st == SWA_OK)
        return;
    if (st == SWA_ERR_UNSUPPORTED) {
        t->skipped++;
    } else if (c->expect_error[0] && strstr(err.message, c->expect_error)) {
        t->refused++; /* the case pins this refusal */
    } else {
        if (!t->errors)
            snprintf(t->first_error, sizeof t->first_error, "%s: %s", c->id, err.message);
        t->errors++;
    }
}

static bool value_gap(const backend_tally *t, int k, int v)
{
    return !t->value[k][v] && !swa_decision_unreachable(t->b, k, v);
}

static bool pair_gap(const backend_tally *t, int i, const swa_decision_pair *p, int va, int vb)
{
    return !t->pair[i][va][vb] && !swa_decision_pair_unreachable(t->b, p->a, va, p->b, vb);
}

/* Prints the table (unless quiet) and the gaps of one backend; returns its gaps. */
static int print_backend(const backend_tally *t, bool quiet)
{
    int np, gaps = 0;
    const swa_decision_pair *pairs = swa_decision_pairs(&np);
    printf("%s: %d plans (%d skipped by supports(), %d refused as the case expects, %d errors)\n", t->b->name,
           t->plans, t->skipped, t->refused, t->errors);
    if (t->errors)
        printf("  first error: %s\n", t->first_error);
    for (int k = 0; k < SWA_DEC_COUNT; k++) {
        if (swa_decision_inapplicable(t->b, k))
            continue;
        const swa_decision_def *d = swa_decision_def_at(k);
        char line[512];
        int len = snprintf(line, sizeof line, "  %-15s", d->key);
        bool gap = false;
        for (int v = 0; v < swa_decision_value_count(k) && len < (int)sizeof line; v++) {
            const char *mark = value_gap(t, k, v) ? " GAP" : swa_decision_unreachable(t->b, k, v) ? " (unreachable)" : "";
            gap |= value_gap(t, k, v);
            len += snprintf(line + len, sizeof line - (size_t)len, "%s%s %ld%s", v ? ", " : "", d->values[v],
                            t->value[k][v], mark);
        }
        if (!quiet || gap)
            printf("%s\n", line);
        for (int v = 0; v < swa_decision_value_count(k); v++)
            gaps += value_gap(t, k, v);
    }
    for (int i = 0; i < np && i < MAX_PAIRS; i++) {
        const swa_decision_pair *p = &pairs[i];
        if (swa_decision_inapplicable(t->b, p->a) || swa_decision_inapplicable(t->b, p->b))
            continue;
        int reachable = 0, hit = 0, missing = 0;
        char miss[512] = "";
        size_t ml = 0;
        for (int va = 0; va < swa_decision_value_count(p->a); va++)
            for (int vb = 0; vb < swa_decision_value_count(p->b); vb++) {
                if (swa_decision_pair_unreachable(t->b, p->a, va, p->b, vb))
                    continue;
                reachable++;
                if (t->pair[i][va][vb]) {
                    hit++;
                    continue;
                }
                missing++;
                if (ml < sizeof miss) {
                    int w = snprintf(miss + ml, sizeof miss - ml, "%s%s+%s", ml ? ", " : "",
                                     swa_decision_def_at(p->a)->values[va], swa_decision_def_at(p->b)->values[vb]);
                    ml += w > 0 ? (size_t)w : 0;
                }
            }
        gaps += missing;
        char name[64];
        snprintf(name, sizeof name, "%s x %s", swa_decision_def_at(p->a)->key, swa_decision_def_at(p->b)->key);
        if (missing)
            printf("  %-28s %d/%d  GAP: %s\n", name, hit, reachable, miss);
        else if (!quiet)
            printf("  %-28s %d/%d\n", name, hit, reachable);
    }
    return gaps;
}

static cJSON *backend_json(const backend_tally *t)
{
    int np;
    const swa_decision_pair *pairs = swa_decision_pairs(&np);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "backend", t->b->name);
    cJSON_AddNumberToObject(o, "plans", t->plans);
    cJSON_AddNumberToObject(o, "skipped", t->skipped);
    cJSON_AddNumberToObject(o, "refused", t->refused);
    cJSON_AddNumberToObject(o, "errors", t->errors);
    if (t->errors)
        cJSON_AddStringToObject(o, "first_error", t->first_error);
    cJSON *dec = cJSON_AddObjectToObject(o, "decisions");
    cJSON *unreach = cJSON_AddArrayToObject(o, "unreachable");
    cJSON *gaps = cJSON_AddArrayToObject(o, "gaps");
    for (int k = 0; k < SWA_DEC_COUNT; k++) {
        const swa_decision_def *d = swa_decision_def_at(k);
        const char *why = swa_decision_inapplicable(t->b, k);
        if (why) {
            cJSON *u = cJSON_CreateObject();
            cJSON_AddStringToObject(u, "decision", d->key);
            cJSON_AddStringToObject(u, "reason", why);
            cJSON_AddItemToArray(unreach, u);
            continue;
        }
        cJSON *vals = cJSON_AddObjectToObject(dec, d->key);
        for (int v = 0; v < swa_decision_value_count(k); v++) {
            cJSON_AddNumberToObject(vals, d->values[v], (double)t->value[k][v]);
            if ((why = swa_decision_unreachable(t->b, k, v))) {
                cJSON *u = cJSON_CreateObject();
                cJSON_AddStringToObject(u, "decision", d->key);
                cJSON_AddStringToObject(u, "value", d->values[v]);
                cJSON_AddStringToObject(u, "reason", why);
                cJSON_AddItemToArray(unreach, u);
            } else if (value_gap(t, k, v)) {
                cJSON *g = cJSON_CreateObject();
                cJSON_AddStringToObject(g, "decision", d->key);
                cJSON_AddStringToObject(g, "value", d->values[v]);
                cJSON_AddItemToArray(gaps, g);
            }
        }
    }
    cJSON *pj = cJSON_AddArrayToObject(o, "pairs");
    for (int i = 0; i < np && i < MAX_PAIRS; i++) {
        const swa_decision_pair *p = &pairs[i];
        if (swa_decision_inapplicable(t->b, p->a) || swa_decision_inapplicable(t->b, p->b))
            continue;
        const swa_decision_def *da = swa_decision_def_at(p->a), *db = swa_decision_def_at(p->b);
        cJSON *po = cJSON_CreateObject();
        cJSON *names = cJSON_AddArrayToObject(po, "decisions");
        cJSON_AddItemToArray(names, cJSON_CreateString(da->key));
        cJSON_AddItemToArray(names, cJSON_CreateString(db->key));
        cJSON *combos = cJSON_AddArrayToObject(po, "combinations");
        for (int va = 0; va < swa_decision_value_count(p->a); va++)
            for (int vb = 0; vb < swa_decision_value_count(p->b); vb++) {
                cJSON *cmb = cJSON_CreateObject();
                cJSON *vv = cJSON_AddArrayToObject(cmb, "values");
                cJSON_AddItemToArray(vv, cJSON_CreateString(da->values[va]));
                cJSON_AddItemToArray(vv, cJSON_CreateString(db->values[vb]));
                cJSON_AddNumberToObject(cmb, "plans", (double)t->pair[i][va][vb]);
                const char *why = swa_decision_pair_unreachable(t->b, p->a, va, p->b, vb);
                if (why)
                    cJSON_AddStringToObject(cmb, "unreachable", why);
                else
                    cJSON_AddBoolToObject(cmb, "gap", pair_gap(t, i, p, va, vb));
                cJSON_AddItemToArray(combos, cmb);
                if (!why && pair_gap(t, i, p, va, vb)) {
                    cJSON *g = cJSON_CreateObject();
                    cJSON *gn = cJSON_AddArrayToObject(g, "pair");
                    cJSON_AddItemToArray(gn, cJSON_CreateString(da->key));
                    cJSON_AddItemToArray(gn, cJSON_CreateString(db->key));
                    cJSON *gv = cJSON_AddArrayToObject(g, "values");
                    cJSON_AddItemToArray(gv, cJSON_CreateString(da->values[va]));
                    cJSON_AddItemToArray(gv, cJSON_CreateString(db->values[vb]));
                    cJSON_AddItemToArray(gaps, g);
                }
            }
        cJSON_AddItemToArray(pj, po);
    }
    return o;
}

static int write_json(const char *path, backend_tally *tally, int nb, const swa_device_ops *dev, int ncases,
                      int total_gaps)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "coverage_version", "1.0");
    cJSON_AddStringToObject(root, "device", dev->name);
    cJSON_AddNumberToObject(root, "num_sms", dev->num_sms());
    cJSON_AddNumberToObject(root, "cases", ncases);
    cJSON_AddNumberToObject(root, "gaps", total_gaps);
    cJSON *arr = cJSON_AddArrayToObject(root, "backends");
    for (int i = 0; i < nb; i++)
        if (tally[i].b)
            cJSON_AddItemToArray(arr, backend_json(&tally[i]));
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    int rc = text && swa_write_text_file(path, text) == 0 ? 0 : -1; /* path.tmp, then a rename */
    cJSON_free(text);
    if (rc)
        fprintf(stderr, "swadiff coverage: --json %s: cannot write the file\n", path);
    return rc;
}

/* ---- launch choices (--launches, --launches-from) ----------------------------------- */

typedef struct launch_tally {
    long value[SWA_LA_COUNT][SWA_LAUNCH_MAX_VALUES];
    long pair[16][SWA_LAUNCH_MAX_VALUES][SWA_LAUNCH_MAX_VALUES];
    int results, skipped, errors, mismatches;
    char first_error[600], first_mismatch[1400];
} launch_tally;

static void launch_tally_add(launch_tally *t, const swa_launch *l)
{
    int np;
    const swa_launch_pair *pairs = swa_launch_pairs(&np);
    t->results++;
    for (int k = 0; k < SWA_LA_COUNT; k++)
        for (int v = 0; v < SWA_LAUNCH_MAX_VALUES; v++)
            if (l->set[k] & (1u << v))
                t->value[k][v]++;
    for (int i = 0; i < np; i++)
        for (int va = 0; va < SWA_LAUNCH_MAX_VALUES; va++)
            for (int vb = 0; vb < SWA_LAUNCH_MAX_VALUES; vb++)
                if ((l->set[pairs[i].a] & (1u << va)) && (l->set[pairs[i].b] & (1u << vb)))
                    t->pair[i][va][vb]++;
}

static void launch_error(launch_tally *t, const char *id, const char *backend, const char *msg)
{
    if (!t->errors)
        snprintf(t->first_error, sizeof t->first_error, "%s [%s]: %s", id, backend, msg);
    t->errors++;
}

/* Plans c with b for target t (every layer of a layered case) and adds
 * what the chooser says its launches are.  A shape no GPU build runs
 * (fp32, another head_dim: refused by the CUDA and HIP supports()) is
 * skipped, as on the GPU. */
static void launch_predict_pair(const swa_case *c, const swa_backend *b, const swa_device_ops *dev,
                                const swa_launch_target *target, launch_tally *t)
{
    char why[512];
    if (b->supports(c, dev, why, sizeof why) || (c->dtype != SWA_DTYPE_FP16 && c->dtype != SWA_DTYPE_BF16) ||
        (c->head_dim != 64 && c->head_dim != 128 && c->head_dim != 256)) {
        t->skipped++;
        return;
    }
    swa_error err = {0};
    swa_inputs in;
    swa_plan_opts po = {.device = dev, .mutant = SWA_MUTANT_NONE, .num_sms = target->sm_count, .backend = b};
    swa_status st = plan_inputs(c, &in, &err);
    swa_layer_plans *lp = NULL;
    void *plan = NULL;
    swa_launch all = {{0}};
    bool want_lse = c->return_lse || b->lse_base != 0;
    if (st == SWA_OK && c->num_layers > 0) {
        lp = calloc(1, sizeof *lp);
        st = lp ? swa_layer_plans_build(b, c, &in, &po, lp, &err)
                : swa_error_set(&err, SWA_ERR_NOMEM, "out of memory for the layer plans");
        for (int l = 0; st == SWA_OK && l < c->num_layers; l++) {
            swa_launch one;
            st = swa_launch_predict(target, b, lp->plan[l], want_lse, &one, &err);
            if (st == SWA_OK)
                swa_launch_union(&all, &one);
        }
        if (lp && lp->num_layers)
            swa_layer_plans_free(b, lp);
        free(lp);
    } else if (st == SWA_OK) {
        st = b->plan(c, &in, &po, &plan, &err);
        if (st == SWA_OK) {
            st = swa_launch_predict(target, b, plan, want_lse, &all, &err);
            b->free(plan);
        }
    }
    plan_inputs_free(&in);
    if (st == SWA_OK)
        launch_tally_add(t, &all);
    else if (st == SWA_ERR_UNSUPPORTED || (c->expect_error[0] && strstr(err.message, c->expect_error)))
        t->skipped++;
    else
        launch_error(t, c->id, b->name, err.message);
}

/* Prints the values of every key (counts, GAP, unreachable) and the pairs
 * never taken although the target takes them; returns the gaps. */
static int launch_print(const launch_tally *t, const swa_launch_space *sp, bool quiet)
{
    int gaps = 0, np;
    const swa_launch_pair *pairs = swa_launch_pairs(&np);
    for (int k = 0; k < SWA_LA_COUNT; k++) {
        const swa_launch_def *d = swa_launch_def_at(k);
        char line[600];
        int len = snprintf(line, sizeof line, "  %-24s", d->key);
        bool gap = false;
        for (int v = 0; v < swa_launch_value_count(k) && len < (int)sizeof line; v++) {
            bool reach = sp->values.set[k] & (1u << v);
            bool g = reach && !t->value[k][v];
            gap |= g;
            gaps += g;
            len += snprintf(line + len, sizeof line - (size_t)len, "%s%s %ld%s", v ? ", " : "", d->values[v],
                            t->value[k][v], g ? " GAP" : reach ? "" : " (not on this target)");
        }
        if (!quiet || gap)
            printf("%s\n", line);
    }
    for (int i = 0; i < np; i++)
        for (int va = 0; va < swa_launch_value_count(pairs[i].a); va++)
            for (int vb = 0; vb < swa_launch_value_count(pairs[i].b); vb++)
                if ((sp->pair[i][va] & (1u << vb)) && !t->pair[i][va][vb]) {
                    printf("  pair GAP %s=%s x %s=%s\n", swa_launch_def_at(pairs[i].a)->key,
                           swa_launch_def_at(pairs[i].a)->values[va], swa_launch_def_at(pairs[i].b)->key,
                           swa_launch_def_at(pairs[i].b)->values[vb]);
                    gaps++;
                }
    return gaps;
}

static int launch_finish(const launch_tally *t, const swa_launch_space *sp, bool quiet, const char *what)
{
    printf("%s: %d results with launches (%d skipped: the GPU builds do not run them, %d errors)\n", what,
           t->results, t->skipped, t->errors);
    if (t->errors)
        printf("  first error: %s\n", t->first_error);
    int gaps = launch_print(t, sp, quiet);
    if (t->mismatches)
        printf("  %d result%s launched other than the chooser predicted from the plan; first: %s\n", t->mismatches,
               t->mismatches == 1 ? "" : "s", t->first_mismatch);
    printf("launch coverage: %d gap%s (launch choices the target takes that no case makes it take), %d "
           "unpredicted launch%s\n",
           gaps, gaps == 1 ? "" : "s", t->mismatches, t->mismatches == 1 ? "" : "es");
    if (gaps || t->mismatches)
        return SWA_EXIT_MISMATCH;
    if (t->errors)
        return SWA_EXIT_RUNTIME;
    if (!t->results) {
        printf("launch coverage: nothing was launched or predicted: not a pass\n");
        return SWA_EXIT_NOTHING_COMPARED;
    }
    return SWA_EXIT_OK;
}

static int launches_from_report(const char *path, bool quiet)
{
    swa_run_results *rr = calloc(1, sizeof *rr);
    launch_tally *t = calloc(1, sizeof *t);
    swa_error err = {0};
    int rc = SWA_EXIT_RUNTIME;
    if (!rr || !t) {
        fprintf(stderr, "swadiff coverage: out of memory\n");
        goto out;
    }
    if (swa_report_read(path, rr, &err) != SWA_OK) {
        fprintf(stderr, "swadiff coverage: --launches-from %s: %s\n", path, err.message);
        rc = SWA_EXIT_USAGE;
        goto out;
    }
    swa_launch_target target;
    if (!rr->env.launch_target[0]) {
        fprintf(stderr,
                "swadiff coverage: --launches-from %s: the report has no environment.launch_target: its device "
                "(%s) makes no launch choices (the host emulation), or the report predates 1.6; gate the report "
                "of a GPU run\n",
                path, rr->env.devices[0] ? rr->env.devices : "unnamed");
        rc = SWA_EXIT_USAGE;
        goto out;
    }
    if (swa_launch_target_parse(rr->env.launch_target, &target, &err) != SWA_OK) {
        fprintf(stderr, "swadiff coverage: --launches-from %s: environment.launch_target: %s\n", path, err.message);
        rc = SWA_EXIT_USAGE;
        goto out;
    }
    for (int i = 0; i < rr->count; i++) {
        const swa_result *r = &rr->items[i];
        swa_launch l;
        if (!r->launch[0]) {
            t->skipped++;
            continue;
        }
        if (swa_launch_parse(r->launch, &l, &err) != SWA_OK) {
            launch_error(t, r->id, r->backend, err.message);
            continue;
        }
        launch_tally_add(t, &l);
        if (r->launch_predicted[0]) {
            if (!t->mismatches)
                snprintf(t->first_mismatch, sizeof t->first_mismatch, "%s [%s]: launched %s; predicted %s",
                         r->id, r->backend, r->launch, r->launch_predicted);
            t->mismatches++;
        }
    }
    swa_launch_space sp;
    swa_launch_space_of(&target, &sp);
    printf("swadiff coverage --launches-from %s: %d results, target %s\n\n", path, rr->count, rr->env.launch_target);
    rc = launch_finish(t, &sp, quiet, "recorded");
out:
    if (rr)
        swa_run_results_free(rr);
    free(rr);
    free(t);
    return rc;
}

static int launches_predicted(const swa_launch_target *target, const char *name, const swa_case_list *all,
                              unsigned backend_mask, const swa_device_ops *dev, bool quiet)
{
    launch_tally *t = calloc(1, sizeof *t);
    if (!t) {
        fprintf(stderr, "swadiff coverage: out of memory\n");
        return SWA_EXIT_RUNTIME;
    }
    int nb;
    const swa_backend *const *backends = swa_backends(&nb);
    for (int i = 0; i < all->count; i++)
        for (int k = 0; k < nb; k++) {
            const swa_backend *b = backends[k];
            if (!(all->cases[i].backends & b->flag) || (backend_mask && !(backend_mask & b->flag)))
                continue;
            launch_predict_pair(&all->cases[i], b, dev, target, t);
        }
    char text[160];
    swa_launch_target_format(target, text, sizeof text);
    printf("swadiff coverage --launches %s: %d cases, predicted by the launch chooser (%s)\n\n", name, all->count,
           text);
    swa_launch_space sp;
    swa_launch_space_of(target, &sp);
    int rc = launch_finish(t, &sp, quiet, "predicted");
    free(t);
    return rc;
}

int swa_cmd_coverage(int argc, char **argv)
{
    static const struct option opts[] = {
        {"device", required_argument, 0, 'd'}, {"backend", required_argument, 0, 'b'},
        {"json", required_argument, 0, 'J'},   {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},         {"launches", required_argument, 0, 'L'},
        {"launches-from", required_argument, 0, 'R'}, {0, 0, 0, 0},
    };
    const char *device_name = "host", *json_path = NULL, *launch_name = NULL, *launch_report = NULL;
    unsigned backend_mask = 0;
    bool quiet = false;
    char bad[128];
    optind = 1;
    int ch;
    while ((ch = getopt_long(argc, argv, "d:b:qh", opts, NULL)) != -1) {
        switch (ch) {
        case 'd': device_name = optarg; break;
        case 'b':
            if (!(backend_mask = swa_cli_parse_backends(optarg, bad, sizeof bad))) {
                char names[256];
                swa_backend_names_text(names, sizeof names);
                fprintf(stderr, "swadiff coverage: --backend: unknown backend '%s' (expected %s)\n", bad, names);
                return SWA_EXIT_USAGE;
            }
            break;
        case 'J': json_path = optarg; break;
        case 'L': launch_name = optarg; break;
        case 'R': launch_report = optarg; break;
        case 'q': quiet = true; break;
        case 'h': return coverage_usage(stdout);
        default: return coverage_usage(stderr);
        }
    }
    swa_launch_target target;
    if ((launch_name || launch_report) && json_path) {
        fprintf(stderr, "swadiff coverage: --json writes the plan decisions; it does not go with --launches or "
                        "--launches-from\n");
        return SWA_EXIT_USAGE;
    }
    if (launch_report) {
        if (launch_name || optind < argc) {
            fprintf(stderr, "swadiff coverage: --launches-from REPORT takes no --launches and no case paths (the "
                            "report's results are the cases)\n");
            return SWA_EXIT_USAGE;
        }
        return launches_from_report(launch_report, quiet);
    }
    if (launch_name && !swa_launch_target_named(launch_name, &target)) {
        fprintf(stderr, "swadiff coverage: --launches: unknown target '%s' (expected %s)\n", launch_name,
                swa_launch_target_names());
        return SWA_EXIT_USAGE;
    }
    int exit_code = SWA_EXIT_OK;
    const swa_device_ops *dev = swa_cli_device(device_name, &exit_code);
    if (!dev)
        return exit_code;
    swa_case_list all = {0};
    int rc = swa_cli_load_cases(argc - optind, argv + optind, &all);
    if (rc) {
        swa_case_list_free(&all);
        return rc;
    }
    if (launch_name) {
        rc = launches_predicted(&target, launch_name, &all, backend_mask, dev, quiet);
        swa_case_list_free(&all);
        return rc;
    }
    int nb;
    const swa_backend *const *backends = swa_backends(&nb);
    backend_tally *tally = calloc((size_t)nb, sizeof *tally);
    if (!tally) {
        swa_case_list_free(&all);
        fprintf(stderr, "swadiff coverage: out of memory\n");
        return SWA_EXIT_RUNTIME;
    }
    for (int i = 0; i < all.count; i++)
        for (int k = 0; k < nb; k++) {
            const swa_backend *b = backends[k];
            if (!(all.cases[i].backends & b->flag) || (backend_mask && !(backend_mask & b->flag)))
                continue;
            tally[k].b = b;
            cover_pair(&all.cases[i], b, dev, &tally[k]);
        }
    printf("swadiff coverage: %d cases, device %s (planning for %d SMs)\n\n", all.count, dev->name, dev->num_sms());
    int gaps = 0, errors = 0;
    for (int k = 0; k < nb; k++)
        if (tally[k].b) {
            int g = print_backend(&tally[k], quiet);
            printf("  -> %d gap%s\n\n", g, g == 1 ? "" : "s");
            gaps += g;
            errors += tally[k].errors;
        }
    printf("coverage: %d gap%s (reachable decision values or pairs no case exercises)%s\n", gaps,
           gaps == 1 ? "" : "s", errors ? "; some plans failed unexpectedly" : "");
    if (json_path && write_json(json_path, tally, nb, dev, all.count, gaps) != 0)
        exit_code = SWA_EXIT_RUNTIME;
    free(tally);
    swa_case_list_free(&all);
    if (gaps)
        return SWA_EXIT_MISMATCH;
    if (errors || exit_code)
        return SWA_EXIT_RUNTIME;
    return SWA_EXIT_OK;
}
