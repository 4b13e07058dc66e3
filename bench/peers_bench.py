#!/usr/bin/env python3
"""peers_bench — times the peers on the shapes of `swadiff bench --device cuda --peers`.

    python3 bench/peers_bench.py --shapes SHAPES.json --out PEERS.json [--iters N] [--budget S]

SHAPES.json is written by swadiff: a list of
    {"name", "backend", "batch", "qo_len", "kv_len", "num_qo_heads", "num_kv_heads",
     "head_dim", "window_left", "causal", "dtype"}
and PEERS.json gets, per shape name, a list of
    {"peer", "median_ms", "min_ms", "how"}   or   {"peer", "unsupported": "why"}
so swadiff can print swadiff/peer per row with the same work (bytes or FLOPs) it
uses for its own kernels.

Peers: PyTorch SDPA forced to one backend (flash, cudnn) through
torch.nn.attention.sdpa_kernel, torch's flex_attention (compiled, with a block
mask for the causal triangle and the window), and JAX's
jax.nn.dot_product_attention(implementation="cudnn").  All of them read
contiguous K/V ([batch, heads, kv_len, head_dim]); swadiff's kernels read paged
K/V.  A decode with a window gives SDPA and JAX the window's keys as a slice of
K/V (what an engine without a window kernel does; the same bytes are read);
flex gets the full K/V and a window mask.  Prefill with a window: SDPA has no
window (unsupported), flex a window mask, JAX local_window_size.  Bottom-right
alignment equals top-left here: prefill shapes are square, decode rows see
every key of their (sliced) K/V.

Timings: CUDA events around single launches (torch), wall clock around
block_until_ready (JAX); warm-up first, then the median of --iters.  A peer
that fails reports why; the others go on.
"""
import argparse
import json
import os
import statistics
import sys
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # torch and JAX share the GPU


def torch_peers(shapes, iters, deadline):
    out = {}
    try:
        import torch
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except Exception as e:  # noqa: BLE001 - any import failure is reported per shape
        for s in shapes:
            out.setdefault(s["name"], []).append({"peer": "torch", "unsupported": f"PyTorch unavailable: {e}"})
        return out
    if not torch.cuda.is_available():
        for s in shapes:
            out.setdefault(s["name"], []).append({"peer": "torch", "unsupported": "no CUDA device for PyTorch"})
        return out
    try:
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
        flex = torch.compile(flex_attention, dynamic=False)
    except Exception as e:  # noqa: BLE001
        flex, create_block_mask = None, None
        flex_err = str(e)

    def timed(fn):
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(iters):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b))
        return statistics.median(times), min(times)

    for s in shapes:
        rows = out.setdefault(s["name"], [])
        if time.time() > deadline:
            rows.append({"peer": "torch", "unsupported": "time budget spent"})
            continue
        dt = torch.float16 if s["dtype"] == "fp16" else torch.bfloat16
        B, nq, nk = s["batch"], s["qo_len"], s["kv_len"]
        hq, hk, d, L = s["num_qo_heads"], s["num_kv_heads"], s["head_dim"], s["window_left"]
        decode = s["backend"] != "prefill"
        g = torch.Generator(device="cuda").manual_seed(1)
        q = torch.rand(B, hq, nq, d, device="cuda", dtype=dt, generator=g) - 0.5
        k = torch.rand(B, hk, nk, d, device="cuda", dtype=dt, generator=g) - 0.5
        v = torch.rand(B, hk, nk, d, device="cuda", dtype=dt, generator=g) - 0.5
        for name, backend in (("sdpa_flash", SDPBackend.FLASH_ATTENTION), ("sdpa_cudnn", SDPBackend.CUDNN_ATTENTION)):
            try:
                if decode:
                    ks, vs = (k[:, :, nk - (L + 1):], v[:, :, nk - (L + 1):]) if L >= 0 else (k, v)
                    how = "contiguous K/V" + (f", the window as a slice of the last {L + 1} keys" if L >= 0 else "")
                    causal = False  # one row that sees every key of its slice
                else:
                    if L >= 0:
                        rows.append({"peer": name, "unsupported": "SDPA has no sliding window (an explicit mask "
                                     "disables the flash and cuDNN kernels)"})
                        continue
                    ks, vs, causal, how = k, v, True, "contiguous K/V, is_causal (square: top-left = bottom-right)"
                with sdpa_kernel([backend]):
                    fn = lambda: F.scaled_dot_product_attention(q, ks, vs, is_causal=causal, enable_gqa=True)  # noqa: E731
                    med, mn = timed(fn)
                rows.append({"peer": name, "median_ms": med, "min_ms": mn, "how": how})
            except Exception as e:  # noqa: BLE001
                rows.append({"peer": name, "unsupported": str(e).splitlines()[0][:300] if str(e) else type(e).__name__})
        if flex is None:
            rows.append({"peer": "flex_attention", "unsupported": f"flex_attention unavailable: {flex_err}"})
            continue
        try:
            off = nk - nq  # bottom-right: row i sits at position off + i

            def mask_mod(b, h, qi, ki):
                p = qi + off
                m = ki <= p
                if L >= 0:
                    m = m & (ki >= p - L)
                return m

            bm = create_block_mask(mask_mod, None, None, nq, nk, device="cuda")
            fn = lambda: flex(q, k, v, block_mask=bm, enable_gqa=True)  # noqa: E731
            med, mn = timed(fn)
            rows.append({"peer": "flex_attention", "median_ms": med, "min_ms": mn,
                         "how": "compiled, block mask (causal" + (f", window {L}" if L >= 0 else "") + "), full K/V"})
        except Exception as e:  # noqa: BLE001
            rows.append({"peer": "flex_attention", "unsupported": str(e).splitlines()[0][:300] if str(e) else type(e).__name__})
        del q, k, v
        torch.cuda.empty_cache()
    return out


def jax_peers(shapes, iters, deadline):
    out = {}
    try:
        import jax
        import jax.numpy as jnp
    except Exception as e:  # noqa: BLE001
        for s in shapes:
            out.setdefault(s["name"], []).append({"peer": "jax_cudnn", "unsupported": f"JAX unavailable: {e}"})
        return out
    if not any(dv.platform == "gpu" for dv in jax.devices()):
        for s in shapes:
            out.setdefault(s["name"], []).append({"peer": "jax_cudnn", "unsupported": "no GPU for JAX"})
        return out
    for s in shapes:
        rows = out.setdefault(s["name"], [])
        if time.time() > deadline:
            rows.append({"peer": "jax_cudnn", "unsupported": "time budget spent"})
            continue
        try:
            dt = jnp.float16 if s["dtype"] == "fp16" else jnp.bfloat16
            B, nq, nk = s["batch"], s["qo_len"], s["kv_len"]
            hq, hk, d, L = s["num_qo_heads"], s["num_kv_heads"], s["head_dim"], s["window_left"]
            decode = s["backend"] != "prefill"
            key = jax.random.PRNGKey(1)
            k1, k2, k3 = jax.random.split(key, 3)
            # JAX layout: [batch, seq, heads, head_dim]
            q = (jax.random.uniform(k1, (B, nq, hq, d)) - 0.5).astype(dt)
            k = (jax.random.uniform(k2, (B, nk, hk, d)) - 0.5).astype(dt)
            v = (jax.random.uniform(k3, (B, nk, hk, d)) - 0.5).astype(dt)
            if decode:
                if L >= 0:
                    k, v = k[:, nk - (L + 1):], v[:, nk - (L + 1):]
                how = "contiguous K/V" + (f", the window as a slice of the last {L + 1} keys" if L >= 0 else "")
                f = jax.jit(lambda q, k, v: jax.nn.dot_product_attention(q, k, v, implementation="cudnn"))
            else:
                win = (L, 0) if L >= 0 else None
                how = "contiguous K/V, is_causal" + (f", local_window_size ({L}, 0)" if L >= 0 else "")
                f = jax.jit(lambda q, k, v: jax.nn.dot_product_attention(q, k, v, is_causal=True,
                                                                         local_window_size=win,
                                                                         implementation="cudnn"))
            for _ in range(3):
                f(q, k, v).block_until_ready()
            times = []
            for _ in range(iters):
                t0 = time.perf_counter()
                f(q, k, v).block_until_ready()
                times.append((time.perf_counter() - t0) * 1e3)
            rows.append({"peer": "jax_cudnn", "median_ms": statistics.median(times), "min_ms": min(times),
                         "how": how + " (wall clock around block_until_ready)"})
        except Exception as e:  # noqa: BLE001
            rows.append({"peer": "jax_cudnn", "unsupported": str(e).splitlines()[0][:300] if str(e) else type(e).__name__})
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--budget", type=float, default=400.0, help="seconds for all peers (default 400)")
    ap.add_argument("--peers", default="torch,jax", help="comma-separated: torch, jax")
    a = ap.parse_args(argv)
    with open(a.shapes) as f:
        shapes = json.load(f)
    deadline = time.time() + a.budget
    result = {"peers": {}, "versions": {}}
    want = set(a.peers.split(","))
    parts = []
    if "torch" in want:
        parts.append(torch_peers(shapes, a.iters, deadline))
        try:
            import torch
            result["versions"]["torch"] = torch.__version__
        except Exception:  # noqa: BLE001
            pass
    if "jax" in want:
        parts.append(jax_peers(shapes, a.iters, deadline))
        try:
            import jax
            result["versions"]["jax"] = jax.__version__
        except Exception:  # noqa: BLE001
            pass
    for part in parts:
        for name, rows in part.items():
            result["peers"].setdefault(name, []).extend(rows)
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
