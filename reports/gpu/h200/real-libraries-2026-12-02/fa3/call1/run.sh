#!/usr/bin/env bash
# fa3 modules of FlashInfer 0.7.2.post1 compiled on the H200 with all 16 cores, one module
# at a time, most needed first; each finished .so comes back xz-compressed.
set -uo pipefail
pack=$1; ret=$2; limit=${3:-560}
t0=$(date +%s); left() { echo $(( limit - ($(date +%s) - t0) )); }
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$ret/log.txt"; }
mkdir -p /tmp/site "$ret"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "$pack"/wheels/*.whl || exit 1
tar xJf "$pack/peers.tar.xz" -C /tmp
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 FLASHINFER_WORKSPACE_BASE=/tmp/fiws FLASHINFER_CUDA_ARCH_LIST=9.0a
aot=/tmp/aot; mkdir -p $aot
{ nproc; free -g | head -2; nvcc --version | tail -2; } > "$ret/env.txt"
for m in fa3:bf16:128:True:False fa3:bf16:128:False:False fa3:fp16:128:True:False; do
  l=$(( $(left) - 25 )); [ "$l" -lt 60 ] && { stamp "no time for $m"; break; }
  stamp "build $m (at most $l s)"
  timeout "$l" python3 "$pack/ci/flashinfer-aot.py" $aot --kinds fa3 --only "$m" --jobs 16 --parallel 1 >> "$ret/compile.txt" 2>&1
  stamp "exit $?"
  ( cd /tmp/fiws && find . -name '*.ninja' | head -3; find . -name '*.o' -newer "$ret/env.txt" | wc -l ) >> "$ret/compile.txt" 2>&1
done
cd $aot && for d in */; do n=${d%/}; tar cJf "$ret/$n.tar.xz" "$n" && stamp "packed $n ($(du -k "$ret/$n.tar.xz" | cut -f1) KiB)"; done
ls -la $aot/* >> "$ret/log.txt" 2>&1
