#!/usr/bin/env python3
"""invariance-summary.py REPORT.json[.xz] — the invariance records of a
report as one table: per backend and check, how many results were bitwise
equal, differed (held: failures; measured: how far, as a ratio to the
tolerance) or were skipped (the first reason).  Used by ci/gpu-invariance.sh;
reads what `swadiff run --invariance` wrote (report 1.7, docs/invariance.md)."""
import collections
import json
import lzma
import sys


def main(path):
    opener = lzma.open if path.endswith(".xz") else open
    with opener(path, "rt") as f:
        rep = json.load(f)
    rows = collections.OrderedDict()
    for c in rep["cases"]:
        for v in c.get("invariance", []):
            k = (c["backend"], v["name"])
            r = rows.setdefault(k, {"same": 0, "differs": 0, "skipped": 0, "error": 0, "held": 0, "worst": 0.0,
                                    "worst_id": "", "why": ""})
            r[v["state"]] += 1
            r["held"] += bool(v["bitwise"])
            ratio = v["max_tol_ratio"] if isinstance(v["max_tol_ratio"], (int, float)) else float("inf")
            if v["state"] == "differs" and ratio >= r["worst"]:
                r["worst"], r["worst_id"] = ratio, c["id"]
            if v["state"] in ("skipped", "error") and not r["why"]:
                r["why"] = v["message"][:90]
    print(f"{'backend':28} {'check':15} {'same':>5} {'differs':>7} {'skipped':>7} {'error':>5} {'held':>5}  worst/tol  where / why")
    for (b, name), r in rows.items():
        tail = f"{r['worst']:.3g}  {r['worst_id']}" if r["differs"] else f"-  {r['why']}"
        print(f"{b:28} {name:15} {r['same']:5} {r['differs']:7} {r['skipped']:7} {r['error']:5} {r['held']:5}  {tail}")
    print(f"results: {len(rep['cases'])}; summary: {rep['summary']}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
