/* external.c — the registry of external backends (plug-ins and adapters)
 * and the swa_backend table they all share.  See external.h.
 *
 * Test: tests/test_external.c. */
#include "backends/external/external_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/plan_common.h"

_Static_assert(sizeof(int) == sizeof(int32_t), "the page tables are handed to plug-ins as int32_t");

static ext_provider providers[SWA_EXTERNAL_MAX];
static int num_providers;
static ext_backend backends[SWA_EXTERNAL_MAX];
static const swa_backend *backend_ptrs[SWA_EXTERNAL_MAX];
static int num_backends;

const swa_backend *const *swa_external_backends(int *count)
{
    if (count)
        *count = num_backends;
    return backend_ptrs;
}

bool swa_external_is(const swa_backend *b)
{
    for (int i = 0; i < num_backends; i++)
        if (backend_ptrs[i] == b)
            return true;
    return false;
}

bool swa_external_tile_shape(const char *name, swa_tile_shape *out)
{
    memset(out, 0, sizeof *out);
    out->gqa_packed = -1;
    for (int i = 0; name && i < num_backends; i++)
        if (strcmp(backends[i].full_name, name) == 0) {
            if (backends[i].tiles.num_q_rows == 0 && backends[i].tiles.num_kv_keys == 0)
                return false;
            *out = backends[i].tiles;
            return true;
        }
    return false;
}

/* ---------------------------------------------------------------------------
 * the shared swa_backend table */

static const char *ext_supports(const swa_case *c, const swa_device_ops *dev, char *buf, size_t n);
static swa_status ext_plan_fn(const swa_case *c, const swa_inputs *in, const swa_plan_opts *o, void **plan,
                              swa_error *err);
static double ext_run_lse_base(const void *plan, const swa_run_opts *r);
static swa_status ext_run(void *plan, void *dev_inputs, const swa_run_opts *r, const swa_out_args *o,
                          swa_error *err);
static void ext_free(void *plan);

static const char *ext_supports(const swa_case *c, const swa_device_ops *dev, char *buf, size_t n)
{
    (void)dev;
    /* find ourselves: supports() has no backend argument, so the case's
     * fields decide; the per-backend checks run in plan() */
    if (c->expect_error[0]) {
        snprintf(buf, n, "the case pins a refusal by a built-in backend (expect_error \"%s\"); external "
                 "backends do not run it", c->expect_error);
        return buf;
    }
    return NULL;
}

static bool case_is_decode(const swa_case *c)
{
    for (int r = 0; r < c->num_requests; r++)
        if (c->qo_len[r] != 1)
            return false;
    return true;
}

static void build_problem(ext_plan *p)
{
    const swa_case *c = p->c;
    const swa_inputs *in = p->in;
    swadiff_problem *q = &p->problem;
    memset(q, 0, sizeof *q);
    q->struct_size = sizeof *q;
    q->memory = SWADIFF_MEM_HOST;
    q->num_requests = c->num_requests;
    q->total_qo = in->total_qo;
    q->total_kv = in->total_kv;
    q->num_qo_heads = c->num_qo_heads;
    q->num_kv_heads = c->num_kv_heads;
    q->head_dim = c->head_dim;
    q->dtype = c->dtype == SWA_DTYPE_FP16 ? SWADIFF_FP16 : c->dtype == SWA_DTYPE_BF16 ? SWADIFF_BF16 : SWADIFF_FP32;
    q->causal = c->causal;
    q->window_left = swa_marshal_window_left(c);
    q->window_right = c->causal ? 0 : c->window_right;
    q->sm_scale = (float)c->sm_scale;
    q->soft_cap = (float)c->soft_cap;
    q->return_lse = 0;
    q->qo_indptr = q->qo_indptr_dev = in->qo_indptr;
    q->qo_len = p->qo_len;
    q->kv_len = in->paged.context_lens;
    q->q = in->q_raw;
    q->k = in->k_raw;
    q->v = in->v_raw;
    q->kv_seq_indptr = q->kv_seq_indptr_dev = in->kv_indptr;
    q->page_size = in->paged.page_size;
    q->num_pages = in->paged.num_pages;
    q->layout = swa_marshal_layout(in->paged.layout) == SWA_LAYOUT_NHD ? SWADIFF_NHD : SWADIFF_HND;
    q->k_cache = in->paged.k_pages;
    q->v_cache = in->paged.v_pages;
    q->kv_indptr = q->kv_indptr_dev = in->paged.indptr;
    q->kv_indices = q->kv_indices_dev = in->paged.indices;
    q->kv_last_page_len = q->kv_last_page_len_dev = in->paged.last_page_len;
    q->max_blocks_per_seq = in->paged.max_blocks_per_seq;
    q->block_tables = q->block_tables_dev = in->paged.block_tables;
    q->context_lens = q->context_lens_dev = in->paged.context_lens;
    q->stream = NULL; /* host memory; a device-memory plug-in gets its device view at run (plugin.c) */
    q->device = -1;
}

/* st (and err) of plug-in code that just returned, with what it wrote into
 * the lent inputs (restored) added as an error. */
static swa_status lent_checked(ext_plan *p, const char *what, swa_status st, swa_error *err)
{
    char found[600];
    if (!swa_lent_check(p->c, p->in, &p->lent, found, sizeof found))
        return st;
    if (st != SWA_OK && st != SWA_ERR_UNSUPPORTED) {
        char msg[sizeof err->message];
        snprintf(msg, sizeof msg, "%s", err->message);
        return swa_error_set(err, SWA_ERR_INVALID, "%s; and %s %s", msg, what, found);
    }
    return swa_error_set(err, SWA_ERR_INVALID, "%s: %s %s", p->e->full_name, what, found);
}

static swa_status ext_plan_fn(const swa_case *c, const swa_inputs *in, const swa_plan_opts *o, void **plan,
                              swa_error *err)
{
    *plan = NULL;
    if (!o || !o->backend || !swa_external_is(o->backend))
        return swa_error_set(err, SWA_ERR_INVALID, "external backend planned without its table (swa_plan_opts.backend)");
    const ext_backend *e = (const ext_backend *)o->backend;
    if (e->load_error[0])
        return swa_error_set(err, SWA_ERR_INVALID, "%s", e->load_error);
    const ext_provider *prov = &providers[e->provider];
    if (prov->kind == EXT_ADAPTER) {
        bool decode = case_is_decode(c);
        if ((decode && !e->decode) || (!decode && !e->prefill))
            return swa_error_set(err, SWA_ERR_UNSUPPORTED, "%s takes %s cases only", e->full_name,
                                 e->prefill ? "prefill" : "decode");
    }
    if (prov->kind == EXT_PLUGIN && c->chunk_size > 0)
        return swa_error_set(err, SWA_ERR_UNSUPPORTED,
                             "%s: the plug-in ABI (version %d) has no attention_chunk_size field, so a plug-in "
                             "cannot see the chunk and would run plain causal attention; chunked cases are not given "
                             "to plug-ins", e->full_name, SWADIFF_PLUGIN_ABI_VERSION);
    if (prov->kind == EXT_PLUGIN) /* the ABI promises kv_len >= qo_len */
        for (int r = 0; r < c->num_requests; r++)
            if (c->kv_len[r] < c->qo_len[r])
                return swa_error_set(err, SWA_ERR_UNSUPPORTED,
                                     "%s: request %d has qo_len %d > kv_len %d; the plug-in ABI promises kv_len "
                                     ">= qo_len, so such cases (empty rows) are not given to plug-ins",
                                     e->full_name, r, c->qo_len[r], c->kv_len[r]);
    char why[256];
    if (prov->kind == EXT_PLUGIN && swa_plugin_memory_unsupported(e->memory, o->device, why, sizeof why))
        return swa_error_set(err, SWA_ERR_UNSUPPORTED, "%s %s", e->full_name, why);
    if (c->return_lse && e->b.lse_base == 0)
        return swa_error_set(err, SWA_ERR_UNSUPPORTED, "%s returns no LSE and the case asks for one",
                             e->full_name);
    ext_plan *p = swa_plan_calloc(1, sizeof *p, e->full_name, err);
    if (!p)
        return SWA_ERR_NOMEM;
    p->qo_len = malloc((size_t)(c->num_requests > 0 ? c->num_requests : 1) * sizeof *p->qo_len);
    if (!p->qo_len) {
        free(p);
        return swa_error_set(err, SWA_ERR_NOMEM, "%s: no memory for the problem", e->full_name);
    }
    for (int r = 0; r < c->num_requests; r++)
        p->qo_len[r] = c->qo_len[r];
    p->e = e;
    p->prov = prov;
    p->c = c;
    p->in = in;
    p->device = o->device;
    p->lse_base = e->b.lse_base;
    build_problem(p);
    swa_status st = SWA_OK;
    if (prov->kind == EXT_PLUGIN) {
        swa_lent_take(in, e->memory == SWADIFF_MEM_HOST, &p->lent);
        st = lent_checked(p, "supports() or plan()", swa_plugin_plan(p, err), err);
    }
    if (st != SWA_OK) {
        free(p->qo_len);
        free(p);
        return st;
    }
    *plan = p;
    return SWA_OK;
}

static double ext_run_lse_base(const void *plan, const swa_run_opts *r)
{
    (void)r;
    return ((const ext_plan *)plan)->lse_base;
}

static swa_status ext_run(void *plan, void *dev_inputs, const swa_run_opts *r, const swa_out_args *o,
                          swa_error *err)
{
    ext_plan *p = plan;
    if (r && r->window_left_set && r->window_left != p->c->window_left)
        return swa_error_set(err, SWA_ERR_INVALID, "%s: run window_left=%d differs from the planned %d",
                             p->e->full_name, r->window_left, p->c->window_left);
    bool write_lse = r && r->return_lse && o->lse && p->e->b.lse_base != 0;
    p->problem.return_lse = write_lse;
    /* adapters and host-memory plug-ins read the host inputs; device-memory
     * plug-ins the case's device copy, dev_inputs */
    if (providers[p->e->provider].kind == EXT_ADAPTER)
        return swa_adapter_run(p, o, write_lse, err);
    return lent_checked(p, "run()", swa_plugin_run(p, dev_inputs, o, write_lse, err), err);
}

static void ext_free(void *plan)
{
    ext_plan *p = plan;
    if (!p)
        return;
    if (providers[p->e->provider].kind == EXT_PLUGIN)
        swa_plugin_plan_free(p);
    free(p->qo_len);
    free(p);
}

/* ---------------------------------------------------------------------------
 * registration */

static void stem_of(const char *path, char *buf, size_t n)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (strncmp(base, "lib", 3) == 0 && base[3])
        base += 3;
    snprintf(buf, n, "%s", base);
    char *dot = strchr(buf, '.');
    if (dot && dot != buf)
        *dot = '\0';
}

/* What the plug-in or adapter declared (ext_backend is the table's container). */
static unsigned ext_traits(const swa_backend *b, const swa_case *c)
{
    (void)c;
    return ((const ext_backend *)b)->traits;
}

static void init_table(ext_backend *e, int provider)
{
    e->provider = provider;
    e->b.api_version = SWA_BACKEND_API_VERSION;
    e->b.flag = 0;
    e->b.supports = ext_supports;
    e->b.plan = ext_plan_fn;
    e->b.run_lse_base = ext_run_lse_base;
    e->b.run = ext_run;
    e->b.free = ext_free;
    e->b.traits = ext_traits;
}

static swa_status add_provider(ext_kind kind, const char *name, const char *location, char *note, size_t note_size,
                               swa_error *err)
{
    if (num_providers == SWA_EXTERNAL_MAX || num_backends == SWA_EXTERNAL_MAX)
        return swa_error_set(err, SWA_ERR_INVALID, "at most %d plug-ins and adapters", SWA_EXTERNAL_MAX);
    if (strlen(location) >= sizeof providers[0].location) {
        /* kept cut, a plug-in path would be "not found" and an adapter
         * command another command: refuse it by name */
        char shown[200];
        swa_path_abbrev(location, shown, sizeof shown);
        return swa_error_set(err, SWA_ERR_INVALID, "%s %s is too long: at most %zu bytes",
                             kind == EXT_PLUGIN ? "path" : "command", shown, sizeof providers[0].location - 1);
    }
    int index = num_providers;
    ext_provider *prov = &providers[index];
    memset(prov, 0, sizeof *prov);
    prov->kind = kind;
    snprintf(prov->name, sizeof prov->name, "%s", name);
    snprintf(prov->location, sizeof prov->location, "%s", location);
    ext_backend found[SWA_EXTERNAL_MAX];
    memset(found, 0, sizeof found);
    int count = 0;
    char why[768] = "";
    int room = SWA_EXTERNAL_MAX - num_backends;
    swa_status st = kind == EXT_PLUGIN ? swa_plugin_probe(location, prov, found, room, &count, why, sizeof why)
                                       : swa_adapter_probe(prov, found, room, &count, why, sizeof why);
    /* the name is known only now: a plug-in's own name wins over its file's */
    char bad[300];
    if (swa_external_bad_name(kind == EXT_PLUGIN ? "the plug-in's name" : "the adapter's name", prov->name, bad,
                              sizeof bad))
        return swa_error_set(err, SWA_ERR_INVALID, "%s: %s%s", location, bad,
                             kind == EXT_PLUGIN ? " (name it in its swadiff_plugin table, or rename the file)" : "");
    for (int i = 0; i < num_providers; i++)
        if (strcmp(providers[i].name, prov->name) == 0)
            return swa_error_set(err, SWA_ERR_INVALID, "two plug-ins or adapters are named \"%s\": %s %s and %s %s "
                                 "(each would run every case under that name; give each plug-in once, and distinct "
                                 "plug-ins distinct names)", prov->name,
                                 providers[i].kind == EXT_PLUGIN ? "plug-in" : "adapter", providers[i].location,
                                 kind == EXT_PLUGIN ? "plug-in" : "adapter", location);
    num_providers++;
    if (st != SWA_OK || count == 0) {
        /* broken: one backend NS:* whose every result says why */
        ext_backend *e = &backends[num_backends];
        memset(e, 0, sizeof *e);
        init_table(e, index);
        snprintf(e->full_name, sizeof e->full_name, "%s:*", prov->name);
        char reason[sizeof e->load_error];
        snprintf(reason, sizeof reason, "%s %s: %s", kind == EXT_PLUGIN ? "plug-in" : "adapter", prov->name,
                 why[0] ? why : "declares no backend");
        memcpy(e->load_error, reason, sizeof reason);
        snprintf(e->description, sizeof e->description, "broken: %s", reason);
        e->b.name = e->full_name;
        e->b.description = e->description;
        backend_ptrs[num_backends++] = &e->b;
        if (note)
            snprintf(note, note_size, "%s", e->load_error);
        return SWA_OK;
    }
    for (int i = 0; i < count; i++) {
        ext_backend *e = &backends[num_backends];
        *e = found[i];
        init_table(e, index);
        char full[sizeof e->full_name];
        snprintf(full, sizeof full, "%s:%s", prov->name, found[i].backend_name);
        memcpy(e->full_name, full, sizeof full);
        e->b.name = e->full_name;
        e->b.description = e->description;
        backend_ptrs[num_backends++] = &e->b;
    }
    if (note)
        snprintf(note, note_size, "%s %s: %d backend(s)", kind == EXT_PLUGIN ? "plug-in" : "adapter", prov->name,
                 count);
    return SWA_OK;
}

swa_status swa_external_add_plugin(const char *path, char *note, size_t note_size, swa_error *err)
{
    char name[SWA_EXT_NAME_MAX + 2]; /* one over: a longer stem is refused, not cut */
    stem_of(path, name, sizeof name);
    return add_provider(EXT_PLUGIN, name, path, note, note_size, err);
}

swa_status swa_external_add_adapter(const char *name, const char *command, char *note, size_t note_size,
                                    swa_error *err)
{
    char bad[300];
    if (swa_external_bad_name("adapter name", name, bad, sizeof bad))
        return swa_error_set(err, SWA_ERR_INVALID, "%s", bad);
    if (!command || !*command)
        return swa_error_set(err, SWA_ERR_INVALID, "adapter %s: empty command", name);
    return add_provider(EXT_ADAPTER, name, command, note, note_size, err);
}

swa_status swa_external_add_adapter_from_registry(const char *registry_path, const char *name, char *note,
                                                  size_t note_size, swa_error *err)
{
    char bad[300];
    if (swa_external_bad_name("adapter name", name, bad, sizeof bad))
        return swa_error_set(err, SWA_ERR_INVALID, "%s", bad);
    FILE *f = fopen(registry_path, "rb");
    if (!f)
        return swa_error_set(err, SWA_ERR_IO, "adapter registry %s: %s (give --adapter %s=COMMAND, or "
                             "--adapters FILE)", registry_path, strerror(errno), name);
    char *text = malloc(1 << 20);
    size_t len = text ? fread(text, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    if (!text)
        return swa_error_set(err, SWA_ERR_NOMEM, "adapter registry %s: no memory", registry_path);
    text[len] = '\0';
    cJSON *root = cJSON_Parse(text);
    free(text);
    if (!root)
        return swa_error_set(err, SWA_ERR_INVALID, "adapter registry %s: not valid JSON", registry_path);
    const cJSON *all = cJSON_GetObjectItemCaseSensitive(root, "adapters");
    const cJSON *entry = cJSON_IsObject(all) ? cJSON_GetObjectItemCaseSensitive(all, name) : NULL;
    const cJSON *cmd = cJSON_IsObject(entry) ? cJSON_GetObjectItemCaseSensitive(entry, "command") : NULL;
    swa_status st;
    if (!cJSON_IsObject(all)) {
        st = swa_error_set(err, SWA_ERR_INVALID, "adapter registry %s: /adapters: expected an object of adapters",
                           registry_path);
    } else if (!entry) {
        char known[512] = "";
        size_t used = 0;
        for (const cJSON *a = all->child; a; a = a->next)
            used += (size_t)snprintf(known + used, used < sizeof known ? sizeof known - used : 0, "%s%s",
                                     used ? ", " : "", a->string);
        st = swa_error_set(err, SWA_ERR_INVALID, "adapter registry %s: no adapter \"%s\" (known: %s)",
                           registry_path, name, known);
    } else if (!cJSON_IsString(cmd) || !*cmd->valuestring) {
        st = swa_error_set(err, SWA_ERR_INVALID, "adapter registry %s: /adapters/%s/command: expected a string",
                           registry_path, name);
    } else {
        st = swa_external_add_adapter(name, cmd->valuestring, note, note_size, err);
    }
    cJSON_Delete(root);
    return st;
}

static size_t quote_into(char *buf, size_t n, size_t used, const char *s)
{
    used += (size_t)snprintf(buf + used, used < n ? n - used : 0, "'");
    for (; *s; s++)
        used += (size_t)snprintf(buf + used, used < n ? n - used : 0, *s == '\'' ? "'\\''" : "%c", *s);
    return used + (size_t)snprintf(buf + used, used < n ? n - used : 0, "'");
}

static bool provider_is_control(const ext_provider *p)
{
    return strncmp(p->name, SWA_CONTROL_PLUGIN_NAME, strlen(SWA_CONTROL_PLUGIN_NAME)) == 0 &&
           (p->kind == EXT_PLUGIN ? strcmp(p->location, SWA_CONTROL_LOCATION) == 0 : strstr(p->location, "#control") != NULL);
}

bool swa_external_is_control(const char *full_name)
{
    for (int i = 0; full_name && i < num_backends; i++)
        if (strcmp(backends[i].full_name, full_name) == 0)
            return provider_is_control(&providers[backends[i].provider]);
    return false;
}

int swa_external_kind(const char *full_name)
{
    for (int i = 0; full_name && i < num_backends; i++)
        if (strcmp(backends[i].full_name, full_name) == 0)
            return providers[backends[i].provider].kind == EXT_PLUGIN ? 0 : 1;
    return -1;
}

static bool provider_named(const char *name)
{
    for (int i = 0; i < num_providers; i++)
        if (strcmp(providers[i].name, name) == 0)
            return true;
    return false;
}

swa_status swa_external_add_controls(bool plugin, bool adapter, char *note, size_t note_size, swa_error *err)
{
    if (note && note_size)
        note[0] = '\0';
    if (plugin && !provider_named(SWA_CONTROL_PLUGIN_NAME)) {
        swa_status st = add_provider(EXT_PLUGIN, SWA_CONTROL_PLUGIN_NAME, SWA_CONTROL_LOCATION, NULL, 0, err);
        if (st != SWA_OK)
            return st;
    }
    if (!adapter)
        return SWA_OK;
    char dir[1024];
    swa_adapter_helper_dir(dir, sizeof dir);
    if (!dir[0]) {
        if (note)
            snprintf(note, note_size, "the adapters' folder (swadiff_adapter.py, numpy_exact.py) was not found: "
                     "set SWADIFF_ADAPTER_DIR");
        return SWA_OK;
    }
    static const char *const names[2] = {SWA_CONTROL_PLUGIN_NAME "_numpy", SWA_CONTROL_PLUGIN_NAME "_numpy_short"};
    static const char *const files[2] = {"numpy_exact.py", "numpy_wrong_window.py"};
    for (int i = 0; i < 2; i++) {
        if (provider_named(names[i]))
            continue;
        char path[1200], cmd[1400] = "${SWADIFF_PYTHON:-python3} ";
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        size_t used = quote_into(cmd, sizeof cmd, strlen(cmd), path);
        snprintf(cmd + used, used < sizeof cmd ? sizeof cmd - used : 0, " #control");
        swa_status st = add_provider(EXT_ADAPTER, names[i], cmd, NULL, 0, err);
        if (st != SWA_OK)
            return st;
    }
    return SWA_OK;
}

void swa_external_options(char *buf, size_t n)
{
    size_t used = 0;
    if (n)
        buf[0] = '\0';
    for (int i = 0; i < num_providers; i++) {
        if (provider_is_control(&providers[i])) /* registered by the run itself */
            continue;
        if (providers[i].kind == EXT_PLUGIN) {
            used += (size_t)snprintf(buf + used, used < n ? n - used : 0, " --plugin ");
            used = quote_into(buf, n, used, providers[i].location);
        } else {
            char spec[1200];
            snprintf(spec, sizeof spec, "%s=%s", providers[i].name, providers[i].location);
            used += (size_t)snprintf(buf + used, used < n ? n - used : 0, " --adapter ");
            used = quote_into(buf, n, used, spec);
        }
    }
}

void swa_external_set_reply_timeout(double seconds) { swa_adapter_reply_timeout = seconds; }

void swa_external_stop_adapters(void) { swa_adapter_reset(); }

void swa_external_reset(void)
{
    swa_adapter_reset();
    num_providers = 0;
    num_backends = 0;
}
