#!/usr/bin/env python3
"""numpy_exact — swadiff adapter: float64 numpy attention over the PAGED cache.

Backend "exact": K/V are rebuilt from k_cache/v_cache with gather_paged (FlashInfer's
kv_indptr/kv_indices/kv_last_page_len; NHD or HND), so the page tables and the
layouts are exercised end to end, then reference_attention computes the spec in
float64 and the helper rounds the output to the case dtype (nearest even).
CPU only; runs in CI.

Window mapping: window_left L / window_right R / attention_chunk_size C used as they are
                (this IS the spec; chunked=True).
Alignment:      bottom-right, p = kv_len - qo_len + i.
Off value:      window_left == -1 / window_right == -1: no bound on that side.
LSE base:       e (natural log), float64.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import swadiff_adapter as sa  # noqa: E402


def run(backend, problem, tensors):
    k = sa.gather_paged(problem, tensors, "k", as_float32=True)
    v = sa.gather_paged(problem, tensors, "v", as_float32=True)
    out, lse = sa.reference_attention(problem, tensors, k=k, v=v)
    return out, lse


if __name__ == "__main__":
    sa.serve("numpy_exact",
             [sa.Backend("exact", "float64 numpy SDPA over K/V gathered from the paged cache (the spec, exactly)",
                         lse_base="e", kinds=("prefill", "decode"), chunked=True)],
             run)
