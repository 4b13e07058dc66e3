#!/usr/bin/env bash
# ci/gpu-sanitize.sh [SWADIFF] [OUT_DIR] — compute-sanitizer over the GPU case
# library (needs an NVIDIA GPU and compute-sanitizer on PATH or in
# /usr/local/cuda/bin).
#
#   memcheck  : every shipped case except the model-sized ones (cases/models/)
#               (SWADIFF_SANITIZE_QUICK=1: the seed, CUDA-graph and return_lse files)
#   racecheck : the window-edge, seed and layout cases (racecheck is ~100x
#               slower, so the big decode batches are left out)
#   SWADIFF_SANITIZE_PERSISTENT=1 (a Hopper GPU and an sm_90a build): both
#               tools again over the case files whose prefill plans have
#               128-row tiles, with SWADIFF_CUDA_PREFILL_ENGINE=
#               wgmma-ws:2 (the persistent kernel, each of its
#               two CTAs running several work items)
#
# Runs in-process (--no-isolate) so the sanitizer sees every kernel.  Writes
# OUT_DIR/memcheck.txt, racecheck.txt and summary.txt; exits non-zero when the
# sanitizer reports an error or a case fails.  Committed results:
# reports/gpu/h200/sanitize-summary.txt (the quick set).
set -uo pipefail
[ -d cases ] || cd "$(dirname "$0")/.."
swadiff=${1:-build/swadiff}
out=${2:-reports/latest/sanitize}
mkdir -p "$out"
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [ ! -x "$cs" ]; then echo "gpu-sanitize: compute-sanitizer not found" >&2; exit 77; fi

if [ -n "${SWADIFF_SANITIZE_QUICK:-}" ]; then
  memcheck_cases=(cases/seed000_paged_prefill.json cases/seed003_aiter_decode.json cases/cuda_graph.json
                  cases/return_lse.json)
  racecheck_cases=(cases/seed000_paged_prefill.json cases/return_lse.json)
else
  memcheck_cases=(cases/window_edges.json cases/seed000_paged_prefill.json cases/seed003_aiter_decode.json
                  cases/layouts.json cases/return_lse.json cases/cuda_graph.json cases/poison.json
                  cases/window_right.json cases/chunked.json cases/empty_rows.json cases/gqa_window_tile.json
                  cases/layers.json cases/page_units.json cases/softcap_large.json cases/head_dims.json
                  cases/finite_sentinel.json)
  racecheck_cases=(cases/window_edges.json cases/seed000_paged_prefill.json cases/layouts.json
                   cases/window_right.json cases/chunked.json cases/empty_rows.json)
fi
tmo=${SWADIFF_T_SANITIZE:-1800}

status=0
logs=()
: >"$out/summary.txt"
# sanitize TOOL LOG LABEL CASE...: one compute-sanitizer pass over a swadiff
# run of the case files (the caller's environment applies), its exit status
# in summary.txt
sanitize() {
  local tool=$1 log=$2 label=$3
  shift 3
  local opts=(--tool memcheck --leak-check full)
  [ "$tool" = racecheck ] && opts=(--tool racecheck --racecheck-report hazard)
  timeout "$tmo" "$cs" "${opts[@]}" --error-exitcode 99 \
    "$swadiff" run --device cuda --no-isolate --quiet --no-explain "$@" >"$out/$log" 2>&1
  local rc=$?
  echo "$label: exit $rc" | tee -a "$out/summary.txt"
  [ $rc -eq 0 ] || status=1
  logs+=("$out/$log")
}
sanitize memcheck memcheck.txt memcheck "${memcheck_cases[@]}"
sanitize racecheck racecheck.txt racecheck "${racecheck_cases[@]}"
if [ -n "${SWADIFF_SANITIZE_PERSISTENT:-}" ]; then
  persistent_cases=(cases/gqa_window_tile.json cases/window_right.json cases/chunked.json cases/empty_rows.json)
  for tool in memcheck racecheck; do
    SWADIFF_CUDA_PREFILL_ENGINE=wgmma-ws:2 \
      sanitize $tool "$tool-persistent.txt" "$tool (persistent kernel)" "${persistent_cases[@]}"
  done
fi
grep -h "ERROR SUMMARY\|RACECHECK SUMMARY\|PASSED:\|FAILED:" "${logs[@]}" | tee -a "$out/summary.txt"
exit $status
