#!/usr/bin/env bash
# FlashInfer 0.7.2.post1 fa3 (paged_fa3, ragged_fa3) on the H200: two more fa3 modules
# compiled with all cores, then seed 000 and the case library through both backends.
set -uo pipefail
pack=$1; ret=$2; limit=${3:-560}
t0=$(date +%s); left() { echo $(( limit - ($(date +%s) - t0) )); }
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$ret/log.txt"; }
mkdir -p /tmp/site /tmp/sw "$ret"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "$pack"/wheels/*.whl || exit 1
tar xJf "$pack/peers.tar.xz" -C /tmp && tar xJf "$pack/swadiff.tar.xz" -C /tmp/sw
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 LD_LIBRARY_PATH=/tmp/sw FLASHINFER_WORKSPACE_BASE=/tmp/fiws FLASHINFER_CUDA_ARCH_LIST=9.0a
aot=/tmp/site/flashinfer/data/aot; mkdir -p $aot
for f in "$pack"/aot-fa3/*.tar.xz; do tar xJf "$f" -C $aot; done
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; /tmp/sw/swadiff --version | head -1; ls $aot | grep -c sm90; } > "$ret/env.txt"
for m in fa3:fp16:128:False:False fa3:bf16:64:True:False; do
  stamp "build $m"
  timeout 150 python3 "$pack/ci/flashinfer-aot.py" $aot --kinds fa3 --only "$m" --jobs 16 --parallel 1 >> "$ret/compile.txt" 2>&1
  stamp "exit $?"
done
ls $aot | grep sm90 > "$ret/fa3-modules.txt"
export FLASHINFER_DISABLE_JIT=1
fi="flashinfer_wrappers=python3 $pack/adapters/flashinfer_wrappers.py"
run() {  # NAME SECONDS ARGS...
  local name=$1 secs=$2; shift 2; mkdir -p "$ret/$name"
  stamp "run $name (at most $secs s)"
  timeout "$secs" /tmp/sw/swadiff run --device host --jobs 8 --adapter "$fi" --adapter-timeout 120 --report /tmp/r-$name "$@" \
    > "$ret/$name/console.txt" 2>&1
  echo "exit $?" >> "$ret/$name/console.txt"
  xz -c /tmp/r-$name/report.json > "$ret/$name/report.json.xz"
  tail -3 "$ret/$name/console.txt" | tee -a "$ret/log.txt"
}
run fa3_seed000 60 "$pack/cases/seed000_paged_prefill.json" --backend 'flashinfer_wrappers:paged_fa3,flashinfer_wrappers:ragged_fa3'
run fa3_regressions 60 "$pack/cases/regressions/flashinfer_0.7.2.post1.json" --backend 'flashinfer_wrappers:paged_fa3,flashinfer_wrappers:ragged_fa3'
run fa3_library $(( $(left) - 30 )) "$pack/cases" --backend 'flashinfer_wrappers:paged_fa3,flashinfer_wrappers:ragged_fa3'
cd $aot && for n in $(ls | grep sm90); do [ -e "$pack/aot-fa3/$n.tar.xz" ] || { tar cJf "$ret/$n.tar.xz" "$n" && stamp "packed $n"; }; done
stamp done
