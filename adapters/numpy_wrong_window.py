#!/usr/bin/env python3
"""numpy_wrong_window — a DELIBERATELY WRONG swadiff adapter (a test of the harness).

Backend "window_short": exactly numpy_exact's arithmetic, but every window is one key
short: it runs the spec with window_left L-1 when L >= 1, i.e. it drops the oldest key
p-L of every row whose window binds (p >= L).  It exists so that the harness can show
it diagnoses "window one key short" (the `L-1` variant) and pins the rows past the edge.

L = 0 is left as it is (the row keeps its single key p, because L-1 = -1 would mean
"no window" and turn a one-key-short bug into a no-window bug): at L = 0, and with no
window (L = -1), this backend is CORRECT, and cases with those windows must pass.

Window mapping: L -> L-1 for L >= 1 (the bug); L in {-1, 0} and R unchanged.
Alignment:      bottom-right, p = kv_len - qo_len + i.
Off value:      window_left == -1: no window (unchanged).
LSE base:       e (natural log), float64.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import swadiff_adapter as sa  # noqa: E402


def short_window(window_left: int) -> int:
    return window_left - 1 if window_left >= 1 else window_left


def run(backend, problem, tensors):
    wrong = dict(problem, window_left=short_window(int(problem.get("window_left", -1))))
    return sa.reference_attention(wrong, tensors)


if __name__ == "__main__":
    sa.serve("numpy_wrong_window",
             [sa.Backend("window_short",
                         "deliberately wrong: every window one key short (window_left L-1 for L >= 1; "
                         "correct at L = 0 and with no window)",
                         lse_base="e", kinds=("prefill", "decode"), chunked=True)],
             run)
