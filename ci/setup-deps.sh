#!/usr/bin/env bash
# ci/setup-deps.sh — installs the Debian 12 packages swadiff needs, when they
# are missing.  Idempotent and non-interactive; says what it installs.
#
#   ci/setup-deps.sh            # build + test dependencies (Debian 12)
#   ci/setup-deps.sh --run-only # only what building and running swadiff needs
#                               # (-DSWADIFF_BUILD_TESTS=OFF): a CI runner of a
#                               # user (Debian or Ubuntu; ci/examples/)
#   SWADIFF_SKIP_APT=1 ...      # check only, install nothing
#
# The CUDA toolkit (nvcc) is not a Debian package here: it is used when it is
# on PATH (or in /usr/local/cuda/bin) and skipped otherwise.
set -euo pipefail

# /dev/null must be the character device.  Some containers have a regular
# file there, which keeps whatever was last "thrown away" — and hipcc's
# offload bundler reads /dev/null as the host input of every HIP fatbin: a
# leftover object file in it switches the bundler to its object format and
# the kernels' .hip_fatbin no longer holds a clang offload bundle (seen in
# CI: test_hip_build failed, "does not start with __CLANG_OFFLOAD_BUNDLE__").
if [ ! -c /dev/null ]; then
  if [ "$(id -u)" = 0 ] && mknod -m 666 /dev/null.swadiff c 1 3 && mv -f /dev/null.swadiff /dev/null; then
    echo "setup-deps: /dev/null was not the character device; replaced it (mknod c 1 3)"
  else
    echo "setup-deps: /dev/null is not the character device and could not be replaced (root and mknod needed);" \
         "the HIP build will be skipped (cmake/hip.cmake says why)" >&2
  fi
fi

packages=(
  build-essential cmake pkg-config git python3 python3-jsonschema
  python3-numpy                     # the numpy adapters (adapters/) and their tests
  python3-yaml                      # tests/test_jobs.c reads the CI examples (ci/examples/*.yml)
  libopenblas-dev libcjson-dev libcriterion-dev
  clang libclang-rt-14-dev          # libFuzzer + sanitizer runtimes
  chromium                          # renders report.html in the test suite
  gcovr                             # line/branch coverage of backends/ (ci/coverage.sh)
  hipcc libamdhip64-dev rocm-device-libs   # ROCm HIP build of the backends
)

case "${1:-}" in
  "") ;;
  --run-only)
    packages=(build-essential cmake pkg-config git python3 python3-numpy libopenblas-dev libcjson-dev) ;;
  *) echo "setup-deps: unknown option $1 (expected --run-only or nothing)" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup-deps: all ${#packages[@]} packages already installed"
else
  echo "setup-deps: installing ${missing[*]}"
  if [ "${SWADIFF_SKIP_APT:-0}" = 1 ]; then
    echo "setup-deps: SWADIFF_SKIP_APT=1, not installing: the build may fail" >&2
    exit 1
  fi
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "setup-deps: CUDA toolkit found: $( (command -v nvcc || echo /usr/local/cuda/bin/nvcc) )"
else
  echo "setup-deps: no CUDA toolkit (nvcc): the CUDA device will not be built"
fi
