#!/usr/bin/env bash
# run.sh — issue 28 item 1 (branch plugdev) on the GPU machine: the device-
# memory plug-in test, the example CUDA plug-in and its twin over the whole
# library, the broken device fixtures, a built-in library run; everything
# under $OUT/ev (the device call tars it).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(pwd)
sw=/tmp/sw
mkdir -p "$sw"
tar xJf "$here/bundle.txz" -C "$sw"
export LD_LIBRARY_PATH=$sw
P=$sw/plugins
o=$OUT/ev
mkdir -p "$o"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$o/gpu.txt" 2>&1
step() {
  local name=$1; shift
  local s=$(date +%s%N)
  "$@" > "$o/$name.txt" 2>&1
  local rc=$?
  local ms=$(( ($(date +%s%N) - s) / 1000000 ))
  printf '%-22s exit %3d  %6d ms\n' "$name" "$rc" "$ms" | tee -a "$o/summary.txt"
}
five=tests/data/cli/five.json
ex=$P/libswadiff_cuda_example.so
bad=$P/libcuda_bad.so
step gpu_test_plugins env SWADIFF_BINARY=$sw/swadiff SWADIFF_SOURCE_DIR=$root SWADIFF_PLUGIN_DIR=$P \
  timeout 130 $sw/gpu_test_plugins --jobs 4 --verbose
step library_exact timeout 50 $sw/swadiff run cases --device cuda --jobs 16 --plugin $ex \
  --backend 'cuda_example:exact,cuda_example:exact_graph' --report $o/library_exact
step library_window_short timeout 60 $sw/swadiff run cases --device cuda --jobs 16 --plugin $ex \
  --backend cuda_example:window_short --report $o/library_window_short
step bad_all timeout 30 $sw/swadiff run $five --device cuda --plugin $bad --plugin $ex \
  --backend 'decode_fa2,cuda_bad:overflow,cuda_bad:free_q,cuda_bad:write_kcache,cuda_bad:write_page_table,cuda_bad:legacy_stream,cuda_bad:own_stream,cuda_bad:fault,cuda_bad:fields,cuda_example:exact' \
  --report $o/bad_all
step bad_spin timeout 40 $sw/swadiff run $five --device cuda --timeout 3 --plugin $bad --plugin $ex \
  --backend 'decode_fa2,cuda_bad:spin,cuda_example:exact' --report $o/bad_spin
step host_skip timeout 15 $sw/swadiff run $five --device host --plugin $ex --report $o/host_skip
step library_builtin timeout 25 $sw/swadiff run cases --device cuda --jobs 16 --report $o/library_builtin
cat "$o/summary.txt"
grep -h "Synthesis" "$o/gpu_test_plugins.txt"
for f in library_exact library_window_short library_builtin bad_all bad_spin host_skip; do tail -2 "$o/$f.txt" | head -1; done
