#!/usr/bin/env bash
# ci/gpu-scale.sh OUT_DIR — on a GPU machine (one or more GPUs), from a
# checkout with carry/gpu/bundle.tgz (ci/pack-gpu.sh): the shipped library
# and `bench --harness` on one GPU, on every GPU, and on the host with every
# core, written under OUT_DIR (library-*.txt, bench-*.json, bench-*.txt).
# The GPU benches run one worker per GPU and then 8 workers per GPU, so
# the step from one GPU to every GPU is measured at the same workers per
# GPU (the CPU side of each worker makes its inputs and the reference).
set -uo pipefail
out=${1:?usage: gpu-scale.sh OUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
sw=/tmp/swadiff-gpu
mkdir -p "$sw" "$out"
tar xzf "$root/carry/gpu/bundle.tgz" -C "$sw"
export LD_LIBRARY_PATH=$sw
cd "$root"
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
nproc | tee -a "$out/gpu.txt"
for dev in cuda:0 cuda; do
  tag=${dev/:/}
  echo "== library on $dev"
  timeout 120 "$sw/swadiff" run cases --device "$dev" -q > "$out/library-$tag.txt" 2>&1
  echo "exit $?"; tail -1 "$out/library-$tag.txt"
done
ngpu=$(nvidia-smi -L | wc -l)
for spec in "cuda:0 1,8" "cuda $ngpu,$((8 * ngpu))" "host 0"; do
  set -- $spec; dev=$1; jobs=$2; tag=${dev/:/}
  echo "== bench --harness on $dev"
  args=(bench --harness --device "$dev" --json "$out/bench-$tag.json")
  [ "$jobs" != 0 ] && args+=(--jobs "$jobs")
  timeout ${SWADIFF_T_BENCH:-150} "$sw/swadiff" "${args[@]}" > "$out/bench-$tag.txt" 2>&1
  echo "exit $?"; cat "$out/bench-$tag.txt"
done
