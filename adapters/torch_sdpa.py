#!/usr/bin/env python3
"""torch_sdpa — swadiff adapter: torch.nn.functional.scaled_dot_product_attention (PyTorch >= 2.5).

Each swadiff backend forces ONE SDPA backend with torch.nn.attention.sdpa_kernel:
"math" (SDPBackend.MATH), "efficient" (EFFICIENT_ATTENTION), "cudnn" (CUDNN_ATTENTION),
"flash" (FLASH_ATTENTION).  A backend that refuses the call (an explicit mask for
flash, fp32 for flash/cudnn, a head_dim, ...) is reported Unsupported with torch's own
reasons (the warnings it emits before "No available kernel").

Window mapping: none of SDPA's own - the spec's mask is built per request as a
                boolean attn_mask [qo_len, kv_len] (True = attend): causal k <= p,
                window_left L: k >= p - L, window_right R: k <= p + R.
Alignment:      bottom-right (p = kv_len - qo_len + i) in the mask we build.  SDPA's
                is_causal is top-left, so it is used only where the two coincide: a
                square request (qo_len == kv_len) whose mask is exactly the causal triangle.
Off value:      window_left == -1 / window_right == -1 add no bound; a request whose mask
                is all True passes attn_mask=None (no mask), a square causal-only one
                is_causal=True, anything else the explicit boolean mask.
GQA:            K/V heads repeated with repeat_interleave (qo head h reads kv head h // G),
                so every SDPA backend sees plain MHA.
Soft cap:       not in SDPA: soft_cap != 0 is Unsupported.
LSE base:       none (SDPA returns no LSE).
Paged KV:       not used; SDPA reads the contiguous k.npy / v.npy.
kernel_ms:      CUDA events around a second launch of the whole batch's SDPA calls
                (SWADIFF_ADAPTER_TIMING=0 skips it).  Without CUDA only "math" runs, on the CPU.
"""
import os
import re
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import swadiff_adapter as sa  # noqa: E402

ADAPTER = "torch_sdpa"
try:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
except ImportError as e:  # a clean startup failure, quoted from adapter.log by the harness
    sa.startup_failure(ADAPTER, f"PyTorch >= 2.5 with torch.nn.attention.sdpa_kernel is needed ({e})")

SDPA_BACKENDS = {
    "math": SDPBackend.MATH,
    "efficient": SDPBackend.EFFICIENT_ATTENTION,
    "cudnn": SDPBackend.CUDNN_ATTENTION,
    "flash": SDPBackend.FLASH_ATTENTION,
}
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def request_calls(problem, tensors):
    """Per request: (r, row slice, q [1,Hq,nq,D], k [1,Hq,nk,D], v, attn_mask or None, is_causal, how)."""
    dtype = problem["dtype"]
    q = sa.to_torch(tensors.raw("q"), dtype, DEVICE)
    k = sa.to_torch(tensors.raw("k"), dtype, DEVICE)
    v = sa.to_torch(tensors.raw("v"), dtype, DEVICE)
    g = sa.group_size(problem)
    calls = []
    q0 = k0 = 0
    for r, (nq, nk) in enumerate(zip(problem["qo_len"], problem["kv_len"])):
        if nq > 0:
            mask = sa.visible_mask(problem, r)
            if mask.all():
                attn_mask, is_causal, how = None, False, "no mask"
            elif nq == nk and (mask == np.tril(np.ones((nq, nk), dtype=bool))).all():
                attn_mask, is_causal, how = None, True, "is_causal"
            else:
                attn_mask, is_causal, how = torch.from_numpy(mask).to(DEVICE), False, "explicit bool mask"
            qr = q[q0:q0 + nq].transpose(0, 1).unsqueeze(0).contiguous()
            kr = k[k0:k0 + nk].transpose(0, 1).unsqueeze(0).repeat_interleave(g, dim=1).contiguous()
            vr = v[k0:k0 + nk].transpose(0, 1).unsqueeze(0).repeat_interleave(g, dim=1).contiguous()
            calls.append((r, slice(q0, q0 + nq), qr, kr, vr, attn_mask, is_causal, how))
        q0 += nq
        k0 += nk
    return q, calls


def torch_reasons(caught):
    """torch's own reasons from the warnings it emitted, without the C++ locations and headers."""
    reasons = []
    for w in caught:
        m = re.sub(r"\s*\(Triggered internally at [^)]*\)\.?", "", str(w.message)).strip()
        if not m or m.endswith("not used because:") or "has been runtime disabled" in m:
            continue
        if m not in reasons:
            reasons.append(m)
    return reasons


def run(backend, problem, tensors):
    if float(problem.get("soft_cap") or 0) != 0:
        raise sa.Unsupported("scaled_dot_product_attention has no logit soft cap")
    if DEVICE == "cpu" and backend != "math":
        raise sa.Unsupported(f"no CUDA device: SDPA backend {backend} needs one (math runs on the CPU)")
    q, calls = request_calls(problem, tensors)
    out = torch.zeros_like(q)
    scale = float(problem["sm_scale"])

    def launch(write=True):
        for r, rows, qr, kr, vr, attn_mask, is_causal, how in calls:
            try:
                o = F.scaled_dot_product_attention(qr, kr, vr, attn_mask=attn_mask, is_causal=is_causal,
                                                   scale=scale)
            except RuntimeError as e:
                if "No available kernel" not in str(e):
                    raise
                why = "; ".join(torch_reasons(caught)) or ("torch gave no reason this time (some of its "
                                                          "reasons are warned once per process)")
                raise sa.Unsupported(f"SDPA backend {backend} refuses request {r} (qo_len {qr.shape[2]}, "
                                     f"kv_len {kr.shape[2]}, {how}): {why}"[:2000]) from None
            if write:
                out[rows] = o[0].transpose(0, 1)

    with sdpa_kernel(SDPA_BACKENDS[backend]), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        launch()
        kernel_ms = None
        if DEVICE == "cuda":
            torch.cuda.synchronize()
            if sa.timing_wanted():
                kernel_ms = sa.cuda_ms(lambda: launch(write=False))
    return sa.Result(out, None, kernel_ms=kernel_ms)


if __name__ == "__main__":
    sa.serve(ADAPTER, [
        sa.Backend("math", "torch SDPA, math backend, explicit bool mask per request", lse_base="none"),
        sa.Backend("efficient", "torch SDPA, memory-efficient backend, explicit bool mask per request",
                   lse_base="none"),
        sa.Backend("cudnn", "torch SDPA, cuDNN backend, explicit bool mask per request", lse_base="none"),
        sa.Backend("flash", "torch SDPA, flash backend (no explicit mask: windows are Unsupported)",
                   lse_base="none"),
    ], run)
