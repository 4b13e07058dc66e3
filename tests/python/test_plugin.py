"""Tests of the swadiff pytest plugin (python/swadiff/pytest_plugin.py), each
running pytest in a subprocess over tests/python/cases/plugin_small.json (three
windows, L = 0, 1, 4) with the callables of impls/attn_impls.py: `exact` must
pass every case, `window_short` must fail L = 1 and 4 with the diagnosis and
pass L = 0.  Run by ci/test-python-package.sh after `pip install .`."""
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "cases", "plugin_small.json")
BOTH = ["--swadiff-cases", CASES, "--swadiff-callable", "attn_impls:exact",
        "--swadiff-callable", "attn_impls:window_short"]


def pytest_run(tmp_path, *args):
    env = dict(os.environ, PYTHONPATH=os.path.join(HERE, "impls"))
    p = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", *args],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout + p.stderr


def has_line(out, outcome, nodeid):
    """-rA's summary line (the node id may carry a path prefix relative to the rootdir)"""
    return any(line.startswith(outcome + " ") and line.split(" ")[1].endswith(nodeid) for line in out.splitlines())


def test_exact_passes_wrong_fails_with_diagnosis(tmp_path):
    rc, out = pytest_run(tmp_path, *BOTH)
    assert rc == 1, out
    assert "2 failed, 4 passed" in out, out
    assert has_line(out, "PASSED", "swadiff::plugin_small/window:window_left=0[window_short]"), out
    for L, applied in (("1", "0"), ("4", "3")):
        assert has_line(out, "FAILED", f"swadiff::plugin_small/window:window_left={L}[window_short]"), out
        assert f"the kernel applied window_left = {applied} instead of {L}" in out, out
    assert "Diagnosis (window_l_minus_1): window one key short" in out, out
    assert "Mismatched elements: " in out and "Greatest absolute difference: " in out, out
    assert has_line(out, "PASSED", "swadiff::plugin_small/window:window_left=1[exact]"), out


def test_k_selects(tmp_path):
    rc, out = pytest_run(tmp_path, *BOTH, "-k", "exact")
    assert rc == 0, out
    assert "3 passed, 3 deselected" in out, out


def test_x_stops_at_first_failure(tmp_path):
    rc, out = pytest_run(tmp_path, *BOTH, "-x")
    assert rc == 1, out
    assert "1 failed, 3 passed" in out, out
    assert "window_left=4[window_short]" not in out.split("short test summary")[-1], out


def test_xdist_two_workers(tmp_path):
    rc, out = pytest_run(tmp_path, *BOTH, "-n", "2")
    assert rc == 1, out
    assert "2 workers" in out, out
    assert "2 failed, 4 passed" in out, out
    assert "Diagnosis (window_l_minus_1)" in out, out


def test_junitxml(tmp_path):
    xml = tmp_path / "junit.xml"
    rc, out = pytest_run(tmp_path, *BOTH, f"--junitxml={xml}")
    assert rc == 1, out
    cases = list(ET.parse(xml).getroot().iter("testcase"))
    assert len(cases) == 6, out
    failed = {c.get("name"): c.find("failure") for c in cases if c.find("failure") is not None}
    assert sorted(failed) == ["plugin_small/window:window_left=1[window_short]",
                              "plugin_small/window:window_left=4[window_short]"], failed
    for f in failed.values():
        assert "window one key short" in (f.text or ""), f.text


def test_all_skipped_is_not_green(tmp_path):
    rc, out = pytest_run(tmp_path, "--swadiff-cases", CASES, "--swadiff-callable", "attn_impls:decode_only")
    assert rc == 5, out
    assert "3 skipped" in out and "nothing was compared" in out, out


def test_ini_options(tmp_path):
    (tmp_path / "pytest.ini").write_text(f"[pytest]\nswadiff_cases = {CASES}\nswadiff_callables = attn_impls:exact\n")
    rc, out = pytest_run(tmp_path)
    assert rc == 0, out
    assert "3 passed" in out, out


def test_usage_no_callable(tmp_path):
    rc, out = pytest_run(tmp_path, "--swadiff-cases", CASES)
    assert rc == 4, out
    assert "no attention callable" in out and "--swadiff-callable" in out, out


def test_usage_callable_does_not_import(tmp_path):
    rc, out = pytest_run(tmp_path, "--swadiff-cases", CASES, "--swadiff-callable", "no_such_module_xyz:forward")
    assert rc == 4, out
    assert "--swadiff-callable 'no_such_module_xyz:forward': cannot import it: ModuleNotFoundError" in out, out


def test_usage_cases_not_found(tmp_path):
    rc, out = pytest_run(tmp_path, "--swadiff-cases", str(tmp_path / "nope"), "--swadiff-callable", "attn_impls:exact")
    assert rc == 4, out
    assert "--swadiff-cases" in out and "nope: no such case file or folder" in out, out


def test_swadiff_command(tmp_path):
    p = subprocess.run([os.path.join(os.path.dirname(sys.executable), "swadiff"), "list", "cases", CASES], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == [f"plugin_small/window:window_left={L}" for L in (0, 1, 4)]
