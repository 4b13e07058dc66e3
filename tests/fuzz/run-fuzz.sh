#!/usr/bin/env bash
# tests/fuzz/run-fuzz.sh [SECONDS] — builds the libFuzzer targets with clang
# (-fsanitize=fuzzer,address,undefined) against the host sources and runs
# each for SECONDS/2 (default 60 in all) over its committed seed corpus.
# A crash, leak or sanitizer report fails (non-zero exit); the reproducer is
# left in build-fuzz/.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-60}
per=$(( seconds / 2 > 5 ? seconds / 2 : 5 ))
out=build-fuzz
mkdir -p "$out"
cc=${CC_FUZZ:-clang}
flags=(-std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -I. -I/usr/include/cjson -DSWADIFF_GIT_REVISION=\"fuzz\")
# the host sources the targets reach (no BLAS, no backends)
host_src=(core/case.c core/common.c core/data.c core/paged.c core/rng.c harness/case_*.c harness/results.c harness/compare.c harness/invariance.c harness/report*.c)
# the runtime needs libFuzzer's main: drop any main() from the project
"$cc" "${flags[@]}" tests/fuzz/fuzz_case_load.c core/case.c core/common.c core/data.c core/paged.c core/rng.c harness/case_*.c harness/results.c harness/compare.c \
  -lcjson -lm -o "$out/fuzz_case_load"
"$cc" "${flags[@]}" tests/fuzz/fuzz_escape.c "${host_src[@]}" -lcjson -lm -o "$out/fuzz_escape"
export ASAN_OPTIONS=detect_leaks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for t in case_load escape; do
  mkdir -p "$out/corpus_$t"
  echo "fuzz: $t for ${per}s"
  (cd "$out" && ./fuzz_$t -max_total_time="$per" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 "corpus_$t" "../tests/fuzz/corpus_$t" 2>&1 | tail -n 12)
done
echo "fuzz: no crash, leak or sanitizer report"
