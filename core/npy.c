/* npy.c — .npy v1.0 writer and reader (see npy.h).
 *
 * Layout: the magic "\x93NUMPY", version 1.0, a little-endian u16 header
 * length, a Python dict literal padded with spaces and ended by '\n' so the
 * data starts at a multiple of 64 bytes, then the raw little-endian data.
 *
 * Test: tests/test_dump.c (read back in C and with Python),
 * tests/test_external.c (adapter outputs of every shape and descr). */
#include "core/npy.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <fcntl.h>

size_t swa_npy_item_size(const char *descr)
{
    static const struct { const char *descr; size_t size; } known[] = {
        {"<f2", 2}, {"<u2", 2}, {"<f4", 4}, {"<f8", 8}, {"<i4", 4},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(descr, known[i].descr) == 0)
            return known[i].size;
    return 0;
}

int swa_npy_write_header(FILE *f, const char *descr, const size_t *shape, int ndim)
{
    char dict[512];
    int len = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int i = 0; i < ndim; i++)
        len += snprintf(dict + len, sizeof dict - (size_t)len, "%s%zu", i ? ", " : "", shape[i]);
    len += snprintf(dict + len, sizeof dict - (size_t)len, "%s), }", ndim == 1 ? "," : "");
    size_t total = 10 + (size_t)len + 1; /* magic(6) version(2) hlen(2) dict '\n' */
    size_t pad = (64 - total % 64) % 64;
    size_t header_len = (size_t)len + pad + 1;
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                             (unsigned char)(header_len & 0xff), (unsigned char)(header_len >> 8)};
    if (fwrite(pre, 1, sizeof pre, f) != sizeof pre || fwrite(dict, 1, (size_t)len, f) != (size_t)len)
        return -1;
    for (size_t i = 0; i < pad; i++)
        if (fputc(' ', f) == EOF)
            return -1;
    return fputc('\n', f) == EOF ? -1 : 0;
}

swa_status swa_npy_write(const char *path, const char *descr, const size_t *shape, int ndim, const void *data,
                         swa_error *err)
{
    size_t item = swa_npy_item_size(descr);
    if (ndim < 1 || ndim > SWA_NPY_MAX_DIMS || !item)
        return swa_error_set(err, SWA_ERR_INVALID, "%s: cannot write %d dimensions of '%s'", path, ndim, descr);
    size_t count = 1;
    for (int i = 0; i < ndim; i++)
        count *= shape[i];
    FILE *f = fopen(path, "wb");
    if (!f)
        return swa_error_set(err, SWA_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    bool ok = swa_npy_write_header(f, descr, shape, ndim) == 0 &&
              (count == 0 || fwrite(data, item, count, f) == count);
    int saved = errno;
    if (fclose(f) != 0 && ok) {
        ok = false;
        saved = errno;
    }
    if (!ok)
        return swa_error_set(err, SWA_ERR_IO, "writing %s failed: %s", path, strerror(saved));
    return SWA_OK;
}

/* The value of 'key' in the header dict: a quoted string, a bool or a tuple. */
static const char *dict_value(const char *dict, const char *key)
{
    char quoted[32];
    snprintf(quoted, sizeof quoted, "'%s'", key);
    const char *at = strstr(dict, quoted);
    if (!at)
        return NULL;
    at = strchr(at + strlen(quoted), ':');
    if (!at)
        return NULL;
    at++;
    while (*at == ' ')
        at++;
    return at;
}

static swa_status parse_header(const char *path, const char *dict, swa_npy *a, swa_error *err)
{
    const char *v = dict_value(dict, "descr");
    if (!v || (*v != '\'' && *v != '"'))
        return swa_error_set(err, SWA_ERR_INVALID, "%s: header has no 'descr' string", path);
    char q = *v++;
    size_t n = 0;
    while (v[n] && v[n] != q && n < sizeof a->descr - 1)
        n++;
    if (v[n] != q)
        return swa_error_set(err, SWA_ERR_INVALID, "%s: 'descr' is not a short string", path);
    memcpy(a->descr, v, n);
    a->descr[n] = '\0';
    /* numpy writes '|u1' style for 1-byte types and '<' for little-endian */
    a->item_size = swa_npy_item_size(a->descr);
    if (!a->item_size)
        return swa_error_set(err, SWA_ERR_INVALID,
                             "%s: dtype '%s' is not one swadiff reads ('<f2', '<u2', '<f4', '<f8', '<i4')", path,
                             a->descr);
    v = dict_value(dict, "fortran_order");
    if (!v || strncmp(v, "False", 5) != 0)
        return swa_error_set(err, SWA_ERR_INVALID, "%s: Fortran order (or no 'fortran_order'); write C order "
                             "(numpy.ascontiguousarray)", path);
    v = dict_value(dict, "shape");
    if (!v || *v != '(')
        return swa_error_set(err, SWA_ERR_INVALID, "%s: header has no 'shape' tuple", path);
    v++;
    a->ndim = 0;
    a->count = 1;
    for (;;) {
        while (*v == ' ' || *v == ',')
            v++;
        if (*v == ')')
            break;
        char *end;
        errno = 0;
        unsigned long long d = strtoull(v, &end, 10);
        if (end == v || errno || d > ((size_t)1 << 40))
            return swa_error_set(err, SWA_ERR_INVALID, "%s: bad 'shape' in the header", path);
        if (a->ndim == SWA_NPY_MAX_DIMS)
            return swa_error_set(err, SWA_ERR_INVALID, "%s: more than %d dimensions", path, SWA_NPY_MAX_DIMS);
        a->shape[a->ndim++] = (size_t)d;
        a->count *= (size_t)d;
        if (a->count > ((size_t)1 << 40))
            return swa_error_set(err, SWA_ERR_INVALID, "%s: absurd shape", path);
        v = end;
    }
    return SWA_OK;
}

swa_status swa_npy_read(const char *path, size_t max_bytes, swa_npy *a, swa_error *err)
{
    memset(a, 0, sizeof *a);
    /* opened without blocking and checked to be a regular file first: a
     * FIFO (or a device) in its place would block the read past every
     * timeout, or never end */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return swa_error_set(err, SWA_ERR_IO, "cannot read %s: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return swa_error_set(err, SWA_ERR_INVALID, "%s: not a regular file (a FIFO, device or folder): a result must "
                             "be a .npy file", path);
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return swa_error_set(err, SWA_ERR_IO, "cannot read %s: %s", path, strerror(errno));
    }
    unsigned char pre[10];
    swa_status st = SWA_OK;
    char *dict = NULL;
    if (fread(pre, 1, 8, f) != 8 || memcmp(pre, "\x93NUMPY", 6) != 0) {
        st = swa_error_set(err, SWA_ERR_INVALID, "%s: not a .npy file (no \\x93NUMPY magic)", path);
        goto done;
    }
    size_t header_len;
    if (pre[6] == 1) {
        if (fread(pre + 8, 1, 2, f) != 2)
            goto short_file;
        header_len = (size_t)pre[8] | (size_t)pre[9] << 8;
    } else if (pre[6] == 2 || pre[6] == 3) {
        unsigned char l[4];
        if (fread(l, 1, 4, f) != 4)
            goto short_file;
        header_len = (size_t)l[0] | (size_t)l[1] << 8 | (size_t)l[2] << 16 | (size_t)l[3] << 24;
    } else {
        st = swa_error_set(err, SWA_ERR_INVALID, "%s: .npy version %d.%d is not supported", path, pre[6], pre[7]);
        goto done;
    }
    if (header_len > (1u << 16)) {
        st = swa_error_set(err, SWA_ERR_INVALID, "%s: header of %zu bytes", path, header_len);
        goto done;
    }
    dict = malloc(header_len + 1);
    if (!dict) {
        st = swa_error_set(err, SWA_ERR_NOMEM, "%s: no memory for the header", path);
        goto done;
    }
    if (fread(dict, 1, header_len, f) != header_len)
        goto short_file;
    dict[header_len] = '\0';
    if ((st = parse_header(path, dict, a, err)) != SWA_OK)
        goto done;
    size_t bytes = a->count * a->item_size;
    if (bytes > max_bytes) {
        st = swa_error_set(err, SWA_ERR_INVALID, "%s: %zu bytes of data, more than the %zu expected", path, bytes,
                           max_bytes);
        goto done;
    }
    a->data = malloc(bytes ? bytes : 1);
    if (!a->data) {
        st = swa_error_set(err, SWA_ERR_NOMEM, "%s: no memory for %zu bytes", path, bytes);
        goto done;
    }
    if (bytes && fread(a->data, 1, bytes, f) != bytes)
        goto short_file;
    goto done;
short_file:
    st = swa_error_set(err, SWA_ERR_INVALID, "%s: file ends early (truncated .npy)", path);
done:
    free(dict);
    fclose(f);
    if (st != SWA_OK)
        swa_npy_free(a);
    return st;
}

void swa_npy_free(swa_npy *a)
{
    if (!a)
        return;
    free(a->data);
    a->data = NULL;
}
