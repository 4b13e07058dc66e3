#!/usr/bin/env python3
# ==========================================================================================
# NOT RUN HERE: written against the documented API of flash-attn 2.6-2.8
# (flash_attn.flash_attn_with_kvcache, Dao-AILab/flash-attention); nobody has run it yet.
# flash-attn is not installed on the machines this was written on (nor on the H200 used for
# the committed evidence); expect to fix small things the first time it runs.
# ==========================================================================================
"""flash_attn_kvcache — swadiff adapter: FlashAttention-2's flash_attn_with_kvcache.

Backends:
  "paged"       flash_attn_with_kvcache(q, k_cache, v_cache, cache_seqlens=context_lens,
                block_table=block_tables, ...) on the paged pool.  flash-attn's paged KV needs
                page_block_size % 256 == 0: other page sizes are Unsupported.  The pool must
                be [num_blocks, page_block_size, Hkv, D] (NHD); an HND pool is permuted into
                an NHD copy first (the page table is unchanged).  Unused block_tables slots
                (-1) are passed as 0, as vLLM pads them; flash-attn reads only the blocks
                below cache_seqlens.
  "contiguous"  the same call on a [B, max_kv_len, Hkv, D] cache rebuilt from the paged pool
                with gather_paged (any page size), cache_seqlens = kv_len.
flash_attn_with_kvcache takes q as [batch, seqlen_q, H, D] with ONE seqlen_q: requests are
grouped by qo_len and each group is one call.

Window mapping: window_size=(L, R) with (-1) for an unbounded side: flash-attn's
                (left, right) IS the spec's (L, R).  With causal=True, right is passed as 0.
Alignment:      bottom-right (flash-attn >= 2.1: query i sits at seqlen_k - seqlen_q + i for
                causal and for the local window).
Off value:      window_left == -1 -> window_size[0] = -1, flash-attn's own "infinite";
                no window at all -> (-1, -1).  soft_cap 0 -> softcap=0.0 (off).
Soft cap:       softcap = c (flash-attn: c * tanh(q.k * softmax_scale / c)).
LSE base:       e (softmax_lse, [batch, H, seqlen_q], natural log).
dtypes:         fp16 / bf16; fp32 is Unsupported.
kernel_ms:      CUDA events around a second launch of every group's call.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import swadiff_adapter as sa  # noqa: E402

ADAPTER = "flash_attn_kvcache"
try:
    import torch
except ImportError as e:
    sa.startup_failure(ADAPTER, f"PyTorch with CUDA is needed ({e})")
try:
    from flash_attn import flash_attn_with_kvcache
except ImportError as e:
    sa.startup_failure(ADAPTER, f"flash-attn is not installed ({e}); install flash-attn >= 2.6 built for this "
                                "PyTorch and CUDA")
if not torch.cuda.is_available():
    sa.startup_failure(ADAPTER, "no CUDA device")

DEV = "cuda"
PAGE_MULTIPLE = 256


def fa_window(problem):
    causal, L, R = bool(problem["causal"]), int(problem["window_left"]), int(problem["window_right"])
    return causal, (L if L >= 0 else -1, 0 if causal else (R if R >= 0 else -1))


def refusal(e):
    text = str(e).lower()
    return any(w in text for w in ("only support", "not supported", "unsupported", "must be divisible",
                                   "must have shape", "headdim"))


def run(backend, problem, tensors):
    dtype = problem["dtype"]
    if dtype == "fp32":
        raise sa.Unsupported("flash-attn runs fp16/bf16 only")
    ps, layout = int(problem["page_size"]), problem["layout"]
    if backend == "paged" and ps % PAGE_MULTIPLE:
        raise sa.Unsupported(f"flash-attn's paged KV needs page_block_size % {PAGE_MULTIPLE} == 0, page_size is {ps}")
    causal, window = fa_window(problem)
    cap = float(problem.get("soft_cap") or 0.0)
    scale = float(problem["sm_scale"])
    q_all = sa.to_torch(tensors.raw("q"), dtype, DEV)
    qo_len = [int(n) for n in problem["qo_len"]]
    kv_len = [int(n) for n in problem["kv_len"]]
    q_off = np.concatenate([[0], np.cumsum(qo_len)]).astype(np.int64)
    hkv, d = int(problem["num_kv_heads"]), int(problem["head_dim"])

    if backend == "paged":
        def pool(name):
            c = sa.to_torch(tensors.raw(name), dtype, DEV)
            return c if layout == "NHD" else c.permute(0, 2, 1, 3).contiguous()
        k_cache, v_cache = pool("k_cache"), pool("v_cache")
        table = np.maximum(tensors.raw("block_tables"), 0).astype(np.int32)
    else:
        max_kv = max(kv_len)
        k_cont = sa.to_torch(sa.gather_paged(problem, tensors, "k"), dtype, DEV)  # exact, in the case dtype
        v_cont = sa.to_torch(sa.gather_paged(problem, tensors, "v"), dtype, DEV)
        k_cache = torch.zeros(len(kv_len), max_kv, hkv, d, dtype=k_cont.dtype, device=DEV)
        v_cache = torch.zeros_like(k_cache)
        k0 = 0
        for r, n in enumerate(kv_len):
            k_cache[r, :n] = k_cont[k0:k0 + n]
            v_cache[r, :n] = v_cont[k0:k0 + n]
            k0 += n

    out = torch.zeros_like(q_all)
    lse = torch.full(q_all.shape[:2], float("-inf"), dtype=torch.float32, device=DEV)
    calls = []
    for nq in sorted(set(qo_len)):
        reqs = [r for r in range(len(qo_len)) if qo_len[r] == nq]
        if nq == 0:
            continue
        rows = torch.from_numpy(np.concatenate([np.arange(q_off[r], q_off[r] + nq) for r in reqs])).to(DEV)
        q = q_all.index_select(0, rows).view(len(reqs), nq, *q_all.shape[1:])
        seqlens = torch.tensor([kv_len[r] for r in reqs], dtype=torch.int32, device=DEV)
        kw = dict(cache_seqlens=seqlens, softmax_scale=scale, causal=causal, window_size=window, softcap=cap,
                  return_softmax_lse=True)
        if backend == "paged":
            kw["block_table"] = torch.from_numpy(table[reqs]).to(DEV)
            kc, vc = k_cache, v_cache
        else:
            idx = torch.tensor(reqs, dtype=torch.long, device=DEV)
            kc, vc = k_cache.index_select(0, idx), v_cache.index_select(0, idx)
        try:
            o, l = flash_attn_with_kvcache(q, kc, vc, **kw)
        except (RuntimeError, ValueError) as e:
            if refusal(e):
                raise sa.Unsupported(f"flash-attn refuses: {type(e).__name__}: {e}"[:2000]) from None
            raise
        out.index_copy_(0, rows, o.reshape(-1, *q_all.shape[1:]))
        lse.index_copy_(0, rows, l.transpose(1, 2).reshape(-1, q_all.shape[1]).float())
        calls.append((q, kc, vc, kw))
    torch.cuda.synchronize()
    kernel_ms = None
    if sa.timing_wanted():
        kernel_ms = sa.cuda_ms(lambda: [flash_attn_with_kvcache(q, kc, vc, **kw) for q, kc, vc, kw in calls])
    return sa.Result(out, lse, kernel_ms=kernel_ms)


if __name__ == "__main__":
    sa.serve(ADAPTER, [
        sa.Backend("paged", "flash-attn flash_attn_with_kvcache with block_table (page_size % 256 == 0), "
                   "window_size=(L, R)", lse_base="e", kinds=("prefill", "decode")),
        sa.Backend("contiguous", "flash-attn flash_attn_with_kvcache on a contiguous cache gathered from the "
                   "pages, window_size=(L, R)", lse_base="e", kinds=("prefill", "decode")),
    ], run)
