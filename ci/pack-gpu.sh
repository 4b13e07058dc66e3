#!/usr/bin/env bash
# ci/pack-gpu.sh [OUT_DIR] — builds swadiff for an NVIDIA GPU machine that has
# the driver but no cJSON/Criterion/OpenBLAS headers (e.g. the H200 of
# reports/gpu/h200/ and docs/evidence.md), and packs the binary, the GPU
# tests, the device-memory plug-ins (plugins/: the example of
# examples/plugin_cuda and the fixtures) and every shared library they need
# beyond glibc into OUT_DIR/bundle.tgz (default carry/gpu).
#
# There: tar xzf bundle.tgz -C /tmp/sw && LD_LIBRARY_PATH=/tmp/sw /tmp/sw/swadiff ...
# (the GPU tests take SWADIFF_BINARY, SWADIFF_SOURCE_DIR, SWADIFF_PLUGIN_DIR=/tmp/sw/plugins)
# (ci/gpu-evidence.sh does exactly that.)  HIP is left out: libamdhip64
# would be one more library the GPU machine lacks.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-carry/gpu}
# the architecture explicitly: a build-gpu/ configured earlier keeps its cached value otherwise
ci/build.sh build-gpu -DSWADIFF_CUDA=ON -DSWADIFF_HIP=OFF -DSWADIFF_CUDA_ARCHITECTURES="${SWADIFF_CUDA_ARCHITECTURES:-80;90a-real}"
bins=(build-gpu/swadiff)
for t in build-gpu/tests/gpu_test_*; do [ -x "$t" ] && bins+=("$t"); done
ci/pack-bundle.sh "$out/bundle.tgz" "${bins[@]}" -- build-gpu/plugins/*.so
cp ci/gpu-evidence.sh ci/gpu-sanitize.sh "$out/"
