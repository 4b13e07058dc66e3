#!/usr/bin/env bash
# FlashInfer 0.7.2.post1 fa3 on the H200, third call: two more fa3 modules (the most
# needed of those missing), the library again through paged_fa3 / ragged_fa3, F5 shrunk.
set -uo pipefail
here=$PWD; pack=$(cd "$1" && pwd); ret=$2; limit=${3:-560}
t0=$(date +%s); left() { echo $(( limit - ($(date +%s) - t0) )); }
res=/tmp/res; mkdir -p /tmp/site /tmp/sw "$ret" $res
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$res/log.txt"; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "$pack"/wheels/*.whl || exit 1
tar xJf "$pack/peers.tar.xz" -C /tmp && tar xJf "$pack/swadiff.tar.xz" -C /tmp/sw
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 LD_LIBRARY_PATH=/tmp/sw FLASHINFER_WORKSPACE_BASE=/tmp/fiws FLASHINFER_CUDA_ARCH_LIST=9.0a
aot=/tmp/site/flashinfer/data/aot; mkdir -p $aot
for f in "$pack"/aot-fa3/*.tar.xz; do tar xJf "$f" -C $aot; done
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; /tmp/sw/swadiff --version | head -1; } > "$res/env.txt"
for m in fa3:fp16:64:True:False fa3:bf16:128:True:True; do
  stamp "build $m"
  timeout 150 python3 "$pack/ci/flashinfer-aot.py" $aot --kinds fa3 --only "$m" --jobs 16 --parallel 1 >> "$res/compile.txt" 2>&1
  stamp "exit $?"
done
ls $aot | grep sm90 > "$res/fa3-modules.txt"
export FLASHINFER_DISABLE_JIT=1
fi="flashinfer_wrappers=python3 $pack/adapters/flashinfer_wrappers.py"
run() {  # NAME SECONDS ARGS...
  local name=$1 secs=$2; shift 2; mkdir -p "$res/$name"
  stamp "run $name (at most $secs s)"
  timeout "$secs" /tmp/sw/swadiff run --device host --jobs 8 --adapter "$fi" --adapter-timeout 120 --report "$res/$name" "$@" \
    > "$res/$name/console.txt" 2>&1
  echo "exit $?" >> "$res/$name/console.txt"; rm -f "$res/$name/report.html" "$res/$name/results.jsonl"
  tail -3 "$res/$name/console.txt" | tee -a "$res/log.txt"
}
run fa3_library 120 "$pack/cases" --backend 'flashinfer_wrappers:paged_fa3,flashinfer_wrappers:ragged_fa3'
run f5_finite 60 "$here/carry/fa3/finite.json" --backend 'flashinfer_wrappers:paged_fa3,flashinfer_wrappers:ragged_fa3,flashinfer_wrappers:paged_fa2'
l=$(( $(left) - 30 ))
stamp "shrink f5 (at most $l s)"
timeout $l /tmp/sw/swadiff shrink 'poison/decode:window_left=31' --backend flashinfer_wrappers:paged_fa3 --adapter "$fi" --device host \
  --adapter-timeout 120 --out "$res/shrunk-f5.json" "$pack/cases/poison.json" > "$res/shrink-f5.txt" 2>&1
echo "exit $?" >> "$res/shrink-f5.txt"; tail -3 "$res/shrink-f5.txt" | tee -a "$res/log.txt"
stamp pack
cd $aot && for n in $(ls | grep sm90); do [ -e "$pack/aot-fa3/$n.tar.xz" ] || tar cJf "$ret/$n.tar.xz" "$n"; done
tar cf - -C /tmp res | xz -T0 -6 > "$ret/results.tar.xz"; ls -la "$ret"
