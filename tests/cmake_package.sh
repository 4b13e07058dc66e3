#!/usr/bin/env bash
# tests/cmake_package.sh MODE SOURCE BUILD — swadiff used from another CMake
# project (tests/data/cmake_consumer), as docs/cmake.md tells users to:
#
#   package       `cmake --install BUILD` into a temporary prefix (the binary
#                 already built in BUILD), the prefix moved elsewhere (it must
#                 be relocatable), then find_package(swadiff CONFIG) from it
#   subdirectory  add_subdirectory(SOURCE) of the checkout, host only
#
# Either way the outside project builds a plug-in against swadiff::plugin and
# runs a shipped case file through swadiff_add_case_tests; its ctest must pass
# (exact backend passes, window_short caught, the adapter finds its helper)
# and the reports land in the nested REPORT_DIR.  Registered in
# tests/CMakeLists.txt as cmake_package and cmake_subdirectory.
set -euo pipefail
mode=${1:?usage: cmake_package.sh package|subdirectory SOURCE BUILD}
src=$(realpath "${2:?SOURCE}")
build=$(realpath "${3:?BUILD}")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/swadiff-cmake-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "cmake_package ($mode): $*" >&2; exit 1; }
# nothing from the caller's environment may point at the checkout's helper
unset SWADIFF_ADAPTER_DIR PYTHONPATH SWADIFF_ADAPTERS
cd "$tmp"

configure=(cmake -S "$src/tests/data/cmake_consumer" -B consumer -DCMAKE_BUILD_TYPE=Release
           -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DCONSUMER_MODE="$mode"
           -DCONSUMER_PLUGIN_SOURCE="$src/examples/plugin_minimal/plugin_minimal.c")
case $mode in
package)
  cmake --install "$build" --prefix "$tmp/stage" >install.log || { cat install.log; fail "cmake --install failed"; }
  mv "$tmp/stage" "$tmp/prefix"
  for f in bin/swadiff include/swadiff/plugin.h share/swadiff/adapters/swadiff_adapter.py \
           share/swadiff/adapters/numpy_exact.py share/swadiff/adapters/registry.json \
           share/swadiff/cases/window_edges.json share/swadiff/cases/schema/case.schema.json \
           lib/cmake/swadiff/swadiffConfig.cmake lib/cmake/swadiff/swadiffConfigVersion.cmake \
           lib/cmake/swadiff/swadiffTargets.cmake lib/cmake/swadiff/SwadiffCases.cmake \
           share/doc/swadiff/docs/cmake.md share/doc/swadiff/examples/plugin_minimal/plugin_minimal.c; do
    [ -e "prefix/$f" ] || fail "the install lacks $f"
  done
  [ -x prefix/bin/swadiff ] || fail "prefix/bin/swadiff is not executable"
  "${configure[@]}" -DCMAKE_PREFIX_PATH="$tmp/prefix" >configure.log 2>&1 || { cat configure.log; fail "configure failed"; }
  # the plug-in was compiled against the installed header, not the checkout's
  grep -q "$tmp/prefix/include" consumer/compile_commands.json || fail "the plug-in is not built with $tmp/prefix/include"
  if grep -q "$src/include" consumer/compile_commands.json; then fail "the plug-in is built with $src/include"; fi
  ;;
subdirectory)
  "${configure[@]}" -DSWADIFF_SOURCE="$src" -DSWADIFF_CUDA=OFF -DSWADIFF_HIP=OFF >configure.log 2>&1 ||
    { cat configure.log; fail "configure failed"; }
  ;;
*) fail "MODE: expected package or subdirectory" ;;
esac

cmake --build consumer -j 2 >build.log 2>&1 || { cat build.log; fail "build failed"; }
listed=$(ctest --test-dir consumer -N | sed -n 's/^Total Tests: //p')
[ "$listed" = 3 ] || { ctest --test-dir consumer -N; fail "the consumer has $listed tests, expected its 3 (and none of swadiff's)"; }
ctest --test-dir consumer --output-on-failure -j 2 || fail "the consumer's ctest failed"

# the reports, in REPORT_DIR's nested folders (created by swadiff_add_case_tests)
for dir in consumer/reports/nested/exact/window_edges consumer/reports/adapter/window_edges; do
  for f in report.json report.html junit.xml; do
    [ -s "$dir/$f" ] || fail "no $dir/$f"
  done
done
python3 - consumer/reports/nested/exact/window_edges/report.json minimal:exact \
          consumer/reports/adapter/window_edges/report.json consumer:exact <<'PY' || fail "the reports do not hold the expected results"
import json, sys
args = sys.argv[1:]
for path, backend in zip(args[::2], args[1::2]):
    cases = json.load(open(path))["cases"]
    seen = [c for c in cases if c.get("backend") == backend]
    others = {c.get("backend") for c in cases} - {backend}
    if not seen or others or any(c.get("outcome") != "passed" for c in seen):
        sys.exit(f"{path}: {len(seen)} results of {backend}, other backends {sorted(others)}, "
                 f"statuses {sorted({c.get('outcome') for c in seen})}")
    print(f"{path}: {len(seen)} results of {backend}, all passed")
PY
echo "cmake_package ($mode): ok"
