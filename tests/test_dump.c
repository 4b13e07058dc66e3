/* test_dump.c — the --dump writer (harness/dump.c): folder names, .npy
 * headers and data read back in C, meta.json, and the files loaded by
 * Python the way a user would (numpy when installed — skipped otherwise —
 * and a standard-library reader that runs wherever python3 exists), which
 * recomputes the reference from the dumped q/k/v and meta.json.
 *
 *   ctest --test-dir build -R test_dump --output-on-failure */
#include <criterion/criterion.h>

#include <cjson/cJSON.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/dump.h"
#include "reference/reference.h"

/* ------------------------------------------------------------------------- */
/* Fixture: a small case built by hand, its reference, a temporary folder. */

typedef struct dcase {
    swa_case c;
    swa_inputs in;
    int qo_len[2], kv_len[2], qo_indptr[3], kv_indptr[3];
    double *out, *lse;
    char tmp[64];
} dcase;

/* The window kind of a dumped case: a causal window (L = 2), a non-causal
 * band (L = 2, R = 1), chunked local attention (C = 3). */
typedef enum { DUMP_WINDOW, DUMP_BAND, DUMP_CHUNK } dump_kind;

static void dcase_make_kind(dcase *t, const char *id, swa_dtype dtype, dump_kind kind)
{
    memset(t, 0, sizeof *t);
    swa_case *c = &t->c;
    swa_inputs *in = &t->in;
    snprintf(c->id, sizeof c->id, "%s", id);
    snprintf(c->file, sizeof c->file, "cases/dump_test.json");
    const int qo[2] = {3, 1}, kv[2] = {7, 5};
    c->num_requests = in->num_requests = 2;
    c->qo_len = t->qo_len; c->kv_len = t->kv_len;
    in->qo_indptr = t->qo_indptr; in->kv_indptr = t->kv_indptr;
    for (int r = 0; r < 2; r++) {
        t->qo_len[r] = qo[r]; t->kv_len[r] = kv[r];
        t->qo_indptr[r + 1] = t->qo_indptr[r] + qo[r];
        t->kv_indptr[r + 1] = t->kv_indptr[r] + kv[r];
    }
    c->num_qo_heads = in->num_qo_heads = 4;
    c->num_kv_heads = in->num_kv_heads = 2;
    c->head_dim = in->head_dim = 8;
    c->dtype = in->dtype = dtype;
    c->causal = kind != DUMP_BAND;
    c->window_left = kind == DUMP_CHUNK ? -1 : 2;
    c->window_right = kind == DUMP_BAND ? 1 : 0;
    c->chunk_size = kind == DUMP_CHUNK ? 3 : 0;
    c->soft_cap = 5.0;
    c->sm_scale = 1.0 / sqrt(8.0);
    c->page_size = 16;
    c->seed = 18446744073709551557ULL; /* beyond 2^53: must survive as a string */
    in->total_qo = 4;
    in->total_kv = 12;
    in->q = malloc(4 * 4 * 8 * sizeof(float));
    in->k = malloc(12 * 2 * 8 * sizeof(float));
    in->v = malloc(12 * 2 * 8 * sizeof(float));
    t->out = malloc(4 * 4 * 8 * sizeof(double));
    t->lse = malloc(4 * 4 * sizeof(double));
    cr_assert(in->q && in->k && in->v && t->out && t->lse);
    uint64_t x = 88172645463325252ULL;
    float *bufs[3] = {in->q, in->k, in->v};
    const int lens[3] = {128, 192, 192};
    for (int b = 0; b < 3; b++)
        for (int i = 0; i < lens[b]; i++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            bufs[b][i] = swa_round_to(dtype, (float)((double)(x >> 11) / 9007199254740992.0 * 6.0 - 3.0));
        }
    swa_error err = {0};
    cr_assert_eq(swa_reference(c, in, NULL, t->out, t->lse, &err), SWA_OK, "%s", err.message);
    snprintf(t->tmp, sizeof t->tmp, "/tmp/swadiff_test_dump_XXXXXX");
    cr_assert(mkdtemp(t->tmp), "mkdtemp failed");
}

static void dcase_make(dcase *t, const char *id, swa_dtype dtype) { dcase_make_kind(t, id, dtype, DUMP_WINDOW); }

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb; (void)flag; (void)ftw;
    return remove(path);
}

static void dcase_free(dcase *t)
{
    nftw(t->tmp, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(t->in.q); free(t->in.k); free(t->in.v);
    free(t->out); free(t->lse);
}

/* ------------------------------------------------------------------------- */
/* A .npy reader written from the format description, independent of dump.c. */

typedef struct npy {
    char header[512];
    size_t header_len, data_offset;
    size_t shape[8];
    int ndim;
    float *data;
    size_t count;
} npy;

static void npy_read(const char *path, npy *a)
{
    memset(a, 0, sizeof *a);
    FILE *f = fopen(path, "rb");
    cr_assert(f, "%s: cannot open", path);
    unsigned char pre[10];
    cr_assert_eq(fread(pre, 1, 10, f), 10, "%s: short file", path);
    cr_assert(memcmp(pre, "\x93NUMPY", 6) == 0, "%s: bad magic", path);
    cr_assert(pre[6] == 1 && pre[7] == 0, "%s: version %d.%d, expected 1.0", path, pre[6], pre[7]);
    a->header_len = pre[8] | (size_t)pre[9] << 8;
    a->data_offset = 10 + a->header_len;
    cr_assert(a->data_offset % 64 == 0, "%s: data starts at %zu, not a multiple of 64", path, a->data_offset);
    cr_assert(a->header_len < sizeof a->header, "%s: header of %zu bytes", path, a->header_len);
    cr_assert_eq(fread(a->header, 1, a->header_len, f), a->header_len, "%s: short header", path);
    cr_assert_eq(a->header[a->header_len - 1], '\n', "%s: header must end with a newline", path);
    cr_assert(strstr(a->header, "'descr': '<f4'"), "%s: header %s", path, a->header);
    cr_assert(strstr(a->header, "'fortran_order': False"), "%s: header %s", path, a->header);
    const char *sh = strstr(a->header, "'shape': (");
    cr_assert(sh, "%s: no shape in %s", path, a->header);
    sh += strlen("'shape': (");
    a->count = 1;
    while (*sh != ')') {
        char *end;
        unsigned long long v = strtoull(sh, &end, 10);
        cr_assert(end != sh, "%s: bad shape in %s", path, a->header);
        a->shape[a->ndim++] = (size_t)v;
        a->count *= (size_t)v;
        sh = end;
        while (*sh == ',' || *sh == ' ') sh++;
    }
    a->data = malloc(a->count * sizeof(float) + 1);
    unsigned char b[4];
    for (size_t i = 0; i < a->count; i++) {
        cr_assert_eq(fread(b, 1, 4, f), 4, "%s: data ends at element %zu of %zu", path, i, a->count);
        uint32_t u = b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
        a->data[i] = swa_bits_f32(u);
    }
    cr_assert_eq(fgetc(f), EOF, "%s: bytes after the data", path);
    fclose(f);
}

static void expect_shape(const npy *a, const char *what, int ndim, size_t d0, size_t d1, size_t d2)
{
    size_t want[3] = {d0, d1, d2};
    cr_assert_eq(a->ndim, ndim, "%s: %d dimensions, expected %d", what, a->ndim, ndim);
    for (int i = 0; i < ndim; i++)
        cr_assert_eq(a->shape[i], want[i], "%s: shape[%d] = %zu, expected %zu", what, i, a->shape[i], want[i]);
}

/* ------------------------------------------------------------------------- */

Test(dump, folder_names)
{
    char buf[SWA_DUMP_NAME_MAX + 32];
    swa_dump_dir_name("seeds/swa_edge:window_left=4,dtype=fp16", buf, sizeof buf);
    cr_assert_str_eq(buf, "seeds__swa_edge--window_left=4,dtype=fp16");
    swa_dump_dir_name("a b*c%/..", buf, sizeof buf);
    cr_assert_str_eq(buf, "a%20b%2Ac%25__..");
    swa_dump_dir_name("..", buf, sizeof buf);
    cr_assert_str_eq(buf, "%2E.", "a leading dot is escaped (no '..' folder): %s", buf);
    swa_dump_dir_name("", buf, sizeof buf);
    cr_assert_str_eq(buf, "case");

    char a[SWA_ID_MAX], b[SWA_ID_MAX], na[sizeof buf], nb[sizeof buf];
    memset(a, 'x', 240); a[240] = 0;
    memcpy(b, a, sizeof a); b[239] = 'y';
    swa_dump_dir_name(a, na, sizeof na);
    swa_dump_dir_name(b, nb, sizeof nb);
    cr_assert(strlen(na) <= SWA_DUMP_NAME_MAX + 17, "long id mapped to %zu bytes", strlen(na));
    cr_assert(strcmp(na, nb) != 0, "two long ids differing at the end map to the same folder %s", na);
    cr_assert(strchr(na, '~'), "a cut name carries the hash: %s", na);
}

Test(dump, npy_files_and_meta_read_back)
{
    dcase t;
    dcase_make(&t, "dump/basic:window_left=2", SWA_DTYPE_BF16);
    swa_error err = {0};
    cr_assert_eq(swa_dump_case(t.tmp, &t.c, &t.in, t.out, t.lse, &err), SWA_OK, "%s", err.message);
    /* a backend's fp16... here bf16 storage output and its LSE */
    uint16_t backend_out[128];
    float backend_lse[16];
    for (int i = 0; i < 128; i++) backend_out[i] = swa_f32_to_bf16((float)t.out[i]);
    for (int i = 0; i < 16; i++) backend_lse[i] = (float)t.lse[i];
    cr_assert_eq(swa_dump_backend(t.tmp, &t.c, "decode_fa2", backend_out, backend_lse, &err), SWA_OK,
                 "%s", err.message);

    char dir[256], path[512];
    snprintf(dir, sizeof dir, "%s/dump__basic--window_left=2", t.tmp);
    npy a;
    const struct { const char *file; int ndim; size_t d[3]; const float *src_f; const double *src_d; } files[] = {
        {"q.npy", 3, {4, 4, 8}, t.in.q, NULL},
        {"k.npy", 3, {12, 2, 8}, t.in.k, NULL},
        {"v.npy", 3, {12, 2, 8}, t.in.v, NULL},
        {"out_ref.npy", 3, {4, 4, 8}, NULL, t.out},
        {"lse_ref.npy", 2, {4, 4, 0}, NULL, t.lse},
        {"lse_decode_fa2.npy", 2, {4, 4, 0}, backend_lse, NULL},
    };
    for (size_t fi = 0; fi < sizeof files / sizeof *files; fi++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[fi].file);
        npy_read(path, &a);
        expect_shape(&a, files[fi].file, files[fi].ndim, files[fi].d[0], files[fi].d[1], files[fi].d[2]);
        for (size_t i = 0; i < a.count; i++) {
            float want = files[fi].src_f ? files[fi].src_f[i] : (float)files[fi].src_d[i];
            cr_assert(swa_f32_bits(a.data[i]) == swa_f32_bits(want), "%s[%zu] = %.9g, wrote %.9g",
                      files[fi].file, i, a.data[i], want);
        }
        free(a.data);
    }
    snprintf(path, sizeof path, "%s/out_decode_fa2.npy", dir);
    npy_read(path, &a);
    expect_shape(&a, "out_decode_fa2.npy", 3, 4, 4, 8);
    for (size_t i = 0; i < a.count; i++)
        cr_assert(a.data[i] == swa_bf16_to_f32(backend_out[i]), "out_decode_fa2[%zu] = %.9g, bf16 %.9g", i,
                  a.data[i], swa_bf16_to_f32(backend_out[i]));
    free(a.data);

    /* meta.json */
    snprintf(path, sizeof path, "%s/meta.json", dir);
    FILE *f = fopen(path, "r");
    cr_assert(f, "no %s", path);
    char text[8192];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    cJSON *m = cJSON_Parse(text);
    cr_assert(m, "meta.json does not parse: %s", text);
    cr_assert_str_eq(cJSON_GetObjectItem(m, "id")->valuestring, "dump/basic:window_left=2");
    cr_assert_str_eq(cJSON_GetObjectItem(m, "dtype")->valuestring, "bf16");
    cr_assert_str_eq(cJSON_GetObjectItem(m, "seed")->valuestring, "18446744073709551557");
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(m, "causal")));
    cr_assert_eq(cJSON_GetObjectItem(m, "window_left")->valueint, 2);
    cr_assert_eq(cJSON_GetObjectItem(m, "num_qo_heads")->valueint, 4);
    cr_assert_eq(cJSON_GetObjectItem(m, "num_kv_heads")->valueint, 2);
    cr_assert_eq(cJSON_GetObjectItem(m, "head_dim")->valueint, 8);
    cr_assert_eq(cJSON_GetObjectItem(m, "sm_scale")->valuedouble, 1.0 / sqrt(8.0), "sm_scale must round-trip");
    cr_assert_eq(cJSON_GetObjectItem(m, "soft_cap")->valuedouble, 5.0);
    cr_assert_eq(cJSON_GetObjectItem(m, "window_right")->valueint, 0, "causal: the right bound is the row");
    cr_assert_eq(cJSON_GetObjectItem(m, "attention_chunk_size")->valueint, 0);
    cr_assert(strstr(cJSON_GetObjectItem(m, "alignment")->valuestring, "causal: keys [max(0, p - window_left), p]"),
              "alignment: %s", cJSON_GetObjectItem(m, "alignment")->valuestring);
    const int want_qo[] = {0, 3, 4}, want_kv[] = {0, 7, 12};
    cJSON *qi = cJSON_GetObjectItem(m, "qo_indptr"), *ki = cJSON_GetObjectItem(m, "kv_indptr");
    cr_assert(cJSON_GetArraySize(qi) == 3 && cJSON_GetArraySize(ki) == 3);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(cJSON_GetArrayItem(qi, i)->valueint, want_qo[i], "qo_indptr[%d]", i);
        cr_assert_eq(cJSON_GetArrayItem(ki, i)->valueint, want_kv[i], "kv_indptr[%d]", i);
    }
    cJSON_Delete(m);
    dcase_free(&t);
}

Test(dump, io_errors_name_the_path)
{
    dcase t;
    dcase_make(&t, "dump/err", SWA_DTYPE_FP16);
    char blocker[128];
    snprintf(blocker, sizeof blocker, "%s/not_a_folder", t.tmp);
    FILE *f = fopen(blocker, "w");
    cr_assert(f);
    fclose(f);
    swa_error err = {0};
    cr_assert_eq(swa_dump_case(blocker, &t.c, &t.in, t.out, t.lse, &err), SWA_ERR_IO);
    cr_assert(strstr(err.message, "not_a_folder"), "message must name the path: %s", err.message);
    dcase_free(&t);
}

/* ------------------------------------------------------------------------- */
/* Python: load the dump as a user would and recompute the reference from
 * q/k/v + meta.json alone.  argv: folder, "numpy" | "stdlib".  Exit 77 when
 * numpy is asked for and missing. */

static const char k_python_check[] =
    "import ast, json, math, os, struct, sys\n"
    "d, mode = sys.argv[1], sys.argv[2]\n"
    "def load_std(name):\n"
    "    b = open(os.path.join(d, name), 'rb').read()\n"
    "    assert b[:6] == b'\\x93NUMPY' and b[6:8] == b'\\x01\\x00', name\n"
    "    hl = struct.unpack('<H', b[8:10])[0]\n"
    "    h = ast.literal_eval(b[10:10 + hl].decode('latin1'))\n"
    "    assert h['descr'] == '<f4' and h['fortran_order'] is False, h\n"
    "    n = 1\n"
    "    for s in h['shape']: n *= s\n"
    "    assert len(b) == 10 + hl + 4 * n, name\n"
    "    flat = struct.unpack('<%df' % n, b[10 + hl:])\n"
    "    return h['shape'], flat\n"
    "m = json.load(open(os.path.join(d, 'meta.json')))\n"
    "Hq, Hkv, D = m['num_qo_heads'], m['num_kv_heads'], m['head_dim']\n"
    "G, L, cap, scale = Hq // Hkv, m['window_left'], m['soft_cap'], m['sm_scale']\n"
    "qi, ki = m['qo_indptr'], m['kv_indptr']\n"
    "R, C = m['window_right'], m['attention_chunk_size']\n"
    "def visible(qo_len, kv_len, i):\n"
    "    p = kv_len - qo_len + i\n"
    "    if C > 0: lo, hi = p // C * C, p\n"
    "    else:\n"
    "        lo = max(0, p - L) if L >= 0 else 0\n"
    "        hi = p if m['causal'] else (min(kv_len - 1, p + R) if R >= 0 else kv_len - 1)\n"
    "    return range(lo, hi + 1)\n"
    "worst = 0.0\n"
    "def check(got, want, what):\n"
    "    global worst\n"
    "    err = abs(got - want)\n"
    "    if not err <= 2e-6 * (abs(want) + 1e-3):\n"
    "        sys.exit('%s: dumped %r, recomputed %r' % (what, got, want))\n"
    "    worst = max(worst, err)\n"
    "if mode == 'numpy':\n"
    "    try:\n"
    "        import numpy as np\n"
    "    except ImportError:\n"
    "        sys.exit(77)\n"
    "    q, k, v = (np.load(os.path.join(d, n)).astype(np.float64) for n in ('q.npy', 'k.npy', 'v.npy'))\n"
    "    out_ref, lse_ref = np.load(os.path.join(d, 'out_ref.npy')), np.load(os.path.join(d, 'lse_ref.npy'))\n"
    "    assert out_ref.dtype == np.float32 and out_ref.shape == q.shape, out_ref.shape\n"
    "    for r in range(len(qi) - 1):\n"
    "        qo_len, kv_len = qi[r + 1] - qi[r], ki[r + 1] - ki[r]\n"
    "        for i in range(qo_len):\n"
    "            keys = np.array(list(visible(qo_len, kv_len, i))) + ki[r]\n"
    "            for h in range(Hq):\n"
    "                s = k[keys, h // G] @ q[qi[r] + i, h] * scale\n"
    "                if cap > 0: s = cap * np.tanh(s / cap)\n"
    "                w = np.exp(s - s.max())\n"
    "                o = w @ v[keys, h // G] / w.sum()\n"
    "                for dd in range(D): check(float(out_ref[qi[r] + i, h, dd]), o[dd], 'out')\n"
    "                check(float(lse_ref[qi[r] + i, h]), s.max() + np.log(w.sum()), 'lse')\n"
    "else:\n"
    "    (qs, q), (ks, k), (vs, v) = load_std('q.npy'), load_std('k.npy'), load_std('v.npy')\n"
    "    (os_, out_ref), (ls, lse_ref) = load_std('out_ref.npy'), load_std('lse_ref.npy')\n"
    "    assert os_ == qs and ls == qs[:2], (os_, ls)\n"
    "    for r in range(len(qi) - 1):\n"
    "        qo_len, kv_len = qi[r + 1] - qi[r], ki[r + 1] - ki[r]\n"
    "        for i in range(qo_len):\n"
    "            row = qi[r] + i\n"
    "            for h in range(Hq):\n"
    "                qv = q[(row * Hq + h) * D:(row * Hq + h + 1) * D]\n"
    "                s = {}\n"
    "                for key in visible(qo_len, kv_len, i):\n"
    "                    kk = k[((ki[r] + key) * Hkv + h // G) * D:][:D]\n"
    "                    x = sum(a * b for a, b in zip(qv, kk)) * scale\n"
    "                    s[key] = cap * math.tanh(x / cap) if cap > 0 else x\n"
    "                mx = max(s.values())\n"
    "                tot = sum(math.exp(x - mx) for x in s.values())\n"
    "                for dd in range(D):\n"
    "                    o = sum(math.exp(x - mx) * v[((ki[r] + key) * Hkv + h // G) * D + dd] for key, x in s.items()) / tot\n"
    "                    check(out_ref[(row * Hq + h) * D + dd], o, 'out[%d,%d,%d]' % (row, h, dd))\n"
    "                check(lse_ref[row * Hq + h], mx + math.log(tot), 'lse[%d,%d]' % (row, h))\n"
    "print('ok', mode, 'worst abs diff', worst)\n";

static int run_python_check_kind(const char *mode, dump_kind kind, char *log, size_t log_size)
{
    dcase t;
    dcase_make_kind(&t, "dump/python:mode=check", SWA_DTYPE_FP16, kind);
    swa_error err = {0};
    cr_assert_eq(swa_dump_case(t.tmp, &t.c, &t.in, t.out, t.lse, &err), SWA_OK, "%s", err.message);
    char script[128], logpath[128], cmd[768];
    snprintf(script, sizeof script, "%s/check.py", t.tmp);
    snprintf(logpath, sizeof logpath, "%s/check.log", t.tmp);
    FILE *f = fopen(script, "w");
    cr_assert(f);
    fputs(k_python_check, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "python3 %s %s/dump__python--mode=check %s > %s 2>&1", script, t.tmp, mode,
             logpath);
    int rc = system(cmd);
    int code = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    log[0] = 0;
    f = fopen(logpath, "r");
    if (f) {
        size_t n = fread(log, 1, log_size - 1, f);
        log[n] = 0;
        fclose(f);
    }
    dcase_free(&t);
    return code;
}

static int run_python_check(const char *mode, char *log, size_t log_size)
{
    return run_python_check_kind(mode, DUMP_WINDOW, log, log_size);
}

static bool have_python(void) { return system("python3 -c 'import ast, json, struct' >/dev/null 2>&1") == 0; }

Test(dump_python, numpy_loads_and_recomputes)
{
    if (!have_python())
        cr_skip_test("python3 not found");
    char log[4096];
    int code = run_python_check("numpy", log, sizeof log);
    if (code == 77)
        cr_skip_test("numpy is not installed (python3 -c 'import numpy' fails)");
    cr_assert_eq(code, 0, "numpy check failed (exit %d):\n%s", code, log);
}

Test(dump_python, stdlib_reader_loads_and_recomputes)
{
    if (!have_python())
        cr_skip_test("python3 not found");
    char log[4096];
    int code = run_python_check("stdlib", log, sizeof log);
    cr_assert_eq(code, 0, "standard-library check failed (exit %d):\n%s", code, log);
    cr_log_info("%s", log);
}

/* A band and a chunked case: meta.json alone (window_right,
 * attention_chunk_size) lets a reader recompute the dumped reference, and
 * its alignment text states the rule that applies. */
Test(dump_python, bands_and_chunks_recompute_from_meta_alone)
{
    if (!have_python())
        cr_skip_test("python3 not found");
    static const struct { dump_kind kind; const char *rule; } kinds[] = {
        {DUMP_BAND, "not causal: keys [p - window_left, p + window_right], clipped to [0, kv_len)"},
        {DUMP_CHUNK, "chunked local attention: keys [floor(p / 3) * 3, p]"},
    };
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        char log[4096];
        int code = run_python_check_kind("stdlib", kinds[k].kind, log, sizeof log);
        cr_expect_eq(code, 0, "%s: the standard-library check failed (exit %d):\n%s", kinds[k].rule, code, log);
        dcase t;
        dcase_make_kind(&t, "dump/kind", SWA_DTYPE_FP16, kinds[k].kind);
        swa_error err = {0};
        cr_assert_eq(swa_dump_case(t.tmp, &t.c, &t.in, t.out, t.lse, &err), SWA_OK, "%s", err.message);
        char path[512], text[8192];
        snprintf(path, sizeof path, "%s/dump__kind/meta.json", t.tmp);
        FILE *f = fopen(path, "r");
        cr_assert(f, "no %s", path);
        size_t n = fread(text, 1, sizeof text - 1, f);
        fclose(f);
        text[n] = 0;
        cJSON *m = cJSON_Parse(text);
        cr_assert(m);
        cr_expect(strstr(cJSON_GetObjectItem(m, "alignment")->valuestring, kinds[k].rule), "alignment: %s",
                  cJSON_GetObjectItem(m, "alignment")->valuestring);
        cr_expect_eq(cJSON_GetObjectItem(m, "window_right")->valueint, kinds[k].kind == DUMP_BAND ? 1 : 0);
        cr_expect_eq(cJSON_GetObjectItem(m, "attention_chunk_size")->valueint, kinds[k].kind == DUMP_CHUNK ? 3 : 0);
        cJSON_Delete(m);
        dcase_free(&t);
    }
}
