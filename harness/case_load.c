/* case_load.c — strict parsing of case files and sweep expansion
 * (DESIGN.md §8; the format is documented field by field in
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
#include "case.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "case_json.h"

#define MAX_HEADS 1024
#define MAX_TOKENS (1 << 24)      /* per request, qo_len and kv_len */
#define MAX_COUNT 65536           /* repeat count of one request entry */
#define MAX_REQUESTS 65536        /* requests of one expanded case */
#define MAX_PAGE_SIZE 65536
#define NAME_LEN_MAX 100
#define PATH_N sizeof ((swa_load_error *)0)->path

/* ---------------------------------------------------------------------------
 * The keys a case may hold. */

typedef enum { K_INT, K_U64, K_NUM, K_BOOL, K_ENUM, K_SPECIAL } key_kind;

typedef enum {
    F_NAME, F_DESCRIPTION, F_REQUESTS, F_NUM_QO_HEADS, F_NUM_KV_HEADS, F_HEAD_DIM, F_DTYPE,
    F_PAGE_SIZE, F_LAYOUT, F_KV_MODE, F_CAUSAL, F_WINDOW_LEFT, F_SOFT_CAP, F_SM_SCALE,
    F_BACKENDS, F_TOLERANCE, F_DATA, F_SEED, F_CUDA_GRAPH, F_GRAPH_CAPTURE_REQUESTS,
    F_RETURN_LSE, F_COUNT
} field_id;

typedef enum { R_QO_LEN, R_KV_LEN, R_COUNT, R_FIELDS } request_field;

typedef struct key_spec {
    const char *key;
    key_kind kind;
    bool required;
    long long min, max;          /* K_INT */
    const int *choices;          /* K_INT restricted to a set (head_dim) */
    int num_choices;
    const char *const *names;    /* K_ENUM, NULL-terminated */
    bool exclusive_min;          /* K_NUM: > min instead of >= min */
    const char *hint;            /* what the key means, for "missing" messages */
} key_spec;

static const char *const DTYPE_NAMES[] = {"fp16", "bf16", "fp32", NULL};
static const char *const LAYOUT_NAMES[] = {"NHD", "HND", NULL};
static const char *const KV_MODE_NAMES[] = {"paged", "ragged", NULL};
static const char *const DIST_NAMES[] = {"normal", "uniform", "poison", NULL};
static const char *const BACKEND_NAMES[] = {"prefill", "decode_fa2", "decode_aiter", "decode_auto", NULL};
static const int HEAD_DIMS[] = {64, 96, 128, 256};

static const key_spec CASE_KEYS[F_COUNT] = {
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
    [F_WINDOW_LEFT] = {"window_left", K_INT, true, -1, INT_MAX, NULL, 0, NULL, false,
                       "an integer >= -1: keys [p-L, p] are visible, -1 for no window"},
    [F_SOFT_CAP] = {"soft_cap", K_NUM, false, 0, 0, NULL, 0, NULL, false, NULL},
    [F_SM_SCALE] = {"sm_scale", K_NUM, false, 0, 0, NULL, 0, NULL, true, NULL},
    [F_BACKENDS] = {"backends", K_SPECIAL, true, 0, 0, NULL, 0, NULL, false,
                    "a list of \"prefill\", \"decode_fa2\", \"decode_aiter\", \"decode_auto\""},
    [F_TOLERANCE] = {"tolerance", K_SPECIAL, false, 0, 0, NULL, 0, NULL, false, NULL},
    [F_DATA] = {"data", K_ENUM, false, 0, 0, NULL, 0, DIST_NAMES, false, NULL},
    [F_SEED] = {"seed", K_U64, false, 0, 0, NULL, 0, NULL, false, NULL},
    [F_CUDA_GRAPH] = {"cuda_graph", K_BOOL, false, 0, 0, NULL, 0, NULL, false, NULL},
    [F_GRAPH_CAPTURE_REQUESTS] = {"graph_capture_requests", K_INT, false, 1, MAX_REQUESTS - 1, NULL, 0,
                                  NULL, false, NULL},
    [F_RETURN_LSE] = {"return_lse", K_BOOL, false, 0, 0, NULL, 0, NULL, false, NULL},
};

static const key_spec REQUEST_KEYS[R_FIELDS] = {
    [R_QO_LEN] = {"qo_len", K_INT, true, 1, MAX_TOKENS, NULL, 0, NULL, false,
                  "an integer >= 1: query rows of the request (1 for decode)"},
    [R_KV_LEN] = {"kv_len", K_INT, true, 1, MAX_TOKENS, NULL, 0, NULL, false,
                  "an integer >= qo_len: keys of the request, the new tokens included"},
    [R_COUNT] = {"count", K_INT, false, 1, MAX_COUNT, NULL, 0, NULL, false, NULL},
};

static const char *const TOLERANCE_KEYS[] = {"mode", "atol", "rtol", "factor", "lse_atol", "equal_nan", NULL};
static const char *const CONTAINER_KEYS[] = {"description", "defaults", "cases", NULL};

/* ---------------------------------------------------------------------------
 * Small helpers for messages. */

/* "got ..." text for a value: raw number token, quoted string, or its kind. */
static void describe_value(const swa_json_doc *doc, const cJSON *v, char *buf, size_t n)
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
static int fail_unknown_key(const swa_json_doc *doc, swa_load_error *err, const cJSON *member,
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

/* ---------------------------------------------------------------------------
 * Values and sweep axes. */

typedef struct value {
    long long i;    /* K_INT, K_BOOL (0/1), K_ENUM (index) */
    uint64_t u;     /* K_U64 */
    double d;       /* K_NUM */
    const cJSON *node;
} value;

typedef struct axis {
    char name[48];        /* "window_left", "r0.kv_len" */
    const key_spec *spec;
    int field;            /* field_id, or request_field when request >= 0 */
    int request;          /* index in "requests", -1 for case-level keys */
    bool swept;           /* given as a list: named in the id */
    char path[PATH_N];    /* JSON pointer of the key's value */
    int count;
    value *values;
} axis;

typedef struct case_state {
    const swa_json_doc *doc;
    swa_load_error *err;
    const cJSON *object;          /* the case object (position of "missing" errors) */
    char object_path[PATH_N];
    const cJSON *present[F_COUNT];/* member node of each key present (value) */
    const cJSON *name_node;
    const char *name;
    int num_request_entries;
    char requests_path[PATH_N];   /* where "requests" was given (maybe in defaults) */
    int *request_axis;            /* [entries][R_FIELDS], -1: key absent (count) */
    axis *axes;
    int num_axes, cap_axes;
    int field_axis[F_COUNT];      /* axis of a case-level key, -1 when absent */
    unsigned backends;
    swa_tolerance tol;
} case_state;

static void case_state_free(case_state *cs)
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
    describe_value(doc, v, got, sizeof got);
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
        snprintf(want, sizeof want, "a number %s 0", spec->exclusive_min ? ">" : ">=");
        if (!cJSON_IsNumber(v))
            return swa_json_fail(doc, cs->err, off, path, "expected %s, got %s", want, got);
        double x = v->valuedouble;
        if (!isfinite(x) || (spec->exclusive_min ? !(x > 0) : !(x >= 0)))
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
        for (int j = 0; j < index; j++) {
            if (values_equal(spec, &a->values[j], &a->values[index])) {
                int line, column;
                swa_json_line_col(cs->doc, swa_json_value_offset(cs->doc, a->values[j].node), &line, &column);
                return swa_json_fail(cs->doc, cs->err, swa_json_value_offset(cs->doc, e), element_path,
                                     "duplicate value in the sweep (first at line %d, column %d); "
                                     "expected distinct values", line, column);
            }
        }
    }
    return 0;
}

/* ---------------------------------------------------------------------------
 * The keys that are not plain scalars. */

static int read_name(case_state *cs, const cJSON *v, const char *path)
{
    size_t off = swa_json_value_offset(cs->doc, v);
    char got[64];
    describe_value(cs->doc, v, got, sizeof got);
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
    describe_value(doc, v, got, sizeof got);
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
            describe_value(doc, r, got, sizeof got);
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
                return fail_unknown_key(doc, cs->err, m, kpath, names, " in a request");
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
    describe_value(doc, v, got, sizeof got);
    const char *want = "\"prefill\", \"decode_fa2\", \"decode_aiter\" or \"decode_auto\"";
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
        describe_value(doc, e, got, sizeof got);
        int b = -1;
        if (cJSON_IsString(e))
            for (int i = 0; BACKEND_NAMES[i]; i++)
                if (strcmp(e->valuestring, BACKEND_NAMES[i]) == 0)
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

static int read_tolerance_number(case_state *cs, const cJSON *v, const char *path, bool positive, double *out)
{
    char got[64];
    describe_value(cs->doc, v, got, sizeof got);
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
    describe_value(doc, v, got, sizeof got);
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
            describe_value(doc, m, got, sizeof got);
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
            describe_value(doc, m, got, sizeof got);
            if (!cJSON_IsBool(m))
                return swa_json_fail(doc, cs->err, swa_json_value_offset(doc, m), mpath,
                                     "expected true or false, got %s", got);
            t->equal_nan = cJSON_IsTrue(m);
        } else {
            return fail_unknown_key(doc, cs->err, m, mpath, TOLERANCE_KEYS, " in tolerance");
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

/* ---------------------------------------------------------------------------
 * One member of a case object (or of "defaults"). */

static int find_case_key(const char *key)
{
    for (int f = 0; f < F_COUNT; f++)
        if (strcmp(CASE_KEYS[f].key, key) == 0)
            return f;
    return -1;
}

static int fail_unknown_case_key(case_state *cs, const cJSON *m, const char *path, const char *extra)
{
    const char *names[F_COUNT + 1];
    for (int f = 0; f < F_COUNT; f++)
        names[f] = CASE_KEYS[f].key;
    names[F_COUNT] = NULL;
    return fail_unknown_key(cs->doc, cs->err, m, path, names, extra);
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
            describe_value(cs->doc, m, got, sizeof got);
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
    default:
        return read_axis(cs, &CASE_KEYS[f], m, path, CASE_KEYS[f].key, f, -1, &cs->field_axis[f]);
    }
}

static void case_state_init(case_state *cs, const swa_json_doc *doc, swa_load_error *err)
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
static int read_case(case_state *cs, const cJSON *obj, const char *path, const cJSON *defaults,
                     const char *defaults_path)
{
    const swa_json_doc *doc = cs->doc;
    char mpath[PATH_N], got[64];
    cs->object = obj;
    snprintf(cs->object_path, sizeof cs->object_path, "%s", path);
    if (!cJSON_IsObject(obj)) {
        describe_value(doc, obj, got, sizeof got);
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
            swa_json_path_key(mpath, sizeof mpath, defaults_path, m->string);
            if (read_member(cs, f, m, mpath))
                return -1;
        }
    }
    for (int f = 0; f < F_COUNT; f++)
        if (CASE_KEYS[f].required && !cs->present[f])
            return swa_json_fail(doc, cs->err, swa_json_value_offset(doc, obj), path,
                                 "missing required key \"%s\" (%s)", CASE_KEYS[f].key, CASE_KEYS[f].hint);
    return 0;
}

/* "defaults" is checked once on its own so that a bad value there is
 * reported even when every case overrides it. */
static int check_defaults(const swa_json_doc *doc, swa_load_error *err, const cJSON *defaults, const char *path)
{
    char mpath[PATH_N], got[64];
    if (!cJSON_IsObject(defaults)) {
        describe_value(doc, defaults, got, sizeof got);
        return swa_json_fail(doc, err, swa_json_value_offset(doc, defaults), path,
                             "expected an object of case keys shared by every case, got %s", got);
    }
    case_state cs;
    case_state_init(&cs, doc, err);
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
    case_state_free(&cs);
    return rc;
}

/* ---------------------------------------------------------------------------
 * Expansion. */

/* Ids seen so far: those already in the caller's list and those this call
 * has produced.  Entries are indices (the arrays move when they grow):
 * i < base->count names base->cases[i], else fresh->cases[i - base->count]. */
typedef struct id_set {
    const swa_case_list *base, *fresh;
    int *slots;        /* -1: empty */
    size_t capacity, count;
} id_set;

static const swa_case *id_set_case(const id_set *set, int index)
{
    return index < set->base->count ? &set->base->cases[index]
                                    : &set->fresh->cases[index - set->base->count];
}

static uint64_t hash_id(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* Inserts the case at index unless its id is taken.  Returns the index of
 * the case already holding the id, -1 after inserting, -2 out of memory. */
static int id_set_insert(id_set *set, int index)
{
    if ((set->count + 1) * 2 > set->capacity) {
        size_t cap = set->capacity ? set->capacity * 2 : 256;
        int *slots = malloc(cap * sizeof *slots);
        if (!slots)
            return -2;
        for (size_t i = 0; i < cap; i++)
            slots[i] = -1;
        for (size_t i = 0; i < set->capacity; i++) {
            if (set->slots[i] < 0)
                continue;
            size_t j = hash_id(id_set_case(set, set->slots[i])->id) & (cap - 1);
            while (slots[j] >= 0)
                j = (j + 1) & (cap - 1);
            slots[j] = set->slots[i];
        }
        free(set->slots);
        set->slots = slots;
        set->capacity = cap;
    }
    const char *id = id_set_case(set, index)->id;
    size_t j = hash_id(id) & (set->capacity - 1);
    while (set->slots[j] >= 0) {
        if (strcmp(id_set_case(set, set->slots[j])->id, id) == 0)
            return set->slots[j];
        j = (j + 1) & (set->capacity - 1);
    }
    set->slots[j] = index;
    set->count++;
    return -1;
}

static void format_number(double x, char *buf, size_t n)
{
    for (int precision = 1; precision <= 17; precision++) {
        snprintf(buf, n, "%.*g", precision, x);
        if (strtod(buf, NULL) == x)
            return;
    }
}

static void format_axis_value(const axis *a, const value *v, char *buf, size_t n)
{
    switch (a->spec->kind) {
    case K_INT: snprintf(buf, n, "%lld", v->i); break;
    case K_U64: snprintf(buf, n, "%llu", (unsigned long long)v->u); break;
    case K_NUM: format_number(v->d, buf, n); break;
    case K_BOOL: snprintf(buf, n, "%s", v->i ? "true" : "false"); break;
    case K_ENUM: snprintf(buf, n, "%s", a->spec->names[v->i]); break;
    default: snprintf(buf, n, "?"); break;
    }
}

typedef struct expander {
    case_state *cs;
    const char *file;
    const char *stem;
    int *pick;              /* [num_axes] current index in each axis */
    swa_case_list *out;
    int capacity;
    id_set *ids;
} expander;

static const value *pick_value(const expander *ex, int axis_index)
{
    return &ex->cs->axes[axis_index].values[ex->pick[axis_index]];
}

static const value *field_value(const expander *ex, field_id f)
{
    int a = ex->cs->field_axis[f];
    return a < 0 ? NULL : pick_value(ex, a);
}

static int append_case(expander *ex, swa_case *c)
{
    if (ex->out->count == ex->capacity) {
        int cap = ex->capacity ? ex->capacity * 2 : 16;
        swa_case *cases = realloc(ex->out->cases, (size_t)cap * sizeof *cases);
        if (!cases)
            return -1;
        ex->out->cases = cases;
        ex->capacity = cap;
    }
    ex->out->cases[ex->out->count++] = *c;
    return 0;
}

static const char *backend_list_text(unsigned backends, unsigned mask, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; BACKEND_NAMES[i]; i++)
        if ((backends & mask) & (1u << i))
            used += (size_t)snprintf(buf + used, used < n ? n - used : 0, "%s%s", used ? ", " : "", BACKEND_NAMES[i]);
    return buf;
}

/* Fails at the value the current pick took from an axis; in a sweep the
 * message names the expanded case so the combination is clear. */
static int fail_at_pick(expander *ex, int axis_index, const char *id, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static int fail_at_pick(expander *ex, int axis_index, const char *id, const char *fmt, ...)
{
    const axis *a = &ex->cs->axes[axis_index];
    char path[PATH_N], msg[400];
    if (a->swept)
        swa_json_path_index(path, sizeof path, a->path, ex->pick[axis_index]);
    else
        snprintf(path, sizeof path, "%s", a->path);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const cJSON *node = pick_value(ex, axis_index)->node;
    if (strchr(id, ':'))
        return swa_json_fail(ex->cs->doc, ex->cs->err, swa_json_value_offset(ex->cs->doc, node), path,
                             "%s (in the sweep case %s)", msg, id);
    return swa_json_fail(ex->cs->doc, ex->cs->err, swa_json_value_offset(ex->cs->doc, node), path, "%s", msg);
}

static int build_id(expander *ex, char *id, size_t n)
{
    case_state *cs = ex->cs;
    size_t used = (size_t)snprintf(id, n, "%s/%s", ex->stem, cs->name);
    bool first = true;
    for (int a = 0; a < cs->num_axes && used < n; a++) {
        if (!cs->axes[a].swept)
            continue;
        char v[64];
        format_axis_value(&cs->axes[a], pick_value(ex, a), v, sizeof v);
        used += (size_t)snprintf(id + used, n - used, "%s%s=%s", first ? ":" : ",", cs->axes[a].name, v);
        first = false;
    }
    if (used >= n) {
        char name_path[PATH_N];
        swa_json_path_key(name_path, sizeof name_path, cs->object_path, "name");
        return swa_json_fail(cs->doc, cs->err, swa_json_value_offset(cs->doc, cs->name_node), name_path,
                             "expected a case id of at most %zu characters, got \"%.60s...\" "
                             "(shorten the name or sweep fewer keys)", n - 1, id);
    }
    return 0;
}

/* Builds the case for the current pick, checks what depends on several keys
 * together, names it and appends it. */
static int expand_one(expander *ex)
{
    case_state *cs = ex->cs;
    const swa_json_doc *doc = cs->doc;
    char id[SWA_ID_MAX], names[96];
    if (build_id(ex, id, sizeof id))
        return -1;

    const unsigned decode_mask = SWA_BACKEND_DECODE_FA2 | SWA_BACKEND_DECODE_AITER | SWA_BACKEND_DECODE_AUTO;
    long long num_requests = 0, total_qo = 0, total_kv = 0;
    for (int r = 0; r < cs->num_request_entries; r++) {
        const int *ax = &cs->request_axis[r * R_FIELDS];
        long long qo = pick_value(ex, ax[R_QO_LEN])->i, kv = pick_value(ex, ax[R_KV_LEN])->i;
        long long count = ax[R_COUNT] < 0 ? 1 : pick_value(ex, ax[R_COUNT])->i;
        if (kv < qo)
            return fail_at_pick(ex, ax[R_KV_LEN], id, "expected kv_len >= qo_len (%lld), got %lld", qo, kv);
        if ((cs->backends & decode_mask) && qo != 1)
            return fail_at_pick(ex, ax[R_QO_LEN], id,
                                "expected qo_len 1 (backends %s decode one query row per request), got %lld",
                                backend_list_text(cs->backends, decode_mask, names, sizeof names), qo);
        num_requests += count;
        total_qo += qo * count;
        total_kv += kv * count;
    }
    size_t requests_off = swa_json_value_offset(doc, cs->present[F_REQUESTS]);
    const char *requests_path = cs->requests_path;
    if (num_requests > MAX_REQUESTS)
        return swa_json_fail(doc, cs->err, requests_off, requests_path,
                             "expected at most %d requests per case, got %lld", MAX_REQUESTS, num_requests);
    if (total_qo > INT_MAX || total_kv > INT_MAX)
        return swa_json_fail(doc, cs->err, requests_off, requests_path,
                             "expected at most %d query rows and keys in all requests together, got %lld and %lld",
                             INT_MAX, total_qo, total_kv);

    long long qo_heads = field_value(ex, F_NUM_QO_HEADS)->i, kv_heads = field_value(ex, F_NUM_KV_HEADS)->i;
    if (qo_heads % kv_heads != 0)
        return fail_at_pick(ex, cs->field_axis[F_NUM_QO_HEADS], id,
                            "expected a multiple of num_kv_heads (%lld), got %lld", kv_heads, qo_heads);

    const value *kv_mode = field_value(ex, F_KV_MODE);
    if (kv_mode && kv_mode->i == SWA_KV_RAGGED && (cs->backends & decode_mask))
        return fail_at_pick(ex, cs->field_axis[F_KV_MODE], id,
                            "expected \"paged\": \"ragged\" is a prefill mode and backends lists %s",
                            backend_list_text(cs->backends, decode_mask, names, sizeof names));

    const value *graph = field_value(ex, F_CUDA_GRAPH);
    const value *capture = field_value(ex, F_GRAPH_CAPTURE_REQUESTS);
    bool cuda_graph = graph && graph->i;
    if (cuda_graph && !capture)
        return fail_at_pick(ex, cs->field_axis[F_CUDA_GRAPH], id,
                            "expected graph_capture_requests with cuda_graph true (the batch to capture, "
                            "1 <= n < %lld requests)", num_requests);
    if (!cuda_graph && capture)
        return fail_at_pick(ex, cs->field_axis[F_GRAPH_CAPTURE_REQUESTS], id,
                            "expected no graph_capture_requests without cuda_graph true");
    if (cuda_graph && capture->i >= num_requests)
        return fail_at_pick(ex, cs->field_axis[F_GRAPH_CAPTURE_REQUESTS], id,
                            "expected graph_capture_requests < number of requests (%lld), got %lld "
                            "(replay must run a larger batch than the captured one)", num_requests, capture->i);

    swa_case c;
    memset(&c, 0, sizeof c);
    snprintf(c.id, sizeof c.id, "%s", id);
    snprintf(c.file, sizeof c.file, "%s", ex->file);
    snprintf(c.name, sizeof c.name, "%s", cs->name);
    int column;
    swa_json_line_col(doc, swa_json_value_offset(doc, cs->object), &c.line, &column);
    c.num_requests = (int)num_requests;
    c.qo_len = malloc((size_t)num_requests * sizeof *c.qo_len);
    c.kv_len = malloc((size_t)num_requests * sizeof *c.kv_len);
    if (!c.qo_len || !c.kv_len) {
        swa_case_free(&c);
        return swa_json_fail(doc, cs->err, requests_off, requests_path, "out of memory");
    }
    int next = 0;
    for (int r = 0; r < cs->num_request_entries; r++) {
        const int *ax = &cs->request_axis[r * R_FIELDS];
        long long count = ax[R_COUNT] < 0 ? 1 : pick_value(ex, ax[R_COUNT])->i;
        for (long long k = 0; k < count; k++, next++) {
            c.qo_len[next] = (int)pick_value(ex, ax[R_QO_LEN])->i;
            c.kv_len[next] = (int)pick_value(ex, ax[R_KV_LEN])->i;
        }
    }
    const value *v;
    c.num_qo_heads = (int)qo_heads;
    c.num_kv_heads = (int)kv_heads;
    c.head_dim = (int)field_value(ex, F_HEAD_DIM)->i;
    c.dtype = (swa_dtype)field_value(ex, F_DTYPE)->i;
    c.page_size = (v = field_value(ex, F_PAGE_SIZE)) ? (int)v->i : 16;
    c.layout = (v = field_value(ex, F_LAYOUT)) ? (swa_layout)v->i : SWA_LAYOUT_NHD;
    c.kv_mode = kv_mode ? (swa_kv_mode)kv_mode->i : SWA_KV_PAGED;
    c.causal = (v = field_value(ex, F_CAUSAL)) ? v->i != 0 : true;
    c.window_left = (int)field_value(ex, F_WINDOW_LEFT)->i;
    c.soft_cap = (v = field_value(ex, F_SOFT_CAP)) ? v->d : 0.0;
    c.sm_scale = (v = field_value(ex, F_SM_SCALE)) ? v->d : 1.0 / sqrt((double)c.head_dim);
    c.backends = cs->backends;
    c.tol = cs->tol;
    c.dist = (v = field_value(ex, F_DATA)) ? (swa_dist)v->i : SWA_DIST_NORMAL;
    c.seed = (v = field_value(ex, F_SEED)) ? v->u : 0;
    c.cuda_graph = cuda_graph;
    c.graph_capture_requests = capture ? (int)capture->i : 0;
    c.return_lse = (v = field_value(ex, F_RETURN_LSE)) ? v->i != 0 : false;

    if (append_case(ex, &c)) {
        swa_case_free(&c);
        return swa_json_fail(doc, cs->err, requests_off, requests_path, "out of memory");
    }
    int holder = id_set_insert(ex->ids, ex->ids->base->count + ex->out->count - 1);
    if (holder == -2)
        return swa_json_fail(doc, cs->err, requests_off, requests_path, "out of memory");
    if (holder >= 0) {
        const swa_case *first = id_set_case(ex->ids, holder);
        char name_path[PATH_N];
        swa_json_path_key(name_path, sizeof name_path, cs->object_path, "name");
        return swa_json_fail(doc, cs->err, swa_json_value_offset(doc, cs->name_node), name_path,
                             "expected a unique case id, got \"%s\" again (first from %s, line %d)",
                             id, first->file, first->line);
    }
    return 0;
}

/* Enumerates the cartesian product of the case's axes, last axis fastest. */
static int expand_case(expander *ex, long long *budget)
{
    case_state *cs = ex->cs;
    long long total = 1;
    char sizes[200] = "";
    size_t used = 0;
    for (int a = 0; a < cs->num_axes; a++) {
        total *= cs->axes[a].count;
        if (total > SWA_MAX_EXPANDED_CASES + 1LL)
            total = SWA_MAX_EXPANDED_CASES + 1LL; /* saturate: only "too many" matters */
        if (cs->axes[a].swept && used < sizeof sizes)
            used += (size_t)snprintf(sizes + used, sizeof sizes - used, "%s%s: %d", used ? " x " : "",
                                     cs->axes[a].name, cs->axes[a].count);
    }
    if (total > *budget)
        return swa_json_fail(cs->doc, cs->err, swa_json_value_offset(cs->doc, cs->object), cs->object_path,
                             "expected sweeps that expand to at most %d cases per file, got %s%lld here (%s)",
                             SWA_MAX_EXPANDED_CASES, total > SWA_MAX_EXPANDED_CASES ? "more than " : "",
                             total > SWA_MAX_EXPANDED_CASES ? (long long)SWA_MAX_EXPANDED_CASES : total,
                             sizes);
    *budget -= total;
    ex->pick = calloc((size_t)(cs->num_axes ? cs->num_axes : 1), sizeof *ex->pick);
    if (!ex->pick)
        return swa_json_fail(cs->doc, cs->err, swa_json_value_offset(cs->doc, cs->object), cs->object_path,
                             "out of memory");
    int rc = 0;
    for (;;) {
        if ((rc = expand_one(ex)))
            break;
        int a = cs->num_axes - 1;
        while (a >= 0 && ++ex->pick[a] == cs->axes[a].count)
            ex->pick[a--] = 0;
        if (a < 0)
            break;
    }
    free(ex->pick);
    ex->pick = NULL;
    return rc;
}

/* ---------------------------------------------------------------------------
 * Files. */

/* The file name without folders and without ".json". */
static void file_stem(const char *file_name, char *stem, size_t n)
{
    const char *base = strrchr(file_name, '/');
    base = base ? base + 1 : file_name;
    size_t len = strlen(base);
    if (len > 5 && strcmp(base + len - 5, ".json") == 0)
        len -= 5;
    snprintf(stem, n, "%.*s", (int)len, base);
}

static bool stem_is_safe(const char *stem)
{
    if (!*stem)
        return false;
    for (const char *s = stem; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_' ||
              *s == '-' || *s == '.'))
            return false;
    return true;
}

static int parse_one_case(const swa_json_doc *doc, swa_load_error *err, const cJSON *obj, const char *path,
                          const cJSON *defaults, expander *ex, long long *budget)
{
    case_state cs;
    case_state_init(&cs, doc, err);
    ex->cs = &cs;
    int rc = read_case(&cs, obj, path, defaults, "/defaults");
    if (rc == 0)
        rc = expand_case(ex, budget);
    case_state_free(&cs);
    ex->cs = NULL;
    return rc;
}

static int parse_container(const swa_json_doc *doc, swa_load_error *err, expander *ex, long long *budget)
{
    const cJSON *root = doc->root, *cases = NULL, *defaults = NULL;
    char path[PATH_N], got[64];
    for (const cJSON *m = root->child; m; m = m->next) {
        swa_json_path_key(path, sizeof path, "", m->string);
        if (strcmp(m->string, "cases") == 0) {
            cases = m;
        } else if (strcmp(m->string, "defaults") == 0) {
            defaults = m;
            if (check_defaults(doc, err, m, path))
                return -1;
        } else if (strcmp(m->string, "description") == 0) {
            if (!cJSON_IsString(m)) {
                describe_value(doc, m, got, sizeof got);
                return swa_json_fail(doc, err, swa_json_value_offset(doc, m), path, "expected a string, got %s", got);
            }
        } else {
            return fail_unknown_key(doc, err, m, path, CONTAINER_KEYS,
                                    " in a file with \"cases\" (case keys go in \"defaults\" or in each case)");
        }
    }
    if (!cJSON_IsArray(cases) || !cases->child) {
        describe_value(doc, cases, got, sizeof got);
        return swa_json_fail(doc, err, swa_json_value_offset(doc, cases), "/cases",
                             "expected a non-empty list of case objects, got %s",
                             cJSON_IsArray(cases) ? "an empty list" : got);
    }
    int index = 0;
    for (const cJSON *c = cases->child; c; c = c->next, index++) {
        swa_json_path_index(path, sizeof path, "/cases", index);
        /* two cases with one name would make ids that differ only by sweep */
        const cJSON *name = cJSON_IsObject(c) ? cJSON_GetObjectItemCaseSensitive(c, "name") : NULL;
        int j = 0;
        for (const cJSON *prev = cases->child; name && cJSON_IsString(name) && prev != c; prev = prev->next, j++) {
            const cJSON *pn = cJSON_IsObject(prev) ? cJSON_GetObjectItemCaseSensitive(prev, "name") : NULL;
            if (pn && cJSON_IsString(pn) && strcmp(pn->valuestring, name->valuestring) == 0) {
                int line, column;
                char name_path[PATH_N];
                swa_json_path_key(name_path, sizeof name_path, path, "name");
                swa_json_line_col(doc, swa_json_value_offset(doc, pn), &line, &column);
                return swa_json_fail(doc, err, swa_json_value_offset(doc, name), name_path,
                                     "expected a unique case name, got \"%s\" again (first at line %d, column %d)",
                                     name->valuestring, line, column);
            }
        }
        if (parse_one_case(doc, err, c, path, defaults, ex, budget))
            return -1;
    }
    return 0;
}

int swa_case_parse(const char *file_name, const char *text, size_t len, swa_case_list *list,
                   swa_load_error *err)
{
    swa_json_doc doc;
    if (swa_json_doc_open(&doc, file_name, text, len, err))
        return -1;
    char stem[SWA_NAME_MAX];
    file_stem(file_name, stem, sizeof stem);
    if (!stem_is_safe(stem) || strlen(stem) > NAME_LEN_MAX) {
        int rc = swa_json_fail(&doc, err, 0, "",
                               "expected a file name of 1 to %d letters, digits, '.', '_' or '-' before \".json\" "
                               "(it starts every case id), got \"%.100s\"", NAME_LEN_MAX, stem);
        swa_json_doc_close(&doc);
        return rc;
    }
    swa_case_list fresh = {NULL, 0};
    id_set ids = {list, &fresh, NULL, 0, 0};
    int rc = 0;
    for (int i = 0; i < list->count && rc == 0; i++)
        if (id_set_insert(&ids, i) == -2)
            rc = swa_json_fail(&doc, err, 0, "", "out of memory");
    expander ex = {NULL, file_name, stem, NULL, &fresh, 0, &ids};
    long long budget = SWA_MAX_EXPANDED_CASES;
    if (rc == 0) {
        const cJSON *root = doc.root;
        char got[64];
        if (!cJSON_IsObject(root)) {
            describe_value(&doc, root, got, sizeof got);
            rc = swa_json_fail(&doc, err, swa_json_value_offset(&doc, root), "",
                               "expected a case object or {\"cases\": [...]}, got %s", got);
        } else if (cJSON_GetObjectItemCaseSensitive(root, "cases")) {
            rc = parse_container(&doc, err, &ex, &budget);
        } else {
            rc = parse_one_case(&doc, err, root, "", NULL, &ex, &budget);
        }
    }
    free(ids.slots);
    swa_json_doc_close(&doc);
    if (rc) {
        for (int i = 0; i < fresh.count; i++)
            swa_case_free(&fresh.cases[i]);
        free(fresh.cases);
        return -1;
    }
    if (fresh.count) {
        swa_case *grown = realloc(list->cases, (size_t)(list->count + fresh.count) * sizeof *grown);
        if (!grown) {
            for (int i = 0; i < fresh.count; i++)
                swa_case_free(&fresh.cases[i]);
            free(fresh.cases);
            memset(err, 0, sizeof *err);
            snprintf(err->file, sizeof err->file, "%s", file_name);
            snprintf(err->path, sizeof err->path, "/");
            snprintf(err->message, sizeof err->message, "out of memory");
            return -1;
        }
        memcpy(grown + list->count, fresh.cases, (size_t)fresh.count * sizeof *grown);
        list->cases = grown;
        list->count += fresh.count;
    }
    free(fresh.cases);
    return 0;
}

void swa_load_error_format(const swa_load_error *err, char *buf, size_t n)
{
    if (err->line > 0)
        snprintf(buf, n, "%s:%d:%d: %s: %s", err->file, err->line, err->column, err->path[0] ? err->path : "/",
                 err->message);
    else /* nothing to point at: the file could not be read */
        snprintf(buf, n, "%s: %s", err->file, err->message);
}
