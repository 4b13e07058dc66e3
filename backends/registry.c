/* registry.c — every backend in a fixed order, and the devices built into
 * this binary (host always; CUDA / HIP when compiled with
 * SWADIFF_HAVE_CUDA / SWADIFF_HAVE_HIP, whose sources define
 * swa_cuda_device_ops / swa_hip_device_ops).
 *
 * Adding a device: its enum value in core/common.h, one row of device_table
 * below, and its sources in CMake.  Nothing else names devices.
 * Tested by tests/test_backend_registry.c. */
#include <stdio.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/decode_aiter.h"
#include "backends/decode_fa2.h"
#include "backends/host/host_device.h"
#include "backends/prefill.h"

#ifdef SWADIFF_HAVE_CUDA
extern const swa_device_ops swa_cuda_device_ops;
#endif
#ifdef SWADIFF_HAVE_HIP
extern const swa_device_ops swa_hip_device_ops;
#endif

static const swa_backend *const backend_table[] = {
    &swa_backend_prefill,
    &swa_backend_decode_fa2,
    &swa_backend_decode_aiter,
    &swa_backend_decode_auto,
};

const swa_backend *const *swa_backends(int *count)
{
    if (count)
        *count = (int)(sizeof backend_table / sizeof backend_table[0]);
    return backend_table;
}

const swa_backend *swa_backend_by_name(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < sizeof backend_table / sizeof backend_table[0]; i++)
        if (strcmp(backend_table[i]->name, name) == 0)
            return backend_table[i];
    return NULL;
}

const swa_backend *swa_backend_by_flag(unsigned flag)
{
    for (size_t i = 0; i < sizeof backend_table / sizeof backend_table[0]; i++)
        if (backend_table[i]->flag == flag)
            return backend_table[i];
    return NULL;
}

/* Every device swadiff knows, in the order `--device auto` tries the GPUs;
 * ops is NULL when this binary was built without it. */
static const struct {
    const char *name;
    swa_device kind;
    const char *cmake_option;
    const swa_device_ops *ops;
} device_table[] = {
    {"host", SWA_DEVICE_HOST, NULL, &swa_host_device_ops},
#ifdef SWADIFF_HAVE_CUDA
    {"cuda", SWA_DEVICE_CUDA, "SWADIFF_CUDA", &swa_cuda_device_ops},
#else
    {"cuda", SWA_DEVICE_CUDA, "SWADIFF_CUDA", NULL},
#endif
#ifdef SWADIFF_HAVE_HIP
    {"hip", SWA_DEVICE_HIP, "SWADIFF_HIP", &swa_hip_device_ops},
#else
    {"hip", SWA_DEVICE_HIP, "SWADIFF_HIP", NULL},
#endif
};
#define DEVICE_COUNT (sizeof device_table / sizeof device_table[0])
_Static_assert(DEVICE_COUNT == SWA_DEVICE_COUNT, "one device_table row per swa_device kind");

const swa_device_ops *swa_device_get(swa_device kind)
{
    for (size_t i = 0; i < DEVICE_COUNT; i++)
        if (device_table[i].kind == kind)
            return device_table[i].ops;
    return NULL;
}

const swa_device_ops *swa_device_by_name(const char *name, const char **cmake_option)
{
    if (cmake_option)
        *cmake_option = NULL;
    for (size_t i = 0; name && i < DEVICE_COUNT; i++)
        if (strcmp(device_table[i].name, name) == 0) {
            if (!device_table[i].ops && cmake_option)
                *cmake_option = device_table[i].cmake_option;
            return device_table[i].ops;
        }
    return NULL;
}

const swa_device_ops *swa_device_first_gpu(char *why, size_t n)
{
    for (size_t i = 0; i < DEVICE_COUNT; i++) {
        const swa_device_ops *d = device_table[i].ops;
        if (d && d->kind != SWA_DEVICE_HOST && d->available(why, n))
            return d;
    }
    return NULL;
}

const swa_device_ops *swa_device_at(int i, const char **name, const char **cmake_option)
{
    if (i < 0 || (size_t)i >= DEVICE_COUNT)
        return NULL;
    if (name)
        *name = device_table[i].name;
    if (cmake_option)
        *cmake_option = device_table[i].cmake_option;
    return device_table[i].ops;
}

void swa_device_names_text(char *buf, size_t n)
{
    size_t used = 0;
    if (n)
        buf[0] = '\0';
    for (size_t i = 0; i < DEVICE_COUNT; i++) {
        const char *sep = i == 0 ? "" : i + 1 == DEVICE_COUNT ? " or " : ", ";
        int w = snprintf(buf + used, used < n ? n - used : 0, "%s%s", sep, device_table[i].name);
        used += w > 0 ? (size_t)w : 0;
    }
}
