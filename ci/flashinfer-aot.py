#!/usr/bin/env python3
"""ci/flashinfer-aot.py — compiles FlashInfer's attention JIT modules ahead of
time, so that a GPU run of adapters/flashinfer_wrappers.py only loads them.

FlashInfer (flashinfer-python 0.7.x) compiles a kernel module per
(backend, dtype, head_dim, sliding window on/off, soft cap on/off) the first
time a wrapper's plan() needs it.  This script builds the modules that the
shipped case library needs (MODULES below, most used first), with nvcc and
ninja, on a machine without a GPU as well (FLASHINFER_CUDA_ARCH_LIST=9.0a),
and copies each finished .so into OUT/<module>/<module>.so: the layout of
FlashInfer's own AOT folder (flashinfer/data/aot), where the library loads a
module from without compiling it.

  python3 ci/flashinfer-aot.py OUT [--kinds fa2,fa3,decode] [--jobs N] [--parallel P]
                               [--deadline SEC] [--list] [--only KIND:DTYPE:HEAD_DIM:SWA:CAP ...]

--parallel P builds P modules at once (each with MAX_JOBS=N nvcc jobs);
--deadline stops starting new modules after SEC seconds; modules already in
OUT are skipped.  Exit status 0 when every selected module is in OUT, 1 when
some failed or were not reached (each named on stderr), 2 on bad arguments.
Needs torch and flashinfer-python importable (ci/fetch-peer-wheels.sh).

Tested by: running it (real-libraries-2026-12-02 in docs/evidence.md
records the builds); tests/adapters/test_real_library_mappings.py checks that
the adapter names the same module keys (module_key()).
"""
import argparse
import concurrent.futures as cf
import os
import shutil
import sys
import time

# (dtype, head_dim, sliding window, soft cap): what the shipped case library
# asks for (the survey in the evidence README), most cases first
COMBOS = [
    ("fp16", 128, True, False), ("bf16", 128, True, False), ("fp16", 64, True, False),
    ("bf16", 64, True, False), ("fp16", 128, False, False), ("bf16", 128, False, False),
    ("bf16", 256, True, False), ("bf16", 256, False, False), ("bf16", 128, True, True),
    ("bf16", 128, False, True), ("fp16", 64, False, False), ("fp16", 256, True, False),
    ("fp16", 64, True, True), ("fp16", 128, True, True), ("bf16", 256, True, True),
    ("fp16", 64, False, True), ("bf16", 64, False, False), ("fp16", 96, True, False),
]
KINDS = ("fa2", "fa3", "decode")


def spec_for(kind, dtype, head_dim, swa, cap):
    """FlashInfer's JitSpec for one module, as its wrappers build it at plan()."""
    import torch
    from flashinfer.jit.attention import modules as m
    tdt = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
    args = (tdt, tdt, tdt, torch.int32, head_dim, head_dim, 0, swa, cap)
    if kind == "fa2":   # BatchPrefill*Wrapper(backend="fa2") and decode use_tensor_cores=True
        return m._gen_batch_prefill_primary_module("fa2", *args, False)
    if kind == "fa3":   # BatchPrefill*Wrapper(backend="fa3"), sm90a
        return m.gen_batch_prefill_module("fa3", *args, False)
    if kind == "decode":  # BatchDecodeWithPagedKVCacheWrapper, CUDA cores
        return m.gen_batch_decode_module(*args)
    raise ValueError(f"kind {kind!r}: expected one of {KINDS}")


# the order modules are built in (a deadline cuts the tail): what seed 000 and most of
# the library need first, then the cheap decode modules, five fa3 modules, the rest
FIRST = {"fa2": 8, "fa3": 5}


def wanted(kinds):
    """The selected modules, most needed first."""
    def keys(kind, combos):
        return [(kind,) + c for c in combos if not (kind == "fa3" and c[1] not in (64, 128, 256))]
    order = []
    if "fa2" in kinds:
        order += keys("fa2", COMBOS[:FIRST["fa2"]])
    if "decode" in kinds:
        order += keys("decode", COMBOS)
    if "fa3" in kinds:
        order += keys("fa3", COMBOS[:FIRST["fa3"]])
    if "fa2" in kinds:
        order += keys("fa2", COMBOS[FIRST["fa2"]:])
    if "fa3" in kinds:
        order += keys("fa3", COMBOS[FIRST["fa3"]:])
    return order


def build_one(key, out_dir):
    os.environ.setdefault("FLASHINFER_CUDA_ARCH_LIST", "9.0a")
    t0 = time.time()
    spec = spec_for(*key)
    dest = os.path.join(out_dir, spec.name, spec.name + ".so")
    if os.path.exists(dest):
        return key, spec.name, 0.0, "present"
    spec.build(verbose=False)
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    shutil.copyfile(spec.jit_library_path, dest + ".part")
    os.replace(dest + ".part", dest)
    return key, spec.name, time.time() - t0, "built"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--kinds", default="fa2,decode,fa3")
    ap.add_argument("--jobs", type=int, default=2, help="nvcc jobs per module (MAX_JOBS)")
    ap.add_argument("--parallel", type=int, default=1, help="modules built at once")
    ap.add_argument("--deadline", type=float, default=0, help="start no module after SEC seconds (0: none)")
    ap.add_argument("--list", action="store_true", help="print the module names and exit")
    ap.add_argument("--only", action="append", default=[], metavar="KIND:DTYPE:HEAD_DIM:SWA:CAP",
                    help="build just these modules (e.g. fa2:fp16:96:True:False; repeatable)")
    a = ap.parse_args(argv)
    kinds = [k for k in a.kinds.split(",") if k]
    bad = [k for k in kinds if k not in KINDS]
    if bad:
        print(f"flashinfer-aot: unknown kind(s) {bad}; expected a subset of {list(KINDS)}", file=sys.stderr)
        return 2
    os.environ.setdefault("FLASHINFER_CUDA_ARCH_LIST", "9.0a")
    os.environ["MAX_JOBS"] = str(a.jobs)
    keys = wanted(kinds)
    if a.only:
        known = {":".join(map(str, k)): k for k in keys}
        bad = [o for o in a.only if o not in known]
        if bad:
            print(f"flashinfer-aot: --only {bad}: not among the modules of --kinds {a.kinds} "
                  f"(--list shows them)", file=sys.stderr)
            return 2
        keys = [known[o] for o in a.only]
    if a.list:
        for k in keys:
            print(":".join(map(str, k)), spec_for(*k).name)
        return 0
    os.makedirs(a.out, exist_ok=True)
    t0 = time.time()
    failed, late = [], []
    with cf.ProcessPoolExecutor(max_workers=max(1, a.parallel)) as pool:
        futs = {}
        pending = list(keys)
        while pending or futs:
            while pending and len(futs) < a.parallel:
                if a.deadline and time.time() - t0 > a.deadline:
                    late.extend(pending)
                    pending = []
                    break
                k = pending.pop(0)
                futs[pool.submit(build_one, k, a.out)] = k
            if not futs:
                break
            done, _ = cf.wait(futs, return_when=cf.FIRST_COMPLETED)
            for f in done:
                k = futs.pop(f)
                try:
                    _, name, secs, how = f.result()
                    print(f"{how:8s} {secs:6.0f} s  {':'.join(map(str, k))}  {name}", flush=True)
                except Exception as e:  # noqa: BLE001 - name the module, go on with the others
                    failed.append(k)
                    print(f"FAILED   {':'.join(map(str, k))}: {type(e).__name__}: {str(e)[-600:]}",
                          file=sys.stderr, flush=True)
    for k in late:
        print(f"NOT BUILT (deadline) {':'.join(map(str, k))}", file=sys.stderr)
    print(f"flashinfer-aot: {len(keys) - len(failed) - len(late)} of {len(keys)} modules in {a.out} "
          f"({time.time() - t0:.0f} s)", flush=True)
    return 1 if failed or late else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
