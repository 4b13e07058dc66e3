#!/usr/bin/env bash
# ci/run-harness.sh [swadiff run options] — the README's first command.
#
# Installs what is missing, builds, and runs the harness over cases/ on a GPU
# when one is usable (--device auto), on the host emulation otherwise.
# Reports land in reports/latest/ (report.json, report.html, junit.xml).
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
set -e
echo "run-harness: reports in reports/latest/ (open report.html); exit $rc"
exit $rc
