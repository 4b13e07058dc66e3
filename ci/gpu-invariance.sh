#!/usr/bin/env bash
# ci/gpu-invariance.sh BUNDLE OUT — on the GPU machine: the invariance
# evidence of docs/invariance.md, from a bundle made by ci/pack-bundle.sh
# (swadiff, the GPU tests, the plug-ins).  Writes under OUT:
#   lib/        the case library on CUDA as shipped (cases/invariance.json included), and its launch gate
#   det/        the whole library in the deterministic mode with --invariance batch,pages: the
#               built-ins declare themselves batch-invariant there, so any difference fails
#   meas/       the whole library as planned by default with --invariance all: measured differences
#   plugin/     the CUDA example plug-in (declared invariant, device memory) under --invariance batch,pages
#   peers/      torch SDPA, flex_attention and JAX cuDNN (adapters; they declare nothing) under
#               --invariance batch,pages on cases/invariance.json: which are batch-invariant
#   bench.txt   `bench --device cuda --quick`, the deterministic rows against the default ones
#   NAME-invariance.txt  ci/invariance-summary.py over each report: per backend and check
# SWADIFF_INV_STEPS selects the steps (default "lib det meas plugin peers bench").
# Each step has its own time limit (seconds, SWADIFF_T_* below); big files are compressed.
set -uo pipefail
bundle=${1:?usage: gpu-invariance.sh BUNDLE OUT}
out=${2:?usage: gpu-invariance.sh BUNDLE OUT}
mkdir -p /tmp/sw "$out"
tar xJf "$bundle" -C /tmp/sw
export LD_LIBRARY_PATH=/tmp/sw
S=/tmp/sw/swadiff
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$out/steps.txt"; }
run() { # run NAME LIMIT ARGS...: one swadiff run into OUT/NAME
  local name=$1 limit=$2; shift 2
  stamp "$name: swadiff $*"
  timeout "$limit" "$S" "$@" --report "$out/$name" > "$out/$name.txt" 2>&1
  echo "exit $?" >> "$out/$name.txt"
  tail -12 "$out/$name.txt" | tee -a "$out/steps.txt"
}
steps=" ${SWADIFF_INV_STEPS:-lib det meas plugin peers bench} "
want() { [[ "$steps" == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$out/gpu.txt"
want lib && run lib "${SWADIFF_T_LIB:-120}" run cases --device cuda --jobs 16 -q
if want lib; then
  "$S" coverage -q --launches-from "$out/lib/report.json" > "$out/lib-gate.txt" 2>&1
  echo "exit $?" >> "$out/lib-gate.txt"
fi
want det && run det "${SWADIFF_T_DET:-170}" run cases --device cuda --jobs 16 -q --deterministic --invariance batch,pages
want meas && run meas "${SWADIFF_T_MEAS:-150}" run cases --device cuda --jobs 16 -q --invariance all
want plugin && run plugin "${SWADIFF_T_PLUGIN:-40}" run cases/invariance.json --device cuda -q --plugin /tmp/sw/plugins/libswadiff_cuda_example.so \
  --backend 'cuda_example:exact,cuda_example:exact_graph' --invariance batch,pages
want peers && run peers "${SWADIFF_T_PEERS:-150}" run cases/invariance.json --device cuda --jobs 4 -q --adapter torch_sdpa --adapter torch_flex \
  --adapter jax_cudnn --backend 'torch_sdpa:*,torch_flex:*,jax_cudnn:*' --invariance batch,pages --adapter-timeout 120
if want bench; then
  stamp "bench"
  timeout "${SWADIFF_T_BENCH:-90}" "$S" bench --device cuda --quick --json "$out/bench.json" > "$out/bench.txt" 2>&1
  echo "exit $?" >> "$out/bench.txt"
  grep -E "deterministic|\[2 warps\]|\[wgmma-ws\]" "$out/bench.txt" | tee -a "$out/steps.txt"
fi
for d in lib det meas plugin peers; do
  [ -f "$out/$d/report.json" ] && python3 ci/invariance-summary.py "$out/$d/report.json" > "$out/$d-invariance.txt" 2>&1
  rm -f "$out/$d/results.jsonl" "$out/$d/report.html"
  [ -f "$out/$d/report.json" ] && xz -9 "$out/$d/report.json"
done
stamp "done"
