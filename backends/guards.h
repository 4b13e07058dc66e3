/* guards.h — how the backends and the host emulation spell the tests that
 * `swadiff run` never sees go the other way, so that ci/coverage.sh can
 * leave them out of its figure by pattern (its header comment lists the
 * patterns and why no case reaches what they match).
 *
 *   SWA_ALLOC_FAILED(p, ...)  true when any of the pointers is NULL: every
 *                             test of an allocation's result.  No case makes
 *                             an allocation fail.
 *   SWA_API_GUARD(cond)       cond: a test one of whose outcomes only a C
 *                             caller reaches, never the harness.  The harness
 *                             (harness/run.c) passes plan and run options with
 *                             a device, runs a plan with its own window and
 *                             return_lse, plans only what supports() accepted,
 *                             frees only what it planned; the loader
 *                             validated the case and the planners build the
 *                             inputs and plans consistently with it, so the
 *                             re-checks of the plan builders and executors
 *                             (and the statuses of calls only such a call, or
 *                             an allocation, can fail) always pass.
 *                             tests/test_backend_options.c and the plan and
 *                             host unit tests take the other outcome.
 *   SWA_API_ERROR(err, code, ...)  swa_error_set(err, code, ...): the error
 *                             such a guard returns.  A macro, so that gcov
 *                             counts a call spread over several lines on the
 *                             line it starts on.
 *
 * All three are plain expressions with the value of what they wrap. */
#ifndef SWADIFF_GUARDS_H
#define SWADIFF_GUARDS_H

#include <stdbool.h>
#include <stddef.h>

#include "core/common.h"

static inline bool swa_any_null(const void *const *ptrs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!ptrs[i])
            return true;
    return false;
}

#define SWA_ALLOC_FAILED(...)                                                                                  \
    swa_any_null((const void *const[]){__VA_ARGS__}, sizeof((const void *const[]){__VA_ARGS__}) / sizeof(void *))

#define SWA_API_GUARD(cond) (cond)

#define SWA_API_ERROR(err, code, ...) swa_error_set((err), (code), __VA_ARGS__)

#endif /* SWADIFF_GUARDS_H */
