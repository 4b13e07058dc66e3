/* plugin.c — C plug-ins (include/swadiff/plugin.h): the probe that learns a
 * plug-in's backends in a forked child, the lazy load inside the worker,
 * and plan/run through the plug-in's table.
 *
 * Why a forked probe: a plug-in's constructors or entry point may crash,
 * hang or initialise a GPU runtime; the harness process must survive all
 * three (and must not initialise CUDA before it forks its workers).
 *
 * Test: tests/test_external.c (the fixtures of tests/plugins/). */
#include "backends/external/external_internal.h"

#include <dlfcn.h>
#include <stddef.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PROBE_SECONDS 30

/* Bytes of one swadiff_plugin_backend in a table of ABI version v: fields
 * are only appended, so a version-1 entry ends where `tiles` begins and a
 * version-2 entry where `invariance` begins (every field is
 * pointer-aligned there, so no padding differs). */
static size_t backend_stride(uint32_t v)
{
    return v == 1 ? offsetof(swadiff_plugin_backend, tiles)
           : v == 2 ? offsetof(swadiff_plugin_backend, invariance)
                    : sizeof(swadiff_plugin_backend);
}

/* Backend i of a validated-version table, widened to this header's layout
 * (fields the plug-in's version lacks are zero). */
static void backend_at(const swadiff_plugin *pl, int i, swadiff_plugin_backend *out)
{
    size_t stride = backend_stride(pl->abi_version);
    memset(out, 0, sizeof *out);
    memcpy(out, (const char *)pl->backends + (size_t)i * stride, stride);
}

/* NULL, or what is wrong with a declared tile shape. */
static const char *bad_tiles(const swadiff_tile_shape *t, char *buf, size_t n)
{
    swa_tile_shape s;
    memset(&s, 0, sizeof s);
    s.num_q_rows = t->num_q_rows;
    s.num_kv_keys = t->num_kv_keys;
    s.gqa_packed = t->gqa_packed;
    for (int i = 0; i < SWA_TILE_SHAPES_MAX; i++) { /* the ABI's arrays hold 4 as well */
        s.q_rows[i] = t->q_rows[i];
        s.kv_keys[i] = t->kv_keys[i];
    }
    return swa_tile_shape_check(&s, buf, n);
}

/* Loads path and validates its table.  Returns the table or NULL with why. */
static const swadiff_plugin *load(const char *path, void **handle, char *why, size_t n)
{
    const swadiff_plugin *pl;
    if (strcmp(path, SWA_CONTROL_LOCATION) == 0) { /* built in: the same checks as a file's table */
        *handle = NULL;
        pl = swa_control_plugin();
        goto validate;
    }
    *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!*handle) {
        snprintf(why, n, "cannot load %s: %s", path, dlerror());
        return NULL;
    }
    dlerror();
    void *sym = dlsym(*handle, SWADIFF_PLUGIN_ENTRY);
    if (!sym) {
        snprintf(why, n, "%s exports no %s() (declare it with SWADIFF_PLUGIN_EXPORT, see "
                 "include/swadiff/plugin.h)", path, SWADIFF_PLUGIN_ENTRY);
        return NULL;
    }
    swadiff_plugin_entry_fn entry;
    memcpy(&entry, &sym, sizeof entry);
    pl = entry();
    if (!pl) {
        snprintf(why, n, "%s: %s() returned NULL", path, SWADIFF_PLUGIN_ENTRY);
        return NULL;
    }
validate:
    if (pl->abi_version < SWADIFF_PLUGIN_ABI_OLDEST || pl->abi_version > SWADIFF_PLUGIN_ABI_VERSION) {
        snprintf(why, n, "%s: built for plug-in ABI version %u, this swadiff speaks versions %d to %d (rebuild "
                 "it against this swadiff's include/swadiff/plugin.h)", path, pl->abi_version,
                 SWADIFF_PLUGIN_ABI_OLDEST, SWADIFF_PLUGIN_ABI_VERSION);
        return NULL;
    }
    if (pl->num_backends < 1 || pl->num_backends > SWA_EXTERNAL_MAX || !pl->backends) {
        snprintf(why, n, "%s: num_backends is %d (expected 1..%d with a backends array)", path, pl->num_backends,
                 SWA_EXTERNAL_MAX);
        return NULL;
    }
    char name_why[300];
    if (pl->name && *pl->name && swa_external_bad_name("the plug-in's name", pl->name, name_why, sizeof name_why)) {
        snprintf(why, n, "%s: %s", path, name_why);
        return NULL;
    }
    for (int i = 0; i < pl->num_backends; i++) {
        swadiff_plugin_backend entry;
        backend_at(pl, i, &entry);
        const swadiff_plugin_backend *b = &entry;
        char tiles_why[300];
        const char *bad = swa_external_bad_name("its name", b->name, tiles_why, sizeof tiles_why);
        if (bad) {
            snprintf(why, n, "%s: backend %d: %s", path, i, bad);
            return NULL;
        }
        if (!bad && !b->run)
            bad = "has no run()";
        if (!bad && (b->plan != NULL) != (b->plan_free != NULL))
            bad = "has plan() without plan_free() or the reverse";
        if (!bad && b->memory != SWADIFF_MEM_HOST && b->memory != SWADIFF_MEM_CUDA && b->memory != SWADIFF_MEM_HIP)
            bad = "declares an unknown memory kind";
        if (!bad && pl->abi_version < 2 && b->memory != SWADIFF_MEM_HOST)
            bad = "declares device memory in plug-in ABI version 1, which has no stream or device field (rebuild it "
                  "against this swadiff's include/swadiff/plugin.h, version 2)";
        if (!bad && b->tiles)
            bad = bad_tiles(b->tiles, tiles_why, sizeof tiles_why);
        if (!bad && (b->invariance & ~(SWADIFF_INVARIANCE_DETERMINISTIC | SWADIFF_INVARIANCE_BATCH)))
            bad = "declares unknown invariance bits (expected SWADIFF_INVARIANCE_DETERMINISTIC and "
                  "SWADIFF_INVARIANCE_BATCH only)";
        if (bad) {
            snprintf(why, n, "%s: backend %d (\"%s\") %s", path, i, b->name, bad);
            return NULL;
        }
    }
    return pl;
}

/* ---------------------------------------------------------------------------
 * probe: the child writes one line per backend "name\tmemory\tlse_base\tdescription"
 * or "!reason", then exits. */

static ssize_t read_some(int fd, char *buf, size_t n, double deadline)
{
    size_t used = 0;
    while (used < n) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        double left = deadline - (ts.tv_sec + ts.tv_nsec * 1e-9);
        if (left <= 0)
            return -2;
        struct pollfd p = {fd, POLLIN, 0};
        int r = poll(&p, 1, (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            continue;
        ssize_t got = read(fd, buf + used, n - used);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        used += (size_t)got;
    }
    return (ssize_t)used;
}

swa_status swa_plugin_probe(const char *path, ext_provider *prov, ext_backend *out, int max, int *count,
                            char *why, size_t n)
{
    *count = 0;
    int fds[2];
    if (pipe(fds) != 0) {
        snprintf(why, n, "pipe: %s", strerror(errno));
        return SWA_ERR_IO;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(why, n, "fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return SWA_ERR_IO;
    }
    if (pid == 0) {
        close(fds[0]);
        FILE *w = fdopen(fds[1], "w");
        void *h;
        char reason[700] = "";
        const swadiff_plugin *pl = load(path, &h, reason, sizeof reason);
        if (!pl) {
            fprintf(w, "!%s\n", reason);
        } else {
            fprintf(w, "=%s\n", pl->name && *pl->name ? pl->name : "");
            for (int i = 0; i < pl->num_backends; i++) {
                swadiff_plugin_backend entry;
                backend_at(pl, i, &entry);
                const swadiff_plugin_backend *b = &entry;
                char desc[200];
                snprintf(desc, sizeof desc, "%s", b->description ? b->description : "");
                for (char *c = desc; *c; c++)
                    if (*c == '\n' || *c == '\t')
                        *c = ' ';
                const swadiff_tile_shape none = {0, {0}, -1, 0, {0}}, *t = b->tiles ? b->tiles : &none;
                fprintf(w, "%s\t%d\t%.17g\t%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d\t%u\t%s\n", b->name, (int)b->memory,
                        b->lse_base, t->num_q_rows, t->q_rows[0], t->q_rows[1], t->q_rows[2], t->q_rows[3],
                        t->gqa_packed, t->num_kv_keys, t->kv_keys[0], t->kv_keys[1], t->kv_keys[2], t->kv_keys[3],
                        (unsigned)b->invariance, desc);
            }
        }
        fclose(w);
        _exit(0);
    }
    close(fds[1]);
    static char text[64 * 512];
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ssize_t got = read_some(fds[0], text, sizeof text - 1, ts.tv_sec + ts.tv_nsec * 1e-9 + PROBE_SECONDS);
    close(fds[0]);
    if (got == -2)
        kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (got == -2) {
        snprintf(why, n, "loading %s did not finish within %d s (a constructor or the entry point hangs)", path,
                 PROBE_SECONDS);
        return SWA_ERR_TIMEOUT;
    }
    text[got > 0 ? got : 0] = '\0';
    if (WIFSIGNALED(status)) {
        snprintf(why, n, "loading %s crashed (signal %d, %s)", path, WTERMSIG(status), strsignal(WTERMSIG(status)));
        return SWA_ERR_DEVICE;
    }
    if (text[0] == '!') {
        char *nl = strchr(text, '\n');
        if (nl)
            *nl = '\0';
        snprintf(why, n, "%s", text + 1);
        return SWA_ERR_INVALID;
    }
    if (text[0] != '=') {
        snprintf(why, n, "loading %s gave no answer (exit status %d)", path,
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        return SWA_ERR_INVALID;
    }
    char *line = text + 1, *nl = strchr(line, '\n');
    if (!nl)
        return SWA_ERR_INVALID;
    *nl = '\0';
    if (*line) /* the plug-in's own name wins over the file stem */
        snprintf(prov->name, sizeof prov->name, "%s", line); /* validated in the child */
    for (line = nl + 1; *line && *count < max; line = nl + 1) {
        nl = strchr(line, '\n');
        if (!nl)
            break;
        *nl = '\0';
        ext_backend *e = &out[*count];
        memset(e, 0, sizeof *e);
        char *f1 = strchr(line, '\t'), *f2 = f1 ? strchr(f1 + 1, '\t') : NULL, *f3 = f2 ? strchr(f2 + 1, '\t') : NULL;
        char *f4 = f3 ? strchr(f3 + 1, '\t') : NULL, *f5 = f4 ? strchr(f4 + 1, '\t') : NULL;
        if (!f5)
            break;
        *f1 = *f2 = *f3 = *f4 = *f5 = '\0';
        snprintf(e->backend_name, sizeof e->backend_name, "%s", line);
        e->memory = atoi(f1 + 1);
        e->b.lse_base = strtod(f2 + 1, NULL);
        swa_tile_shape *t = &e->tiles;
        if (sscanf(f3 + 1, "%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d", &t->num_q_rows, &t->q_rows[0], &t->q_rows[1],
                   &t->q_rows[2], &t->q_rows[3], &t->gqa_packed, &t->num_kv_keys, &t->kv_keys[0], &t->kv_keys[1],
                   &t->kv_keys[2], &t->kv_keys[3]) != 11)
            break;
        unsigned inv = (unsigned)strtoul(f4 + 1, NULL, 10);
        e->traits = ((inv & SWADIFF_INVARIANCE_DETERMINISTIC) ? SWA_TRAIT_DETERMINISTIC : 0u) |
                    ((inv & SWADIFF_INVARIANCE_BATCH) ? SWA_TRAIT_BATCH_INVARIANT : 0u);
        snprintf(e->description, sizeof e->description, "%s", f5 + 1);
        (*count)++;
    }
    return SWA_OK;
}

/* ---------------------------------------------------------------------------
 * in the worker */

typedef struct loaded {
    char path[1024];
    void *handle;
    const swadiff_plugin *table;
    swadiff_plugin_backend backends[SWA_EXTERNAL_MAX]; /* table's, in this header's layout */
    char error[768];
} loaded;
static loaded cache[SWA_EXTERNAL_MAX];
static int num_cached;

static const swadiff_plugin_backend *plugin_backend(const ext_plan *p, swa_error *err)
{
    const ext_provider *prov = p->prov;
    loaded *l = NULL;
    for (int i = 0; i < num_cached; i++)
        if (strcmp(cache[i].path, prov->location) == 0)
            l = &cache[i];
    if (!l) {
        if (num_cached == SWA_EXTERNAL_MAX) {
            swa_error_set(err, SWA_ERR_INVALID, "too many plug-ins");
            return NULL;
        }
        l = &cache[num_cached++];
        memset(l, 0, sizeof *l);
        snprintf(l->path, sizeof l->path, "%s", prov->location);
        l->table = load(prov->location, &l->handle, l->error, sizeof l->error);
        for (int i = 0; l->table && i < l->table->num_backends; i++)
            backend_at(l->table, i, &l->backends[i]);
    }
    if (!l->table) {
        swa_error_set(err, SWA_ERR_INVALID, "plug-in %s: %s", prov->name, l->error);
        return NULL;
    }
    for (int i = 0; i < l->table->num_backends; i++)
        if (strcmp(l->backends[i].name, p->e->backend_name) == 0)
            return &l->backends[i];
    swa_error_set(err, SWA_ERR_INVALID, "plug-in %s no longer has a backend \"%s\"", prov->name, p->e->backend_name);
    return NULL;
}

static swa_status rc_status(swadiff_rc rc, const ext_plan *p, const char *what, const char *msg, swa_error *err)
{
    if (rc == SWADIFF_RC_OK)
        return SWA_OK;
    if (rc == SWADIFF_RC_UNSUPPORTED)
        return swa_error_set(err, SWA_ERR_UNSUPPORTED, "%s: %s", p->e->full_name,
                             msg[0] ? msg : "unsupported (no reason given)");
    return swa_error_set(err, SWA_ERR_INVALID, "%s: %s failed: %s", p->e->full_name, what,
                         msg[0] ? msg : (rc == SWADIFF_RC_ERROR ? "no message" : "unknown return code"));
}

const char *swa_plugin_memory_unsupported(int memory, const swa_device_ops *dev, char *buf, size_t n)
{
    if (memory == SWADIFF_MEM_HOST)
        return NULL;
    const char *want = memory == SWADIFF_MEM_CUDA ? "cuda" : "hip";
    swa_device kind = memory == SWADIFF_MEM_CUDA ? SWA_DEVICE_CUDA : SWA_DEVICE_HIP;
    if (!dev || dev->kind != kind) {
        snprintf(buf, n, "declares %s memory: run with --device %s (this run's device is %s)",
                 memory == SWADIFF_MEM_CUDA ? "CUDA" : "HIP", want, dev ? dev->name : "none");
        return buf;
    }
    if (!dev->external_run) {
        snprintf(buf, n, "declares %s memory, and this swadiff's %s device hands out none", want, dev->name);
        return buf;
    }
    return NULL;
}

/* supports() then plan(), on the problem run will see. */
static swa_status plan_with(ext_plan *p, const swadiff_plugin_backend *b, swa_error *err)
{
    char msg[512] = "";
    if (b->supports) {
        swa_status st = rc_status(b->supports(&p->problem, msg, sizeof msg), p, "supports()", msg, err);
        if (st != SWA_OK)
            return st;
    }
    if (b->plan) {
        msg[0] = '\0';
        return rc_status(b->plan(&p->problem, &p->provider_plan, msg, sizeof msg), p, "plan()", msg, err);
    }
    return SWA_OK;
}

swa_status swa_plugin_plan(ext_plan *p, swa_error *err)
{
    const swadiff_plugin_backend *b = plugin_backend(p, err);
    if (!b)
        return err->status;
    if (b->memory != p->e->memory) /* the probe and the worker's load disagree */
        return swa_error_set(err, SWA_ERR_INVALID, "plug-in %s: backend %s declared memory %d when probed and %d "
                             "when loaded", p->prov->name, p->e->backend_name, p->e->memory, (int)b->memory);
    /* device memory: supports() and plan() see the device problem, which
     * exists only once the case is on the device (swa_plugin_run) */
    return b->memory == SWADIFF_MEM_HOST ? plan_with(p, b, err) : SWA_OK;
}

static swa_status run_with(ext_plan *p, const swadiff_plugin_backend *b, void *out, float *lse, swa_error *err)
{
    swadiff_output o = {sizeof o, out, lse};
    char msg[512] = "";
    return rc_status(b->run(p->provider_plan, &p->problem, &o, msg, sizeof msg), p, "run()", msg, err);
}

typedef struct device_call {
    ext_plan *p;
    const swadiff_plugin_backend *b;
} device_call;

/* The device's callback: the problem in device memory, then the plug-in's
 * supports() and plan() (the first time) and run(). */
static swa_status on_device(void *ctx, const swa_device_view *v, void *out, float *lse, swa_error *err)
{
    device_call *dc = ctx;
    swadiff_problem *q = &dc->p->problem;
    q->memory = dc->b->memory;
    q->q = v->q;
    q->k = v->k_ragged;
    q->v = v->v_ragged;
    q->k_cache = v->k_pages;
    q->v_cache = v->v_pages;
    q->qo_indptr_dev = v->qo_indptr;
    q->kv_seq_indptr_dev = v->kv_indptr;
    q->kv_indptr_dev = v->page_indptr;
    q->kv_indices_dev = v->page_indices;
    q->kv_last_page_len_dev = v->last_page_len;
    q->block_tables_dev = v->block_tables;
    q->context_lens_dev = v->context_lens;
    q->stream = v->stream;
    q->device = v->device;
    if (!dc->p->planned) {
        swa_status st = plan_with(dc->p, dc->b, err);
        if (st != SWA_OK)
            return st;
        dc->p->planned = true;
    }
    return run_with(dc->p, dc->b, out, lse, err);
}

swa_status swa_plugin_run(ext_plan *p, void *dev_inputs, const swa_out_args *o, bool write_lse, swa_error *err)
{
    const swadiff_plugin_backend *b = plugin_backend(p, err);
    if (!b)
        return err->status;
    if (b->memory == SWADIFF_MEM_HOST)
        return run_with(p, b, o->out, write_lse ? o->lse : NULL, err);
    char why[256];
    if (swa_plugin_memory_unsupported(b->memory, p->device, why, sizeof why)) /* planned for another device */
        return swa_error_set(err, SWA_ERR_UNSUPPORTED, "%s %s", p->e->full_name, why);
    device_call dc = {p, b};
    return p->device->external_run(dev_inputs, p->in, o, write_lse, p->e->full_name, on_device, &dc, err);
}

void swa_plugin_plan_free(ext_plan *p)
{
    if (!p->provider_plan)
        return;
    swa_error err = {0};
    const swadiff_plugin_backend *b = plugin_backend(p, &err);
    if (b && b->plan_free)
        b->plan_free(p->provider_plan);
    p->provider_plan = NULL;
}
