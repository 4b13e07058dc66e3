/* report_read.c — reads report.json, or the results.jsonl of a killed run,
 * back into results: for `swadiff merge` and for the recovery of a killed
 * run.  Errors name the file, the place and what was expected.
 * Layout: cases/schema/report.schema.json.
 *
 * Test: tests/test_report_json.c (round trip, merge), tests/test_adversarial_merge.c
 * (forged sizes, the 1 GiB cap, other majors, incomplete shards).
 */
#include "harness/report.h"
#include "harness/invariance.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- reading ------------------------------------------------------------------ */

typedef struct reader {
    const char *where; /* "file: cases[3]" */
    swa_error *err;
    bool failed;
} reader;

static const cJSON *need(reader *rd, const cJSON *obj, const char *key, const char *what)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!it && !rd->failed) {
        swa_error_set(rd->err, SWA_ERR_INVALID, "%s: missing \"%s\" (expected %s)", rd->where, key, what);
        rd->failed = true;
    }
    return it;
}

static void type_error(reader *rd, const char *key, const char *what)
{
    if (!rd->failed)
        swa_error_set(rd->err, SWA_ERR_INVALID, "%s: \"%s\": expected %s", rd->where, key, what);
    rd->failed = true;
}

static double read_real_item(reader *rd, const cJSON *it, const char *key)
{
    if (cJSON_IsNumber(it))
        return it->valuedouble;
    if (cJSON_IsString(it)) {
        if (!strcmp(it->valuestring, "NaN")) return NAN;
        if (!strcmp(it->valuestring, "Infinity")) return INFINITY;
        if (!strcmp(it->valuestring, "-Infinity")) return -INFINITY;
    }
    type_error(rd, key, "a number or \"NaN\", \"Infinity\", \"-Infinity\"");
    return NAN;
}

static double get_real(reader *rd, const cJSON *obj, const char *key)
{
    const cJSON *it = need(rd, obj, key, "a number");
    return it ? read_real_item(rd, it, key) : NAN;
}

/* Integers JSON carries exactly (|v| <= 2^53); a forged 1e300 must not
 * reach a (long long) cast, which would be undefined. */
#define EXACT_INT_MAX 9007199254740992.0

static long long get_int(reader *rd, const cJSON *obj, const char *key)
{
    const cJSON *it = need(rd, obj, key, "an integer");
    if (!it)
        return 0;
    if (!cJSON_IsNumber(it) || it->valuedouble != floor(it->valuedouble) || fabs(it->valuedouble) > EXACT_INT_MAX) {
        type_error(rd, key, "an integer");
        return 0;
    }
    return (long long)it->valuedouble;
}

/* An integer in [lo, hi], for the fields that are stored in an int or size
 * an allocation: out-of-range values are refused, not truncated. */
static int get_int_in(reader *rd, const cJSON *obj, const char *key, long long lo, long long hi)
{
    long long v = get_int(rd, obj, key);
    if (!rd->failed && (v < lo || v > hi)) {
        swa_error_set(rd->err, SWA_ERR_INVALID, "%s: \"%s\": expected an integer in [%lld, %lld], got %lld", rd->where,
                      key, lo, hi, v);
        rd->failed = true;
    }
    return rd->failed ? 0 : (int)v;
}

static bool get_bool(reader *rd, const cJSON *obj, const char *key)
{
    const cJSON *it = need(rd, obj, key, "true or false");
    if (it && !cJSON_IsBool(it))
        type_error(rd, key, "true or false");
    return it && cJSON_IsTrue(it);
}

/* string into buf; null reads as "" when nullable */
static void get_string(reader *rd, const cJSON *obj, const char *key, char *buf, size_t n, bool nullable)
{
    const cJSON *it = need(rd, obj, key, "a string");
    buf[0] = '\0';
    if (!it)
        return;
    if (nullable && cJSON_IsNull(it))
        return;
    if (!cJSON_IsString(it)) {
        type_error(rd, key, nullable ? "a string or null" : "a string");
        return;
    }
    snprintf(buf, n, "%s", it->valuestring);
}

static const cJSON *get_object(reader *rd, const cJSON *obj, const char *key, bool nullable)
{
    const cJSON *it = need(rd, obj, key, "an object");
    if (!it || (nullable && cJSON_IsNull(it)))
        return NULL;
    if (!cJSON_IsObject(it)) {
        type_error(rd, key, nullable ? "an object or null" : "an object");
        return NULL;
    }
    return it;
}

static swa_index get_index(reader *rd, const cJSON *obj, const char *key)
{
    swa_index ix = {-1, -1, -1, -1, -1};
    const cJSON *o = get_object(rd, obj, key, true);
    if (!o)
        return ix;
    ix.request = get_int_in(rd, o, "request", 0, INT_MAX);
    ix.row = get_int_in(rd, o, "row", 0, INT_MAX);
    /* negative for a row before key 0 (qo_len > kv_len: position kv_len - qo_len + i) */
    ix.position = get_int_in(rd, o, "position", -INT_MAX, INT_MAX);
    ix.head = get_int_in(rd, o, "head", 0, INT_MAX);
    ix.dim = cJSON_GetObjectItemCaseSensitive(o, "dim") ? get_int_in(rd, o, "dim", 0, INT_MAX) : -1;
    return ix;
}

static void get_region(reader *rd, const cJSON *o, swa_region_stats *s)
{
    if (!o)
        return;
    s->count = get_int(rd, o, "count");
    s->mismatched = get_int(rd, o, "mismatched");
    s->max_abs_diff = get_real(rd, o, "max_abs_diff");
}

/* The shape is checked against what the writer can produce before the
 * matrix is allocated: a forged "rows": 1e9, "heads": 1e9 is refused here,
 * not turned into a 4 EB allocation (or a truncated int). */
static void read_matrix(reader *rd, const cJSON *m, swa_compare_result *c)
{
    int rows = get_int_in(rd, m, "rows", 0, SWA_REPORT_MAX_MATRIX_ROWS);
    int heads = get_int_in(rd, m, "heads", 0, SWA_REPORT_MAX_HEADS);
    int bin = get_int_in(rd, m, "row_bin", 1, INT_MAX);
    const cJSON *values = need(rd, m, "values", "an array of rows");
    const cJSON *req = need(rd, m, "row_request", "an array of integers");
    const cJSON *edge = need(rd, m, "row_past_edge", "an array of integers");
    if (rd->failed)
        return;
    if (rows < 0 || heads < 0 || bin < 1 || !cJSON_IsArray(values) || cJSON_GetArraySize(values) != rows ||
        !cJSON_IsArray(req) || cJSON_GetArraySize(req) != rows || !cJSON_IsArray(edge) ||
        cJSON_GetArraySize(edge) != rows) {
        type_error(rd, "row_head_ratio", "rows x heads values with one row_request and row_past_edge per row");
        return;
    }
    if (swa_compare_result_alloc_matrix(c, rows, heads) != 0) {
        swa_error_set(rd->err, SWA_ERR_NOMEM, "%s: no memory for a %d x %d matrix", rd->where, rows, heads);
        rd->failed = true;
        return;
    }
    c->row_bin = bin;
    int i = 0;
    for (const cJSON *row = values->child; row; row = row->next, i++) {
        if (!cJSON_IsArray(row) || cJSON_GetArraySize(row) != heads) {
            type_error(rd, "row_head_ratio", "each row of values to hold one number per head");
            return;
        }
        int h = 0;
        for (const cJSON *v = row->child; v; v = v->next, h++) {
            /* a double past FLT_MAX has no float: converting it is undefined */
            double x = read_real_item(rd, v, "row_head_ratio");
            c->row_head_ratio[(size_t)i * heads + h] = fabs(x) > FLT_MAX ? (float)copysign(INFINITY, x) : (float)x;
        }
        c->row_request[i] = cJSON_IsNumber(cJSON_GetArrayItem(req, i)) ? cJSON_GetArrayItem(req, i)->valueint : 0;
        c->row_past_edge[i] = cJSON_IsNumber(cJSON_GetArrayItem(edge, i)) ? cJSON_GetArrayItem(edge, i)->valueint : 0;
    }
}

static int dtype_from_name(const char *s)
{
    return !strcmp(s, "fp16") ? SWA_DTYPE_FP16 : !strcmp(s, "bf16") ? SWA_DTYPE_BF16 : !strcmp(s, "fp32") ? SWA_DTYPE_FP32 : -1;
}

static int outcome_from_name(const char *s)
{
    for (int o = SWA_OUTCOME_PASSED; o < SWA_OUTCOME_COUNT; o++)
        if (!strcmp(s, swa_outcome_name((swa_outcome)o)))
            return o;
    return -1;
}

/* "kernel" (report 1.3, optional: older reports have none): the device's
 * kernel variant, a string, or null when the device did not say. */
static void read_kernel(reader *rd, const cJSON *obj, swa_result *r)
{
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(obj, "kernel");
    r->kernel[0] = '\0';
    if (!k || cJSON_IsNull(k))
        return;
    if (!cJSON_IsString(k)) {
        type_error(rd, "kernel", "a string or null");
        return;
    }
    snprintf(r->kernel, sizeof r->kernel, "%s", k->valuestring);
}

/* "repeat" and "nondeterministic" (report 1.4, optional: older reports
 * ran each pair once): the runs of the pair on the same inputs, and how
 * runs 2..N differed from run 1 (null when they did not). */
static void read_repeat(reader *rd, const cJSON *obj, swa_result *r)
{
    r->repeat = 1;
    memset(&r->nondet, 0, sizeof r->nondet);
    if (cJSON_GetObjectItemCaseSensitive(obj, "repeat"))
        r->repeat = get_int_in(rd, obj, "repeat", 1, 1000000);
    r->untrustworthy = cJSON_GetObjectItemCaseSensitive(obj, "untrustworthy") && get_bool(rd, obj, "untrustworthy");
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(obj, "nondeterministic");
    if (!n || cJSON_IsNull(n))
        return;
    if (!cJSON_IsObject(n)) {
        type_error(rd, "nondeterministic", "an object or null");
        return;
    }
    swa_nondet *nd = &r->nondet;
    nd->runs_differing = get_int_in(rd, n, "runs_differing", 1, 1000000);
    nd->first_run = get_int_in(rd, n, "first_run", 2, 1000000);
    nd->first_index = get_index(rd, n, "first_index");
    nd->worst_run = get_int_in(rd, n, "worst_run", 2, 1000000);
    nd->elements = get_int(rd, n, "elements");
    nd->total = get_int(rd, n, "total");
    nd->nonfinite = get_int(rd, n, "nonfinite");
    nd->lse_entries = get_int(rd, n, "lse_entries");
    nd->lse_total = get_int(rd, n, "lse_total");
    nd->guard_bytes = get_int(rd, n, "guard_bytes");
    const cJSON *abs = get_object(rd, n, "max_abs_diff", false);
    if (abs) {
        nd->max_abs_diff = get_real(rd, abs, "value");
        nd->max_abs_index = get_index(rd, abs, "index");
        nd->max_abs_run = get_int_in(rd, abs, "run", 0, 1000000);
    }
    if (!rd->failed && (nd->runs_differing >= r->repeat || nd->first_run > r->repeat || nd->worst_run > r->repeat))
        type_error(rd, "nondeterministic", "runs within \"repeat\" (runs_differing < repeat, runs 2..repeat)");
}

/* "declared" and "invariance" (report 1.7, optional: older reports have
 * neither): the backend's declared traits, and the invariance records. */
static void read_invariance(reader *rd, const cJSON *obj, swa_result *r)
{
    r->traits = 0;
    r->num_invariance = 0;
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(obj, "declared");
    if (d && !cJSON_IsArray(d)) {
        type_error(rd, "declared", "an array of \"deterministic\" and \"batch_invariant\"");
        return;
    }
    for (const cJSON *e = d ? d->child : NULL; e; e = e->next) {
        if (cJSON_IsString(e) && !strcmp(e->valuestring, "deterministic"))
            r->traits |= SWA_TRAIT_DETERMINISTIC;
        else if (cJSON_IsString(e) && !strcmp(e->valuestring, "batch_invariant"))
            r->traits |= SWA_TRAIT_BATCH_INVARIANT;
        else {
            type_error(rd, "declared", "an array of \"deterministic\" and \"batch_invariant\"");
            return;
        }
    }
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(obj, "invariance");
    if (!list)
        return;
    if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) > SWA_INV_RECORDS) {
        type_error(rd, "invariance", "an array of at most 6 invariance records");
        return;
    }
    for (const cJSON *o = list->child; o && !rd->failed; o = o->next) {
        if (!cJSON_IsObject(o)) {
            type_error(rd, "invariance", "an array of objects");
            return;
        }
        swa_inv_record *v = &r->invariance[r->num_invariance++];
        memset(v, 0, sizeof *v);
        get_string(rd, o, "name", v->name, sizeof v->name, false);
        get_string(rd, o, "detail", v->detail, sizeof v->detail, false);
        get_string(rd, o, "message", v->message, sizeof v->message, false);
        char state[16] = "";
        get_string(rd, o, "state", state, sizeof state, false);
        int st = -1;
        for (int i = 0; swa_inv_state_names[i]; i++)
            if (!strcmp(state, swa_inv_state_names[i]))
                st = i;
        if (st < 0 && !rd->failed) {
            type_error(rd, "state", "\"same\", \"differs\", \"skipped\" or \"error\"");
            return;
        }
        v->state = (swa_inv_state)st;
        v->bitwise = get_bool(rd, o, "bitwise");
        v->runs = get_int_in(rd, o, "runs", 0, INT_MAX);
        v->elements = get_int(rd, o, "elements");
        v->total = get_int(rd, o, "total");
        v->nonfinite = get_int(rd, o, "nonfinite");
        v->lse_entries = get_int(rd, o, "lse_entries");
        v->lse_total = get_int(rd, o, "lse_total");
        v->max_abs_diff = get_real(rd, o, "max_abs_diff");
        v->max_tol_ratio = get_real(rd, o, "max_tol_ratio");
        v->first_index = get_index(rd, o, "first_index");
        v->worst_index = get_index(rd, o, "worst_index");
        const cJSON *g = cJSON_GetObjectItemCaseSensitive(o, "grid");
        if (!g)
            continue;
        v->grid_rows = get_int_in(rd, g, "rows", 1, SWA_INV_GRID_ROWS);
        v->grid_heads = get_int_in(rd, g, "heads", 1, SWA_INV_GRID_HEADS);
        const cJSON *cells = cJSON_GetObjectItemCaseSensitive(g, "cells");
        if (rd->failed)
            return;
        if (!cJSON_IsArray(cells) || cJSON_GetArraySize(cells) != v->grid_rows * v->grid_heads) {
            type_error(rd, "cells", "rows x heads numbers");
            return;
        }
        int i = 0;
        for (const cJSON *x = cells->child; x; x = x->next, i++) {
            double val = read_real_item(rd, x, "cells");
            v->grid[(i / v->grid_heads) * SWA_INV_GRID_HEADS + i % v->grid_heads] =
                fabs(val) > FLT_MAX ? (float)copysign(FLT_MAX, val) : (float)val;
        }
    }
}

/* "xfail" (optional: older reports have none): null, or the known
 * failure's {"reason", "outcome"}; present exactly when the outcome is
 * xfailed or xpassed. */
static void read_xfail(reader *rd, const cJSON *obj, swa_result *r)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(obj, "xfail");
    r->xfail[0] = '\0';
    r->xfail_was = SWA_OUTCOME_PASSED;
    bool known = r->outcome == SWA_OUTCOME_XFAILED || r->outcome == SWA_OUTCOME_XPASSED;
    if (!x || cJSON_IsNull(x)) {
        if (known)
            type_error(rd, "xfail", "an object {\"reason\", \"outcome\"} for an xfailed or xpassed result");
        return;
    }
    if (!cJSON_IsObject(x) || !known) {
        type_error(rd, "xfail", known ? "an object {\"reason\", \"outcome\"} or null"
                                      : "null (the outcome is not xfailed or xpassed)");
        return;
    }
    get_string(rd, x, "reason", r->xfail, sizeof r->xfail, false);
    char was[16] = "";
    get_string(rd, x, "outcome", was, sizeof was, false);
    int o = outcome_from_name(was);
    bool fits = r->outcome == SWA_OUTCOME_XPASSED ? o == SWA_OUTCOME_PASSED
                                                  : o == SWA_OUTCOME_FAILED || o == SWA_OUTCOME_ERROR;
    if (!rd->failed && !fits)
        type_error(rd, "xfail", r->outcome == SWA_OUTCOME_XPASSED ? "\"outcome\": \"passed\" for an xpassed result"
                                                                  : "\"outcome\": \"failed\" or \"error\" for an "
                                                                    "xfailed result");
    r->xfail_was = fits ? (swa_outcome)o : SWA_OUTCOME_FAILED;
}

/* "decisions" (report 1.2, optional: older reports have none): an object
 * of decision names to value strings, kept as "key=value;..." so merge
 * writes back exactly what it read, decisions of newer swadiffs included. */
static bool decision_word(const char *s, bool value)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_' ||
              (value && strchr("+-.", *s))))
            return false;
    return true;
}

/* An object of names to value strings as "key=value;..." in out (the
 * decisions, and the launch records of report 1.6 whose keys carry their
 * executor: "prefill.kernel"); absent leaves out empty. */
static void read_keyed(reader *rd, const cJSON *obj, const char *field, char *out, size_t size)
{
    const cJSON *dec = cJSON_GetObjectItemCaseSensitive(obj, field);
    out[0] = '\0';
    if (!dec || rd->failed)
        return;
    if (!cJSON_IsObject(dec)) {
        type_error(rd, field, "an object of names to value strings");
        return;
    }
    bool dotted = strcmp(field, "decisions") != 0;
    size_t len = 0;
    for (const cJSON *d = dec->child; d; d = d->next) {
        if (!cJSON_IsString(d) || !d->string || !decision_word(d->string, dotted) ||
            !decision_word(d->valuestring, true)) {
            type_error(rd, field,
                       dotted ? "an object of names ([A-Za-z0-9_.+-]) to values ([A-Za-z0-9_+.-])"
                              : "an object of decision names ([A-Za-z0-9_]) to values ([A-Za-z0-9_+.-])");
            return;
        }
        int n = snprintf(out + len, size - len, "%s%s=%s", len ? ";" : "", d->string, d->valuestring);
        if (n < 0 || (size_t)n >= size - len) {
            char what[64];
            snprintf(what, sizeof what, "at most %zu bytes of %s", size - 1, field);
            type_error(rd, field, what);
            return;
        }
        len += (size_t)n;
    }
}

swa_status swa_report_case_from_json(const cJSON *obj, const char *where, swa_result *r, swa_error *err)
{
    reader rd = {where, err, false};
    memset(r, 0, sizeof *r);
    if (!cJSON_IsObject(obj))
        return swa_error_set(err, SWA_ERR_INVALID, "%s: expected a case object", where);
    char buf[64];
    get_string(&rd, obj, "id", r->id, sizeof r->id, false);
    get_string(&rd, obj, "file", r->file, sizeof r->file, false);
    get_string(&rd, obj, "backend", r->backend, sizeof r->backend, false);
    get_string(&rd, obj, "device", r->device, sizeof r->device, false);
    get_string(&rd, obj, "dtype", buf, sizeof buf, false);
    if (!rd.failed && dtype_from_name(buf) < 0)
        type_error(&rd, "dtype", "\"fp16\", \"bf16\" or \"fp32\"");
    r->dtype = (swa_dtype)(dtype_from_name(buf) < 0 ? 0 : dtype_from_name(buf));
    get_string(&rd, obj, "mutant", r->mutant, sizeof r->mutant, true);
    get_string(&rd, obj, "outcome", buf, sizeof buf, false);
    if (!rd.failed && outcome_from_name(buf) < 0)
        type_error(&rd, "outcome", "\"passed\", \"failed\", \"error\", \"skipped\", \"xfailed\" or \"xpassed\"");
    r->outcome = (swa_outcome)(outcome_from_name(buf) < 0 ? 0 : outcome_from_name(buf));
    r->duration = get_real(&rd, obj, "duration");
    const cJSON *shape = get_object(&rd, obj, "shape", false);
    if (shape) {
        r->num_requests = get_int_in(&rd, shape, "num_requests", 0, INT_MAX);
        r->total_qo = get_int_in(&rd, shape, "total_qo", 0, INT_MAX);
        r->num_qo_heads = get_int_in(&rd, shape, "num_qo_heads", 0, INT_MAX);
        r->num_kv_heads = get_int_in(&rd, shape, "num_kv_heads", 0, INT_MAX);
        r->head_dim = get_int_in(&rd, shape, "head_dim", 0, INT_MAX);
        r->window_left = get_int_in(&rd, shape, "window_left", -1, INT_MAX);
        /* causal, window_right, attention_chunk_size: optional (reports before
         * they existed were causal or left-bound only) */
        const cJSON *cz = cJSON_GetObjectItemCaseSensitive(shape, "causal");
        r->causal = cz ? cJSON_IsTrue(cz) : true;
        r->window_right = cJSON_GetObjectItemCaseSensitive(shape, "window_right")
                              ? get_int_in(&rd, shape, "window_right", -1, INT_MAX) : (r->causal ? 0 : -1);
        r->chunk_size = cJSON_GetObjectItemCaseSensitive(shape, "attention_chunk_size")
                            ? get_int_in(&rd, shape, "attention_chunk_size", 0, INT_MAX) : 0;
    }
    const cJSON *tol = get_object(&rd, obj, "tolerance", false);
    if (tol) {
        get_string(&rd, tol, "mode", buf, sizeof buf, false);
        r->tol.mode = !strcmp(buf, "abs_rel") ? SWA_TOL_ABS_REL : !strcmp(buf, "baseline") ? SWA_TOL_BASELINE : SWA_TOL_DEFAULT;
        if (!rd.failed && strcmp(buf, "abs_rel") && strcmp(buf, "baseline") && strcmp(buf, "default"))
            type_error(&rd, "mode", "\"default\", \"abs_rel\" or \"baseline\"");
        r->tol.atol = get_real(&rd, tol, "atol");
        r->tol.rtol = get_real(&rd, tol, "rtol");
        const cJSON *f = need(&rd, tol, "factor", "a number or null");
        r->tol.factor = f && !cJSON_IsNull(f) ? read_real_item(&rd, f, "factor") : 0;
        r->tol.lse_atol = get_real(&rd, tol, "lse_atol");
        r->tol.equal_nan = get_bool(&rd, tol, "equal_nan");
    }
    const cJSON *m = get_object(&rd, obj, "mismatch", true);
    swa_compare_result *c = &r->cmp;
    if (m) {
        r->has_compare = true;
        c->tol_mode = r->tol.mode;
        c->atol = r->tol.atol;
        c->rtol = r->tol.rtol;
        c->factor = r->tol.factor;
        c->mismatched = get_int(&rd, m, "count");
        c->total = get_int(&rd, m, "total");
        c->ratio = get_real(&rd, m, "ratio");
        const cJSON *abs = get_object(&rd, m, "max_abs_diff", false);
        if (abs) {
            c->max_abs_diff = get_real(&rd, abs, "value");
            c->max_abs_index = get_index(&rd, abs, "index");
            c->max_abs_allowed = get_real(&rd, abs, "allowed");
        }
        const cJSON *rel = get_object(&rd, m, "max_rel_diff", false);
        if (rel) {
            c->max_rel_diff = get_real(&rd, rel, "value");
            c->max_rel_index = get_index(&rd, rel, "index");
            c->max_rel_allowed = get_real(&rd, rel, "allowed");
        }
        const cJSON *nan = get_object(&rd, m, "nan", false), *inf = get_object(&rd, m, "inf", false);
        if (nan) {
            c->nan_actual = get_int(&rd, nan, "actual");
            c->nan_expected = get_int(&rd, nan, "expected");
        }
        if (inf) {
            c->inf_actual = get_int(&rd, inf, "actual");
            c->inf_expected = get_int(&rd, inf, "expected");
        }
        c->unwritten = get_int(&rd, m, "unwritten");
        const cJSON *guard = get_object(&rd, m, "guard", false);
        if (guard) {
            c->guard_violation = get_bool(&rd, guard, "violation");
            get_string(&rd, guard, "message", c->guard_message, sizeof c->guard_message, true);
        }
        const cJSON *regions = get_object(&rd, m, "regions", false);
        if (regions) {
            get_region(&rd, get_object(&rd, regions, "window_binds", false), &c->window_binds);
            get_region(&rd, get_object(&rd, regions, "window_free", false), &c->window_free);
            const cJSON *edge = need(&rd, regions, "past_edge", "an array");
            if (edge && (!cJSON_IsArray(edge) || cJSON_GetArraySize(edge) != SWA_DIST_BUCKETS))
                type_error(&rd, "past_edge", "an array of 6 buckets (1, 2, 3-4, 5-8, 9-16, >16)");
            else if (edge)
                for (int b = 0; b < SWA_DIST_BUCKETS; b++)
                    get_region(&rd, cJSON_GetArrayItem(edge, b), &c->past_edge[b]);
        }
        const cJSON *worst = need(&rd, m, "worst", "an array");
        if (worst && !cJSON_IsArray(worst))
            type_error(&rd, "worst", "an array");
        for (const cJSON *w = worst ? worst->child : NULL; w && c->worst_count < SWA_WORST_K; w = w->next) {
            swa_elem *e = &c->worst[c->worst_count++];
            e->index = get_index(&rd, w, "index");
            e->actual = get_real(&rd, w, "actual");
            e->expected = get_real(&rd, w, "expected");
            e->abs_diff = get_real(&rd, w, "abs_diff");
            e->allowed = get_real(&rd, w, "allowed");
        }
        const cJSON *matrix = get_object(&rd, m, "row_head_ratio", true);
        c->row_bin = 1;
        if (matrix && !rd.failed)
            read_matrix(&rd, matrix, c);
        /* the matrix covers the case's query rows, binned: the HTML draws
         * its axis from total_qo, and a forged 2147483647 wrote gigabytes */
        long long lo = (long long)(c->rows - 1) * c->row_bin + 1, hi = (long long)c->rows * c->row_bin;
        if (matrix && !rd.failed && r->total_qo > 0 && c->rows > 0 && (r->total_qo < lo || r->total_qo > hi)) {
            swa_error_set(rd.err, SWA_ERR_INVALID, "%s: \"shape\": \"total_qo\": expected %lld to %lld (the query "
                          "rows its row_head_ratio covers: %d rows of %d), got %d", rd.where, lo, hi, c->rows,
                          c->row_bin, r->total_qo);
            rd.failed = true;
        }
        const cJSON *lse = get_object(&rd, obj, "lse", true);
        if (lse) {
            c->lse_compared = true;
            c->lse_mismatched = get_int(&rd, lse, "count");
            c->lse_total = get_int(&rd, lse, "total");
            c->lse_unwritten = get_int(&rd, lse, "unwritten");
            c->lse_nonfinite = get_int(&rd, lse, "nonfinite");
            const cJSON *labs = get_object(&rd, lse, "max_abs_diff", false);
            if (labs) {
                c->lse_max_abs_diff = get_real(&rd, labs, "value");
                c->lse_max_index = get_index(&rd, labs, "index");
                c->lse_max_abs_allowed = get_real(&rd, labs, "allowed");
            }
            c->lse_base = get_real(&rd, lse, "base");
        }
    }
    get_string(&rd, obj, "message", r->message, sizeof r->message, false);
    get_string(&rd, obj, "diagnosis", r->diagnosis, sizeof r->diagnosis, true);
    const cJSON *warnings = need(&rd, obj, "warnings", "an array of strings");
    if (warnings && !cJSON_IsArray(warnings))
        type_error(&rd, "warnings", "an array of strings");
    size_t len = 0;
    for (const cJSON *w = warnings ? warnings->child : NULL; w; w = w->next) {
        if (!cJSON_IsString(w)) {
            type_error(&rd, "warnings", "an array of strings");
            break;
        }
        int n = snprintf(r->warnings + len, sizeof r->warnings - len, "%s%s", len ? "\n" : "", w->valuestring);
        if (n < 0 || (size_t)n >= sizeof r->warnings - len)
            break;
        len += (size_t)n;
    }
    get_string(&rd, obj, "reproduce", r->reproduce, sizeof r->reproduce, false);
    read_kernel(&rd, obj, r);
    read_keyed(&rd, obj, "decisions", r->decisions, sizeof r->decisions);
    read_keyed(&rd, obj, "launch", r->launch, sizeof r->launch);
    read_keyed(&rd, obj, "launch_predicted", r->launch_predicted, sizeof r->launch_predicted);
    read_repeat(&rd, obj, r);
    read_invariance(&rd, obj, r);
    read_xfail(&rd, obj, r);
    if (rd.failed) {
        swa_compare_result_free(c);
        return err ? err->status : SWA_ERR_INVALID;
    }
    return SWA_OK;
}

/* An array of strings into a '\n'-separated list of at most n bytes. */
static void get_lines(reader *rd, const cJSON *obj, const char *key, char *buf, size_t n)
{
    const cJSON *a = need(rd, obj, key, "an array of strings");
    buf[0] = '\0';
    if (!a)
        return;
    if (!cJSON_IsArray(a)) {
        type_error(rd, key, "an array of strings");
        return;
    }
    size_t len = 0;
    for (const cJSON *e = a->child; e; e = e->next) {
        if (!cJSON_IsString(e) || strchr(e->valuestring, '\n')) {
            type_error(rd, key, "an array of strings without line breaks");
            return;
        }
        int w = snprintf(buf + len, n - len, "%s%s", len ? "\n" : "", e->valuestring);
        if (w < 0 || (size_t)w >= n - len) {
            type_error(rd, key, "an array of strings of at most 511 bytes together");
            return;
        }
        len += (size_t)w;
    }
}

/* A digest as the writer makes it: 16 lower-case hex digits. */
static void get_digest(reader *rd, const cJSON *obj, const char *key, char *buf, size_t n)
{
    get_string(rd, obj, key, buf, n, false);
    if (!rd->failed && (strlen(buf) != 16 || strspn(buf, "0123456789abcdef") != 16))
        type_error(rd, key, "16 lower-case hex digits (an FNV-1a 64 digest)");
}

/* "shard" and "selection" (report 1.4, optional: older reports have none,
 * and read back as shard 0 of 0, "not recorded").  When present they are
 * checked as strictly as the rest: merge decides on them. */
static void read_selection(reader *rd, const cJSON *root, swa_selection *sel)
{
    memset(sel, 0, sizeof *sel);
    const cJSON *shard = cJSON_GetObjectItemCaseSensitive(root, "shard");
    const cJSON *selection = cJSON_GetObjectItemCaseSensitive(root, "selection");
    if (!shard && !selection)
        return;
    shard = get_object(rd, root, "shard", false);
    selection = get_object(rd, root, "selection", false);
    if (!shard || !selection)
        return;
    /* messages name the object: "report.json: selection: \"device\": ..." */
    char where[SWA_PATH_MAX + 32];
    const char *outer = rd->where;
    snprintf(where, sizeof where, "%s: shard", outer);
    rd->where = where;
    int count = get_int_in(rd, shard, "count", 1, 1000000);
    int index = get_int_in(rd, shard, "index", 1, 1000000);
    if (!rd->failed && index > count) {
        swa_error_set(rd->err, SWA_ERR_INVALID, "%s: \"index\": expected an integer in [1, %d] (the count), got %d",
                      rd->where, count, index);
        rd->failed = true;
    }
    snprintf(where, sizeof where, "%s: selection", outer);
    get_lines(rd, selection, "cases", sel->paths, sizeof sel->paths);
    get_digest(rd, selection, "case_files_digest", sel->case_files_digest, sizeof sel->case_files_digest);
    sel->cases_selected = get_int_in(rd, selection, "cases_selected", 0, INT_MAX);
    get_digest(rd, selection, "case_ids_digest", sel->case_ids_digest, sizeof sel->case_ids_digest);
    get_lines(rd, selection, "filters", sel->filters, sizeof sel->filters);
    get_string(rd, selection, "backends", sel->backends, sizeof sel->backends, true);
    get_lines(rd, selection, "external_backends", sel->external, sizeof sel->external);
    get_string(rd, selection, "mutant", sel->mutant, sizeof sel->mutant, true);
    get_string(rd, selection, "mutant_only", sel->mutant_only, sizeof sel->mutant_only, true);
    get_string(rd, selection, "device", sel->device, sizeof sel->device, false);
    rd->where = outer;
    if (rd->failed) {
        memset(sel, 0, sizeof *sel);
        return;
    }
    sel->shard_index = index;
    sel->shard_count = count;
}

static swa_status read_environment(const cJSON *root, const char *where, swa_run_results *rr, swa_error *err)
{
    reader rd = {where, err, false};
    const cJSON *env = get_object(&rd, root, "environment", false);
    if (!env)
        return err->status;
    swa_environment *e = &rr->env;
    get_string(&rd, env, "harness_version", e->harness_version, sizeof e->harness_version, false);
    get_string(&rd, env, "git_revision", e->git_revision, sizeof e->git_revision, false);
    get_string(&rd, env, "toolkit", e->toolkit, sizeof e->toolkit, false);
    get_string(&rd, env, "host", e->host, sizeof e->host, false);
    get_string(&rd, env, "command_line", e->command_line, sizeof e->command_line, false);
    if (cJSON_GetObjectItemCaseSensitive(env, "launch_target")) /* report 1.6, optional */
        get_string(&rd, env, "launch_target", e->launch_target, sizeof e->launch_target, false);
    const cJSON *devices = need(&rd, env, "devices", "an array of strings");
    size_t len = 0;
    for (const cJSON *d = devices && cJSON_IsArray(devices) ? devices->child : NULL; d; d = d->next)
        if (cJSON_IsString(d) && len < sizeof e->devices) {
            int n = snprintf(e->devices + len, sizeof e->devices - len, "%s%s", len ? "\n" : "", d->valuestring);
            len += n > 0 ? (size_t)n : 0;
        }
    const cJSON *created = cJSON_GetObjectItemCaseSensitive(root, "created_unix");
    if (cJSON_IsNumber(created)) { /* seconds since 1970, up to the year 9999 */
        if (!(created->valuedouble >= 0 && created->valuedouble <= 253402300799.0))
            type_error(&rd, "created_unix", "seconds since 1970 (0 to 253402300799, the end of year 9999)");
        else
            rr->started = created->valuedouble;
    }
    /* a report written while its run went on, or left by a killed run, says
     * so: reading it back must not make it complete (merge would print a
     * green report for a broken shard) */
    const cJSON *incomplete = cJSON_GetObjectItemCaseSensitive(root, "incomplete");
    if (incomplete && !cJSON_IsBool(incomplete))
        type_error(&rd, "incomplete", "true or false");
    rr->incomplete = cJSON_IsTrue(incomplete);
    const cJSON *reason = cJSON_GetObjectItemCaseSensitive(root, "incomplete_reason");
    if (rr->incomplete)
        snprintf(rr->incomplete_reason, sizeof rr->incomplete_reason, "%s",
                 cJSON_IsString(reason) && reason->valuestring[0] ? reason->valuestring : "the report says so");
    if (cJSON_GetObjectItemCaseSensitive(root, "expected_results"))
        rr->expected = get_int_in(&rd, root, "expected_results", 0, INT_MAX);
    read_selection(&rd, root, &rr->selection);
    return rd.failed ? err->status : SWA_OK;
}

static void line_column(const char *text, const char *at, int *line, int *column)
{
    *line = 1;
    *column = 1;
    for (const char *p = text; p < at && *p; p++) {
        if (*p == '\n') {
            (*line)++;
            *column = 1;
        } else {
            (*column)++;
        }
    }
}

/* The major of report_version must be ours (a new major breaks readers;
 * a new minor only adds), so two shards of different majors never merge. */
static bool version_supported(const cJSON *root, char *got, size_t n)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "report_version");
    if (cJSON_IsString(v))
        snprintf(got, n, "\"%.20s\"", v->valuestring);
    else
        snprintf(got, n, "%s", v ? "a value that is not a string" : "none");
    size_t major = strcspn(SWA_REPORT_VERSION, ".") + 1;
    return cJSON_IsString(v) && !strncmp(v->valuestring, SWA_REPORT_VERSION, major);
}

static swa_status add_cases(const cJSON *cases, const char *path, swa_run_results *rr, swa_error *err)
{
    int n = cJSON_GetArraySize(cases);
    if (n > SWA_REPORT_MAX_RESULTS - rr->count)
        return swa_error_set(err, SWA_ERR_INVALID, "%s: \"cases\": expected at most %d results, got %d", path,
                             SWA_REPORT_MAX_RESULTS, n + rr->count);
    int i = 0;
    for (const cJSON *c = cases->child; c; c = c->next, i++) {
        char where[SWA_PATH_MAX + 32];
        snprintf(where, sizeof where, "%s: cases[%d]", path, i);
        swa_result r;
        swa_status st = swa_report_case_from_json(c, where, &r, err);
        if (st != SWA_OK)
            return st;
        if (swa_run_results_add(rr, &r) != 0) {
            swa_compare_result_free(&r.cmp);
            return swa_error_set(err, SWA_ERR_NOMEM, "%s: no memory", where);
        }
    }
    return SWA_OK;
}

swa_status swa_report_read(const char *path, swa_run_results *rr, swa_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return swa_error_set(err, SWA_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    /* refuse before reading: a report past the cap is not one swadiff wrote
     * (or not one this machine should parse into a tree several times its
     * size); the loop below also stops there for files that grow */
    struct stat sb;
    if (fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode) && (unsigned long long)sb.st_size > SWA_REPORT_MAX_FILE_BYTES) {
        fclose(f);
        return swa_error_set(err, SWA_ERR_INVALID, "%s: expected a report of at most %zu bytes (1 GiB), got %lld bytes",
                             path, SWA_REPORT_MAX_FILE_BYTES, (long long)sb.st_size);
    }
    size_t cap = 1 << 16, len = 0;
    char *text = malloc(cap);
    size_t n;
    while (text && (n = fread(text + len, 1, cap - len - 1, f)) > 0) {
        len += n;
        if (len > SWA_REPORT_MAX_FILE_BYTES) {
            free(text);
            fclose(f);
            return swa_error_set(err, SWA_ERR_INVALID, "%s: expected a report of at most %zu bytes (1 GiB), got more",
                                 path, SWA_REPORT_MAX_FILE_BYTES);
        }
        if (cap - len - 1 == 0) {
            char *t = realloc(text, cap * 2);
            if (!t) {
                free(text);
                text = NULL;
                break;
            }
            text = t;
            cap *= 2;
        }
    }
    fclose(f);
    if (!text)
        return swa_error_set(err, SWA_ERR_NOMEM, "%s: no memory to read the file", path);
    text[len] = '\0';

    const bool empty_rr = rr->count == 0 && !rr->env.harness_version[0];
    const char *end = NULL;
    cJSON *first = cJSON_ParseWithLengthOpts(text, len, &end, false);
    swa_status st = SWA_OK;
    int line, column;
    if (!first) {
        line_column(text, cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() : text, &line, &column);
        st = swa_error_set(err, SWA_ERR_INVALID, "%s:%d:%d: not valid JSON (expected a report.json or results.jsonl)",
                           path, line, column);
        goto done;
    }
    char version[48];
    if (!version_supported(first, version, sizeof version)) {
        st = swa_error_set(err, SWA_ERR_INVALID, "%s: \"report_version\": expected \"%.*sx\" (the layout this swadiff "
                           "reads, %s), got %s: reports of another major version cannot be read or merged with these",
                           path, (int)(strcspn(SWA_REPORT_VERSION, ".") + 1), SWA_REPORT_VERSION, SWA_REPORT_VERSION,
                           version);
        cJSON_Delete(first);
        goto done;
    }
    if (empty_rr) {
        st = read_environment(first, path, rr, err);
        if (st != SWA_OK) {
            cJSON_Delete(first);
            goto done;
        }
    }
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(first, "cases");
    const cJSON *xcode = cJSON_GetObjectItemCaseSensitive(first, "exitcode");
    if (cases && xcode) { /* only the codes swadiff exits with (docs/spec.md) */
        double v = cJSON_IsNumber(xcode) ? xcode->valuedouble : -1;
        if (!(v == 0 || v == 1 || v == 2 || v == 3 || v == 5 || v == 77)) {
            st = swa_error_set(err, SWA_ERR_INVALID, "%s: \"exitcode\": expected one of 0, 1, 2, 3, 5, 77 (the codes "
                               "swadiff exits with), got %s", path, cJSON_IsNumber(xcode) ? "" : "a non-number");
            if (cJSON_IsNumber(xcode))
                snprintf(err->message + strlen(err->message), sizeof err->message - strlen(err->message), "%g", v);
            cJSON_Delete(first);
            goto done;
        }
    }
    if (cases) { /* report.json */
        if (!cJSON_IsArray(cases)) {
            st = swa_error_set(err, SWA_ERR_INVALID, "%s: \"cases\": expected an array", path);
        } else {
            st = add_cases(cases, path, rr, err);
            if (st == SWA_OK && empty_rr) {
                const cJSON *d = cJSON_GetObjectItemCaseSensitive(first, "duration");
                const cJSON *x = cJSON_GetObjectItemCaseSensitive(first, "exitcode");
                rr->duration = cJSON_IsNumber(d) ? d->valuedouble : 0;
                rr->exitcode = cJSON_IsNumber(x) ? x->valueint : 0;
            }
        }
        cJSON_Delete(first);
        goto done;
    }
    cJSON_Delete(first);
    /* results.jsonl: one case object per line after the header; the last
     * line of a killed run may be cut short, and is left out */
    for (const char *p = end; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        bool blank = true;
        for (size_t i = 0; i < n; i++)
            if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
                blank = false;
        if (!blank) {
            cJSON *obj = cJSON_ParseWithLength(p, n);
            line_column(text, p, &line, &column);
            if (!obj) {
                if (!nl) {
                    fprintf(stderr, "%s:%d: last line is incomplete (run killed while writing?): left out\n", path, line);
                    break;
                }
                st = swa_error_set(err, SWA_ERR_INVALID, "%s:%d: not a valid JSON line", path, line);
                goto done;
            }
            char where[SWA_PATH_MAX + 32];
            snprintf(where, sizeof where, "%s:%d", path, line);
            if (rr->count >= SWA_REPORT_MAX_RESULTS) {
                cJSON_Delete(obj);
                st = swa_error_set(err, SWA_ERR_INVALID, "%s: expected at most %d results", where, SWA_REPORT_MAX_RESULTS);
                goto done;
            }
            swa_result r;
            st = swa_report_case_from_json(obj, where, &r, err);
            cJSON_Delete(obj);
            if (st != SWA_OK)
                goto done;
            if (swa_run_results_add(rr, &r) != 0) {
                swa_compare_result_free(&r.cmp);
                st = swa_error_set(err, SWA_ERR_NOMEM, "%s: no memory", where);
                goto done;
            }
        }
        p += n + (nl ? 1 : 0);
    }
    if (empty_rr) {
        /* results.jsonl has no end marker: whether its run finished cannot
         * be told from it, so it never reads as a complete (green) run */
        rr->incomplete = true;
        snprintf(rr->incomplete_reason, sizeof rr->incomplete_reason,
                 "read from results.jsonl, which does not say whether its run finished (%d results)", rr->count);
        /* a killed run never wrote its duration: the results' own time is
         * the best lower bound there is */
        rr->duration = 0;
        for (int i = 0; i < rr->count; i++)
            if (isfinite(rr->items[i].duration) && rr->items[i].duration > 0)
                rr->duration += rr->items[i].duration;
        rr->exitcode = swa_run_results_summary(rr, NULL, NULL, NULL, NULL);
    }
done:
    free(text);
    return st;
}
