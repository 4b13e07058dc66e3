/* case_file.c — loading case files from disk (a file or a folder tree) and
 * writing one expanded case back as a standalone case file (what
 * `swadiff shrink` saves).
 *
 * Test: tests/test_case_sweep.c (load_path, write/reload round trip). */
#include "harness/case_load.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CASE_FILE_MAX_BYTES (64u << 20)
#define FOLDER_DEPTH_MAX 32

/* ---------------------------------------------------------------------------
 * reading from disk */

/* An error with no position (line 0): the file could not be read at all. */
static void io_error(swa_load_error *err, const char *path, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static void io_error(swa_load_error *err, const char *path, const char *fmt, ...)
{
    memset(err, 0, sizeof *err);
    /* a path too long for swadiff is shown by its ends (300 bytes), so the
     * message after it is whole */
    swa_path_abbrev(path, err->file, strlen(path) < sizeof err->file ? sizeof err->file : 300);
    snprintf(err->path, sizeof err->path, "/");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
}

static int load_file(const char *path, swa_case_list *list, swa_load_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        io_error(err, path, "cannot open the case file: %s", strerror(errno));
        return -1;
    }
    size_t cap = 4096, len = 0;
    char *text = malloc(cap);
    while (text) {
        if (len == cap) {
            if (cap >= CASE_FILE_MAX_BYTES) {
                free(text);
                fclose(f);
                io_error(err, path, "expected a case file of at most %s", "64 MiB");
                return -1;
            }
            char *grown = realloc(text, cap * 2);
            if (!grown) {
                free(text);
                text = NULL;
                break;
            }
            text = grown;
            cap *= 2;
        }
        size_t got = fread(text + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    if (!text) {
        fclose(f);
        io_error(err, path, "out of memory reading the case file%s", "");
        return -1;
    }
    if (ferror(f)) {
        int e = errno;
        free(text);
        fclose(f);
        io_error(err, path, "cannot read the case file: %s", strerror(e));
        return -1;
    }
    fclose(f);
    int rc = swa_case_parse(path, text, len, list, err);
    free(text);
    return rc;
}

typedef struct path_list {
    char **paths;
    size_t count, capacity;
} path_list;

static int path_list_add(path_list *pl, const char *path)
{
    if (pl->count == pl->capacity) {
        size_t cap = pl->capacity ? pl->capacity * 2 : 32;
        char **p = realloc(pl->paths, cap * sizeof *p);
        if (!p)
            return -1;
        pl->paths = p;
        pl->capacity = cap;
    }
    if (!(pl->paths[pl->count] = strdup(path)))
        return -1;
    pl->count++;
    return 0;
}

static void path_list_free(path_list *pl)
{
    for (size_t i = 0; i < pl->count; i++)
        free(pl->paths[i]);
    free(pl->paths);
}

static int compare_paths(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Collects *.json under dir; skips hidden entries and folders named
 * "schema" (the JSON Schema lives next to the cases). */
static int collect(const char *dir, int depth, path_list *pl, swa_load_error *err)
{
    if (depth > FOLDER_DEPTH_MAX) {
        io_error(err, dir, "expected case folders nested at most %s deep (a symlink loop?)", "32");
        return -1;
    }
    DIR *d = opendir(dir);
    if (!d) {
        io_error(err, dir, "cannot open the case folder: %s", strerror(errno));
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[SWA_PATH_MAX];
        int len = snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (len >= (int)sizeof path) {
            /* only a folder or a case file that would be loaded counts */
            size_t n = strlen(e->d_name);
            if (fstatat(dirfd(d), e->d_name, &st, 0) != 0 ||
                !((S_ISDIR(st.st_mode) && strcmp(e->d_name, "schema") != 0) ||
                  (S_ISREG(st.st_mode) && n > 5 && strcmp(e->d_name + n - 5, ".json") == 0)))
                continue;
            io_error(err, dir, "the path of %.200s%s in this folder is %d bytes: expected case file paths of at most "
                     "%d bytes (give a shorter or relative path)", e->d_name, n > 200 ? "..." : "", len,
                     SWA_PATH_MAX - 1);
            rc = -1;
            break;
        }
        if (stat(path, &st) != 0)
            continue; /* dangling symlink: nothing to load */
        if (S_ISDIR(st.st_mode)) {
            if (strcmp(e->d_name, "schema") != 0)
                rc = collect(path, depth + 1, pl, err);
        } else if (S_ISREG(st.st_mode)) {
            size_t n = strlen(e->d_name);
            if (n > 5 && strcmp(e->d_name + n - 5, ".json") == 0 && path_list_add(pl, path)) {
                io_error(err, dir, "out of memory listing %s", dir);
                rc = -1;
            }
        }
    }
    closedir(d);
    return rc;
}

int swa_case_load_path(const char *path, swa_case_list *list, swa_load_error *err)
{
    /* every case keeps its file's path (reproduce commands, reports, explain
     * and shrink read it again): a longer one would be kept cut, and then
     * "not found" */
    if (strlen(path) >= SWA_PATH_MAX) {
        io_error(err, path, "expected a case file or folder path of at most %d bytes, got %zu (give a shorter or "
                 "relative path)", SWA_PATH_MAX - 1, strlen(path));
        return -1;
    }
    struct stat st;
    if (stat(path, &st) != 0) {
        io_error(err, path, "cannot open the case file or folder: %s", strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode))
        return load_file(path, list, err);

    char root[SWA_PATH_MAX];
    snprintf(root, sizeof root, "%s", path);
    size_t n = strlen(root);
    while (n > 1 && root[n - 1] == '/')
        root[--n] = '\0';
    path_list pl = {NULL, 0, 0};
    if (collect(root, 0, &pl, err)) {
        path_list_free(&pl);
        return -1;
    }
    if (pl.count == 0) {
        path_list_free(&pl);
        io_error(err, path, "expected *.json case files in this folder, found %s", "none");
        return -1;
    }
    qsort(pl.paths, pl.count, sizeof *pl.paths, compare_paths);
    /* all or nothing: undo the files loaded before a failing one */
    int first_new = list->count;
    for (size_t i = 0; i < pl.count; i++) {
        if (load_file(pl.paths[i], list, err)) {
            for (int c = first_new; c < list->count; c++)
                swa_case_free(&list->cases[c]);
            list->count = first_new;
            path_list_free(&pl);
            return -1;
        }
    }
    path_list_free(&pl);
    return 0;
}

/* ---------------------------------------------------------------------------
 * writing one case back */

static cJSON *case_to_json(const swa_case *c)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    char text[SWA_ID_MAX + 64];
    cJSON_AddStringToObject(o, "name", c->name);
    snprintf(text, sizeof text, "expanded from %s", c->id);
    cJSON_AddStringToObject(o, "description", text);
    cJSON *requests = cJSON_AddArrayToObject(o, "requests");
    /* consecutive equal requests fold back into one entry with a count */
    for (int r = 0; requests && r < c->num_requests;) {
        int run = 1;
        while (r + run < c->num_requests && c->qo_len[r + run] == c->qo_len[r] && c->kv_len[r + run] == c->kv_len[r])
            run++;
        cJSON *req = cJSON_CreateObject();
        if (!req || !cJSON_AddItemToArray(requests, req)) {
            cJSON_Delete(req);
            cJSON_Delete(o);
            return NULL;
        }
        cJSON_AddNumberToObject(req, "qo_len", c->qo_len[r]);
        cJSON_AddNumberToObject(req, "kv_len", c->kv_len[r]);
        if (run > 1)
            cJSON_AddNumberToObject(req, "count", run);
        r += run;
    }
    cJSON_AddNumberToObject(o, "num_qo_heads", c->num_qo_heads);
    cJSON_AddNumberToObject(o, "num_kv_heads", c->num_kv_heads);
    cJSON_AddNumberToObject(o, "head_dim", c->head_dim);
    cJSON_AddStringToObject(o, "dtype", swa_dtype_name(c->dtype));
    cJSON_AddNumberToObject(o, "page_size", c->page_size);
    cJSON_AddStringToObject(o, "layout", swa_layout_name(c->layout));
    cJSON_AddStringToObject(o, "kv_mode", c->kv_mode == SWA_KV_RAGGED ? "ragged" : "paged");
    cJSON_AddBoolToObject(o, "causal", c->causal);
    if (c->num_layers > 0) { /* every layer: the file expands to one record per layer again */
        cJSON *layers = cJSON_AddArrayToObject(o, "layers");
        for (int l = 0; layers && l < c->num_layers; l++) {
            cJSON *layer = cJSON_CreateObject();
            if (layer) {
                cJSON_AddNumberToObject(layer, "window_left", c->layer_window_left[l]);
                cJSON_AddItemToArray(layers, layer);
            }
        }
    } else {
        cJSON_AddNumberToObject(o, "window_left", c->window_left);
    }
    if (!c->causal)
        cJSON_AddNumberToObject(o, "window_right", c->window_right);
    if (c->chunk_size > 0)
        cJSON_AddNumberToObject(o, "attention_chunk_size", c->chunk_size);
    cJSON_AddNumberToObject(o, "soft_cap", c->soft_cap);
    cJSON_AddNumberToObject(o, "sm_scale", c->sm_scale);
    cJSON *backends = cJSON_AddArrayToObject(o, "backends");
    for (int b = 0; backends && b < SWA_BACKEND_COUNT; b++)
        if (c->backends & (1u << b))
            cJSON_AddItemToArray(backends, cJSON_CreateString(swa_backend_names[b]));
    if (c->tol.mode != SWA_TOL_DEFAULT || c->tol.lse_atol >= 0 || c->tol.equal_nan) {
        cJSON *tol = cJSON_AddObjectToObject(o, "tolerance");
        if (tol && c->tol.mode == SWA_TOL_ABS_REL) {
            cJSON_AddNumberToObject(tol, "atol", c->tol.atol);
            cJSON_AddNumberToObject(tol, "rtol", c->tol.rtol);
        } else if (tol && c->tol.mode == SWA_TOL_BASELINE) {
            cJSON_AddStringToObject(tol, "mode", "baseline");
            cJSON_AddNumberToObject(tol, "factor", c->tol.factor);
        }
        if (tol && c->tol.lse_atol >= 0)
            cJSON_AddNumberToObject(tol, "lse_atol", c->tol.lse_atol);
        if (tol && c->tol.equal_nan)
            cJSON_AddTrueToObject(tol, "equal_nan");
    }
    cJSON_AddStringToObject(o, "data", swa_dist_names[c->dist]);
    /* a raw token: a double would round seeds above 2^53 */
    snprintf(text, sizeof text, "%llu", (unsigned long long)c->seed);
    cJSON_AddRawToObject(o, "seed", text);
    cJSON_AddBoolToObject(o, "cuda_graph", c->cuda_graph);
    if (c->cuda_graph)
        cJSON_AddNumberToObject(o, "graph_capture_requests", c->graph_capture_requests);
    cJSON_AddBoolToObject(o, "return_lse", c->return_lse);
    if (c->deterministic)
        cJSON_AddTrueToObject(o, "deterministic");
    if (c->invariance) {
        cJSON *inv = cJSON_AddArrayToObject(o, "invariance");
        for (int i = 0; swa_invariance_names[i]; i++)
            if (c->invariance & (1u << i))
                cJSON_AddItemToArray(inv, cJSON_CreateString(swa_invariance_names[i]));
    }
    if (c->expect_error[0])
        cJSON_AddStringToObject(o, "expect_error", c->expect_error);
    /* only the backends the written case runs: the loader refuses others */
    cJSON *skips = NULL;
    for (int b = 0; b < SWA_BACKEND_COUNT; b++)
        if (c->expect_skip[b][0] && (c->backends & (1u << b))) {
            if (!skips)
                skips = cJSON_AddObjectToObject(o, "expect_skip");
            if (skips)
                cJSON_AddStringToObject(skips, swa_backend_names[b], c->expect_skip[b]);
        }
    return o;
}

int swa_case_write_json(const swa_case *c, const char *path, swa_error *err)
{
    cJSON *o = case_to_json(c);
    char *text = o ? cJSON_Print(o) : NULL;
    cJSON_Delete(o);
    if (!text)
        return swa_error_set(err, SWA_ERR_NOMEM, "out of memory writing case %s", c->id), -1;
    FILE *f = fopen(path, "w");
    if (!f) {
        int e = errno;
        free(text);
        return swa_error_set(err, SWA_ERR_IO, "%s: cannot write the case file: %s", path, strerror(e)), -1;
    }
    bool ok = fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    ok = (fclose(f) == 0) && ok;
    free(text);
    if (!ok)
        return swa_error_set(err, SWA_ERR_IO, "%s: cannot write the case file: %s", path, strerror(errno)), -1;
    return 0;
}
