/* test_case_util.h — loading a case file written inline in a test.
 *
 * Header-only and static: each test file is its own executable. */
#ifndef SWADIFF_TEST_CASE_UTIL_H
#define SWADIFF_TEST_CASE_UTIL_H

#include <criterion/criterion.h>
#include <string.h>

#include "harness/case_load.h"

/* Parses json as the case file `name`; the test stops, quoting the loader's
 * located message, when the loader refuses it. */
static inline swa_case_list load_inline_case(const char *name, const char *json)
{
    swa_case_list list = {0};
    swa_load_error le;
    memset(&le, 0, sizeof le);
    int rc = swa_case_parse(name, json, strlen(json), &list, &le);
    char msg[2048] = "";
    if (rc)
        swa_load_error_format(&le, msg, sizeof msg);
    cr_assert_eq(rc, 0, "inline case rejected: %s", msg);
    return list;
}

#endif /* SWADIFF_TEST_CASE_UTIL_H */
