/* common.c — the two functions of common.h that are not inline: the error
 * setter every layer uses, and the one wall clock.
 * Test: tests/test_compare.c and every test that reads an swa_error. */
#include "core/common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

swa_status swa_error_set(swa_error *err, swa_status status, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        err->status = status;
    }
    return status;
}

double swa_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int swa_write_text_file(const char *path, const char *text)
{
    char tmp[4096];
    if (!path || !text || snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
        errno = EINVAL;
        return -1;
    }
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    int rc = fputs(text, f) < 0 ? -1 : 0;
    int saved = errno;
    if (fclose(f) != 0 && rc == 0) {
        rc = -1;
        saved = errno;
    }
    if (rc == 0 && rename(tmp, path) != 0) {
        rc = -1;
        saved = errno;
    }
    if (rc != 0) {
        unlink(tmp);
        errno = saved;
    }
    return rc;
}

size_t swa_env_bytes(const char *name)
{
    const char *env = getenv(name);
    if (!env || !*env || env[0] == '-')
        return 0;
    char *end;
    unsigned long long v = strtoull(env, &end, 10);
    return *end == '\0' ? (size_t)v : 0;
}

size_t swa_host_memory_default(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0)
        return SIZE_MAX;
    return (size_t)((double)pages * (double)page * 0.8);
}
