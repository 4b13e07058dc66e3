/* common.h — enums, exit codes, error records and exact dtype conversions
 * shared by every part of swadiff (harness, reference, backends).
 *
 * Header-only on purpose: the fp16/bf16 conversions are used in hot loops of
 * the reference and the host emulation.  Everything here is plain C11 and
 * also compiles as CUDA C++ (the kernels include it for the enums). */
#ifndef SWADIFF_COMMON_H
#define SWADIFF_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define SWADIFF_VERSION "0.2.0"

/* Exit codes (docs/spec.md).  Precedence when several apply: 1 over 3
 * over 5 over 0 (a wrong kernel is the headline; a run with an error and
 * nothing compared is 3; one pass among many skips is 0). */
enum {
    SWA_EXIT_OK = 0,        /* every result passed; skips allowed if one passed */
    SWA_EXIT_MISMATCH = 1,  /* at least one case failed the comparison */
    SWA_EXIT_USAGE = 2,     /* bad command line or case file; nothing run */
    SWA_EXIT_RUNTIME = 3,   /* a case or backend hit a runtime error */
    SWA_EXIT_NOTHING_COMPARED = 5, /* no result passed, failed or erred: every one was
                                    * skipped, or there was none (pytest's "no tests") */
    SWA_EXIT_NO_GPU = 77,   /* a GPU was required and none is usable */
};

/* Status returned by functions that can fail inside a run.  A failure is
 * recorded in an swa_error and the harness goes on with the next case. */
typedef enum {
    SWA_OK = 0,
    SWA_ERR_INVALID = 1,     /* argument or plan/run inconsistency */
    SWA_ERR_UNSUPPORTED = 2, /* the backend cannot do this (skip) */
    SWA_ERR_DEVICE = 3,      /* CUDA/HIP error, device fault */
    SWA_ERR_NOMEM = 4,
    SWA_ERR_TIMEOUT = 5,
    SWA_ERR_IO = 6,
} swa_status;

#define SWA_MSG_MAX 1024
typedef struct swa_error {
    swa_status status;
    char message[SWA_MSG_MAX];
} swa_error;

/* Defined in core/common.c. */
#ifdef __cplusplus
extern "C" {
#endif
/* Records status+message (printf-style) and returns status. */
swa_status swa_error_set(swa_error *err, swa_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Wall-clock seconds since the epoch (CLOCK_REALTIME), the one clock of
 * every duration and timestamp in swadiff. */
double swa_now(void);
/* Writes text to path through path.tmp and a rename, so a reader never sees
 * half a file.  Returns 0, or -1 with errno set (the temporary is removed). */
int swa_write_text_file(const char *path, const char *text);
/* Whether path exists and is neither a regular file nor a folder (a device
 * such as /dev/null, a FIFO, a socket): writers write such a path in place
 * instead of renaming a temporary over it, which would replace /dev/null
 * with a regular file for every later program (as root). */
bool swa_path_is_special(const char *path);
/* A byte count from the environment variable name, for the memory caps
 * SWADIFF_MAX_CASE_BYTES, _HOST_BYTES and _DEVICE_BYTES.  Unset or empty:
 * returns 0 with *out = 0 (the caller's default).  Digits only, a positive
 * value that fits in size_t: returns 0 with *out = the value.  Anything else
 * (a sign, spaces, a suffix such as "12GB", an exponent, zero, overflow):
 * returns -1 with *out = 0 and, when why is not NULL, a message naming the
 * variable, its value and what was expected, e.g.
 *   SWADIFF_MAX_HOST_BYTES="12GB" in the environment: expected a whole
 *   number of bytes, digits only (e.g. 12000000000)
 * The caller reports it; never a silent default. */
int swa_env_bytes(const char *name, size_t *out, char *why, size_t why_len);
/* All three memory caps well formed (unset counts as well formed): 0, or -1
 * with the first malformed one's message in why.  Every command checks them
 * before it loads or runs anything (exit 2 on -1). */
int swa_env_caps_check(char *why, size_t why_len);
/* path for a message: itself when it has fewer than n bytes, else its
 * start and end around "..." with its length, e.g. "/tmp/ddd...ddd/five.json
 * (1047 bytes)", in at most n - 1 bytes (n >= 64): a path too long for
 * swadiff is named, never silently cut. */
void swa_path_abbrev(const char *path, char *buf, size_t n);
/* Address space a thread of OpenBLAS takes beyond the case's data: its
 * 128 MiB work buffer (BUFFER_SIZE of the x86-64 builds), a malloc arena's
 * 64 MiB reservation and a stack.  OpenBLAS retries a buffer it cannot map
 * for ever, so under `ulimit -v` a BLAS call without this room hangs. */
#define SWA_BLAS_THREAD_BYTES ((size_t)208 << 20)
/* Bytes of address space this process may still map under RLIMIT_AS
 * (`ulimit -v`): SIZE_MAX when there is no limit.  *limit (when not NULL)
 * gets the limit (SIZE_MAX: none). */
size_t swa_address_space_left(size_t *limit);
/* wanted, or fewer BLAS threads (at least 1) when RLIMIT_AS leaves no room
 * for that many (SWA_BLAS_THREAD_BYTES each). */
int swa_blas_threads_cap(int wanted);
/* fflush(f); when f is stdout and the flush fails, the errno of the first
 * failure is kept for swa_stdout_errno (the check at the end of main names
 * it: by then errno says nothing).  Returns what fflush returned. */
int swa_flush(FILE *f);
/* The errno of the first failed swa_flush(stdout), 0 if none failed. */
int swa_stdout_errno(void);
/* The host memory swadiff allows itself by default: 80% of physical memory
 * (SIZE_MAX when the system does not say). */
size_t swa_host_memory_default(void);
#ifdef __cplusplus
}
#endif

typedef enum { SWA_DTYPE_FP16 = 0, SWA_DTYPE_BF16 = 1, SWA_DTYPE_FP32 = 2 } swa_dtype;
typedef enum { SWA_LAYOUT_NHD = 0, SWA_LAYOUT_HND = 1 } swa_layout;
typedef enum { SWA_KV_PAGED = 0, SWA_KV_RAGGED = 1 } swa_kv_mode;
typedef enum {
    SWA_DIST_NORMAL = 0,
    SWA_DIST_UNIFORM = 1,
    SWA_DIST_POISON = 2,
    SWA_DIST_EDGE = 3, /* window-edge data: a one-key shift of the window moves every row (core/data.c) */
} swa_dist;
/* Device kinds; names, and whether each is built, live in the registry
 * (backends/registry.c). */
typedef enum { SWA_DEVICE_HOST = 0, SWA_DEVICE_CUDA = 1, SWA_DEVICE_HIP = 2, SWA_DEVICE_COUNT = 3 } swa_device;

static inline const char *swa_dtype_name(swa_dtype d)
{
    return d == SWA_DTYPE_FP16 ? "fp16" : d == SWA_DTYPE_BF16 ? "bf16" : "fp32";
}
static inline size_t swa_dtype_size(swa_dtype d) { return d == SWA_DTYPE_FP32 ? 4 : 2; }
static inline const char *swa_layout_name(swa_layout l) { return l == SWA_LAYOUT_NHD ? "NHD" : "HND"; }

/* ---------------------------------------------------------------------------
 * Exact conversions.  fp16 and bf16 values widen to float exactly; narrowing
 * rounds to nearest, ties to even, with overflow to infinity and NaN kept
 * NaN (quiet), exactly as __float2half_rn / __float2bfloat16_rn do.  No libm,
 * no hardware F16C, so every machine produces the same bits. */

static inline uint32_t swa_f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float swa_bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static inline float swa_bf16_to_f32(uint16_t h) { return swa_bits_f32((uint32_t)h << 16); }

static inline uint16_t swa_f32_to_bf16(float f)
{
    uint32_t u = swa_f32_bits(f);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu))
        return (uint16_t)((u >> 16) | 0x0040u); /* quiet NaN, sign kept */
    uint32_t lsb = (u >> 16) & 1u;
    u += 0x7fffu + lsb;
    return (uint16_t)(u >> 16);
}

static inline float swa_fp16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    uint32_t u;
    if (exp == 0) {
        if (man == 0) {
            u = sign;
        } else { /* subnormal: normalise */
            int e = -1;
            do { man <<= 1; e++; } while (!(man & 0x400u));
            man &= 0x3ffu;
            u = sign | ((uint32_t)(127 - 15 - e) << 23) | (man << 13);
        }
    } else if (exp == 31) {
        u = sign | 0x7f800000u | (man << 13) | (man ? 0x00400000u : 0);
    } else {
        u = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    return swa_bits_f32(u);
}

static inline uint16_t swa_f32_to_fp16(float f)
{
    uint32_t u = swa_f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t abs = u & 0x7fffffffu;
    if (abs >= 0x7f800000u) /* inf or NaN */
        return (uint16_t)(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0));
    if (abs >= 0x477ff000u) /* rounds to >= 65520: overflow */
        return (uint16_t)(sign | 0x7c00u);
    if (abs < 0x38800000u) { /* result subnormal or zero (|f| < 2^-14) */
        if (abs < 0x33000000u) /* < 2^-25: rounds to 0 */
            return sign;
        uint32_t e = abs >> 23;
        uint32_t man = (abs & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126 - e; /* 14..24 */
        uint32_t half = 1u << (shift - 1);
        uint32_t rest = man & ((1u << shift) - 1);
        uint32_t r = man >> shift;
        if (rest > half || (rest == half && (r & 1u)))
            r++;
        return (uint16_t)(sign | r);
    }
    uint32_t lsb = (abs >> 13) & 1u;
    abs += 0xfffu + lsb;
    abs -= (uint32_t)(127 - 15) << 23;
    return (uint16_t)(sign | (abs >> 13));
}

/* Round a float to the nearest value representable in dtype. */
static inline float swa_round_to(swa_dtype d, float f)
{
    if (d == SWA_DTYPE_FP16) return swa_fp16_to_f32(swa_f32_to_fp16(f));
    if (d == SWA_DTYPE_BF16) return swa_bf16_to_f32(swa_f32_to_bf16(f));
    return f;
}

/* Load / store element i of a buffer stored in dtype. */
static inline float swa_load(swa_dtype d, const void *base, size_t i)
{
    if (d == SWA_DTYPE_FP16) return swa_fp16_to_f32(((const uint16_t *)base)[i]);
    if (d == SWA_DTYPE_BF16) return swa_bf16_to_f32(((const uint16_t *)base)[i]);
    return ((const float *)base)[i];
}
static inline void swa_store(swa_dtype d, void *base, size_t i, float f)
{
    if (d == SWA_DTYPE_FP16) ((uint16_t *)base)[i] = swa_f32_to_fp16(f);
    else if (d == SWA_DTYPE_BF16) ((uint16_t *)base)[i] = swa_f32_to_bf16(f);
    else ((float *)base)[i] = f;
}

#endif /* SWADIFF_COMMON_H */
