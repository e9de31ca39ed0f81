"""Kernels shaped the way Numba users write them, each
checked two ways:

- correctness: the streamjit kernel and the same function under
  ``numba.njit`` (same options) are run on identical random data (odd sizes,
  misaligned ``a[1:]`` views, reversed and strided views where the kernel
  allows them, empty arrays); every array argument, its whole base buffer
  (so a write outside a view is seen) and the return value must be equal;
- streaming: either the report of the C-contiguous signature shows
  non-temporal stores credited to the array (Halide's per-stage rule allows
  streaming it), or compiling raises ``StreamLegalityError`` naming the
  cause and the ``file:line`` of the store (or of the loop that breaks the
  rule).

The last section holds kernels that once gave wrong results or crashed.
Kernels are module-level so each signature compiles once for all tests;
``@stream_kernel`` below is ``@sj.stream_kernel`` applied on first use, so a
kernel that cannot even be decorated fails its own tests, not the module.
"""

import builtins
import functools
import inspect
import os
import re
import types
import warnings

import numba
import numpy as np
import pytest
from numba import prange as pr  # `prange` under another name, as users import it

import streamjit as sj

THIS_FILE = os.path.abspath(__file__)
SEED = 1212

SIZES_1D = (0, 1, 7, 33, 1001, 4099)
SHAPES_2D = ((0, 5), (5, 0), (1, 1), (3, 17), (19, 67), (33, 130))
# "c": fresh C array; "off": C-contiguous view misaligned by one element;
# "rev": reversed; "step": every other element (layout 'A')
KINDS = ("c", "off", "rev", "step")


# ---------------------------------------------------------------- helpers

class Deferred:
    """A streamjit kernel built on first use. Decorating can fail (no source,
    an option not accepted, an eager compile); deferring it makes that fail
    the tests that use the kernel instead of this module's collection.
    ``py_func`` is the user's function, for the ``numba.njit`` reference."""

    def __init__(self, py_func, build):
        self.py_func = py_func
        self.__name__ = py_func.__name__
        self._build = build
        self._kernel = None

    @property
    def kernel(self):
        if self._kernel is None:
            try:
                self._kernel = self._build()
            except AttributeError as error:   # not swallowed by __getattr__
                raise RuntimeError(f"decorating {self.__name__} failed: {error!r}") from error
        return self._kernel

    def __call__(self, *args):
        return self.kernel(*args)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.kernel, name)


def stream_kernel(*args, **options):
    """``@sj.stream_kernel(...)``, applied on first use (see Deferred)."""
    def decorate(func):
        return Deferred(func, lambda: sj.stream_kernel(*args, **options)(func))
    return decorate


def random_array(rng, shape, kind="c", dtype=np.float64):
    """Random values (never zeros) laid out as ``kind`` (see KINDS)."""
    shape = (shape,) if np.isscalar(shape) else tuple(shape)
    size = int(np.prod(shape))

    def values(n):
        return (rng.standard_normal(n) * 10 + 0.5).astype(dtype)

    if kind == "c":
        return values(size).reshape(shape)
    if kind == "off":
        return values(size + 1)[1:].reshape(shape)
    if kind == "rev":
        return values(size).reshape(shape)[(slice(None, None, -1),) * len(shape)]
    if kind == "step":
        return values(2 * size).reshape(shape[:-1] + (2 * shape[-1],))[..., ::2]
    raise ValueError(kind)


def aligned_view(rng, shape, offset, dtype=np.float64):
    """Random C-contiguous array whose data starts ``offset`` elements after a
    64-byte boundary: alignment relative to other arrays is under control."""
    shape = (shape,) if np.isscalar(shape) else tuple(shape)
    size = int(np.prod(shape))
    itemsize = np.dtype(dtype).itemsize
    buf = (rng.standard_normal(size + 128 // itemsize + offset) * 10 + 0.5).astype(dtype)
    start = (-buf.ctypes.data % 64) // itemsize + offset
    view = buf[start:start + size].reshape(shape)
    assert (view.ctypes.data - offset * itemsize) % 64 == 0
    return view


def reference(kernel, **options):
    """The user's function under plain numba.njit (one dispatcher per
    function and options, so that parametrized tests compile it once)."""
    return _njit(kernel.py_func, tuple(sorted(options.items())))


@functools.cache
def _njit(func, options):
    return numba.njit(**dict(options))(func)


def assert_same(kernel, ref, make_args, close=False):
    """Run ``kernel`` and ``ref`` on two identical argument sets made by
    ``make_args(rng)``; compare return values and every array argument,
    including its base buffer."""
    got_args = make_args(np.random.default_rng(SEED))
    want_args = make_args(np.random.default_rng(SEED))
    got = kernel(*got_args)
    want = ref(*want_args)
    check = (lambda g, w: np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-10)) if close \
        else np.testing.assert_array_equal
    if want is None:
        assert got is None
    else:
        check(got, want)
    for g, w in zip(got_args, want_args):
        if isinstance(g, np.ndarray):
            check(g, w)
            if g.base is not None:
                check(g.base, w.base)


def assert_same_over(kernel, ref, cases, make_args, close=False):
    """``assert_same`` for each case (a size or shape with a view kind); the
    failing case is named in the error."""
    for case in cases:
        try:
            assert_same(kernel, ref, lambda rng: make_args(rng, *case), close=close)
        except AssertionError as error:
            raise AssertionError(f"case {case}: {error}") from None


def cases(sizes, kinds):
    return [(size, kind) for size in sizes for kind in kinds]


def sig_of(*args):
    return tuple(numba.typeof(a) for a in args)


def report_for(kernel, make_args):
    """The stream report of the signature ``make_args`` compiles (called once)."""
    args = make_args(np.random.default_rng(SEED))
    kernel(*args)
    report = kernel.stream_report(sig_of(*args))
    assert report.unfenced_stores == 0, str(report)   # fences post-dominate the streamed stores
    return report


def nt_stores(report, name):
    rep = report.arrays[name]
    return rep.nt_vector_stores + rep.nt_scalar_stores


def line_of(func, marker):
    """Line number in its file of the first source line of ``func`` containing ``marker``."""
    func = getattr(func, "py_func", func)
    lines, first = inspect.getsourcelines(func)
    return first + next(i for i, line in enumerate(lines) if marker in line)


def expect_legality_error(kernel, args, cause, lines, filename=THIS_FILE):
    """Compiling ``kernel`` for ``args`` raises StreamLegalityError whose message
    matches ``cause`` and cites ``filename:line`` for one of ``lines``."""
    with pytest.raises(sj.StreamLegalityError, match=cause) as info:
        kernel(*args)
    message = str(info.value)
    assert any(re.search(rf"{re.escape(filename)}:{line}\b", message) for line in lines), message
    return message


# ============================================================ no source file

EXEC_SOURCE = """
def axpy(out, a, b, q):
    for i in range(a.shape[0]):
        out[i] = q * a[i] + b[i]
"""
_exec_namespace = {}
exec(EXEC_SOURCE, _exec_namespace)
exec_axpy = stream_kernel(stream_stores=True)(_exec_namespace["axpy"])

# the same without exec: compile() to a code object, then types.FunctionType
GENERATED_SOURCE = """
def smooth(out, a):
    n = a.shape[0]
    for i in range(1, n - 1):
        out[i] = (a[i - 1] + a[i] + a[i + 1]) / 3.0
"""
GENERATED_FILE = "<generated smooth>"
_module_code = compile(GENERATED_SOURCE, GENERATED_FILE, "exec")
_function_code = next(c for c in _module_code.co_consts if isinstance(c, types.CodeType))
generated_smooth = stream_kernel(stream_stores=["out"])(
    types.FunctionType(_function_code, {"__builtins__": builtins}, "smooth"))

ILLEGAL_EXEC_SOURCE = """
def last_wins(out, a):
    for i in range(a.shape[0]):
        for j in range(2):
            out[i] = a[i] + j
"""
_illegal_namespace = {}
exec(ILLEGAL_EXEC_SOURCE, _illegal_namespace)
exec_last_wins = stream_kernel(stream_stores=["out"])(_illegal_namespace["last_wins"])


def test_exec_kernel_matches_njit():
    assert_same_over(exec_axpy, reference(exec_axpy), cases(SIZES_1D, KINDS),
                     lambda rng, n, kind: (random_array(rng, n, kind), random_array(rng, n, "off"),
                                           random_array(rng, n), 2.5))


def test_exec_kernel_streams():
    report = report_for(exec_axpy, lambda rng: (random_array(rng, 1001, "off"), random_array(rng, 1001),
                                                random_array(rng, 1001), 2.5))
    assert report.arrays["out"].nt_vector_stores > 0 and report.fences > 0


def test_function_type_kernel_matches_njit():
    assert_same_over(generated_smooth, reference(generated_smooth), cases(SIZES_1D, KINDS),
                     lambda rng, n, kind: (random_array(rng, n, kind), random_array(rng, n, kind)))


def test_function_type_kernel_streams():
    report = report_for(generated_smooth, lambda rng: (random_array(rng, 1001, "off"), random_array(rng, 1001)))
    assert report.arrays["out"].nt_vector_stores > 0 and report.fences > 0


def test_exec_kernel_legality_error_cites_string_line():
    # `out[i]` in a `j` loop: the same element each iteration of it. No source
    # file exists; the error cites Numba's location of the store: <string>:5.
    expect_legality_error(exec_last_wins, (np.ones(8), np.ones(8)), r"'out'.*'j'|'j'.*'out'", [5],
                          filename="<string>")


# ============================================================ outer time loops

@stream_kernel(stream_stores=True)
def jacobi_steps(A, B, steps):
    n, m = A.shape
    for t in range(steps):
        for i in range(1, n - 1):
            for j in range(1, m - 1):
                B[i, j] = 0.25 * (A[i - 1, j] + A[i + 1, j] + A[i, j - 1] + A[i, j + 1])
        for i in range(1, n - 1):
            for j in range(1, m - 1):
                A[i, j] = 0.25 * (B[i - 1, j] + B[i + 1, j] + B[i, j - 1] + B[i, j + 1])


@stream_kernel(stream_stores=True)
def heat3d_steps(u, v, steps, k):
    nx, ny, nz = u.shape
    for t in range(steps):
        for x in range(1, nx - 1):
            for y in range(1, ny - 1):
                for z in range(1, nz - 1):
                    v[x, y, z] = u[x, y, z] + k * (u[x - 1, y, z] + u[x + 1, y, z] + u[x, y - 1, z]
                                                   + u[x, y + 1, z] + u[x, y, z - 1] + u[x, y, z + 1]
                                                   - 6.0 * u[x, y, z])
        for x in range(1, nx - 1):
            for y in range(1, ny - 1):
                for z in range(1, nz - 1):
                    u[x, y, z] = v[x, y, z]


@stream_kernel(stream_stores=True)
def smooth_until(u, v, tol, max_iter):
    n = u.shape[0]
    it = 0
    change = tol + 1.0
    while change > tol and it < max_iter:
        for i in range(1, n - 1):
            v[i] = 0.5 * (u[i - 1] + u[i + 1])
        change = 0.0
        for i in range(1, n - 1):
            change = max(change, abs(v[i] - u[i]))
        for i in range(1, n - 1):
            u[i] = v[i]
        it += 1
    return it


@stream_kernel(stream_stores=["out"])
def repeated_write(out, a, steps):
    for i in range(a.shape[0]):
        for t in range(steps):          # <- inner loop not selecting the element
            out[i] = a[i] + t           # <- repeated store


def test_jacobi_time_loop_matches_njit():
    assert_same_over(jacobi_steps, reference(jacobi_steps), cases(SHAPES_2D, ("c", "off", "rev")),
                     lambda rng, shape, kind: (random_array(rng, shape, kind), random_array(rng, shape, kind), 3))


def test_jacobi_time_loop_streams_both_arrays():
    report = report_for(jacobi_steps, lambda rng: (random_array(rng, (40, 130)), random_array(rng, (40, 130)), 2))
    assert report.arrays["A"].nt_vector_stores > 0 and report.arrays["B"].nt_vector_stores > 0
    assert report.fences >= 2   # one after each of the two nests, in every time step


def test_heat3d_time_loop_matches_njit():
    assert_same_over(heat3d_steps, reference(heat3d_steps),
                     cases(((0, 3, 3), (3, 3, 3), (5, 6, 37), (9, 10, 67)), ("c", "off", "rev")),
                     lambda rng, shape, kind: (random_array(rng, shape, kind), random_array(rng, shape, kind),
                                               3, 0.1))


def test_heat3d_time_loop_streams():
    report = report_for(heat3d_steps, lambda rng: (random_array(rng, (6, 7, 70)), random_array(rng, (6, 7, 70)),
                                                   2, 0.1))
    assert report.arrays["u"].nt_vector_stores > 0 and report.arrays["v"].nt_vector_stores > 0
    assert report.fences >= 2


def test_while_convergence_loop_matches_njit():
    assert_same_over(smooth_until, reference(smooth_until), cases(SIZES_1D, KINDS),
                     lambda rng, n, kind: (random_array(rng, n, kind), random_array(rng, n, kind), 1e-3, 40))


def test_while_convergence_loop_streams():
    report = report_for(smooth_until, lambda rng: (random_array(rng, 1001), random_array(rng, 1001), 1e-3, 5))
    assert report.arrays["u"].nt_vector_stores > 0 and report.arrays["v"].nt_vector_stores > 0
    assert report.fences >= 2


def test_inner_loop_not_selecting_the_element_is_rejected():
    # `for i: for t: out[i] = ...` writes out[i] `steps` times per execution
    # of the nest: the error names loop 't' and cites the store or that loop.
    lines = [line_of(repeated_write, "# <- repeated store"),
             line_of(repeated_write, "# <- inner loop not selecting")]
    expect_legality_error(repeated_write, (np.ones(10), np.ones(10), 3), r"'out'", lines)
    with pytest.raises(sj.StreamLegalityError, match=r"'t'"):
        repeated_write(np.ones(10), np.ones(10), 3)
    # numba.njit compiles and runs it: the last step wins
    a, out = random_array(np.random.default_rng(SEED), 9), np.ones(9)
    reference(repeated_write)(out, a, 3)
    np.testing.assert_array_equal(out, a + 2)
    # stream_stores=True names no array: it compiles, plain, as numba.njit does
    unnamed = sj.stream_kernel(stream_stores=True)(repeated_write.py_func)
    assert_same_over(unnamed, reference(repeated_write), cases(SIZES_1D, KINDS),
                     lambda rng, n, kind: (random_array(rng, n, kind), random_array(rng, n, kind), 3))
    assert "out" not in unnamed.stream_result().streamed_stores


# ============================================================ sibling loops reusing a name

@stream_kernel(stream_stores=True)
def sibling_rows(A, B, x):
    n, m = x.shape
    for i in range(n):
        for j in range(m):
            A[i, j] = 2.0 * x[i, j]
        for j in range(m):
            B[i, j] = x[i, j] + A[i, j]


@stream_kernel(stream_stores=["A"])
def sibling_same_array(A, x):
    n, m = x.shape
    for i in range(n):
        for j in range(m):
            A[i, j] = 2.0 * x[i, j]     # <- first store
        for j in range(m):
            A[i, j] = x[i, j] + 1.0     # <- second store


def test_sibling_loops_reusing_j_match_njit():
    assert_same_over(sibling_rows, reference(sibling_rows), cases(SHAPES_2D, KINDS),
                     lambda rng, shape, kind: (random_array(rng, shape, kind), random_array(rng, shape, kind),
                                               random_array(rng, shape, kind)))


def test_sibling_loops_reusing_j_stream():
    report = report_for(sibling_rows, lambda rng: (random_array(rng, (19, 67)), random_array(rng, (19, 67)),
                                                   random_array(rng, (19, 67))))
    assert report.arrays["A"].nt_vector_stores > 0 and report.arrays["B"].nt_vector_stores > 0


def test_sibling_loops_storing_the_same_elements_are_separate_stages():
    # Both j loops write row i within one iteration of the i loop: two nests
    # run one after the other, Halide's separate stages (NPBench's vadv and
    # gramschmidt have this shape), each streamed and fenced after it runs.
    assert_same_over(sibling_same_array, reference(sibling_same_array), cases(SHAPES_2D, KINDS),
                     lambda rng, shape, kind: (random_array(rng, shape, kind), random_array(rng, shape, kind)))
    report = report_for(sibling_same_array, lambda rng: (random_array(rng, (19, 67)), random_array(rng, (19, 67))))
    assert report.arrays["A"].nt_vector_stores > 0 and report.peeled_loops == 2 and report.fences >= 2
    assert not report.unfenced_stores


# ============================================================ stores the syntax tree cannot see

@numba.njit(inline="always")
def put(arr, i, value):
    arr[i] = value


@stream_kernel(stream_stores=True)
def through_helper(out, a):
    for i in range(a.shape[0]):
        put(out, i, 3.0 * a[i] - 1.0)


@stream_kernel(stream_stores=["out"])
def through_alias(out, a):
    o = out
    for i in range(a.shape[0]):
        o[i] = a[i] - 1.0


@stream_kernel(stream_stores=True)
def chained_subscript(arr, img):
    for y in range(img.shape[0]):
        for x in range(img.shape[1]):
            arr[y][x] = 0.5 * img[y, x] + 1.0


@stream_kernel(stream_stores=["out"])
def row_stores(out, x):
    for i in range(x.shape[0]):
        out[i] = x[i]


@stream_kernel(stream_stores=True)
def tuple_index(out, a):
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            idx = (i, j)
            out[idx] = a[idx] * a[idx] + 1.0


@stream_kernel(stream_stores=True)
def renamed_prange(out, a, b):
    for i in pr(a.shape[0]):
        out[i] = a[i] * b[i]


@stream_kernel(stream_stores=True, parallel=True)
def renamed_prange_parallel(out, a, b):
    for i in pr(a.shape[0]):
        out[i] = a[i] * b[i]


@stream_kernel(stream_stores=True)
def folded_offset(out, a):
    t = 1
    for i in range(a.shape[0] - t):
        out[i + t] = a[i] + a[i + t]


HALO = 2    # a module global: Numba freezes it as a compile-time constant


@stream_kernel(stream_stores=True)
def folded_global(out, a):
    lo, hi = HALO, a.shape[0] - HALO
    for i in range(lo, hi):
        out[i - HALO + 1] = a[i - HALO] + a[i + HALO]


@pytest.mark.parametrize("kernel", [through_helper, through_alias, renamed_prange, renamed_prange_parallel,
                                    folded_offset, folded_global], ids=lambda k: k.__name__)
def test_hidden_1d_stores_match_njit(kernel):
    nargs = len(inspect.signature(kernel.py_func).parameters)
    parallel = kernel is renamed_prange_parallel
    assert_same_over(kernel, reference(kernel, parallel=parallel), cases(SIZES_1D, KINDS),
                     lambda rng, n, kind: tuple(random_array(rng, n, kind if p == 0 else "off")
                                                for p in range(nargs)))


@pytest.mark.parametrize("kernel", [through_helper, through_alias, renamed_prange, renamed_prange_parallel,
                                    folded_offset, folded_global], ids=lambda k: k.__name__)
def test_hidden_1d_stores_stream(kernel):
    nargs = len(inspect.signature(kernel.py_func).parameters)
    report = report_for(kernel, lambda rng: tuple(random_array(rng, 4099, "off") for _ in range(nargs)))
    assert report.arrays["out"].nt_vector_stores > 0 and report.fences > 0


@pytest.mark.parametrize("kernel", [through_helper, through_alias], ids=lambda k: k.__name__)
def test_named_array_stored_through_helper_or_alias_gives_no_warning(kernel):
    # `out` is stored to (in the inlined helper, through the alias): the
    # "never stores to it" StreamWarning would be false.
    with warnings.catch_warnings():
        warnings.simplefilter("error", sj.StreamWarning)
        fresh = sj.stream_kernel(stream_stores=["out"])(kernel.py_func)
        fresh(random_array(np.random.default_rng(SEED), 33), random_array(np.random.default_rng(SEED), 33))


@pytest.mark.parametrize("kernel", [chained_subscript, row_stores, tuple_index], ids=lambda k: k.__name__)
def test_hidden_2d_stores_match_njit(kernel):
    assert_same_over(kernel, reference(kernel), cases(SHAPES_2D, KINDS),
                     lambda rng, shape, kind: (random_array(rng, shape, kind), random_array(rng, shape)))


@pytest.mark.parametrize("kernel, name", [(chained_subscript, "arr"), (row_stores, "out"), (tuple_index, "out")],
                         ids=lambda k: getattr(k, "__name__", k))
def test_hidden_2d_stores_stream(kernel, name):
    # Each element of a row is written once per execution of the i nest; the
    # rows are C-contiguous, so the row copy (a loop Numba generates for
    # `out[i] = x[i]`; numba.njit vectorizes it) is as vectorizable as the
    # explicit inner loops of the other two kernels.
    report = report_for(kernel, lambda rng: (random_array(rng, (19, 67)), random_array(rng, (19, 67))))
    assert report.arrays[name].nt_vector_stores > 0 and report.fences > 0


# ============================================================ false rejections

@stream_kernel(stream_stores=True)
def enumerated(out, a):
    for i, x in enumerate(a):
        out[i] = 2 * x


@stream_kernel(stream_stores=True, parallel=True)
def pndindex_scale(out, a):
    for idx in numba.pndindex(a.shape):
        out[idx] = 2.0 * a[idx] + 1.0


@stream_kernel(stream_stores=True)
def scale_in_place(B, alpha):
    B *= alpha


def test_enumerate_matches_njit():
    assert_same_over(enumerated, reference(enumerated), cases(SIZES_1D, KINDS),
                     lambda rng, n, kind: (random_array(rng, n, kind), random_array(rng, n, kind)))


def test_enumerate_streams():
    # The index counts 0, 1, ... once per iteration: legal. numba.njit does
    # vectorize this loop, but it is an iterator loop, not a range() loop,
    # and vector NT stores need the aligned peel of a range loop (proven
    # alignment); scalar NT stores need only element alignment. So the
    # honest minimum is some NT store (vector ones are welcome).
    report = report_for(enumerated, lambda rng: (random_array(rng, 1001, "off"), random_array(rng, 1001)))
    assert nt_stores(report, "out") > 0 and report.fences > 0


def test_pndindex_matches_njit():
    assert_same_over(pndindex_scale, reference(pndindex_scale, parallel=True), cases(SHAPES_2D, KINDS),
                     lambda rng, shape, kind: (random_array(rng, shape, kind), random_array(rng, shape, kind)))


def test_pndindex_streams():
    # Every index tuple is visited once. Numba's worker for a 2-D pndindex
    # is the same nest as a prange over rows with an inner range loop (a
    # counted innermost loop over a contiguous row; numba.njit vectorizes
    # it), so vector NT stores are the honest expectation.
    report = report_for(pndindex_scale, lambda rng: (random_array(rng, (19, 67)), random_array(rng, (19, 67))))
    assert report.arrays["out"].nt_vector_stores > 0 and report.fences > 0


def test_in_place_operator_on_parameter_compiles_and_matches_njit():
    # `B *= alpha` is not a reassignment of B. Streaming it is the
    # array-expression tests' job; here it must compile, raise nothing and equal njit.
    assert_same_over(scale_in_place, reference(scale_in_place),
                     cases([(0,), (7,), (1001,), (0, 3), (3, 17), (19, 67)], KINDS),
                     lambda rng, shape, kind: (random_array(rng, shape, kind), 1.5))


# ============================================================ closures, options, eager signatures

def make_late_bound_kernel(decorator):
    @decorator
    def scaled(out, a):
        for i in range(a.shape[0]):
            out[i] = factor * a[i] + offset

    factor = 3.0        # bound after the decorator ran, before the first call
    offset = -0.5
    return scaled


late_bound = Deferred(make_late_bound_kernel(lambda func: func),
                      lambda: make_late_bound_kernel(sj.stream_kernel(stream_stores=True)))


def test_closure_bound_after_decoration_matches_njit():
    assert_same_over(late_bound, reference(late_bound), cases(SIZES_1D, KINDS),
                     lambda rng, n, kind: (random_array(rng, n, kind), random_array(rng, n, kind)))


def test_closure_bound_after_decoration_streams():
    report = report_for(late_bound, lambda rng: (random_array(rng, 1001, "off"), random_array(rng, 1001)))
    assert report.arrays["out"].nt_vector_stores > 0


def test_nopython_true_is_accepted():
    @sj.stream_kernel(stream_stores=["out"], nopython=True)
    def triad(out, b, c, q):
        for i in range(out.shape[0]):
            out[i] = b[i] + q * c[i]

    for n in (0, 17, 1001):
        assert_same(triad, reference(triad), lambda rng: (random_array(rng, n, "off"), random_array(rng, n),
                                                          random_array(rng, n), 0.5))
    report = report_for(triad, lambda rng: (random_array(rng, 1001), random_array(rng, 1001),
                                            random_array(rng, 1001), 0.5))
    assert report.arrays["out"].nt_vector_stores > 0


EAGER_SIG = "void(float64[::1], float64[::1])"


@stream_kernel(EAGER_SIG, stream_stores=["out"])
def eager_negate(out, a):
    for i in range(a.shape[0]):
        out[i] = -a[i]


def test_eager_signature_runs_and_streams():
    assert len(eager_negate.signatures) == 1
    for n in SIZES_1D:
        assert_same(eager_negate, reference(eager_negate),
                    lambda rng: (random_array(rng, n, "off"), random_array(rng, n, "off")))
    assert eager_negate.stream_report(eager_negate.signatures[0]).arrays["out"].nt_vector_stores > 0


@pytest.mark.parametrize("make", [
    lambda rng: (random_array(rng, 9, dtype=np.float32), random_array(rng, 9, dtype=np.float32)),
    lambda rng: (random_array(rng, 9, "rev"), random_array(rng, 9, "rev")),
    lambda rng: (random_array(rng, 9, "step"), random_array(rng, 9)),
], ids=["float32", "reversed", "strided"])
def test_eager_signature_does_not_compile_new_signatures(make):
    plain = numba.njit(EAGER_SIG)(eager_negate.py_func)
    with pytest.raises(Exception) as njit_error:
        plain(*make(np.random.default_rng(SEED)))
    assert isinstance(njit_error.value, TypeError)          # what numba.njit(sig) raises
    with pytest.raises(type(njit_error.value), match="No matching definition"):
        eager_negate(*make(np.random.default_rng(SEED)))
    assert len(eager_negate.signatures) == 1


# ============================================================ streamjit.stencil

def plus_zero(a):
    return a[1 + 0, 0] + a[-1, 0] - 0.5 * a[0, 2 * 1]


def named_offset(a):
    t = 1
    return a[t, 0] - a[0, -1] + a[0, t]


def assigns_to_input(a):
    a[0, 0] = 1.0
    return a[0, 1] + a[0, -1]


@pytest.mark.parametrize("kernel", [plus_zero, named_offset], ids=lambda k: k.__name__)
def test_stencil_constant_folded_indices_match_numba_stencil(kernel):
    expected_stencil, our_stencil = numba.stencil(kernel), sj.stencil(kernel)
    # C-contiguous inputs only (one signature: numba.stencil compiles slowly);
    # views are test_stencil.py's subject, constant folding is this one's.
    for shape, kind in cases([(1, 1), (3, 3), (19, 67)], ("c", "off")):
        a = random_array(np.random.default_rng(SEED), shape, kind)
        expected = expected_stencil(a)
        got = our_stencil(a)
        assert got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_array_equal(got, expected, err_msg=f"{shape} {kind}")


def test_stencil_assigning_to_its_input_is_rejected_like_numba_stencil():
    a = random_array(np.random.default_rng(SEED), (6, 9))
    with pytest.raises(Exception) as numba_error:
        numba.stencil(assigns_to_input)(a.copy())
    assert isinstance(numba_error.value, numba.core.errors.NumbaValueError)
    before = a.copy()
    with pytest.raises(type(numba_error.value), match="Assignments to arrays passed to stencil kernels"):
        sj.stencil(assigns_to_input)(a)
    np.testing.assert_array_equal(a, before)


# ============================================================ wrong results and a crash, fixed

@stream_kernel(stream_stores=True, stream_loads=True)
def diagonal_scale(x, b, L):
    for i in range(x.shape[0]):
        x[i] = b[i] * L[i, i]


@stream_kernel(stream_stores=True, stream_loads=True)
def skewed_load(out, A):
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = 2.0 * A[i + j, j] - 1.0


def _offsets(call):
    """Element offsets from a 64-byte boundary for destination and source: every
    other call co-aligned (the case that went wrong), the rest varied."""
    dst = call % 8
    src = dst if call % 2 == 0 else (call // 2 + 3) % 8
    return dst, src, (call // 16) % 8


def test_diagonal_load_with_stream_loads_over_many_calls():
    ref = reference(diagonal_scale)
    rng = np.random.default_rng(SEED)
    for call in range(200):
        n = (64, 67, 128, 101, 150)[call % 5]
        dst_off, src_off, b_off = _offsets(call)
        L = aligned_view(rng, (n, n), src_off)
        b = aligned_view(rng, n, b_off)
        x = aligned_view(rng, n, dst_off)
        x_ref = x.copy()
        diagonal_scale(x, b, L)
        ref(x_ref, b, L)
        np.testing.assert_array_equal(x, x_ref, err_msg=f"call {call}: n={n}, offsets {dst_off}, {src_off}")


def test_skewed_load_with_stream_loads_over_many_calls():
    ref = reference(skewed_load)
    rng = np.random.default_rng(SEED + 1)
    for call in range(200):
        n, m = ((5, 64), (7, 67), (3, 128), (9, 40), (4, 133))[call % 5]
        dst_off, src_off, _ = _offsets(call)
        A = aligned_view(rng, (n + m - 1, m), src_off)
        out = aligned_view(rng, (n, m), dst_off)
        out_ref = out.copy()
        skewed_load(out, A)
        ref(out_ref, A)
        np.testing.assert_array_equal(out, out_ref, err_msg=f"call {call}: {n}x{m}, offsets {dst_off}, {src_off}")


@stream_kernel(stream_stores=True, stream_loads=True, parallel=True)
def parallel_chained_store(arr, img):
    for y in sj.prange(img.shape[0]):
        for x in range(img.shape[1]):
            arr[y][x] = img[y, x] + 1.0


def test_parallel_chained_store_with_stream_loads_is_not_lost():
    assert_same_over(parallel_chained_store, reference(parallel_chained_store, parallel=True),
                     cases(SHAPES_2D, ("c", "off", "rev")),
                     lambda rng, shape, kind: (random_array(rng, shape, kind), random_array(rng, shape, kind)))


def test_parallel_chained_store_streams():
    report = report_for(parallel_chained_store, lambda rng: (random_array(rng, (19, 67)), random_array(rng, (19, 67))))
    assert report.arrays["arr"].nt_vector_stores > 0


@stream_kernel(stream_stores=True, stream_loads=True, parallel=True)
def prange_array_reduction(x):
    n = x.shape[0]
    y = np.zeros(4)
    for i in sj.prange(n):
        y += x[i]
    return y


@pytest.mark.parametrize("ndim", [1, 2], ids=["x-1d", "x-2d"])
def test_prange_array_reduction_with_stream_loads(ndim):
    # numba's docs: a whole-array reduction in prange. x 1-D: y += scalar;
    # x 2-D (n x 4): y += row. Summation order differs between threads.
    shapes = [(0,), (1,), (1001,)] if ndim == 1 else [(0, 4), (1, 4), (1001, 4)]
    assert_same_over(prange_array_reduction, reference(prange_array_reduction, parallel=True),
                     cases(shapes, ("c", "off")), lambda rng, shape, kind: (random_array(rng, shape, kind),),
                     close=True)
    for shape in shapes:
        x = random_array(np.random.default_rng(SEED), shape)
        expected = x.sum(axis=0) if x.ndim == 2 else np.full(4, x.sum())
        np.testing.assert_allclose(prange_array_reduction(x), expected, rtol=1e-10, atol=1e-10)


@stream_kernel(stream_stores=True, parallel=True)
def prange_rows(out, a):
    for i in sj.prange(a.shape[0]):
        for j in range(a.shape[1]):
            out[i, j] = 3.0 * a[i, j] + 1.0


def test_prange_rows_match_njit():
    assert_same_over(prange_rows, reference(prange_rows, parallel=True), cases(SHAPES_2D, ("c", "off", "rev")),
                     lambda rng, shape, kind: (random_array(rng, shape, kind), random_array(rng, shape, kind)))


def test_prange_rows_report_credits_the_stores():
    report = report_for(prange_rows, lambda rng: (random_array(rng, (19, 67)), random_array(rng, (19, 67))))
    out = report.arrays["out"]
    assert out.nt_vector_stores > 0 and report.machine_nt_vector_stores > 0
    assert not any("did not vectorize" in note for note in out.notes), out.notes


@stream_kernel(stream_stores=True, threshold=None)
def where_fluxes(out, a, coeff):
    # NPBench hdiff's shape: fluxes made by np.where, differenced by slices
    lap = 4.0 * a[1:-1, :] - (a[2:, :] + a[:-2, :])
    flux = np.where(lap[1:, :] * (a[2:-1, :] - a[1:-2, :]) > 0, 0, lap[1:, :])
    out[:, :] = a[1:-3, :] - coeff * (flux[1:, :] - flux[:-1, :])


def test_where_results_are_read_by_a_vectorized_streamed_loop():
    """NPBench hdiff (0.96x of the same code never streamed on an
    AMD EPYC Zen 2): the fused loop read ``flux``, np.where's result, as an
    unknown array (Python's wraparound, a run-time stride), so it stayed
    scalar, one `movnti` per element. np.where's result is an array the
    kernel makes: read in bounds and contiguous, the loop vectorizes."""
    def make(rng, rows, kind):
        return (random_array(rng, (rows, 37), kind), random_array(rng, (rows + 4, 37)),
                random_array(rng, (rows, 37)))
    assert_same_over(where_fluxes, reference(where_fluxes), cases((1, 5, 40), ("c", "off")), make)
    report = report_for(where_fluxes, lambda rng: make(rng, 40, "c"))
    assert report.arrays["out"].nt_vector_stores > 0 and report.machine_nt_vector_stores > 0, str(report)
