/* common.c — the functions of common.h that are not inline: the error
 * setter every layer uses, the one wall clock, the text-file writer and the
 * memory caps read from the environment, the flush that remembers why
 * stdout could not be written.
 * Test: tests/test_compare.c and every test that reads an swa_error;
 * swa_env_bytes: tests/test_env_caps.c. */
#include "core/common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
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

void swa_path_abbrev(const char *path, char *buf, size_t n)
{
    size_t len = strlen(path);
    if (len < n) {
        memcpy(buf, path, len + 1);
        return;
    }
    size_t keep = (n - 32) / 2; /* "..." and " (N bytes)" take the rest */
    snprintf(buf, n, "%.*s...%s (%zu bytes)", (int)keep, path, path + len - keep, len);
}

size_t swa_address_space_left(size_t *limit)
{
    struct rlimit rl;
    if (limit)
        *limit = SIZE_MAX;
    if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return SIZE_MAX;
    if (limit)
        *limit = (size_t)rl.rlim_cur;
    unsigned long long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r"); /* its first field: the mapped size, in pages */
    if (f) {
        if (fscanf(f, "%llu", &pages) != 1)
            pages = 0;
        fclose(f);
    }
    unsigned long long used = pages * (unsigned long long)sysconf(_SC_PAGESIZE);
    return used < rl.rlim_cur ? (size_t)(rl.rlim_cur - used) : 0;
}

int swa_blas_threads_cap(int wanted)
{
    size_t left = swa_address_space_left(NULL);
    if (left == SIZE_MAX || wanted <= 1)
        return wanted < 1 ? 1 : wanted;
    size_t fit = left / SWA_BLAS_THREAD_BYTES;
    return fit < 1 ? 1 : fit < (size_t)wanted ? (int)fit : wanted;
}

static int stdout_errno;

int swa_flush(FILE *f)
{
    int rc = fflush(f);
    if (rc != 0 && f == stdout && stdout_errno == 0)
        stdout_errno = errno;
    return rc;
}

int swa_stdout_errno(void) { return stdout_errno; }

bool swa_path_is_special(const char *path)
{
    struct stat st;
    return path && stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

int swa_write_text_file(const char *path, const char *text)
{
    char tmp[4096];
    if (!path || !text || snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
        errno = EINVAL;
        return -1;
    }
    /* /dev/null, a FIFO: written in place, never replaced */
    const bool in_place = swa_path_is_special(path);
    const char *target = in_place ? path : tmp;
    FILE *f = fopen(target, "w");
    if (!f)
        return -1;
    int rc = fputs(text, f) < 0 ? -1 : 0;
    int saved = errno;
    if (fclose(f) != 0 && rc == 0) {
        rc = -1;
        saved = errno;
    }
    if (rc == 0 && !in_place && rename(tmp, path) != 0) {
        rc = -1;
        saved = errno;
    }
    if (rc != 0) {
        if (!in_place)
            unlink(tmp);
        errno = saved;
    }
    return rc;
}

/* value as it may be shown in a message: at most 40 characters, anything
 * but printable ASCII as \xNN, so no terminal control reaches the screen */
static void quote_env_value(const char *value, char *buf, size_t n)
{
    size_t j = 0, i = 0;
    for (; value[i] && i < 40 && j + 5 < n; i++) {
        unsigned char ch = (unsigned char)value[i];
        if (ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\')
            buf[j++] = (char)ch;
        else
            j += (size_t)snprintf(buf + j, n - j, "\\x%02x", ch);
    }
    if (value[i] && j + 4 < n) {
        memcpy(buf + j, "...", 3);
        j += 3;
    }
    buf[j] = '\0';
}

int swa_env_bytes(const char *name, size_t *out, char *why, size_t why_len)
{
    *out = 0;
    if (why && why_len)
        why[0] = '\0';
    const char *env = getenv(name);
    if (!env || !*env)
        return 0;
    /* digits only: no sign, no space, no suffix, no exponent (strtoull
     * would take " 12", "+12" and "-1", the last as 2^64 - 1) */
    size_t v = 0;
    bool digits = true, overflow = false;
    for (const char *p = env; *p; p++) {
        if (*p < '0' || *p > '9') {
            digits = false;
        } else if (!overflow) {
            size_t d = (size_t)(*p - '0');
            if (v > (SIZE_MAX - d) / 10)
                overflow = true;
            else
                v = v * 10 + d;
        }
    }
    if (!digits || overflow || v == 0) {
        if (why && why_len) {
            char shown[200], expected[128];
            quote_env_value(env, shown, sizeof shown);
            if (!digits)
                snprintf(expected, sizeof expected, "a whole number of bytes, digits only (e.g. 12000000000)");
            else if (overflow)
                snprintf(expected, sizeof expected, "a number of bytes no larger than %zu", (size_t)SIZE_MAX);
            else
                snprintf(expected, sizeof expected, "a positive number of bytes (unset the variable for the default)");
            snprintf(why, why_len, "%s=\"%s\" in the environment: expected %s", name, shown, expected);
        }
        return -1;
    }
    *out = v;
    return 0;
}

int swa_env_caps_check(char *why, size_t why_len)
{
    static const char *const caps[] = {"SWADIFF_MAX_CASE_BYTES", "SWADIFF_MAX_HOST_BYTES", "SWADIFF_MAX_DEVICE_BYTES"};
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        size_t v;
        if (swa_env_bytes(caps[i], &v, why, why_len) != 0)
            return -1;
    }
    return 0;
}

size_t swa_host_memory_default(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0)
        return SIZE_MAX;
    return (size_t)((double)pages * (double)page * 0.8);
}
