/* case_select.c — the fields of an expanded case and `--where` over them
 * (case_select.h).
 *
 * Test: tests/test_case_select.c, tests/test_cli.c (where_*). */
#include "harness/case_select.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/compare.h"

static const char *const DTYPES[] = {"fp16", "bf16", "fp32", NULL};
static const char *const LAYOUTS[] = {"NHD", "HND", NULL};
static const char *const KV_MODES[] = {"paged", "ragged", NULL};

/* X(ID, "name", kind, closed values or NULL, "meaning") */
#define FIELD_LIST(X)                                                                                           \
    X(ID, "id", SWA_FIELD_STRING, NULL, "the case id (what --filter matches)")                                  \
    X(FILE, "file", SWA_FIELD_STRING, NULL, "the case file it came from")                                       \
    X(NAME, "name", SWA_FIELD_STRING, NULL, "the case's \"name\"")                                              \
    X(BACKEND, "backend", SWA_FIELD_STRING, swa_backend_names, "a backend the case runs (or NS:BACKEND)")       \
    X(DTYPE, "dtype", SWA_FIELD_STRING, DTYPES, "element type of q, k, v and the output")                      \
    X(NUM_REQUESTS, "num_requests", SWA_FIELD_NUMBER, NULL, "requests in the batch")                           \
    X(TOTAL_QO, "total_qo", SWA_FIELD_NUMBER, NULL, "query rows of all requests")                              \
    X(TOTAL_KV, "total_kv", SWA_FIELD_NUMBER, NULL, "keys of all requests")                                    \
    X(MAX_KV, "max_kv", SWA_FIELD_NUMBER, NULL, "the longest request's kv_len")                                \
    X(NUM_QO_HEADS, "num_qo_heads", SWA_FIELD_NUMBER, NULL, "query heads")                                     \
    X(NUM_KV_HEADS, "num_kv_heads", SWA_FIELD_NUMBER, NULL, "key/value heads")                                 \
    X(HEAD_DIM, "head_dim", SWA_FIELD_NUMBER, NULL, "head dimension")                                          \
    X(PAGE_SIZE, "page_size", SWA_FIELD_NUMBER, NULL, "KV page size")                                          \
    X(LAYOUT, "layout", SWA_FIELD_STRING, LAYOUTS, "KV layout")                                                \
    X(KV_MODE, "kv_mode", SWA_FIELD_STRING, KV_MODES, "paged or ragged KV (prefill)")                           \
    X(CAUSAL, "causal", SWA_FIELD_BOOL, NULL, "causal mask")                                                   \
    X(WINDOW_LEFT, "window_left", SWA_FIELD_NUMBER, NULL, "left window (-1: none); a layer's own")             \
    X(WINDOW_RIGHT, "window_right", SWA_FIELD_NUMBER, NULL, "right window (-1: unbounded; causal: 0)")         \
    X(CHUNK, "attention_chunk_size", SWA_FIELD_NUMBER, NULL, "chunked attention (0: off)")                     \
    X(SOFT_CAP, "soft_cap", SWA_FIELD_NUMBER, NULL, "logit soft cap (0: none)")                                \
    X(SM_SCALE, "sm_scale", SWA_FIELD_NUMBER, NULL, "softmax scale (resolved)")                                \
    X(DATA, "data", SWA_FIELD_STRING, swa_dist_names, "input distribution")                                    \
    X(SEED, "seed", SWA_FIELD_NUMBER, NULL, "input seed")                                                      \
    X(CUDA_GRAPH, "cuda_graph", SWA_FIELD_BOOL, NULL, "planned for CUDA-graph capture")                        \
    X(GRAPH_REQUESTS, "graph_capture_requests", SWA_FIELD_NUMBER, NULL, "requests in the captured batch (0: no graph)") \
    X(RETURN_LSE, "return_lse", SWA_FIELD_BOOL, NULL, "LSE compared too")                                      \
    X(NUM_LAYERS, "num_layers", SWA_FIELD_NUMBER, NULL, "interleaved layers (0: none)")                        \
    X(LAYER, "layer", SWA_FIELD_NUMBER, NULL, "the layer compared (0 without layers)")                         \
    X(ATOL, "tolerance.atol", SWA_FIELD_NUMBER, NULL, "absolute tolerance (resolved)")                        \
    X(RTOL, "tolerance.rtol", SWA_FIELD_NUMBER, NULL, "relative tolerance (resolved)")                        \
    X(EXPECT_ERROR, "expect_error", SWA_FIELD_STRING, NULL, "the refusal the case expects (\"\": none)")

enum {
#define X_ENUM(e, name, kind, values, meaning) FIELD_##e,
    FIELD_LIST(X_ENUM)
#undef X_ENUM
    FIELD_COUNT,
    FIELD_REQUEST_QO = 1000, /* r<I>.qo_len: index in the condition */
    FIELD_REQUEST_KV,
};

static const swa_case_field FIELDS[] = {
#define X_ROW(e, name, kind, values, meaning) {name, kind, values, meaning},
    FIELD_LIST(X_ROW)
#undef X_ROW
};

const swa_case_field *swa_case_fields(int *n)
{
    *n = FIELD_COUNT;
    return FIELDS;
}

/* "r12.kv_len" -> FIELD_REQUEST_KV, *request 12; "dtype" -> FIELD_DTYPE; -1 unknown */
static int field_lookup(const char *name, size_t len, int *request)
{
    for (int i = 0; i < FIELD_COUNT; i++)
        if (strlen(FIELDS[i].name) == len && !strncmp(FIELDS[i].name, name, len))
            return i;
    if (len > 1 && name[0] == 'r' && isdigit((unsigned char)name[1])) {
        char *end;
        long r = strtol(name + 1, &end, 10);
        size_t rest = len - (size_t)(end - name);
        if (r >= 0 && r < 1000000 && rest == 7 && !strncmp(end, ".qo_len", 7))
            return *request = (int)r, FIELD_REQUEST_QO;
        if (r >= 0 && r < 1000000 && rest == 7 && !strncmp(end, ".kv_len", 7))
            return *request = (int)r, FIELD_REQUEST_KV;
    }
    return -1;
}

static swa_field_kind field_kind(int field)
{
    return field >= FIELD_REQUEST_QO ? SWA_FIELD_NUMBER : FIELDS[field].kind;
}

static const char *first_backend(const swa_case *c)
{
    for (int b = 0; b < SWA_BACKEND_COUNT; b++)
        if (c->backends & (1u << b))
            return swa_backend_names[b];
    return "";
}

/* The value of one field; false when the case has none (a request index past its batch). */
static bool value_of(const swa_case *c, const char *backend, int field, int request, char *buf, size_t n,
                     double *number)
{
    double v = NAN;
    const char *s = NULL;
    switch (field) {
    case FIELD_ID: s = c->id; break;
    case FIELD_FILE: s = c->file; break;
    case FIELD_NAME: s = c->name; break;
    case FIELD_BACKEND: s = backend ? backend : first_backend(c); break;
    case FIELD_DTYPE: s = swa_dtype_name(c->dtype); break;
    case FIELD_NUM_REQUESTS: v = c->num_requests; break;
    case FIELD_TOTAL_QO: v = swa_case_total_qo(c); break;
    case FIELD_TOTAL_KV: v = swa_case_total_kv(c); break;
    case FIELD_MAX_KV: v = swa_case_max_kv(c); break;
    case FIELD_NUM_QO_HEADS: v = c->num_qo_heads; break;
    case FIELD_NUM_KV_HEADS: v = c->num_kv_heads; break;
    case FIELD_HEAD_DIM: v = c->head_dim; break;
    case FIELD_PAGE_SIZE: v = c->page_size; break;
    case FIELD_LAYOUT: s = swa_layout_name(c->layout); break;
    case FIELD_KV_MODE: s = c->kv_mode == SWA_KV_RAGGED ? "ragged" : "paged"; break;
    case FIELD_CAUSAL: s = c->causal ? "true" : "false"; break;
    case FIELD_WINDOW_LEFT: v = c->window_left; break;
    case FIELD_WINDOW_RIGHT: v = c->window_right; break;
    case FIELD_CHUNK: v = c->chunk_size; break;
    case FIELD_SOFT_CAP: v = c->soft_cap; break;
    case FIELD_SM_SCALE: v = c->sm_scale; break;
    case FIELD_DATA: s = swa_dist_names[c->dist]; break;
    case FIELD_SEED: v = (double)c->seed; break;
    case FIELD_CUDA_GRAPH: s = c->cuda_graph ? "true" : "false"; break;
    case FIELD_GRAPH_REQUESTS: v = c->cuda_graph ? c->graph_capture_requests : 0; break;
    case FIELD_RETURN_LSE: s = c->return_lse ? "true" : "false"; break;
    case FIELD_NUM_LAYERS: v = c->num_layers; break;
    case FIELD_LAYER: v = c->layer; break;
    case FIELD_ATOL: v = swa_tolerance_resolve(c).atol; break;
    case FIELD_RTOL: v = swa_tolerance_resolve(c).rtol; break;
    case FIELD_EXPECT_ERROR: s = c->expect_error; break;
    case FIELD_REQUEST_QO:
    case FIELD_REQUEST_KV:
        if (request >= c->num_requests)
            return false;
        v = field == FIELD_REQUEST_QO ? c->qo_len[request] : c->kv_len[request];
        break;
    default: return false;
    }
    if (s) {
        snprintf(buf, n, "%s", s);
    } else {
        if (field == FIELD_SEED)
            snprintf(buf, n, "%llu", (unsigned long long)c->seed);
        else
            snprintf(buf, n, "%.17g", v);
        if (number)
            *number = v;
    }
    return true;
}

int swa_case_field_value(const swa_case *c, const char *backend, const char *name, char *buf, size_t n,
                         double *number)
{
    int request = 0;
    int field = field_lookup(name, strlen(name), &request);
    if (field < 0 || !value_of(c, backend, field, request, buf, n, number))
        return -1;
    return (int)field_kind(field);
}

/* ---------------------------------------------------------------------------
 * --where */

typedef enum { OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE } where_op;

typedef struct condition {
    int field, request;
    where_op op;
    char value[SWA_ID_MAX];
    double number;
} condition;

struct swa_where {
    condition *conds;
    int count;
};

void swa_where_free(swa_where *w)
{
    if (w)
        free(w->conds);
    free(w);
}

static void field_names(char *buf, size_t n)
{
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i < FIELD_COUNT && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%s", i ? ", " : "", FIELDS[i].name);
    if (k < n)
        snprintf(buf + k, n - k, ", r<I>.qo_len, r<I>.kv_len");
}

static void values_text(const char *const *values, char *buf, size_t n)
{
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; values[i] && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%s", i ? ", " : "", values[i]);
}

#define WHERE_FAIL(...)                                                                                         \
    do {                                                                                                        \
        char what_[600];                                                                                        \
        snprintf(what_, sizeof what_, __VA_ARGS__);                                                             \
        snprintf(err, n, "--where %s: at column %d (%.*s): %s", expr, (int)(start - expr) + 1,                \
                 len ? (int)len : 7, len ? start : "nothing", what_);                                          \
        swa_where_free(w);                                                                                      \
        return NULL;                                                                                            \
    } while (0)

swa_where *swa_where_parse(const char *expr, char *err, size_t n)
{
    swa_where *w = calloc(1, sizeof *w);
    size_t cap = 1;
    for (const char *p = expr; *p; p++)
        cap += *p == ',';
    if (w)
        w->conds = calloc(cap, sizeof *w->conds);
    if (!w || !w->conds) {
        snprintf(err, n, "--where: no memory");
        swa_where_free(w);
        return NULL;
    }
    const char *start = expr;
    while (true) {
        size_t len = strcspn(start, ",");
        const char *end = start + len;
        const char *p = start;
        while (p < end && isspace((unsigned char)*p))
            p++;
        const char *name = p;
        while (p < end && (isalnum((unsigned char)*p) || *p == '_' || *p == '.'))
            p++;
        size_t name_len = (size_t)(p - name);
        if (len == 0 || name_len == 0)
            WHERE_FAIL("expected FIELD OP VALUE (OP one of = != < <= > >=), e.g. dtype=bf16");
        condition *cd = &w->conds[w->count];
        cd->field = field_lookup(name, name_len, &cd->request);
        if (cd->field < 0) {
            char names[1024];
            field_names(names, sizeof names);
            WHERE_FAIL("unknown field '%.*s' (expected one of: %s)", (int)name_len, name, names);
        }
        while (p < end && isspace((unsigned char)*p))
            p++;
        const char *op = p;
        if (p + 1 < end && p[1] == '=' && (*p == '!' || *p == '<' || *p == '>'))
            cd->op = *p == '!' ? OP_NE : *p == '<' ? OP_LE : OP_GE, p += 2;
        else if (p < end && (*p == '=' || *p == '<' || *p == '>'))
            cd->op = *p == '=' ? OP_EQ : *p == '<' ? OP_LT : OP_GT, p += 1;
        else
            WHERE_FAIL("expected an operator (= != < <= > >=) after '%.*s', got '%.*s'", (int)name_len, name,
                       (int)(end - op), op);
        if (p < end && strchr("=!<>", *p))
            WHERE_FAIL("unknown operator '%.*s' (expected = != < <= > >=)", (int)(p + 1 - op), op);
        while (p < end && isspace((unsigned char)*p))
            p++;
        const char *value_end = end;
        while (value_end > p && isspace((unsigned char)value_end[-1]))
            value_end--;
        snprintf(cd->value, sizeof cd->value, "%.*s", (int)(value_end - p), p);
        const char *fname = cd->field >= FIELD_REQUEST_QO ? "a request length" : FIELDS[cd->field].name;
        swa_field_kind kind = field_kind(cd->field);
        if (kind == SWA_FIELD_NUMBER) {
            char *num_end;
            cd->number = strtod(cd->value, &num_end);
            if (!cd->value[0] || *num_end || !isfinite(cd->number))
                WHERE_FAIL("%s is a number: expected a number after the operator, got '%s'", fname, cd->value);
        } else if (kind == SWA_FIELD_BOOL) {
            if (cd->op != OP_EQ && cd->op != OP_NE)
                WHERE_FAIL("%s is true or false: expected = or != before it", fname);
            if (strcmp(cd->value, "true") && strcmp(cd->value, "false"))
                WHERE_FAIL("%s is true or false: expected true or false, got '%s'", fname, cd->value);
        } else if (FIELDS[cd->field].values) {
            bool known = cd->field == FIELD_BACKEND && strchr(cd->value, ':'); /* a plug-in's NS:BACKEND */
            for (int i = 0; !known && FIELDS[cd->field].values[i]; i++)
                known = !strcmp(FIELDS[cd->field].values[i], cd->value);
            if (!known) {
                char values[400];
                values_text(FIELDS[cd->field].values, values, sizeof values);
                WHERE_FAIL("%s is one of %s%s: got '%s'", fname, values,
                           cd->field == FIELD_BACKEND ? " (or NS:BACKEND of a plug-in or adapter)" : "", cd->value);
            }
        }
        w->count++;
        if (!*end)
            break;
        start = end + 1;
    }
    return w;
}

static bool holds(const condition *cd, const swa_case *c, const char *backend)
{
    char text[SWA_PATH_MAX];
    double number = NAN;
    if (!value_of(c, backend, cd->field, cd->request, text, sizeof text, &number))
        return false;
    int cmp;
    if (field_kind(cd->field) == SWA_FIELD_NUMBER)
        cmp = number < cd->number ? -1 : number > cd->number ? 1 : 0;
    else
        cmp = strcmp(text, cd->value);
    switch (cd->op) {
    case OP_EQ: return cmp == 0;
    case OP_NE: return cmp != 0;
    case OP_LT: return cmp < 0;
    case OP_LE: return cmp <= 0;
    case OP_GT: return cmp > 0;
    case OP_GE: return cmp >= 0;
    }
    return false;
}

bool swa_where_matches(const swa_where *w, const swa_case *c, const char *backend)
{
    for (int i = 0; w && i < w->count; i++)
        if (!holds(&w->conds[i], c, backend))
            return false;
    return true;
}

bool swa_where_matches_any(const swa_where *w, const swa_case *c, const char *const *extra, int nextra)
{
    if (!w)
        return true;
    for (int b = 0; b < SWA_BACKEND_COUNT; b++)
        if ((c->backends & (1u << b)) && swa_where_matches(w, c, swa_backend_names[b]))
            return true;
    for (int i = 0; i < nextra; i++)
        if (swa_where_matches(w, c, extra[i]))
            return true;
    return false;
}

bool swa_where_names_backend(const swa_where *w)
{
    for (int i = 0; w && i < w->count; i++)
        if (w->conds[i].field == FIELD_BACKEND)
            return true;
    return false;
}

bool swa_where_backend_ok(const swa_where *w, const char *backend)
{
    for (int i = 0; w && i < w->count; i++)
        if (w->conds[i].field == FIELD_BACKEND && !holds(&w->conds[i], NULL, backend))
            return false;
    return true;
}
