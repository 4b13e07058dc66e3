#!/usr/bin/env bash
# ci/gpu-real-libs-followup.sh PACK_DIR OUT_DIR [SECONDS] — on the GPU machine, from a
# folder made by ci/pack-peers.sh: what the first real-library calls left open, in one call
# of at most SECONDS (default 560), everything stopped and packed before it:
#   1. the FlashInfer modules the regression cases and seed 000 need (fa2, CUDA-core
#      decode), then four fa3 modules (ci/flashinfer-aot.py, all cores);
#   2. meanwhile: sglang's S1 regression shrunk (swadiff shrink --adapter, the same
#      diagnosis kept);
#   3. once the fa2/decode modules are in: F2 with split-KV off, F4 through the second path
#      (decode with tensor cores), then F1..F4 shrunk on the backend that failed;
#   4. once the fa3 modules are in: seed 000 and the case library through paged_fa3 and
#      ragged_fa3 (cases whose fa3 module was not built are errors naming the module).
# Writes OUT/results.tar.xz (logs, consoles, reports, shrunk case files) and
# OUT/aot-fa3.tar.xz (the fa3 modules, to carry next time).  Partial results come back too:
# each step is bounded, and the packing runs whatever finished.
set -uo pipefail
pack=$(cd "${1:?usage: gpu-real-libs-followup.sh PACK_DIR OUT_DIR [SECONDS]}" && pwd)
ret=${2:?usage: gpu-real-libs-followup.sh PACK_DIR OUT_DIR [SECONDS]}
limit=${3:-560}
mkdir -p "$ret" && ret=$(cd "$ret" && pwd)
out=/tmp/res
mkdir -p "$out" /tmp/sw /tmp/site
t0=$(date +%s)
left() { echo $(( limit - ($(date +%s) - t0) )); }
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$out/log.txt"; }

tar xJf "$pack/peers.tar.xz" -C /tmp && tar xJf "$pack/swadiff.tar.xz" -C /tmp/sw
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "$pack"/wheels/*.whl \
  || { echo "followup: the carried wheels did not install" >&2; exit 1; }
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 LD_LIBRARY_PATH=/tmp/sw
export FLASHINFER_WORKSPACE_BASE=/tmp/fiws FLASHINFER_CUDA_ARCH_LIST=9.0a
aot=/tmp/site/flashinfer/data/aot
mkdir -p "$aot"
cases=$pack/cases
sw=/tmp/sw/swadiff
fi="flashinfer_wrappers=python3 $pack/adapters/flashinfer_wrappers.py"
sg="sglang_triton=python3 $pack/adapters/sglang_triton.py"
reg_fi=$cases/regressions/flashinfer_0.7.2.post1.json
reg_sg=$cases/regressions/sglang_0.5.23.json
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; $sw --version 2>&1 | head -1; } > "$out/env.txt"

# 1. modules: fa2 / CUDA-core decode first (F1..F4, seed 000), then fa3
fa2_mods=(decode:bf16:128:True:False fa2:bf16:128:True:False fa2:bf16:64:True:False fa2:fp16:64:True:False
          fa2:fp16:64:False:False decode:fp16:96:True:False fa2:fp16:96:True:False fa2:fp16:128:True:False
          fa2:fp16:128:False:False fa2:bf16:128:False:False fa2:bf16:256:False:False)
fa3_mods=(fa3:fp16:128:True:False fa3:bf16:128:True:False fa3:bf16:128:False:False fa3:bf16:64:True:False)
only() { local m; for m in "$@"; do printf -- '--only %s ' "$m"; done; }
stamp "compile ${#fa2_mods[@]} fa2/decode modules"
# shellcheck disable=SC2046
timeout 240 python3 "$pack/ci/flashinfer-aot.py" "$aot" --kinds fa2,decode $(only "${fa2_mods[@]}") \
  --jobs 2 --parallel 8 > "$out/compile-fa2.txt" 2>&1 &
c2=$!

# 2. sglang S1 shrunk while the modules compile (Triton needs no nvcc)
shrink() {  # NAME CASE_ID BACKEND ADAPTER FILE SECONDS [EXTRA...]
  local name=$1 id=$2 be=$3 ad=$4 file=$5 secs=$6; shift 6
  stamp "shrink $name ($id on $be, at most $secs s)"
  timeout "$secs" $sw shrink "$id" --backend "$be" --adapter "$ad" --device host --adapter-timeout 120 \
    --out "$out/shrunk-$name.json" "$@" "$file" > "$out/shrink-$name.txt" 2>&1
  echo "exit $?" >> "$out/shrink-$name.txt"
  tail -2 "$out/shrink-$name.txt" | tee -a "$out/log.txt"
}
shrink sglang_s1 'sglang_0.5.23/decode_backend_window:window_left=31,dtype=bf16' \
  sglang_triton:decode_backend_window "$sg" "$reg_sg" 150 &
s1=$!
wait $c2; stamp "fa2/decode compile: $(grep -c '^built\|^present' "$out/compile-fa2.txt") modules"
grep -v INFO "$out/compile-fa2.txt" | grep -v '^built\|^present' | tail -5 >> "$out/log.txt"

# fa3 in the background from here on
stamp "compile ${#fa3_mods[@]} fa3 modules (until $(( limit - 150 )) s)"
# shellcheck disable=SC2046
timeout $(( $(left) - 150 )) python3 "$pack/ci/flashinfer-aot.py" "$aot" --kinds fa3 $(only "${fa3_mods[@]}") \
  --jobs 4 --parallel 4 > "$out/compile-fa3.txt" 2>&1 &
c3=$!

# 3. F2 with split-KV off, F4 through decode_tc, then the FlashInfer regressions shrunk
export FLASHINFER_DISABLE_JIT=1
run() {  # NAME SECONDS ARGS...
  local name=$1 secs=$2; shift 2
  mkdir -p "$out/$name"
  stamp "run $name (at most $secs s)"
  timeout "$secs" $sw run --device host --jobs 2 --adapter "$fi" --adapter-timeout 120 --report "$out/$name" "$@" \
    > "$out/$name/console.txt" 2>&1
  echo "exit $?" >> "$out/$name/console.txt"
  rm -f "$out/$name/report.html" "$out/$name/results.jsonl"
  tail -3 "$out/$name/console.txt" | tee -a "$out/log.txt"
}
SWADIFF_FLASHINFER_PLAN_EXTRA='{"disable_split_kv": true}' run f2_nosplit 60 "$reg_fi" \
  -f '*prefill_non_causal_left_window_long_kv*' --backend 'flashinfer_wrappers:paged_fa2,flashinfer_wrappers:ragged_fa2'
run f4_second_path 60 "$reg_fi" -f '*decode_cuda_cores_head_dim_96*' \
  --backend 'flashinfer_wrappers:decode,flashinfer_wrappers:decode_tc'
run regressions 90 "$reg_fi" --backend 'flashinfer_wrappers:*_fa2,flashinfer_wrappers:decode*'
shrink f1 'flashinfer_0.7.2.post1/decode_cuda_cores_reads_evicted_v' flashinfer_wrappers:decode "$fi" "$reg_fi" 150 &
f1=$!
shrink f4 'flashinfer_0.7.2.post1/decode_cuda_cores_head_dim_96' flashinfer_wrappers:decode "$fi" "$reg_fi" 150 &
f4=$!
shrink f2 'flashinfer_0.7.2.post1/prefill_non_causal_left_window_long_kv' flashinfer_wrappers:paged_fa2 "$fi" "$reg_fi" 200 &
f2=$!
wait $f1 $f4 $s1

# 4. fa3 once its modules are in
wait $c3; stamp "fa3 compile: $(grep -c '^built\|^present' "$out/compile-fa3.txt") modules"
grep -v INFO "$out/compile-fa3.txt" | grep -v '^built\|^present' | tail -5 >> "$out/log.txt"
if [ "$(left)" -gt 60 ]; then
  run fa3_seed000 40 "$cases/seed000_paged_prefill.json" --backend 'flashinfer_wrappers:paged_fa3,flashinfer_wrappers:ragged_fa3'
fi
wait $f2
if [ "$(left)" -gt 40 ]; then
  run fa3_library $(( $(left) - 25 )) "$cases" --backend 'flashinfer_wrappers:paged_fa3,flashinfer_wrappers:ragged_fa3'
fi

stamp "pack"
(cd "$aot" && ls -d batch_prefill*sm90* batch_prefill*fa3* 2>/dev/null | sort -u > /tmp/fa3.list; \
 [ -s /tmp/fa3.list ] && tar cf - -T /tmp/fa3.list | xz -T0 -3 > "$ret/aot-fa3.tar.xz")
ls "$aot" > "$out/aot-modules.txt"
tar cf - -C /tmp res | xz -T0 -6 > "$ret/results.tar.xz"
ls -la "$ret"
