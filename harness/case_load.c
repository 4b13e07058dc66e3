/* case_load.c — strict reading of case files: every key of a case object
 * checked and turned into sweep axes (expansion: harness/case_expand.c;
 * docs/cases.md; the format is documented field by field in
 * cases/schema/case.schema.json and summarised here).
 *
 * Test: tests/test_case_load.c (malformed files with exact locations),
 * tests/test_case_sweep.c (expansion, ids, filters).
 *
 * A file holds one case object, or {"description", "defaults", "cases": [...]}
 * where each case inherits the keys of "defaults" it does not set itself.
 * Every scalar key of a case (and qo_len / kv_len / count of a request) may be
 * a list: the case expands to the cartesian product of its lists.  Axes are
 * taken in the order their keys appear in the file (a case's own keys first,
 * then the keys it inherits from "defaults"; a request's keys where
 * "requests" appears, request by request); the last axis varies fastest.
 *
 * Ids: "<file stem>/<name>" plus ":axis=value,axis=value" for every key given
 * as a list (request axes are named r<i>.<key>, i the index in "requests").
 * Ids use only [A-Za-z0-9._-/:=,+] so they are shell-safe and contain no glob
 * character: `--filter <id>` selects exactly that case.
 *
 * Errors read "file:line:column: /json/pointer: what was expected"; the
 * position is the offending value (the key, for unknown or duplicate keys;
 * the object's '{', for a missing key).  Nothing is defaulted silently: a key
 * that is absent gets the default documented in the schema. */
#include "harness/case_internal.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const DTYPE_NAMES[] = {"fp16", "bf16", "fp32", NULL};
static const char *const LAYOUT_NAMES[] = {"NHD", "HND", NULL};
static const char *const KV_MODE_NAMES[] = {"paged", "ragged", NULL};
static const int HEAD_DIMS[] = {64, 96, 128, 256};

const key_spec swa_case_keys[F_COUNT] = {
    [F_NAME] = {"name", K_SPECIAL, true, 0, 0, NULL, 0, NULL, false,
                "a string of letters, digits, '.', '_', '-' naming the case"},
    [F_DESCRIPTION] = {"description", K_SPECIAL, false, 0, 0, NULL, 0, NULL, false, NULL},
    [F_REQUESTS] = {"requests", K_SPECIAL, true, 0, 0, NULL, 0, NULL, false,
                    "a list of {\"qo_len\", \"kv_len\", \"count\"} objects"},
    [F_NUM_QO_HEADS] = {"num_qo_heads", K_INT, true, 1, MAX_HEADS, NULL, 0, NULL, false,
                        "an integer in [1, 1024]"},
    [F_NUM_KV_HEADS] = {"num_kv_heads", K_INT, true, 1, MAX_HEADS, NULL, 0, NULL, false,
                        "an integer in [1, 1024] dividing num_qo_heads"},
    [F_HEAD_DIM] = {"head_dim", K_INT, true, 0, 0, HEAD_DIMS, 4, NULL, false, "64, 96, 128 or 256"},
    [F_DTYPE] = {"dtype", K_ENUM, true, 0, 0, NULL, 0, DTYPE_NAMES, false, "\"fp16\", \"bf16\" or \"fp32\""},
    [F_PAGE_SIZE] = {"page_size", K_INT, false, 1, MAX_PAGE_SIZE, NULL, 0, NULL, false, NULL},
    [F_LAYOUT] = {"layout", K_ENUM, false, 0, 0, NULL, 0, LAYOUT_NAMES, false, NULL},
    [F_KV_MODE] = {"kv_mode", K_ENUM, false, 0, 0, NULL, 0, KV_MODE_NAMES, false, NULL},
    [F_CAUSAL] = {"causal", K_BOOL, false, 0, 0, NULL, 0, NULL, false, NULL},
    [F_WINDOW_LEFT] = {"window_left", K_INT, true, -1, MAX_WINDOW_LEFT, NULL, 0, NULL, false,
                       "an integer in [-1, 1073741824]: keys [p-L, p] are visible, -1 for no window"},
    [F_WINDOW_RIGHT] = {"window_right", K_INT, false, -1, MAX_WINDOW_RIGHT, NULL, 0, NULL, false,
                        "an integer in [-1, 1073741824]: keys k <= p+R are visible, -1 for no right bound"},
    [F_ATTENTION_CHUNK_SIZE] = {"attention_chunk_size", K_INT, false, 1, MAX_CHUNK_SIZE, NULL, 0, NULL, false,
                                "an integer in [1, 16777216]: chunked local attention, keys "
                                "[floor(p/C)*C, p] are visible"},
    [F_SOFT_CAP] = {"soft_cap", K_NUM, false, 0, 0, NULL, 0, NULL, false, NULL, SOFT_CAP_MIN, SOFT_CAP_MAX, true},
    [F_SM_SCALE] = {"sm_scale", K_NUM, false, 0, 0, NULL, 0, NULL, true, NULL, SM_SCALE_MIN, SM_SCALE_MAX, false},
    [F_BACKENDS] = {"backends", K_SPECIAL, true, 0, 0, NULL, 0, NULL, false,
                    "a list of backend names (see `swadiff list backends`)"},
    [F_TOLERANCE] = {"tolerance", K_SPECIAL, false, 0, 0, NULL, 0, NULL, false, NULL},
    [F_DATA] = {"data", K_ENUM, false, 0, 0, NULL, 0, swa_dist_names, false, NULL},
    [F_SEED] = {"seed", K_U64, false, 0, 0, NULL, 0, NULL, false, NULL},
    [F_CUDA_GRAPH] = {"cuda_graph", K_BOOL, false, 0, 0, NULL, 0, NULL, false, NULL},
    [F_GRAPH_CAPTURE_REQUESTS] = {"graph_capture_requests", K_INT, false, 1, MAX_REQUESTS - 1, NULL, 0,
                                  NULL, false, NULL},
    [F_RETURN_LSE] = {"return_lse", K_BOOL, false, 0, 0, NULL, 0, NULL, false, NULL},
    [F_EXPECT_ERROR] = {"expect_error", K_SPECIAL, false, 0, 0, NULL, 0, NULL, false, NULL},
    [F_EXPECT_SKIP] = {"expect_skip", K_SPECIAL, false, 0, 0, NULL, 0, NULL, false, NULL},
    [F_LAYERS] = {"layers", K_SPECIAL, false, 0, 0, NULL, 0, NULL, false, NULL},
    [F_XFAIL] = {"xfail", K_SPECIAL, false, 0, 0, NULL, 0, NULL, false, NULL},
    [F_DETERMINISTIC] = {"deterministic", K_BOOL, false, 0, 0, NULL, 0, NULL, false, NULL},
    [F_INVARIANCE] = {"invariance", K_SPECIAL, false, 0, 0, NULL, 0, NULL, false, NULL},
};

static const key_spec REQUEST_KEYS[R_FIELDS] = {
    [R_QO_LEN] = {"qo_len", K_INT, true, 1, MAX_TOKENS, NULL, 0, NULL, false,
                  "an integer >= 1: query rows of the request (1 for decode)"},
    [R_KV_LEN] = {"kv_len", K_INT, true, 1, MAX_TOKENS, NULL, 0, NULL, false,
                  "an integer >= qo_len: keys of the request, the new tokens included"},
    [R_COUNT] = {"count", K_INT, false, 1, MAX_COUNT, NULL, 0, NULL, false, NULL},
};

static const char *const TOLERANCE_KEYS[] = {"mode", "atol", "rtol", "factor", "lse_atol", "equal_nan", NULL};

/* ---------------------------------------------------------------------------
 * Small helpers for messages. */

/* "got ..." text for a value: raw number token, quoted string, or its kind. */
void swa_case_describe_value(const swa_json_doc *doc, const cJSON *v, char *buf, size_t n)
{
    if (cJSON_IsNumber(v)) {
        size_t off = swa_json_value_offset(doc, v), end = off;
        while (end < doc->length && strchr("0123456789+-.eE", doc->text[end]))
            end++;
        snprintf(buf, n, "%.*s", (int)(end - off > 40 ? 40 : end - off), doc->text + off);
    } else if (cJSON_IsString(v)) {
        snprintf(buf, n, "\"%.40s\"%s", v->valuestring, strlen(v->valuestring) > 40 ? "..." : "");
    } else if (cJSON_IsArray(v)) {
        snprintf(buf, n, "a list");
    } else if (cJSON_IsObject(v)) {
        snprintf(buf, n, "an object");
    } else if (cJSON_IsTrue(v)) {
        snprintf(buf, n, "true");
    } else if (cJSON_IsFalse(v)) {
        snprintf(buf, n, "false");
    } else {
        snprintf(buf, n, "null");
    }
}

static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 40 || lb > 40)
        return 99;
    size_t row[41];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (row[j] + 1 < best)
                best = row[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* "unknown key" message: a close match as a suggestion, else the list. */
int swa_case_fail_unknown_key(const swa_json_doc *doc, swa_load_error *err, const cJSON *member,
                            const char *path, const char *const *allowed, const char *extra)
{
    const char *best = NULL;
    size_t best_d = 3;
    char list[400] = "";
    size_t used = 0;
    for (int i = 0; allowed[i]; i++) {
        size_t d = edit_distance(member->string, allowed[i]);
        if (d < best_d) {
            best_d = d;
            best = allowed[i];
        }
        used += (size_t)snprintf(list + used, used < sizeof list ? sizeof list - used : 0, "%s%s",
                                 i ? ", " : "", allowed[i]);
        if (used >= sizeof list)
            used = sizeof list - 1;
    }
    size_t off = swa_json_key_offset(doc, member);
    if (best)
        return swa_json_fail(doc, err, off, path, "unknown key \"%s\"%s; did you mean \"%s\"?",
                             member->string, extra ? extra : "", best);
    return swa_json_fail(doc, err, off, path, "unknown key \"%s\"%s; expected one of: %s",
                         member->string, extra ? extra : "", list);
}

static void range_text(const key_spec *spec, char *buf, size_t n)
{
    if (spec->choices) {
        size_t used = (size_t)snprintf(buf, n, "one of ");
        for (int i = 0; i < spec->num_choices && used < n; i++)
            used += (size_t)snprintf(buf + used, n - used, "%s%d", i ? ", " : "", spec->choices[i]);
    } else if (spec->max >= INT_MAX) {
        snprintf(buf, n, "an integer >= %lld", spec->min);
    } else {
        snprintf(buf, n, "an integer in [%lld, %lld]", spec->min, spec->max);
    }
}

void swa_case_state_free(case_state *cs)
{
    for (int i = 0; i < cs->num_axes; i++)
        free(cs->axes[i].values);
    free(cs->axes);
    free(cs->request_axis);
}

static axis *add_axis(case_state *cs)
{
    if (cs->num_axes == cs->cap_axes) {
        int cap = cs->cap_axes ? cs->cap_axes * 2 : 16;
        axis *a = realloc(cs->axes, (size_t)cap * sizeof *a);
        if (!a)
            return NULL;
        cs->axes = a;
        cs->cap_axes = cap;
    }
    axis *a = &cs->axes[cs->num_axes++];
    memset(a, 0, sizeof *a);
    return a;
}

static bool number_token_is_integer(const swa_json_doc *doc, const cJSON *v)
{
    size_t off = swa_json_value_offset(doc, v);
    for (size_t i = off; i < doc->length; i++) {
        char ch = doc->text[i];
        if (ch == '.' || ch == 'e' || ch == 'E')
            return false;
        if (!(ch == '-' || (ch >= '0' && ch <= '9')))
            break;
    }
    return true;
}

/* Reads one scalar per spec.  Returns 0 or -1 (err filled). */
static int read_scalar(case_state *cs, const key_spec *spec, const cJSON *v, const char *path,
                       value *out)
{
    const swa_json_doc *doc = cs->doc;
    size_t off = swa_json_value_offset(doc, v);
    char got[64], want[96];
    swa_case_describe_value(doc, v, got, sizeof got);
    out->node = v;
    switch (spec->kind) {
    case K_INT: {
        range_text(spec, want, sizeof want);
        if (!cJSON_IsNumber(v) || !number_token_is_integer(doc, v))
            return swa_json_fail(doc, cs->err, off, path, "expected %s, got %s", want, got);
        errno = 0;
        long long x = strtoll(doc->text + off, NULL, 10);
        bool ok = errno == 0;
        if (ok && spec->choices) {
            ok = false;
            for (int i = 0; i < spec->num_choices; i++)
                ok = ok || x == spec->choices[i];
        } else if (ok) {
            ok = x >= spec->min && x <= spec->max;
        }
        if (!ok)
            return swa_json_fail(doc, cs->err, off, path, "expected %s, got %s", want, got);
        out->i = x;
        return 0;
    }
    case K_U64: {
        const char *want_u = "an unsigned integer in [0, 18446744073709551615]";
        if (!cJSON_IsNumber(v) || !number_token_is_integer(doc, v) || doc->text[off] == '-')
            return swa_json_fail(doc, cs->err, off, path, "expected %s, got %s", want_u, got);
        errno = 0;
        unsigned long long x = strtoull(doc->text + off, NULL, 10);
        if (errno)
            return swa_json_fail(doc, cs->err, off, path, "expected %s, got %s", want_u, got);
        out->u = x;
        return 0;
    }
    case K_NUM: {
        if (spec->num_max > 0)
            snprintf(want, sizeof want, "%sa number in [%g, %g]", spec->zero_ok ? "0 or " : "", spec->num_min,
                     spec->num_max);
        else
            snprintf(want, sizeof want, "a number %s 0", spec->exclusive_min ? ">" : ">=");
        if (!cJSON_IsNumber(v))
            return swa_json_fail(doc, cs->err, off, path, "expected %s, got %s", want, got);
        double x = v->valuedouble;
        bool ok;
        if (spec->num_max > 0) /* NaN fails both comparisons; 1e999 parses as inf */
            ok = (spec->zero_ok && x == 0) || (x >= spec->num_min && x <= spec->num_max);
        else
            ok = isfinite(x) && (spec->exclusive_min ? x > 0 : x >= 0);
        if (!ok)
            return swa_json_fail(doc, cs->err, off, path, "expected %s, got %s", want, got);
        out->d = x;
        return 0;
    }
    case K_BOOL:
        if (!cJSON_IsBool(v))
            return swa_json_fail(doc, cs->err, off, path, "expected true or false, got %s", got);
        out->i = cJSON_IsTrue(v);
        return 0;
    case K_ENUM: {
        size_t used = 0;
        want[0] = '\0';
        for (int i = 0; spec->names[i]; i++)
            used += (size_t)snprintf(want + used, sizeof want - used, "%s\"%s\"", i ? ", " : "", spec->names[i]);
        if (cJSON_IsString(v))
            for (int i = 0; spec->names[i]; i++)
                if (strcmp(v->valuestring, spec->names[i]) == 0) {
                    out->i = i;
                    return 0;
                }
        return swa_json_fail(doc, cs->err, off, path, "expected one of %s, got %s", want, got);
    }
    case K_SPECIAL:
        break;
    }
    return swa_json_fail(doc, cs->err, off, path, "internal error: key \"%s\" has no scalar reader", spec->key);
}

static bool values_equal(const key_spec *spec, const value *a, const value *b)
{
    if (spec->kind == K_U64)
        return a->u == b->u;
    if (spec->kind == K_NUM)
        return a->d == b->d;
    return a->i == b->i;
}

static const key_spec *sort_spec; /* qsort has no context argument in C11 */
static const value *sort_values;

static int compare_value_order(const void *pa, const void *pb)
{
    int a = *(const int *)pa, b = *(const int *)pb;
    const value *x = &sort_values[a], *y = &sort_values[b];
    int c;
    if (sort_spec->kind == K_U64)
        c = (x->u > y->u) - (x->u < y->u);
    else if (sort_spec->kind == K_NUM)
        c = (x->d > y->d) - (x->d < y->d);
    else
        c = (x->i > y->i) - (x->i < y->i);
    return c ? c : (a > b) - (a < b);
}

/* A sweep lists each value once (two equal values would make two cases
 * with one id).  Sorting keeps long sweeps (thousands of seeds) cheap; the
 * error points at the earliest repeat in file order. */
static int check_distinct(case_state *cs, const axis *a)
{
    if (a->count < 2)
        return 0;
    int *order = malloc((size_t)a->count * sizeof *order);
    if (!order)
        return swa_json_fail(cs->doc, cs->err, swa_json_value_offset(cs->doc, a->values[0].node), a->path,
                             "out of memory");
    for (int i = 0; i < a->count; i++)
        order[i] = i;
    sort_spec = a->spec;
    sort_values = a->values;
    qsort(order, (size_t)a->count, sizeof *order, compare_value_order);
    int repeat = -1, first = -1;
    for (int i = 1; i < a->count; i++) {
        if (!values_equal(a->spec, &a->values[order[i - 1]], &a->values[order[i]]))
            continue;
        if (repeat < 0 || order[i] < repeat) {
            repeat = order[i];
            int j = i - 1;
            while (j > 0 && values_equal(a->spec, &a->values[order[j - 1]], &a->values[order[i]]))
                j--;
            first = order[j];
        }
    }
    free(order);
    if (repeat < 0)
        return 0;
    int line, column;
    char element_path[PATH_N];
    swa_json_line_col(cs->doc, swa_json_value_offset(cs->doc, a->values[first].node), &line, &column);
    swa_json_path_index(element_path, sizeof element_path, a->path, repeat);
    return swa_json_fail(cs->doc, cs->err, swa_json_value_offset(cs->doc, a->values[repeat].node), element_path,
                         "duplicate value in the sweep (first at line %d, column %d); expected distinct values",
                         line, column);
}

/* A scalar or a list of scalars becomes one axis. */
static int read_axis(case_state *cs, const key_spec *spec, const cJSON *v, const char *path,
                     const char *axis_name, int field, int request, int *axis_index)
{
    axis *a = add_axis(cs);
    if (!a)
        return swa_json_fail(cs->doc, cs->err, swa_json_value_offset(cs->doc, v), path, "out of memory");
    *axis_index = cs->num_axes - 1;
    snprintf(a->name, sizeof a->name, "%s", axis_name);
    a->spec = spec;
    a->field = field;
    a->request = request;
    a->swept = cJSON_IsArray(v);
    snprintf(a->path, sizeof a->path, "%s", path);
    a->count = a->swept ? cJSON_GetArraySize(v) : 1;
    if (a->count == 0)
        return swa_json_fail(cs->doc, cs->err, swa_json_value_offset(cs->doc, v), path,
                             "expected a value or a non-empty list of values to sweep, got an empty list");
    a->values = calloc((size_t)a->count, sizeof *a->values);
    if (!a->values)
        return swa_json_fail(cs->doc, cs->err, swa_json_value_offset(cs->doc, v), path, "out of memory");
    if (!a->swept)
        return read_scalar(cs, spec, v, path, &a->values[0]);
    char element_path[PATH_N];
    int index = 0;
    for (const cJSON *e = v->child; e; e = e->next, index++) {
        swa_json_path_index(element_path, sizeof element_path, path, index);
        if (read_scalar(cs, spec, e, element_path, &a->values[index]))
            return -1;
    }
    return check_distinct(cs, a);
}

/* ---------------------------------------------------------------------------
 * The keys that are not plain scalars. */

static int read_name(case_state *cs, const cJSON *v, const char *path)
{
    size_t off = swa_json_value_offset(cs->doc, v);
    char got[64];
    swa_case_describe_value(cs->doc, v, got, sizeof got);
    if (!cJSON_IsString(v))
        return swa_json_fail(cs->doc, cs->err, off, path, "expected a string naming the case, got %s", got);
    const char *s = v->valuestring;
    size_t n = strlen(s);
    bool ok = n >= 1 && n <= NAME_LEN_MAX;
    for (size_t i = 0; ok && i < n; i++)
        ok = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
             s[i] == '_' || s[i] == '-' || s[i] == '.';
    if (!ok)
        return swa_json_fail(cs->doc, cs->err, off, path,
                             "expected a name of 1 to %d letters, digits, '.', '_' or '-' (it becomes "
                             "part of a shell-safe case id), got %s", NAME_LEN_MAX, got);
    cs->name = s;
    cs->name_node = v;
    return 0;
}

static int read_requests(case_state *cs, const cJSON *v, const char *path)
{
    const swa_json_doc *doc = cs->doc;
    size_t off = swa_json_value_offset(doc, v);
    char got[64];
    swa_case_describe_value(doc, v, got, sizeof got);
    if (!cJSON_IsArray(v))
        return swa_json_fail(doc, cs->err, off, path,
                             "expected a list of {\"qo_len\", \"kv_len\", \"count\"} objects, got %s", got);
    int n = cJSON_GetArraySize(v);
    if (n == 0)
        return swa_json_fail(doc, cs->err, off, path, "expected at least one request, got an empty list");
    cs->num_request_entries = n;
    cs->request_axis = malloc((size_t)n * R_FIELDS * sizeof *cs->request_axis);
    if (!cs->request_axis)
        return swa_json_fail(doc, cs->err, off, path, "out of memory");
    int index = 0;
    for (const cJSON *r = v->child; r; r = r->next, index++) {
        char rpath[PATH_N], kpath[PATH_N];
        swa_json_path_index(rpath, sizeof rpath, path, index);
        int *ax = &cs->request_axis[index * R_FIELDS];
        for (int f = 0; f < R_FIELDS; f++)
            ax[f] = -1;
        if (!cJSON_IsObject(r)) {
            swa_case_describe_value(doc, r, got, sizeof got);
            return swa_json_fail(doc, cs->err, swa_json_value_offset(doc, r), rpath,
                                 "expected a request object {\"qo_len\", \"kv_len\", \"count\"}, got %s", got);
        }
        for (const cJSON *m = r->child; m; m = m->next) {
            int f = 0;
            while (f < R_FIELDS && strcmp(REQUEST_KEYS[f].key, m->string) != 0)
                f++;
            swa_json_path_key(kpath, sizeof kpath, rpath, m->string);
            if (f == R_FIELDS) {
                static const char *const names[] = {"qo_len", "kv_len", "count", NULL};
                return swa_case_fail_unknown_key(doc, cs->err, m, kpath, names, " in a request");
            }
            char axis_name[48];
            snprintf(axis_name, sizeof axis_name, "r%d.%s", index, m->string);
            if (read_axis(cs, &REQUEST_KEYS[f], m, kpath, axis_name, f, index, &ax[f]))
                return -1;
        }
        for (int f = 0; f < R_FIELDS; f++)
            if (REQUEST_KEYS[f].required && ax[f] < 0)
                return swa_json_fail(doc, cs->err, swa_json_value_offset(doc, r), rpath,
                                     "missing required key \"%s\" (%s)", REQUEST_KEYS[f].key, REQUEST_KEYS[f].hint);
    }
    return 0;
}

static int read_backends(case_state *cs, const cJSON *v, const char *path)
{
    const swa_json_doc *doc = cs->doc;
    char got[64], epath[PATH_N];
    swa_case_describe_value(doc, v, got, sizeof got);
    char want[256];
    swa_backend_names_text(want, sizeof want);
    if (!cJSON_IsArray(v))
        return swa_json_fail(doc, cs->err, swa_json_value_offset(doc, v), path,
                             "expected a list of backends (%s), got %s", want, got);
    if (!v->child)
        return swa_json_fail(doc, cs->err, swa_json_value_offset(doc, v), path,
                             "expected at least one backend (%s), got an empty list", want);
    int index = 0;
    cs->backends = 0;
    for (const cJSON *e = v->child; e; e = e->next, index++) {
        swa_json_path_index(epath, sizeof epath, path, index);
        swa_case_describe_value(doc, e, got, sizeof got);
        int b = -1;
        if (cJSON_IsString(e))
            for (int i = 0; swa_backend_names[i]; i++)
                if (strcmp(e->valuestring, swa_backend_names[i]) == 0)
                    b = i;
        if (b < 0)
            return swa_json_fail(doc, cs->err, swa_json_value_offset(doc, e), epath,
                                 "expected a backend name (%s), got %s", want, got);
        if (cs->backends & (1u << b))
            return swa_json_fail(doc, cs->err, swa_json_value_offset(doc, e), epath,
                                 "expected each backend once, got %s twice", got);
        cs->backends |= 1u << b;
    }
    return 0;
}

/* "invariance": ["batch", "pages", "split"]: the self-comparisons of the
 * case (docs/invariance.md); each name once, an empty list asks for none. */
static int read_invariance(case_state *cs, const cJSON *v, const char *path)
{
    const swa_json_doc *doc = cs->doc;
    char got[64], epath[PATH_N], want[96];
    swa_case_describe_value(doc, v, got, sizeof got);
    swa_invariance_names_text(want, sizeof want);
    if (!cJSON_IsArray(v))
        return swa_json_fail(doc, cs->err, swa_json_value_offset(doc, v), path,
                             "expected a list of invariance names (%s), got %s", want, got);
    int index = 0;
    cs->invariance = 0;
    for (const cJSON *e = v->child; e; e = e->next, index++) {
        swa_json_path_index(epath, sizeof epath, path, index);
        swa_case_describe_value(doc, e, got, sizeof got);
        unsigned f = cJSON_IsString(e) ? swa_invariance_flag_by_name(e->valuestring) : 0;
        if (!f)
            return swa_json_fail(doc, cs->err, swa_json_value_offset(doc, e), epath,
                                 "expected an invariance name (%s), got %s", want, got);
        if (cs->invariance & f)
            return swa_json_fail(doc, cs->err, swa_json_value_offset(doc, e), epath,
                                 "expected each invariance once, got %s twice", got);
        cs->invariance |= f;
    }
    return 0;
}

static int read_tolerance_number(case_state *cs, const cJSON *v, const char *path, bool positive, double *out)
{
    char got[64];
    swa_case_describe_value(cs->doc, v, got, sizeof got);
    bool ok = cJSON_IsNumber(v) && isfinite(v->valuedouble) &&
              (positive ? v->valuedouble > 0 : v->valuedouble >= 0);
    if (!ok)
        return swa_json_fail(cs->doc, cs->err, swa_json_value_offset(cs->doc, v), path,
                             "expected a number %s 0%s, got %s", positive ? ">" : ">=",
                             cJSON_IsArray(v) ? " (tolerances cannot be swept)" : "", got);
    *out = v->valuedouble;
    return 0;
}

static int read_tolerance(case_state *cs, const cJSON *v, const char *path)
{
    const swa_json_doc *doc = cs->doc;
    char got[64], mpath[PATH_N];
    swa_case_describe_value(doc, v, got, sizeof got);
    swa_tolerance *t = &cs->tol;
    memset(t, 0, sizeof *t);
    t->mode = SWA_TOL_DEFAULT;
    t->lse_atol = -1; /* not given: the harness fills the per-dtype default */
    if (!cJSON_IsObject(v))
        return swa_json_fail(doc, cs->err, swa_json_value_offset(doc, v), path,
                             "expected an object {\"atol\", \"rtol\"} or {\"mode\": \"baseline\", \"factor\"}, got %s", got);
    const cJSON *mode = NULL, *atol = NULL, *rtol = NULL, *factor = NULL;
    for (const cJSON *m = v->child; m; m = m->next) {
        swa_json_path_key(mpath, sizeof mpath, path, m->string);
        if (strcmp(m->string, "mode") == 0) {
            mode = m;
            swa_case_describe_value(doc, m, got, sizeof got);
            if (!cJSON_IsString(m) || (strcmp(m->valuestring, "abs_rel") && strcmp(m->valuestring, "baseline")))
                return swa_json_fail(doc, cs->err, swa_json_value_offset(doc, m), mpath,
                                     "expected \"abs_rel\" or \"baseline\", got %s", got);
        } else if (strcmp(m->string, "atol") == 0) {
            atol = m;
            if (read_tolerance_number(cs, m, mpath, false, &t->atol))
                return -1;
        } else if (strcmp(m->string, "rtol") == 0) {
            rtol = m;
            if (read_tolerance_number(cs, m, mpath, false, &t->rtol))
                return -1;
        } else if (strcmp(m->string, "factor") == 0) {
            factor = m;
            if (read_tolerance_number(cs, m, mpath, true, &t->factor))
                return -1;
        } else if (strcmp(m->string, "lse_atol") == 0) {
            if (read_tolerance_number(cs, m, mpath, false, &t->lse_atol))
                return -1;
        } else if (strcmp(m->string, "equal_nan") == 0) {
            swa_case_describe_value(doc, m, got, sizeof got);
            if (!cJSON_IsBool(m))
                return swa_json_fail(doc, cs->err, swa_json_value_offset(doc, m), mpath,
                                     "expected true or false, got %s", got);
            t->equal_nan = cJSON_IsTrue(m);
        } else {
            return swa_case_fail_unknown_key(doc, cs->err, m, mpath, TOLERANCE_KEYS, " in tolerance");
        }
    }
    bool baseline = mode && strcmp(mode->valuestring, "baseline") == 0;
    size_t obj_off = swa_json_value_offset(doc, v);
    if (baseline) {
        const cJSON *extra = atol ? atol : rtol;
        if (extra) {
            swa_json_path_key(mpath, sizeof mpath, path, extra->string);
            return swa_json_fail(doc, cs->err, swa_json_key_offset(doc, extra), mpath,
                                 "expected no \"%s\" with mode \"baseline\" (the bound is factor times "
                                 "the low-precision reference's error)", extra->string);
        }
        if (!factor)
            return swa_json_fail(doc, cs->err, obj_off, path,
                                 "missing required key \"factor\" (mode \"baseline\": a number > 0)");
        t->mode = SWA_TOL_BASELINE;
        return 0;
    }
    if (factor) {
        swa_json_path_key(mpath, sizeof mpath, path, "factor");
        return swa_json_fail(doc, cs->err, swa_json_key_offset(doc, factor), mpath,
                             "expected \"factor\" only with \"mode\": \"baseline\"");
    }
    if (mode || atol || rtol) {
        if (!atol || !rtol)
            return swa_json_fail(doc, cs->err, obj_off, path, "missing required key \"%s\" (a number >= 0; "
                                 "atol and rtol go together)", atol ? "rtol" : "atol");
        t->mode = SWA_TOL_ABS_REL;
    }
    return 0;
}

/* Free text matched against a backend's plan error; not a sweep (it would
 * put arbitrary text into the id). */
static int read_expect_error(case_state *cs, const cJSON *v, const char *path)
{
    char got[64];
    swa_case_describe_value(cs->doc, v, got, sizeof got);
    if (!cJSON_IsString(v) || !v->valuestring[0] || strlen(v->valuestring) >= SWA_NAME_MAX)
        return swa_json_fail(cs->doc, cs->err, swa_json_value_offset(cs->doc, v), path,
                             "expected a non-empty string of at most %d characters that the plan error must "
                             "contain, got %s%s", SWA_NAME_MAX - 1, got,
                             cJSON_IsArray(v) ? " (expect_error cannot be swept)" : "");
    cs->expect_error = v->valuestring;
    return 0;
}

/* "expect_skip": {"BACKEND": "text the skip reason contains", ...}: the
 * backends the case expects to skip it (a skip of a backend the case names
 * is otherwise a failure).  Not a sweep: it applies to every expanded case,
 * so a sweep where only some values skip is split into two cases.  The
 * shape is checked here; that each backend is one the case runs is checked
 * once the whole case (and its defaults) is read: check_expect_skip. */
static int read_expect_skip(case_state *cs, const cJSON *v, const char *path)
{
    char got[64], kpath[PATH_N], want[256];
    swa_case_describe_value(cs->doc, v, got, sizeof got);
    swa_backend_names_text(want, sizeof want);
    if (!cJSON_IsObject(v) || !v->child)
        return swa_json_fail(cs->doc, cs->err, swa_json_value_offset(cs->doc, v), path,
                             "expected an object of backend names to the text their skip reason contains, e.g. "
                             "{\"decode_aiter\": \"head_dim 96\"}, got %s%s", got,
                             cJSON_IsObject(v) ? " with no backend" : cJSON_IsArray(v) ? " (expect_skip cannot be swept)" : "");
    for (const cJSON *m = v->child; m; m = m->next) {
        swa_json_path_key(kpath, sizeof kpath, path, m->string);
        if (!swa_backend_flag_by_name(m->string)) {
            char name[64];
            snprintf(name, sizeof name, "\"%.40s\"%s", m->string, strlen(m->string) > 40 ? "..." : "");
            return swa_json_fail(cs->doc, cs->err, swa_json_key_offset(cs->doc, m), kpath,
                                 "expected a backend name (%s), got %s", want, name);
        }
        for (const cJSON *o = v->child; o != m; o = o->next)
            if (!strcmp(o->string, m->string))
                return swa_json_fail(cs->doc, cs->err, swa_json_key_offset(cs->doc, m), kpath,
                                     "expected each backend once, got \"%s\" again", m->string);
        swa_case_describe_value(cs->doc, m, got, sizeof got);
        if (!cJSON_IsString(m) || !m->valuestring[0] || strlen(m->valuestring) >= SWA_EXPECT_SKIP_MAX)
            return swa_json_fail(cs->doc, cs->err, swa_json_value_offset(cs->doc, m), kpath,
                                 "expected a non-empty string of at most %d characters that %s's skip reason "
                                 "must contain, got %s", SWA_EXPECT_SKIP_MAX - 1, m->string, got);
    }
    cs->expect_skip = v;
    snprintf(cs->expect_skip_path, sizeof cs->expect_skip_path, "%s", path);
    return 0;
}

/* Every backend of "expect_skip" must be one the case runs: an expected
 * skip of a backend that never runs the case could never be checked. */
static int check_expect_skip(case_state *cs)
{
    if (!cs->expect_skip)
        return 0;
    char kpath[PATH_N], names[256] = "";
    size_t k = 0;
    for (int b = 0; b < SWA_BACKEND_COUNT; b++)
        if (cs->backends & (1u << b))
            k += (size_t)snprintf(names + k, k < sizeof names ? sizeof names - k : 0, "%s\"%s\"", k ? ", " : "",
                                  swa_backend_names[b]);
    for (const cJSON *m = cs->expect_skip->child; m; m = m->next)
        if (!(cs->backends & swa_backend_flag_by_name(m->string))) {
            swa_json_path_key(kpath, sizeof kpath, cs->expect_skip_path, m->string);
            bool inherited = strncmp(cs->expect_skip_path, "/defaults", 9) == 0;
            return swa_json_fail(cs->doc, cs->err, swa_json_key_offset(cs->doc, m), kpath,
                                 "expected a backend this case runs (%s%s%s\"backends\": %s), got \"%s\": an "
                                 "expected skip of a backend that never runs the case cannot be checked",
                                 inherited ? "case \"" : "its ", inherited && cs->name ? cs->name : "",
                                 inherited ? "\" inherits it and has " : "", names, m->string);
        }
    return 0;
}

/* "xfail": "reason", or {"reason": "...", "backends": [...]}: a known
 * failure (docs/selection.md).  Backends are built-in names the case runs
 * (checked in check_xfail, once backends are known) or NS:BACKEND globs of
 * plug-ins and adapters.  Not a sweep. */
static int read_xfail(case_state *cs, const cJSON *v, const char *path)
{
    char got[64], kpath[PATH_N];
    swa_case_describe_value(cs->doc, v, got, sizeof got);
    const cJSON *reason = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, "reason") : v;
    if (!cJSON_IsString(v) && !cJSON_IsObject(v))
        return swa_json_fail(cs->doc, cs->err, swa_json_value_offset(cs->doc, v), path,
                             "expected the reason the case is known to fail (a string), or {\"reason\": \"...\", "
                             "\"backends\": [...]}, got %s%s", got, cJSON_IsArray(v) ? " (xfail cannot be swept)" : "");
    for (const cJSON *m = cJSON_IsObject(v) ? v->child : NULL; m; m = m->next)
        if (strcmp(m->string, "reason") && strcmp(m->string, "backends")) {
            swa_json_path_key(kpath, sizeof kpath, path, m->string);
            return swa_json_fail(cs->doc, cs->err, swa_json_key_offset(cs->doc, m), kpath,
                                 "unknown key \"%.40s\" in xfail; expected one of: reason, backends", m->string);
        }
    if (cJSON_IsObject(v))
        snprintf(kpath, sizeof kpath, "%s/reason", path);
    else
        snprintf(kpath, sizeof kpath, "%s", path);
    if (!reason)
        return swa_json_fail(cs->doc, cs->err, swa_json_value_offset(cs->doc, v), path,
                             "expected a \"reason\" in xfail: why the case is known to fail");
    swa_case_describe_value(cs->doc, reason, got, sizeof got);
    if (!cJSON_IsString(reason) || !reason->valuestring[0] || strlen(reason->valuestring) >= SWA_XFAIL_REASON_MAX)
        return swa_json_fail(cs->doc, cs->err, swa_json_value_offset(cs->doc, reason), kpath,
                             "expected a non-empty reason of at most %d characters, got %s", SWA_XFAIL_REASON_MAX - 1,
                             got);
    const cJSON *bl = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, "backends") : NULL;
    if (bl) {
        snprintf(kpath, sizeof kpath, "%s/backends", path);
        swa_case_describe_value(cs->doc, bl, got, sizeof got);
        if (!cJSON_IsArray(bl) || !bl->child)
            return swa_json_fail(cs->doc, cs->err, swa_json_value_offset(cs->doc, bl), kpath,
                                 "expected a non-empty list of backend names (or NS:BACKEND globs), got %s", got);
        size_t total = 0;
        int i = 0;
        for (const cJSON *b = bl->child; b; b = b->next, i++) {
            char ipath[PATH_N + 16];
            snprintf(ipath, sizeof ipath, "%s/%d", kpath, i);
            swa_case_describe_value(cs->doc, b, got, sizeof got);
            char want[256];
            swa_backend_names_text(want, sizeof want);
            if (!cJSON_IsString(b) || (!swa_backend_flag_by_name(b->valuestring) && !strchr(b->valuestring, ':')) ||
                strchr(b->valuestring, ','))
                return swa_json_fail(cs->doc, cs->err, swa_json_value_offset(cs->doc, b), ipath,
                                     "expected a backend name (%s) or NS:BACKEND of a plug-in or adapter (a glob), "
                                     "got %s", want, got);
            total += strlen(b->valuestring) + 1;
        }
        if (total >= sizeof ((swa_case *)0)->xfail_backends)
            return swa_json_fail(cs->doc, cs->err, swa_json_value_offset(cs->doc, bl), kpath,
                                 "expected at most %zu characters of backend names, got %zu",
                                 sizeof ((swa_case *)0)->xfail_backends - 1, total);
    }
    cs->xfail = v;
    snprintf(cs->xfail_path, sizeof cs->xfail_path, "%s", path);
    return 0;
}

/* A built-in backend of "xfail" must be one the case runs (as expect_skip). */
static int check_xfail(case_state *cs)
{
    const cJSON *bl = cs->xfail && cJSON_IsObject(cs->xfail) ? cJSON_GetObjectItemCaseSensitive(cs->xfail, "backends")
                                                              : NULL;
    int i = 0;
    for (const cJSON *b = bl ? bl->child : NULL; b; b = b->next, i++) {
        unsigned flag = swa_backend_flag_by_name(b->valuestring);
        if (!flag || (cs->backends & flag))
            continue;
        char ipath[PATH_N + 32];
        snprintf(ipath, sizeof ipath, "%s/backends/%d", cs->xfail_path, i);
        return swa_json_fail(cs->doc, cs->err, swa_json_value_offset(cs->doc, b), ipath,
                             "expected a backend this case runs, got \"%s\": a known failure of a backend that "
                             "never runs the case cannot be checked", b->valuestring);
    }
    return 0;
}

/* "layers": [{"window_left": L}, ...], 1..SWA_MAX_LAYERS objects, each
 * with exactly the key window_left (same range as the case key).  Not a
 * sweep: the case expands once per layer (case_expand.c). */
static int read_layers(case_state *cs, const cJSON *v, const char *path)
{
    char got[64], lpath[PATH_N], kpath[PATH_N];
    swa_case_describe_value(cs->doc, v, got, sizeof got);
    int n = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : -1;
    if (n < 1 || n > SWA_MAX_LAYERS)
        return swa_json_fail(cs->doc, cs->err, swa_json_value_offset(cs->doc, v), path,
                             "expected a list of 1 to %d layer objects {\"window_left\": L} (the windows the "
                             "batch is planned and run with, in layer order), got %s%s",
                             SWA_MAX_LAYERS, got, n == 0 ? " with no layer" : n > 0 ? " of too many layers" : "");
    int i = 0;
    for (const cJSON *layer = v->child; layer; layer = layer->next, i++) {
        swa_json_path_index(lpath, sizeof lpath, path, i);
        swa_case_describe_value(cs->doc, layer, got, sizeof got);
        if (!cJSON_IsObject(layer))
            return swa_json_fail(cs->doc, cs->err, swa_json_value_offset(cs->doc, layer), lpath,
                                 "expected a layer object {\"window_left\": L}, got %s", got);
        const cJSON *w = NULL;
        for (const cJSON *m = layer->child; m; m = m->next) {
            swa_json_path_key(kpath, sizeof kpath, lpath, m->string);
            if (strcmp(m->string, "window_left") != 0) {
                static const char *const layer_keys[] = {"window_left", NULL};
                return swa_case_fail_unknown_key(cs->doc, cs->err, m, kpath, layer_keys, " in a layer");
            }
            if (w)
                return swa_json_fail(cs->doc, cs->err, swa_json_key_offset(cs->doc, m), kpath,
                                     "expected each key once, got \"window_left\" again");
            w = m;
        }
        swa_json_path_key(kpath, sizeof kpath, lpath, "window_left");
        if (!w)
            return swa_json_fail(cs->doc, cs->err, swa_json_value_offset(cs->doc, layer), lpath,
                                 "missing required key \"window_left\" (%s)", swa_case_keys[F_WINDOW_LEFT].hint);
        swa_case_describe_value(cs->doc, w, got, sizeof got);
        size_t off = swa_json_value_offset(cs->doc, w);
        bool integer = cJSON_IsNumber(w) && strspn(got, "-0123456789") == strlen(got);
        if (!integer || w->valuedouble < -1 || w->valuedouble > MAX_WINDOW_LEFT)
            return swa_json_fail(cs->doc, cs->err, off, kpath, "expected %s, got %s%s",
                                 swa_case_keys[F_WINDOW_LEFT].hint, got,
                                 cJSON_IsArray(w) ? " (a layer's window cannot be swept)" : "");
        cs->layer_windows[i] = (int)w->valuedouble;
    }
    cs->num_layers = n;
    return 0;
}

/* ---------------------------------------------------------------------------
 * One member of a case object (or of "defaults"). */

static int find_case_key(const char *key)
{
    for (int f = 0; f < F_COUNT; f++)
        if (strcmp(swa_case_keys[f].key, key) == 0)
            return f;
    return -1;
}

static int fail_unknown_case_key(case_state *cs, const cJSON *m, const char *path, const char *extra)
{
    const char *names[F_COUNT + 1];
    for (int f = 0; f < F_COUNT; f++)
        names[f] = swa_case_keys[f].key;
    names[F_COUNT] = NULL;
    return swa_case_fail_unknown_key(cs->doc, cs->err, m, path, names, extra);
}

static int read_member(case_state *cs, int f, const cJSON *m, const char *path)
{
    cs->present[f] = m;
    switch (f) {
    case F_NAME:
        return read_name(cs, m, path);
    case F_DESCRIPTION:
        if (!cJSON_IsString(m)) {
            char got[64];
            swa_case_describe_value(cs->doc, m, got, sizeof got);
            return swa_json_fail(cs->doc, cs->err, swa_json_value_offset(cs->doc, m), path,
                                 "expected a string, got %s", got);
        }
        return 0;
    case F_REQUESTS:
        snprintf(cs->requests_path, sizeof cs->requests_path, "%s", path);
        return read_requests(cs, m, path);
    case F_BACKENDS:
        return read_backends(cs, m, path);
    case F_TOLERANCE:
        return read_tolerance(cs, m, path);
    case F_EXPECT_ERROR:
        return read_expect_error(cs, m, path);
    case F_EXPECT_SKIP:
        return read_expect_skip(cs, m, path);
    case F_LAYERS:
        return read_layers(cs, m, path);
    case F_XFAIL:
        return read_xfail(cs, m, path);
    case F_INVARIANCE:
        return read_invariance(cs, m, path);
    default:
        return read_axis(cs, &swa_case_keys[f], m, path, swa_case_keys[f].key, f, -1, &cs->field_axis[f]);
    }
}

void swa_case_state_init(case_state *cs, const swa_json_doc *doc, swa_load_error *err)
{
    memset(cs, 0, sizeof *cs);
    cs->doc = doc;
    cs->err = err;
    for (int f = 0; f < F_COUNT; f++)
        cs->field_axis[f] = -1;
    cs->tol.mode = SWA_TOL_DEFAULT;
    cs->tol.lse_atol = -1;
}

/* Reads a case object and the defaults it inherits (defaults may be NULL). */
int swa_case_read(case_state *cs, const cJSON *obj, const char *path, const cJSON *defaults,
                     const char *defaults_path)
{
    const swa_json_doc *doc = cs->doc;
    char mpath[PATH_N], got[64];
    cs->object = obj;
    snprintf(cs->object_path, sizeof cs->object_path, "%s", path);
    if (!cJSON_IsObject(obj)) {
        swa_case_describe_value(doc, obj, got, sizeof got);
        return swa_json_fail(doc, cs->err, swa_json_value_offset(doc, obj), path,
                             "expected a case object, got %s", got);
    }
    for (const cJSON *m = obj->child; m; m = m->next) {
        swa_json_path_key(mpath, sizeof mpath, path, m->string);
        int f = find_case_key(m->string);
        if (f < 0)
            return fail_unknown_case_key(cs, m, mpath, NULL);
        if (read_member(cs, f, m, mpath))
            return -1;
    }
    if (defaults) {
        for (const cJSON *m = defaults->child; m; m = m->next) {
            int f = find_case_key(m->string);
            if (f < 0 || cs->present[f])
                continue; /* unknown keys were reported when "defaults" was checked */
            if (f == F_WINDOW_LEFT && cs->present[F_LAYERS])
                continue; /* the case's own layers set its windows */
            swa_json_path_key(mpath, sizeof mpath, defaults_path, m->string);
            if (read_member(cs, f, m, mpath))
                return -1;
        }
    }
    if (cs->present[F_LAYERS] && cs->present[F_WINDOW_LEFT]) {
        const cJSON *w = cs->present[F_WINDOW_LEFT];
        char wpath[PATH_N];
        snprintf(wpath, sizeof wpath, "%s", cs->axes[cs->field_axis[F_WINDOW_LEFT]].path);
        return swa_json_fail(doc, cs->err, swa_json_key_offset(doc, w), wpath,
                             "expected no \"window_left\" in a case with \"layers\" (each layer sets its own "
                             "window)");
    }
    for (int f = 0; f < F_COUNT; f++)
        if (swa_case_keys[f].required && !cs->present[f] && !(f == F_WINDOW_LEFT && cs->present[F_LAYERS]))
            return swa_json_fail(doc, cs->err, swa_json_value_offset(doc, obj), path,
                                 "missing required key \"%s\" (%s)", swa_case_keys[f].key, swa_case_keys[f].hint);
    if (check_expect_skip(cs))
        return -1;
    return check_xfail(cs);
}

/* "defaults" is checked once on its own so that a bad value there is
 * reported even when every case overrides it. */
int swa_case_check_defaults(const swa_json_doc *doc, swa_load_error *err, const cJSON *defaults, const char *path)
{
    char mpath[PATH_N], got[64];
    if (!cJSON_IsObject(defaults)) {
        swa_case_describe_value(doc, defaults, got, sizeof got);
        return swa_json_fail(doc, err, swa_json_value_offset(doc, defaults), path,
                             "expected an object of case keys shared by every case, got %s", got);
    }
    case_state cs;
    swa_case_state_init(&cs, doc, err);
    int rc = 0;
    for (const cJSON *m = defaults->child; m && rc == 0; m = m->next) {
        swa_json_path_key(mpath, sizeof mpath, path, m->string);
        int f = find_case_key(m->string);
        if (f == F_NAME)
            rc = swa_json_fail(doc, err, swa_json_key_offset(doc, m), mpath,
                               "expected no \"name\" in defaults (each case names itself)");
        else if (f < 0)
            rc = fail_unknown_case_key(&cs, m, mpath, " in defaults");
        else
            rc = read_member(&cs, f, m, mpath);
    }
    swa_case_state_free(&cs);
    return rc;
}
