#!/usr/bin/env python3
"""replay_dump — swadiff adapter that answers with outputs recorded earlier by
`swadiff run --dump DIR`: for each case it returns the out_<BACKEND>.npy that the
dump holds for that case id.  It lets a GPU kernel's real outputs be compared and
explained again on a machine without the GPU or the library (a new diagnosis
hypothesis, a tolerance question), exactly as the harness saw them.

  swadiff run --device host --adapter 'replay=python3 adapters/replay_dump.py DIR ADAPTER:BACKEND' \\
      --backend 'replay:*' CASES

Backend "out": the output only (lse_base none: the dump's LSE is not replayed).  A case
the dump does not hold is unsupported ("not in the dump"); a dumped output of another
shape or dtype is an error, as for any adapter.

Window mapping: none (it runs no kernel: it answers with recorded outputs).
LSE base: none.
Tests: tests/adapters/test_adapter_helper.py (ReplayDump).
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import swadiff_adapter as sa  # noqa: E402

if len(sys.argv) < 3 and not (len(sys.argv) > 1 and sys.argv[1] in ("--describe", "--hello")):
    sa.startup_failure("replay_dump", "usage: replay_dump.py DUMP_DIR ADAPTER:BACKEND (as named in the dump)")


def index(dump_dir):
    """case id -> its dump folder (from each folder's meta.json)."""
    out = {}
    for name in sorted(os.listdir(dump_dir)):
        meta = os.path.join(dump_dir, name, "meta.json")
        if os.path.isfile(meta):
            with open(meta) as f:
                out[json.load(f)["id"]] = os.path.join(dump_dir, name)
    return out


def main():
    if sys.argv[1] in ("--describe", "--hello"):
        cases, backend = {}, "?"
    else:
        dump_dir, backend = sys.argv[1], sys.argv[2]
        if not os.path.isdir(dump_dir):
            sa.startup_failure("replay_dump", f"{dump_dir}: no such dump folder")
        cases = index(dump_dir)
    file_name = "out_" + backend.replace(":", "--") + ".npy"
    current = {}
    orig = sa.Adapter.handle_run

    def handle_run(self, msg):          # the case id is in the request, not the problem
        current["id"] = msg.get("id")
        return orig(self, msg)

    sa.Adapter.handle_run = handle_run

    def run(_backend, problem, tensors):
        folder = cases.get(current["id"])
        if folder is None or not os.path.isfile(os.path.join(folder, file_name)):
            raise sa.Unsupported(f"case {current['id']} is not in the dump for {backend}")
        raw = sa.np.load(os.path.join(folder, file_name))
        return sa.from_case_dtype(raw, problem["dtype"]) if raw.dtype == sa.np.uint16 else raw

    sa.serve("replay_dump", [sa.Backend("out", f"outputs of {backend} replayed from a swadiff dump",
                                        lse_base="none")], run)


if __name__ == "__main__":
    main()
