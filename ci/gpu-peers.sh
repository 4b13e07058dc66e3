#!/usr/bin/env bash
# ci/gpu-peers.sh OUT_DIR — on the GPU machine, from a checkout with
# carry/gpu/bundle.tgz (ci/pack-gpu.sh): runs the case library through the
# peer adapters that can run there (PyTorch SDPA, flex_attention, JAX
# cuDNN/XLA), each in its own swadiff run with a time limit, and writes
#   OUT/peers-<adapter>/{report.json,report.html,junit.xml,console.txt}
# plus the built-in backends on CUDA (OUT/builtin/) and the GPU kernel test
# (OUT/gpu_test.txt) from the same bundle.
set -uo pipefail
out=${1:?usage: gpu-peers.sh OUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
[ -d "$root/cases" ] || root=$(pwd)
sw=/tmp/swadiff-gpu
mkdir -p "$sw" "$out"
tar xzf "$root/carry/gpu/bundle.tgz" -C "$sw"
export LD_LIBRARY_PATH=$sw SWADIFF_PYTHON=${SWADIFF_PYTHON:-python3} PYTHONUNBUFFERED=1
cd "$root"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
python3 -c 'import torch, jax; print("torch", torch.__version__, "jax", jax.__version__)' | tee -a "$out/gpu.txt"
echo "== gpu test"; timeout 200 "$sw/gpu_test_kernels" --jobs 1 > "$out/gpu_test.txt" 2>&1; echo "gpu test: exit $?"; tail -2 "$out/gpu_test.txt"
echo "== built-in backends"; mkdir -p "$out/builtin"
timeout 200 "$sw/swadiff" run cases --device cuda --report "$out/builtin" > "$out/builtin/console.txt" 2>&1
echo "builtin: exit $?"; tail -3 "$out/builtin/console.txt"
for a in ${SWADIFF_PEERS:-torch_sdpa jax_cudnn torch_flex}; do
  echo "== $a"; mkdir -p "$out/peers-$a"
  timeout "${SWADIFF_T_PEER:-150}" "$sw/swadiff" run cases --device cuda --adapter "$a" --backend "$a:*" \
    --adapter-timeout 120 --report "$out/peers-$a" > "$out/peers-$a/console.txt" 2>&1
  echo "$a: exit $?"; tail -4 "$out/peers-$a/console.txt"
done
