#!/usr/bin/env bash
# ci/run-harness.sh [swadiff run options] — the README's first command.
#
# Installs what is missing, builds, and runs the harness over cases/ on a GPU
# when one is usable (--device auto), on the host emulation otherwise.
# Reports land in reports/latest/ (report.json, report.html, junit.xml).
# On a GPU, the launch-coverage gate runs on the report (a launch choice of
# the GPU's kernels no case takes, or a launch the chooser did not predict,
# exits 1).
# Exit code: swadiff's (0 passed, 1 mismatch, 2 case error, 3 runtime error,
# 5 nothing compared).
set -euo pipefail
cd "$(dirname "$0")/.."
ci/setup-deps.sh
ci/build.sh build
mkdir -p reports/latest
set +e
build/swadiff run cases --device auto --report reports/latest "$@"
rc=$?
# On a GPU (the report names a launch target) over the whole library: every
# launch choice the GPU's kernels can take was taken, and every launch was
# the one the chooser predicted (swadiff coverage --launches-from)
if [ $# -eq 0 ] && grep -q '"launch_target"' reports/latest/report.json 2>/dev/null; then
  build/swadiff coverage -q --launches-from reports/latest/report.json
  lrc=$?
  if [ "$lrc" -ne 0 ] && [ "$rc" -eq 0 ]; then rc=$lrc; fi
fi
set -e
echo "run-harness: reports in reports/latest/ (open report.html); exit $rc"
exit $rc
