/* dump.c — `--dump DIR` writer: .npy v1.0 tensors and meta.json per case
 * (layout and folder-name mapping in dump.h).
 *
 * Tested by tests/test_dump.c: ctest --test-dir build -R test_dump.
 *
 * The .npy writer emits bytes explicitly little-endian, so the files are
 * the same on any host. */
#include "harness/dump.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* ------------------------------------------------------------------------- */
/* Names. */

static uint64_t dump_fnv1a64(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ULL;
    }
    return h;
}

static bool dump_safe_byte(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '.' || ch == '_' || ch == ',' || ch == '=' || ch == '+' || ch == '-';
}

void swa_dump_dir_name(const char *id, char *buf, size_t n)
{
    if (n == 0)
        return;
    if (!id || !*id) {
        snprintf(buf, n, "case");
        return;
    }
    char name[4 * SWA_ID_MAX + 4];
    size_t len = 0;
    for (const char *p = id; *p && len + 4 < sizeof name; p++) {
        unsigned char ch = (unsigned char)*p;
        if (ch == '/') {
            name[len++] = '_'; name[len++] = '_';
        } else if (ch == ':') {
            name[len++] = '-'; name[len++] = '-';
        } else if (dump_safe_byte(ch) && !(p == id && ch == '.')) {
            name[len++] = (char)ch;
        } else {
            len += (size_t)snprintf(name + len, 4, "%%%02X", ch);
        }
    }
    name[len] = 0;
    bool overlong = len > SWA_DUMP_NAME_MAX || strlen(id) >= sizeof name / 4;
    if (overlong) {
        /* cut on a whole escape so the kept prefix stays readable */
        size_t cut = SWA_DUMP_NAME_MAX;
        if (cut > len) cut = len;
        if (cut >= 1 && name[cut - 1] == '%') cut -= 1;
        else if (cut >= 2 && name[cut - 2] == '%') cut -= 2;
        snprintf(buf, n, "%.*s~%016llx", (int)cut, name, (unsigned long long)dump_fnv1a64(id));
    } else {
        snprintf(buf, n, "%s", name);
    }
}

/* mkdir -p */
static swa_status dump_mkdirs(const char *path, swa_error *err)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp)
        return swa_error_set(err, SWA_ERR_IO, "dump: path too long: %s", path);
    for (char *p = tmp + 1; ; p++) {
        if (*p == '/' || *p == 0) {
            char saved = *p;
            *p = 0;
            if (mkdir(tmp, 0777) != 0 && errno != EEXIST)
                return swa_error_set(err, SWA_ERR_IO, "dump: cannot create folder %s: %s", tmp,
                                     strerror(errno));
            struct stat st;
            if (stat(tmp, &st) != 0 || !S_ISDIR(st.st_mode))
                return swa_error_set(err, SWA_ERR_IO, "dump: %s exists and is not a folder", tmp);
            *p = saved;
            if (!saved)
                break;
        }
    }
    return SWA_OK;
}

swa_status swa_dump_prepare(const char *dir, swa_error *err)
{
    if (!dir || !*dir)
        return swa_error_set(err, SWA_ERR_IO, "dump: no folder given");
    swa_status st = dump_mkdirs(dir, err);
    if (st != SWA_OK)
        return st;
    char probe[PATH_MAX];
    if (snprintf(probe, sizeof probe, "%s/.swadiff-dump-probe.%ld", dir, (long)getpid()) >= (int)sizeof probe)
        return swa_error_set(err, SWA_ERR_IO, "dump: path too long: %s", dir);
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
    if (fd < 0)
        return swa_error_set(err, SWA_ERR_IO, "dump: cannot create a file in %s: %s", dir, strerror(errno));
    close(fd);
    unlink(probe);
    return SWA_OK;
}

static swa_status dump_case_dir(const char *dir, const swa_case *c, char *out, size_t n,
                                swa_error *err)
{
    if (!dir || !*dir || !c)
        return swa_error_set(err, SWA_ERR_INVALID, "dump: no folder or no case given");
    char name[SWA_DUMP_NAME_MAX + 32];
    swa_dump_dir_name(c->id, name, sizeof name);
    if (snprintf(out, n, "%s/%s", dir, name) >= (int)n)
        return swa_error_set(err, SWA_ERR_IO, "dump: path too long: %s/%s", dir, name);
    return dump_mkdirs(out, err);
}

/* ------------------------------------------------------------------------- */
/* .npy v1.0: magic, version 1.0, u16 LE header length, a Python dict
 * literal padded with spaces and ended by '\n' so that the data starts at a
 * multiple of 64 bytes, then the raw little-endian data. */

static swa_status dump_write_npy(const char *path, const size_t *shape, int ndim,
                                 float (*get)(const void *src, size_t i), const void *src,
                                 swa_error *err)
{
    if (ndim < 1 || ndim > 8)
        return swa_error_set(err, SWA_ERR_INVALID, "dump: %s: %d dimensions; expected 1..8", path, ndim);
    char dict[512];
    int len = snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (");
    size_t count = 1;
    for (int i = 0; i < ndim; i++) {
        len += snprintf(dict + len, sizeof dict - (size_t)len, "%s%zu", i ? ", " : "", shape[i]);
        count *= shape[i];
    }
    len += snprintf(dict + len, sizeof dict - (size_t)len, "%s), }", ndim == 1 ? "," : "");
    size_t total = 10 + (size_t)len + 1; /* magic(6) version(2) hlen(2) dict '\n' */
    size_t pad = (64 - total % 64) % 64;
    size_t header_len = (size_t)len + pad + 1;

    FILE *f = fopen(path, "wb");
    if (!f)
        return swa_error_set(err, SWA_ERR_IO, "dump: cannot write %s: %s", path, strerror(errno));
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                             (unsigned char)(header_len & 0xff), (unsigned char)(header_len >> 8)};
    bool ok = fwrite(pre, 1, sizeof pre, f) == sizeof pre && fwrite(dict, 1, (size_t)len, f) == (size_t)len;
    for (size_t i = 0; ok && i < pad; i++)
        ok = fputc(' ', f) != EOF;
    ok = ok && fputc('\n', f) != EOF;
    unsigned char chunk[4096];
    size_t used = 0;
    for (size_t i = 0; ok && i < count; i++) {
        uint32_t u = swa_f32_bits(get(src, i));
        chunk[used++] = (unsigned char)(u & 0xff);
        chunk[used++] = (unsigned char)((u >> 8) & 0xff);
        chunk[used++] = (unsigned char)((u >> 16) & 0xff);
        chunk[used++] = (unsigned char)(u >> 24);
        if (used == sizeof chunk) {
            ok = fwrite(chunk, 1, used, f) == used;
            used = 0;
        }
    }
    if (ok && used)
        ok = fwrite(chunk, 1, used, f) == used;
    int saved_errno = errno;
    if (fclose(f) != 0 && ok) {
        ok = false;
        saved_errno = errno;
    }
    if (!ok)
        return swa_error_set(err, SWA_ERR_IO, "dump: writing %s failed: %s", path, strerror(saved_errno));
    return SWA_OK;
}

static float dump_get_f32(const void *src, size_t i) { return ((const float *)src)[i]; }
static float dump_get_f64(const void *src, size_t i) { return (float)((const double *)src)[i]; }

typedef struct dump_typed { swa_dtype dtype; const void *base; } dump_typed;
static float dump_get_typed(const void *src, size_t i)
{
    const dump_typed *t = src;
    return swa_load(t->dtype, t->base, i);
}

swa_status swa_npy_write_f32(const char *path, const float *data, const size_t *shape, int ndim,
                             swa_error *err)
{
    return dump_write_npy(path, shape, ndim, dump_get_f32, data, err);
}

static swa_status dump_npy_in(const char *folder, const char *file, const size_t *shape, int ndim,
                              float (*get)(const void *, size_t), const void *src, swa_error *err)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", folder, file) >= (int)sizeof path)
        return swa_error_set(err, SWA_ERR_IO, "dump: path too long: %s/%s", folder, file);
    return dump_write_npy(path, shape, ndim, get, src, err);
}

/* ------------------------------------------------------------------------- */

static int dump_total(const int *len, int n)
{
    int t = 0;
    for (int i = 0; i < n; i++) t += len[i];
    return t;
}

static swa_status dump_check_case(const swa_case *c, swa_error *err)
{
    if (c->num_requests < 0 || (c->num_requests > 0 && (!c->qo_len || !c->kv_len)) ||
        c->num_qo_heads <= 0 || c->num_kv_heads <= 0 || c->head_dim <= 0)
        return swa_error_set(err, SWA_ERR_INVALID, "dump: case %s has no valid shape", c->id);
    return SWA_OK;
}

static cJSON *dump_int_array(const int *v, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
    return a;
}

static swa_status dump_meta(const char *folder, const swa_case *c, swa_error *err)
{
    int B = c->num_requests;
    int *qo_indptr = malloc((size_t)(B + 1) * sizeof(int)), *kv_indptr = malloc((size_t)(B + 1) * sizeof(int));
    cJSON *root = cJSON_CreateObject();
    if (!qo_indptr || !kv_indptr || !root) {
        free(qo_indptr); free(kv_indptr); cJSON_Delete(root);
        return swa_error_set(err, SWA_ERR_NOMEM, "dump: out of memory for meta.json");
    }
    qo_indptr[0] = kv_indptr[0] = 0;
    for (int r = 0; r < B; r++) {
        qo_indptr[r + 1] = qo_indptr[r] + c->qo_len[r];
        kv_indptr[r + 1] = kv_indptr[r] + c->kv_len[r];
    }
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)c->seed);
    cJSON_AddStringToObject(root, "format", "swadiff-dump/1");
    cJSON_AddStringToObject(root, "id", c->id);
    cJSON_AddStringToObject(root, "file", c->file);
    cJSON_AddNumberToObject(root, "num_requests", B);
    cJSON_AddItemToObject(root, "qo_len", dump_int_array(c->qo_len, B));
    cJSON_AddItemToObject(root, "kv_len", dump_int_array(c->kv_len, B));
    cJSON_AddItemToObject(root, "qo_indptr", dump_int_array(qo_indptr, B + 1));
    cJSON_AddItemToObject(root, "kv_indptr", dump_int_array(kv_indptr, B + 1));
    cJSON_AddBoolToObject(root, "causal", c->causal);
    cJSON_AddNumberToObject(root, "window_left", c->window_left);
    cJSON_AddNumberToObject(root, "sm_scale", c->sm_scale);
    cJSON_AddNumberToObject(root, "soft_cap", c->soft_cap);
    cJSON_AddNumberToObject(root, "num_qo_heads", c->num_qo_heads);
    cJSON_AddNumberToObject(root, "num_kv_heads", c->num_kv_heads);
    cJSON_AddNumberToObject(root, "head_dim", c->head_dim);
    cJSON_AddStringToObject(root, "dtype", swa_dtype_name(c->dtype));
    cJSON_AddNumberToObject(root, "page_size", c->page_size);
    cJSON_AddStringToObject(root, "layout", swa_layout_name(c->layout));
    cJSON_AddStringToObject(root, "seed", seed); /* a string: JSON numbers lose bits past 2^53 */
    cJSON_AddStringToObject(root, "lse_base", "e");
    cJSON_AddNumberToObject(root, "window_right", c->window_right);
    cJSON_AddNumberToObject(root, "attention_chunk_size", c->chunk_size);
    /* the visibility rule of this case, in words a reader can check a
     * reimplementation against (docs/spec.md has the full text) */
    char rule[400];
    const char *anchor = "bottom-right: row i of a request sits at p = kv_len - qo_len + i (p < 0: no key)";
    if (c->chunk_size > 0)
        snprintf(rule, sizeof rule, "%s; chunked local attention: keys [floor(p / %d) * %d, p]", anchor,
                 c->chunk_size, c->chunk_size);
    else if (c->causal)
        snprintf(rule, sizeof rule, "%s; causal: keys [%s, p]", anchor,
                 c->window_left >= 0 ? "max(0, p - window_left)" : "0");
    else
        snprintf(rule, sizeof rule, "%s; not causal: keys [%s, %s], clipped to [0, kv_len)", anchor,
                 c->window_left >= 0 ? "p - window_left" : "0",
                 c->window_right >= 0 ? "p + window_right" : "kv_len - 1");
    cJSON_AddStringToObject(root, "alignment", rule);
    free(qo_indptr);
    free(kv_indptr);
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text)
        return swa_error_set(err, SWA_ERR_NOMEM, "dump: out of memory printing meta.json");
    char path[PATH_MAX];
    swa_status st = SWA_OK;
    if (snprintf(path, sizeof path, "%s/meta.json", folder) >= (int)sizeof path) {
        st = swa_error_set(err, SWA_ERR_IO, "dump: path too long: %s/meta.json", folder);
    } else {
        FILE *f = fopen(path, "w");
        if (!f) {
            st = swa_error_set(err, SWA_ERR_IO, "dump: cannot write %s: %s", path, strerror(errno));
        } else {
            bool ok = fputs(text, f) != EOF && fputc('\n', f) != EOF;
            if (fclose(f) != 0)
                ok = false;
            if (!ok)
                st = swa_error_set(err, SWA_ERR_IO, "dump: writing %s failed: %s", path, strerror(errno));
        }
    }
    cJSON_free(text);
    return st;
}

swa_status swa_dump_case(const char *dir, const swa_case *c, const swa_inputs *in,
                         const double *out_ref, const double *lse_ref, swa_error *err)
{
    char folder[PATH_MAX];
    swa_status st = dump_case_dir(dir, c, folder, sizeof folder, err);
    if (st != SWA_OK)
        return st;
    if ((st = dump_check_case(c, err)) != SWA_OK)
        return st;
    if (!in)
        return swa_error_set(err, SWA_ERR_INVALID, "dump: case %s: no inputs given", c->id);
    size_t total_qo = (size_t)dump_total(c->qo_len, c->num_requests);
    size_t total_kv = (size_t)dump_total(c->kv_len, c->num_requests);
    if (total_qo != (size_t)in->total_qo || total_kv != (size_t)in->total_kv ||
        in->num_qo_heads != c->num_qo_heads || in->num_kv_heads != c->num_kv_heads ||
        in->head_dim != c->head_dim)
        return swa_error_set(err, SWA_ERR_INVALID,
                             "dump: case %s: inputs (total_qo %d, total_kv %d, heads %d/%d, head_dim %d) "
                             "do not match the case (%zu, %zu, %d/%d, %d)", c->id, in->total_qo,
                             in->total_kv, in->num_qo_heads, in->num_kv_heads, in->head_dim, total_qo,
                             total_kv, c->num_qo_heads, c->num_kv_heads, c->head_dim);
    const size_t q_shape[3] = {total_qo, (size_t)c->num_qo_heads, (size_t)c->head_dim};
    const size_t kv_shape[3] = {total_kv, (size_t)c->num_kv_heads, (size_t)c->head_dim};
    const size_t lse_shape[2] = {total_qo, (size_t)c->num_qo_heads};
    if ((st = dump_npy_in(folder, "q.npy", q_shape, 3, dump_get_f32, in->q, err)) != SWA_OK ||
        (st = dump_npy_in(folder, "k.npy", kv_shape, 3, dump_get_f32, in->k, err)) != SWA_OK ||
        (st = dump_npy_in(folder, "v.npy", kv_shape, 3, dump_get_f32, in->v, err)) != SWA_OK)
        return st;
    if (out_ref && (st = dump_npy_in(folder, "out_ref.npy", q_shape, 3, dump_get_f64, out_ref, err)) != SWA_OK)
        return st;
    if (lse_ref && (st = dump_npy_in(folder, "lse_ref.npy", lse_shape, 2, dump_get_f64, lse_ref, err)) != SWA_OK)
        return st;
    return dump_meta(folder, c, err);
}

swa_status swa_dump_backend(const char *dir, const swa_case *c, const char *backend,
                            const void *out_dtype, const float *lse_natural, swa_error *err)
{
    char folder[PATH_MAX];
    swa_status st = dump_case_dir(dir, c, folder, sizeof folder, err);
    if (st != SWA_OK)
        return st;
    if ((st = dump_check_case(c, err)) != SWA_OK)
        return st;
    if (!backend || !*backend || !out_dtype)
        return swa_error_set(err, SWA_ERR_INVALID, "dump: case %s: backend name or output missing", c->id);
    char name[SWA_DUMP_NAME_MAX + 32], file[SWA_DUMP_NAME_MAX + 48];
    swa_dump_dir_name(backend, name, sizeof name);
    size_t total_qo = (size_t)dump_total(c->qo_len, c->num_requests);
    const size_t q_shape[3] = {total_qo, (size_t)c->num_qo_heads, (size_t)c->head_dim};
    const size_t lse_shape[2] = {total_qo, (size_t)c->num_qo_heads};
    dump_typed typed = {c->dtype, out_dtype};
    snprintf(file, sizeof file, "out_%s.npy", name);
    if ((st = dump_npy_in(folder, file, q_shape, 3, dump_get_typed, &typed, err)) != SWA_OK)
        return st;
    if (lse_natural) {
        snprintf(file, sizeof file, "lse_%s.npy", name);
        if ((st = dump_npy_in(folder, file, lse_shape, 2, dump_get_f32, lse_natural, err)) != SWA_OK)
            return st;
    }
    return SWA_OK;
}
