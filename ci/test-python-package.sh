#!/usr/bin/env bash
# ci/test-python-package.sh — the Python package end to end: a fresh venv,
# `pip install .` (scikit-build-core builds the host-only binary), pytest and
# pytest-xdist from the registry, then tests/python/ (the pytest plugin with
# a correct and a deliberately wrong callable, -k, -x, -n 2, --junitxml,
# usage errors).  Needs the C build dependencies (ci/setup-deps.sh) and the
# package registry.  PYTHON picks the interpreter (default python3).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=$(mktemp -d "${TMPDIR:-/tmp}/swadiff-pyvenv-XXXXXX")
trap 'rm -rf "$venv"' EXIT
"${PYTHON:-python3}" -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip
"$venv/bin/python" -m pip install -q "$root" pytest pytest-xdist
cd "$venv"   # not the checkout: the installed package is what is tested
"$venv/bin/python" -m pytest -p no:cacheprovider -q "$root/tests/python"
