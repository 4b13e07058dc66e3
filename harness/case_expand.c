/* case_expand.c — expands the sweep axes of a read case into swa_case
 * records (cartesian product, file order, last axis fastest), names them,
 * checks what depends on several keys together (window kinds against causal,
 * heads, decode rows, CUDA-graph batch sizes), rejects duplicate ids, and holds
 * the entry point swa_case_parse.  Reading and validating one case object
 * is harness/case_load.c; the format is documented there and in
 * cases/schema/case.schema.json.
 *
 * Test: tests/test_case_sweep.c (order, ids, defaults, filters),
 * tests/test_case_load.c (errors that depend on several keys). */
#include "harness/case_internal.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/data.h"

static const char *const CONTAINER_KEYS[] = {"description", "defaults", "cases", NULL};

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

/* Shortest text that reads back as x: integers as integers ("50", not
 * "5e+01"), everything else in the shortest %g form that round-trips. */
static void format_number(double x, char *buf, size_t n)
{
    if (x == (double)(long long)x && x > -1e15 && x < 1e15) {
        snprintf(buf, n, "%lld", (long long)x);
        return;
    }
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
    size_t host_cap;        /* bytes one case's tensors may take (swa_case_host_cap) */
    const char *host_cap_source;
    size_t record_bytes;    /* case records loaded so far, the caller's list included */
    int layer;              /* the layer being expanded ("layers" cases) */
} expander;

/* ---------------------------------------------------------------------------
 * Memory, estimated before anything is allocated.
 *
 * A case whose tensors cannot fit is refused here, with its id and its
 * bytes, so `validate` says what `run` would hit and a sweep cannot turn a
 * small file into tens of GB.  The cap: SWADIFF_MAX_CASE_BYTES when set (a
 * load-time cap of its own, for tests and for validating on a machine other
 * than the one that runs); else 80% of physical memory, or
 * SWADIFF_MAX_HOST_BYTES when that is larger (harness/run.c's run-time
 * budget: a run may be allowed more than 80%, never less here).  A smaller
 * SWADIFF_MAX_HOST_BYTES narrows the run, not the file's validity: the run
 * then records the case as a runtime error, as it always did (run.c checks
 * again before allocating).
 *
 * All three caps (SWADIFF_MAX_DEVICE_BYTES too, which only run.c uses) are
 * read on every load, so a malformed one is a load error (exit 2 from run,
 * validate, selftest, list cases, coverage, explain, shrink) before any case
 * runs, never a silent default (core/common.h: swa_env_bytes). */

static int swa_case_host_cap(size_t *cap, const char **source, char *why, size_t why_len)
{
    size_t v, run_budget;
    if (swa_env_caps_check(why, why_len) || swa_env_bytes("SWADIFF_MAX_CASE_BYTES", &v, why, why_len) ||
        swa_env_bytes("SWADIFF_MAX_HOST_BYTES", &run_budget, why, why_len))
        return -1;
    if (v > 0) {
        *source = "SWADIFF_MAX_CASE_BYTES";
        *cap = v;
        return 0;
    }
    size_t physical = swa_host_memory_default();
    if (run_budget > physical) {
        *source = "SWADIFF_MAX_HOST_BYTES";
        *cap = run_budget;
        return 0;
    }
    *source = "80% of physical memory; SWADIFF_MAX_CASE_BYTES overrides";
    *cap = physical;
    return 0;
}

/* What one loaded case record holds on the heap. */
static size_t case_record_bytes(long long num_requests)
{
    return sizeof(swa_case) + (size_t)num_requests * 2 * sizeof(int);
}

static double gib(size_t bytes) { return (double)bytes / 1073741824.0; }

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
    for (int i = 0; swa_backend_names[i]; i++)
        if ((backends & mask) & (1u << i))
            used += (size_t)snprintf(buf + used, used < n ? n - used : 0, "%s%s", used ? ", " : "", swa_backend_names[i]);
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
    if (cs->num_layers > 0 && used < n) /* one record per layer */
        used += (size_t)snprintf(id + used, n - used, "%slayer=%d", first ? ":" : ",", ex->layer);
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

    const unsigned decode_mask = SWA_BACKEND_DECODE_MASK;
    long long num_requests = 0, total_qo = 0, total_kv = 0;
    for (int r = 0; r < cs->num_request_entries; r++) {
        const int *ax = &cs->request_axis[r * R_FIELDS];
        long long qo = pick_value(ex, ax[R_QO_LEN])->i, kv = pick_value(ex, ax[R_KV_LEN])->i;
        long long count = ax[R_COUNT] < 0 ? 1 : pick_value(ex, ax[R_COUNT])->i;
        /* kv_len < qo_len is allowed (prefill only: decode rows are 1 <= kv_len):
         * the first qo_len - kv_len rows sit at p < 0 and see no key */
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

    /* the window kinds: right bound and chunk size against causal and window_left */
    const value *causal_v = field_value(ex, F_CAUSAL);
    const value *left_v = field_value(ex, F_WINDOW_LEFT);
    const value *right_v = field_value(ex, F_WINDOW_RIGHT);
    const value *chunk_v = field_value(ex, F_ATTENTION_CHUNK_SIZE);
    bool causal = causal_v ? causal_v->i != 0 : true;
    if (causal && right_v && right_v->i > 0)
        return fail_at_pick(ex, cs->field_axis[F_WINDOW_RIGHT], id,
                            "expected window_right 0 or -1 with causal true (a causal row sees no key right of "
                            "itself; a two-sided band [p-L, p+R] needs \"causal\": false), got %lld",
                            right_v->i);
    if (chunk_v && !causal)
        return fail_at_pick(ex, cs->field_axis[F_ATTENTION_CHUNK_SIZE], id,
                            "expected attention_chunk_size only with causal true (chunked local attention is "
                            "defined for causal rows: [floor(p/C)*C, p]), got causal false");
    /* a "layers" case has no window_left key: the layer's window */
    long long window_left = left_v ? left_v->i : cs->layer_windows[ex->layer];
    for (int l = 0; chunk_v && l < cs->num_layers; l++)
        if (cs->layer_windows[l] >= 0)
            return fail_at_pick(ex, cs->field_axis[F_ATTENTION_CHUNK_SIZE], id,
                                "expected every layer's window_left -1 with attention_chunk_size, got %d in "
                                "layer %d", cs->layer_windows[l], l);
    if (chunk_v && window_left >= 0)
        return fail_at_pick(ex, cs->field_axis[F_ATTENTION_CHUNK_SIZE], id,
                            "expected window_left -1 with attention_chunk_size (the chunk is the window; a "
                            "sliding window inside a chunk is not defined), got window_left %lld", window_left);

    const value *graph = field_value(ex, F_CUDA_GRAPH);
    const value *capture = field_value(ex, F_GRAPH_CAPTURE_REQUESTS);
    bool cuda_graph = graph && graph->i;
    if (cuda_graph && !capture)
        return fail_at_pick(ex, cs->field_axis[F_CUDA_GRAPH], id,
                            "expected graph_capture_requests with cuda_graph true (the batch to capture, "
                            "1 <= n != %lld requests)", num_requests);
    if (!cuda_graph && capture)
        return fail_at_pick(ex, cs->field_axis[F_GRAPH_CAPTURE_REQUESTS], id,
                            "expected no graph_capture_requests without cuda_graph true");
    if (cuda_graph && capture->i == num_requests)
        return fail_at_pick(ex, cs->field_axis[F_GRAPH_CAPTURE_REQUESTS], id,
                            "expected graph_capture_requests other than the number of requests (%lld): fewer "
                            "(capture the first ones, replay the larger batch) or more (capture that many "
                            "placeholder requests, replay the live batch padded to it), got %lld",
                            num_requests, capture->i);

    /* the records themselves, before their arrays are allocated */
    size_t record = case_record_bytes(num_requests);
    if (ex->record_bytes + record > MAX_LOADED_RECORD_BYTES)
        return swa_json_fail(doc, cs->err, requests_off, requests_path,
                             "expected at most %zu bytes (%.1f GiB) of case records in one load (every expanded "
                             "case keeps its own qo_len/kv_len arrays), got %zu bytes with case %s (%lld requests): "
                             "sweep fewer values or use fewer requests", MAX_LOADED_RECORD_BYTES,
                             gib(MAX_LOADED_RECORD_BYTES), ex->record_bytes + record, id, num_requests);

    swa_case c;
    memset(&c, 0, sizeof c);
    snprintf(c.id, sizeof c.id, "%s", id);
    snprintf(c.file, sizeof c.file, "%s", ex->file);
    snprintf(c.name, sizeof c.name, "%s", cs->name);
    c.line = cs->line;
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
    c.window_left = (int)window_left;
    c.num_layers = cs->num_layers;
    c.layer = cs->num_layers > 0 ? ex->layer : 0;
    for (int l = 0; l < cs->num_layers; l++)
        c.layer_window_left[l] = cs->layer_windows[l];
    /* causal: R = -1 and R = 0 mean the same, the record holds 0 */
    c.window_right = causal ? 0 : right_v ? (int)right_v->i : -1;
    c.chunk_size = chunk_v ? (int)chunk_v->i : 0;
    c.soft_cap = (v = field_value(ex, F_SOFT_CAP)) ? v->d : 0.0;
    c.sm_scale = (v = field_value(ex, F_SM_SCALE)) ? v->d : 1.0 / sqrt((double)c.head_dim);
    c.backends = cs->backends;
    c.tol = cs->tol;
    c.dist = (v = field_value(ex, F_DATA)) ? (swa_dist)v->i : SWA_DIST_NORMAL;
    c.seed = (v = field_value(ex, F_SEED)) ? v->u : 0;
    c.cuda_graph = cuda_graph;
    c.graph_capture_requests = capture ? (int)capture->i : 0;
    c.return_lse = (v = field_value(ex, F_RETURN_LSE)) ? v->i != 0 : false;
    c.deterministic = (v = field_value(ex, F_DETERMINISTIC)) ? v->i != 0 : false;
    c.invariance = cs->invariance;
    snprintf(c.expect_error, sizeof c.expect_error, "%s", cs->expect_error ? cs->expect_error : "");
    for (const cJSON *m = cs->expect_skip ? cs->expect_skip->child : NULL; m; m = m->next)
        for (int b = 0; b < SWA_BACKEND_COUNT; b++)
            if (!strcmp(m->string, swa_backend_names[b]))
                snprintf(c.expect_skip[b], sizeof c.expect_skip[b], "%s", m->valuestring);
    if (cs->xfail) {
        const cJSON *reason = cJSON_IsObject(cs->xfail) ? cJSON_GetObjectItemCaseSensitive(cs->xfail, "reason")
                                                        : cs->xfail;
        snprintf(c.xfail, sizeof c.xfail, "%s", reason->valuestring);
        const cJSON *bl = cJSON_IsObject(cs->xfail) ? cJSON_GetObjectItemCaseSensitive(cs->xfail, "backends") : NULL;
        size_t k = 0;
        for (const cJSON *b = bl ? bl->child : NULL; b && k < sizeof c.xfail_backends; b = b->next)
            k += (size_t)snprintf(c.xfail_backends + k, sizeof c.xfail_backends - k, "%s%s", k ? "," : "",
                                  b->valuestring);
    }

    /* the tensors a run would allocate for it (inputs, paged pool,
     * references, outputs): refused here rather than as "out of memory" */
    size_t need = swa_case_host_bytes(&c);
    if (need > ex->host_cap) {
        swa_case_free(&c);
        char need_text[48];
        if (need == SIZE_MAX)
            snprintf(need_text, sizeof need_text, "more than can be addressed");
        else
            snprintf(need_text, sizeof need_text, "%zu bytes (%.2f GiB)", need, gib(need));
        return swa_json_fail(doc, cs->err, swa_json_value_offset(doc, cs->object), cs->object_path,
                             "expected a case whose tensors fit in %zu bytes (%.2f GiB, %s), got case %s needing %s "
                             "of host memory (inputs, paged KV pool, references, outputs): use fewer or shorter "
                             "requests, fewer heads or a smaller head_dim",
                             ex->host_cap, gib(ex->host_cap), ex->host_cap_source, id, need_text);
    }

    if (append_case(ex, &c)) {
        swa_case_free(&c);
        return swa_json_fail(doc, cs->err, requests_off, requests_path, "out of memory");
    }
    ex->record_bytes += record;
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
    if (cs->num_layers > 0)
        total = cs->num_layers; /* one record per layer */
    for (int a = 0; a < cs->num_axes; a++) {
        total *= cs->axes[a].count;
        if (total > SWA_MAX_EXPANDED_CASES + 1LL)
            total = SWA_MAX_EXPANDED_CASES + 1LL; /* saturate: only "too many" matters */
        if (cs->axes[a].swept && used < sizeof sizes)
            used += (size_t)snprintf(sizes + used, sizeof sizes - used, "%s%s: %d", used ? " x " : "",
                                     cs->axes[a].name, cs->axes[a].count);
    }
    if (total > *budget) {
        long long file_total = SWA_MAX_EXPANDED_CASES - *budget + total;
        bool more = total > SWA_MAX_EXPANDED_CASES; /* saturated above: the true count is unknown */
        return swa_json_fail(cs->doc, cs->err, swa_json_value_offset(cs->doc, cs->object), cs->object_path,
                             "expected at most %d expanded cases per file, got %s%lld with this case (%s)",
                             SWA_MAX_EXPANDED_CASES, more ? "more than " : "",
                             more ? (long long)SWA_MAX_EXPANDED_CASES : file_total, sizes);
    }
    long long loaded = (long long)ex->ids->base->count + ex->out->count;
    if (loaded + total > MAX_LOADED_CASES)
        return swa_json_fail(cs->doc, cs->err, swa_json_value_offset(cs->doc, cs->object), cs->object_path,
                             "expected at most %d expanded cases in one load (all case files of a run together), "
                             "got %lld with this case (%lld loaded before it, %lld from it)",
                             MAX_LOADED_CASES, loaded + total, loaded, total);
    *budget -= total;
    int column;
    swa_json_line_col(cs->doc, swa_json_value_offset(cs->doc, cs->object), &cs->line, &column);
    ex->pick = calloc((size_t)(cs->num_axes ? cs->num_axes : 1), sizeof *ex->pick);
    if (!ex->pick)
        return swa_json_fail(cs->doc, cs->err, swa_json_value_offset(cs->doc, cs->object), cs->object_path,
                             "out of memory");
    int rc = 0;
    for (;;) {
        for (ex->layer = 0; ex->layer < (cs->num_layers > 0 ? cs->num_layers : 1) && rc == 0; ex->layer++)
            rc = expand_one(ex);
        if (rc)
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
    swa_case_state_init(&cs, doc, err);
    ex->cs = &cs;
    int rc = swa_case_read(&cs, obj, path, defaults, "/defaults");
    if (rc == 0)
        rc = expand_case(ex, budget);
    swa_case_state_free(&cs);
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
            if (swa_case_check_defaults(doc, err, m, path))
                return -1;
        } else if (strcmp(m->string, "description") == 0) {
            if (!cJSON_IsString(m)) {
                swa_case_describe_value(doc, m, got, sizeof got);
                return swa_json_fail(doc, err, swa_json_value_offset(doc, m), path, "expected a string, got %s", got);
            }
        } else {
            return swa_case_fail_unknown_key(doc, err, m, path, CONTAINER_KEYS,
                                    " in a file with \"cases\" (case keys go in \"defaults\" or in each case)");
        }
    }
    if (!cJSON_IsArray(cases) || !cases->child) {
        swa_case_describe_value(doc, cases, got, sizeof got);
        return swa_json_fail(doc, err, swa_json_value_offset(doc, cases), "/cases",
                             "expected a non-empty list of case objects, got %s",
                             cJSON_IsArray(cases) ? "an empty list" : got);
    }
    /* two cases with one name would make ids that differ only by sweep;
     * the names seen so far in a hash set (a file may hold 100,000 cases) */
    size_t count = 0, capacity = 16;
    for (const cJSON *c = cases->child; c; c = c->next)
        count++;
    while (capacity < 2 * count)
        capacity *= 2;
    const cJSON **seen = calloc(capacity, sizeof *seen);
    if (!seen)
        return swa_json_fail(doc, err, swa_json_value_offset(doc, cases), "/cases", "out of memory");
    int index = 0, rc = 0;
    for (const cJSON *c = cases->child; c && rc == 0; c = c->next, index++) {
        swa_json_path_index(path, sizeof path, "/cases", index);
        const cJSON *name = cJSON_IsObject(c) ? cJSON_GetObjectItemCaseSensitive(c, "name") : NULL;
        if (name && cJSON_IsString(name)) {
            size_t j = hash_id(name->valuestring) & (capacity - 1);
            while (seen[j] && strcmp(seen[j]->valuestring, name->valuestring) != 0)
                j = (j + 1) & (capacity - 1);
            if (seen[j]) {
                int line, column;
                char name_path[PATH_N];
                swa_json_path_key(name_path, sizeof name_path, path, "name");
                swa_json_line_col(doc, swa_json_value_offset(doc, seen[j]), &line, &column);
                rc = swa_json_fail(doc, err, swa_json_value_offset(doc, name), name_path,
                                   "expected a unique case name, got \"%s\" again (first at line %d, column %d)",
                                   name->valuestring, line, column);
                break;
            }
            seen[j] = name;
        }
        rc = parse_one_case(doc, err, c, path, defaults, ex, budget);
    }
    free(seen);
    return rc ? -1 : 0;
}

int swa_case_parse(const char *file_name, const char *text, size_t len, swa_case_list *list,
                   swa_load_error *err)
{
    /* the memory caps first: a bad one is the environment's error, not the
     * file's, and is reported as such ("swadiff: VAR=...: expected ...") */
    size_t host_cap;
    const char *host_cap_source;
    char why[sizeof err->message];
    if (swa_case_host_cap(&host_cap, &host_cap_source, why, sizeof why)) {
        memset(err, 0, sizeof *err);
        snprintf(err->file, sizeof err->file, "swadiff");
        snprintf(err->message, sizeof err->message, "%s", why);
        return -1;
    }
    if (strlen(file_name) >= SWA_PATH_MAX) { /* case files come through swa_case_load_path, which says so first */
        memset(err, 0, sizeof *err);
        swa_path_abbrev(file_name, err->file, sizeof err->file);
        snprintf(err->message, sizeof err->message, "expected a case file path of at most %d bytes",
                 SWA_PATH_MAX - 1);
        return -1;
    }
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
    expander ex = {NULL, file_name, stem, NULL, &fresh, 0, &ids, 0, NULL, 0, 0};
    ex.host_cap = host_cap;
    ex.host_cap_source = host_cap_source;
    for (int i = 0; i < list->count; i++)
        ex.record_bytes += case_record_bytes(list->cases[i].num_requests);
    long long budget = SWA_MAX_EXPANDED_CASES;
    if (rc == 0) {
        const cJSON *root = doc.root;
        char got[64];
        if (!cJSON_IsObject(root)) {
            swa_case_describe_value(&doc, root, got, sizeof got);
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
