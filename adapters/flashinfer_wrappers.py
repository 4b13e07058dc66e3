#!/usr/bin/env python3
# ==========================================================================================
# NOT RUN HERE: written against the documented API of FlashInfer 0.2.x (flashinfer-python,
# BatchPrefillWithPagedKVCacheWrapper / BatchDecodeWithPagedKVCacheWrapper plan()/run());
# nobody has run it yet.  FlashInfer is not installed on the machines this was written
# on (nor on the H200 used for the committed evidence); expect to fix small things the
# first time it runs.
# ==========================================================================================
"""flashinfer_wrappers — swadiff adapter: FlashInfer's batch wrappers over the paged cache.

Backends:
  "prefill"     BatchPrefillWithPagedKVCacheWrapper: plan(qo_indptr, kv_indptr, kv_indices,
                kv_last_page_len, Hq, Hkv, D, page_size, causal=, sm_scale=, window_left=L,
                logits_soft_cap=, q_data_type=, kv_data_type=), run(q, (k_cache, v_cache),
                return_lse=True).  Any problem.
  "decode"      BatchDecodeWithPagedKVCacheWrapper (CUDA cores): plan(kv_indptr, kv_indices,
                kv_last_page_len, Hq, Hkv, D, page_size, window_left=L, logits_soft_cap=, ...),
                run(q [B, Hq, D], (k_cache, v_cache), return_lse=True).  Decode problems only.
  "decode_tc"   the same with use_tensor_cores=True (the prefill kernels behind the decode API).
The caches are passed as they are on disk: kv_layout = the problem's layout ("NHD"/"HND"),
the page table is FlashInfer's own kv_indptr/kv_indices/kv_last_page_len.

Window mapping: window_left = L as it is (FlashInfer's L IS the spec's L: keys [p - L, p]).
                window_right has no FlashInfer counterpart: a non-causal problem with
                window_right >= 0 is Unsupported (causal problems ignore it, causal bounds it).
Alignment:      bottom-right (FlashInfer places query row i at kv_len - qo_len + i).
Off value:      window_left == -1 is passed as -1, FlashInfer's own "no window".
                soft_cap 0 is passed as logits_soft_cap=None (off); c > 0 as c
                (FlashInfer: c * tanh(q.k * sm_scale / c), the spec's order).
Decode:         one row at p = kv_len - 1: causal and window_right change nothing.
LSE base:       2 (FlashInfer's LSE is log2-sum-exp2 of the scaled logits).
dtypes:         fp16 / bf16; fp32 is Unsupported (FlashInfer has no fp32 kernels).
kernel_ms:      CUDA events around a second run() (the plan is not re-done).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import swadiff_adapter as sa  # noqa: E402

ADAPTER = "flashinfer_wrappers"
try:
    import torch
except ImportError as e:
    sa.startup_failure(ADAPTER, f"PyTorch with CUDA is needed ({e})")
try:
    import flashinfer
except ImportError as e:
    sa.startup_failure(ADAPTER, f"FlashInfer is not installed ({e}); install flashinfer-python (>= 0.2) "
                                "matching this PyTorch and CUDA")
if not torch.cuda.is_available():
    sa.startup_failure(ADAPTER, "no CUDA device")

DEV = "cuda"
WORKSPACE_BYTES = 256 * 1024 * 1024
_workspace = None
_wrappers = {}


def wrapper(backend, layout):
    global _workspace
    if _workspace is None:
        _workspace = torch.zeros(WORKSPACE_BYTES, dtype=torch.uint8, device=DEV)
    key = (backend, layout)
    if key not in _wrappers:
        if backend == "prefill":
            _wrappers[key] = flashinfer.BatchPrefillWithPagedKVCacheWrapper(_workspace, kv_layout=layout)
        else:
            _wrappers[key] = flashinfer.BatchDecodeWithPagedKVCacheWrapper(
                _workspace, kv_layout=layout, use_tensor_cores=(backend == "decode_tc"))
    return _wrappers[key]


def refusal(e):
    text = str(e).lower()
    return any(w in text for w in ("not supported", "unsupported", "not implemented", "invalid head_dim",
                                   "head_dim"))


def run(backend, problem, tensors):
    dtype = problem["dtype"]
    if dtype == "fp32":
        raise sa.Unsupported("FlashInfer has no fp32 attention kernels (fp16/bf16 only)")
    causal, L, R = bool(problem["causal"]), int(problem["window_left"]), int(problem["window_right"])
    decode = sa.problem_kind(problem) == "decode"
    if not causal and R >= 0 and not decode:
        raise sa.Unsupported("FlashInfer has no right window (window_right >= 0 without causal)")
    cap = float(problem.get("soft_cap") or 0.0)
    tdt = sa.torch_dtype(dtype)
    hq, hkv, d, ps = (int(problem[n]) for n in ("num_qo_heads", "num_kv_heads", "head_dim", "page_size"))
    layout = problem["layout"]
    q = sa.to_torch(tensors.raw("q"), dtype, DEV)
    kv = (sa.to_torch(tensors.raw("k_cache"), dtype, DEV), sa.to_torch(tensors.raw("v_cache"), dtype, DEV))
    kv_indptr = sa.to_torch(tensors.raw("kv_indptr"), None, DEV)
    kv_indices = sa.to_torch(tensors.raw("kv_indices"), None, DEV)
    last = sa.to_torch(tensors.raw("kv_last_page_len"), None, DEV)
    w = wrapper(backend, layout)
    common = dict(window_left=L, logits_soft_cap=(cap if cap > 0 else None), sm_scale=float(problem["sm_scale"]),
                  q_data_type=tdt, kv_data_type=tdt)
    try:
        if backend == "prefill":
            qo_indptr = sa.to_torch(tensors.raw("qo_indptr"), None, DEV)
            w.plan(qo_indptr, kv_indptr, kv_indices, last, hq, hkv, d, ps, causal=causal, **common)
        else:
            w.plan(kv_indptr, kv_indices, last, hq, hkv, d, ps, pos_encoding_mode="NONE", **common)
        out, lse = w.run(q, kv, return_lse=True)
    except (RuntimeError, ValueError, NotImplementedError) as e:
        if refusal(e):
            raise sa.Unsupported(f"FlashInfer refuses: {type(e).__name__}: {e}"[:2000]) from None
        raise
    torch.cuda.synchronize()
    kernel_ms = sa.cuda_ms(lambda: w.run(q, kv, return_lse=True)) if sa.timing_wanted() else None
    return sa.Result(out, lse, kernel_ms=kernel_ms, lse_base="2")


if __name__ == "__main__":
    sa.serve(ADAPTER, [
        sa.Backend("prefill", "FlashInfer BatchPrefillWithPagedKVCacheWrapper, window_left = L, paged NHD/HND",
                   lse_base="2", kinds=("prefill", "decode")),
        sa.Backend("decode", "FlashInfer BatchDecodeWithPagedKVCacheWrapper (CUDA cores), window_left = L",
                   lse_base="2", kinds=("decode",)),
        sa.Backend("decode_tc", "FlashInfer BatchDecodeWithPagedKVCacheWrapper(use_tensor_cores=True), "
                   "window_left = L", lse_base="2", kinds=("decode",)),
    ], run)
