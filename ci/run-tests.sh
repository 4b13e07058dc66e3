#!/usr/bin/env bash
# ci/run-tests.sh — the README's second command: installs what is missing,
# builds, and runs the whole test suite:
#   1. the normal build and every CTest test (GPU tests skip without a GPU)
#   2. the shipped case files validate, and `swadiff selftest --device host`
#      kills every mutant
#   3. the host code rebuilt with AddressSanitizer + UBSan, the suite again
#   4. the case-loader fuzzer for a bounded time (tests/fuzz/, when built)
#   5. plan-decision coverage: `swadiff coverage cases` fails on any reachable
#      plan decision (or pair) no case makes a backend take; and launch
#      coverage: `swadiff coverage --launches T cases` fails on any launch
#      choice of the GPU kernels (kernel variant, grid, row blocks,
#      partitions, merge, template instance) that target T (h200, sm80,
#      portable) takes and no case makes it take
#   6. line/branch coverage of backends/ from `swadiff run cases` alone
#      (ci/coverage.sh, gcov + gcovr); gate lines >= 95%, branches >= 90%
#      (SWADIFF_COVERAGE_LINES / SWADIFF_COVERAGE_BRANCHES override it;
#      the figure is in reports/coverage/summary.txt)
#   7. the Python package: `pip install .` into a fresh venv, pytest and
#      pytest-xdist from the registry, tests/python (ci/test-python-package.sh;
#      SWADIFF_SKIP_PYTHON_PACKAGE=1 skips it where no registry is reachable,
#      and says so)
# Set SWADIFF_QUICK=1 to run stage 1 only.
set -euo pipefail
cd "$(dirname "$0")/.."
ci/setup-deps.sh
# the suite must leave /dev/null the character device it found (a rename
# over it, as root, once left a regular file that broke the HIP build)
devnull_ok=0
[ -c /dev/null ] && devnull_ok=1

echo "== 1/7 build and test"
ci/build.sh build
ctest --test-dir build --output-on-failure -j "$(nproc 2>/dev/null || echo 2)"
[ "${SWADIFF_QUICK:-0}" = 1 ] && exit 0

echo "== 2/7 case files and mutant kill matrix (host)"
build/swadiff validate cases
build/swadiff selftest --device host --report build/selftest cases

echo "== 3/7 AddressSanitizer + UndefinedBehaviorSanitizer build"
ci/build.sh build-asan -DSWADIFF_SANITIZE=ON -DSWADIFF_CUDA=OFF -DSWADIFF_HIP=OFF
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  LSAN_OPTIONS=suppressions="$PWD/tests/lsan.supp" \
  ctest --test-dir build-asan --output-on-failure -j "$(nproc 2>/dev/null || echo 2)"

echo "== 4/7 fuzzing"
if [ -x tests/fuzz/run-fuzz.sh ]; then
  tests/fuzz/run-fuzz.sh "${SWADIFF_FUZZ_SECONDS:-60}"
else
  echo "no fuzz targets"
fi
echo "== 5/7 plan-decision coverage of the case library"
build/swadiff coverage -q --device host --json build/coverage.json cases
for target in h200 sm80 portable; do
  build/swadiff coverage -q --launches "$target" cases
done

echo "== 6/7 line and branch coverage of backends/ from \`swadiff run cases\`"
SWADIFF_COVERAGE_LINES=${SWADIFF_COVERAGE_LINES:-95} SWADIFF_COVERAGE_BRANCHES=${SWADIFF_COVERAGE_BRANCHES:-90} \
  ci/coverage.sh
echo "== 7/7 the Python package (pip install ., pytest plugin)"
if [ "${SWADIFF_SKIP_PYTHON_PACKAGE:-0}" = 1 ]; then
  echo "run-tests: stage 7 SKIPPED (SWADIFF_SKIP_PYTHON_PACKAGE=1): the Python package was not tested"
else
  ci/test-python-package.sh
fi
if [ "$devnull_ok" = 1 ] && [ ! -c /dev/null ]; then
  echo "run-tests: /dev/null is no longer the character device: a test or a tool replaced it" >&2
  exit 1
fi
echo "run-tests: all stages passed"
