"""pytest plugin: one pytest item per (swadiff case, Python attention callable).

    pytest --swadiff-cases cases/ --swadiff-callable mypkg.attn:forward

or in the ini file (swadiff_cases, swadiff_callables).  Every selected case
runs once per session (one `swadiff run` shared by the pytest-xdist workers
through a lock), each item then reports its own result: pass, skip with the
reason, or a failure with swadiff's message and diagnosis (docs/python.md).
"""
from __future__ import annotations

import fcntl
import hashlib
import importlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

import pytest

from swadiff._binary import binary_path

NAME_RE = re.compile(r"^[A-Za-z0-9_.-]+$")
FILTERS_PER_RUN = 64  # swadiff run takes at most 64 --filter


def pytest_addoption(parser):
    g = parser.getgroup("swadiff", "swadiff attention cases")
    g.addoption("--swadiff-cases", action="append", default=[], metavar="PATH",
                help="case file or folder of swadiff cases (repeatable; ini: swadiff_cases)")
    g.addoption("--swadiff-callable", action="append", default=[], metavar="[NAME=]MODULE:FUNC",
                help="attention callable fn(problem, tensors) -> out or (out, lse) (repeatable; "
                     "ini: swadiff_callables)")
    g.addoption("--swadiff-binary", default=None, metavar="PATH",
                help="swadiff binary (default $SWADIFF_BINARY, else the packaged one)")
    g.addoption("--swadiff-device", default=None, metavar="D", help="swadiff run --device (default auto)")
    g.addoption("--swadiff-jobs", default=None, metavar="N", help="swadiff run --jobs")
    parser.addini("swadiff_cases", "case files or folders (relative to the ini file)", type="linelist", default=[])
    parser.addini("swadiff_callables", "[NAME=]MODULE:FUNC attention callables", type="linelist", default=[])


class _Config:
    def __init__(self, config):
        base = str(config.inipath.parent) if config.inipath else str(config.rootpath)
        cli_cases = config.getoption("swadiff_cases")
        cases = [(os.path.abspath(p), "--swadiff-cases") for p in cli_cases] or \
                [(os.path.join(base, p), "swadiff_cases (ini)") for p in config.getini("swadiff_cases")]
        specs = config.getoption("swadiff_callable") or config.getini("swadiff_callables")
        self.active = bool(cases or specs)
        if not self.active:
            return
        if not specs:
            raise pytest.UsageError("swadiff: cases are given but no attention callable: pass "
                                    "--swadiff-callable MODULE:FUNC (or set swadiff_callables in the ini file)")
        if not cases:
            raise pytest.UsageError("swadiff: an attention callable is given but no cases: pass "
                                    "--swadiff-cases PATH (or set swadiff_cases in the ini file)")
        for path, opt in cases:
            if not os.path.exists(path):
                raise pytest.UsageError(f"swadiff: {opt} {path}: no such case file or folder")
        self.cases = [p for p, _ in cases]
        self.callables = []  # (NAME, "module:func")
        for spec in specs:
            name, eq, target = spec.partition("=")
            if not eq:
                name, target = spec.rpartition(":")[2].split(".")[-1], spec
            mod, colon, attr = target.partition(":")
            if not colon or not mod or not attr:
                raise pytest.UsageError(f"swadiff: --swadiff-callable {spec!r}: expected [NAME=]MODULE:FUNC")
            if not NAME_RE.match(name):
                raise pytest.UsageError(f"swadiff: --swadiff-callable {spec!r}: the name {name!r} must be "
                                        "letters, digits, '_', '.' or '-'")
            if any(n == name for n, _ in self.callables):
                raise pytest.UsageError(f"swadiff: --swadiff-callable {spec!r}: the name {name!r} is used twice; "
                                        "name them NAME=MODULE:FUNC")
            if not hasattr(config, "workerinput"):  # the controller checks it imports, once
                try:
                    fn = importlib.import_module(mod)
                    for part in attr.split("."):
                        fn = getattr(fn, part)
                except Exception as e:  # noqa: BLE001 - any import failure is the user's to see
                    raise pytest.UsageError(f"swadiff: --swadiff-callable {spec!r}: cannot import it: "
                                            f"{type(e).__name__}: {e}") from None
                if not callable(fn):
                    raise pytest.UsageError(f"swadiff: --swadiff-callable {spec!r}: {target} is not callable")
            self.callables.append((name, target))
        self.binary = config.getoption("swadiff_binary") or os.environ.get("SWADIFF_BINARY") or binary_path()
        if not os.access(self.binary, os.X_OK):
            raise pytest.UsageError(f"swadiff: --swadiff-binary {self.binary}: not an executable file")
        self.device = config.getoption("swadiff_device")
        self.jobs = config.getoption("swadiff_jobs")


def pytest_configure(config):
    sc = _Config(config)
    config._swadiff = sc
    if not sc.active:
        return
    wi = getattr(config, "workerinput", None)
    if wi and "swadiff_dir" in wi:
        sc.dir, sc.owner = wi["swadiff_dir"], False
    else:
        sc.dir, sc.owner = tempfile.mkdtemp(prefix="swadiff-pytest-"), True
    sc.results = {}
    sc.counts = {"compared": 0, "skipped": 0}


def pytest_unconfigure(config):
    sc = getattr(config, "_swadiff", None)
    if sc is not None and sc.active and sc.owner:
        shutil.rmtree(sc.dir, ignore_errors=True)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):  # pytest-xdist: the workers share the controller's folder
    sc = node.config._swadiff
    if sc.active:
        node.workerinput["swadiff_dir"] = sc.dir


def _list_cases(sc):
    p = subprocess.run([sc.binary, "list", "cases", *sc.cases], capture_output=True, text=True)
    if p.returncode != 0:
        raise pytest.UsageError(f"swadiff: --swadiff-cases {' '.join(sc.cases)}: `swadiff list cases` failed "
                                f"(exit {p.returncode}):\n{p.stderr.strip()}")
    return [line for line in p.stdout.splitlines() if line]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session, config, items):
    sc = config._swadiff
    if not sc.active:
        return
    ids = _list_cases(sc)
    if not ids:
        raise pytest.UsageError(f"swadiff: --swadiff-cases {' '.join(sc.cases)}: no cases in it")
    for cid in ids:
        for name, _ in sc.callables:
            items.append(SwadiffItem.from_parent(session, name=f"{cid}[{name}]", nodeid=f"swadiff::{cid}[{name}]",
                                                 case_id=cid, backend=name))


class SwadiffFailure(AssertionError):
    pass


class SwadiffItem(pytest.Item):
    def __init__(self, *, case_id, backend, **kw):
        super().__init__(**kw)
        self.case_id, self.backend = case_id, backend

    def runtest(self):
        r = _result(self)
        outcome = r.get("outcome")
        if outcome == "passed":
            return
        if outcome == "skipped":
            pytest.skip(f"swadiff: {r.get('message') or 'skipped'}")
        raise SwadiffFailure(format_failure(r))

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, SwadiffFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, f"swadiff {self.case_id} [{self.backend}]"


def _adapter_command(sc):
    return " ".join(shlex.quote(a) for a in [sys.executable, "-m", "swadiff._adapter"] +
                    [f"{n}={t}" for n, t in sc.callables])


def _run_batch(sc, ids, folder):
    """swadiff run over the case ids (batches of FILTERS_PER_RUN), reports under folder; {(id, backend): result}."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([p for p in sys.path if p] + [env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    out, logs = {}, []
    chunks = [ids[i:i + FILTERS_PER_RUN] for i in range(0, len(ids), FILTERS_PER_RUN)]
    for k, chunk in enumerate(chunks):
        rep = os.path.join(folder, f"run{k}")
        cmd = [sc.binary, "run", "-q", "--adapter", f"pytest={_adapter_command(sc)}", "-b", "pytest:*", "-r", rep]
        if sc.device:
            cmd += ["--device", sc.device]
        if sc.jobs:
            cmd += ["--jobs", str(sc.jobs)]
        for cid in chunk:
            cmd += ["--filter", cid]
        p = subprocess.run(cmd + sc.cases, capture_output=True, text=True, env=env)
        logs.append(f"$ {shlex.join(cmd + sc.cases)}\nexit {p.returncode}\n{p.stderr.strip()[-4000:]}")
        try:
            with open(os.path.join(rep, "report.json")) as f:
                for r in json.load(f)["cases"]:
                    out[f"{r['id']}\0{r['backend']}"] = r
        except (OSError, ValueError, KeyError):
            pass
    return out, "\n".join(logs)


def _result(item):
    sc = item.config._swadiff
    key = f"{item.case_id}\0pytest:{item.backend}"
    if key not in sc.results:
        ids = sorted({i.case_id for i in item.session.items if isinstance(i, SwadiffItem)})
        digest = hashlib.sha256("\n".join(ids + [sc.binary] + [f"{n}={t}" for n, t in sc.callables]).encode()).hexdigest()[:16]
        folder = os.path.join(sc.dir, f"batch-{digest}")
        done = folder + ".json"
        with open(folder + ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not os.path.exists(done):
                os.makedirs(folder, exist_ok=True)
                results, log = _run_batch(sc, ids, folder)
                with open(done + ".tmp", "w") as f:
                    json.dump({"results": results, "log": log}, f)
                os.replace(done + ".tmp", done)
        with open(done) as f:
            batch = json.load(f)
        sc.results.update(batch["results"])
        sc.log = batch["log"]
    r = sc.results.get(key)
    if r is None:
        return {"outcome": "error", "id": item.case_id, "backend": f"pytest:{item.backend}",
                "message": "swadiff recorded no result for this case and backend:\n" + getattr(sc, "log", "")}
    return r


def _at(index):
    return "(" + ", ".join(f"{k} {v}" for k, v in (index or {}).items()) + ")"


def _g(x):
    return f"{x:.6g}" if isinstance(x, (int, float)) else str(x)


def format_failure(r):
    """An assert_close-like message from one report.json result."""
    lines = [f"swadiff: attention output of pytest backend {r.get('backend')} is not close to the float64 reference"
             if r.get("outcome") == "failed" else f"swadiff: {r.get('outcome')} for backend {r.get('backend')}",
             f"case: {r.get('id')}" + (f" ({r['file']})" if r.get("file") else "")]
    tol = r.get("tolerance") or {}
    if tol:
        lines.append(f"dtype {r.get('dtype')}, device {r.get('device')}, atol {_g(tol.get('atol'))}, "
                     f"rtol {_g(tol.get('rtol'))}")
    lines.append("")
    if r.get("message"):
        lines.append(r["message"])
    m = r.get("mismatch") or {}
    if m and m.get("count"):
        a = m.get("max_abs_diff") or {}
        worst = [w for w in m.get("worst") or [] if w.get("index") == a.get("index")]
        got = f": got {_g(worst[0]['actual'])}, expected {_g(worst[0]['expected'])}" if worst else ""
        lines.append(f"Greatest absolute difference: {_g(a.get('value'))} at {_at(a.get('index'))}{got} "
                     f"(up to {_g(a.get('allowed'))} allowed)")
        rel = m.get("max_rel_diff") or {}
        if rel:
            lines.append(f"Greatest relative difference: {_g(rel.get('value'))} at {_at(rel.get('index'))} "
                         f"(up to {_g(rel.get('allowed'))} allowed)")
    lse = r.get("lse") or {}
    if lse and lse.get("count"):
        a = lse.get("max_abs_diff") or {}
        lines.append(f"LSE: {lse['count']} / {lse.get('total')} mismatched, greatest absolute difference "
                     f"{_g(a.get('value'))} at {_at(a.get('index'))} (up to {_g(a.get('allowed'))} allowed)")
    d = r.get("diagnosis")
    if d:
        fam = re.match(r"^\[([^\]]+)\]\s*(.*)$", d, re.S)
        lines.append(f"Diagnosis ({fam.group(1)}): {fam.group(2)}" if fam else f"Diagnosis: {d}")
    for w in r.get("warnings") or []:
        lines.append(f"warning: {w}")
    if r.get("reproduce"):
        lines.append(f"Reproduce: {r['reproduce']}")
    return "\n".join(lines)


def pytest_runtest_logreport(report):
    if not report.nodeid.startswith("swadiff::"):
        return
    cfg = _CONFIG[0] if _CONFIG else None
    if cfg is None:
        return
    if report.when == "call" and report.outcome in ("passed", "failed"):
        cfg._swadiff.counts["compared"] += 1
    elif report.skipped:
        cfg._swadiff.counts["skipped"] += 1


_CONFIG = []


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session):
    _CONFIG[:] = [session.config]


def pytest_sessionfinish(session, exitstatus):
    sc = getattr(session.config, "_swadiff", None)
    if sc is None or not sc.active or hasattr(session.config, "workerinput"):
        return
    c = sc.counts
    if c["skipped"] and not c["compared"] and exitstatus == 0:
        session.exitstatus = 5  # a run that compared nothing is not green (swadiff's exit 5)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    sc = getattr(config, "_swadiff", None)
    if sc is not None and sc.active and sc.counts["skipped"] and not sc.counts["compared"]:
        terminalreporter.write_line("swadiff: every swadiff item was skipped: nothing was compared (exit 5)",
                                    red=True)
