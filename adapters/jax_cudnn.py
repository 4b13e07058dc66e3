#!/usr/bin/env python3
"""jax_cudnn — swadiff adapter: jax.nn.dot_product_attention (JAX >= 0.4.31).

Backends: "cudnn" (implementation="cudnn", cuDNN's fused flash attention) and "xla"
(implementation="xla", XLA's reference einsum path; fp32 problems run their matmuls at
precision "highest", not TF32).

Window mapping: JAX's own mechanisms, not a mask: is_causal=causal and
                local_window_size=(left, right) with left = L and right = R, where an
                unbounded side (-1) becomes kv_len (larger than any distance).  JAX's
                (left, right) means keys [i - left, i + right]: the same L/R as the spec.
                With causal, right is passed as 0 (causal already bounds it).  cuDNN takes
                only a causal left window (JAX maps it to cuDNN's
                sliding_window_length = left + 1); anything else it refuses with a
                ValueError, reported Unsupported with JAX's text.
Alignment:      JAX's is_causal and local window are TOP-LEFT (query i at position i).
                Each request runs alone (batch 1) with its qo_len query rows placed at the
                END of a zero-padded query of length kv_len, so top-left and bottom-right
                coincide (row kv_len - qo_len + i IS position p); the padded rows are dropped.
Off value:      window_left == -1 and (window_right == -1 or causal): local_window_size=None.
                causal False: is_causal=False.
GQA:            native (query heads N, key heads K, N % K == 0; head n reads n // (N/K)).
Soft cap:       not in jax.nn.dot_product_attention: soft_cap != 0 is Unsupported.
LSE base:       none (the public function returns no LSE).
Paged KV:       not used; the contiguous k.npy / v.npy.
kernel_ms:      wall time of a second call of the jitted function, block_until_ready
                (JAX has no CUDA events; includes dispatch).
XLA_PYTHON_CLIENT_PREALLOCATE is set to false before JAX starts, so that this adapter
does not take 75% of the GPU from the other workers.

Seen on the H200 (JAX 0.11.2, cuDNN 9.19), reported as they are (that is the point):
  * cudnn, causal False, window_left L >= 0, window_right 0: JAX accepts (L, 0) without
    is_causal and hands cuDNN sliding_window_length = L + 1 with no causal mask; cuDNN then
    bounds only the left side (keys [p - L, end) instead of [p - L, p]): a mismatch.
  * xla, fp16, a request with kv_len 1 (T = S = 1): XLA under jax.jit fails to compile it
    ("Unsupported dot precision algorithm: 4"): an error result.
"""
import functools
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import swadiff_adapter as sa  # noqa: E402

ADAPTER = "jax_cudnn"
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
try:
    import jax
    import jax.numpy as jnp
except ImportError as e:
    sa.startup_failure(ADAPTER, f"JAX with a CUDA plugin is needed ({e})")
if not hasattr(jax.nn, "dot_product_attention"):
    sa.startup_failure(ADAPTER, f"jax {jax.__version__} has no jax.nn.dot_product_attention (needs >= 0.4.31)")

JNP_DTYPE = {"fp16": jnp.float16, "bf16": jnp.bfloat16, "fp32": jnp.float32}
GPU = [d for d in jax.devices() if d.platform == "gpu"]


def as_jax(raw, dtype):
    a = np.ascontiguousarray(raw)
    if dtype == "bf16":
        a = a.view(jnp.bfloat16)  # the uint16 bits ARE bf16 (ml_dtypes), no rounding
    return jnp.asarray(a)


@functools.lru_cache(maxsize=None)
def attention_fn(implementation, is_causal, local_window_size, scale, fp32):
    def f(q, k, v):
        return jax.nn.dot_product_attention(q, k, v, scale=scale, is_causal=is_causal,
                                            local_window_size=local_window_size, implementation=implementation)

    if fp32:  # XLA would otherwise run f32 dots in TF32 on this GPU
        def f32(q, k, v):
            with jax.default_matmul_precision("highest"):
                return f(q, k, v)
        return jax.jit(f32)
    return jax.jit(f)


def jax_window(problem, kv_len):
    causal, L, R = bool(problem["causal"]), int(problem["window_left"]), int(problem["window_right"])
    if causal:
        R = -1  # causal already bounds the right side; JAX/cuDNN want right = 0 then
    if L < 0 and R < 0:
        return causal, None
    left = L if L >= 0 else kv_len
    right = 0 if causal else (R if R >= 0 else kv_len)
    return causal, (left, right)


def refusal(e):
    """Is this exception JAX/cuDNN declining the problem (rather than failing on it)?"""
    if isinstance(e, (ValueError, NotImplementedError, TypeError)):
        return True
    text = str(e).lower()
    return "cudnn" in text and any(w in text for w in ("not support", "unsupported", "no valid", "only support"))


def run(backend, problem, tensors):
    if float(problem.get("soft_cap") or 0) != 0:
        raise sa.Unsupported("jax.nn.dot_product_attention has no logit soft cap")
    if not GPU and backend == "cudnn":
        raise sa.Unsupported("no GPU device visible to JAX: cuDNN needs one")
    dtype = problem["dtype"]
    q = as_jax(tensors.raw("q"), dtype)
    k = as_jax(tensors.raw("k"), dtype)
    v = as_jax(tensors.raw("v"), dtype)
    hq, d = int(problem["num_qo_heads"]), int(problem["head_dim"])
    scale = float(problem["sm_scale"])
    outs, calls = [], []
    q0 = k0 = 0
    for nq, nk in zip(problem["qo_len"], problem["kv_len"]):
        is_causal, lws = jax_window(problem, nk)
        fn = attention_fn(backend, is_causal, lws, scale, dtype == "fp32")
        qpad = jnp.zeros((1, nk, hq, d), dtype=JNP_DTYPE[dtype]).at[0, nk - nq:].set(q[q0:q0 + nq])
        kr, vr = k[None, k0:k0 + nk], v[None, k0:k0 + nk]
        try:
            o = fn(qpad, kr, vr).block_until_ready()
        except Exception as e:  # noqa: BLE001
            if backend == "cudnn" and refusal(e):
                raise sa.Unsupported(f"cuDNN via JAX refuses: {type(e).__name__}: {e}"[:2000]) from None
            raise
        outs.append(np.asarray(o[0, nk - nq:].astype(jnp.float32)))
        calls.append((fn, qpad, kr, vr))
        q0 += nq
        k0 += nk
    kernel_ms = None
    if sa.timing_wanted():
        t0 = time.perf_counter()
        for fn, a, b, c in calls:
            fn(a, b, c).block_until_ready()
        kernel_ms = (time.perf_counter() - t0) * 1e3
    return sa.Result(np.concatenate(outs, axis=0), None, kernel_ms=kernel_ms)


if __name__ == "__main__":
    sa.serve(ADAPTER, [
        sa.Backend("cudnn", "jax.nn.dot_product_attention(implementation='cudnn'): is_causal + "
                   "local_window_size (cuDNN sliding_window_length = L + 1)", lse_base="none"),
        sa.Backend("xla", "jax.nn.dot_product_attention(implementation='xla'): is_causal + "
                   "local_window_size, fp32 matmuls at precision highest", lse_base="none"),
    ], run)
