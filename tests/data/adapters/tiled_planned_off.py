#!/usr/bin/env python3
"""tiled_planned_off.py — a DELIBERATELY WRONG adapter for tests/test_external.c:
a tiled prefill whose window mask was planned off (seed 000's bug in a
user's kernel), declaring its tile shape in the hello ("tiles", see
docs/adapter-protocol.md).

Backend "planned_off": query tiles of 64 rows of one head (FlashAttention-
style, not GQA-packed); each tile's KV loop starts at its first row's window
start aligned down to 32 keys, and no per-element window mask follows, so
every row of a tile sees keys [start, p].  Exact float64 arithmetic over the
contiguous K/V.  `swadiff explain` must name tile_granular_start with the
declared shape.  numpy only."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "adapters"))
import swadiff_adapter as sa  # noqa: E402

TILE_Q, TILE_KV = 64, 32


def run(backend, problem, tensors):
    q, k, v = (tensors.f64(n) for n in ("q", "k", "v"))
    hq, hkv, d = int(problem["num_qo_heads"]), int(problem["num_kv_heads"]), int(problem["head_dim"])
    g = hq // hkv
    scale = float(problem["sm_scale"])
    cap = float(problem.get("soft_cap") or 0.0)
    L = int(problem.get("window_left", -1))
    out = np.zeros_like(q)
    lse = np.full(q.shape[:2], -np.inf)
    q0 = k0 = 0
    for nq, nk in zip(problem["qo_len"], problem["kv_len"]):
        nq, nk = int(nq), int(nk)
        i = np.arange(nq)
        p = nk - nq + i
        p_first = nk - nq + (i // TILE_Q) * TILE_Q
        start = np.maximum(p_first - L, 0) if L >= 0 else np.zeros(nq, dtype=np.int64)
        start -= start % TILE_KV
        keys = np.arange(nk)[None, :]
        mask = (keys >= start[:, None]) & (keys <= p[:, None])
        for h in range(hq):
            s = q[q0:q0 + nq, h, :] @ k[k0:k0 + nk, h // g, :].T * scale
            if cap > 0:
                s = cap * np.tanh(s / cap)
            s = np.where(mask, s, -np.inf)
            m = s.max(axis=1, keepdims=True)
            w = np.where(mask, np.exp(s - m), 0.0)
            total = w.sum(axis=1)
            out[q0:q0 + nq, h, :] = (w @ v[k0:k0 + nk, h // g, :]) / total[:, None]
            lse[q0:q0 + nq, h] = m[:, 0] + np.log(total)
        q0 += nq
        k0 += nk
    return out, lse


if __name__ == "__main__":
    sa.serve("tiled_planned_off",
             [sa.Backend("planned_off", "tiled prefill, window mask planned off (64-row tiles of one head, "
                         "KV start aligned to 32 keys)", lse_base="e", kinds=("prefill",),
                         tiles={"q_rows": [TILE_Q], "gqa_packed": False, "kv_keys": [TILE_KV]})],
             run)
