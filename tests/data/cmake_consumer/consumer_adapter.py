#!/usr/bin/env python3
"""consumer_adapter — an adapter outside swadiff's tree (tests/cmake_package.sh).

It imports swadiff_adapter without adding any path: swadiff must have put the
helper's folder on PYTHONPATH (backends/external/adapter.c), the installed one
for an installed binary.  CONSUMER_EXPECT_HELPER names the folder it must
come from; any other is an error at start.  Backend "exact": the helper's
float64 reference over K/V gathered from the paged cache.
"""
import os

import swadiff_adapter as sa

expected = os.environ.get("CONSUMER_EXPECT_HELPER")
got = os.path.dirname(os.path.realpath(sa.__file__))
if expected and got != os.path.realpath(expected):
    raise SystemExit(f"consumer_adapter: swadiff_adapter came from {got}, expected {os.path.realpath(expected)}")


def run(backend, problem, tensors):
    k = sa.gather_paged(problem, tensors, "k", as_float32=True)
    v = sa.gather_paged(problem, tensors, "v", as_float32=True)
    return sa.reference_attention(problem, tensors, k=k, v=v)


if __name__ == "__main__":
    sa.serve("consumer", [sa.Backend("exact", "float64 numpy reference", lse_base="e",
                                     kinds=("prefill", "decode"), chunked=True)], run)
