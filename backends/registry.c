/* registry.c — every backend in a fixed order, and the devices built into
 * this binary (host always; CUDA / HIP when compiled with
 * SWADIFF_HAVE_CUDA / SWADIFF_HAVE_HIP, whose sources define
 * swa_cuda_device_ops / swa_hip_device_ops).
 * Tested by tests/test_backend_registry.c. */
#include <string.h>

#include "backend.h"
#include "decode_aiter.h"
#include "decode_fa2.h"
#include "host/host_device.h"
#include "prefill.h"

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

const swa_device_ops *swa_device_get(swa_device kind)
{
    switch (kind) {
    case SWA_DEVICE_HOST:
        return &swa_host_device_ops;
#ifdef SWADIFF_HAVE_CUDA
    case SWA_DEVICE_CUDA:
        return &swa_cuda_device_ops;
#endif
#ifdef SWADIFF_HAVE_HIP
    case SWA_DEVICE_HIP:
        return &swa_hip_device_ops;
#endif
    default:
        return NULL;
    }
}
