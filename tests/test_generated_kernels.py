"""Property test that generates *kernels*, not just inputs.

Each example is Python source for a random loop nest, exec'd from a string
(no source file), compiled with ``sj.stream_kernel(stream_stores=True)`` and
with ``numba.njit``, and run on identical random inputs, C-contiguous (fresh
or misaligned by a few elements) and as non-contiguous views. Results must be
equal, and the legality verdict must be the one the generator derived.

What is generated:

- 1 to 3 spatial loops ``for v in range(lo, a.shape[p] - hi)`` (lo, hi in
  0..2), optionally a time loop ``for t in range(T)`` at any depth;
- a store ``out[...]`` whose index takes, in loop order, a subset of the
  spatial loop variables, each as ``v + c`` or reversed
  ``out.shape[q] - 1 - v - c`` with ``-lo <= c <= hi`` (always in bounds);
- an expression mixing loads of ``a``/``b`` at small offsets (``v - lo - 1``
  reads index -1: Python's wraparound), loads of ``big`` with strided
  (``2*v``), skewed/diagonal (``v + w``), reversed and offset indices, the
  self-load ``out[<store index>]``, the scalar ``s``, the time variable,
  constants, ``+ - *`` and ``min``;
- optionally a second store: to another array ``out2`` in the same nest, to
  ``out`` again in the same nest, to ``out`` at the same index in the other
  branch of an ``if``/``else``, or to ``out`` in a sibling nest that follows
  (reusing the loop variable names).

Legality (Halide's rule per execution of a loop nest, design.md), as the
generator derives it:

1. Every store index is injective in the variables it uses (each index
   dimension is one distinct loop variable with coefficient +-1).
2. A store is legal iff every enclosing loop whose variable is not in its
   index lies outside every enclosing loop whose variable is (a time loop,
   or ``for i: for j: out[j]``, re-runs a complete nest); a loop inside it
   that does not select the element (``for i: for t: out[i]``) makes it
   illegal.
3. Two unconditional stores to the same array in one nest are illegal,
   whatever their offsets: equal offsets write one element twice, different
   offsets or directions overlap for some extents, which a compile-time
   proof cannot exclude.
4. Stores to the same array at the same index in opposite branches of an
   ``if``/``else`` write the element once per iteration: legal (if rule 2
   holds).
5. A store in a sibling nest (a second complete nest, run after the first)
   is judged on its own.

Legal kernels must compile; those with a store whose last index is
``innermost variable + c`` (the loops the aligned peel splits) must stream:
the report shows non-temporal stores for a stored array, or at least a
fence. Illegal ones must raise
``StreamLegalityError`` citing ``<generated kernel N>:line`` of an offending
store or loop.
"""

import itertools
import re
from dataclasses import dataclass, field

import numba
import numpy as np
import pytest
from hypothesis import Phase, given, note, settings
from hypothesis import strategies as st

import streamjit as sj

# (random kernels: what streams is checked in their reports, against what the generator expects;
# the nothing-streamed warnings of those that stay plain are not the subject)
pytestmark = [pytest.mark.fuzz, pytest.mark.filterwarnings("ignore::streamjit.StreamWarning")]

# 25 examples with the suite (5 per kind of second store); the long budget
# of `-m fuzz` (conftest.py) when asked for.
EXAMPLES = 5 if settings().max_examples <= 60 else settings().max_examples // 5

VAR_NAMES = ("i", "j", "k", "x", "y", "z", "r", "c")
MAX_EXTENT = {1: 300, 2: 40, 3: 12}
_counter = itertools.count()


@dataclass
class Loop:
    var: str
    dim: object          # spatial dimension of `a`, or None for the time loop
    lo: int = 0
    hi: int = 0

    def header(self):
        if self.dim is None:
            return f"for {self.var} in range(T):"
        upper = f"a.shape[{self.dim}]" + (f" - {self.hi}" if self.hi else "")
        return f"for {self.var} in range({self.lo}, {upper}):" if self.lo else f"for {self.var} in range({upper}):"


@dataclass
class Spec:
    source: str
    ndim: int
    extents: tuple
    out_dims: tuple       # spatial dimensions indexing `out`
    out2_dims: tuple      # and `out2` (empty: out2 is not stored)
    dtype: type
    T: int
    offset: int           # misalignment, in elements, of the "off" views
    legal: bool
    streamable: bool      # legal, and some store's last index is `innermost variable + c`
    stored: tuple         # names of the arrays stored to
    error_lines: set = field(default_factory=set)   # lines an error may cite


def _plus(c):
    return f" + {c}" if c > 0 else f" - {-c}" if c < 0 else ""


class Builder:
    """Draws one kernel: loop structure, stores, expressions, legality."""

    def __init__(self, draw):
        self.draw = draw
        self.lines = ["def kernel(out, out2, a, b, big, s, T):"]
        self.forward_last = False   # some store's last index is `innermost variable + c`

    def emit(self, depth, text):
        self.lines.append("    " * (depth + 1) + text)
        return len(self.lines)          # 1-based line number of `text`

    # ---- indices
    def store_index(self, array, loops_by_dim, dims):
        parts = []
        for q, p in enumerate(dims):
            loop = loops_by_dim[p]
            c = self.draw(st.integers(-loop.lo, loop.hi))
            if self.draw(st.integers(0, 4)) == 0:
                parts.append(f"{array}.shape[{q}] - 1 - {loop.var}{_plus(-c)}")
            else:
                parts.append(f"{loop.var}{_plus(c)}")
                self.forward_last = q == len(dims) - 1 or self.forward_last
        return ", ".join(parts)

    def input_index(self, loops_by_dim):
        parts = []
        for p in sorted(loops_by_dim):
            loop = loops_by_dim[p]
            parts.append(f"{loop.var}{_plus(self.draw(st.integers(-loop.lo - 1, loop.hi)))}")
        return ", ".join(parts)

    def big_index(self, variables):
        parts = []
        for q in range(self.ndim):
            v = self.draw(st.sampled_from(variables))
            form = self.draw(st.sampled_from(["offset", "strided", "skewed", "reversed"]))
            c = self.draw(st.integers(0, 3))
            if form == "strided":
                parts.append(f"2 * {v}{_plus(c)}")
            elif form == "skewed" and len(variables) > 1:
                w = self.draw(st.sampled_from([u for u in variables if u != v]))
                parts.append(f"{v} + {w}{_plus(c)}")
            elif form == "reversed":
                parts.append(f"big.shape[{q}] - 1 - {v}{_plus(-c)}")
            else:
                parts.append(f"{v}{_plus(c)}")
        return ", ".join(parts)

    # ---- expressions
    def term(self, ctx):
        kinds = ["const", "s", "big"] + (["a", "b", "a"] if ctx.get("inputs") else []) \
            + (["self"] if ctx.get("self") else []) + (["t"] if ctx.get("t") else [])
        kind = self.draw(st.sampled_from(kinds))
        if kind == "const":
            return self.draw(st.sampled_from(["0.5", "1.5", "2.0", "3"]))
        if kind == "s":
            return "s"
        if kind == "t":
            return f"0.25 * {ctx['t']}"
        if kind == "self":
            return f"out[{ctx['self']}]"
        if kind == "big":
            return f"big[{self.big_index(ctx['variables'])}]"
        return f"{kind}[{self.input_index(ctx['inputs'])}]"

    def expr(self, ctx, depth=2):
        if depth == 0 or self.draw(st.integers(0, 2)) == 0:
            return self.term(ctx)
        op = self.draw(st.sampled_from(["+", "-", "*", "min"]))
        left, right = self.expr(ctx, depth - 1), self.expr(ctx, depth - 1)
        return f"min({left}, {right})" if op == "min" else f"({left} {op} {right})"

    # ---- legality of one store (rule 2)
    @staticmethod
    def store_is_legal(nest, used_vars):
        first = next((n for n, loop in enumerate(nest) if loop.var in used_vars), None)
        return first is not None and all(loop.var in used_vars for loop in nest[first:])

    @staticmethod
    def breaking_loops(nest, used_vars):
        first = next(n for n, loop in enumerate(nest) if loop.var in used_vars)
        return [loop for loop in nest[first:] if loop.var not in used_vars]


SECOND_STORES = ("none", "other", "same", "branch", "sibling")


@st.composite
def generated_kernels(draw, second):
    b = Builder(draw)
    ndim = b.ndim = draw(st.integers(1, 3))
    names = draw(st.permutations(VAR_NAMES))[:ndim]
    spatial = [Loop(names[p], p, draw(st.integers(0, 2)), draw(st.integers(0, 2))) for p in range(ndim)]
    loops_by_dim = {loop.dim: loop for loop in spatial}
    time_position = draw(st.sampled_from([None, None] + list(range(ndim + 1))))
    nest = list(spatial)
    if time_position is not None:
        nest.insert(time_position, Loop("t", None))
    # `out` is indexed by a non-empty subset of the spatial dimensions, in loop order
    out_dims = tuple(sorted(draw(st.sets(st.integers(0, ndim - 1), min_size=1))))
    used = {loops_by_dim[p].var for p in out_dims}

    # the nest
    loop_lines = {}
    for depth, loop in enumerate(nest):
        loop_lines[loop.var] = b.emit(depth, loop.header())
    body = len(nest)
    variables = [loop.var for loop in nest]
    index = b.store_index("out", loops_by_dim, out_dims)
    ctx = {"inputs": loops_by_dim, "variables": variables, "self": index if draw(st.booleans()) else None,
           "t": "t" if time_position is not None else None}
    legal = Builder.store_is_legal(nest, used)
    error_lines = set()
    out2_dims = ()
    stored = ["out"]
    if not legal:
        error_lines |= {loop_lines[loop.var] for loop in Builder.breaking_loops(nest, used)}

    if second == "branch":
        b.emit(body, f"if a[{b.input_index(loops_by_dim)}] > 0.0:")
        first_line = b.emit(body + 1, f"out[{index}] = {b.expr(ctx)}")
        b.emit(body, "else:")
        second_line = b.emit(body + 1, f"out[{index}] = {b.expr(ctx)}")
        if not legal:
            error_lines |= {first_line, second_line}
    else:
        first_line = b.emit(body, f"out[{index}] = {b.expr(ctx)}")
        if not legal:
            error_lines.add(first_line)
        if second == "other":
            out2_dims = tuple(sorted(draw(st.sets(st.integers(0, ndim - 1), min_size=1))))
            used2 = {loops_by_dim[p].var for p in out2_dims}
            line = b.emit(body, f"out2[{b.store_index('out2', loops_by_dim, out2_dims)}] = {b.expr(ctx)}")
            stored.append("out2")
            if not Builder.store_is_legal(nest, used2):
                legal = False
                error_lines |= {line} | {loop_lines[loop.var] for loop in Builder.breaking_loops(nest, used2)}
        elif second == "same":
            # rule 3: same array, same nest, unconditional: illegal
            line = b.emit(body, f"out[{b.store_index('out', loops_by_dim, out_dims)}] = {b.expr(ctx)}")
            legal = False
            error_lines |= {first_line, line}

    if second == "sibling":
        # a second complete nest over out's dimensions, reusing the names
        sibling = [Loop(loops_by_dim[p].var, p, draw(st.integers(0, 2)), draw(st.integers(0, 2))) for p in out_dims]
        for depth, loop in enumerate(sibling):
            b.emit(depth, loop.header().replace("a.shape", "out.shape").replace(
                f"out.shape[{loop.dim}]", f"out.shape[{out_dims.index(loop.dim)}]"))
        sibling_by_dim = {out_dims.index(loop.dim): loop for loop in sibling}
        sibling_index = b.store_index("out", sibling_by_dim, tuple(range(len(out_dims))))
        sibling_ctx = {"inputs": None, "variables": [loop.var for loop in sibling], "self": sibling_index,
                       "t": None}
        b.emit(len(sibling), f"out[{sibling_index}] = {b.expr(sibling_ctx)}")   # legal on its own (rule 5)

    extents = tuple(draw(st.integers(0, MAX_EXTENT[ndim])) for _ in range(ndim))
    return Spec(source="\n".join(b.lines) + "\n", ndim=ndim, extents=extents, out_dims=out_dims,
                out2_dims=out2_dims, dtype=draw(st.sampled_from([np.float64, np.float32])),
                T=draw(st.integers(0, 3)), offset=draw(st.integers(1, 7)), legal=legal,
                streamable=legal and b.forward_last, stored=tuple(stored),
                error_lines=error_lines)


def _array(rng, shape, dtype, kind, offset):
    """Random values (never zeros): "c" fresh, "off" C-contiguous but starting
    ``offset`` elements into its buffer, "sub" a non-contiguous window."""
    size = int(np.prod(shape))
    if kind == "c":
        return (rng.standard_normal(shape) * 10 + 0.5).astype(dtype)
    if kind == "off":
        buf = (rng.standard_normal(size + offset) * 10 + 0.5).astype(dtype)
        return buf[offset:].reshape(shape)
    parent = (rng.standard_normal(shape[:-1] + (shape[-1] + 3,)) * 10 + 0.5).astype(dtype)
    return parent[..., 1:1 + shape[-1]]


def make_args(spec, seed, kind):
    rng = np.random.default_rng(seed)
    out = _array(rng, tuple(spec.extents[p] for p in spec.out_dims), spec.dtype, kind, spec.offset)
    out2_shape = tuple(spec.extents[p] for p in spec.out2_dims) or (3,)
    out2 = _array(rng, out2_shape, spec.dtype, kind, spec.offset)
    a = _array(rng, spec.extents, spec.dtype, kind, spec.offset)
    b = _array(rng, spec.extents, spec.dtype, "c", spec.offset)
    big = _array(rng, (2 * max(spec.extents) + 8,) * spec.ndim, spec.dtype, "c", spec.offset)
    return [out, out2, a, b, big, float(rng.standard_normal()), spec.T]


def assert_same_arrays(got, want, label):
    for g, w in zip(got, want):
        if isinstance(g, np.ndarray):
            np.testing.assert_array_equal(g, w, err_msg=label)
            if g.base is not None:
                np.testing.assert_array_equal(g.base, w.base, err_msg=f"{label} (outside the view)")


@pytest.mark.parametrize("second", SECOND_STORES)
# No shrinking: each shrink step compiles a kernel twice, and the failing
# kernel's source is printed (note) as generated.
@settings(max_examples=EXAMPLES, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_generated_kernel_matches_njit_and_legality(second, data, seed):
    spec = data.draw(generated_kernels(second), label="kernel")
    filename = f"<generated kernel {next(_counter)}>"
    note(f"{filename}, legal={spec.legal}, error lines {sorted(spec.error_lines)}:\n{spec.source}")
    namespace = {}
    exec(compile(spec.source, filename, "exec"), namespace)
    func = namespace["kernel"]
    reference = numba.njit(func)
    # named: True would leave an array only updated in place (`out[k] = out[k] * ...`) plain, unchecked
    kernel = sj.stream_kernel(stream_stores=list(spec.stored), threshold=None)(func)  # ("auto": in place stays plain)

    first_kind = "off" if seed % 2 else "c"
    want = make_args(spec, seed, first_kind)
    reference(*want)                    # the generated kernel is valid numba.njit code
    got = make_args(spec, seed, first_kind)
    if not spec.legal:
        with pytest.raises(sj.StreamLegalityError) as info:
            kernel(*got)
        message = str(info.value)
        assert any(re.search(rf"{re.escape(filename)}:{line}\b", message) for line in spec.error_lines), message
        return

    kernel(*got)
    assert_same_arrays(got, want, first_kind)
    if spec.streamable:
        # Only a store whose last index is `innermost variable + c` gets the
        # aligned loop (README, "Limits": loops that are not split stay
        # plain), so a kernel whose every store runs backwards along the
        # innermost loop is legal but need not stream.
        report = kernel.stream_report(tuple(numba.typeof(x) for x in got))
        nt = sum(report.arrays[name].nt_vector_stores + report.arrays[name].nt_scalar_stores
                 for name in spec.stored)
        assert nt > 0 or report.fences > 0, str(report)
        assert report.unfenced_stores == 0, str(report)   # fences post-dominate the streamed stores

    # non-contiguous views: another signature, same results
    want = make_args(spec, seed, "sub")
    got = make_args(spec, seed, "sub")
    reference(*want)
    kernel(*got)
    assert_same_arrays(got, want, "sub")
