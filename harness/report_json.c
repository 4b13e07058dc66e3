/* report_json.c — the report.json / results.jsonl writer (the reader is
 * report_read.c).
 * Layout: cases/schema/report.schema.json (JSON Schema 2020-12).
 *
 * Non-finite numbers (a NaN output, an infinite relative difference) are
 * written as the strings "NaN", "Infinity" and "-Infinity" — JSON has no
 * such numbers, and a null would lose which one it was.
 *
 * The (row, head) matrix of error/allowed ratios is stored for failed
 * results (null otherwise) with 3 significant digits, at most
 * SWA_REPORT_MAX_MATRIX_ROWS rows: larger ones are binned (maximum over
 * consecutive rows; row_bin says how many).
 *
 * Test: tests/test_report_json.c (golden file, schema, round trip, merge).
 */
#include "harness/report.h"
#include "harness/invariance.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- writing ------------------------------------------------------------------ */

static cJSON *json_real(double v)
{
    if (isnan(v))
        return cJSON_CreateString("NaN");
    if (isinf(v))
        return cJSON_CreateString(v > 0 ? "Infinity" : "-Infinity");
    return cJSON_CreateNumber(v);
}

static void add_real(cJSON *obj, const char *key, double v) { cJSON_AddItemToObject(obj, key, json_real(v)); }

/* every string from a case file, a kernel or the command line goes
 * through here: JSON text must be valid UTF-8 */
static void add_str(cJSON *obj, const char *key, const char *s)
{
    char *clean = swa_utf8_sanitize(s);
    cJSON_AddStringToObject(obj, key, clean ? clean : "");
    free(clean);
}

static cJSON *make_str(const char *s)
{
    char *clean = swa_utf8_sanitize(s);
    cJSON *it = cJSON_CreateString(clean ? clean : "");
    free(clean);
    return it;
}

static double round_sig3(double v)
{
    if (!isfinite(v) || v == 0)
        return v;
    char buf[32];
    snprintf(buf, sizeof buf, "%.3g", v);
    return strtod(buf, NULL);
}

static void add_string_or_null(cJSON *obj, const char *key, const char *s)
{
    if (s && *s)
        add_str(obj, key, s);
    else
        cJSON_AddNullToObject(obj, key);
}

/* "key=value;key=v1+v2" text as an object of key -> value; nothing for "". */
static void add_keyed(cJSON *o, const char *field, const char *text_in)
{
    if (!text_in[0])
        return;
    cJSON *dec = cJSON_AddObjectToObject(o, field);
    char text[1024];
    snprintf(text, sizeof text, "%s", text_in);
    for (char *save = NULL, *kv = strtok_r(text, ";", &save); kv; kv = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq)
            continue;
        *eq = '\0';
        add_str(dec, kv, eq + 1);
    }
}

static cJSON *index_json(const swa_index *ix);

static cJSON *invariance_json(const swa_result *r)
{
    cJSON *list = cJSON_CreateArray();
    for (int i = 0; i < r->num_invariance; i++) {
        const swa_inv_record *v = &r->invariance[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(list, o);
        add_str(o, "name", v->name);
        add_str(o, "detail", v->detail);
        cJSON_AddStringToObject(o, "state", swa_inv_state_names[v->state]);
        cJSON_AddBoolToObject(o, "bitwise", v->bitwise);
        add_str(o, "message", v->message);
        cJSON_AddNumberToObject(o, "runs", v->runs);
        cJSON_AddNumberToObject(o, "elements", (double)v->elements);
        cJSON_AddNumberToObject(o, "total", (double)v->total);
        cJSON_AddNumberToObject(o, "nonfinite", (double)v->nonfinite);
        cJSON_AddNumberToObject(o, "lse_entries", (double)v->lse_entries);
        cJSON_AddNumberToObject(o, "lse_total", (double)v->lse_total);
        add_real(o, "max_abs_diff", v->max_abs_diff);
        add_real(o, "max_tol_ratio", v->max_tol_ratio);
        cJSON_AddItemToObject(o, "first_index", index_json(v->elements ? &v->first_index : &(swa_index){-1, 0, 0, 0, 0}));
        cJSON_AddItemToObject(o, "worst_index",
                              index_json(v->max_tol_ratio > 0 ? &v->worst_index : &(swa_index){-1, 0, 0, 0, 0}));
        if (v->state == SWA_INV_DIFFERS) {
            cJSON *g = cJSON_AddObjectToObject(o, "grid");
            cJSON_AddNumberToObject(g, "rows", v->grid_rows);
            cJSON_AddNumberToObject(g, "heads", v->grid_heads);
            cJSON *cells = cJSON_AddArrayToObject(g, "cells");
            for (int a = 0; a < v->grid_rows; a++)
                for (int h = 0; h < v->grid_heads; h++)
                    cJSON_AddItemToArray(cells, json_real(v->grid[a * SWA_INV_GRID_HEADS + h]));
        }
    }
    return list;
}

static cJSON *index_json(const swa_index *ix)
{
    if (ix->request < 0)
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "request", ix->request);
    cJSON_AddNumberToObject(o, "row", ix->row);
    cJSON_AddNumberToObject(o, "position", ix->position);
    cJSON_AddNumberToObject(o, "head", ix->head);
    if (ix->dim >= 0)
        cJSON_AddNumberToObject(o, "dim", ix->dim);
    return o;
}

static cJSON *region_json(const swa_region_stats *s)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "count", (double)s->count);
    cJSON_AddNumberToObject(o, "mismatched", (double)s->mismatched);
    add_real(o, "max_abs_diff", s->max_abs_diff);
    return o;
}

static const char *tol_mode_name(swa_tol_mode m)
{
    return m == SWA_TOL_ABS_REL ? "abs_rel" : m == SWA_TOL_BASELINE ? "baseline" : "default";
}

static cJSON *matrix_json(const swa_compare_result *c)
{
    const int src_bin = c->row_bin > 0 ? c->row_bin : 1;
    const int bin = (c->rows + SWA_REPORT_MAX_MATRIX_ROWS - 1) / SWA_REPORT_MAX_MATRIX_ROWS > 1
                        ? (c->rows + SWA_REPORT_MAX_MATRIX_ROWS - 1) / SWA_REPORT_MAX_MATRIX_ROWS
                        : 1;
    const int out_rows = (c->rows + bin - 1) / bin;
    cJSON *m = cJSON_CreateObject();
    cJSON_AddNumberToObject(m, "rows", out_rows);
    cJSON_AddNumberToObject(m, "heads", c->heads);
    cJSON_AddNumberToObject(m, "row_bin", src_bin * bin);
    cJSON *values = cJSON_AddArrayToObject(m, "values");
    cJSON *req = cJSON_AddArrayToObject(m, "row_request");
    cJSON *edge = cJSON_AddArrayToObject(m, "row_past_edge");
    for (int i = 0; i < out_rows; i++) {
        int r0 = i * bin, r1 = r0 + bin < c->rows ? r0 + bin : c->rows;
        cJSON *row = cJSON_CreateArray();
        for (int h = 0; h < c->heads; h++) {
            float v = 0;
            for (int r = r0; r < r1; r++) {
                float x = c->row_head_ratio[(size_t)r * c->heads + h];
                if (x > v || isnan(x))
                    v = isnan(x) ? INFINITY : x;
            }
            cJSON_AddItemToArray(row, json_real(round_sig3(v)));
        }
        cJSON_AddItemToArray(values, row);
        int e = c->row_past_edge ? c->row_past_edge[r0] : 0;
        for (int r = r0; c->row_past_edge && r < r1; r++)
            if (c->row_past_edge[r] > e)
                e = c->row_past_edge[r];
        cJSON_AddItemToArray(req, cJSON_CreateNumber(c->row_request ? c->row_request[r0] : 0));
        cJSON_AddItemToArray(edge, cJSON_CreateNumber(e));
    }
    return m;
}

static cJSON *elem_json(const swa_elem *e)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "index", index_json(&e->index));
    add_real(o, "actual", e->actual);
    add_real(o, "expected", e->expected);
    add_real(o, "abs_diff", e->abs_diff);
    add_real(o, "allowed", e->allowed);
    return o;
}

/* with_matrix (a failed result): the (row, head) matrix is what the heatmap
 * of a failure is drawn from; for a passing result it would only make
 * report.json large and slow to rewrite (it is most of the bytes), so it is
 * written as null, and of the worst elements only the first (the margin). */
static cJSON *mismatch_json(const swa_compare_result *c, bool with_matrix)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddNumberToObject(m, "count", (double)c->mismatched);
    cJSON_AddNumberToObject(m, "total", (double)c->total);
    cJSON_AddNumberToObject(m, "ratio", c->ratio);
    cJSON *abs = cJSON_AddObjectToObject(m, "max_abs_diff");
    add_real(abs, "value", c->max_abs_diff);
    cJSON_AddItemToObject(abs, "index", index_json(&c->max_abs_index));
    add_real(abs, "allowed", c->max_abs_allowed);
    cJSON *rel = cJSON_AddObjectToObject(m, "max_rel_diff");
    add_real(rel, "value", c->max_rel_diff);
    cJSON_AddItemToObject(rel, "index", index_json(&c->max_rel_index));
    add_real(rel, "allowed", c->max_rel_allowed);
    cJSON *nan = cJSON_AddObjectToObject(m, "nan");
    cJSON_AddNumberToObject(nan, "actual", (double)c->nan_actual);
    cJSON_AddNumberToObject(nan, "expected", (double)c->nan_expected);
    cJSON *inf = cJSON_AddObjectToObject(m, "inf");
    cJSON_AddNumberToObject(inf, "actual", (double)c->inf_actual);
    cJSON_AddNumberToObject(inf, "expected", (double)c->inf_expected);
    cJSON_AddNumberToObject(m, "unwritten", (double)c->unwritten);
    cJSON *guard = cJSON_AddObjectToObject(m, "guard");
    cJSON_AddBoolToObject(guard, "violation", c->guard_violation);
    add_string_or_null(guard, "message", c->guard_message);
    cJSON *regions = cJSON_AddObjectToObject(m, "regions");
    cJSON_AddItemToObject(regions, "window_binds", region_json(&c->window_binds));
    cJSON_AddItemToObject(regions, "window_free", region_json(&c->window_free));
    cJSON *edge = cJSON_AddArrayToObject(regions, "past_edge");
    for (int b = 0; b < SWA_DIST_BUCKETS; b++) {
        cJSON *o = region_json(&c->past_edge[b]);
        cJSON_AddStringToObject(o, "distance", swa_past_edge_bucket_label(b));
        cJSON_AddItemToArray(edge, o);
    }
    /* a pass needs only its closest call (the margin); a failure all K */
    cJSON *worst = cJSON_AddArrayToObject(m, "worst");
    for (int i = 0; i < c->worst_count && (with_matrix || i < 1); i++)
        cJSON_AddItemToArray(worst, elem_json(&c->worst[i]));
    if (with_matrix && c->row_head_ratio && c->rows > 0 && c->heads > 0)
        cJSON_AddItemToObject(m, "row_head_ratio", matrix_json(c));
    else
        cJSON_AddNullToObject(m, "row_head_ratio");
    return m;
}

static cJSON *lse_json(const swa_compare_result *c)
{
    if (!c->lse_compared)
        return cJSON_CreateNull();
    cJSON *l = cJSON_CreateObject();
    cJSON_AddNumberToObject(l, "count", (double)c->lse_mismatched);
    cJSON_AddNumberToObject(l, "total", (double)c->lse_total);
    cJSON_AddNumberToObject(l, "unwritten", (double)c->lse_unwritten);
    cJSON_AddNumberToObject(l, "nonfinite", (double)c->lse_nonfinite);
    cJSON *abs = cJSON_AddObjectToObject(l, "max_abs_diff");
    add_real(abs, "value", c->lse_max_abs_diff);
    cJSON_AddItemToObject(abs, "index", index_json(&c->lse_max_index));
    add_real(abs, "allowed", c->lse_max_abs_allowed);
    cJSON_AddNumberToObject(l, "base", c->lse_base);
    return l;
}

cJSON *swa_report_case_json(const swa_result *r)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    add_str(o, "id", r->id);
    add_str(o, "file", r->file);
    add_str(o, "backend", r->backend);
    add_str(o, "device", r->device);
    cJSON_AddStringToObject(o, "dtype", swa_dtype_name(r->dtype));
    add_string_or_null(o, "mutant", r->mutant);
    cJSON_AddStringToObject(o, "outcome", swa_outcome_name(r->outcome));
    cJSON_AddNumberToObject(o, "duration", r->duration);
    cJSON *shape = cJSON_AddObjectToObject(o, "shape");
    cJSON_AddNumberToObject(shape, "num_requests", r->num_requests);
    cJSON_AddNumberToObject(shape, "total_qo", r->total_qo);
    cJSON_AddNumberToObject(shape, "num_qo_heads", r->num_qo_heads);
    cJSON_AddNumberToObject(shape, "num_kv_heads", r->num_kv_heads);
    cJSON_AddNumberToObject(shape, "head_dim", r->head_dim);
    cJSON_AddNumberToObject(shape, "window_left", r->window_left);
    cJSON_AddBoolToObject(shape, "causal", r->causal);
    cJSON_AddNumberToObject(shape, "window_right", r->window_right);
    cJSON_AddNumberToObject(shape, "attention_chunk_size", r->chunk_size);
    cJSON *tol = cJSON_AddObjectToObject(o, "tolerance");
    cJSON_AddStringToObject(tol, "mode", tol_mode_name(r->tol.mode));
    /* what the comparison applied, when there was one; else what was asked */
    add_real(tol, "atol", r->has_compare ? r->cmp.atol : r->tol.atol);
    add_real(tol, "rtol", r->has_compare ? r->cmp.rtol : r->tol.rtol);
    if (r->tol.mode == SWA_TOL_BASELINE)
        add_real(tol, "factor", r->has_compare ? r->cmp.factor : r->tol.factor);
    else
        cJSON_AddNullToObject(tol, "factor");
    add_real(tol, "lse_atol", r->has_compare && r->cmp.lse_compared ? r->cmp.lse_max_abs_allowed : r->tol.lse_atol);
    cJSON_AddBoolToObject(tol, "equal_nan", r->tol.equal_nan);
    if (r->has_compare) {
        cJSON_AddItemToObject(o, "mismatch", mismatch_json(&r->cmp, r->outcome == SWA_OUTCOME_FAILED));
        cJSON_AddItemToObject(o, "lse", lse_json(&r->cmp));
    } else {
        cJSON_AddNullToObject(o, "mismatch");
        cJSON_AddNullToObject(o, "lse");
    }
    add_str(o, "message", r->message);
    add_string_or_null(o, "diagnosis", r->diagnosis);
    /* a known failure (--xfail, a case's "xfail"): why, and the outcome it had */
    if (r->xfail[0]) {
        cJSON *x = cJSON_AddObjectToObject(o, "xfail");
        cJSON_AddStringToObject(x, "reason", r->xfail);
        cJSON_AddStringToObject(x, "outcome", swa_outcome_name(r->xfail_was));
    } else {
        cJSON_AddNullToObject(o, "xfail");
    }
    cJSON *warnings = cJSON_AddArrayToObject(o, "warnings");
    for (const char *p = r->warnings; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        if (n) {
            char line[sizeof r->warnings];
            memcpy(line, p, n);
            line[n] = '\0';
            cJSON_AddItemToArray(warnings, make_str(line));
        }
        p += n + (nl ? 1 : 0);
    }
    add_str(o, "reproduce", r->reproduce);
    /* report 1.4: runs of the pair on the same inputs (--repeat), and how
     * runs 2..N differed from run 1 bitwise (null when they did not) */
    cJSON_AddNumberToObject(o, "repeat", r->repeat > 1 ? r->repeat : 1);
    if (r->untrustworthy) /* report 1.5: the run's marshalling controls failed */
        cJSON_AddBoolToObject(o, "untrustworthy", true);
    if (r->nondet.runs_differing) {
        const swa_nondet *nd = &r->nondet;
        cJSON *n = cJSON_AddObjectToObject(o, "nondeterministic");
        cJSON_AddNumberToObject(n, "runs_differing", nd->runs_differing);
        cJSON_AddNumberToObject(n, "first_run", nd->first_run);
        cJSON_AddItemToObject(n, "first_index", index_json(&nd->first_index));
        cJSON_AddNumberToObject(n, "worst_run", nd->worst_run);
        cJSON_AddNumberToObject(n, "elements", (double)nd->elements);
        cJSON_AddNumberToObject(n, "total", (double)nd->total);
        cJSON_AddNumberToObject(n, "nonfinite", (double)nd->nonfinite);
        cJSON_AddNumberToObject(n, "lse_entries", (double)nd->lse_entries);
        cJSON_AddNumberToObject(n, "lse_total", (double)nd->lse_total);
        cJSON_AddNumberToObject(n, "guard_bytes", (double)nd->guard_bytes);
        cJSON *abs = cJSON_AddObjectToObject(n, "max_abs_diff");
        add_real(abs, "value", nd->max_abs_diff);
        cJSON_AddItemToObject(abs, "index", index_json(nd->max_abs_run > 0 ? &nd->max_abs_index
                                                                            : &(swa_index){-1, 0, 0, 0, 0}));
        cJSON_AddNumberToObject(abs, "run", nd->max_abs_run);
    } else {
        cJSON_AddNullToObject(o, "nondeterministic");
    }
    /* report 1.7: what the backend declares about itself, and the
     * invariance checks (absent when none was asked for) */
    cJSON *declared = cJSON_AddArrayToObject(o, "declared");
    if (r->traits & SWA_TRAIT_DETERMINISTIC)
        cJSON_AddItemToArray(declared, cJSON_CreateString("deterministic"));
    if (r->traits & SWA_TRAIT_BATCH_INVARIANT)
        cJSON_AddItemToArray(declared, cJSON_CreateString("batch_invariant"));
    if (r->num_invariance > 0)
        cJSON_AddItemToObject(o, "invariance", invariance_json(r));
    /* report 1.3: the kernel variant that computed it, null when the
     * device does not say (the host emulation, external backends) */
    add_string_or_null(o, "kernel", r->kernel[0] ? r->kernel : NULL);
    /* report 1.2: what the plan decided (plan_decisions.h), as an object of
     * key -> value ("v1+v2" for a per-request set); absent when no plan
     * was built */
    add_keyed(o, "decisions", r->decisions);
    /* report 1.6: what the GPU kernels launched (launch_choice.h), and the
     * chooser's prediction only where it differs */
    add_keyed(o, "launch", r->launch);
    add_keyed(o, "launch_predicted", r->launch_predicted);
    return o;
}

cJSON *swa_report_environment_json(const swa_environment *env)
{
    cJSON *e = cJSON_CreateObject();
    add_str(e, "harness_version", env->harness_version);
    add_str(e, "git_revision", env->git_revision);
    cJSON *devices = cJSON_AddArrayToObject(e, "devices");
    for (const char *p = env->devices; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        if (n) {
            char line[sizeof env->devices];
            memcpy(line, p, n);
            line[n] = '\0';
            cJSON_AddItemToArray(devices, make_str(line));
        }
        p += n + (nl ? 1 : 0);
    }
    add_str(e, "toolkit", env->toolkit);
    add_str(e, "host", env->host);
    add_str(e, "command_line", env->command_line);
    if (env->launch_target[0]) /* report 1.6 */
        add_str(e, "launch_target", env->launch_target);
    return e;
}

/* a '\n'-separated list as an array of strings */
static cJSON *lines_json(const char *list)
{
    cJSON *a = cJSON_CreateArray();
    for (const char *p = list; a && *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        char line[SWA_ID_MAX + 512];
        snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1), p);
        cJSON_AddItemToArray(a, make_str(line));
        p += n + (nl ? 1 : 0);
    }
    return a;
}

void swa_report_add_selection_json(cJSON *obj, const swa_selection *sel)
{
    if (sel->shard_count <= 0)
        return;
    /* report 1.4: which shard of how many, and what decided the case set:
     * merge refuses shards whose selections differ */
    cJSON *shard = cJSON_AddObjectToObject(obj, "shard");
    cJSON_AddNumberToObject(shard, "index", sel->shard_index);
    cJSON_AddNumberToObject(shard, "count", sel->shard_count);
    cJSON *s = cJSON_AddObjectToObject(obj, "selection");
    cJSON_AddItemToObject(s, "cases", lines_json(sel->paths));
    cJSON_AddStringToObject(s, "case_files_digest", sel->case_files_digest);
    cJSON_AddNumberToObject(s, "cases_selected", sel->cases_selected);
    cJSON_AddStringToObject(s, "case_ids_digest", sel->case_ids_digest);
    cJSON_AddItemToObject(s, "filters", lines_json(sel->filters));
    add_string_or_null(s, "backends", sel->backends);
    cJSON_AddItemToObject(s, "external_backends", lines_json(sel->external));
    add_string_or_null(s, "mutant", sel->mutant);
    add_string_or_null(s, "mutant_only", sel->mutant_only);
    add_str(s, "device", sel->device);
}

cJSON *swa_report_json(const swa_run_results *rr)
{
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return NULL;
    char created[32];
    swa_report_iso8601(rr->started, created, sizeof created);
    cJSON_AddStringToObject(root, "report_version", SWA_REPORT_VERSION);
    cJSON_AddStringToObject(root, "created", created);
    cJSON_AddNumberToObject(root, "created_unix", rr->started);
    cJSON_AddNumberToObject(root, "duration", rr->duration);
    cJSON_AddNumberToObject(root, "exitcode", rr->exitcode);
    cJSON_AddBoolToObject(root, "incomplete", rr->incomplete);
    if (rr->incomplete)
        cJSON_AddStringToObject(root, "incomplete_reason", rr->incomplete_reason);
    if (rr->expected > 0)
        cJSON_AddNumberToObject(root, "expected_results", rr->expected);
    cJSON_AddItemToObject(root, "environment", swa_report_environment_json(&rr->env));
    swa_report_add_selection_json(root, &rr->selection);
    int n[SWA_OUTCOME_COUNT];
    swa_run_results_counts(rr, n);
    cJSON *summary = cJSON_AddObjectToObject(root, "summary");
    cJSON_AddNumberToObject(summary, "total", rr->count); /* the sum of the six below */
    cJSON_AddNumberToObject(summary, "passed", n[SWA_OUTCOME_PASSED]);
    cJSON_AddNumberToObject(summary, "failed", n[SWA_OUTCOME_FAILED]);
    cJSON_AddNumberToObject(summary, "error", n[SWA_OUTCOME_ERROR]);
    cJSON_AddNumberToObject(summary, "skipped", n[SWA_OUTCOME_SKIPPED]);
    cJSON_AddNumberToObject(summary, "xfailed", n[SWA_OUTCOME_XFAILED]);
    cJSON_AddNumberToObject(summary, "xpassed", n[SWA_OUTCOME_XPASSED]);
    /* report 1.5: the marshalling controls of a run with external backends */
    const swa_controls *ctl = &rr->controls;
    if (ctl->state != SWA_CONTROLS_NONE) {
        static const char *const states[] = {"none", "sound", "broken", "not_run"};
        cJSON *co = cJSON_AddObjectToObject(root, "controls");
        cJSON_AddStringToObject(co, "state", states[ctl->state]);
        cJSON_AddStringToObject(co, "summary", ctl->summary);
        cJSON *runs = cJSON_AddArrayToObject(co, "runs");
        for (int i = 0; i < ctl->count; i++) {
            const swa_control_result *it = &ctl->items[i];
            cJSON *x = cJSON_CreateObject();
            cJSON_AddStringToObject(x, "backend", it->backend);
            cJSON_AddStringToObject(x, "case", it->case_id);
            cJSON_AddStringToObject(x, "role", it->positive ? "positive" : "negative");
            cJSON_AddStringToObject(x, "outcome", swa_outcome_name(it->outcome));
            cJSON_AddBoolToObject(x, "as_expected", it->as_expected);
            cJSON_AddStringToObject(x, "message", it->message);
            cJSON_AddItemToArray(runs, x);
        }
    }
    /* cases in the order they ran: diffs between two reports stay readable */
    cJSON *cases = cJSON_AddArrayToObject(root, "cases");
    for (int i = 0; i < rr->count; i++) {
        cJSON *c = swa_report_case_json(&rr->items[i]);
        if (!c) {
            cJSON_Delete(root);
            return NULL;
        }
        cJSON_AddItemToArray(cases, c);
    }
    return root;
}

int swa_report_write_json(const swa_run_results *rr, FILE *f)
{
    cJSON *root = swa_report_json(rr);
    if (!root)
        return -1;
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text)
        return -1;
    int rc = fputs(text, f) < 0 || fputc('\n', f) == EOF ? -1 : 0;
    cJSON_free(text);
    return rc;
}
