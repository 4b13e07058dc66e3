#!/usr/bin/env python3
# ==========================================================================================
# NOT RUN HERE: written against the documented API of vLLM 0.8-0.11
# (vllm.vllm_flash_attn.flash_attn_varlen_func, called the way
# vllm/v1/attention/backends/flash_attn.py calls it); nobody has run it yet.  vLLM is not
# installed on the machines this was written on (nor on the H200 used for the committed
# evidence); expect to fix small things the first time it runs.
# ==========================================================================================
"""vllm_window — swadiff adapter: vLLM's sliding-window convention through vLLM's own
FlashAttention kernels (vllm.vllm_flash_attn), on a vLLM-style paged cache.

What is under test is the MAPPING as vLLM does it, end to end:
  1. the model config's window: sliding_window W = L + 1 (vLLM / Hugging Face count the
     keys a query sees, itself included); L == -1 -> W = None; L = 0 -> W = 1 (never 0,
     which some libraries read as "disabled");
  2. vLLM's FlashAttentionImpl turning W into flash-attn's window_size:
     W None -> (-1, -1); decoder (causal) -> (W - 1, 0); encoder-only (non-causal)
     -> (W - 1, W - 1);
  3. flash_attn_varlen_func(q, k_cache, v_cache, cu_seqlens_q=qo_indptr,
     seqused_k=context_lens, max_seqlen_q, max_seqlen_k, block_table=block_tables,
     causal=, window_size=, softcap=, softmax_scale=, return_softmax_lse=True, fa_version=).
The kernel is vLLM's build of FlashAttention (not the torch SDPA path): backends "fa2" and
"fa3" (fa_version 2 / 3; 3 is Hopper-only and Unsupported where vLLM says it is unavailable).

Window mapping: L -> W = L + 1 -> window_size (W - 1, 0) (causal) / (W - 1, W - 1)
                (non-causal, only when window_right == window_left: vLLM has one W for both
                sides; any other non-causal window is Unsupported).
Alignment:      bottom-right (flash-attn varlen with seqused_k: query i of a request sits
                at seqused_k - qo_len + i).
Off value:      window_left == -1 -> sliding_window None -> window_size (-1, -1).
                soft_cap 0 -> softcap 0.0 (vLLM's logits_soft_cap None).
Paged KV:       vLLM's layout [num_blocks, block_size, Hkv, D] = NHD (an HND pool is permuted
                into an NHD copy); block_tables with unused slots (-1) passed as 0, as vLLM
                pads them; block_size % 16 == 0 (vLLM's FlashAttention backend), else Unsupported.
LSE base:       e (softmax_lse, natural log).
dtypes:         fp16 / bf16; fp32 is Unsupported.
kernel_ms:      CUDA events around a second call.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import swadiff_adapter as sa  # noqa: E402

ADAPTER = "vllm_window"
try:
    import torch
except ImportError as e:
    sa.startup_failure(ADAPTER, f"PyTorch with CUDA is needed ({e})")
try:
    import vllm.vllm_flash_attn as vfa
    from vllm.vllm_flash_attn import flash_attn_varlen_func
except ImportError as e:
    sa.startup_failure(ADAPTER, f"vLLM (with its vllm_flash_attn kernels) is not installed ({e}); "
                                "install vllm >= 0.8 matching this PyTorch and CUDA")
if not torch.cuda.is_available():
    sa.startup_failure(ADAPTER, "no CUDA device")

DEV = "cuda"
BLOCK_MULTIPLE = 16
FA_VERSIONS = {"fa2": 2, "fa3": 3}


def vllm_sliding_window(window_left: int):
    """The model-config value: W = L + 1 keys (None: no window)."""
    return None if window_left < 0 else window_left + 1


def vllm_window_size(W, causal: bool):
    """vLLM's FlashAttentionImpl: sliding_window -> flash-attn window_size."""
    if W is None:
        return (-1, -1)
    return (W - 1, 0) if causal else (W - 1, W - 1)


def run(backend, problem, tensors):
    dtype = problem["dtype"]
    if dtype == "fp32":
        raise sa.Unsupported("vLLM's FlashAttention runs fp16/bf16 only")
    ps, layout = int(problem["page_size"]), problem["layout"]
    if ps % BLOCK_MULTIPLE:
        raise sa.Unsupported(f"vLLM's FlashAttention backend needs block_size % {BLOCK_MULTIPLE} == 0, "
                             f"page_size is {ps}")
    ver = FA_VERSIONS[backend]
    if hasattr(vfa, "is_fa_version_supported") and not vfa.is_fa_version_supported(ver):
        why = vfa.fa_version_unsupported_reason(ver) if hasattr(vfa, "fa_version_unsupported_reason") else ""
        raise sa.Unsupported(f"vLLM: FlashAttention {ver} is not available here: {why}")
    causal, L, R = bool(problem["causal"]), int(problem["window_left"]), int(problem["window_right"])
    if not causal and R != L:
        raise sa.Unsupported("vLLM has one sliding_window W for both sides when not causal (encoder-only): "
                             f"window_left {L} and window_right {R} differ")
    W = vllm_sliding_window(L)
    window = vllm_window_size(W, causal)
    cap = float(problem.get("soft_cap") or 0.0)

    def pool(name):
        c = sa.to_torch(tensors.raw(name), dtype, DEV)
        return c if layout == "NHD" else c.permute(0, 2, 1, 3).contiguous()

    q = sa.to_torch(tensors.raw("q"), dtype, DEV)
    k_cache, v_cache = pool("k_cache"), pool("v_cache")
    kw = dict(
        max_seqlen_q=max(int(n) for n in problem["qo_len"]),
        cu_seqlens_q=sa.to_torch(tensors.raw("qo_indptr"), None, DEV),
        max_seqlen_k=max(int(n) for n in problem["kv_len"]),
        seqused_k=sa.to_torch(tensors.raw("context_lens"), None, DEV),
        softmax_scale=float(problem["sm_scale"]),
        causal=causal,
        window_size=list(window),
        block_table=sa.to_torch(np.maximum(tensors.raw("block_tables"), 0), None, DEV),
        softcap=cap,
        return_softmax_lse=True,
        fa_version=ver,
    )
    try:
        out, lse = flash_attn_varlen_func(q, k_cache, v_cache, **kw)
    except (RuntimeError, ValueError, AssertionError) as e:
        text = str(e).lower()
        if any(w in text for w in ("not supported", "unsupported", "only support", "must be", "headdim")):
            raise sa.Unsupported(f"vLLM FlashAttention {ver} refuses: {type(e).__name__}: {e}"[:2000]) from None
        raise
    total_qo, hq = int(problem["total_qo"]), int(problem["num_qo_heads"])
    if tuple(lse.shape) == (hq, total_qo):
        lse = lse.transpose(0, 1)
    torch.cuda.synchronize()
    kernel_ms = sa.cuda_ms(lambda: flash_attn_varlen_func(q, k_cache, v_cache, **kw)) if sa.timing_wanted() else None
    return sa.Result(out, lse, kernel_ms=kernel_ms)


if __name__ == "__main__":
    sa.serve(ADAPTER, [
        sa.Backend("fa2", "vLLM sliding_window W = L + 1 -> window_size (W-1, 0) -> vllm_flash_attn "
                   "flash_attn_varlen_func (FA2), paged block_table", lse_base="e", kinds=("prefill", "decode")),
        sa.Backend("fa3", "vLLM sliding_window W = L + 1 -> window_size (W-1, 0) -> vllm_flash_attn "
                   "flash_attn_varlen_func (FA3, Hopper), paged block_table", lse_base="e",
                   kinds=("prefill", "decode")),
    ], run)
