"""swadiff_adapter — the adapter side of the swadiff adapter protocol (version 1).

docs/adapter-protocol.md is the contract; this module does all of it so that
an adapter is a few dozen lines:

    import swadiff_adapter as sa

    def run(backend, problem, tensors):
        out, lse = my_kernel(tensors.f32("q"), ...)
        return out, lse                # or sa.Result(out, lse, kernel_ms=...)
                                       # or raise sa.Unsupported("why")

    sa.serve("my_adapter",
             [sa.Backend("fast", "my kernel", lse_base="e", kinds=("prefill", "decode"))],
             run)

What it does for you:
  * framing (`<N>\\n<N bytes of JSON>`) on the fds of SWADIFF_PROTOCOL_FDS
    (default 3,4), the hello handshake, the request loop, `bye` and EOF;
  * a lazy `Tensors` view of the run folder (np.load on first use; case-dtype
    arrays widened to float32 on request, bf16 from its uint16 bits exactly);
  * the result: `out` converted to the case dtype with round-to-nearest-even
    (bf16 written as uint16 bits), `lse` as <f4/<f8, shapes checked, files
    written into the run folder;
  * `Unsupported(reason)` -> {"type": "unsupported"}; any other exception ->
    {"type": "error"} naming the exception type, its message and the last
    traceback line, and the adapter keeps serving;
  * garbage from the harness (bad framing, invalid JSON, an unknown message)
    -> a message on stderr and exit status 2; EOF on the request fd or `bye`
    -> exit 0.

Also: `reference_attention` (float64 numpy, the spec of the protocol document),
`gather_paged` (contiguous K/V rebuilt from the paged cache through either page
table), and dtype helpers (`to_case_dtype`, `from_case_dtype`, `save_case_npy`).

Python 3.11+, numpy only (a Python without numpy stops with a message naming
that interpreter).  swadiff puts this file's folder on the adapter's PYTHONPATH
(SWADIFF_ADAPTER_DIR), so `import swadiff_adapter` works from an adapter
anywhere; outside swadiff, add adapters/ to PYTHONPATH yourself.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
import traceback
from typing import Any, Callable, Iterable, Sequence

try:
    import numpy as np
except ImportError as _e:  # the adapter cannot start: say which Python lacks numpy, and what to do
    sys.stderr.write(f"swadiff adapter: cannot start: numpy is not installed for {sys.executable} "
                     f"(Python {sys.version.split()[0]}): {_e}. Install numpy for that Python, or set "
                     "SWADIFF_PYTHON to an interpreter that has it (the registry's commands run "
                     "${SWADIFF_PYTHON:-python3}; on Debian /usr/bin/python3 with python3-numpy)\n")
    sys.stderr.flush()
    raise SystemExit(3)

PROTOCOL_VERSION = 1
MAX_FRAME_BYTES = 16 * 1024 * 1024  # N <= 16 MiB
MAX_LENGTH_DIGITS = 8

CASE_DTYPES = ("fp16", "bf16", "fp32")
# the on-disk numpy dtype of each case dtype (bf16 travels as its bit patterns)
NPY_DTYPE = {"fp16": np.dtype("<f2"), "bf16": np.dtype("<u2"), "fp32": np.dtype("<f4")}
LSE_BASES = ("e", "2", "none")
KINDS = ("prefill", "decode")

# files in a run folder holding case-dtype tensors / int32 index arrays
CASE_TENSORS = ("q", "k", "v", "k_cache", "v_cache")
INDEX_ARRAYS = ("qo_indptr", "kv_seq_indptr", "kv_indptr", "kv_indices", "kv_last_page_len",
                "block_tables", "context_lens")


# --------------------------------------------------------------------------
# errors and results


class Unsupported(Exception):
    """Raise from run_fn: this backend cannot run this problem (a skip, not a failure)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = str(reason)


class ProtocolError(Exception):
    """What arrived on the request fd is not a protocol-1 message."""


@dataclasses.dataclass
class Backend:
    """One backend of an adapter, as declared in the hello reply."""

    name: str
    description: str
    lse_base: str = "e"                     # "e", "2" or "none"
    kinds: Sequence[str] = KINDS            # subset of ("prefill", "decode")
    # chunked local attention (attention_chunk_size > 0): a backend that
    # does not declare it gets such problems refused (unsupported), never
    # run as plain causal attention
    chunked: bool = False
    # optional tile shape of a tiled kernel, for `swadiff explain` to score
    # only the tile-granular hypotheses it can show:
    # {"q_rows": [64, 128], "gqa_packed": True, "kv_keys": [32]}
    # (docs/adapter-protocol.md)
    tiles: dict | None = None
    # what the kernel declares about itself (docs/invariance.md): swadiff
    # holds a declared kernel to it bitwise under --repeat (deterministic)
    # and --invariance batch,pages (batch_invariant); undeclared, the
    # differences are measured and reported, never a failure by themselves
    deterministic: bool = False
    batch_invariant: bool = False

    def __post_init__(self):
        if not self.name or not isinstance(self.name, str):
            raise ValueError("backend name must be a non-empty string")
        if self.lse_base not in LSE_BASES:
            raise ValueError(f"backend {self.name}: lse_base must be one of {LSE_BASES}, got {self.lse_base!r}")
        self.kinds = tuple(self.kinds)
        if not self.kinds or any(k not in KINDS for k in self.kinds):
            raise ValueError(f"backend {self.name}: kinds must be a non-empty subset of {KINDS}, got {self.kinds!r}")

    def hello(self) -> dict:
        h = {"name": self.name, "description": self.description, "lse_base": self.lse_base,
             "kinds": list(self.kinds)}
        if self.tiles is not None:
            h["tiles"] = dict(self.tiles)
        if self.deterministic:
            h["deterministic"] = True
        if self.batch_invariant:
            h["batch_invariant"] = True
        return h


@dataclasses.dataclass
class Result:
    """What run_fn may return (a bare array, (out, lse) or (out, lse, kernel_ms) work too)."""

    out: Any
    lse: Any = None
    kernel_ms: float | None = None
    lse_base: str | None = None             # overrides the backend's for this result


# --------------------------------------------------------------------------
# dtype conversion


def bf16_bits_to_f32(bits) -> np.ndarray:
    """uint16 bf16 bit patterns -> float32, exactly."""
    b = np.asarray(bits)
    if b.dtype != np.uint16:
        b = b.astype(np.uint16)
    return (b.astype(np.uint32) << 16).view(np.float32)


def _f32_bits_to_bf16_bits(bits32: np.ndarray) -> np.ndarray:
    """float32 bit patterns (uint32) -> bf16 bits, round to nearest even; NaN stays NaN (quiet)."""
    b = bits32.astype(np.uint64)
    rounded = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
    is_nan = (bits32 & 0x7FFFFFFF) > 0x7F800000
    nan_bits = ((bits32 >> 16) & 0x8000) | 0x7FC0
    return np.where(is_nan, nan_bits, rounded).astype(np.uint16)


def _f64_to_f32_bits_round_to_odd(x: np.ndarray) -> np.ndarray:
    """float64 -> float32 bits rounded to odd: a following round-to-nearest-even
    to bf16 (8 significant bits <= 24 - 2) is then exactly the direct rounding."""
    with np.errstate(over="ignore", invalid="ignore"):
        f = x.astype(np.float32)
    back = f.astype(np.float64)
    bits = f.view(np.uint32).copy()
    inexact = np.isfinite(x) & (back != x)
    away = inexact & (np.abs(back) > np.abs(x))  # RNE rounded away from zero: step the magnitude down
    bits[away] -= 1
    bits[inexact] |= 1
    return bits


def to_bf16_bits(x) -> np.ndarray:
    """Any float array -> bf16 bit patterns (uint16), round to nearest even.

    float64 input is rounded directly (no double rounding through float32)."""
    a = np.asarray(x)
    if a.dtype == np.float64:
        return _f32_bits_to_bf16_bits(_f64_to_f32_bits_round_to_odd(a))
    if a.dtype != np.float32:
        a = a.astype(np.float32)  # fp16 and narrower floats are exact in float32
    return _f32_bits_to_bf16_bits(np.ascontiguousarray(a).view(np.uint32))


def to_case_dtype(x, dtype: str) -> np.ndarray:
    """Any float array -> the case dtype's on-disk form (<f2, <u2 bf16 bits, <f4), round to nearest even."""
    if dtype not in NPY_DTYPE:
        raise ValueError(f"unknown case dtype {dtype!r} (expected one of {CASE_DTYPES})")
    a = _as_numpy_float(x)
    if dtype == "bf16":
        return np.ascontiguousarray(to_bf16_bits(a)).astype("<u2")
    # numpy's float64 -> float16 / float32 casts are correctly rounded (nearest even) directly
    with np.errstate(over="ignore", invalid="ignore"):
        return np.ascontiguousarray(a.astype(NPY_DTYPE[dtype]))


def from_case_dtype(raw, dtype: str) -> np.ndarray:
    """On-disk case-dtype array -> float32 (exact)."""
    raw = np.asarray(raw)
    if dtype == "bf16":
        if raw.dtype != np.uint16:
            raise ValueError(f"bf16 tensor must be stored as uint16 bit patterns, found {raw.dtype}")
        return bf16_bits_to_f32(raw)
    if dtype in ("fp16", "fp32"):
        return raw.astype(np.float32)
    raise ValueError(f"unknown case dtype {dtype!r} (expected one of {CASE_DTYPES})")


def save_npy(path: str, arr) -> None:
    """np.save a C-contiguous little-endian array (.npy format 1.0 for anything this protocol moves)."""
    a = np.ascontiguousarray(arr)
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    with open(path, "wb") as f:
        np.lib.format.write_array(f, a, version=(1, 0), allow_pickle=False)


def save_case_npy(path: str, x, dtype: str) -> None:
    """Write `x` (any float array) as .npy in the case dtype (bf16 as uint16 bits)."""
    save_npy(path, to_case_dtype(x, dtype))


def _as_numpy_float(x) -> np.ndarray:
    """numpy / torch / jax / anything array-like -> a numpy float array (float16/32/64)."""
    if hasattr(x, "detach") and hasattr(x, "cpu"):  # a torch tensor, without importing torch
        t = x.detach()
        if str(t.dtype) not in ("torch.float16", "torch.float32", "torch.float64"):
            t = t.float()  # bf16 and friends: exact in float32
        x = t.cpu().numpy()
    a = np.asarray(x)
    if a.dtype not in (np.float16, np.float32, np.float64):
        a = a.astype(np.float32)  # e.g. ml_dtypes.bfloat16 from JAX: exact in float32
    return a


# --------------------------------------------------------------------------
# the problem


def normalize_problem(problem: dict) -> dict:
    """The window "off" two ways: a window key that is absent means what -1
    means (no bound on that side), so every adapter sees explicit values and
    maps -1 to its library's own "off".  Causal implies window_right 0.
    attention_chunk_size absent or 0: no chunking."""
    p = dict(problem)
    for key in ("window_left", "window_right"):
        if p.get(key) is None:
            p[key] = -1
    if p.get("causal") is None:
        p["causal"] = True
    if p["causal"] and int(p["window_right"]) < 0:
        p["window_right"] = 0
    if p.get("attention_chunk_size") is None:
        p["attention_chunk_size"] = 0
    return p


def chunk_size(problem: dict) -> int:
    """attention_chunk_size C (0: off): the causal row at p sees [floor(p/C)*C, p]."""
    return int(problem.get("attention_chunk_size") or 0)


def problem_kind(problem: dict) -> str:
    """"decode" when every request has qo_len == 1, else "prefill"."""
    return "decode" if all(int(n) == 1 for n in problem["qo_len"]) else "prefill"


def group_size(problem: dict) -> int:
    hq, hkv = int(problem["num_qo_heads"]), int(problem["num_kv_heads"])
    if hkv < 1 or hq % hkv:
        raise ValueError(f"num_qo_heads {hq} is not a multiple of num_kv_heads {hkv}")
    return hq // hkv


def visible_mask(problem: dict, r: int, rows: np.ndarray | None = None) -> np.ndarray:
    """Boolean [qo_len, kv_len] (or [len(rows), kv_len]) mask of request r, exactly the spec:
    p = kv_len - qo_len + i; causal k <= p; window_left L: k >= p - L; window_right R: k <= p + R;
    attention_chunk_size C: k >= floor(p/C)*C (rows at p < 0 are empty by causality)."""
    nq, nk = int(problem["qo_len"][r]), int(problem["kv_len"][r])
    i = np.arange(nq, dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)
    p = (nk - nq + i)[:, None]
    k = np.arange(nk, dtype=np.int64)[None, :]
    m = np.ones((i.size, nk), dtype=bool)
    if problem.get("causal", True):
        m &= k <= p
    L = int(problem.get("window_left", -1))
    if L >= 0:
        m &= k >= p - L
    R = int(problem.get("window_right", -1))
    if R >= 0:
        m &= k <= p + R
    C = chunk_size(problem)
    if C > 0:
        m &= k >= (np.maximum(p, 0) // C) * C
    return m


# --------------------------------------------------------------------------
# the run folder


class Tensors:
    """Lazy view of a run folder.

    t.raw("q")   on-disk array (np.load, cached): fp16 <f2, bf16 <u2 bits, fp32 <f4, indices <i4
    t.f32("q")   a case-dtype tensor widened to float32 (bf16 exactly from its bits), cached
    t.f64("q")   the same in float64
    t.q, t.k, t.v, t.k_cache, t.v_cache    shorthand for t.f32(name)
    t.kv_indices, t.block_tables, ...      shorthand for t.raw(name) (int32)
    t.path("q")  the file's path; t.dtype the case dtype; t.dir the folder
    """

    def __init__(self, directory: str, problem: dict):
        self.dir = directory
        self.problem = problem
        self.dtype = problem.get("dtype")
        self._raw: dict[str, np.ndarray] = {}
        self._f32: dict[str, np.ndarray] = {}

    def path(self, name: str) -> str:
        return os.path.join(self.dir, name if name.endswith(".npy") else name + ".npy")

    def raw(self, name: str) -> np.ndarray:
        if name not in self._raw:
            arr = np.load(self.path(name), allow_pickle=False)
            if name in CASE_TENSORS:
                want = NPY_DTYPE.get(self.dtype)
                if want is None:
                    raise ValueError(f"problem dtype {self.dtype!r} is not one of {CASE_DTYPES}")
                if arr.dtype != want:
                    raise ValueError(f"{name}.npy: expected dtype {want.str} for {self.dtype}, found {arr.dtype.str}")
            self._raw[name] = arr
        return self._raw[name]

    def f32(self, name: str) -> np.ndarray:
        if name not in self._f32:
            self._f32[name] = from_case_dtype(self.raw(name), self.dtype)
        return self._f32[name]

    def f64(self, name: str) -> np.ndarray:
        return self.f32(name).astype(np.float64)

    def has(self, name: str) -> bool:
        return os.path.exists(self.path(name))

    def __getattr__(self, name: str):
        if name in CASE_TENSORS:
            return self.f32(name)
        if name in INDEX_ARRAYS:
            return self.raw(name)
        raise AttributeError(name)


# --------------------------------------------------------------------------
# paged KV


def paged_token_rows(problem: dict, tensors: Tensors, table: str = "indptr") -> np.ndarray:
    """int64 [total_kv]: for each token of k.npy (requests concatenated), its row in the
    cache viewed as [num_pages * page_size, ...] (page * page_size + slot).

    table="indptr": FlashInfer's kv_indptr / kv_indices / kv_last_page_len;
    table="block_tables": AITER/vLLM's block_tables / context_lens."""
    ps = int(problem["page_size"])
    kv_len = [int(n) for n in problem["kv_len"]]
    num_pages = int(problem["num_pages"])
    rows = []
    for r, n in enumerate(kv_len):
        need = (n + ps - 1) // ps
        if table == "indptr":
            indptr = tensors.raw("kv_indptr")
            lo, hi = int(indptr[r]), int(indptr[r + 1])
            pages = np.asarray(tensors.raw("kv_indices")[lo:hi], dtype=np.int64)
            last = int(tensors.raw("kv_last_page_len")[r])
            if hi - lo != need or (hi - lo - 1) * ps + last != n or not 1 <= last <= ps:
                raise ValueError(f"request {r}: kv_indptr gives {hi - lo} pages with last_page_len {last}, "
                                 f"which does not hold kv_len {n} at page_size {ps}")
        elif table == "block_tables":
            bt = tensors.raw("block_tables")
            cl = int(tensors.raw("context_lens")[r])
            if cl != n:
                raise ValueError(f"request {r}: context_lens {cl} != kv_len {n}")
            if need > bt.shape[1]:
                raise ValueError(f"request {r}: needs {need} blocks, block_tables has {bt.shape[1]} columns")
            pages = np.asarray(bt[r, :need], dtype=np.int64)
        else:
            raise ValueError(f"table must be 'indptr' or 'block_tables', got {table!r}")
        if pages.size and (pages.min() < 0 or pages.max() >= num_pages):
            raise ValueError(f"request {r}: page id out of range [0, {num_pages}): {pages.tolist()}")
        t = np.arange(n, dtype=np.int64)
        rows.append(pages[t // ps] * ps + t % ps)
    return np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)


def cache_as_rows(cache: np.ndarray, layout: str) -> np.ndarray:
    """[num_pages, page_size, H, D] (NHD) or [num_pages, H, page_size, D] (HND) ->
    [num_pages * page_size, H, D] (a view for NHD, a copy for HND)."""
    if cache.ndim != 4:
        raise ValueError(f"cache must be 4-D, got shape {cache.shape}")
    if layout == "NHD":
        p, s, h, d = cache.shape
        return cache.reshape(p * s, h, d)
    if layout == "HND":
        p, h, s, d = cache.shape
        return np.ascontiguousarray(cache.transpose(0, 2, 1, 3)).reshape(p * s, h, d)
    raise ValueError(f"layout must be NHD or HND, got {layout!r}")


def gather_paged(problem: dict, tensors: Tensors, which: str = "k", table: str = "indptr",
                 as_float32: bool = False) -> np.ndarray:
    """Contiguous [total_kv, num_kv_heads, head_dim] K (which="k") or V ("v") rebuilt from
    k_cache / v_cache through the page table; in the on-disk dtype (bit-identical to k.npy
    when the cache is right) or float32 with as_float32=True."""
    if which not in ("k", "v"):
        raise ValueError(f"which must be 'k' or 'v', got {which!r}")
    name = which + "_cache"
    cache = tensors.raw(name)
    layout = problem.get("layout", "NHD")
    ps, hkv, d = int(problem["page_size"]), int(problem["num_kv_heads"]), int(problem["head_dim"])
    want = (int(problem["num_pages"]), ps, hkv, d) if layout == "NHD" else (int(problem["num_pages"]), hkv, ps, d)
    if tuple(cache.shape) != want:
        raise ValueError(f"{name}.npy: expected shape {list(want)} ({layout}), found {list(cache.shape)}")
    out = cache_as_rows(cache, layout)[paged_token_rows(problem, tensors, table)]
    return from_case_dtype(out, tensors.dtype) if as_float32 else out


# --------------------------------------------------------------------------
# the reference


def reference_attention(problem: dict, tensors: Tensors | None = None, *, q=None, k=None, v=None,
                        max_chunk_elems: int = 1 << 22):
    """Exact attention of the protocol's spec in float64.

    q [total_qo, Hq, D], k / v [total_kv, Hkv, D] default to tensors' q.npy, k.npy, v.npy
    (the contiguous copies); pass k=, v= to use others (e.g. gather_paged's).
    Returns (out float64 [total_qo, Hq, D], lse float64 [total_qo, Hq], natural log).
    Masked keys weigh exactly 0; a row with no visible key has out 0 and lse -inf."""
    q = np.asarray(tensors.f32("q") if q is None else q, dtype=np.float64)
    k = np.asarray(tensors.f32("k") if k is None else k, dtype=np.float64)
    v = np.asarray(tensors.f32("v") if v is None else v, dtype=np.float64)
    B = int(problem["num_requests"])
    qo_len = [int(n) for n in problem["qo_len"]]
    kv_len = [int(n) for n in problem["kv_len"]]
    hq, hkv, d = int(problem["num_qo_heads"]), int(problem["num_kv_heads"]), int(problem["head_dim"])
    g = group_size(problem)
    scale = float(problem["sm_scale"]) if problem.get("sm_scale") is not None else 1.0 / math.sqrt(d)
    cap = float(problem.get("soft_cap") or 0.0)
    if q.shape != (sum(qo_len), hq, d):
        raise ValueError(f"q: expected shape {[sum(qo_len), hq, d]}, found {list(q.shape)}")
    for name, t in (("k", k), ("v", v)):
        if t.shape != (sum(kv_len), hkv, d):
            raise ValueError(f"{name}: expected shape {[sum(kv_len), hkv, d]}, found {list(t.shape)}")

    out = np.zeros((sum(qo_len), hq, d), dtype=np.float64)
    lse = np.full((sum(qo_len), hq), -np.inf, dtype=np.float64)
    q0 = k0 = 0
    for r in range(B):
        nq, nk = qo_len[r], kv_len[r]
        if nk == 0:  # no key at all: every row is empty (out 0, lse -inf)
            q0 += nq
            continue
        rows_per_chunk = max(1, max_chunk_elems // max(1, nk * g))
        for c0 in range(0, nq, rows_per_chunk):
            c1 = min(nq, c0 + rows_per_chunk)
            mask = visible_mask(problem, r, np.arange(c0, c1))          # [n, nk]
            seen = np.flatnonzero(mask.any(axis=0))
            if seen.size == 0:
                continue                                                # all rows empty: out 0, lse -inf
            lo, hi = int(seen[0]), int(seen[-1]) + 1                    # keys outside [lo, hi) weigh 0 anyway
            mask = mask[:, lo:hi]
            for kh in range(hkv):
                hs = slice(kh * g, (kh + 1) * g)                        # qo heads h with h // g == kh
                qq = q[q0 + c0:q0 + c1, hs, :].transpose(1, 0, 2)       # [g, n, D]
                kk = k[k0 + lo:k0 + hi, kh, :]                          # [nk', D]
                vv = v[k0 + lo:k0 + hi, kh, :]
                s = np.matmul(qq, kk.T) * scale                         # [g, n, nk']
                if cap > 0:
                    s = cap * np.tanh(s / cap)
                s = np.where(mask[None], s, -np.inf)
                m = s.max(axis=-1, keepdims=True)
                m = np.where(np.isfinite(m), m, 0.0)
                w = np.where(mask[None], np.exp(s - m), 0.0)            # masked keys: exactly 0
                l = w.sum(axis=-1)                                      # [g, n]
                o = np.matmul(w, vv)                                    # [g, n, D]
                nonempty = l > 0
                with np.errstate(divide="ignore", invalid="ignore"):
                    o = np.where(nonempty[:, :, None], o / l[:, :, None], 0.0)
                    row_lse = np.where(nonempty, m[..., 0] + np.log(l), -np.inf)
                out[q0 + c0:q0 + c1, hs, :] = o.transpose(1, 0, 2)
                lse[q0 + c0:q0 + c1, hs] = row_lse.T
        q0 += nq
        k0 += nk
    return out, lse


# --------------------------------------------------------------------------
# torch helpers (torch is imported only when one of these is called)


def torch_dtype(dtype: str):
    import torch
    return {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[dtype]


def to_torch(raw: np.ndarray, dtype: str | None = None, device="cuda"):
    """On-disk array -> torch tensor on `device`, exactly: case-dtype arrays (pass dtype) become
    float16 / bfloat16 (from the uint16 bits) / float32; index arrays (dtype None) stay int32."""
    import torch
    a = np.ascontiguousarray(raw)
    if dtype == "bf16":
        t = torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    elif dtype is None and a.dtype.kind in "iu":
        t = torch.from_numpy(a.astype(np.int32))
    else:
        t = torch.from_numpy(a)
    return t.to(device)


def cuda_ms(fn, repeat: int = 1) -> float:
    """Mean milliseconds of fn() over `repeat` calls, CUDA events around them (torch)."""
    import torch
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeat):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / repeat


def timing_wanted() -> bool:
    """SWADIFF_ADAPTER_TIMING=0 turns the extra timed launch of the GPU adapters off."""
    return os.environ.get("SWADIFF_ADAPTER_TIMING", "1") != "0"


# --------------------------------------------------------------------------
# framing


def read_frame(f) -> dict | None:
    """Read one `<N>\\n<N bytes of JSON object>` frame from a binary file.
    Returns None on end-of-file before the first byte; raises ProtocolError on anything else."""
    head = f.readline(MAX_LENGTH_DIGITS + 1)
    if head == b"":
        return None
    if not head.endswith(b"\n"):
        if len(head) > MAX_LENGTH_DIGITS:
            raise ProtocolError(f"length prefix longer than {MAX_LENGTH_DIGITS} digits: {head[:16]!r}")
        raise ProtocolError(f"end of file inside the length prefix: {head!r}")
    digits = head[:-1]
    if not digits or not all(0x30 <= c <= 0x39 for c in digits):
        raise ProtocolError(f"expected a decimal length and a newline, read {head!r}")
    n = int(digits)
    if n > MAX_FRAME_BYTES:
        raise ProtocolError(f"frame of {n} bytes is over the {MAX_FRAME_BYTES}-byte limit")
    body = f.read(n)
    if body is None or len(body) != n:
        raise ProtocolError(f"short frame: expected {n} bytes, read {0 if body is None else len(body)}")
    try:
        msg = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ProtocolError(f"frame is not UTF-8 JSON ({e}): {body[:80]!r}") from None
    if not isinstance(msg, dict):
        raise ProtocolError(f"frame is JSON but not an object: {body[:80]!r}")
    return msg


def encode_frame(obj: dict) -> bytes:
    body = json.dumps(obj, allow_nan=False, separators=(",", ":")).encode("utf-8")
    if len(body) > MAX_FRAME_BYTES:
        raise ValueError(f"message of {len(body)} bytes is over the {MAX_FRAME_BYTES}-byte limit")
    return str(len(body)).encode("ascii") + b"\n" + body


def write_frame(f, obj: dict) -> None:
    """Write one frame to a binary file and flush."""
    f.write(encode_frame(obj))
    f.flush()


def protocol_fds() -> tuple[int, int]:
    spec = os.environ.get("SWADIFF_PROTOCOL_FDS", "3,4")
    try:
        rfd, wfd = (int(x) for x in spec.split(","))
    except ValueError:
        raise SystemExit(f"swadiff adapter: SWADIFF_PROTOCOL_FDS must be 'READ,WRITE' fds, got {spec!r}") from None
    return rfd, wfd


# --------------------------------------------------------------------------
# the adapter


def startup_failure(adapter: str, message: str, status: int = 3):
    """An adapter that cannot start (a library missing, no GPU): say why on stderr, exit non-zero."""
    sys.stderr.write(f"swadiff adapter {adapter}: cannot start: {message}\n")
    sys.stderr.flush()
    raise SystemExit(status)


def describe_exception(e: BaseException) -> str:
    """'Type: message (at file:line in function: source)' from the innermost traceback frame."""
    text = f"{type(e).__name__}: {e}".rstrip(": ") if str(e) else type(e).__name__
    tb = traceback.extract_tb(e.__traceback__)
    if tb:
        fr = tb[-1]
        where = f"{os.path.basename(fr.filename)}:{fr.lineno} in {fr.name}"
        if fr.line:
            where += f": {fr.line.strip()}"
        text += f" (at {where})"
    return text


class Adapter:
    def __init__(self, name: str, backends: Iterable[Backend], run_fn: Callable):
        self.name = name
        self.backends = {b.name: b for b in backends}
        if not self.backends:
            raise ValueError("an adapter needs at least one backend")
        self.run_fn = run_fn

    # -- messages

    def hello(self) -> dict:
        return {"type": "hello", "protocol": PROTOCOL_VERSION, "adapter": self.name,
                "backends": [b.hello() for b in self.backends.values()]}

    def handle_run(self, msg: dict) -> dict:
        """One run request -> exactly one reply, carrying the request's id; never raises
        (except SystemExit/KeyboardInterrupt)."""
        try:
            reply = self._run(msg)
        except Unsupported as e:
            reply = {"type": "unsupported", "reason": e.reason or "unsupported"}
        except Exception as e:  # noqa: BLE001 - any failure is an error result, and we keep serving
            sys.stderr.write(f"swadiff adapter {self.name}: run {msg.get('id')!r} backend "
                             f"{msg.get('backend')!r} failed:\n{traceback.format_exc()}")
            sys.stderr.flush()
            reply = {"type": "error", "message": describe_exception(e)}
        if isinstance(msg.get("id"), str):
            reply["id"] = msg["id"]
        return reply

    def _run(self, msg: dict) -> dict:
        backend = self.backends.get(msg.get("backend"))
        if backend is None:
            raise ValueError(f"unknown backend {msg.get('backend')!r}; this adapter has {sorted(self.backends)}")
        problem = msg.get("problem")
        directory = msg.get("dir")
        if not isinstance(problem, dict) or not isinstance(directory, str):
            raise ValueError("run request needs 'problem' (object) and 'dir' (string)")
        problem = normalize_problem(problem)
        kind = problem_kind(problem)
        if kind not in backend.kinds:
            raise Unsupported(f"backend {backend.name} runs {'/'.join(backend.kinds)} problems, this one is {kind}")
        if chunk_size(problem) > 0 and not backend.chunked:
            raise Unsupported(f"backend {backend.name} cannot express chunked local attention "
                              f"(attention_chunk_size {chunk_size(problem)}); refused rather than run unchunked")
        tensors = Tensors(directory, problem)
        res = self.run_fn(backend.name, problem, tensors)
        if isinstance(res, Result):
            pass
        elif isinstance(res, dict):
            res = Result(**res)
        elif isinstance(res, (tuple, list)):
            if not 1 <= len(res) <= 3:
                raise TypeError(f"run_fn returned a {len(res)}-tuple; expected out, (out, lse) or (out, lse, kernel_ms)")
            res = Result(*res)
        else:
            res = Result(res)
        return self._write_result(backend, problem, directory, res)

    def _write_result(self, backend: Backend, problem: dict, directory: str, res: Result) -> dict:
        dtype = problem["dtype"]
        total_qo, hq, d = int(problem["total_qo"]), int(problem["num_qo_heads"]), int(problem["head_dim"])
        out = _as_numpy_float(res.out)
        if out.shape != (total_qo, hq, d):
            raise ValueError(f"out has shape {list(out.shape)}, expected [total_qo, num_qo_heads, head_dim] = "
                             f"{[total_qo, hq, d]}")
        save_case_npy(os.path.join(directory, "out.npy"), out, dtype)
        reply: dict[str, Any] = {"type": "result", "out": "out.npy", "lse": None}
        lse_base = res.lse_base or backend.lse_base
        if lse_base not in LSE_BASES:
            raise ValueError(f"lse_base must be one of {LSE_BASES}, got {lse_base!r}")
        if problem.get("return_lse") and lse_base != "none":
            if res.lse is None:
                raise ValueError(f"problem asks for the LSE and backend {backend.name} declares lse_base "
                                 f"{lse_base!r}, but run_fn returned none")
            lse = _as_numpy_float(res.lse)
            if lse.shape != (total_qo, hq):
                raise ValueError(f"lse has shape {list(lse.shape)}, expected [total_qo, num_qo_heads] = {[total_qo, hq]}")
            lse = lse.astype("<f8" if lse.dtype == np.float64 else "<f4")
            save_npy(os.path.join(directory, "lse.npy"), lse)
            reply["lse"] = "lse.npy"
        reply["lse_base"] = lse_base
        if res.kernel_ms is not None:
            ms = float(res.kernel_ms)
            if math.isfinite(ms):
                reply["kernel_ms"] = ms
        return reply

    # -- the loop

    def serve(self) -> int:
        """Handshake, then serve requests until bye or EOF (returns 0); protocol garbage -> 2."""
        if len(sys.argv) > 1 and sys.argv[1] in ("--describe", "--hello"):
            print(json.dumps(self.hello(), indent=2))
            return 0
        rfd, wfd = protocol_fds()
        try:
            os.fstat(rfd)
            os.fstat(wfd)
        except OSError:
            sys.stderr.write(f"swadiff adapter {self.name}: fds {rfd},{wfd} are not open. This program speaks "
                             "the swadiff adapter protocol (docs/adapter-protocol.md) and is started by swadiff; "
                             "run it with --describe to see its backends.\n")
            return 2
        # our pipe ends must not leak into processes a library starts (compile workers, ...)
        for fd in (rfd, wfd):
            try:
                os.set_inheritable(fd, False)
            except OSError:
                pass
        rf = os.fdopen(rfd, "rb", buffering=1 << 16, closefd=False)
        wf = os.fdopen(wfd, "wb", buffering=0, closefd=False)
        try:
            return self._loop(rf, wf)
        except ProtocolError as e:
            sys.stderr.write(f"swadiff adapter {self.name}: protocol error on fd {rfd}: {e}\n")
            sys.stderr.flush()
            return 2
        except BrokenPipeError:
            sys.stderr.write(f"swadiff adapter {self.name}: the harness closed the reply pipe (fd {wfd})\n")
            return 1

    def _loop(self, rf, wf) -> int:
        msg = read_frame(rf)
        if msg is None:
            return 0
        if msg.get("type") != "hello":
            raise ProtocolError(f"expected a hello message first, got {_brief(msg)}")
        if msg.get("protocol") != PROTOCOL_VERSION:
            raise ProtocolError(f"harness speaks protocol {msg.get('protocol')!r}, this adapter speaks "
                                f"{PROTOCOL_VERSION}")
        write_frame(wf, self.hello())
        while True:
            msg = read_frame(rf)
            if msg is None or msg.get("type") == "bye":
                return 0
            if msg.get("type") != "run":
                raise ProtocolError(f"expected a run or bye message, got {_brief(msg)}")
            reply = self.handle_run(msg)
            sys.stdout.flush()
            write_frame(wf, reply)


def _brief(msg: dict) -> str:
    s = json.dumps(msg)
    return s if len(s) <= 120 else s[:117] + "..."


def serve(name: str, backends: Iterable[Backend], run_fn: Callable) -> None:
    """Run an adapter to the end and exit the process with its status."""
    sys.exit(Adapter(name, backends, run_fn).serve())
