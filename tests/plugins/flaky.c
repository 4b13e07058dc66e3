/* flaky.c — the example plug-in's exact attention (examples/plugin_minimal),
 * made nondeterministic on purpose for `swadiff run --repeat`
 * (tests/test_repeat.c).  Counting its calls in the process:
 *   flaky:one_bit     every even call flips the lowest bit of output
 *                     element 0: whichever parity a case's run 1 has, its
 *                     later runs differ from it in that one element, by one
 *                     ulp (within the tolerance, so a single run passes);
 *   flaky:lse_only    every even call adds one ulp to LSE entry 0 only;
 *   flaky:steady      never changes: the exact backend, a control;
 *   flaky:one_bit_measured  as one_bit, but declares nothing.
 * The first three declare themselves deterministic (plug-in ABI 3), so
 * --repeat holds them to it; the last is measured, never judged.
 * Built like the other fixtures of tests/plugins/ (tests/CMakeLists.txt). */
#define swadiff_plugin_entry minimal_plugin_entry
#include "../../examples/plugin_minimal/plugin_minimal.c"
#undef swadiff_plugin_entry

#include <math.h>
#include <string.h>

static long calls;

static swadiff_rc run_one_bit(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg,
                              size_t msg_size)
{
    swadiff_rc rc = run_exact(plan, p, o, msg, msg_size);
    if (rc != SWADIFF_RC_OK || ++calls % 2)
        return rc;
    if (p->total_qo > 0)
        ((unsigned char *)o->out)[0] ^= 1; /* little endian: the lowest mantissa bit of element 0 */
    return rc;
}

static swadiff_rc run_lse_only(void *plan, const swadiff_problem *p, const swadiff_output *o, char *msg,
                               size_t msg_size)
{
    swadiff_rc rc = run_exact(plan, p, o, msg, msg_size);
    if (rc == SWADIFF_RC_OK && ++calls % 2 == 0 && o->lse && p->total_qo > 0 && isfinite(o->lse[0]))
        o->lse[0] = nextafterf(o->lse[0], INFINITY);
    return rc;
}

static const swadiff_plugin_backend flaky_backends[] = {
    {"one_bit", "exact, but every second run flips one output bit", SWADIFF_MEM_HOST, LN_BASE, supports, NULL,
     run_one_bit, NULL, NULL, SWADIFF_INVARIANCE_DETERMINISTIC},
    {"lse_only", "exact, but every second run moves LSE entry 0 by one ulp", SWADIFF_MEM_HOST, LN_BASE, supports,
     NULL, run_lse_only, NULL, NULL, SWADIFF_INVARIANCE_DETERMINISTIC},
    {"steady", "exact, the same bits every run", SWADIFF_MEM_HOST, LN_BASE, supports, NULL, run_exact, NULL, NULL,
     SWADIFF_INVARIANCE_DETERMINISTIC},
    {"one_bit_measured", "as one_bit, declaring nothing: --repeat measures its differences", SWADIFF_MEM_HOST,
     LN_BASE, supports, NULL, run_one_bit, NULL, NULL, 0},
};

static const swadiff_plugin flaky = {SWADIFF_PLUGIN_ABI_VERSION, "flaky",
                                     (int32_t)(sizeof flaky_backends / sizeof flaky_backends[0]), flaky_backends};

SWADIFF_PLUGIN_EXPORT const swadiff_plugin *swadiff_plugin_entry(void) { return &flaky; }
