"""The adapter process of the pytest plugin: serves Python attention callables
`fn(problem, tensors)` over the adapter protocol as backends `pytest:NAME`.

    python -m swadiff._adapter NAME=module:function [...]
"""
import importlib
import sys

import swadiff_adapter as sa


def load(spec: str):
    name, _, target = spec.partition("=")
    mod, _, attr = target.partition(":")
    fn = importlib.import_module(mod)
    for part in attr.split("."):
        fn = getattr(fn, part)
    return name, fn


def main(argv):
    fns, backends = {}, []
    for spec in argv:
        name, fn = load(spec)
        meta = dict(getattr(fn, "__swadiff_backend__", None) or {})
        desc = meta.pop("description", None) or f"{spec.partition('=')[2]} (pytest plugin)"
        backends.append(sa.Backend(name, desc, **meta))
        fns[name] = fn
    sa.serve("pytest", backends, lambda backend, problem, tensors: fns[backend](problem, tensors))


if __name__ == "__main__":
    main(sys.argv[1:])
