#!/usr/bin/env python3
"""sglang_triton — swadiff adapter: sglang's Triton attention kernels, called directly.

Written against sglang 0.5.23 (sglang.kernels.ops.attention.extend_attention /
.decode_attention) with Triton 3.6 and PyTorch 2.11, and run with them on an H200
(docs/real-libraries.md; the run's files: real-libraries-2026-12-02 in
docs/evidence.md).  Only the kernels are called, not sglang's server: the adapter
stages the paged cache the way sglang's token pool holds it (page size 1: one slot
per token, kv_indices are token slots).

Backends:
  extend   extend_attention_fwd(q_extend, k_extend, v_extend, o, k_buffer, v_buffer,
           qo_indptr, kv_indptr, kv_indices, custom_mask=None, is_causal, ...,
           sliding_window_size=W, logit_cap=c, lse_extend=lse).  Each request's last
           qo_len keys are the "extend" tokens (k_extend / v_extend); the kv_len - qo_len
           keys before them are the prefix, read from the cache through kv_indices.
           Prefill and decode cases.
  decode   decode_attention_fwd(q, k_buffer, v_buffer, o, kv_indptr, kv_indices, ...).
           The kernel has no window: sglang's backend hands it only the window's keys.
           This backend hands it the keys the spec's window holds, [p-L, p] (L + 1 keys).
           Decode cases only.
  decode_backend_window
           the same kernel with the key list built the way sglang's TritonAttnBackend
           builds it (update_sliding_window_buffer, triton_backend.py): the last
           min(seq_len, sliding_window_size) keys, where sglang's models set
           sliding_window_size = L (gemma2.py: config.sliding_window - 1), and no window
           at all unless sliding_window_size > 0.  The recipe is restated here, not
           called.  Decode cases only.

Window mapping: (read from extend_attention.py) SLIDING_WINDOW_SIZE = W keeps key k
for query q when q <= k + W, i.e. k >= p - W: W is FlashInfer's window_left L.  But W <= 0
means NO window (the kernel tests `SLIDING_WINDOW_SIZE > 0`), so -1 and 0 are both "off":
  L = -1  -> W = -1 (off, sglang's own default)
  L >= 1  -> W = L
  L = 0   -> refused: 0 is sglang's "off", so a one-key window cannot be expressed.
Non-causal: the kernel's window is two-sided, |q - k| <= W, so a non-causal problem runs
only when R == L (L >= 1) or L = R = -1; any other (L, R) without causal is refused.
Alignment: bottom-right (the extend tokens are each request's last qo_len keys);
a request with qo_len > kv_len (rows before key 0) has no such layout and is refused.
Soft cap: logit_cap = c (c * tanh(s / c) after sm_scale).  sm_scale as given.
LSE base: e for extend (it writes the natural-log LSE, lse_extend); decode returns none.
dtypes: fp16 / bf16 (fp32 is refused: sglang serves 16-bit caches).
attention_chunk_size: refused (these kernels have no chunked mask).

Tests: tests/adapters/test_real_library_mappings.py (the mapping and the key lists,
without sglang); the H200 run: real-libraries-2026-12-02 in docs/evidence.md.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import swadiff_adapter as sa  # noqa: E402

ADAPTER = "sglang_triton"
TESTED_VERSION = "0.5.23"
DEV = "cuda"
MAX_KV_SPLITS = 8
BACKENDS = {
    "extend": ("prefill", "decode"),
    "decode": ("decode",),
    "decode_backend_window": ("decode",),
}


def window_size(problem):
    """sglang's sliding_window_size W for the extend kernel, or raises Unsupported."""
    L, R, causal = int(problem["window_left"]), int(problem["window_right"]), bool(problem["causal"])
    if L == 0:
        raise sa.Unsupported("sglang's sliding_window_size 0 means 'no window' (the kernel tests W > 0), "
                             "so window_left 0 (one key) cannot be expressed")
    if not causal and sa.problem_kind(problem) != "decode" and R != L:
        raise sa.Unsupported(f"sglang's non-causal window is two-sided (|q - k| <= W): window_left {L} with "
                             f"window_right {R} cannot be expressed (only R == L, or both -1)")
    return L if L >= 1 else -1


def decode_key_range(kv_len, L, backend):
    """[lo, kv_len): the keys handed to the decode kernel for the row at p = kv_len - 1."""
    if backend == "decode":                      # the spec: [p - L, p], L + 1 keys
        return (max(0, kv_len - 1 - L) if L >= 0 else 0), kv_len
    # sglang's TritonAttnBackend: sliding_window_size = L (the models' convention), the
    # window used only when sliding_window_size > 0, then the last min(seq_len, W) keys
    if L > 0:
        return kv_len - min(kv_len, L), kv_len
    return 0, kv_len


def refusal_reason(problem, backend):
    """Why these kernels cannot run this problem, or None (window mapping aside)."""
    if problem["dtype"] not in ("fp16", "bf16"):
        return f"sglang's Triton kernels are run here on fp16 / bf16 caches only, not {problem['dtype']}"
    if sa.chunk_size(problem) > 0:
        return "sglang's Triton extend / decode kernels have no chunked local attention mask"
    if backend == "extend":
        for r, (nq, nk) in enumerate(zip(problem["qo_len"], problem["kv_len"])):
            if int(nq) > int(nk):
                return (f"request {r} has qo_len {nq} > kv_len {nk}: extend_attention_fwd takes the extend "
                        "tokens as the request's last keys, so rows before key 0 cannot be expressed")
    return None


def _library():
    try:
        import torch
        import triton  # noqa: F401
    except ImportError as e:
        sa.startup_failure(ADAPTER, f"PyTorch with CUDA and Triton are needed ({e})")
    try:
        from sglang.kernels.ops.attention.decode_attention import decode_attention_fwd
        from sglang.kernels.ops.attention.extend_attention import extend_attention_fwd
    except Exception as e:  # noqa: BLE001 - an ImportError, or a module that breaks while importing
        sa.startup_failure(ADAPTER, f"sglang's Triton kernels cannot be imported ({type(e).__name__}: {e}); "
                                    f"install sglang {TESTED_VERSION} and the small wheels its imports need "
                                    "(ci/fetch-peer-wheels.sh pins them)")
    try:
        from importlib.metadata import version
        ver = version("sglang")
    except Exception:  # noqa: BLE001 - unpacked without metadata
        import sglang
        ver = getattr(sglang, "__version__", TESTED_VERSION + "?")
    if not torch.cuda.is_available():
        sa.startup_failure(ADAPTER, "no CUDA device (torch.cuda.is_available() is False)")
    return torch, extend_attention_fwd, decode_attention_fwd, ver


def slot_buffers(torch, problem, tensors):
    """The paged cache as sglang's token pool: [num_pages * page_size, Hkv, D] per K and V."""
    dtype = problem["dtype"]
    kc = sa.to_torch(tensors.raw("k_cache"), dtype, DEV)
    vc = sa.to_torch(tensors.raw("v_cache"), dtype, DEV)
    if problem["layout"] == "HND":            # [pages, H, ps, D] -> [pages, ps, H, D]
        kc, vc = kc.permute(0, 2, 1, 3), vc.permute(0, 2, 1, 3)
    n = kc.shape[0] * kc.shape[1]
    return kc.reshape(n, kc.shape[2], kc.shape[3]).contiguous(), vc.reshape(n, vc.shape[2], vc.shape[3]).contiguous()


class Runner:
    def __init__(self, torch, extend_fwd, decode_fwd):
        self.torch, self.extend_fwd, self.decode_fwd = torch, extend_fwd, decode_fwd

    def run(self, backend, problem, tensors):
        why = refusal_reason(problem, backend)
        if why:
            raise sa.Unsupported(why)
        if backend == "extend":
            return self.extend(problem, tensors)
        return self.decode(backend, problem, tensors)

    def extend(self, problem, tensors):
        torch = self.torch
        W = window_size(problem)
        dtype = problem["dtype"]
        qo_len = [int(n) for n in problem["qo_len"]]
        kv_len = [int(n) for n in problem["kv_len"]]
        rows = sa.paged_token_rows(problem, tensors)          # cache slot of each token of k.npy
        k_all = sa.to_torch(tensors.raw("k"), dtype, DEV)
        v_all = sa.to_torch(tensors.raw("v"), dtype, DEV)
        ext, pre, kv_indptr = [], [], [0]
        t0 = 0
        for nq, nk in zip(qo_len, kv_len):
            ext.extend(range(t0 + nk - nq, t0 + nk))             # the last qo_len keys: the extend tokens
            pre.extend(rows[t0:t0 + nk - nq].tolist())            # the prefix: through the cache
            kv_indptr.append(kv_indptr[-1] + nk - nq)
            t0 += nk
        ext_t = torch.tensor(ext, dtype=torch.int64, device=DEV)
        k_ext, v_ext = k_all[ext_t].contiguous(), v_all[ext_t].contiguous()
        k_buf, v_buf = slot_buffers(torch, problem, tensors)
        q = sa.to_torch(tensors.raw("q"), dtype, DEV)
        o = torch.empty_like(q)
        lse = torch.empty(q.shape[0], q.shape[1], dtype=torch.float32, device=DEV)
        qo_indptr = sa.to_torch(tensors.raw("qo_indptr"), None, DEV)
        kv_indptr_t = torch.tensor(kv_indptr, dtype=torch.int32, device=DEV)
        kv_indices = torch.tensor(pre if pre else [0], dtype=torch.int64, device=DEV)
        cap = float(problem.get("soft_cap") or 0.0)

        def launch():
            self.extend_fwd(q, k_ext, v_ext, o, k_buf, v_buf, qo_indptr, kv_indptr_t, kv_indices, None,
                            bool(problem["causal"]), None, max(qo_len), 1.0, 1.0,
                            sm_scale=float(problem["sm_scale"]), logit_cap=cap, sliding_window_size=W,
                            lse_extend=lse)

        launch()
        torch.cuda.synchronize()
        kernel_ms = sa.cuda_ms(launch) if sa.timing_wanted() else None
        return sa.Result(o, lse, kernel_ms=kernel_ms, lse_base="e")

    def decode(self, backend, problem, tensors):
        torch = self.torch
        dtype = problem["dtype"]
        L = int(problem["window_left"])
        kv_len = [int(n) for n in problem["kv_len"]]
        rows = sa.paged_token_rows(problem, tensors)
        idx, indptr, splits = [], [0], []
        t0 = 0
        for nk in kv_len:
            lo, hi = decode_key_range(nk, L, backend)
            idx.extend(rows[t0 + lo:t0 + hi].tolist())
            indptr.append(indptr[-1] + hi - lo)
            splits.append(int(min(MAX_KV_SPLITS, max(1, (hi - lo + 63) // 64))))
            t0 += nk
        k_buf, v_buf = slot_buffers(torch, problem, tensors)
        q = sa.to_torch(tensors.raw("q"), dtype, DEV)
        B, hq, dv = q.shape[0], q.shape[1], v_buf.shape[-1]
        o = torch.empty_like(q)
        attn_logits = torch.empty(B, hq, MAX_KV_SPLITS, dv, dtype=torch.float32, device=DEV)
        attn_lse = torch.empty(B, hq, MAX_KV_SPLITS, dtype=torch.float32, device=DEV)
        kv_indptr = torch.tensor(indptr, dtype=torch.int32, device=DEV)
        kv_indices = torch.tensor(idx if idx else [0], dtype=torch.int64, device=DEV)
        num_splits = torch.tensor(splits, dtype=torch.int32, device=DEV)
        cap = float(problem.get("soft_cap") or 0.0)

        def launch():
            self.decode_fwd(q, k_buf, v_buf, o, kv_indptr, kv_indices, attn_logits, attn_lse, num_splits,
                            MAX_KV_SPLITS, float(problem["sm_scale"]), 1.0, 1.0, logit_cap=cap)

        launch()
        torch.cuda.synchronize()
        kernel_ms = sa.cuda_ms(launch) if sa.timing_wanted() else None
        return sa.Result(o, None, kernel_ms=kernel_ms)


def main():
    describing = len(sys.argv) > 1 and sys.argv[1] in ("--describe", "--hello")
    ver, runner = TESTED_VERSION, None
    if not describing:
        torch, extend_fwd, decode_fwd, ver = _library()
        runner = Runner(torch, extend_fwd, decode_fwd)
    desc = {
        "extend": "extend_attention_fwd, sliding_window_size = L (L >= 1; L = 0 refused), prefix through kv_indices",
        "decode": "decode_attention_fwd over the spec's window keys [p-L, p]",
        "decode_backend_window": "decode_attention_fwd over the keys sglang's TritonAttnBackend picks "
                                 "(last min(seq_len, sliding_window_size = L) keys)",
    }
    backends = [sa.Backend(name, f"sglang {ver}: {desc[name]}", lse_base=("e" if name == "extend" else "none"),
                           kinds=kinds) for name, kinds in BACKENDS.items()]
    sa.serve(ADAPTER, backends, lambda b, p, t: runner.run(b, p, t))


if __name__ == "__main__":
    main()
