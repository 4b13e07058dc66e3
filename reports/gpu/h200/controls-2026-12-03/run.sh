#!/usr/bin/env bash
# The marshalling controls and the hostile-environment fixes on the H200
# (2026-12-03). From the checkout root, with carry/gpu/bundle.tar.xz
# (ci/pack-bundle.sh carry/gpu/bundle.tar.xz build-gpu/swadiff build-gpu/tests/gpu_test_plugins -- build-gpu/plugins/*.so,
# from a 90a-real build): OUT=DIR run.sh
#   library            the shipped cases on CUDA, 16 workers
#   plugin_cuda        the example CUDA plug-in (device memory) over the library:
#                      the controls must say sound, exact pass, window_short fail
#   plugin_cuda_fault  the same with the staging broken on purpose
#                      (SWADIFF_TEST_MARSHAL_FAULT=window_as_key_count): the controls
#                      must say broken and no external pass survive
#   gpu_test_plugins   the device-plug-in GPU tests (the spin test with --timeout 10)
set -uo pipefail
root=$PWD; out=${OUT:?set OUT}; sw=/tmp/sw; res=$out/res
mkdir -p "$sw" "$res"
tar xJf carry/gpu/bundle.tar.xz -C "$sw"; export LD_LIBRARY_PATH=$sw
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$res/log.txt"; }
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; "$sw/swadiff" --version | head -1; } > "$res/env.txt"
run() {  # NAME SECONDS COMMAND...
  local name=$1 secs=$2; shift 2; mkdir -p "$res/$name"
  stamp "run $name (at most $secs s)"
  timeout "$secs" "$@" --report "$res/$name" > "$res/$name/console.txt" 2>&1
  echo "exit $?" >> "$res/$name/console.txt"
  grep -E "marshalling|MARSHALLING" "$res/$name/console.txt" | head -2 | cut -c1-300 | tee -a "$res/log.txt"
  tail -3 "$res/$name/console.txt" | tee -a "$res/log.txt"
  rm -f "$res/$name/report.html" "$res/$name/results.jsonl"; xz -T0 "$res/$name/report.json"
}
plugin=$sw/plugins/libswadiff_cuda_example.so
run library 110 "$sw/swadiff" run --device cuda --jobs 16 cases
run plugin_cuda 110 "$sw/swadiff" run --device cuda --jobs 16 --plugin "$plugin" --backend 'cuda_example:*' cases
SWADIFF_TEST_MARSHAL_FAULT=window_as_key_count run plugin_cuda_fault 45 "$sw/swadiff" run --device cuda --jobs 16 \
  --plugin "$plugin" --backend 'cuda_example:window_short' cases/seed000_paged_prefill.json cases/poison.json
stamp "gpu_test_plugins (at most 120 s)"
SWADIFF_BINARY=$sw/swadiff SWADIFF_SOURCE_DIR=$root SWADIFF_PLUGIN_DIR=$sw/plugins timeout 120 \
  "$sw/gpu_test_plugins" --jobs 4 --verbose > "$res/gpu_test_plugins.txt" 2>&1
echo "exit $?" >> "$res/gpu_test_plugins.txt"; grep -E "Synthesis|exit" "$res/gpu_test_plugins.txt" | tee -a "$res/log.txt"
stamp pack
tar cf - -C "$out" res | xz -T0 -6 > "$out/results.tar.xz" && rm -rf "$res"
