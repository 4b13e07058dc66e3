#!/usr/bin/env bash
# ci/run-tests.sh — the README's second command: installs what is missing,
# builds, and runs the whole test suite:
#   1. the normal build and every CTest test (GPU tests skip without a GPU)
#   2. the shipped case files validate, and `swadiff selftest --device host`
#      kills every mutant
#   3. the host code rebuilt with AddressSanitizer + UBSan, the suite again
#   4. the case-loader fuzzer for a bounded time (tests/fuzz/, when built)
# Set SWADIFF_QUICK=1 to run stage 1 only.
set -euo pipefail
cd "$(dirname "$0")/.."
ci/setup-deps.sh

echo "== 1/4 build and test"
ci/build.sh build
ctest --test-dir build --output-on-failure -j "$(nproc 2>/dev/null || echo 2)"
[ "${SWADIFF_QUICK:-0}" = 1 ] && exit 0

echo "== 2/4 case files and mutant kill matrix (host)"
build/swadiff validate cases
build/swadiff selftest --device host --report build/selftest cases

echo "== 3/4 AddressSanitizer + UndefinedBehaviorSanitizer build"
ci/build.sh build-asan -DSWADIFF_SANITIZE=ON -DSWADIFF_CUDA=OFF -DSWADIFF_HIP=OFF
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  LSAN_OPTIONS=suppressions="$PWD/tests/lsan.supp" \
  ctest --test-dir build-asan --output-on-failure -j "$(nproc 2>/dev/null || echo 2)"

echo "== 4/4 fuzzing"
if [ -x tests/fuzz/run-fuzz.sh ]; then
  tests/fuzz/run-fuzz.sh "${SWADIFF_FUZZ_SECONDS:-60}"
else
  echo "no fuzz targets"
fi
echo "run-tests: all stages passed"
