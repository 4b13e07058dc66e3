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
#
# Left out of the measured files: only what no case can reach, by the
# patterns below (gcovr --exclude-lines-by-pattern / --exclude-branches-by-
# pattern, one regex each, matched from the start of the source line).  A
# line pattern drops the line and its branches: it matches only statements
# that run after a test went the way no case makes it go.  A branch pattern
# drops the branches of a line and keeps its line count: it matches the
# tests themselves, which every case runs.  They key on SWA_ERR_NOMEM, on
# the spellings of backends/guards.h (SWA_ALLOC_FAILED, SWA_API_GUARD,
# SWA_API_ERROR), on the SWA_MUTANT_ constants and on a few fixed shapes
# of the backend tables (the option and device tests).  A guard whose body
# is one short statement without a spelling of its own (`return st;`,
# `return;`, `return NULL;`, a free then `return st;`, a mutant's one-
# statement effect) sits on the guard's line: gcov counts the line as run
# (the test did run) and the branch pattern drops the branches that would
# show the body never did.  SWA_API_ERROR is a macro, so gcov counts an
# error call that spans several lines on its first line.
#
#   out-of-memory (lines): a statement that returns or sets SWA_ERR_NOMEM
#       (`return SWA_ERR_NOMEM;`, `free(p); return SWA_ERR_NOMEM;`,
#       `st = SWA_ERR_NOMEM;`, `st = swa_error_set(err, SWA_ERR_NOMEM, ...);
#       goto done;`).  (branches): the tests of allocations' results,
#       SWA_ALLOC_FAILED(...), `!(x = swa_plan_calloc(...))` in the chains
#       of the plan builders, `fa2_alloc(...) == SWA_ERR_NOMEM`.  No case
#       makes an allocation fail.
#   calls the harness never makes (lines): `return SWA_API_ERROR(...)`
#       (also after a `free(tiles); ` on its line).  (branches): the tests
#       spelled SWA_API_GUARD(...), and the tests of the plan and run
#       options for NULL (`o ? o->`, `o && o->`, `r && r->`, `if (o)`,
#       `backend_plan ?`).  harness/run.c passes options with a device, runs
#       a plan with its own window and return_lse (and asks prefill for its
#       LSE), plans only what
#       supports() accepted (so plan() never refuses and run() never meets
#       a device without the executor supports() saw), frees only what it
#       planned; the loader validated the case and the planners build the
#       inputs and plans consistently with it, so the backends' and
#       executors' re-checks pass, and the calls only such a call (or an
#       allocation) can fail return SWA_OK.  tests/test_backend_options.c
#       and the plan and host unit tests take the other way of each.
#   executors a device table lacks, at supports() (lines):
#       `return swa_device_lacks(...)`; (branches): `if (dev && ... !dev->X)`.
#       The host table (the only one a host run uses), like the CUDA and HIP
#       tables, fills every executor; dev is NULL only for a C caller.
#   mutant switches (branches): a comparison with a SWA_MUTANT_ constant.
#       `run cases` runs no mutant; `swadiff selftest` (ci/run-tests.sh
#       stage 2) runs them all.
#
# Markers (GCOVR_EXCL_*) remain where no pattern can tell, each with its
# reason at the line: mutant-only blocks of several statements (START/STOP
# in decode_fa2.c, prefill.c, host/host_decode.c) and a forced-split return
# after a two-line mutant test (prefill.c), tests of a variable that holds a
# mutant switch (keep_offsets, quirk, keyed_by_window: BR_LINE), prefill's
# run of a window other than the plan's with the mutant branch inside it,
# swa_prefill_plan_free (no run calls it), and the reachability rules of
# backends/plan_decisions.c, which serve `swadiff coverage`.  Everything a
# case can reach counts.
#
# The exclusions are checked against the run (a second gcovr pass with
# --no-markers, which also turns the patterns off): a line left out that
# the run executed, or a line whose branches are left out although the run
# took every one of them, fails this script (exit 3) and is listed; that is
# a pattern or marker hiding something the cases do reach.  The summary
# says how many lines and branches were left out.
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
# The exclusion patterns (the header says what each leaves out and why no
# case reaches it); gcovr takes one regex of each kind.
line_patterns=(
  '\s*(\w+\(\w+\); )?(return SWA_ERR_NOMEM;|st = SWA_ERR_NOMEM;|st = swa_error_set\(err, SWA_ERR_NOMEM,)'  # out-of-memory
  '\s*(\w+\(\w+\); )?return SWA_API_ERROR\('                   # calls the harness never makes
  '\s*return swa_device_lacks\('                                 # executors a device table lacks
)
branch_patterns=(
  '.*(\bSWA_ALLOC_FAILED\(|!\([\w>.-]+ = swa_plan_calloc\(|== SWA_ERR_NOMEM\))'  # out-of-memory
  '.*\bSWA_API_GUARD\('                                          # calls the harness never makes
  '.*\b(o \? o->|o && o->|r && r->|backend_plan \?)'              # ... the options tested for NULL
  '\s*if \(o\)$'
  '\s*if \(dev && .*!dev->\w+\)$'                                # executors a device table lacks
  '.*[!=]= SWA_MUTANT_[A-Z0-9_]+'                                 # mutant switches
)
join() { local IFS='|'; echo "(?:$*)"; }
exclusions=(--exclude-lines-by-pattern "$(join "${line_patterns[@]}")"
            --exclude-branches-by-pattern "$(join "${branch_patterns[@]}")")
line_gate=${SWADIFF_COVERAGE_LINES:-95}
branch_gate=${SWADIFF_COVERAGE_BRANCHES:-90}
gcovr --root . "${filters[@]}" "${exclusions[@]}" --object-directory "$build" --txt "$build/coverage/files.txt" \
      --html-details "$build/coverage/index.html" "$build" >/dev/null
gcovr --root . "${filters[@]}" "${exclusions[@]}" --object-directory "$build" --branches --txt "$build/coverage/branches.txt" "$build" >/dev/null
set +e
gcovr --root . "${filters[@]}" "${exclusions[@]}" --object-directory "$build" --print-summary \
      --fail-under-line "$line_gate" --fail-under-branch "$branch_gate" --txt "$build/coverage/gate.txt" \
      --json "$build/coverage/kept.json" "$build" \
      > "$build/coverage/summary.log"
# (not --txt /dev/null: gcovr replaces its output file, and as root that
# left a regular file at /dev/null, which later broke the HIP build)
rc=$?
set -e
# The exclusions against the run: the same files with nothing left out
# (--no-markers turns the patterns off too), then every line or branch the
# first pass left out must be one the run never executed / took.
gcovr --root . "${filters[@]}" --no-markers --object-directory "$build" --json "$build/coverage/all.json" "$build" >/dev/null
excl_rc=0
python3 - "$build/coverage/all.json" "$build/coverage/kept.json" > "$build/coverage/exclusions.txt" <<'PY' || excl_rc=3
import json, sys
def lines(path):
    return {(f["file"], l["line_number"]): l for f in json.load(open(path))["files"] for l in f["lines"]}
every, kept = lines(sys.argv[1]), lines(sys.argv[2])
left_lines = left_branches = 0
bad = []
for key, l in sorted(every.items()):
    if l["gcovr/noncode"]:
        continue
    k = kept.get(key)
    taken = [b["count"] for b in l["branches"]]
    if k is None or k["gcovr/noncode"]:
        left_lines += 1
        left_branches += len(taken)
        if l["count"] > 0:
            bad.append(f"{key[0]}:{key[1]}: line left out, but the run executed it {l['count']} times")
    elif len(k["branches"]) < len(taken):
        left_branches += len(taken) - len(k["branches"])
        if taken and min(taken) > 0:
            bad.append(f"{key[0]}:{key[1]}: branches left out, but the run took every one of them")
print(f"# left out: {left_lines} lines and {left_branches} branches (patterns and markers, see ci/coverage.sh); "
      + ("none the run reached" if not bad else f"{len(bad)} the run reached:"))
for b in bad:
    print("#   " + b)
sys.exit(1 if bad else 0)
PY
t3=$(date +%s)
{
  echo "# ci/coverage.sh: gcovr over backends/*.c and backends/host/*.c (backends/mutants.c, backends/registry.c, backends/launch_choice.c excluded)"
  echo "# from \`swadiff run --device host cases\` alone ($(ls cases/*.json cases/*/*.json 2>/dev/null | wc -l) case files);"
  echo "# gate: lines >= ${line_gate}%, branches >= ${branch_gate}% (CI: 95/90)"
  grep -E '^(lines|branches|functions):' "$build/coverage/summary.log" || cat "$build/coverage/summary.log"
  cat "$build/coverage/exclusions.txt"
  echo
  cat "$build/coverage/files.txt"
} > reports/coverage/summary.txt
cat reports/coverage/summary.txt
echo "coverage: build $((t1 - t0)) s, run $((t2 - t1)) s, gcovr $((t3 - t2)) s; details in $build/coverage/"
if [ $rc -ne 0 ]; then
  echo "coverage: below the gate (lines >= ${line_gate}%, branches >= ${branch_gate}%): see $build/coverage/branches.txt" >&2
fi
if [ $excl_rc -ne 0 ]; then
  echo "coverage: an exclusion leaves out what the run reached (listed above): fix the pattern or marker" >&2
fi
exit $(( rc != 0 ? rc : excl_rc ))
