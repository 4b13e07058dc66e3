/* xfail.h — known failures: `swadiff run --xfail FILE` and a case's
 * "xfail" key (docs/selection.md).
 *
 * FILE holds one entry a line:
 *
 *     # comments and blank lines are ignored
 *     ID_GLOB                  # reason
 *     ID_GLOB  BACKEND_GLOB    # reason
 *
 * ID_GLOB matches case ids as --filter does (an exact id or an fnmatch(3)
 * glob), BACKEND_GLOB a backend name (default: every backend); the reason
 * after '#' is required.  A result a mark covers that fails (or errors) is
 * "xfailed": the run stays green.  One that passes is "xpassed": strict, the
 * run fails (exit 1) until the mark is removed.  A skip stays a skip.
 *
 * Defined in xfail.c.  Test: tests/test_xfail.c.
 * Ownership: swa_xfail_load appends to list; swa_xfail_free frees it. */
#ifndef SWADIFF_XFAIL_H
#define SWADIFF_XFAIL_H

#include "core/case.h"
#include "harness/results.h"

typedef struct swa_xfail_entry {
    char id_glob[SWA_ID_MAX];
    char backend_glob[160];     /* "" every backend */
    char reason[SWA_XFAIL_REASON_MAX];
} swa_xfail_entry;

typedef struct swa_xfail_list {
    swa_xfail_entry *items;
    int count;
} swa_xfail_list;

#ifdef __cplusplus
extern "C" {
#endif
/* Reads FILE into list.  Returns 0, or -1 with err = "FILE:LINE: expected
 * ..., got ..." (list unchanged). */
int swa_xfail_load(const char *path, swa_xfail_list *list, char *err, size_t n);
void swa_xfail_free(swa_xfail_list *list);

/* Why case c run by backend is a known failure: the case's own "xfail"
 * first, then the first entry of list (NULL: none) that matches; NULL when
 * none is. */
const char *swa_xfail_reason(const swa_xfail_list *list, const swa_case *c, const char *backend);

/* Marks r as a known failure (reason non-NULL): failed or error becomes
 * xfailed, passed becomes xpassed (xfail_was keeps what it was, the
 * message stays), a skip stays a skip. */
void swa_xfail_apply(const char *reason, swa_result *r);
#ifdef __cplusplus
}
#endif
#endif /* SWADIFF_XFAIL_H */
