/* npy.h — NumPy .npy files (format version 1.0), written and read without
 * NumPy: `--dump` writes them for people, the adapter protocol exchanges
 * tensors with out-of-process kernels through them.  Defined in core/npy.c.
 *
 * Only what swadiff needs: little-endian numeric descrs ('<f2', '<u2',
 * '<f4', '<f8', '<i4'), C order, 1..8 dimensions.
 *
 * Ownership: swa_npy_read fills an swa_npy whose data is malloc'ed;
 * swa_npy_free releases it. */
#ifndef SWADIFF_NPY_H
#define SWADIFF_NPY_H

#include <stdio.h>

#include "core/common.h"

#define SWA_NPY_MAX_DIMS 8

typedef struct swa_npy {
    char descr[8];                 /* e.g. "<f4" */
    int ndim;
    size_t shape[SWA_NPY_MAX_DIMS];
    size_t count;                  /* product of shape */
    size_t item_size;              /* bytes per element */
    void *data;                    /* count * item_size bytes, C order */
} swa_npy;

#ifdef __cplusplus
extern "C" {
#endif

/* Writes the magic, version and header dict of a .npy file to f (the data
 * must follow, count * item_size bytes).  Returns 0, or -1 on a write error. */
int swa_npy_write_header(FILE *f, const char *descr, const size_t *shape, int ndim);

/* Writes a whole .npy file.  Returns SWA_OK or SWA_ERR_IO / SWA_ERR_INVALID
 * naming the path. */
swa_status swa_npy_write(const char *path, const char *descr, const size_t *shape, int ndim, const void *data,
                         swa_error *err);

/* Reads a whole .npy file (at most max_bytes of data).  Errors name the path
 * and what was wrong with the file (not .npy, unsupported version, Fortran
 * order, a descr swadiff does not read, a short data section). */
swa_status swa_npy_read(const char *path, size_t max_bytes, swa_npy *out, swa_error *err);
void swa_npy_free(swa_npy *a);

/* Bytes of one element of descr, 0 when swadiff does not read it. */
size_t swa_npy_item_size(const char *descr);

#ifdef __cplusplus
}
#endif
#endif /* SWADIFF_NPY_H */
