#!/usr/bin/env bash
# ci/gpu-evidence.sh OUT_DIR [STEPS] — on the GPU machine, from a checkout with
# carry/gpu/bundle.tgz (ci/pack-gpu.sh): runs the evidence the issues ask for
# and writes it under OUT_DIR:
#   run       swadiff run cases --device cuda  -> OUT/h200/{report.json,report.html,junit.xml}
#   selftest  swadiff selftest --device cuda    -> OUT/selftest/{selftest.json,...}
#   fault     device_fault mutant in case 2 of 5 (real illegal address) -> OUT/fault/
#   bench     swadiff bench --device cuda --json OUT/bench.json
#   sanitize  ci/gpu-sanitize.sh                -> OUT/sanitize/
#   peers     swadiff bench --device cuda --peers (PyTorch, JAX in the same run)
#             -> OUT/bench-peers.{json,txt}
#   test      the gpu-labelled test binaries (gpu_test_kernels, gpu_test_plugins)
# STEPS: comma-separated subset (default: run,fault,selftest,bench,test).
set -uo pipefail
out=${1:?usage: gpu-evidence.sh OUT_DIR [STEPS]}
steps=${2:-run,fault,selftest,bench,test}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." 2>/dev/null && pwd)
[ -d "$root/cases" ] || root=$(pwd)
sw=/tmp/swadiff-gpu
mkdir -p "$sw" "$out"
tar xzf "$here/bundle.tgz" -C "$sw"
export LD_LIBRARY_PATH=$sw
cd "$root"
has() { [[ ",$steps," == *",$1,"* ]]; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
if has run; then
  echo "== run"; mkdir -p "$out/h200"
  timeout ${SWADIFF_T_RUN:-300} "$sw/swadiff" run cases --device cuda --report "$out/h200" > "$out/h200/console.txt" 2>&1
  echo "run: exit $?"; tail -14 "$out/h200/console.txt"
fi
if has fault; then
  echo "== fault isolation"; mkdir -p "$out/fault"
  second=$("$sw/swadiff" list cases tests/data/cli/five.json | sed -n 2p)
  timeout ${SWADIFF_T_FAULT:-120} "$sw/swadiff" run tests/data/cli/five.json --device cuda --mutant device_fault \
    --mutant-only "$second" --report "$out/fault" > "$out/fault/console.txt" 2>&1
  echo "fault: exit $? (3 expected)"; grep -E "ERROR|error|PASSED|FAILED" "$out/fault/console.txt" | head -8
fi
if has selftest; then
  echo "== selftest"; mkdir -p "$out/selftest"
  timeout ${SWADIFF_T_SELFTEST:-400} "$sw/swadiff" selftest --device cuda --report "$out/selftest" cases > "$out/selftest/console.txt" 2>&1
  echo "selftest: exit $?"; tail -28 "$out/selftest/console.txt"
fi
if has bench; then
  echo "== bench"
  timeout ${SWADIFF_T_BENCH:-300} "$sw/swadiff" bench --device cuda --json "$out/bench.json" > "$out/bench.txt" 2>&1
  echo "bench: exit $?"; tail -20 "$out/bench.txt"
fi
if has peers; then
  echo "== bench with peers"
  timeout ${SWADIFF_T_PEERS:-500} "$sw/swadiff" bench --device cuda --peers --peers-budget ${SWADIFF_PEERS_BUDGET:-300} \
    --json "$out/bench-peers.json" > "$out/bench-peers.txt" 2>&1
  echo "bench --peers: exit $?"; grep -v "plan:" "$out/bench-peers.txt" | tail -60
fi
if has sanitize; then
  echo "== sanitize"
  "$here/gpu-sanitize.sh" "$sw/swadiff" "$out/sanitize"; echo "sanitize: exit $?"
fi
if has test && [ -x "$sw/gpu_test_kernels" ]; then
  echo "== gpu test"
  SWADIFF_BINARY="$sw/swadiff" SWADIFF_SOURCE_DIR="$root" timeout ${SWADIFF_T_TEST:-400} \
    "$sw/gpu_test_kernels" --jobs 1 --verbose > "$out/gpu_test.txt" 2>&1
  echo "gpu test: exit $?"; grep -E "Synthesis" "$out/gpu_test.txt"
fi
if has test && [ -x "$sw/gpu_test_plugins" ]; then
  echo "== gpu plug-in test"
  SWADIFF_BINARY="$sw/swadiff" SWADIFF_SOURCE_DIR="$root" SWADIFF_PLUGIN_DIR="$sw/plugins" \
    timeout ${SWADIFF_T_TEST:-400} "$sw/gpu_test_plugins" --jobs 4 --verbose > "$out/gpu_test_plugins.txt" 2>&1
  echo "gpu plug-in test: exit $?"; grep -E "Synthesis" "$out/gpu_test_plugins.txt"
fi
