#!/usr/bin/env bash
# ci/pack-bundle.sh OUT_FILE BINARY... [-- PLUGIN...] — packs the binaries
# (and, under plugins/, the plug-in objects after --) with every shared
# library they need beyond glibc into OUT_FILE (a .tar.xz, or a .tgz), for a
# GPU machine that has the driver but not cJSON, Criterion or OpenBLAS.
# There: tar xf OUT_FILE -C DIR && LD_LIBRARY_PATH=DIR DIR/swadiff ...
# SWADIFF_PACK_LIBS=0 packs the binaries alone (a second build of the same
# tree that travels beside a bundle with the libraries).
# Debug sections are stripped from the copies (the kernels' line tables for
# compute-sanitizer live in the device code, which strip leaves alone).
set -euo pipefail
out=${1:?usage: pack-bundle.sh OUT_FILE BINARY...}
shift
[ $# -gt 0 ] || { echo "pack-bundle.sh: no binary to pack" >&2; exit 2; }
bins=() plugins=()
while [ $# -gt 0 ]; do
  if [ "$1" = -- ]; then shift; plugins=("$@"); break; fi
  bins+=("$1"); shift
done
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cp "${bins[@]}" "$stage/"
if [ ${#plugins[@]} -gt 0 ]; then mkdir -p "$stage/plugins" && cp "${plugins[@]}" "$stage/plugins/"; fi
[ "${SWADIFF_PACK_LIBS:-1}" = 0 ] || for b in "${bins[@]}" "${plugins[@]}"; do
  ldd "$b" | awk '/=> \// {print $3}'
done | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libgcc_s.so*) ;;
    *) cp -L "$lib" "$stage/" ;;
  esac
done
strip --strip-debug "$stage"/* "$stage"/plugins/* 2>/dev/null || true
mkdir -p "$(dirname "$out")"
case "$out" in
  *.xz) tar cJf "$out" -C "$stage" . ;;
  *) tar czf "$out" -C "$stage" . ;;
esac
du -sh "$out"
