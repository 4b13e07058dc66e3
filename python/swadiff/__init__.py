"""swadiff: the packaged harness (`swadiff` command), and the pytest plugin's
decorator for attention callables (docs/python.md)."""

__version__ = "0.2.0"

KINDS = ("prefill", "decode")


def attention(*, lse_base="e", kinds=KINDS, chunked=False, tiles=None, description=None):
    """Declare what an attention callable `fn(problem, tensors)` is, for the
    pytest plugin: its LSE base ("e", "2", "none"), the kinds it runs, whether
    it implements chunked attention, its tile shape (docs/adapter-protocol.md)."""
    def deco(fn):
        fn.__swadiff_backend__ = dict(lse_base=lse_base, kinds=tuple(kinds), chunked=chunked, tiles=tiles,
                                      description=description)
        return fn
    return deco
