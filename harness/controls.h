/* controls.h — the marshalling controls of a run with external backends.
 *
 * A green from a plug-in or an adapter is only worth something if the
 * harness handed it the right problem.  Before such a run, swadiff runs its
 * own exact backend and its one-key-short twin through the same staging
 * code (the built-in plug-in of backends/external/control.c for plug-ins;
 * the shipped numpy adapters, numpy_exact:all_forms and
 * numpy_wrong_window:window_short, for adapters) on two built-in cases and
 * a small sample of the run's own cases.  The positive control reads every
 * form of the problem and must pass; the negative control must fail where
 * a window binds.  If either does not, the staging is broken: the run says
 * so, and every external result is marked untrustworthy (a pass becomes an
 * error).  Test: tests/test_controls.c. */
#ifndef SWADIFF_CONTROLS_H
#define SWADIFF_CONTROLS_H

#include "harness/run.h"

#ifdef __cplusplus
extern "C" {
#endif
/* Runs the controls when the run's (case, backend) pairs include an external
 * backend (of a plug-in, an adapter or both), on the host, in this process,
 * and fills rr->controls; prints its verdict on stderr (also under --quiet).
 * SWADIFF_NO_CONTROLS=1 skips them (state NOT_RUN, said so). */
void swa_controls_run(const swa_run_config *cfg, const swa_case_list *all, const int *selected, int nsel,
                      bool has_plugin, bool has_adapter, swa_run_results *rr);
/* Marks r when the controls found the staging broken and r is an external
 * backend's result: untrustworthy, and a pass becomes an error that says why. */
void swa_controls_mark(const swa_controls *ctl, swa_result *r);
#ifdef __cplusplus
}
#endif
#endif /* SWADIFF_CONTROLS_H */
