#!/usr/bin/env python3
"""flashinfer_wrappers — swadiff adapter: FlashInfer's batch attention wrappers.

Written against flashinfer-python 0.7.2.post1 (with apache-tvm-ffi 0.1.15.post2)
and run with it on an H200 (docs/real-libraries.md; the run's files:
real-libraries-2026-12-02 in docs/evidence.md).
Another 0.7 release is accepted; another minor version stops the adapter at
start with a message saying so (SWADIFF_FLASHINFER_ANY_VERSION=1 tries anyway).

Backends, each with its FlashInfer backend chosen explicitly (never "auto"):
  paged_fa2    BatchPrefillWithPagedKVCacheWrapper(backend="fa2"): plan(qo_indptr,
               kv_indptr, kv_indices, kv_last_page_len, Hq, Hkv, D, page_size,
               causal=, sm_scale=, window_left=L, logits_soft_cap=, q/kv_data_type=),
               run(q, (k_cache, v_cache), return_lse=True).  Prefill and decode cases.
  paged_fa3    the same with backend="fa3" (the sm90 kernels).
  ragged_fa2   BatchPrefillWithRaggedKVCacheWrapper(backend="fa2") over the contiguous
               k.npy / v.npy (kv_seq_indptr): plan(qo_indptr, kv_indptr, Hq, Hkv, D, ...),
               run(q, k, v, return_lse=True).
  ragged_fa3   the same with backend="fa3".
  decode       BatchDecodeWithPagedKVCacheWrapper(use_tensor_cores=False, backend="fa2"):
               the CUDA-core decode kernel.  Decode cases only.
  decode_tc    BatchDecodeWithPagedKVCacheWrapper(use_tensor_cores=True, backend="fa2"):
               the prefill kernels behind the decode API.  Decode cases only.
  paged_fa2_window_at_forward
               seed 000, the way sglang called FlashInfer before its fix: the paged
               fa2 wrapper planned WITHOUT window_left (so FlashInfer picks the module
               compiled without the sliding-window mask), then the window passed to
               the deprecated per-call entry point forward_return_lse(...,
               window_left=L), which overwrites the planned window before it calls
               run().  Expected to be wrong; paged_fa2 is the correct call beside it.

Window mapping: window_left = L as it is (FlashInfer's L is the spec's L: keys [p-L, p]).
                FlashInfer has no right bound: a non-causal prefill problem with
                window_right R >= 0 is refused ("FlashInfer has no right window");
                non-causal with R = -1 (a left window only, or none) runs.  In a decode
                problem the one row sits at p = kv_len - 1, so R changes nothing and
                the problem runs.  attention_chunk_size is refused (no such mask).
Alignment:      bottom-right: FlashInfer places query row i at kv_len - qo_len + i.
Off value:      window_left -1 is FlashInfer's own "no window"; soft cap 0 -> None.
Soft cap:       logits_soft_cap = c: c * tanh(s * sm_scale / c), the spec's order.
sm_scale:       passed as the problem gives it.
LSE base:       2 (run(..., lse_base="log2"), FlashInfer's default).
dtypes:         fp16 / bf16; fp32 is refused (FlashInfer has no fp32 attention).
kernel_ms:      CUDA events around a second run() (SWADIFF_ADAPTER_TIMING=0: none).

Kernels: FlashInfer compiles one module per (backend, dtype, head_dim, window on/off,
soft cap on/off) the first time a plan needs it (nvcc, ninja).  ci/flashinfer-aot.py
builds them ahead of time into FlashInfer's AOT folder, where they are loaded without
compiling.  A module that cannot be had (FLASHINFER_DISABLE_JIT=1 and not built, or a
compile that fails) is one error naming the module; the adapter remembers it and
answers the next case that needs the same module with the same message at once.

SWADIFF_FLASHINFER_PLAN_EXTRA='{"disable_split_kv": true}' (a JSON object) adds keyword
arguments to every plan() call: a way to localize a disagreement (split-KV on or off,
fixed_split_size) without editing the adapter.  A pinned split (fixed_split_size > 0 or
disable_split_kv true) is FlashInfer's documented batch-invariance control: with it the
backends whose plan() takes it (paged_fa2, ragged_fa2, decode_tc and the window-at-forward
pattern) declare themselves batch-invariant in the hello, so `--invariance batch,pages`
holds them bitwise (docs/invariance.md).

--probe-run-window prints, as JSON, what each backend does when run() is given a
window other than the planned one (plan with L, run(window_left=L') for a few pairs).

Tests: tests/adapters/test_real_library_mappings.py (the mapping and refusals, without
FlashInfer); the H200 run: real-libraries-2026-12-02 in docs/evidence.md.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import swadiff_adapter as sa  # noqa: E402

ADAPTER = "flashinfer_wrappers"
TESTED_VERSION = "0.7.2.post1"
WORKSPACE_BYTES = 256 * 1024 * 1024
DEV = "cuda"

# backend -> (wrapper kind, FlashInfer backend, kinds of cases)
BACKENDS = {
    "paged_fa2": ("paged", "fa2", ("prefill", "decode")),
    "paged_fa3": ("paged", "fa3", ("prefill", "decode")),
    "ragged_fa2": ("ragged", "fa2", ("prefill", "decode")),
    "ragged_fa3": ("ragged", "fa3", ("prefill", "decode")),
    "decode": ("decode", "fa2", ("decode",)),
    "decode_tc": ("decode_tc", "fa2", ("decode",)),
    "paged_fa2_window_at_forward": ("paged_forward", "fa2", ("prefill", "decode")),
}
FA3_HEAD_DIMS = (64, 128, 256)

DESCRIPTIONS = {
    "paged_fa2": "BatchPrefillWithPagedKVCacheWrapper(backend='fa2'), window_left = L at plan",
    "paged_fa3": "BatchPrefillWithPagedKVCacheWrapper(backend='fa3'), window_left = L at plan",
    "ragged_fa2": "BatchPrefillWithRaggedKVCacheWrapper(backend='fa2'), contiguous K/V, window_left = L at plan",
    "ragged_fa3": "BatchPrefillWithRaggedKVCacheWrapper(backend='fa3'), contiguous K/V, window_left = L at plan",
    "decode": "BatchDecodeWithPagedKVCacheWrapper(backend='fa2'), CUDA cores, window_left = L at plan",
    "decode_tc": "BatchDecodeWithPagedKVCacheWrapper(backend='fa2', use_tensor_cores=True), window_left = L",
    "paged_fa2_window_at_forward": "seed 000 (sglang before its fix): paged fa2 planned without window_left, "
                                   "the window given to forward_return_lse(window_left=L) (deprecated)",
}


def refusal_reason(problem, backend):
    """Why FlashInfer cannot express this problem through this backend, or None.
    Pure: needs neither torch nor FlashInfer (tests/adapters/test_real_library_mappings.py)."""
    kind = BACKENDS[backend][0]
    fi_backend = BACKENDS[backend][1]
    if problem["dtype"] not in ("fp16", "bf16"):
        return f"FlashInfer has no {problem['dtype']} attention kernels (fp16 and bf16 only)"
    if sa.chunk_size(problem) > 0:
        return "FlashInfer's wrappers have no chunked local attention mask (attention_chunk_size)"
    decode = sa.problem_kind(problem) == "decode"
    if not problem["causal"] and int(problem["window_right"]) >= 0 and not decode:
        return ("FlashInfer has no right window: window_right >= 0 without causal cannot be expressed "
                "(window_left bounds the left side only)")
    if fi_backend == "fa3" and int(problem["head_dim"]) not in FA3_HEAD_DIMS:
        return f"FlashInfer's fa3 (sm90) prefill has head_dim {'/'.join(map(str, FA3_HEAD_DIMS))} only"
    if kind in ("decode", "decode_tc") and not decode:
        return f"backend {backend} takes decode cases only"
    return None


def module_key(problem, backend):
    """(module kind, dtype, head_dim, sliding window, soft cap): which compiled FlashInfer
    module the plan needs (ci/flashinfer-aot.py builds the same keys)."""
    kind, fi_backend, _ = BACKENDS[backend]
    module_kind = "decode" if kind == "decode" else fi_backend
    # the window_at_forward pattern plans with window_left = -1: the module without the mask
    swa = int(problem["window_left"]) >= 0 and kind != "paged_forward"
    return (module_kind, problem["dtype"], int(problem["head_dim"]), swa, float(problem.get("soft_cap") or 0) > 0)


def plan_extra():
    """SWADIFF_FLASHINFER_PLAN_EXTRA as a dict (empty when unset); a bad value stops the adapter."""
    text = os.environ.get("SWADIFF_FLASHINFER_PLAN_EXTRA", "").strip()
    if not text:
        return {}
    try:
        extra = json.loads(text)
    except ValueError as e:
        extra = e
    if not isinstance(extra, dict):
        sa.startup_failure(ADAPTER, f"SWADIFF_FLASHINFER_PLAN_EXTRA must be a JSON object of plan() keyword "
                                    f"arguments, got {text!r}")
    return extra


# the backends whose plan() takes fa2's split controls (fixed_split_size, disable_split_kv):
# FlashInfer 0.7.2 raises on fixed_split_size for CUDA-core decode, and fa3 has no KV split
SPLIT_PINNABLE = ("paged_fa2", "ragged_fa2", "decode_tc", "paged_fa2_window_at_forward")


def split_pinned(extra):
    """Whether plan() keyword arguments pin fa2's KV split: a positive fixed_split_size or
    disable_split_kv.  FlashInfer documents either as giving batch-size invariant outputs
    (the fixed split makes merge_states reduce in an order the batch does not change)."""
    size = extra.get("fixed_split_size")
    return (isinstance(size, int) and not isinstance(size, bool) and size > 0) or extra.get("disable_split_kv") is True


def declares_batch_invariant(backend, extra):
    """What the adapter declares for a backend (swadiff holds a declared backend bitwise under
    --invariance batch,pages): what FlashInfer documents, a pinned split on a backend that takes
    it; nothing otherwise (measured, never a failure by itself)."""
    return backend in SPLIT_PINNABLE and split_pinned(extra)


def plan_kwargs(problem, torch_dtype, window_at_plan=True):
    """The keyword arguments every plan() gets: window, soft cap, scale, dtypes."""
    cap = float(problem.get("soft_cap") or 0.0)
    kw = dict(window_left=int(problem["window_left"]) if window_at_plan else -1,
              logits_soft_cap=(cap if cap > 0 else None), sm_scale=float(problem["sm_scale"]),
              q_data_type=torch_dtype, kv_data_type=torch_dtype)
    kw.update(plan_extra())
    return kw


def _library():
    """Imports torch and FlashInfer, or stops the adapter with one message naming the cause."""
    try:
        import torch
    except ImportError as e:
        sa.startup_failure(ADAPTER, f"PyTorch with CUDA is needed ({e})")
    try:
        import flashinfer
    except Exception as e:  # noqa: BLE001 - an ImportError, or a library that breaks while importing
        sa.startup_failure(ADAPTER, f"FlashInfer cannot be imported ({type(e).__name__}: {e}); install "
                                    f"flashinfer-python {TESTED_VERSION} and apache-tvm-ffi "
                                    "(ci/fetch-peer-wheels.sh pins them)")
    version = getattr(flashinfer, "__version__", "unknown")
    if not version.startswith("0.7.") and os.environ.get("SWADIFF_FLASHINFER_ANY_VERSION") != "1":
        sa.startup_failure(ADAPTER, f"flashinfer-python {version} is installed; this adapter is written for "
                                    f"the 0.7 API and was run with {TESTED_VERSION} (set "
                                    "SWADIFF_FLASHINFER_ANY_VERSION=1 to try it anyway)")
    if not torch.cuda.is_available():
        sa.startup_failure(ADAPTER, "no CUDA device (torch.cuda.is_available() is False)")
    return torch, flashinfer, version


class Runner:
    """The wrappers (one per backend and layout, over one workspace) and the modules that
    could not be had, remembered so that a missing module costs one compile attempt."""

    def __init__(self, torch, flashinfer):
        self.torch, self.fi = torch, flashinfer
        self.workspace = None
        self.wrappers = {}
        self.module_errors = {}

    def wrapper(self, backend, layout):
        key = (backend, layout)
        if key in self.wrappers:
            return self.wrappers[key]
        if self.workspace is None:
            self.workspace = self.torch.zeros(WORKSPACE_BYTES, dtype=self.torch.uint8, device=DEV)
        kind, fi_backend, _ = BACKENDS[backend]
        fi = self.fi
        if kind in ("paged", "paged_forward"):
            w = fi.BatchPrefillWithPagedKVCacheWrapper(self.workspace, kv_layout=layout, backend=fi_backend)
        elif kind == "ragged":
            w = fi.BatchPrefillWithRaggedKVCacheWrapper(self.workspace, kv_layout="NHD", backend=fi_backend)
        else:
            w = fi.BatchDecodeWithPagedKVCacheWrapper(self.workspace, kv_layout=layout,
                                                      use_tensor_cores=(kind == "decode_tc"), backend=fi_backend)
        self.wrappers[key] = w
        return w

    def plan_and_run(self, backend, problem, tensors, window_at_plan=True):
        """Plans and runs one problem; returns (out, lse, run_again) with LSE in base 2."""
        torch, sa_t = self.torch, sa.to_torch
        kind = BACKENDS[backend][0]
        dtype = problem["dtype"]
        tdt = sa.torch_dtype(dtype)
        hq, hkv, d, ps = (int(problem[n]) for n in ("num_qo_heads", "num_kv_heads", "head_dim", "page_size"))
        layout = problem["layout"]
        kw = plan_kwargs(problem, tdt, window_at_plan=window_at_plan and kind != "paged_forward")
        causal = bool(problem["causal"])
        q = sa_t(tensors.raw("q"), dtype, DEV)
        qo_indptr = sa_t(tensors.raw("qo_indptr"), None, DEV)
        w = self.wrapper(backend, "NHD" if kind == "ragged" else layout)
        if kind == "ragged":
            k, v = sa_t(tensors.raw("k"), dtype, DEV), sa_t(tensors.raw("v"), dtype, DEV)
            kv_seq_indptr = sa_t(tensors.raw("kv_seq_indptr"), None, DEV)
            w.plan(qo_indptr, kv_seq_indptr, hq, hkv, d, causal=causal, **kw)
            run = lambda: w.run(q, k, v, return_lse=True)  # noqa: E731
        else:
            kv = (sa_t(tensors.raw("k_cache"), dtype, DEV), sa_t(tensors.raw("v_cache"), dtype, DEV))
            kv_indptr = sa_t(tensors.raw("kv_indptr"), None, DEV)
            kv_indices = sa_t(tensors.raw("kv_indices"), None, DEV)
            last = sa_t(tensors.raw("kv_last_page_len"), None, DEV)
            if kind in ("decode", "decode_tc"):
                w.plan(kv_indptr, kv_indices, last, hq, hkv, d, ps, pos_encoding_mode="NONE", **kw)
                run = lambda: w.run(q, kv, return_lse=True)  # noqa: E731
            elif kind == "paged":
                w.plan(qo_indptr, kv_indptr, kv_indices, last, hq, hkv, d, ps, causal=causal, **kw)
                run = lambda: w.run(q, kv, return_lse=True)  # noqa: E731
            else:  # paged_forward: seed 000's pattern, the window only at the deprecated forward
                w.plan(qo_indptr, kv_indptr, kv_indices, last, hq, hkv, d, ps, causal=causal, **kw)
                L, cap = int(problem["window_left"]), float(problem.get("soft_cap") or 0.0)
                run = lambda: w.forward_return_lse(  # noqa: E731
                    q, kv, causal=causal, window_left=L, logits_soft_cap=(cap if cap > 0 else None),
                    sm_scale=float(problem["sm_scale"]))
        out, lse = run()
        torch.cuda.synchronize()
        return out, lse, run

    def run(self, backend, problem, tensors):
        why = refusal_reason(problem, backend)
        if why:
            raise sa.Unsupported(why)
        key = module_key(problem, backend)
        if key in self.module_errors:
            raise RuntimeError(self.module_errors[key])
        try:
            out, lse, again = self.plan_and_run(backend, problem, tensors)
        except Exception as e:  # noqa: BLE001 - sorted below: a refusal, a module, or the kernel's own error
            text = f"{type(e).__name__}: {e}"
            if type(e).__name__ == "MissingJITCacheError" or "ninja" in text.lower() or "nvcc" in text.lower():
                msg = (f"FlashInfer module {':'.join(map(str, key))} is not available: "
                       f"{text.splitlines()[0][:300]} (build it with ci/flashinfer-aot.py)")
                self.module_errors[key] = msg
                raise RuntimeError(msg) from None
            low = text.lower()
            if isinstance(e, (NotImplementedError, ValueError, RuntimeError)) and any(
                    w in low for w in ("not supported", "unsupported", "not implemented", "invalid head_dim")):
                raise sa.Unsupported(f"FlashInfer refuses: {text}"[:2000]) from None
            raise
        kernel_ms = sa.cuda_ms(again) if sa.timing_wanted() else None
        return sa.Result(out, lse, kernel_ms=kernel_ms, lse_base="2")


def probe_run_window(torch, flashinfer, version):
    """What run() does with a window other than the planned one, per wrapper: a small
    causal fp16 problem (2 requests, qo 37/1, kv 120/90, Hq 8, Hkv 2, D 128, page 16)."""
    runner = Runner(torch, flashinfer)
    g = torch.Generator(device="cpu").manual_seed(0)
    qo, kvl, hq, hkv, d, ps = [37, 1], [120, 90], 8, 2, 128, 16
    pages = [(n + ps - 1) // ps for n in kvl]
    num_pages = sum(pages)
    q = torch.randn(sum(qo), hq, d, generator=g).half().to(DEV)
    kc = torch.randn(num_pages, ps, hkv, d, generator=g).half().to(DEV)
    vc = torch.randn(num_pages, ps, hkv, d, generator=g).half().to(DEV)
    i32 = lambda x: torch.tensor(x, dtype=torch.int32, device=DEV)  # noqa: E731
    qo_indptr, kv_indptr = i32([0, qo[0], sum(qo)]), i32([0, pages[0], num_pages])
    kv_indices, last = i32(list(range(num_pages))), i32([n - (p - 1) * ps for n, p in zip(kvl, pages)])
    results = {"flashinfer": version, "problem": "causal fp16, qo_len [37, 1], kv_len [120, 90], Hq 8, Hkv 2, "
                                                 "head_dim 128, page 16, NHD"}
    for backend in ("paged_fa2", "paged_fa3"):
        rows = []
        for planned, asked in ((-1, 8), (8, -1), (8, 4), (8, 8)):
            w = runner.wrapper(backend, "NHD")
            row = {"plan_window_left": planned, "run_window_left": asked}
            try:
                w.plan(qo_indptr, kv_indptr, kv_indices, last, hq, hkv, d, ps, causal=True, window_left=planned,
                       q_data_type=torch.float16, kv_data_type=torch.float16)
                out = w.run(q, (kc, vc), window_left=asked)
                torch.cuda.synchronize()
                row["result"] = f"ran (out finite: {bool(torch.isfinite(out).all())})"
            except BaseException as e:  # noqa: BLE001 - the point is to record what is raised
                row["result"] = f"raised {type(e).__name__}: {str(e)[:300] or '(no message)'}"
            rows.append(row)
        results[backend] = rows
    return results


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--probe-run-window":
        torch, flashinfer, version = _library()
        print(json.dumps(probe_run_window(torch, flashinfer, version), indent=2))
        return
    describing = len(sys.argv) > 1 and sys.argv[1] in ("--describe", "--hello")
    version = TESTED_VERSION
    runner = None
    if not describing:
        torch, flashinfer, version = _library()
        runner = Runner(torch, flashinfer)
    extra = plan_extra()
    pinned = ", split pinned by SWADIFF_FLASHINFER_PLAN_EXTRA (declared batch-invariant)"
    backends = [sa.Backend(name, f"FlashInfer {version}: {DESCRIPTIONS[name]}"
                           + (pinned if declares_batch_invariant(name, extra) else ""),
                           lse_base="2", kinds=kinds, batch_invariant=declares_batch_invariant(name, extra))
                for name, (_, _, kinds) in BACKENDS.items()]
    sa.serve(ADAPTER, backends, lambda b, p, t: runner.run(b, p, t))


if __name__ == "__main__":
    main()
