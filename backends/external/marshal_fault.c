/* marshal_fault.c — a deliberate staging fault for plug-ins and adapters,
 * for testing the marshalling controls only (external_internal.h,
 * docs/controls.md).  A leaf: external.c (plug-in problems) and adapter.c
 * (adapter problems) both apply it.
 *
 * Test: tests/test_controls.c. */
#include "backends/external/external_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

swa_marshal_fault_kind swa_marshal_fault(void)
{
    static int known = -1;
    if (known < 0) {
        const char *f = getenv("SWADIFF_TEST_MARSHAL_FAULT");
        known = SWA_FAULT_NONE;
        if (f && !strcmp(f, "window_as_key_count"))
            known = SWA_FAULT_WINDOW_AS_KEY_COUNT;
        else if (f && !strcmp(f, "layout_swapped"))
            known = SWA_FAULT_LAYOUT_SWAPPED;
        else if (f && *f)
            fprintf(stderr, "swadiff: SWADIFF_TEST_MARSHAL_FAULT=%s is not a fault this swadiff knows "
                    "(window_as_key_count, layout_swapped); none applied\n", f);
        if (known != SWA_FAULT_NONE)
            fprintf(stderr, "swadiff: SWADIFF_TEST_MARSHAL_FAULT=%s: the staging of external backends is broken on "
                    "purpose (a test of the marshalling controls)\n", f);
    }
    return (swa_marshal_fault_kind)known;
}

int swa_marshal_window_left(const swa_case *c)
{
    return swa_marshal_fault() == SWA_FAULT_WINDOW_AS_KEY_COUNT && c->window_left >= 0 ? c->window_left + 1
                                                                                       : c->window_left;
}

swa_layout swa_marshal_layout(swa_layout layout)
{
    if (swa_marshal_fault() != SWA_FAULT_LAYOUT_SWAPPED)
        return layout;
    return layout == SWA_LAYOUT_NHD ? SWA_LAYOUT_HND : SWA_LAYOUT_NHD;
}
