"""Property test that generates time loops with ping-pong buffers.

Each example is the source of a kernel ``kernel(a, b, s, T)`` that, ``T``
times, computes a stencil of the current buffer into the other one, then
swaps them, written as users write it:

- the swap: ``a, b = b, a``, or through a temporary (``tmp = a; a = b;
  b = tmp``);
- the stage: an element loop nest (1 or 2 dimensions, each loop
  ``range(lo, n - hi)``, reading ``a`` at offsets within the halo, maybe
  reversed along the last dimension), or the same stencil as one slice
  assignment of an array expression;
- optionally a boundary value stored before the nest (``b[0] = s``, a stage
  of its own).

It is compiled with ``stream_stores=True`` and with both buffers named, and
run against ``numba.njit`` on identical inputs: fresh, misaligned by a few
elements, reversed views and non-contiguous windows, the two buffers in
different layouts, extents from 0 (empty arrays) up. Results must be equal
byte for byte, and a nest whose store's last index runs forward must stream
(non-temporal stores in the report, fences after them).
"""

import itertools

import numba
import numpy as np
import pytest
from hypothesis import Phase, given, note, settings
from hypothesis import strategies as st

import streamjit as sj

pytestmark = pytest.mark.fuzz

EXAMPLES = 6 if settings().max_examples <= 60 else settings().max_examples // 2
MAX_EXTENT = {1: 200, 2: 30}
_counter = itertools.count()


def _plus(c):
    return f" + {c}" if c > 0 else f" - {-c}" if c < 0 else ""


@st.composite
def swap_kernels(draw):
    """(source, ndim, forward): ``forward`` when the stage's stores run
    forwards along the last dimension (the loops the aligned peel splits)."""
    ndim = draw(st.integers(1, 2))
    halo = [draw(st.integers(1, 2)) for _ in range(ndim)]
    names = ("i", "j")[:ndim]
    lines = ["def kernel(a, b, s, T):", "    for t in range(T):"]
    if draw(st.booleans()):
        lines.append(f"        b[{', '.join(['0'] * ndim)}] = s")
    terms = []
    for _ in range(draw(st.integers(1, 4))):
        offsets = [draw(st.integers(-h, h)) for h in halo]
        terms.append((draw(st.sampled_from(["0.5", "1.5", "s", "-0.25"])), offsets))
    slices = draw(st.booleans())
    reverse = not slices and draw(st.integers(0, 3)) == 0
    if slices:
        def view(offsets):
            return ", ".join(f"{h + o}:{o - h or ''}" for h, o in zip(halo, offsets))
        target = ", ".join(f"{h}:-{h}" for h in halo)
        expr = " + ".join(f"{c} * a[{view(o)}]" for c, o in terms)
        lines.append(f"        b[{target}] = {expr}")
    else:
        for depth, (name, h) in enumerate(zip(names, halo)):
            bounds = f"b.shape[{depth}] - {h} - 1, {h} - 1, -1" if reverse and depth == ndim - 1 \
                else f"{h}, b.shape[{depth}] - {h}"
            lines.append("    " * (depth + 2) + f"for {name} in range({bounds}):")
        expr = " + ".join(f"{c} * a[{', '.join(n + _plus(o) for n, o in zip(names, offsets))}]"
                          for c, offsets in terms)
        lines.append("    " * (ndim + 2) + f"b[{', '.join(names)}] = {expr}")
    if draw(st.booleans()):
        lines.append("        a, b = b, a")
    else:
        lines += ["        tmp = a", "        a = b", "        b = tmp"]
    return "\n".join(lines) + "\n", ndim, not reverse


def _buffer(rng, shape, kind):
    """Random float64 values of ``shape``: "c" fresh, "off" misaligned by
    one element, "rev" reversed along the last dimension, "sub" a
    non-contiguous window."""
    if kind == "c":
        return rng.standard_normal(shape)
    if kind == "off":
        return rng.standard_normal(int(np.prod(shape)) + 1)[1:].reshape(shape)
    if kind == "rev":
        return rng.standard_normal(shape)[..., ::-1]
    return rng.standard_normal(shape[:-1] + (shape[-1] + 3,))[..., 1:1 + shape[-1]]


def _arguments(seed, shape, kinds, steps):
    rng = np.random.default_rng(seed)
    return [_buffer(rng, shape, kinds[0]), _buffer(rng, shape, kinds[1]), float(rng.standard_normal()), steps]


@settings(max_examples=EXAMPLES, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(kernel=swap_kernels(), data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_generated_swap_matches_njit_and_streams(kernel, data, seed):
    source, ndim, forward = kernel
    filename = f"<generated swap {next(_counter)}>"
    note(f"{filename}:\n{source}")
    namespace = {}
    exec(compile(source, filename, "exec"), namespace)
    func = namespace["kernel"]
    reference = numba.njit(func)
    named = data.draw(st.booleans(), label="named")
    kernel = sj.stream_kernel(stream_stores=["a", "b"] if named else True, threshold=None)(func)
    shape = tuple(data.draw(st.integers(0, MAX_EXTENT[ndim]), label="extent") for _ in range(ndim))
    steps = data.draw(st.integers(0, 3), label="T")
    kinds = data.draw(st.sampled_from([("c", "c"), ("off", "c"), ("rev", "rev"), ("sub", "off"), ("c", "rev")]),
                      label="layouts")
    want, got = _arguments(seed, shape, kinds, steps), _arguments(seed, shape, kinds, steps)
    reference(*want)
    kernel(*got)
    for g, w in zip(got[:2], want[:2]):
        assert g.tobytes() == w.tobytes(), f"{kinds}, {shape}, T={steps}"
    if forward:
        report = kernel.stream_report(tuple(numba.typeof(x) for x in got))
        assert sum(r.nt_vector_stores + r.nt_scalar_stores for r in report.arrays.values()) > 0, str(report)
        assert report.fences > 0 and report.unfenced_stores == 0, str(report)
