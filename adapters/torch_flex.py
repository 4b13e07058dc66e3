#!/usr/bin/env python3
"""torch_flex — swadiff adapter: torch.nn.attention.flex_attention (PyTorch >= 2.5), compiled.

Backends:
  "prefill"  every request packed into ONE sequence (batch 1, document masking): a
             mask_mod over per-token (request, position) tables; flex's main kernel.
  "decode"   every qo_len == 1: batch = requests, one query row each, K/V padded to the
             longest request; flex's decoding kernel (Q_LEN = 1).
K/V come from the PAGED cache: gather_paged's token rows, gathered on the GPU with torch
index_select (NHD, or HND permuted first), so page tables and layouts are exercised.

Window mapping: mask_mod(b, h, q_idx, kv_idx) with the spec's rule on absolute positions:
                same request, causal kv <= p, window_left L: kv >= p - L, window_right R:
                kv <= p + R; create_block_mask turns it into the block-sparse mask
                (BLOCK_SIZE 128) so fully-outside blocks are skipped and partial blocks
                evaluate mask_mod per element.
Alignment:      bottom-right: p = kv_len - qo_len + i is stored per query token (prefill)
                or computed as kv_len[b] - 1 (decode).
Off value:      window_left == -1 / window_right == -1: that clause is left out of mask_mod
                (no bound); causal False leaves out the causal clause.
Soft cap:       score_mod = c * tanh(score / c); flex applies score_mod to the SCALED score
                (q.k * scale), which is the spec's order.  soft_cap 0: no score_mod (None).
Padding:        head_dim padded with zeros to a power of two >= 16 (q.k and the kept
                output columns unchanged; scale passed explicitly); sequence lengths (and
                the decode batch) padded to a power of two >= 128 (resp. >= 1) so that few
                shapes are compiled; padded rows/keys belong to no request and are masked.
GQA:            enable_gqa=True (qo head h reads kv head h // (Hq / Hkv)).
LSE base:       e.  The kernel works in base 2, and flex_attention converts before returning:
                torch/nn/attention/flex_attention.py (2.11) returns `lse * ln2` ("lse_scaled"),
                the natural-log logsumexp of the scaled (and score_mod'ed) scores.  Checked on
                the H200 with PyTorch 2.11.0: within 1e-4 of the natural-log reference.  The
                LSE is requested with return_aux=AuxRequest(lse=True) where that exists
                (PyTorch >= 2.9; return_lse is deprecated there), else return_lse=True.
kernel_ms:      CUDA events around a second call of the compiled flex_attention.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import swadiff_adapter as sa  # noqa: E402

ADAPTER = "torch_flex"
try:
    import torch
    import torch._dynamo
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
except ImportError as e:
    sa.startup_failure(ADAPTER, f"PyTorch >= 2.5 with torch.nn.attention.flex_attention is needed ({e})")
try:
    from torch.nn.attention.flex_attention import AuxRequest
except ImportError:
    AuxRequest = None
if not torch.cuda.is_available():
    sa.startup_failure(ADAPTER, "no CUDA device: the compiled flex_attention kernels need one")

# every (shape, window) is a new compilation: let them all compile instead of falling back to eager
for _name in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit", "accumulated_recompile_limit"):
    if hasattr(torch._dynamo.config, _name):
        setattr(torch._dynamo.config, _name, 1 << 14)

_flex = torch.compile(flex_attention, dynamic=False)
DEV = "cuda"


def pow2_at_least(n, lo):
    p = lo
    while p < n:
        p *= 2
    return p


def flex_call(q, k, v, block_mask, score_mod, scale):
    kw = dict(score_mod=score_mod, block_mask=block_mask, scale=scale, enable_gqa=True)
    if AuxRequest is not None:
        out, aux = _flex(q, k, v, return_aux=AuxRequest(lse=True), **kw)
        return out, aux.lse
    return _flex(q, k, v, return_lse=True, **kw)


def gathered_kv(problem, tensors):
    """Contiguous [total_kv, Hkv, D] K and V gathered from the paged cache on the GPU."""
    dtype, layout = problem["dtype"], problem["layout"]
    hkv, d = int(problem["num_kv_heads"]), int(problem["head_dim"])
    rows = torch.from_numpy(sa.paged_token_rows(problem, tensors)).to(DEV)

    def one(name):
        c = sa.to_torch(tensors.raw(name), dtype, DEV)
        if layout == "HND":
            c = c.permute(0, 2, 1, 3)
        return c.reshape(-1, hkv, d).index_select(0, rows)

    return one("k_cache"), one("v_cache")


def window_clauses(problem):
    return bool(problem["causal"]), int(problem["window_left"]), int(problem["window_right"])


def make_score_mod(problem):
    cap = float(problem.get("soft_cap") or 0.0)
    if cap == 0:
        return None

    def soft_cap(score, b, h, q_idx, kv_idx):
        return cap * torch.tanh(score / cap)

    return soft_cap


def run_prefill(problem, q, k, v, score_mod, scale):
    T, hq, d = q.shape
    S, hkv, _ = k.shape
    Qp, Kp, Dp = pow2_at_least(T, 128), pow2_at_least(S, 128), pow2_at_least(d, 16)
    qp = q.new_zeros(1, hq, Qp, Dp)
    kp = k.new_zeros(1, hkv, Kp, Dp)
    vp = v.new_zeros(1, hkv, Kp, Dp)
    qp[0, :, :T, :d] = q.transpose(0, 1)
    kp[0, :, :S, :d] = k.transpose(0, 1)
    vp[0, :, :S, :d] = v.transpose(0, 1)
    q_doc, q_pos = np.full(Qp, -1, np.int32), np.zeros(Qp, np.int32)
    kv_doc, kv_pos = np.full(Kp, -2, np.int32), np.zeros(Kp, np.int32)
    q0 = k0 = 0
    for r, (nq, nk) in enumerate(zip(problem["qo_len"], problem["kv_len"])):
        q_doc[q0:q0 + nq] = r
        q_pos[q0:q0 + nq] = np.arange(nk - nq, nk)
        kv_doc[k0:k0 + nk] = r
        kv_pos[k0:k0 + nk] = np.arange(nk)
        q0 += nq
        k0 += nk
    q_doc, q_pos, kv_doc, kv_pos = (torch.from_numpy(a).to(DEV) for a in (q_doc, q_pos, kv_doc, kv_pos))
    causal, L, R = window_clauses(problem)

    def mask_mod(b, h, q_idx, kv_idx):
        p, kpos = q_pos[q_idx], kv_pos[kv_idx]
        m = q_doc[q_idx] == kv_doc[kv_idx]
        if causal:
            m = m & (kpos <= p)
        if L >= 0:
            m = m & (kpos >= p - L)
        if R >= 0:
            m = m & (kpos <= p + R)
        return m

    bm = create_block_mask(mask_mod, 1, None, Qp, Kp, device=DEV)
    call = lambda: flex_call(qp, kp, vp, bm, score_mod, scale)  # noqa: E731
    out, lse = call()
    return out[0, :, :T, :d].transpose(0, 1), lse[0, :, :T].transpose(0, 1), call


def run_decode(problem, q, k, v, score_mod, scale):
    B = int(problem["num_requests"])
    _, hq, d = q.shape
    hkv = k.shape[1]
    kv_len = [int(n) for n in problem["kv_len"]]
    Bp, Kp, Dp = pow2_at_least(B, 1), pow2_at_least(max(kv_len), 128), pow2_at_least(d, 16)
    qd = q.new_zeros(Bp, hq, 1, Dp)
    kd = k.new_zeros(Bp, hkv, Kp, Dp)
    vd = v.new_zeros(Bp, hkv, Kp, Dp)
    qd[:B, :, 0, :d] = q
    k0 = 0
    for r, nk in enumerate(kv_len):
        kd[r, :, :nk, :d] = k[k0:k0 + nk].transpose(0, 1)
        vd[r, :, :nk, :d] = v[k0:k0 + nk].transpose(0, 1)
        k0 += nk
    lens = torch.tensor(kv_len + [0] * (Bp - B), dtype=torch.int32, device=DEV)  # padded requests: no key
    causal, L, R = window_clauses(problem)

    def mask_mod(b, h, q_idx, kv_idx):
        n = lens[b]
        p = n - 1 + q_idx  # the one query row sits at kv_len - 1
        m = kv_idx < n
        if causal:
            m = m & (kv_idx <= p)
        if L >= 0:
            m = m & (kv_idx >= p - L)
        if R >= 0:
            m = m & (kv_idx <= p + R)
        return m

    bm = create_block_mask(mask_mod, Bp, None, 1, Kp, device=DEV)
    call = lambda: flex_call(qd, kd, vd, bm, score_mod, scale)  # noqa: E731
    out, lse = call()
    return out[:B, :, 0, :d], lse[:B, :, 0], call


def run(backend, problem, tensors):
    dtype = problem["dtype"]
    q = sa.to_torch(tensors.raw("q"), dtype, DEV)
    k, v = gathered_kv(problem, tensors)
    scale = float(problem["sm_scale"])
    score_mod = make_score_mod(problem)
    fn = run_decode if backend == "decode" else run_prefill
    out, lse, call = fn(problem, q, k, v, score_mod, scale)
    out, lse = out.float().cpu(), lse.float().cpu()
    kernel_ms = sa.cuda_ms(call) if sa.timing_wanted() else None
    return sa.Result(out, lse, kernel_ms=kernel_ms)


if __name__ == "__main__":
    sa.serve(ADAPTER, [
        sa.Backend("prefill", "torch.compile(flex_attention): all requests packed in one sequence, "
                   "sliding-window mask_mod + block mask, paged K/V gathered on the GPU",
                   lse_base="e", kinds=("prefill", "decode")),
        sa.Backend("decode", "torch.compile(flex_attention) decoding kernel: batch of one-row queries, "
                   "sliding-window mask_mod + block mask, paged K/V gathered on the GPU",
                   lse_base="e", kinds=("decode",)),
    ], run)
