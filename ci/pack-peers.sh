#!/usr/bin/env bash
# ci/pack-peers.sh OUT_DIR [AOT_DIR] — packs what one GPU call needs to run the
# real-library adapters (adapters/flashinfer_wrappers.py, adapters/sglang_triton.py)
# on a machine that has PyTorch 2.11, Triton 3.6, nvcc and ninja but no network:
#
#   OUT/peers.tar.xz   site/: FlashInfer's Python package without the sources of
#                      kernels these adapters never build (what is kept: the
#                      attention generators' templates and the headers they
#                      include, so a missing module can still be JIT-compiled),
#                      plus AOT_DIR's compiled modules in FlashInfer's AOT folder
#                      (flashinfer/data/aot); sglang's Python files that its
#                      Triton kernels import (not its server, not its Rust .so)
#   OUT/wheels/        apache-tvm-ffi and the small wheels importing sglang pulls in
#   OUT/swadiff.tar.xz a host-only swadiff (build-host/) and the shared libraries it
#                      needs beyond glibc (the GPU machine has no cJSON / OpenBLAS)
#   OUT/adapters/, OUT/ci/, OUT/cases/  this checkout's adapters, GPU scripts and case library
#
# Every file comes unmodified from the pinned wheels (ci/fetch-peer-wheels.sh, into
# .peer-wheels/ first).  ci/gpu-real-libs.sh unpacks and runs it all.
# Tested by: running it (the sizes are in the run real-libraries-2026-12-02: docs/evidence.md).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: pack-peers.sh OUT_DIR [AOT_DIR]}
aot=${2:-}
wheels=.peer-wheels
for w in flashinfer_python-0.7.2.post1 sglang-0.5.23 apache_tvm_ffi-0.1.15.post2; do
  ls "$wheels"/$w-*.whl >/dev/null 2>&1 || { echo "pack-peers: $wheels/$w-*.whl is missing (run ci/fetch-peer-wheels.sh)" >&2; exit 1; }
done
[ -x build-host/swadiff ] || { echo "pack-peers: build-host/swadiff is missing (ci/build.sh build-host -DSWADIFF_CUDA=OFF -DSWADIFF_HIP=OFF)" >&2; exit 1; }
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/site" "$out/wheels"

# FlashInfer: the Python package, the templates (csrc's top level) and the headers
unzip -q "$wheels"/flashinfer_python-0.7.2.post1-*.whl -d "$stage/fi"
fid=$stage/fi/flashinfer
mkdir -p "$stage/site/flashinfer/data/csrc"
(cd "$fid" && find . -path ./data -prune -o -type f -print | tar cf - -T -) | tar xf - -C "$stage/site/flashinfer"
find "$fid/data/csrc" -maxdepth 1 -type f -exec cp {} "$stage/site/flashinfer/data/csrc/" \;
for d in include cutlass/include cutlass/tools/util/include cccl/cub cccl/libcudacxx/include cccl/thrust spdlog/include; do
  mkdir -p "$stage/site/flashinfer/data/$d"
  cp -r "$fid/data/$d/." "$stage/site/flashinfer/data/$d/"
done
mkdir -p "$stage/site/flashinfer_python-0.7.2.post1.dist-info"
cp "$stage/fi"/flashinfer_python-0.7.2.post1.dist-info/METADATA "$stage/site/flashinfer_python-0.7.2.post1.dist-info/"
if [ -n "$aot" ]; then
  mkdir -p "$stage/site/flashinfer/data/aot"
  cp -r "$aot/." "$stage/site/flashinfer/data/aot/"
  echo "pack-peers: $(ls "$aot" | wc -l) AOT module(s) from $aot"
fi

# sglang: the Python files its Triton attention kernels import
unzip -q "$wheels"/sglang-0.5.23-*.whl 'sglang/*' 'sglang-0.5.23.dist-info/METADATA' -x '*.so' -d "$stage/sg"
(cd "$stage/sg" && {
  ls sglang/*.py sglang/srt/*.py sglang-0.5.23.dist-info/METADATA
  find sglang/lang sglang/kernels sglang/srt/utils sglang/srt/arg_groups sglang/srt/observability \
       sglang/srt/platforms sglang/srt/plugins -name '*.py'
} | tar cf - -T -) | tar xf - -C "$stage/site"

tar cf - -C "$stage" site | xz -T2 -6 > "$out/peers.tar.xz"
rm -f "$out"/wheels/*.whl
for w in "$wheels"/*.whl; do
  case "$(basename "$w")" in flashinfer_python-*|sglang-*) ;; *) cp "$w" "$out/wheels/" ;; esac
done

# swadiff, host-only, with its libraries
mkdir -p "$stage/sw"
cp build-host/swadiff "$stage/sw/"
ldd build-host/swadiff | awk '/=> \// {print $3}' | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libgcc_s.so*) ;;
    *) cp -L "$lib" "$stage/sw/" ;;
  esac
done
tar cf - -C "$stage/sw" . | xz -T2 -6 > "$out/swadiff.tar.xz"

mkdir -p "$out/adapters" "$out/ci"
cp adapters/*.py adapters/registry.json "$out/adapters/"
cp ci/gpu-real-libs.sh ci/flashinfer-aot.py "$out/ci/"
rm -rf "$out/cases"
cp -r cases "$out/cases"   # this checkout's library, not whatever the GPU machine's tree holds
du -sh "$out" "$out"/peers.tar.xz "$out"/wheels "$out"/swadiff.tar.xz
