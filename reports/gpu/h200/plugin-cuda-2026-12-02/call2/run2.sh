#!/usr/bin/env bash
# run2.sh — the second device call of branch plugdev: the GPU plug-in test
# (fixed: paths set per test) and the example over the library again (the
# plug-in skip messages no longer say "ABI v1").  Output under $OUT/ev.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(pwd)
sw=/tmp/sw
mkdir -p "$sw" && tar xJf "$here/bundle.txz" -C "$sw"
export LD_LIBRARY_PATH=$sw
P=$sw/plugins
o=$OUT/ev
mkdir -p "$o"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$o/gpu.txt" 2>&1
s=$(date +%s)
SWADIFF_BINARY=$sw/swadiff SWADIFF_SOURCE_DIR=$root SWADIFF_PLUGIN_DIR=$P timeout 150 $sw/gpu_test_plugins --jobs 4 --verbose > "$o/gpu_test_plugins.txt" 2>&1
echo "gpu_test_plugins exit $? in $(( $(date +%s) - s )) s" | tee "$o/summary.txt"
s=$(date +%s)
timeout 40 $sw/swadiff run cases --device cuda --jobs 16 --plugin $P/libswadiff_cuda_example.so \
  --backend 'cuda_example:exact,cuda_example:exact_graph' --report $o/library_exact > "$o/library_exact.txt" 2>&1
echo "library_exact exit $? in $(( $(date +%s) - s )) s" | tee -a "$o/summary.txt"
grep -h "Synthesis\|FAIL" "$o/gpu_test_plugins.txt" | head -20
tail -3 "$o/library_exact.txt"
