#!/usr/bin/env bash
# ci/coverage.sh — line and branch coverage of the backends' host code
# (plan logic backends/*.c and the host emulation backends/host/*.c) from
# `swadiff run --device host cases` alone: no unit test counts, so a branch
# only the tests reach is a branch no case exercises (issue 14, item 2).
#
#   ci/coverage.sh                 # build-coverage/, gate: lines >= 95%, branches >= 90%
#   SWADIFF_COVERAGE_LINES=0 SWADIFF_COVERAGE_BRANCHES=0 ci/coverage.sh     # the figure without a gate
#   SWADIFF_COVERAGE_BUILD=DIR ci/coverage.sh
#
# Writes reports/coverage/summary.txt (committed: the figure the gate saw)
# and build-coverage/coverage/ (per-file text and HTML).
#
# Measured: the .c files of backends/ and backends/host/ (headers with
# inline code are counted where they are compiled in, but not reported:
# the brief of issue 14 is the .c files).  Not measured: the CUDA/HIP
# sources (not built on the host), backends/external/ (the plug-in and
# adapter client: exercised by --plugin/--adapter runs and their tests, not
# by the shipped case library, which names built-in backends only), and
# backends/mutants.c (the mutant table, read by selftest/list).
# Exclusion markers (GCOVR_EXCL_*) in the measured files leave out only what
# no case can reach, each tagged with its category and explained at the top
# of its file: mutant-only code and mutant switches (`run cases` runs no
# mutant; `swadiff selftest`, stage 2 of ci/run-tests.sh, runs them all),
# out-of-memory paths, executors missing from a device table (the host,
# CUDA and HIP tables fill all of them), defensive checks against arguments
# the harness always builds consistently, and the backend tables' handling
# of calls the harness never makes (tests/test_backend_options.c exercises
# those); plus the reachability rules of backends/plan_decisions.c, which
# serve `swadiff coverage`.  Everything a case can reach counts.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${SWADIFF_COVERAGE_BUILD:-build-coverage}
jobs=$(nproc 2>/dev/null || echo 2)
command -v gcovr >/dev/null || { echo "coverage: gcovr missing (ci/setup-deps.sh installs it)" >&2; exit 2; }

t0=$(date +%s)
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DSWADIFF_COVERAGE=ON -DSWADIFF_CUDA=OFF -DSWADIFF_HIP=OFF \
      -DSWADIFF_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j "$jobs" --target swadiff >/dev/null
t1=$(date +%s)
find "$build" -name '*.gcda' -delete
rm -rf "$build/run"
"$build/swadiff" run --device host -q --report "$build/run" cases
t2=$(date +%s)

mkdir -p reports/coverage "$build/coverage"
# --exclude backends/registry.c: name lookup for the command line (list
# devices, --device auto/cuda/hip, --backend), no backend behaviour; a run
# on the host reaches only its host row (tests/test_backend_registry.c has the rest)
# --exclude backends/launch_choice.c: the GPU dispatch's launch chooser; a run
# on the host emulation never launches a GPU kernel, so it never calls it
# (tests/test_launch_choice.c and `swadiff coverage --launches` do)
filters=(--filter 'backends/[^/]+\.c$' --filter 'backends/host/[^/]+\.c$' --exclude 'backends/mutants\.c$'
         --exclude 'backends/registry\.c$' --exclude 'backends/launch_choice\.c$')
line_gate=${SWADIFF_COVERAGE_LINES:-95}
branch_gate=${SWADIFF_COVERAGE_BRANCHES:-90}
gcovr --root . "${filters[@]}" --object-directory "$build" --txt "$build/coverage/files.txt" \
      --html-details "$build/coverage/index.html" "$build" >/dev/null
gcovr --root . "${filters[@]}" --object-directory "$build" --branches --txt "$build/coverage/branches.txt" "$build" >/dev/null
set +e
gcovr --root . "${filters[@]}" --object-directory "$build" --print-summary \
      --fail-under-line "$line_gate" --fail-under-branch "$branch_gate" --txt "$build/coverage/gate.txt" "$build" \
      > "$build/coverage/summary.log"
# (not --txt /dev/null: gcovr replaces its output file, and as root that
# left a regular file at /dev/null, which later broke the HIP build)
rc=$?
set -e
t3=$(date +%s)
{
  echo "# ci/coverage.sh: gcovr over backends/*.c and backends/host/*.c (backends/mutants.c, backends/registry.c, backends/launch_choice.c excluded)"
  echo "# from \`swadiff run --device host cases\` alone ($(ls cases/*.json cases/*/*.json 2>/dev/null | wc -l) case files);"
  echo "# gate: lines >= ${line_gate}%, branches >= ${branch_gate}% (CI: 95/90)"
  grep -E '^(lines|branches|functions):' "$build/coverage/summary.log" || cat "$build/coverage/summary.log"
  echo
  cat "$build/coverage/files.txt"
} > reports/coverage/summary.txt
cat reports/coverage/summary.txt
echo "coverage: build $((t1 - t0)) s, run $((t2 - t1)) s, gcovr $((t3 - t2)) s; details in $build/coverage/"
if [ $rc -ne 0 ]; then
  echo "coverage: below the gate (lines >= ${line_gate}%, branches >= ${branch_gate}%): see $build/coverage/branches.txt" >&2
fi
exit $rc
