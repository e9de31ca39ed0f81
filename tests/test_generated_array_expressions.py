"""Property test that generates whole-array *kernels*: slice assignments,
array expressions, in-place operators, time loops and fresh outputs, written
the way NumPy/Numba users write them.

Each example is Python source exec'd from a string, compiled with
``sj.stream_kernel`` (``stream_stores=True``, or every array it stores to or
makes named, see `stream_stores_for`) and with ``numba.njit``, and run on
the same random data (never zeros), as contiguous, misaligned, reversed,
strided and empty views, and with ``B`` aliasing ``A`` (the same array, or
one element apart in one buffer). Every array written (and the buffer under
each view) and the return value must be bit-identical: the operations
generated (``+ - * /``, unary ``-``, ``np.abs``, ``np.sqrt``) are exactly
rounded, so fused or through temporaries Numba gets the same bits.

What is generated (``def kernel(A, B, C, v, w, s, steps)``; ``A``, ``B``,
``C`` share one shape, 1-D or 2-D; one test per dtype float64, float32,
int64 and dimension count):

- slice assignments ``X[<region>] = <expr>`` whose region, per dimension, is
  ``lo:-hi`` (``lo``, ``hi`` in 0..2, written ``:``, ``lo:``, ``:-hi``) or
  an integer (``out[0, :] = ...``, a column ``out[1:-1, -1]``); the whole
  array as ``X[:]``, ``X[:, :]`` or ``X[...]``; each array operand is the
  same region shifted by ``-lo..hi`` per dimension (same extents at every
  size, also below the halo, where all extents are 0), with an integer where
  the region has one, or a row ``X[k, ...]`` broadcast over a 2-D region;
- in-place operators ``X[<region>] += <expr>`` (``-=``, ``*=``), on whole
  arrays (``C *= s``, ``C += 2.0 * A``) and on overlapping self slices
  (``A[1:] += A[:-1]``);
- row / element loops ``for i in range(lo, A.shape[0] - hi): X[i] = ...``;
- temporaries ``t = <expr over a region>`` read by the next slice
  assignment through shifted views of ``t`` (and ``np.where(t[..] >
  t[..], t[..], ...)``): computed inside the consumer's loop;
- a time loop ``for _ in range(steps):`` around one or two statements, or a
  ping-pong pair (the second is the first with ``A`` and ``B`` swapped);
- a return: none, ``return <expr>``, ``r = <expr>; return r``, or
  ``r = np.empty_like(X)`` filled by a loop (``range`` or ``enumerate``);
- broadcasting operands: ``v`` (1-D, the last dimension) and ``w`` (the
  arrays' dimensions), each of full extent, sliced like the region, or of
  run-time extent 1 where the kernel writes ``:`` (``w[:, 1:-1]`` with
  ``w.shape[0] == 1``); the scalar ``s``, constants. int64 kernels use only
  ``+ - *``, unary ``-`` and integer constants and scalars.

(``X[...]`` is generated only as a plain assignment's destination: numba.njit
cannot load ``X[...]``.)

A kernel numba.njit rejects (compile or run time) is skipped, and
stream_kernel must raise the same exception type; the test asserts that such
cases are rare. A ``StreamLegalityError`` is accepted only where two stores
to one array in one time-step body may write the same element.
"""

import collections
import itertools
import re
import zlib
from dataclasses import dataclass, field

import numba
import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, assume, given, note, settings
from hypothesis import seed as fixed_seed
from hypothesis import strategies as st

import streamjit as sj
from streamjit.errors import StreamLegalityError

# Each example compiles two kernels (about 1 s on 2 cores); the data sets
# run per example share its signature, so they cost no compile. No
# shrinking (each step compiles): the failing kernel's source is printed.
# 2 per (dtype, ndim), 12 kernels, with the suite (derandomized: the same
# kernels at each run; a third per test cost 16 s of the suite's 8
# minutes); the long budget of `-m fuzz` (conftest.py) when asked for. (What streams is checked in the
# reports; the nothing-streamed warnings of random kernels are not the subject.)
pytestmark = [pytest.mark.fuzz, pytest.mark.filterwarnings("ignore::streamjit.StreamWarning")]
EXAMPLES = 2 if settings().max_examples <= 60 else settings().max_examples // 6
SIZES = (0, 1, 2, 3, 7, 33, 101)
SIZES_2D = (0, 1, 2, 3, 7, 33)
VIEWS = ("c", "off", "rev", "strided")
DTYPES = {"float64": np.float64, "float32": np.float32, "int64": np.int64}
CONSTANTS = {"float64": ("2.0", "0.5", "0.2", "1.5", "3.0", "2"),
             "float32": ("2.0", "0.5", "0.2", "1.5", "3.0", "2"),
             "int64": ("2", "3", "1", "-1")}
HALOS = (0, 0, 1, 1, 2)
_counter = itertools.count()


# ---- index parts: ("slice", start, from_end) = start:-from_end, ("int", k),
# ("var", name, lo, hi) a loop variable running over lo..N-hi-1 (a store's
# index), ("at", name, c) = name + c (a load's)


def _plus(c):
    return f" + {c}" if c > 0 else f" - {-c}" if c < 0 else ""


def _slice_text(start, from_end):
    return f"{start if start else ''}:{-from_end if from_end else ''}"


def _may_overlap(first, second):
    """Whether two store regions (lists of index parts) may share an element
    for some array shape."""
    def dim(p, q):
        if p[0] == "int" and q[0] == "int":
            return p[1] == q[1] or (p[1] < 0) != (q[1] < 0)
        if p[0] == "int" or q[0] == "int":
            k, (_, lo, hi) = (p[1], q) if p[0] == "int" else (q[1], p)
            return k >= lo if k >= 0 else -k > hi
        return True                     # two ranges [lo, N - hi) meet for large N
    return all(dim(p, q) for p, q in zip(first, second))


def _index_text(name, parts):
    texts = []
    for p in parts:
        if p[0] == "int":
            texts.append(str(p[1]))
        elif p[0] == "slice":
            texts.append(_slice_text(p[1], p[2]))
        elif p[0] == "var":
            texts.append(p[1])
        else:
            texts.append(p[1] + _plus(p[2]))
    return f"{name}[{', '.join(texts)}]"


@dataclass
class Kernel:
    source: str
    ndim: int
    dtype: str
    v_one: bool                 # v has run-time length 1 (broadcast)
    w_one: tuple                # per dimension: w has run-time extent 1
    min_extent: list            # per dimension: integer indices need this size
    double_write: bool          # two stores to one array in one time-step body may meet
    stores: list = field(default_factory=list)


class Builder:
    def __init__(self, draw, ndim, dtype):
        self.draw, self.ndim, self.dtype = draw, ndim, dtype
        self.v_one = draw(st.booleans())
        self.w_one = tuple(draw(st.integers(0, 2)) == 0 for _ in range(ndim))
        self.min_extent = [0] * ndim
        self.lines = ["def kernel(A, B, C, v, w, s, steps):"]
        self.stores = []        # (array, body id, region)
        self.body = 0           # id of the body statements go into (a time loop is its own)

    def emit(self, depth, text):
        self.lines.append("    " * (depth + 1) + text)

    def pick(self, options):
        return self.draw(st.sampled_from(options))

    # ---- regions and operand indices
    def int_index(self, d, options=(0, 1, -1, -2)):
        k = self.pick(options)
        self.min_extent[d] = max(self.min_extent[d], 2)
        return k

    def region(self):
        """A destination region of a slice assignment."""
        if self.draw(st.integers(0, 3)) == 0:
            return [("slice", 0, 0)] * self.ndim          # the whole array: X[:], X[...]
        pattern = self.pick(["ss", "ss", "ss", "ss", "is", "si"]) if self.ndim == 2 else "s"
        parts = []
        for d, kind in enumerate(pattern):
            if kind == "i":
                parts.append(("int", self.int_index(d, (0, 1, -1))))
            else:
                parts.append(("slice", self.pick(HALOS), self.pick(HALOS)))
        return parts

    def format_index(self, name, parts, bare_ok, ellipsis_ok=False):
        # (numba.njit cannot load ``X[...]``: only a plain assignment's
        # destination is written that way)
        if all(p[0] == "slice" and p[1] == p[2] == 0 for p in parts):
            forms = ["[:]"] + (["[:, :]"] if len(parts) == 2 else []) + (["", ""] if bare_ok else []) \
                + (["[...]", "[...]"] if ellipsis_ok else [])
            return name + self.pick(forms)
        return _index_text(name, parts)

    def shifted(self, dst, d):
        """The operand index part for destination part ``dst`` of dimension d."""
        if dst[0] == "int":
            return ("int", self.int_index(d))
        if dst[0] == "slice":
            _, lo, hi = dst
            delta = self.draw(st.integers(-lo, hi))
            return ("slice", lo + delta, hi - delta)
        _, var, lo, hi = dst
        return ("at", var, self.draw(st.integers(-lo, hi)))

    def operand(self, dst):
        name = self.pick(["A", "B", "C"])
        if self.ndim == 2 and dst[0][0] == "slice" and dst[1][0] == "slice" and self.draw(st.integers(0, 5)) == 0:
            # a row broadcast over the 2-D region
            return self.format_index(name, [("int", self.int_index(0)), self.shifted(dst[1], 1)], False)
        return self.format_index(name, [self.shifted(p, d) for d, p in enumerate(dst)], True)

    def broadcast_operand(self, dst, name):
        if name == "v":
            dims, one = [(self.ndim - 1, dst[-1])], (self.v_one,)
        else:
            dims, one = list(enumerate(dst)), self.w_one
        parts = []
        for (d, p), is_one in zip(dims, one):
            if not is_one:
                parts.append(self.shifted(p, d))
            elif p[0] == "slice":
                parts.append(("slice", 0, 0))          # run-time extent 1: broadcast
            else:
                parts.append(("int", 0))
        if name == "v" and self.v_one and parts[0][0] == "int" and all(p[0] != "var" for p in dst):
            parts = [("slice", 0, 0)]                 # v (1,) broadcasts to a column
        return self.format_index(name, parts, True)

    # ---- expressions
    def term(self, dst):
        kind = self.pick(["array", "array", "array", "array", "v", "w", "s", "const", "unary"])
        if kind == "unary":
            inner = self.operand(dst)
            if self.dtype == "int64":
                return f"-{inner}"
            return self.pick([f"-{inner}", f"np.abs({inner})", f"np.sqrt(np.abs({inner}))"])
        if kind == "array":
            return self.operand(dst)
        if kind in ("v", "w"):
            return self.broadcast_operand(dst, kind)
        if kind == "s":
            return "s"
        return self.pick(CONSTANTS[self.dtype])

    def expr(self, dst, depth=2):
        if depth == 0 or self.draw(st.integers(0, 2)) == 0:
            return self.term(dst)
        op = self.pick(["+", "-", "*", "+", "*"] + (["/"] if self.dtype != "int64" else []))
        text = f"{self.expr(dst, depth - 1)} {op} {self.expr(dst, depth - 1)}"
        return f"({text})" if self.draw(st.booleans()) else text

    def array_expr(self, dst):
        """An expression with at least one array of the region's shape."""
        op = self.pick(["+", "-", "*"])
        return f"{self.operand(dst)} {op} {self.expr(dst, 1)}"

    # ---- statements
    def store(self, name, region):
        self.stores.append((name, self.body, region))

    def slice_statement(self, depth, name=None):
        name = name or self.pick(["A", "B", "C"])
        region = self.region()
        op = self.pick(["=", "=", "=", "+=", "-=", "*="])
        value = self.expr(region) if self.draw(st.integers(0, 4)) else self.array_expr(region)
        dst = self.format_index(name, region, op != "=", op == "=")
        self.emit(depth, f"{dst} {op} {value}")
        self.store(name, region)

    def loop_statement(self, depth, name=None):
        """for i in range(lo, A.shape[0] - hi): X[i] = <row expression>"""
        name = name or self.pick(["A", "B", "C"])
        lo, hi = self.pick(HALOS), self.pick(HALOS)
        self.emit(depth, f"for i in range({lo}, A.shape[0]{_plus(-hi)}):" if lo else
                  f"for i in range(A.shape[0]{_plus(-hi)}):")
        region = [("var", "i", lo, hi)]
        if self.ndim == 2:
            if self.draw(st.booleans()):
                lo1, hi1 = self.pick(HALOS), self.pick(HALOS)
                self.emit(depth + 1, f"for j in range({lo1}, A.shape[1]{_plus(-hi1)}):" if lo1 else
                          f"for j in range(A.shape[1]{_plus(-hi1)}):")
                region.append(("var", "j", lo1, hi1))
                depth += 1
            else:
                region.append(("slice", self.pick(HALOS), self.pick(HALOS)))
        op = self.pick(["=", "=", "+="])
        dst = self.format_index(name, region, False)
        self.emit(depth + 1, f"{dst} {op} {self.expr(region)}")
        self.store(name, [("slice", lo, hi)] + [("slice", p[2], p[3]) if p[0] == "var" else p for p in region[1:]])

    def whole_in_place(self, depth, name=None):
        """C *= s, C += alpha * A, ..."""
        name = name or self.pick(["A", "B", "C"])
        region = [("slice", 0, 0)] * self.ndim
        op = self.pick(["+=", "-=", "*="])
        value = self.pick(["s", self.pick(CONSTANTS[self.dtype])]) if self.draw(st.booleans()) else self.expr(region)
        self.emit(depth, f"{name} {op} {value}")
        self.store(name, region)

    def temporary_statement(self, depth, name=None):
        """``t = <array expression over a region>``, then a slice assignment
        reading ``t`` through shifted views (and ``np.where``): temporaries
        the stream pass computes inside the consumer's loop."""
        name = name or self.pick(["A", "B", "C"])
        t = f"t{next(_counter)}"
        t_region = [("slice", self.pick(HALOS), self.pick(HALOS)) for _ in range(self.ndim)]
        self.emit(depth, f"{t} = {self.array_expr(t_region)}")
        region = [("slice", lo + self.pick((0, 1)), hi + self.pick((0, 1))) for _, lo, hi in t_region]

        def view_of_t():
            parts = []
            for (_, lo, hi), (_, lo2, hi2) in zip(t_region, region):
                extra = lo2 + hi2 - lo - hi
                start = self.draw(st.integers(0, extra))
                parts.append(("slice", start, extra - start))
            return _index_text(t, parts)

        first, second = view_of_t(), view_of_t()
        value = self.pick([f"{first} {self.pick(['+', '-', '*'])} {self.expr(region, 1)}",
                           f"np.where({first} > {second}, {first}, {self.expr(region, 1)})"])
        self.emit(depth, f"{self.format_index(name, region, False)} = {value}")
        self.store(name, region)

    def statement(self, depth):
        self.pick([self.slice_statement, self.slice_statement, self.slice_statement, self.loop_statement,
                   self.whole_in_place, self.temporary_statement])(depth)

    def time_loop(self):
        self.body = next(_counter) + 1
        self.emit(0, "for _ in range(steps):")
        if self.draw(st.booleans()):
            # ping-pong: B from A, then A from B by the same statement
            start = len(self.lines)
            stores = len(self.stores)
            self.pick([self.slice_statement, self.loop_statement])(1, "B")
            swap = str.maketrans("AB", "BA")
            self.lines.extend(line.translate(swap) for line in self.lines[start:])
            self.stores.extend(("A", body, region) for _, body, region in self.stores[stores:])
        else:
            for _ in range(self.draw(st.integers(1, 2))):
                self.statement(1)
        self.body = 0

    def fresh_return(self):
        kind = self.pick(["none", "expr", "name", "fill", "fill", "enumerate"])
        full = [("slice", 0, 0)] * self.ndim
        if kind == "expr":
            region = [("slice", self.pick(HALOS), self.pick(HALOS)) for _ in range(self.ndim)]
            self.emit(0, f"return {self.array_expr(region)}")
        elif kind == "name":
            self.emit(0, f"r = {self.array_expr(full)}")
            self.emit(0, "return r")
        elif kind in ("fill", "enumerate"):
            source = self.pick(["A", "B", "C"])
            self.emit(0, f"r = np.empty_like({source})")
            if kind == "enumerate":
                self.emit(0, f"for i, x in enumerate({source}):")
            else:
                self.emit(0, f"for i in range({source}.shape[0]):")
            region = [("var", "i", 0, 0)]
            depth = 1
            if self.ndim == 2:
                if kind == "fill" and self.draw(st.booleans()):
                    self.emit(1, f"for j in range({source}.shape[1]):")
                    region.append(("var", "j", 0, 0))
                    depth = 2
                else:
                    region.append(("slice", 0, 0))
            head = "x" if kind == "enumerate" else self.operand(region)
            self.emit(depth, f"{self.format_index('r', region, False)} = {head} "
                             f"{self.pick(['+', '-', '*'])} {self.expr(region, 1)}")
            self.emit(0, "return r")


@st.composite
def kernels(draw, ndim, dtype):
    b = Builder(draw, ndim, dtype)
    for _ in range(draw(st.integers(0, 2))):
        b.statement(0)
    if draw(st.booleans()):
        b.time_loop()
        if draw(st.booleans()):
            b.statement(0)
    b.fresh_return()
    if len(b.lines) == 1:
        b.slice_statement(0)
    double = any(x[0] == y[0] and x[1] == y[1] != 0 and _may_overlap(x[2], y[2])
                 for x, y in itertools.combinations(b.stores, 2))
    return Kernel(source="\n".join(b.lines) + "\n", ndim=ndim, dtype=dtype, v_one=b.v_one, w_one=b.w_one,
                  min_extent=b.min_extent, double_write=double, stores=b.stores)


# ---- data


def _values(rng, size, dtype):
    """Random, never zero."""
    sign = rng.choice([-1, 1], size)
    if dtype == np.int64:
        return (rng.integers(1, 6, size) * sign).astype(dtype)
    return (rng.uniform(0.5, 2.0, size) * sign).astype(dtype)


def _view(rng, shape, dtype, kind):
    """(view, the buffer under it)"""
    size = int(np.prod(shape))
    if kind == "c":
        buf = _values(rng, size, dtype).reshape(shape)
        return buf, buf
    if kind == "off":                   # C-contiguous, one element into its buffer
        buf = _values(rng, size + 1, dtype)
        return buf[1:].reshape(shape), buf
    if kind == "rev":
        buf = _values(rng, size, dtype).reshape(shape)
        return buf[(slice(None, None, -1),) * len(shape)], buf
    buf = _values(rng, size * 2, dtype).reshape(shape[:-1] + (2 * shape[-1],))
    return buf[..., ::2], buf


def make_args(kernel, shape, views, seed, alias="none"):
    """Arguments (A, B, C, v, w, s, steps) and the buffers under the arrays.
    ``alias``: "same" passes A as B too, "shifted" passes A and B as views
    of one buffer, one element apart."""
    rng = np.random.default_rng(seed)
    dtype = DTYPES[kernel.dtype]
    shapes = {"A": shape, "B": shape, "C": shape, "v": (1 if kernel.v_one else shape[-1],),
              "w": tuple(1 if one else n for one, n in zip(kernel.w_one, shape))}
    args, buffers = [], []
    for name, kind in zip("ABCvw", views):
        view, buf = _view(rng, shapes[name], dtype, kind)
        args.append(view)
        buffers.append(buf)
    if alias == "same":
        args[1], buffers[1] = args[0], buffers[0]
    elif alias == "shifted":
        size = int(np.prod(shape))
        buf = _values(rng, size + 1, dtype)
        args[0], args[1] = buf[:-1].reshape(shape), buf[1:].reshape(shape)
        buffers[0] = buffers[1] = buf
    s = int(rng.integers(1, 4)) * int(rng.choice([-1, 1])) if dtype == np.int64 else float(rng.uniform(0.5, 2.0))
    return args + [s, int(rng.integers(0, 4))], buffers


@st.composite
def data_sets(draw, kernel):
    sizes = SIZES if kernel.ndim == 1 else SIZES_2D

    def shape():
        return tuple(draw(st.sampled_from([n for n in sizes if n >= kernel.min_extent[d]])) for d in range(kernel.ndim))
    views = tuple(draw(st.sampled_from(VIEWS)) for _ in range(5))
    seed = draw(st.integers(0, 2**32 - 1))
    alias = draw(st.sampled_from(["none", "none", "none", "none", "same", "shifted"]))
    # two more shapes with the same views, run where the signature is the same (no compile)
    return [(shape(), views, seed + n, alias) for n in range(3)]


# ---- running


_COMPILED = {}


def compiled(source):
    if source not in _COMPILED:
        namespace = {"np": np}
        exec(compile(source, f"<generated array kernel {len(_COMPILED)}>", "exec"), namespace)
        func = namespace["kernel"]
        _COMPILED[source] = (sj.stream_kernel(stream_stores=stream_stores_for(source))(func), numba.njit(func))
    return _COMPILED[source]


def stream_stores_for(source):
    """True for half the kernels; for the other half every array the kernel
    stores to or makes, by name (``"return"`` for an unnamed returned
    expression): what True leaves plain (fresh outputs, arrays only updated
    in place) is then rewritten and streamed too."""
    if zlib.crc32(source.encode()) % 2:
        return True
    stored = set(re.findall(r"\b([ABC])(?:\[[^=\n]*\])?\s*[-+*]?=(?!=)", source))
    made = {"r"} if re.search(r"^\s*r = ", source, re.M) else set()
    returned = {"return"} if re.search(r"^\s*return (?!r$)", source, re.M) else set()
    return sorted(stored | made | returned) or True


def assert_same(got, want, label):
    if isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray) and got.dtype == want.dtype, (label, type(got), type(want))
        np.testing.assert_array_equal(got, want, err_msg=label, strict=True)
    else:
        assert type(got) is type(want) and got == want, (label, got, want)


def check_kernel(kernel, runs, stats):
    """Runs ``kernel`` under both compilers on each data set; returns why it
    was skipped (or None)."""
    streamed, plain = compiled(kernel.source)
    first = None
    for shape, views, seed, alias in runs:
        label = f"shape {shape}, views {views}, seed {seed}, alias {alias}"
        want_args, want_buffers = make_args(kernel, shape, views, seed, alias)
        got_args, got_buffers = make_args(kernel, shape, views, seed, alias)
        signature = tuple(map(numba.typeof, want_args))
        if first is not None and signature != first:
            continue        # another layout (a size 0 or 1 view is contiguous): would compile again
        first = signature
        try:
            want = plain(*want_args)
        except Exception as njit_error:
            try:
                streamed(*got_args)
            except Exception as error:
                assert type(error) is type(njit_error), (label, repr(error), repr(njit_error))
            else:
                raise AssertionError(f"{label}: njit raised {njit_error!r}, stream_kernel did not")
            stats["njit_error"] += 1
            note(f"njit rejects it ({label}): {njit_error!r}")
            return "njit"
        try:
            got = streamed(*got_args)
        except StreamLegalityError as error:
            assert kernel.double_write, f"rejected, but no element is written twice in one nest: {error}"
            stats["legality"] += 1
            return "legality"
        assert_same(got, want, f"{label}: return value")
        for name, g, w in zip("ABCvw", got_args, want_args):
            assert_same(g, w, f"{label}: {name}")
        for name, g, w in zip("ABCvw", got_buffers, want_buffers):
            assert_same(g, w, f"{label}: buffer under {name}")
        stats["runs"] += 1
    # every path from a streamed store to the return passes a store fence
    assert streamed.stream_report(first).unfenced_stores == 0, str(streamed.stream_report(first))
    return None


@pytest.mark.parametrize("ndim", [1, 2])
@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_generated_array_kernels_match_njit(dtype, ndim):
    stats = collections.Counter()

    # derandomized, with a seed per test so that the tests draw different kernels
    @fixed_seed(zlib.crc32(f"{dtype}-{ndim}".encode()))
    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=[HealthCheck.too_slow])
    @given(data=st.data())
    def check(data):
        kernel = data.draw(kernels(ndim, dtype), label="kernel")
        note(f"double_write={kernel.double_write}\n{kernel.source}")
        runs = data.draw(data_sets(kernel), label="data")
        stats["examples"] += 1
        skipped = check_kernel(kernel, runs, stats)
        assume(skipped != "njit")

    check()
    assert stats["njit_error"] <= max(2, stats["examples"] // 10), stats
    assert stats["runs"] >= EXAMPLES, stats


def test_generated_slice_assignment_streams():
    """A same-shape float64 slice assignment into a parameter array, built by
    the generator's index formatting with fixed choices, streams."""
    region = [("slice", 1, 1)]                                  # A[1:-1]
    value = f"{_index_text('B', [('slice', 2, 0)])} * 2.0 + {_index_text('C', [('slice', 0, 2)])}"
    source = f"def kernel(A, B, C, v, w, s, steps):\n    {_index_text('A', region)} = {value}\n"
    kernel = Kernel(source, 1, "float64", False, (False,), [0], False)
    streamed, plain = compiled(source)
    got, _ = make_args(kernel, (1001,), ("c",) * 5, 7)
    want, _ = make_args(kernel, (1001,), ("c",) * 5, 7)
    streamed(*got)
    plain(*want)
    for g, w in zip(got[:5], want[:5]):
        np.testing.assert_array_equal(g, w, strict=True)
    report = streamed.stream_report()
    assert report.arrays["A"].nt_vector_stores > 0, (source, str(report))
