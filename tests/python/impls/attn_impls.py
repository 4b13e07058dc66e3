"""Attention callables for the pytest plugin's tests: the spec (float64 numpy
over K/V gathered from the paged cache, as adapters/numpy_exact.py) and a
deliberately wrong twin (every window one key short, as
adapters/numpy_wrong_window.py), plus one that only runs decode."""
import swadiff_adapter as sa

import swadiff


def exact(problem, tensors):
    k = sa.gather_paged(problem, tensors, "k", as_float32=True)
    v = sa.gather_paged(problem, tensors, "v", as_float32=True)
    return sa.reference_attention(problem, tensors, k=k, v=v)


def window_short(problem, tensors):
    L = int(problem.get("window_left", -1))
    return sa.reference_attention(dict(problem, window_left=L - 1 if L >= 1 else L), tensors)


@swadiff.attention(kinds=("decode",))
def decode_only(problem, tensors):
    return exact(problem, tensors)
