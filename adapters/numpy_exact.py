#!/usr/bin/env python3
"""numpy_exact — swadiff adapter: float64 numpy attention over the PAGED cache.

Backend "exact": K/V are rebuilt from k_cache/v_cache with gather_paged (FlashInfer's
kv_indptr/kv_indices/kv_last_page_len; NHD or HND), so the page tables and the
layouts are exercised end to end, then reference_attention computes the spec in
float64 and the helper rounds the output to the case dtype (nearest even).
CPU only; runs in CI.

Backend "all_forms": the same, after checking that every form the harness writes describes
one problem (k.npy / v.npy, the paged pool through kv_indptr and through block_tables, the
indptrs and lengths); swadiff runs it as the positive control of its own marshalling.

Window mapping: window_left L / window_right R / attention_chunk_size C used as they are
                (this IS the spec; chunked=True).
Alignment:      bottom-right, p = kv_len - qo_len + i.
Off value:      window_left == -1 / window_right == -1: no bound on that side.
LSE base:       e (natural log), float64.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import swadiff_adapter as sa  # noqa: E402  (it names a missing numpy)
import numpy as np  # noqa: E402


def check_forms(problem, tensors):
    """The positive control's reading (backend all_forms): every form of the problem the
    harness writes must describe the same one, else a ValueError naming the first difference."""
    B = int(problem["num_requests"])
    qo, kv = [int(x) for x in problem["qo_len"]], [int(x) for x in problem["kv_len"]]
    qo_indptr, kv_seq = tensors.raw("qo_indptr"), tensors.raw("kv_seq_indptr")
    if list(np.diff(qo_indptr)) != qo or int(qo_indptr[0]) != 0:
        raise ValueError(f"qo_indptr {list(qo_indptr)} does not match qo_len {qo}")
    if list(np.diff(kv_seq)) != kv or int(kv_seq[0]) != 0:
        raise ValueError(f"kv_seq_indptr {list(kv_seq)} does not match kv_len {kv}")
    if [int(x) for x in tensors.raw("context_lens")] != kv:
        raise ValueError(f"context_lens {list(tensors.raw('context_lens'))} != kv_len {kv}")
    if len(qo) != B or int(problem["total_qo"]) != sum(qo) or int(problem["total_kv"]) != sum(kv):
        raise ValueError("num_requests / total_qo / total_kv disagree with qo_len and kv_len")
    # the keys some row may see: those before may differ (poison data evicts their pages)
    L, C = int(problem.get("window_left", -1)), sa.chunk_size(problem)
    seen = []
    for r in range(B):
        p0 = max(0, kv[r] - qo[r])
        lo = max(p0 - L if L >= 0 else 0, p0 - p0 % C if C > 0 else 0, 0)
        seen.extend(range(int(kv_seq[r]) + min(lo, kv[r]), int(kv_seq[r + 1])))
    seen = np.asarray(seen, dtype=np.int64)
    for which in ("k", "v"):
        ragged = tensors.raw(which)[seen]
        by_indptr = sa.gather_paged(problem, tensors, which, table="indptr")[seen]
        by_blocks = sa.gather_paged(problem, tensors, which, table="block_tables")[seen]
        for name, got in (("kv_indptr/kv_indices", by_indptr), ("block_tables", by_blocks)):
            if got.shape != ragged.shape or not np.array_equal(got.view(np.uint8), ragged.view(np.uint8)):
                bad = np.nonzero((got != ragged).reshape(len(ragged), -1).any(axis=1))[0] if got.shape == ragged.shape else []
                where = f"first at token row {int(seen[bad[0]])}" if len(bad) else f"shape {list(got.shape)} vs {list(ragged.shape)}"
                raise ValueError(f"{which.upper()} through {name} ({problem.get('layout', 'NHD')}) differs from "
                                 f"{which}.npy: {where}")


def run(backend, problem, tensors):
    if backend == "all_forms":
        check_forms(problem, tensors)
    k = sa.gather_paged(problem, tensors, "k", as_float32=True)
    v = sa.gather_paged(problem, tensors, "v", as_float32=True)
    out, lse = sa.reference_attention(problem, tensors, k=k, v=v)
    return out, lse


if __name__ == "__main__":
    sa.serve("numpy_exact",
             [sa.Backend("exact", "float64 numpy SDPA over K/V gathered from the paged cache (the spec, exactly)",
                         lse_base="e", kinds=("prefill", "decode"), chunked=True),
              sa.Backend("all_forms", "the same after checking that every form of the problem agrees (contiguous "
                         "K/V, both page tables, every indptr): swadiff's positive marshalling control",
                         lse_base="e", kinds=("prefill", "decode"), chunked=True)],
             run)
