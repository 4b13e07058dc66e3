"""Tests of adapters/swadiff_adapter.py and the two CPU adapters, playing the harness side.

Run from the repository root:

    /usr/bin/python3 -m unittest discover -s tests/adapters

numpy only.  The problems are built here, independently of the helper (their own
paged-cache builder, their own bf16 rounding), and the expected outputs come from a
per-element pure-Python loop written here, not from reference_attention.
"""

from __future__ import annotations

import fcntl
import itertools
import json
import math
import os
import select
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ADAPTERS = os.path.join(ROOT, "adapters")
sys.path.insert(0, ADAPTERS)
import swadiff_adapter as sa  # noqa: E402

REPLY_TIMEOUT_S = 30.0


# --------------------------------------------------------------------------
# problems, built the way docs/adapter-protocol.md describes them


def bf16_truncate_bits(x32: np.ndarray) -> np.ndarray:
    """float32 -> bf16 bits by truncation: the inputs only need to BE bf16 values."""
    return (np.ascontiguousarray(x32, dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)


def decode_dtype(raw: np.ndarray, dtype: str) -> np.ndarray:
    """on-disk case dtype -> float64, independently of the helper."""
    if dtype == "bf16":
        assert raw.dtype == np.dtype("<u2"), raw.dtype
        return (raw.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    assert raw.dtype == {"fp16": np.dtype("<f2"), "fp32": np.dtype("<f4")}[dtype], raw.dtype
    return raw.astype(np.float64)


def make_values(rng, shape, dtype):
    """Random values in the case dtype: (on-disk array, float64 values)."""
    x = rng.standard_normal(shape).astype(np.float32)
    if dtype == "fp16":
        raw = x.astype("<f2")
    elif dtype == "fp32":
        raw = x.astype("<f4")
    else:
        raw = bf16_truncate_bits(x).astype("<u2")
    return raw, decode_dtype(raw, dtype)


def nan_raw(dtype):
    return {"fp16": np.float16(np.nan), "fp32": np.float32(np.nan), "bf16": np.uint16(0x7FC0)}[dtype]


def make_problem(directory, seed, *, qo_len, kv_len, hq, hkv, d, dtype, page_size, layout="NHD",
                 causal=True, window_left=-1, window_right=-1, soft_cap=0.0, sm_scale=None,
                 return_lse=True):
    """Writes every file of a run folder; returns (problem, values) with float64 q/k/v."""
    rng = np.random.default_rng(seed)
    B = len(qo_len)
    assert all(k >= q for q, k in zip(qo_len, kv_len))
    total_qo, total_kv = sum(qo_len), sum(kv_len)
    q_raw, q = make_values(rng, (total_qo, hq, d), dtype)
    k_raw, k = make_values(rng, (total_kv, hkv, d), dtype)
    v_raw, v = make_values(rng, (total_kv, hkv, d), dtype)

    # the paged pool: shuffled pages, spare pages and tails NaN
    pages_per = [(n + page_size - 1) // page_size for n in kv_len]
    used = sum(pages_per)
    num_pages = used + max(1, used // 4)
    order = rng.permutation(num_pages)
    shape = (num_pages, page_size, hkv, d) if layout == "NHD" else (num_pages, hkv, page_size, d)
    k_cache = np.full(shape, nan_raw(dtype), dtype=q_raw.dtype)
    v_cache = np.full(shape, nan_raw(dtype), dtype=q_raw.dtype)
    kv_indptr = [0]
    kv_indices, last_page_len = [], []
    max_blocks = max(pages_per)
    block_tables = np.full((B, max_blocks), -1, dtype="<i4")
    nxt, t0 = 0, 0
    for r, n in enumerate(kv_len):
        mine = [int(order[nxt + j]) for j in range(pages_per[r])]
        nxt += pages_per[r]
        kv_indices += mine
        kv_indptr.append(len(kv_indices))
        last_page_len.append(n - (pages_per[r] - 1) * page_size)
        block_tables[r, :len(mine)] = mine
        for t in range(n):
            page, slot = mine[t // page_size], t % page_size
            if layout == "NHD":
                k_cache[page, slot] = k_raw[t0 + t]
                v_cache[page, slot] = v_raw[t0 + t]
            else:
                k_cache[page, :, slot] = k_raw[t0 + t]
                v_cache[page, :, slot] = v_raw[t0 + t]
        t0 += n

    def i4(a):
        return np.asarray(a, dtype="<i4")

    files = {
        "q": q_raw, "k": k_raw, "v": v_raw, "k_cache": k_cache, "v_cache": v_cache,
        "qo_indptr": i4(np.concatenate([[0], np.cumsum(qo_len)])),
        "kv_seq_indptr": i4(np.concatenate([[0], np.cumsum(kv_len)])),
        "kv_indptr": i4(kv_indptr), "kv_indices": i4(kv_indices), "kv_last_page_len": i4(last_page_len),
        "block_tables": block_tables, "context_lens": i4(kv_len),
    }
    os.makedirs(directory, exist_ok=True)
    for name, arr in files.items():
        np.save(os.path.join(directory, name + ".npy"), np.ascontiguousarray(arr))
    problem = {
        "num_requests": B, "qo_len": list(qo_len), "kv_len": list(kv_len),
        "total_qo": total_qo, "total_kv": total_kv,
        "num_qo_heads": hq, "num_kv_heads": hkv, "head_dim": d, "dtype": dtype,
        "causal": causal, "window_left": window_left, "window_right": window_right,
        "sm_scale": (1.0 / math.sqrt(d)) if sm_scale is None else sm_scale,
        "soft_cap": soft_cap, "return_lse": return_lse,
        "page_size": page_size, "num_pages": num_pages, "layout": layout,
        "max_blocks_per_seq": max_blocks,
    }
    return problem, {"q": q, "k": k, "v": v}


def loop_reference(problem, vals):
    """Per element, pure Python: the spec of docs/adapter-protocol.md."""
    q, k, v = vals["q"].tolist(), vals["k"].tolist(), vals["v"].tolist()
    hq, hkv, d = problem["num_qo_heads"], problem["num_kv_heads"], problem["head_dim"]
    group = hq // hkv
    L, R, cap = problem["window_left"], problem["window_right"], problem["soft_cap"]
    out = [[[0.0] * d for _ in range(hq)] for _ in range(problem["total_qo"])]
    lse = [[-math.inf] * hq for _ in range(problem["total_qo"])]
    q0 = k0 = 0
    for nq, nk in zip(problem["qo_len"], problem["kv_len"]):
        for i in range(nq):
            p = nk - nq + i
            for h in range(hq):
                kh = h // group
                scored = []
                for key in range(nk):
                    if problem["causal"] and key > p:
                        continue
                    if L >= 0 and key < p - L:
                        continue
                    if R >= 0 and key > p + R:
                        continue
                    s = 0.0
                    for j in range(d):
                        s += q[q0 + i][h][j] * k[k0 + key][kh][j]
                    s *= problem["sm_scale"]
                    if cap > 0:
                        s = cap * math.tanh(s / cap)
                    scored.append((key, s))
                if not scored:
                    continue
                m = max(s for _, s in scored)
                ws = [(key, math.exp(s - m)) for key, s in scored]
                total = sum(w for _, w in ws)
                for j in range(d):
                    out[q0 + i][h][j] = sum(w * v[k0 + key][kh][j] for key, w in ws) / total
                lse[q0 + i][h] = m + math.log(total)
        q0 += nq
        k0 += nk
    return np.array(out, dtype=np.float64), np.array(lse, dtype=np.float64)


def spacing_up(a: np.ndarray, dtype: str) -> np.ndarray:
    """Gap from |a| to the next representable value of the case dtype."""
    a = np.abs(a)
    if dtype == "fp16":
        return np.spacing(a.astype(np.float16)).astype(np.float64)
    if dtype == "fp32":
        return np.spacing(a.astype(np.float32)).astype(np.float64)
    return np.spacing(a.astype(np.float32)).astype(np.float64) * 65536.0  # bf16: 16 fewer bits


def binding_rows(problem):
    """Boolean [total_qo]: rows whose window binds (key p-L exists, L >= 1)."""
    L = problem["window_left"]
    rows = []
    for nq, nk in zip(problem["qo_len"], problem["kv_len"]):
        rows += [L >= 1 and (nk - nq + i) >= L for i in range(nq)]
    return np.array(rows, dtype=bool)


# a sweep of small problems: every axis the brief names, kept cheap for the loop reference
def sweep():
    reqs = [
        ([1, 1, 1], [5, 9, 17]),          # decode
        ([4, 7, 1], [4, 12, 6]),          # qo == kv, qo < kv, a decode row
        ([6, 3], [6, 20]),
    ]
    heads = [(4, 2), (2, 2), (4, 1), (6, 3)]
    dtypes = ["fp16", "bf16", "fp32"]
    pages = [1, 3, 16]
    layouts = ["NHD", "HND"]
    windows = [-1, 0, 1, 4]
    flags = [(True, -1, 0.0), (False, -1, 0.0), (False, 2, 0.0), (True, -1, 3.0), (False, 0, 3.0)]
    cases = []
    for n, (req, hd, dt, ps, lay, win, fl) in enumerate(zip(
            itertools.cycle(reqs), itertools.cycle(heads), itertools.cycle(dtypes), itertools.cycle(pages),
            itertools.cycle(layouts), itertools.cycle(windows), itertools.cycle(flags))):
        if n >= 30:
            break
        causal, R, cap = fl
        cases.append(dict(qo_len=req[0], kv_len=req[1], hq=hd[0], hkv=hd[1], d=8, dtype=dt, page_size=ps,
                          layout=lay, causal=causal, window_left=win, window_right=R, soft_cap=cap,
                          sm_scale=(1.0 if cap else None)))
    return cases


# --------------------------------------------------------------------------
# the harness side of the pipes


class AdapterProcess:
    def __init__(self, script, default_fds=False, extra_env=None, args=()):
        req_r, self._req_w = os.pipe()
        self._rep_r, rep_w = os.pipe()
        env = dict(os.environ)
        env.pop("SWADIFF_PROTOCOL_FDS", None)
        env.update({"SWADIFF_PROTOCOL": "1", "SWADIFF_SCRATCH": tempfile.gettempdir(), "PYTHONUNBUFFERED": "1"})
        env.update(extra_env or {})
        self.stderr_file = tempfile.TemporaryFile()
        self.stdout_file = tempfile.TemporaryFile()
        kw = dict(stdin=subprocess.DEVNULL, stdout=self.stdout_file, stderr=self.stderr_file, env=env, cwd=ROOT)
        if default_fds:
            def preexec():  # the harness's own arrangement: requests on 3, replies on 4
                a = fcntl.fcntl(req_r, fcntl.F_DUPFD, 10)
                b = fcntl.fcntl(rep_w, fcntl.F_DUPFD, 10)
                os.dup2(a, 3)
                os.dup2(b, 4)
                os.close(a)
                os.close(b)
            self.proc = subprocess.Popen([sys.executable, script, *args], preexec_fn=preexec, close_fds=False, **kw)
        else:
            env["SWADIFF_PROTOCOL_FDS"] = f"{req_r},{rep_w}"
            self.proc = subprocess.Popen([sys.executable, script, *args], pass_fds=(req_r, rep_w), **kw)
        os.close(req_r)
        os.close(rep_w)
        self._buf = b""

    def send_raw(self, data: bytes):
        os.write(self._req_w, data)

    def send(self, msg: dict):
        body = json.dumps(msg).encode()
        self.send_raw(str(len(body)).encode() + b"\n" + body)

    def _read_some(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([self._rep_r], [], [], left)[0]:
            raise TimeoutError("no reply from the adapter; stderr:\n" + self.stderr())
        chunk = os.read(self._rep_r, 1 << 16)
        if not chunk:
            raise EOFError("adapter closed its reply pipe; stderr:\n" + self.stderr())
        self._buf += chunk

    def recv(self) -> dict:
        deadline = time.monotonic() + REPLY_TIMEOUT_S
        while b"\n" not in self._buf:
            self._read_some(deadline)
        head, self._buf = self._buf.split(b"\n", 1)
        assert head.isdigit() and len(head) <= 8, head
        n = int(head)
        while len(self._buf) < n:
            self._read_some(deadline)
        body, self._buf = self._buf[:n], self._buf[n:]
        msg = json.loads(body.decode("utf-8"))
        assert isinstance(msg, dict)
        return msg

    def handshake(self) -> dict:
        self.send({"type": "hello", "protocol": 1, "swadiff": "0.2.0"})
        return self.recv()

    def close_requests(self):
        if self._req_w is not None:
            os.close(self._req_w)
            self._req_w = None

    def wait(self, timeout=REPLY_TIMEOUT_S) -> int:
        return self.proc.wait(timeout=timeout)

    def stderr(self) -> str:
        self.stderr_file.seek(0)
        return self.stderr_file.read().decode("utf-8", "replace")

    def finish(self):
        self.close_requests()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._rep_r)
        self.stderr_file.close()
        self.stdout_file.close()


def read_out(directory, reply, problem):
    raw = np.load(os.path.join(directory, reply["out"]))
    return raw, decode_dtype(raw, problem["dtype"])


# --------------------------------------------------------------------------


class DtypeConversion(unittest.TestCase):
    def test_bf16_round_to_nearest_even_from_f32_bits(self):
        cases = {
            0x3F800000: 0x3F80,  # 1.0
            0x3F808000: 0x3F80,  # tie, lower neighbour even: down
            0x3F818000: 0x3F82,  # tie, lower neighbour odd: up
            0x3F808001: 0x3F81,  # just above the tie
            0x3F807FFF: 0x3F80,  # just below the tie
            0xBF818000: 0xBF82,  # negative tie, odd: away from zero
            0x3FFF8000: 0x4000,  # tie carrying into the exponent
            0x7F7F7FFF: 0x7F7F,  # largest that stays finite
            0x7F7FFFFF: 0x7F80,  # float32 max rounds to +inf
            0x7F800000: 0x7F80,  # +inf
            0xFF800000: 0xFF80,  # -inf
            0x7FC00000: 0x7FC0,  # quiet NaN
            0x7F800001: 0x7FC0,  # NaN with a low payload only: stays NaN (naive rounding makes inf)
            0xFF800001: 0xFFC0,  # negative NaN keeps its sign
            0x00000001: 0x0000,  # smallest subnormal: rounds to +0
            0x00008000: 0x0000,  # subnormal tie, even: down
            0x00018000: 0x0002,  # subnormal tie, odd: up
            0x80000000: 0x8000,  # -0
        }
        bits = np.array(list(cases), dtype=np.uint32)
        got = sa.to_case_dtype(bits.view(np.float32), "bf16")
        self.assertEqual(got.dtype, np.dtype("<u2"))
        for b, want, g in zip(cases, cases.values(), got.tolist()):
            self.assertEqual(g, want, f"f32 bits {b:#010x}: got {g:#06x}, want {want:#06x}")

    def test_bf16_from_float64_is_rounded_once(self):
        # through float32 first, 1 + 2^-8 + 2^-40 becomes the tie 1 + 2^-8 and rounds down: wrong
        cases = [
            (1 + 2**-8 + 2**-40, 0x3F81),
            (1 + 2**-8, 0x3F80),
            (1 + 2**-8 - 2**-40, 0x3F80),
            (-(1 + 3 * 2**-8 - 2**-45), 0xBF81),
            (1 + 3 * 2**-8, 0x3F82),
            (3.5e38, 0x7F80),              # past bf16's max: +inf
            (-1e300, 0xFF80),
            (2.0**-140, 0x0000),           # below half the smallest bf16 subnormal (2^-133)
            (2.0**-134 + 2.0**-160, 0x0001),  # just above half of it: the smallest subnormal
            (float("nan"), 0x7FC0),
            (float("inf"), 0x7F80),
        ]
        got = sa.to_case_dtype(np.array([c[0] for c in cases], dtype=np.float64), "bf16").tolist()
        for (x, want), g in zip(cases, got):
            self.assertEqual(g, want, f"{x!r}: got {g:#06x}, want {want:#06x}")

    def test_fp16_and_fp32_round_to_nearest_even(self):
        x = np.array([1 + 2**-11 + 2**-40, 1 + 2**-11, 1 + 3 * 2**-11, 70000.0, 2.0**-25, 2.0**-25 + 2.0**-40])
        got = sa.to_case_dtype(x, "fp16")
        self.assertEqual(got.dtype, np.dtype("<f2"))
        self.assertEqual(got.view(np.uint16).tolist(), [0x3C01, 0x3C00, 0x3C02, 0x7C00, 0x0000, 0x0001])
        y = sa.to_case_dtype(np.array([1 + 2**-24, 1 + 3 * 2**-24]), "fp32")
        self.assertEqual(y.dtype, np.dtype("<f4"))
        self.assertEqual(y.view(np.uint32).tolist(), [0x3F800000, 0x3F800002])

    def test_bf16_widening_is_exact_and_round_trips(self):
        bits = np.arange(0, 1 << 16, dtype=np.uint32).astype(np.uint16)
        f = sa.from_case_dtype(bits, "bf16")
        self.assertEqual(f.dtype, np.float32)
        back = sa.to_case_dtype(f, "bf16")
        finite = np.isfinite(f)
        self.assertTrue(np.array_equal(back[finite], bits[finite]))
        self.assertTrue(np.all(np.isnan(sa.from_case_dtype(back[~finite & np.isnan(f)], "bf16"))))

    def test_save_case_npy(self):
        with tempfile.TemporaryDirectory() as tmp:
            for dt, want in (("fp16", "<f2"), ("bf16", "<u2"), ("fp32", "<f4")):
                path = os.path.join(tmp, dt + ".npy")
                sa.save_case_npy(path, np.ones((2, 3)), dt)
                with open(path, "rb") as f:
                    self.assertEqual(f.read(8), b"\x93NUMPY\x01\x00")  # format version 1.0
                self.assertEqual(np.load(path).dtype, np.dtype(want))


class PagedAndReference(unittest.TestCase):
    def test_gather_paged_equals_contiguous(self):
        with tempfile.TemporaryDirectory() as tmp:
            n = 0
            for dtype, ps, layout in itertools.product(("fp16", "bf16", "fp32"), (1, 3, 16), ("NHD", "HND")):
                d = os.path.join(tmp, f"p{n}")
                n += 1
                problem, _ = make_problem(d, n, qo_len=[1, 2, 5], kv_len=[7, 16, 33], hq=4, hkv=2, d=8,
                                          dtype=dtype, page_size=ps, layout=layout)
                t = sa.Tensors(d, problem)
                for which in ("k", "v"):
                    for table in ("indptr", "block_tables"):
                        got = sa.gather_paged(problem, t, which, table=table)
                        want = np.load(os.path.join(d, which + ".npy"))
                        self.assertEqual(got.dtype, want.dtype)
                        self.assertTrue(np.array_equal(got.view(np.uint8), want.view(np.uint8)),
                                        f"{dtype} page {ps} {layout} {which} via {table}")
                    f32 = sa.gather_paged(problem, t, which, as_float32=True)
                    self.assertFalse(np.isnan(f32).any())

    def test_gather_paged_rejects_a_bad_last_page_len(self):
        with tempfile.TemporaryDirectory() as tmp:
            problem, _ = make_problem(tmp, 1, qo_len=[1], kv_len=[7], hq=2, hkv=2, d=8, dtype="fp16", page_size=3)
            np.save(os.path.join(tmp, "kv_last_page_len.npy"), np.array([2], dtype="<i4"))
            with self.assertRaisesRegex(ValueError, "last_page_len 2"):
                sa.gather_paged(problem, sa.Tensors(tmp, problem), "k")

    def test_reference_attention_matches_the_loop(self):
        with tempfile.TemporaryDirectory() as tmp:
            for n, cfg in enumerate(sweep()[:12]):
                d = os.path.join(tmp, f"p{n}")
                problem, vals = make_problem(d, 100 + n, **cfg)
                out, lse = sa.reference_attention(problem, sa.Tensors(d, problem))
                want_out, want_lse = loop_reference(problem, vals)
                np.testing.assert_allclose(out, want_out, rtol=1e-12, atol=1e-12, err_msg=str(cfg))
                np.testing.assert_allclose(lse, want_lse, rtol=1e-12, atol=1e-12, err_msg=str(cfg))

    def test_empty_rows_give_zero_and_minus_inf(self):
        # a row with no visible key cannot come from a valid problem (key p is always visible),
        # so empty it by hand through a problem the reference still accepts: qo rows past kv
        with tempfile.TemporaryDirectory() as tmp:
            problem, vals = make_problem(tmp, 5, qo_len=[3], kv_len=[3], hq=2, hkv=1, d=8, dtype="fp32",
                                         page_size=2, causal=True, window_left=0)
            q = vals["q"]
            k = vals["k"][:0]
            v = vals["v"][:0]
            p2 = dict(problem, kv_len=[0], total_kv=0)
            p2["qo_len"] = [3]
            p2["causal"] = False
            out, lse = sa.reference_attention(p2, None, q=q, k=k, v=v)
            self.assertTrue(np.all(out == 0.0))
            self.assertTrue(np.all(lse == -np.inf))


class Registry(unittest.TestCase):
    def test_every_adapter_is_registered_and_compiles(self):
        with open(os.path.join(ADAPTERS, "registry.json")) as f:
            reg = json.load(f)["adapters"]
        # swadiff_adapter.py is the helper; replay_dump.py replays a dump (it takes arguments,
        # so it has no registry command).  The timing script of `bench --peers` is bench/'s.
        files = sorted(n[:-3] for n in os.listdir(ADAPTERS)
                       if n.endswith(".py") and n not in ("swadiff_adapter.py", "replay_dump.py"))
        self.assertEqual(sorted(reg), files)
        for name, entry in reg.items():
            self.assertEqual(entry["command"], "${SWADIFF_PYTHON:-python3} adapters/" + name + ".py")
            self.assertIn(entry["where"], ("cpu", "gpu"))
            self.assertTrue(entry["description"])
            with open(os.path.join(ADAPTERS, name + ".py")) as f:
                src = f.read()
            compile(src, name + ".py", "exec")  # the GPU adapters cannot run here; they must parse
            self.assertIn("Window mapping:", src)
            self.assertIn("LSE base:", src)
            if "NOT RUN" in entry["description"]:
                self.assertIn("# NOT RUN HERE: written against the documented API of", src)

    def test_peers_bench_reports_every_peer_per_shape_without_its_library(self):
        """`swadiff bench --peers` reads one row per (shape, peer): a peer that
        cannot run says why instead of vanishing."""
        with tempfile.TemporaryDirectory() as d:
            shapes = [{"name": "decode b2", "backend": "decode_fa2", "batch": 2, "qo_len": 1, "kv_len": 64,
                       "num_qo_heads": 4, "num_kv_heads": 2, "head_dim": 64, "window_left": 31, "causal": True,
                       "dtype": "fp16"},
                      {"name": "prefill 64", "backend": "prefill", "batch": 1, "qo_len": 64, "kv_len": 64,
                       "num_qo_heads": 4, "num_kv_heads": 2, "head_dim": 64, "window_left": -1, "causal": True,
                       "dtype": "bf16"}]
            with open(os.path.join(d, "shapes.json"), "w") as f:
                json.dump(shapes, f)
            code = ("import runpy, sys; sys.modules['torch'] = None; sys.modules['jax'] = None; "
                    "sys.argv = [%r, '--shapes', %r, '--out', %r, '--iters', '2']; runpy.run_path(%r, run_name='__main__')"
                    % ("peers_bench.py", os.path.join(d, "shapes.json"), os.path.join(d, "peers.json"),
                       os.path.join(ROOT, "bench", "peers_bench.py")))
            p = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(os.path.join(d, "peers.json")) as f:
                res = json.load(f)
            self.assertEqual(sorted(res["peers"]), ["decode b2", "prefill 64"])
            for name, rows in res["peers"].items():
                self.assertEqual([r["peer"] for r in rows], ["torch", "jax_cudnn"], name)
                for r in rows:
                    self.assertIn("unavailable", r["unsupported"])

    def test_gpu_adapters_fail_cleanly_without_their_library(self):
        procs = []
        for name in ("torch_sdpa", "flashinfer_wrappers", "sglang_triton"):
            # as if torch were not installed, also where it is
            code = "import runpy, sys; sys.modules['torch'] = None; runpy.run_path(%r, run_name='__main__')" % (
                os.path.join(ADAPTERS, name + ".py"))
            procs.append((name, subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL,
                                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)))
        for name, p in procs:
            out, err = p.communicate(timeout=30)
            self.assertEqual(p.returncode, 3, err)
            self.assertIn(f"swadiff adapter {name}: cannot start:", err.decode())
            self.assertEqual(out, b"")


class ReplayDump(unittest.TestCase):
    """adapters/replay_dump.py answers a case with the output a dump holds for its id."""

    def test_replays_the_dumped_output_and_refuses_cases_it_lacks(self):
        with tempfile.TemporaryDirectory() as d:
            run_dir = os.path.join(d, "run")
            os.makedirs(run_dir)
            problem, vals = make_problem(run_dir, 7, qo_len=[3], kv_len=[9], hq=4, hkv=2, d=8, dtype="bf16",
                                         page_size=4, window_left=2)
            case = os.path.join(d, "dump", "lib__case--x=1")
            os.makedirs(case)
            with open(os.path.join(case, "meta.json"), "w") as f:
                json.dump({"format": "swadiff-dump/1", "id": "lib/case:x=1"}, f)
            recorded = sa.to_case_dtype(np.arange(3 * 4 * 8, dtype=np.float64).reshape(3, 4, 8) / 64, "bf16")
            sa.save_npy(os.path.join(case, "out_mylib--fast.npy"), recorded)
            ap = AdapterProcess(os.path.join(ADAPTERS, "replay_dump.py"), args=(os.path.join(d, "dump"), "mylib:fast"))
            try:
                hello = ap.handshake()
                self.assertEqual([b["name"] for b in hello["backends"]], ["out"])
                ap.send({"type": "run", "id": "lib/case:x=1", "backend": "out", "dir": run_dir, "problem": problem})
                reply = ap.recv()
                self.assertEqual(reply["type"], "result", reply)
                got = np.load(os.path.join(run_dir, reply["out"]))
                self.assertTrue(np.array_equal(got, recorded), "the dumped bits, unchanged")
                ap.send({"type": "run", "id": "lib/other", "backend": "out", "dir": run_dir, "problem": problem})
                reply = ap.recv()
                self.assertEqual(reply["type"], "unsupported")
                self.assertIn("not in the dump", reply["reason"])
            finally:
                ap.finish()

    def test_a_missing_dump_folder_stops_it_with_the_cause(self):
        p = subprocess.run([sys.executable, os.path.join(ADAPTERS, "replay_dump.py"), "/nonexistent/dump", "a:b"],
                           capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
        self.assertEqual(p.returncode, 3)
        self.assertIn("/nonexistent/dump: no such dump folder", p.stderr.decode())


class Protocol(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            p.finish()
        self.tmp.cleanup()

    def start(self, name, **kw):
        p = AdapterProcess(os.path.join(ADAPTERS, name) if not os.path.isabs(name) else name, **kw)
        self.procs.append(p)
        return p

    def run_request(self, proc, directory, problem, backend, rid="case"):
        proc.send({"type": "run", "id": rid, "backend": backend, "dir": directory, "problem": problem})
        return proc.recv()

    def test_handshake_contents(self):
        # numpy_exact's all_forms is swadiff's positive marshalling control (docs/controls.md)
        for script, adapter, backends in (("numpy_exact.py", "numpy_exact", ["exact", "all_forms"]),
                                          ("numpy_wrong_window.py", "numpy_wrong_window", ["window_short"])):
            p = self.start(script)
            hello = p.handshake()
            self.assertEqual(hello["type"], "hello")
            self.assertEqual(hello["protocol"], 1)
            self.assertEqual(hello["adapter"], adapter)
            self.assertEqual([b["name"] for b in hello["backends"]], backends)
            for b in hello["backends"]:
                self.assertEqual(b["lse_base"], "e")
                self.assertEqual(sorted(b["kinds"]), ["decode", "prefill"])
                self.assertIsInstance(b["description"], str)
                self.assertTrue(b["description"])
            p.send({"type": "bye"})
            self.assertEqual(p.wait(), 0)

    def test_window_off_explicit_and_absent_agree(self):
        """Every adapter goes through the helper's normalize_problem: a window
        key left out means "off", exactly like -1 (both sides, causal or not)."""
        p = self.start("numpy_exact.py")
        p.handshake()
        for causal in (True, False):
            d1 = os.path.join(self.tmp.name, f"explicit-{causal}")
            d2 = os.path.join(self.tmp.name, f"absent-{causal}")
            explicit, _ = make_problem(d1, 11, qo_len=[3, 1], kv_len=[9, 6], hq=4, hkv=2, d=8, dtype="fp16",
                                       page_size=3, window_left=-1, causal=causal)
            absent, _ = make_problem(d2, 11, qo_len=[3, 1], kv_len=[9, 6], hq=4, hkv=2, d=8, dtype="fp16",
                                     page_size=3, window_left=-1, causal=causal)
            absent.pop("window_left")
            absent.pop("window_right", None)
            r1 = self.run_request(p, d1, explicit, "exact", rid="explicit")
            r2 = self.run_request(p, d2, absent, "exact", rid="absent")
            self.assertEqual(r1["type"], "result", r1)
            self.assertEqual(r2["type"], "result", r2)
            np.testing.assert_array_equal(np.load(os.path.join(d1, r1["out"])), np.load(os.path.join(d2, r2["out"])))
        norm = sa.normalize_problem({"causal": False})
        self.assertEqual((norm["window_left"], norm["window_right"]), (-1, -1))
        self.assertEqual(sa.normalize_problem({"causal": True})["window_right"], 0)

    def test_default_fds_3_and_4(self):
        p = self.start("numpy_exact.py", default_fds=True)
        self.assertEqual(p.handshake()["adapter"], "numpy_exact")
        d = os.path.join(self.tmp.name, "run")
        problem, vals = make_problem(d, 7, qo_len=[2], kv_len=[5], hq=2, hkv=1, d=8, dtype="fp16", page_size=2,
                                     window_left=1)
        reply = self.run_request(p, d, problem, "exact")
        self.assertEqual(reply["type"], "result", reply)
        p.close_requests()
        self.assertEqual(p.wait(), 0, p.stderr())

    def test_exact_and_wrong_twin_against_the_loop_reference(self):
        exact = self.start("numpy_exact.py")
        wrong = self.start("numpy_wrong_window.py")
        exact.handshake()
        wrong.handshake()
        for n, cfg in enumerate(sweep()):
            with self.subTest(n=n, cfg=cfg):
                d = os.path.join(self.tmp.name, f"run-{n}")
                problem, vals = make_problem(d, 1000 + n, **cfg)
                want_out, want_lse = loop_reference(problem, vals)

                reply = self.run_request(exact, d, problem, "exact", rid=f"sweep/{n}")
                self.assertEqual(reply["type"], "result", reply)
                self.assertEqual(reply["lse_base"], "e")
                raw, out = read_out(d, reply, problem)
                self.assertEqual(raw.shape, (problem["total_qo"], problem["num_qo_heads"], problem["head_dim"]))
                self.assertEqual(raw.dtype, np.dtype(sa.NPY_DTYPE[problem["dtype"]].str))
                self.assertFalse(np.isnan(out).any(), "a NaN from an unused page or slot leaked")
                # rounded once, to nearest: within half a unit in the last place of the dtype
                err = np.abs(out - want_out)
                allowed = 0.5 * spacing_up(out, problem["dtype"]) * (1 + 1e-6) + 1e-13
                self.assertTrue(np.all(err <= allowed),
                                f"max err {err.max():.3g}, worst ratio {(err / allowed).max():.3g}")
                lse = np.load(os.path.join(d, reply["lse"]))
                self.assertEqual(lse.shape, (problem["total_qo"], problem["num_qo_heads"]))
                np.testing.assert_allclose(lse, want_lse, rtol=1e-10, atol=1e-10)  # natural log

                os.rename(os.path.join(d, "out.npy"), os.path.join(d, "exact_out.npy"))
                os.rename(os.path.join(d, "lse.npy"), os.path.join(d, "exact_lse.npy"))
                reply = self.run_request(wrong, d, problem, "window_short", rid=f"sweep/{n}")
                self.assertEqual(reply["type"], "result", reply)
                wraw, _ = read_out(d, reply, problem)
                wlse = np.load(os.path.join(d, reply["lse"]))
                bind = binding_rows(problem)
                same_rows = np.all(wraw.view(np.uint8).reshape(len(bind), -1) ==
                                   raw.view(np.uint8).reshape(len(bind), -1), axis=1)
                # identical, bit for bit, where the window does not bind (and everywhere at L = 0, -1)
                self.assertTrue(np.all(same_rows[~bind]), "the twin differs on a row where the window does not bind")
                self.assertTrue(np.array_equal(wlse[~bind], lse[~bind]))
                # and different in every (row, head) where it does
                if bind.any():
                    per_head_same = np.all(wraw[bind] == raw[bind], axis=-1)
                    self.assertFalse(per_head_same.any(), "the twin equals the spec on a binding row")
                    self.assertTrue(np.all(wlse[bind] != lse[bind]))
                if problem["window_left"] in (-1, 0):
                    self.assertFalse(bind.any())

    def test_lse_absent_when_not_asked(self):
        p = self.start("numpy_exact.py")
        p.handshake()
        d = os.path.join(self.tmp.name, "run")
        problem, _ = make_problem(d, 3, qo_len=[1, 1], kv_len=[4, 6], hq=2, hkv=2, d=8, dtype="bf16",
                                  page_size=3, return_lse=False)
        reply = self.run_request(p, d, problem, "exact")
        self.assertEqual(reply["type"], "result", reply)
        self.assertIsNone(reply.get("lse"))

    def test_an_exception_is_an_error_reply_and_the_adapter_keeps_serving(self):
        p = self.start("numpy_exact.py")
        p.handshake()
        d = os.path.join(self.tmp.name, "run")
        problem, _ = make_problem(d, 3, qo_len=[2], kv_len=[4], hq=2, hkv=2, d=8, dtype="fp32", page_size=3)
        missing = os.path.join(self.tmp.name, "no-such-folder")
        reply = self.run_request(p, missing, problem, "exact")
        self.assertEqual(reply["type"], "error", reply)
        self.assertIn("FileNotFoundError", reply["message"])
        self.assertIn("(at ", reply["message"])
        reply = self.run_request(p, d, problem, "exact")
        self.assertEqual(reply["type"], "result", reply)
        reply = self.run_request(p, d, problem, "no_such_backend")
        self.assertEqual(reply["type"], "error", reply)
        self.assertIn("no_such_backend", reply["message"])
        p.send({"type": "bye"})
        self.assertEqual(p.wait(), 0)

    def test_run_fn_exceptions_unsupported_and_bad_results(self):
        script = os.path.join(self.tmp.name, "toy_adapter.py")
        with open(script, "w") as f:
            f.write(textwrap.dedent(f"""\
                import sys
                sys.path.insert(0, {ADAPTERS!r})
                import numpy as np
                import swadiff_adapter as sa

                def divide(x):
                    return x / 0

                def run(backend, problem, tensors):
                    print("libraries may print to stdout")
                    if backend == "boom":
                        divide(1)
                    if backend == "nope":
                        raise sa.Unsupported("head_dim 8 is not supported by toy")
                    if backend == "badshape":
                        return np.zeros((1, 1, 1))
                    out, lse = sa.reference_attention(problem, tensors)
                    return sa.Result(out, lse / np.log(2.0), kernel_ms=0.25)

                sa.serve("toy", [sa.Backend("boom", "raises"), sa.Backend("nope", "unsupported"),
                                 sa.Backend("badshape", "wrong shape"),
                                 sa.Backend("ok", "fine", lse_base="2", kinds=["decode"])], run)
                """))
        p = self.start(script)
        hello = p.handshake()
        self.assertEqual([b["name"] for b in hello["backends"]], ["boom", "nope", "badshape", "ok"])
        self.assertEqual(hello["backends"][3]["kinds"], ["decode"])
        self.assertEqual(hello["backends"][0]["kinds"], ["prefill", "decode"])
        d = os.path.join(self.tmp.name, "run")
        decode, _ = make_problem(d, 3, qo_len=[1, 1], kv_len=[4, 6], hq=2, hkv=2, d=8, dtype="fp16", page_size=3)
        reply = self.run_request(p, d, decode, "boom")
        self.assertEqual(reply["type"], "error")
        self.assertIn("ZeroDivisionError", reply["message"])
        self.assertIn("division by zero", reply["message"])
        self.assertIn("toy_adapter.py:7 in divide: return x / 0", reply["message"])
        reply = self.run_request(p, d, decode, "nope")
        # every reply carries its request's id (the harness checks it: a stale reply is caught)
        self.assertEqual(reply, {"type": "unsupported", "reason": "head_dim 8 is not supported by toy", "id": "case"})
        reply = self.run_request(p, d, decode, "badshape")
        self.assertEqual(reply["type"], "error")
        self.assertIn("out has shape [1, 1, 1], expected", reply["message"])
        reply = self.run_request(p, d, decode, "ok")
        self.assertEqual(reply["type"], "result", reply)
        self.assertEqual(reply["lse_base"], "2")
        self.assertEqual(reply["kernel_ms"], 0.25)
        d2 = os.path.join(self.tmp.name, "run2")
        prefill, _ = make_problem(d2, 3, qo_len=[2], kv_len=[4], hq=2, hkv=2, d=8, dtype="fp16", page_size=3)
        reply = self.run_request(p, d2, prefill, "ok")
        self.assertEqual(reply["type"], "unsupported", reply)
        self.assertIn("decode", reply["reason"])
        p.send({"type": "bye"})
        self.assertEqual(p.wait(), 0)
        self.assertIn("Traceback", p.stderr())  # the full traceback goes to the log

    def test_garbage_makes_the_adapter_exit_non_zero(self):
        def frame(body: bytes) -> bytes:
            return str(len(body)).encode() + b"\n" + body

        garbage = [
            (False, b"hello\n"),                        # no length
            (True, b"12x\n{}"),                         # a non-digit in the length
            (True, frame(b"[1,2]")),                    # JSON, not an object
            (True, frame(b"{\"a\":")),                  # a frame that is not JSON
            (True, frame(b"\xff\xfe{}")),               # not UTF-8
            (True, b"123456789\n"),                     # more than 8 digits
            (True, b"99999999\n"),                      # over 16 MiB
            (True, frame(b"{\"type\":\"x\"}")),         # an unknown message
            (False, frame(b"{\"type\":\"run\"}")),      # a run before the hello
            (True, b"100\n{\"type\":"),                 # short frame, then EOF
        ]
        procs = [self.start("numpy_exact.py") for _ in garbage]  # started together: startup dominates
        for p, (after_hello, data) in zip(procs, garbage):
            with self.subTest(data=data):
                if after_hello:
                    self.assertEqual(p.handshake()["type"], "hello")
                p.send_raw(data)
                p.close_requests()
        for p, (_, data) in zip(procs, garbage):
            with self.subTest(data=data):
                rc = p.wait()
                self.assertNotEqual(rc, 0)
                self.assertIn("protocol error", p.stderr())

    def test_wrong_protocol_version(self):
        p = self.start("numpy_exact.py")
        p.send({"type": "hello", "protocol": 2, "swadiff": "9"})
        p.close_requests()
        self.assertNotEqual(p.wait(), 0)
        self.assertIn("protocol 2", p.stderr())

    def test_eof_exits_zero(self):
        p = self.start("numpy_wrong_window.py")
        q = self.start("numpy_exact.py")  # EOF before the hello, too
        p.handshake()
        p.close_requests()
        self.assertEqual(p.wait(), 0, p.stderr())
        q.close_requests()
        self.assertEqual(q.wait(), 0, q.stderr())


if __name__ == "__main__":
    unittest.main()
