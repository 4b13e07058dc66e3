/* dump.h — `--dump DIR`: a case's tensors, the reference's answer and each
 * backend's answer as NumPy .npy files, for offline debugging in Python.
 *
 * Layout: DIR/<case folder>/ with
 *   q.npy            [total_qo, num_qo_heads, head_dim]   the exact input values
 *   k.npy, v.npy     [total_kv, num_kv_heads, head_dim]   logical, un-paged,
 *                                                          requests concatenated
 *   out_ref.npy      [total_qo, num_qo_heads, head_dim]   reference (double -> f4)
 *   lse_ref.npy      [total_qo, num_qo_heads]             natural log, -inf = no key
 *   out_<backend>.npy, lse_<backend>.npy                   same shapes, LSE natural log
 *   meta.json        id, qo/kv indptr and lengths, causal, window_left, sm_scale,
 *                    soft_cap, heads, head_dim, dtype, ... (cJSON)
 * Every .npy is format version 1.0, dtype '<f4' (little-endian float32), C
 * order: `numpy.load(path)` reads it.  fp16/bf16 values widen to f4 exactly.
 *
 * Case folder name (swa_dump_dir_name): the case id with
 *   '/' -> "__",  ':' -> "--",
 *   any byte outside [A-Za-z0-9._,=+-] -> "%XX" (two upper-case hex digits),
 *   a leading '.' -> "%2E" (no hidden or "." / ".." folders),
 *   an empty id -> "case";
 * a result over SWA_DUMP_NAME_MAX bytes is cut there and suffixed with '~'
 * and the 16-hex-digit FNV-1a hash of the whole id, so long ids stay
 * distinct.  The mapping is for people; meta.json holds the exact id.
 *
 * Tested by tests/test_dump.c (header and data read back in C, and with
 * Python: numpy when installed, the standard library otherwise). */
#ifndef SWADIFF_DUMP_H
#define SWADIFF_DUMP_H

#include "core/case.h"
#include "core/data.h"

#define SWA_DUMP_NAME_MAX 180

#ifdef __cplusplus
extern "C" {
#endif

/* Writes the case folder name for id into buf (n >= SWA_DUMP_NAME_MAX + 18). */
void swa_dump_dir_name(const char *id, char *buf, size_t n);

/* Creates DIR as needed and checks that a file can be made in it (one is
 * created and removed), so that `run --dump DIR` fails before the run, not
 * after every case.  Returns SWA_OK or SWA_ERR_IO naming the path and the OS
 * error. */
swa_status swa_dump_prepare(const char *dir, swa_error *err);

/* Creates DIR and DIR/<case folder>/ as needed and writes q, k, v, out_ref
 * (if out_ref is not NULL), lse_ref (if lse_ref is not NULL) and meta.json.
 * Returns SWA_OK, SWA_ERR_IO (naming the path and the OS error) or
 * SWA_ERR_INVALID / SWA_ERR_NOMEM. */
swa_status swa_dump_case(const char *dir, const swa_case *c, const swa_inputs *in,
                         const double *out_ref, const double *lse_ref, swa_error *err);

/* Writes out_<backend>.npy from a backend's output in the case dtype
 * ([total_qo][num_qo_heads][head_dim]) and, when lse_natural is not NULL,
 * lse_<backend>.npy (already converted to natural log by the caller).
 * The backend name is mapped like a case id.  Same return values. */
swa_status swa_dump_backend(const char *dir, const swa_case *c, const char *backend,
                            const void *out_dtype, const float *lse_natural, swa_error *err);

/* Writes one float32 array as a .npy v1.0 file.  shape has ndim (1..8)
 * entries; data holds their product of floats. */
swa_status swa_npy_write_f32(const char *path, const float *data, const size_t *shape, int ndim,
                             swa_error *err);

#ifdef __cplusplus
}
#endif
#endif /* SWADIFF_DUMP_H */
