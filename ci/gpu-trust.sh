#!/usr/bin/env bash
# ci/gpu-trust.sh OUT_DIR [STEPS] — on the GPU machine: the run-to-run and
# ordering evidence of the CUDA path (the run trust-2026-12-02: docs/evidence.md).
# Bundles, each a tar.xz of binaries and the libraries they need
# (ci/pack-gpu.sh, then xz), under $SWADIFF_TRUST_CARRY (default carry/trust):
#   new.tar.xz   the build under test (swadiff, gpu_test_kernels)
#   old.tar.xz   optional: the same tree with the pre-fix cuda_device.cu, to
#                show the race the fix removes (same tests, same cases)
#   ptx80.tar.xz optional: a build of compute_80 PTX only, which the driver
#                JIT-compiles for the GPU (what an sm_100 or sm_120 GPU runs)
#   (old and ptx80 may hold the binaries alone, SWADIFF_PACK_LIBS=0: they
#   then use new's libraries)
# STEPS (comma-separated; default all):
#   race-old   the CUDA-graph case files, --jobs 16, repeatedly, with the old
#              build; its ordering test (expected to fail there)
#   ordering   the new build's ordering test (graph replays under copy load)
#   graphs     the CUDA-graph case files with --repeat 200 --jobs 16
#   library    the whole library with --repeat 20 --jobs 16
#   ptx80      the whole library on the PTX-only build (JIT), --jobs 16
#   gputest    the whole GPU test binary of the new build
#   sanitize   compute-sanitizer's quick set (memcheck, racecheck) on the new build
set -uo pipefail
out=${1:?usage: gpu-trust.sh OUT_DIR [STEPS]}
steps=${2:-race-old,ordering,graphs,library,ptx80,gputest,sanitize}
root=$(pwd)
carry=${SWADIFF_TRUST_CARRY:-carry/trust}
graphs="cases/cuda_graph.json cases/cuda_graph_models.json"
mkdir -p "$out"
has() { [[ ",$steps," == *",$1,"* ]]; }
unpack() { mkdir -p "/tmp/sw-$1" && tar xJf "$carry/$1.tar.xz" -C "/tmp/sw-$1"; }
for b in new old ptx80; do [ -f "$carry/$b.tar.xz" ] && unpack $b; done
for b in old ptx80; do [ -d "/tmp/sw-$b" ] && cp -n /tmp/sw-new/*.so* "/tmp/sw-$b/" 2>/dev/null; done
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
if has race-old && [ -d /tmp/sw-old ]; then
  echo "== race-old: the pre-fix build, graph cases, --jobs 16, ${SWADIFF_OLD_RUNS:-12} runs"
  for i in $(seq 1 "${SWADIFF_OLD_RUNS:-12}"); do
    timeout 60 env LD_LIBRARY_PATH=/tmp/sw-old /tmp/sw-old/swadiff run $graphs --device cuda --jobs 16 --quiet \
      --report "/tmp/race-old-$i" > "/tmp/race-old-$i.txt" 2>&1
    rc=$?
    echo "run $i: exit $rc $(grep -E '^(PASSED|FAILED|ERRORS)' /tmp/race-old-$i.txt | head -1)"
    [ $rc -ne 0 ] && grep -hoE "(Unwritten elements|Write outside the output)[^&]{0,60}" "/tmp/race-old-$i/junit.xml" | sort | uniq -c
  done 2>&1 | tee "$out/race-old.txt"
  echo "== race-old: the ordering test of the pre-fix build"
  SWADIFF_ORDERING_REPEATS=${SWADIFF_ORDERING_REPEATS:-60} LD_LIBRARY_PATH=/tmp/sw-old timeout 240 \
    /tmp/sw-old/gpu_test_kernels --filter 'gpu_ordering/*' --verbose 2>&1 | tail -30 | tee -a "$out/race-old.txt"
fi
if has ordering; then
  echo "== ordering: graph replays under a copy load (new build)"
  SWADIFF_ORDERING_REPEATS=${SWADIFF_ORDERING_REPEATS:-60} LD_LIBRARY_PATH=/tmp/sw-new timeout 240 \
    /tmp/sw-new/gpu_test_kernels --filter 'gpu_ordering/*' --verbose 2>&1 | tail -12 | tee "$out/ordering.txt"
fi
if has graphs; then
  echo "== graphs: --repeat 200 --jobs 16"
  mkdir -p "$out/graphs"
  timeout 400 env LD_LIBRARY_PATH=/tmp/sw-new /tmp/sw-new/swadiff run $graphs --device cuda --jobs 16 --repeat 200 \
    --report "$out/graphs" > "$out/graphs/console.txt" 2>&1
  echo "graphs: exit $?"; tail -12 "$out/graphs/console.txt"
fi
if has library; then
  echo "== library: --repeat 20 --jobs 16"
  mkdir -p "$out/library"
  timeout 500 env LD_LIBRARY_PATH=/tmp/sw-new /tmp/sw-new/swadiff run cases --device cuda --jobs 16 --repeat 20 \
    --report "$out/library" > "$out/library/console.txt" 2>&1
  echo "library: exit $?"; tail -16 "$out/library/console.txt"
fi
if has ptx80 && [ -d /tmp/sw-ptx80 ]; then
  echo "== ptx80: compute_80 PTX only, JIT-compiled by the driver"
  mkdir -p "$out/ptx80"
  export CUDA_CACHE_MAXSIZE=4294967296 CUDA_CACHE_PATH=/tmp/cuda-jit-cache
  LD_LIBRARY_PATH=/tmp/sw-ptx80 /tmp/sw-ptx80/swadiff list devices 2>&1 | tee "$out/ptx80/devices.txt"
  # one worker first fills the driver's JIT cache, so sixteen do not compile the same PTX at once
  t0=$(date +%s)
  timeout 300 env LD_LIBRARY_PATH=/tmp/sw-ptx80 /tmp/sw-ptx80/swadiff run cases/seed000_paged_prefill.json \
    cases/cuda_graph.json cases/return_lse.json --device cuda --jobs 1 --quiet > "$out/ptx80/warm.txt" 2>&1
  echo "ptx80 warm-up: exit $? in $(( $(date +%s) - t0 )) s"; tail -3 "$out/ptx80/warm.txt"
  timeout 400 env LD_LIBRARY_PATH=/tmp/sw-ptx80 /tmp/sw-ptx80/swadiff run cases --device cuda --jobs 16 \
    --report "$out/ptx80" > "$out/ptx80/console.txt" 2>&1
  echo "ptx80 library: exit $?"; tail -16 "$out/ptx80/console.txt"
fi
if has gputest; then
  echo "== gpu test (new build)"
  SWADIFF_BINARY=/tmp/sw-new/swadiff SWADIFF_SOURCE_DIR="$root" LD_LIBRARY_PATH=/tmp/sw-new timeout 420 \
    /tmp/sw-new/gpu_test_kernels --jobs 1 --verbose > "$out/gpu_test.txt" 2>&1
  echo "gpu test: exit $?"; grep -E "Synthesis|FAIL" "$out/gpu_test.txt" | head
fi
if has sanitize; then
  echo "== sanitize (quick set, new build)"
  SWADIFF_SANITIZE_QUICK=1 LD_LIBRARY_PATH=/tmp/sw-new timeout 240 ci/gpu-sanitize.sh /tmp/sw-new/swadiff "$out/sanitize" \
    > "$out/sanitize-console.txt" 2>&1
  echo "sanitize: exit $?"; cat "$out/sanitize/summary.txt" 2>/dev/null
fi
