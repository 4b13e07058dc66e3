#!/usr/bin/env bash
# ci/fetch-peer-wheels.sh [DIR] — downloads, with pip and pinned hashes, the
# wheels that the real-library adapters need beyond a CUDA machine's own
# PyTorch 2.11 / Triton 3.6 (adapters/flashinfer_wrappers.py,
# adapters/sglang_triton.py) into DIR (default .peer-wheels/, git-ignored):
# FlashInfer with its FFI layer, sglang, and the small wheels that importing
# sglang's Triton kernels pulls in.  The wheels are for CPython 3.12 on
# manylinux x86_64 (the H200 image's Python); SWADIFF_PEER_PYTHON=3.11 etc.
# picks another (the hashes below are the 3.12 wheels', so pip then refuses:
# fetch without hashes for another Python, knowing what that means).
#
# A wheel missing from the index or with another hash is an error naming it,
# and the script exits 1.  Install on the machine that runs the adapters with
#   python3 -m pip install --no-index --no-deps DIR/*.whl
# (or --target DIR2 and PYTHONPATH=DIR2); docs/real-libraries.md says how to
# run them.  ci/pack-peers.sh trims these into what one GPU call can carry.
#
# Tested by: running it (real-libraries-2026-12-02 in docs/evidence.md
# lists what it fetched); tests/adapters/test_real_library_mappings.py checks the pins.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-.peer-wheels}
py=${SWADIFF_PEER_PYTHON:-3.12}
mkdir -p "$dir"
req=$(mktemp)
trap 'rm -f "$req"' EXIT
grep -v '^#' ci/peer-wheels.txt | grep . > "$req"
echo "fetch-peer-wheels: $(wc -l < "$req") wheels for CPython $py into $dir"
platforms=()
for p in manylinux_2_34_x86_64 manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_26_x86_64 \
         manylinux_2_24_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux_2_5_x86_64 manylinux1_x86_64; do
  platforms+=(--platform "$p")
done
if ! python3 -m pip download --quiet --no-deps --only-binary=:all: --require-hashes \
       --python-version "$py" --implementation cp "${platforms[@]}" -d "$dir" -r "$req"; then
  echo "fetch-peer-wheels: pip could not fetch every pinned wheel (above: which one and why)" >&2
  exit 1
fi
ls -l "$dir"/*.whl | awk '{s += $5} END {printf "fetch-peer-wheels: %d files, %.1f MB\n", NR, s / 1e6}'
