"""``NUMBA_DISABLE_JIT=1``: kernels run as the Python they are written in.

Numba's switch for debugging: ``numba.njit`` then returns the function
itself, so pdb, prints and coverage see its lines. `stream_kernel` does the
same, after checking its options as with JIT on (a bad option raises the
same `StreamConfigError` either way), and a `stencil` becomes a Python function that calls the kernel at
each point (``numba.stencil`` itself fails to run then); `copyto` and
`memcpy` are NumPy's copies. The dispatcher's inspection methods exist on
them and say that JIT is disabled (nothing is compiled, so nothing
streams), so code that prints a report keeps running: `stream_calls` and
`stream_fallbacks` give their dicts with zero counts and
``"jit_disabled": True``; ``inspect_llvm()`` and ``inspect_asm()`` the dict
of compiled signatures Numba's dispatcher gives (none).
"""

import functools
import itertools

import numpy as np
from numba.core import config

from ..codegen import CALL_PATHS, FALLBACK_CHECKS
from ..plan import StreamResult


def jit_disabled():
    """Whether ``NUMBA_DISABLE_JIT`` is set, as Numba's decorators read it."""
    return bool(config.DISABLE_JIT)


def python_function(func, name=None):
    """``func`` itself, as ``numba.njit`` returns it, with the stream
    dispatcher's methods saying that nothing is compiled."""
    message = (f"NUMBA_DISABLE_JIT=1: {name or func.__qualname__} runs as Python; nothing is compiled, so nothing "
               "streams")

    def says(*args, **kwargs):
        return message

    def code(signature=None, **kwargs):
        # (as Numba's dispatcher: one signature's text, else a dict of every compiled one's, here none)
        return {} if signature is None else message

    func.stream_report = says
    func.inspect_llvm = func.inspect_asm = code
    func.stream_result = lambda *args, **kwargs: StreamResult(notes={"": [message]})
    func.above_threshold = lambda *args, **kwargs: False  # (no call streams)
    # (nothing compiled counts calls: zeros, as for a kernel that streams no store, and why)
    func.stream_calls = lambda *args, **kwargs: dict.fromkeys(CALL_PATHS, 0) | {"jit_disabled": True}
    func.stream_fallbacks = lambda *args, **kwargs: dict.fromkeys(FALLBACK_CHECKS, 0) | {"jit_disabled": True}
    return func


class _Relative:
    """An array as a stencil kernel sees it: indexed relative to ``point``;
    ``offsets`` collects the relative indices read."""

    def __init__(self, array, point, offsets, wrap=False):
        self.array, self.point, self.offsets, self.wrap = array, point, offsets, wrap

    def __getitem__(self, index):
        index = index if isinstance(index, tuple) else (index,)
        self.offsets.append(index)
        where = tuple(p + i for p, i in zip(self.point, index))
        if self.wrap:  # (probing for the neighbourhood: any element will do)
            where = tuple(w % n for w, n in zip(where, self.array.shape))
        return self.array[where]


def python_stencil(func, options):
    """The stencil ``func`` as a Python function (see the module doc): the
    output is numba.stencil's, its dtype the kernel's results'."""
    standard = set(options.get("standard_indexing", ()))
    params = func.__code__.co_varnames[:func.__code__.co_argcount]

    def call(args, point, offsets, wrap=False):
        return func(*(a if p in standard else _Relative(a, point, offsets, wrap) for p, a in zip(params, args)))

    @functools.wraps(func)
    def stencil(*args, out=None, neighborhood=None):
        shape = args[0].shape
        neighborhood = neighborhood or options.get("neighborhood")
        if neighborhood is None and all(shape):  # the relative indices the kernel reads, at one point
            offsets = []
            call(args, (0,) * len(shape), offsets, wrap=True)
            neighborhood = [(min(0, *(o[d] for o in offsets)), max(0, *(o[d] for o in offsets)))
                            for d in range(len(shape))]
        bounds = neighborhood or [(0, 0)] * len(shape)
        interior = [range(-min(0, lo), n - max(0, hi)) for (lo, hi), n in zip(bounds, shape)]
        values = {point: call(args, point, []) for point in itertools.product(*interior)}
        cval = options.get("cval", 0)
        if out is None:
            out = np.full(shape, cval, np.asarray(list(values.values())).dtype if values else args[0].dtype)
        elif "cval" in options:
            out[...] = cval
        for point, value in values.items():
            out[point] = value
        return out

    return python_function(stencil, f"stencil {func.__qualname__}")
