/* common.c — the two functions of common.h that are not inline: the error
 * setter every layer uses, and the one wall clock.
 * Test: tests/test_compare.c and every test that reads an swa_error. */
#include "core/common.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

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
