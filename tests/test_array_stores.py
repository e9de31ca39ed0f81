"""Slice assignments, array expressions, row stores and in-place operators
on streamed arrays: fused element loops where exact, Numba's own
store otherwise; always equal to numba.njit and NumPy."""

import re
import warnings

import numba
import numpy as np
import pytest

import streamjit as sj

SHAPES_2D = [(0, 0), (2, 2), (3, 3), (7, 5), (33, 67), (64, 128)]


def jacobi_steps(A, B, steps):
    for _ in range(steps):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])


def heat3d(A, B, steps):
    for _ in range(steps):
        B[1:-1, 1:-1, 1:-1] = (0.125 * (A[2:, 1:-1, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[:-2, 1:-1, 1:-1])
                               + 0.125 * (A[1:-1, 1:-1, 2:] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, 1:-1, :-2])
                               + A[1:-1, 1:-1, 1:-1])
        A[1:-1, 1:-1, 1:-1] = B[1:-1, 1:-1, 1:-1]


def axpy(out, a, x, y):
    out[:] = a * x + y


def scale_accumulate(C, A, alpha, beta):
    C *= beta
    C += alpha * A


def shift(out):
    out[1:] = out[:-1]          # overlapping: NumPy copies through a buffer


def overlapping_rows(out, a):
    for i in range(a.shape[0]):
        out[i, 1:] = a[i, 1:]
        out[i, :-1] = a[i, :-1]  # overlaps the store above


KERNELS = {f.__name__: (sj.stream_kernel(stream_stores=True)(f), numba.njit(f))
           for f in (jacobi_steps, heat3d, axpy, scale_accumulate, shift)}


def run_both(name, *args):
    streamed, plain = KERNELS[name]
    mine = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    theirs = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    streamed(*mine)
    plain(*theirs)
    for m, t in zip(mine, theirs):
        if isinstance(m, np.ndarray):
            np.testing.assert_array_equal(m, t)
    return mine


@pytest.mark.parametrize("shape", SHAPES_2D)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_time_stepped_jacobi_slices(shape, dtype):
    rng = np.random.default_rng(sum(shape))
    A, B = rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape).astype(dtype)
    got_a, got_b, _ = run_both("jacobi_steps", A, B, 3)
    ref_a, ref_b = A.copy(), B.copy()     # NumPy, the same statements
    for _ in range(3):
        ref_b[1:-1, 1:-1] = 0.2 * (ref_a[1:-1, 1:-1] + ref_a[1:-1, :-2] + ref_a[1:-1, 2:] + ref_a[2:, 1:-1]
                                   + ref_a[:-2, 1:-1])
        ref_a[1:-1, 1:-1] = 0.2 * (ref_b[1:-1, 1:-1] + ref_b[1:-1, :-2] + ref_b[1:-1, 2:] + ref_b[2:, 1:-1]
                                   + ref_b[:-2, 1:-1])
    # (equal to njit above; NumPy computes float32 * 0.2 in float32, Numba in float64)
    tolerance = dict(rtol=1e-5, atol=1e-5 if dtype == np.float32 else 0)
    np.testing.assert_allclose(got_a, ref_a, **tolerance)
    np.testing.assert_allclose(got_b, ref_b, **tolerance)


def test_slice_stencils_stream_and_fence_every_step():
    rng = np.random.default_rng(1)
    run_both("jacobi_steps", rng.standard_normal((33, 67)), rng.standard_normal((33, 67)), 2)
    report = KERNELS["jacobi_steps"][0].stream_report()
    assert report.arrays["A"].nt_vector_stores > 0 and report.arrays["B"].nt_vector_stores > 0
    assert report.fences >= 2           # after each of the two nests, inside the time loop
    assert any("fused element loop" in n for n in report.arrays["B"].notes)
    run_both("heat3d", rng.standard_normal((9, 10, 37)), rng.standard_normal((9, 10, 37)), 2)
    assert KERNELS["heat3d"][0].stream_report().arrays["B"].nt_vector_stores > 0


@pytest.mark.parametrize("shape", [(0, 0, 0), (3, 3, 3), (5, 6, 41)])
def test_heat3d_slices(shape):
    rng = np.random.default_rng(2)
    run_both("heat3d", rng.standard_normal(shape), rng.standard_normal(shape), 2)


VIEWS = {"c": lambda a, n: a[:n], "off": lambda a, n: a[1:n + 1], "rev": lambda a, n: a[n - 1::-1] if n else a[:0],
         "strided": lambda a, n: a[:2 * n:2]}


@pytest.mark.parametrize("n", [0, 1, 7, 1001])
@pytest.mark.parametrize("views", [("c", "c", "c"), ("off", "rev", "strided"), ("strided", "off", "c")])
def test_axpy_on_views(n, views):
    rng = np.random.default_rng(n)
    out, x, y = (VIEWS[v](rng.standard_normal(2 * n + 2), n) for v in views)
    got = run_both("axpy", out, 2.5, x, y)[0]
    np.testing.assert_array_equal(got, 2.5 * x + y)


def test_axpy_streams_and_broadcasting_falls_back_to_numba():
    rng = np.random.default_rng(3)
    out, x, y = np.zeros(1001), rng.standard_normal(1001), rng.standard_normal(1001)
    run_both("axpy", out, 2.5, x, y)
    assert KERNELS["axpy"][0].stream_report().arrays["out"].nt_vector_stores > 0
    got = run_both("axpy", out, 2.5, x, y[:1])        # broadcast: Numba's own store
    np.testing.assert_array_equal(got[0], 2.5 * x + y[0])
    with pytest.raises(ValueError):                    # shape mismatch: Numba's own error
        KERNELS["axpy"][0](out, 2.5, x, y[:7])


@pytest.mark.parametrize("shape", [(0, 3), (1, 1), (17, 40)])
def test_in_place_operators(shape):
    rng = np.random.default_rng(4)
    C, A = rng.standard_normal(shape), rng.standard_normal(shape)
    got = run_both("scale_accumulate", C, A, 1.5, 0.5)[0]
    np.testing.assert_allclose(got, C * 0.5 + 1.5 * A)
    got = run_both("scale_accumulate_named", C, A, 1.5, 0.5)[0]
    np.testing.assert_allclose(got, C * 0.5 + 1.5 * A)
    if C.size:   # only updated in place: plain under True (no read to save), streamed when named
        row = KERNELS["scale_accumulate"][0].stream_report().arrays["C"]
        assert row.nt_vector_stores == 0 and any("only updated in place" in n for n in row.notes)
        assert any("an in-place operator stored by a fused element loop" in n for n in row.notes)
        assert KERNELS["scale_accumulate_named"][0].stream_report().arrays["C"].nt_vector_stores > 0


def test_overlapping_slice_copy_keeps_numpy_semantics():
    a = np.random.default_rng(5).standard_normal(101)
    with pytest.warns(sj.StreamWarning, match="operands overlap"):   # (the only test that compiles it)
        got = run_both("shift", a)[0]
    np.testing.assert_array_equal(got[1:], a[:-1])


def test_overlapping_slice_stores_in_one_nest_are_separate_stages():
    # each slice assignment is an element loop of its own: two stages in turn
    # (Halide's rule), each writing its elements once, fenced after it
    kernel = sj.stream_kernel(stream_stores=["out"])(overlapping_rows)
    a = np.random.default_rng(6).standard_normal((7, 301))
    expected, got = np.zeros((7, 301)), np.zeros((7, 301))
    numba.njit(overlapping_rows)(expected, a)
    kernel(got, a)
    np.testing.assert_array_equal(got, expected)
    report = kernel.stream_report()
    assert report.arrays["out"].nt_vector_stores > 0 and report.fences >= 2 and not report.unfenced_stores


@numba.njit(inline="always")
def blend(a, b, w):
    return w * a + (1.0 - w) * b


def helper_expression(out, x, y, w):
    out[:] = blend(x, y, w)      # the helper's expression is fused through its inlined copies


def ellipsis_stores(M, x):
    M[..., 1:] = x[..., :-1] * 2.0
    M[0, ...] = 1.0


def masked_steps(A, B, steps):
    for _ in range(steps):
        B[1:-1] = 0.5 * (A[:-2] + A[2:])
        B[B < 0] = 0.0           # Numba's own store, a stage of its own
        A[1:-1] = B[1:-1]


def through_views(B, A, steps):
    interior = B[1:-1, 1:-1]
    for _ in range(steps):
        interior[...] = 0.25 * (A[:-2, 1:-1] + A[2:, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:])
        A[1:-1, 1:-1] = interior
    for i in range(B.shape[0]):
        B[i][:1] = A[i][:1] * i      # a chained slice store


def int_expr(out, x, y):
    out[:] = x * 3 + y


def slice_in_place(A, B, c):
    A[1:] += c * B[:-1]


def self_in_place(A):
    A[1:] += A[:-1]              # overlapping: Numba's own in-place operator


def add_row(M, v):
    M[:, :] = M * 0.5 + v        # v broadcast along the rows


def divide(out, x, y):
    out[:] = x / y


def clip_mix(out, x, y, a, b, c):
    out[:] = np.minimum(np.maximum(x, 2.0), 10.0) * a + y * b + c


KERNELS.update((f.__name__, (sj.stream_kernel(stream_stores=True)(f), numba.njit(f)))
               for f in (int_expr, slice_in_place, add_row, divide, clip_mix, helper_expression,
                         ellipsis_stores, masked_steps, through_views))
# (named, and threshold=None: "auto" leaves updates in place and arrays the kernel makes plain)
KERNELS["scale_accumulate_named"] = (sj.stream_kernel(stream_stores=["C"], threshold=None)(scale_accumulate), KERNELS[
    "scale_accumulate"][1])
KERNELS["slice_in_place_named"] = (sj.stream_kernel(stream_stores=["A"], threshold=None)(slice_in_place), KERNELS[
    "slice_in_place"][1])
KERNELS["add_row_named"] = (sj.stream_kernel(stream_stores=["M"], threshold=None)(add_row), KERNELS["add_row"][1])


def nt_vector_stores(name, array):
    return KERNELS[name][0].stream_report().arrays[array].nt_vector_stores


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64])
def test_integer_expressions_fuse_and_wrap_as_numba(dtype):
    rng = np.random.default_rng(7)
    x, y = (rng.integers(-120, 120, 1001).astype(dtype) for _ in range(2))
    run_both("int_expr", np.zeros(1001, dtype), x, y)     # int8: x * 3 wraps, as under numba.njit
    if dtype != np.int8:
        assert nt_vector_stores("int_expr", "out") > 0


@pytest.mark.parametrize("n", [0, 1, 2, 33, 1001])
def test_slice_in_place_operators_fuse(n):
    rng = np.random.default_rng(n)
    A, B = rng.standard_normal(n + 1), rng.standard_normal(n + 1)
    got = run_both("slice_in_place", A, B, 0.5)[0]
    np.testing.assert_allclose(got[1:], A[1:] + 0.5 * B[:-1])
    got = run_both("slice_in_place_named", A, B, 0.5)[0]
    np.testing.assert_allclose(got[1:], A[1:] + 0.5 * B[:-1])
    if n > 100:
        assert nt_vector_stores("slice_in_place", "A") == 0 and nt_vector_stores("slice_in_place_named", "A") > 0
        assert any("an in-place operator stored by a fused element loop" in note
                   for note in KERNELS["slice_in_place"][0].stream_report().arrays["A"].notes)


def test_self_overlapping_in_place_operator_says_so_and_keeps_numpy_semantics():
    kernel = sj.stream_kernel(stream_stores=True)(self_in_place)
    A = np.random.default_rng(7).standard_normal(1001)
    expected = A.copy()
    numba.njit(self_in_place)(expected)
    with pytest.warns(sj.StreamWarning, match="operands overlap"):
        kernel(A)
    np.testing.assert_array_equal(A, expected)


@pytest.mark.parametrize("rows, v_len", [(0, 47), (31, 47), (31, 1)])
def test_broadcast_operands_fuse_or_fall_back(rows, v_len):
    rng = np.random.default_rng(8)
    M, v = rng.standard_normal((rows, 47)), rng.standard_normal(v_len)
    for name in ("add_row", "add_row_named"):
        got = run_both(name, M, v)[0]
        np.testing.assert_array_equal(got, M * 0.5 + v)    # v_len 1: broadcast at run time, Numba's own loop
    if rows and v_len > 1:
        # (M is read element for element where it is written: an update in place, plain under True)
        assert nt_vector_stores("add_row_named", "M") > 0 and nt_vector_stores("add_row", "M") == 0


def test_division_by_zero_gives_inf_as_the_array_expression_does():
    x, y = np.arange(1.0, 102.0), np.arange(101.0)
    with np.errstate(divide="ignore"):
        got = run_both("divide", np.empty(101), x, y)[0]
    assert np.isinf(got[0]) and got[1] == 2.0


def test_ufunc_expressions_fuse():
    rng = np.random.default_rng(9)
    x, y = rng.uniform(-5, 15, 1001), rng.standard_normal(1001)
    got = run_both("clip_mix", np.empty(1001), x, y, 1.5, 2.5, 0.25)[0]
    np.testing.assert_allclose(got, np.clip(x, 2.0, 10.0) * 1.5 + y * 2.5 + 0.25)
    assert nt_vector_stores("clip_mix", "out") > 0


def test_parallel_array_expressions_run_in_prange_and_stream():
    kernel = sj.stream_kernel(stream_stores=True, parallel=True)(axpy)
    rng = np.random.default_rng(6)
    x, y = rng.standard_normal(300_001), rng.standard_normal(300_001)
    out = np.zeros(300_001)
    kernel(out[1:], 2.0, x[1:], y[:-1])
    np.testing.assert_array_equal(out[1:], 2.0 * x[1:] + y[:-1])
    report = kernel.stream_report()
    assert report.arrays["out"].nt_vector_stores > 0 and report.fences >= 1
    assert "__numba_parfor_gufunc" in kernel.inspect_llvm(kernel.signatures[0])   # on Numba's threads


def test_expressions_in_inlined_helpers_fuse():
    rng = np.random.default_rng(10)
    x, y = rng.standard_normal((2, 1001))
    got = run_both("helper_expression", np.empty(1001), x, y, 0.3)[0]
    np.testing.assert_allclose(got, 0.3 * x + 0.7 * y)
    assert nt_vector_stores("helper_expression", "out") > 0
    assert any("stored by a fused element loop" in n
               for n in KERNELS["helper_expression"][0].stream_report().arrays["out"].notes)


@pytest.mark.parametrize("shape", [(1, 1), (5, 40), (3, 0)])
def test_ellipsis_indices_are_slices(shape):
    rng = np.random.default_rng(11)
    M, x = rng.standard_normal(shape), rng.standard_normal(shape)
    run_both("ellipsis_stores", M, x)
    if shape == (5, 40):
        assert nt_vector_stores("ellipsis_stores", "M") > 0


@pytest.mark.parametrize("n", [2, 7, 1001])
def test_index_array_stores_stay_numbas_and_the_rest_streams(n):
    rng = np.random.default_rng(12)
    run_both("masked_steps", rng.standard_normal(n), rng.standard_normal(n), 3)
    if n == 1001:
        report = KERNELS["masked_steps"][0].stream_report()
        assert report.arrays["A"].nt_vector_stores > 0 and report.arrays["B"].nt_vector_stores > 0
        assert any("an index-array store (a boolean mask or fancy indexing)" in note for note in report.arrays["B"].notes)


def fresh_loop(x):
    r = np.empty_like(x)
    for i in range(x.shape[0]):
        r[i] = 2.0 * x[i]
    return r


def returned_expression(x, y):
    return np.minimum(np.maximum(x, 2.0), 10.0) * 1.5 + y


DONE_WHEN = {   # the array-expression kernels, as streamed: each must hold ymm/zmm NT stores and a fence
    "jacobi": (KERNELS["jacobi_steps"][0], lambda rng: (rng.standard_normal((40, 70)),
                                                          rng.standard_normal((40, 70)), 2)),
    "heat3d": (KERNELS["heat3d"][0], lambda rng: (rng.standard_normal((9, 9, 40)), rng.standard_normal((9, 9, 40)), 1)),
    "axpy": (KERNELS["axpy"][0], lambda rng: (np.empty(1001), 2.0, rng.standard_normal(1001),
                                              rng.standard_normal(1001))),
    "returned": (sj.stream_kernel(stream_stores=["return"], threshold=None)(returned_expression),
                 lambda rng: (rng.standard_normal(1001), rng.standard_normal(1001))),
    "fresh": (sj.stream_kernel(stream_stores=["r"], threshold=None)(fresh_loop),
              lambda rng: (rng.standard_normal(1001),)),
    "in place": (KERNELS["scale_accumulate_named"][0], lambda rng: (rng.standard_normal((40, 70)),
                                                                    rng.standard_normal((40, 70)), 1.5, 0.5)),
}


@pytest.mark.parametrize("name", sorted(DONE_WHEN))
def test_machine_code_holds_vector_nt_stores_and_a_fence(name):
    kernel, make_args = DONE_WHEN[name]
    kernel(*make_args(np.random.default_rng(13)))
    assert kernel.stream_report().unfenced_stores == 0
    asm = kernel.inspect_asm(kernel.signatures[0])
    assert re.search(r"^\s*vmovnt(?:ps|pd|dq)\s+%[yz]mm\d+,", asm, re.M)
    assert re.search(r"^\s*sfence\s*$", asm, re.M)


@pytest.mark.parametrize("shape", [(2, 2), (3, 5), (40, 70)])
def test_whole_stores_through_views_and_chained_slices_stream(shape):
    rng = np.random.default_rng(14)
    run_both("through_views", rng.standard_normal(shape), rng.standard_normal(shape), 3)
    if shape == (40, 70):
        report = KERNELS["through_views"][0].stream_report()
        assert report.arrays["B"].nt_vector_stores > 0 and report.arrays["A"].nt_vector_stores > 0
        assert any("a slice assignment through a view stored by a fused element loop" in note
                   for note in report.arrays["B"].notes)


def boundary_conditions(p, u):
    p[:, -1] = p[:, -2]     # columns: their elements lie a row apart
    p[0, :] = p[1, :]       # rows: disjoint, contiguous
    p[-1, :] = 0.0
    u[:, 0] = 0.0
    u[1:-1, 1:-1] = p[1:-1, 2:] - p[1:-1, :-2]


def test_boundary_copies_stream_their_rows_and_warn_of_nothing():
    """Copies between distinct rows or columns of one array do not overlap
    (no false "operands overlap" warning); rows stream, columns stay
    Numba's own with a note (never a run-time fallback)."""
    kernel = sj.stream_kernel(stream_stores=True, threshold=None)(boundary_conditions)
    rng = np.random.default_rng(3)
    p, u = rng.standard_normal((23, 31)), rng.standard_normal((23, 31))
    want_p, want_u = p.copy(), u.copy()
    numba.njit(boundary_conditions)(want_p, want_u)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sj.StreamWarning)
        kernel(p, u)
    np.testing.assert_array_equal(p, want_p)
    np.testing.assert_array_equal(u, want_u)
    calls = kernel.stream_calls()
    assert calls["streamed"] == 1 and calls["after_check"] == 0
    notes = {name: " ".join(array.notes) for name, array in kernel.stream_report().arrays.items()}
    assert notes["p"].count("a column (an integer index in the last dimension") == 1
    assert notes["u"].count("a column (an integer index in the last dimension") == 1
    assert "overlap" not in notes["p"]


def fdtd_steps(ey, hz, fict):
    # NPBench's fdtd_2d: a row store, then an update in place of the same array
    for t in range(fict.shape[0]):
        ey[0, :] = fict[t]
        ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])


def test_an_update_in_place_stays_plain_beside_a_streamed_row_of_its_array():
    rng = np.random.default_rng(11)
    ey, hz, fict = rng.standard_normal((37, 45)), rng.standard_normal((37, 45)), rng.standard_normal(3)
    expected = ey.copy()
    numba.njit(fdtd_steps)(expected, hz, fict)
    kernels = {"measured": sj.stream_kernel(stream_stores=True)(fdtd_steps),
               "named": sj.stream_kernel(stream_stores=["ey"], threshold=None)(fdtd_steps)}
    for kernel in kernels.values():
        out = ey.copy()
        kernel(out, hz, fict)
        np.testing.assert_array_equal(out, expected)
        assert kernel.stream_calls()["streamed"] == 1
        assert "ey" in kernel.stream_result().streamed_stores
    rows = {name: kernel.stream_report().arrays["ey"] for name, kernel in kernels.items()}
    # (the named kernel streams the row and the update; the measured one the row only)
    assert 0 < rows["measured"].nt_vector_stores < rows["named"].nt_vector_stores
    line = fdtd_steps.__code__.co_firstlineno + 4
    assert any(note.startswith(f"line {line}: an update in place") for note in rows["measured"].notes)
    assert not any("an update in place" in note for note in rows["named"].notes)


def gemm_update(C, A, B, alpha, beta):
    C[:] = alpha * A * B + beta * C           # NPBench's gemm's shape (with A @ B): C read where it is written


def view_update(u, a):
    u[1:-1] = 2.0 * u[1:-1] + a[1:-1]


def test_a_store_reading_its_own_elements_is_an_update_in_place():
    rng = np.random.default_rng(12)
    cases = ((gemm_update, "C", (rng.standard_normal((17, 19)), rng.standard_normal((17, 19)),
                                 rng.standard_normal((17, 19)), 1.5, 0.5)),
             (view_update, "u", (rng.standard_normal(101), rng.standard_normal(101))))
    for function, name, args in cases:
        expected, got = ([a.copy() if isinstance(a, np.ndarray) else a for a in args] for _ in range(2))
        numba.njit(function)(*expected)
        kernel = sj.stream_kernel(stream_stores=True)(function)
        kernel(*got)
        np.testing.assert_allclose(got[0], expected[0], rtol=1e-13)
        assert name not in kernel.stream_result().streamed_stores, function.__name__
        assert any(n.startswith("only updated in place") for n in kernel.stream_report().arrays[name].notes)


def _square(out, a):
    out[:] = a * a


def _add(out, a, b):
    out[:] = a + b


def _scaled(out, a, s):
    out[:] = a * s


def _where_of_a_temporary(out, a, c):
    t = a * a
    out[:] = np.where(c, t, 0)


def _update(out, a):
    out[1:] += a[1:] * a[:-1]


_WIDENING = [  # (kernel, destination dtype, operands): the expression's dtype is narrower than the destination's
    (_square, np.int64, (np.int32,)), (_square, np.float64, (np.int32,)), (_square, np.uint64, (np.uint16,)),
    (_add, np.int64, (np.uint8, np.uint8)), (_add, np.int32, (np.int8, np.int8)),
    (_scaled, np.int64, (np.int32, np.int32)), (_scaled, np.float64, (np.float32, np.float32)),
    (_where_of_a_temporary, np.int64, (np.int32, np.bool_)), (_update, np.int64, (np.int32,)),
]


@pytest.mark.parametrize("kernel, destination, operands", _WIDENING, ids=lambda x: getattr(x, "__name__", str(x)))
def test_fused_stores_compute_in_the_expression_dtype_then_convert(kernel, destination, operands):
    """``out[:] = a * a`` with int32 ``a`` wraps in int32 as NumPy and
    numba.njit do, then converts to ``out``'s int64 (uint8 + uint8 wraps at
    256, an int32 scalar times an int32 array stays int32)."""
    rng = np.random.default_rng(11)
    n = 67

    def draw(dtype):
        if np.dtype(dtype).kind == "b":
            return rng.integers(0, 2, n).astype(np.bool_)
        info = np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else None
        if info is None:
            return rng.uniform(-3e38 ** 0.5, 3e38 ** 0.5, n).astype(dtype)
        return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)

    args = [draw(destination)] + [draw(d) for d in operands]
    if kernel is _scaled:
        args[2] = args[2][5]                                     # a scalar of the array's dtype
    streamed = sj.stream_kernel(stream_stores=True, threshold=None)(kernel)
    mine, theirs = [a.copy() if isinstance(a, np.ndarray) else a for a in args], list(args)
    theirs[0] = args[0].copy()
    streamed(*mine)
    numba.njit(kernel)(*theirs)
    np.testing.assert_array_equal(mine[0], theirs[0])
    assert "element loop" in " ".join(streamed.stream_report().arrays["out"].notes)
