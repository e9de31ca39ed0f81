"""Arrays the kernel allocates (fresh outputs) stream when named
in stream_stores, stay plain under stream_stores=True (measured slower, the
report says why), and behave as under numba.njit either way."""

import numba
import numpy as np
import pytest

import streamjit as sj
from streamjit.codegen import CALL_PATHS
from streamjit.codegen.placement import apart_offset, placed_apart, row_starts
from helpers import staged_profile
from kernels import smooth_fresh


def fill_fresh(x, y):
    r = np.empty_like(x)
    for i in range(x.shape[0]):
        r[i] = 2.0 * x[i] + y[i]
    return r


def fill_fresh_2d(a):
    out = np.zeros((a.shape[0], a.shape[1]))
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            out[i, j] = a[i, j] * 3.0
    return out


def fill_then_read(x):
    tmp = np.empty(x.shape[0])
    for i in range(x.shape[0]):
        tmp[i] = x[i] + 1.0
    total = 0.0
    for i in range(tmp.shape[0]):       # after the nest's fence: sees every value
        total += tmp[i]
    return tmp, total


FRESH = sj.stream_kernel(stream_stores=True)(fill_fresh)
# (named, and threshold=None: "auto" leaves an array the kernel makes plain)
FRESH_NAMED = sj.stream_kernel(stream_stores=["r"], threshold=None)(fill_fresh)
FRESH_2D = sj.stream_kernel(stream_stores=["out"], threshold=None)(fill_fresh_2d)
READ_BACK = sj.stream_kernel(stream_stores=["tmp"], threshold=None)(fill_then_read)


@pytest.mark.parametrize("kernel", [FRESH, FRESH_NAMED], ids=["all", "named"])
@pytest.mark.parametrize("n", [0, 1, 7, 33, 1001, 4099])
@pytest.mark.parametrize("view", ["c", "off", "rev", "strided"])
def test_fresh_output_equals_njit(kernel, n, view):
    rng = np.random.default_rng(n)
    base_x, base_y = rng.standard_normal(2 * n + 1), rng.standard_normal(2 * n + 1)
    pick = {"c": lambda a: a[:n], "off": lambda a: a[1:n + 1], "rev": lambda a: a[n - 1::-1] if n else a[:0],
            "strided": lambda a: a[:2 * n:2]}[view]
    x, y = pick(base_x), pick(base_y)
    np.testing.assert_array_equal(kernel(x, y), numba.njit(fill_fresh)(x, y))


def test_named_fresh_outputs_stream_with_vector_nt_stores():
    rng = np.random.default_rng(1)
    FRESH_NAMED(rng.standard_normal(1001), rng.standard_normal(1001))
    report = FRESH_NAMED.stream_report()
    assert report.arrays["r"].nt_vector_stores > 0 and report.fences >= 1
    assert "r" in FRESH_NAMED.stream_result().streamed_stores
    a = rng.standard_normal((19, 67))
    np.testing.assert_array_equal(FRESH_2D(a), a * 3.0)
    assert FRESH_2D.stream_report().arrays["out"].nt_vector_stores > 0


def smooth_result(u):
    return u[:-2] + 2.0 * u[1:-1] + u[2:]


with staged_profile():  # (the 4K-aliasing check, which a fresh output placed near its argument fails)
    SMOOTH = sj.stream_kernel(stream_stores=["out"], threshold=None)(smooth_fresh)
    SMOOTH_RESULT = sj.stream_kernel(stream_stores=["return"], threshold=None)(smooth_result)


def page_distance(a, b):
    ahead = (a.ctypes.data - b.ctypes.data) % 4096
    return min(ahead, 4096 - ahead)


@pytest.mark.parametrize("kernel", [SMOOTH, SMOOTH_RESULT], ids=["loop", "array-expression"])
def test_fresh_outputs_are_placed_apart_from_the_arguments_and_stream(kernel):
    """AMD EPYC Zen 2: Numba allocated a large fresh output 48
    bytes past NumPy's arrays modulo 4 KiB, so a stencil's streamed store
    trailed its loads by a few bytes (4K aliasing) and every call ran the
    plain loop (``page_alias``). Wherever the argument starts within its
    page, the output now lies apart, and the call streams."""
    rng = np.random.default_rng(7)
    buffer = rng.standard_normal(65536 + 512)
    plain = numba.njit(kernel.py_func)
    for shift in range(0, 512, 8):  # (the argument at 64 offsets within its page, 8 bytes apart)
        u = buffer[shift:shift + 65536]
        out = kernel(u)
        np.testing.assert_array_equal(out, plain(u))
        assert page_distance(out, u) >= 512, (shift, out.ctypes.data % 4096, u.ctypes.data % 4096)
    assert kernel.stream_calls() == dict.fromkeys(CALL_PATHS, 0) | {"streamed": 64}


def test_fresh_outputs_stay_plain_under_true_and_the_report_says_why():
    rng = np.random.default_rng(4)
    FRESH(rng.standard_normal(1001), rng.standard_normal(1001))
    row = FRESH.stream_report().arrays["r"]
    assert row.nt_vector_stores == 0 and "r" not in FRESH.stream_result().streamed_stores
    assert any("not streamed under stream_stores=True" in n for n in row.notes)


def smooth_copy(a):
    out = a.copy()                      # an array the kernel makes, as np.copy(a) does
    out[1:-1] = 0.5 * (a[2:] + a[:-2])
    return out


def test_a_copy_the_kernel_makes_is_a_fresh_output():
    a = np.random.default_rng(5).standard_normal(1001)
    expected = numba.njit(smooth_copy)(a)
    named = sj.stream_kernel(stream_stores=["out"], threshold=None)(smooth_copy)
    np.testing.assert_array_equal(named(a), expected)
    calls = named.stream_calls()
    assert calls["streamed"] == 1 and named.stream_report().arrays["out"].nt_vector_stores > 0
    under_true = sj.stream_kernel(stream_stores=True)(smooth_copy)
    np.testing.assert_array_equal(under_true(a), expected)
    assert "out" not in under_true.stream_result().streamed_stores
    assert any("not streamed under stream_stores=True" in n for n in under_true.stream_report().arrays["out"].notes)


def test_fresh_array_read_back_after_the_nest():
    x = np.random.default_rng(2).standard_normal(5000)
    tmp, total = READ_BACK(x)
    np.testing.assert_array_equal(tmp, x + 1.0)
    assert total == pytest.approx((x + 1.0).sum())


def test_fresh_arrays_named_in_options_must_be_variables():
    with pytest.raises(sj.StreamConfigError, match="nor one of its variables"):
        sj.stream_kernel(stream_stores=["nope"])(fill_fresh)


def test_threshold_with_a_fresh_output_counts_the_parameters():
    small = sj.stream_kernel(stream_stores=["r"], threshold=1 << 20)(fill_fresh)
    ones = np.ones(10)
    np.testing.assert_array_equal(small(ones, ones), np.full(10, 3.0))
    assert not small.above_threshold(ones, ones)
    notes = small.stream_report().arrays["r"].notes
    assert any("compared with the bytes of the array parameters" in n for n in notes)


def named_result(a, x, y):
    r = a * x + y
    return r


def returned_result(x, y, a, b, c):
    return np.minimum(np.maximum(x, 2.0), 10.0) * a + y * b + c


def stepped_result(x, steps):
    r = x * 0.0
    for _ in range(steps):
        r = r * 0.5 + x       # a new array each step, as under numba.njit
    return r


RESULTS = {
    "named": (sj.stream_kernel(stream_stores=["r"], threshold=None)(named_result), numba.njit(named_result), "r"),
    "returned": (sj.stream_kernel(stream_stores=["return"], threshold=None)(returned_result),
                 numba.njit(returned_result), "return"),
    "stepped": (sj.stream_kernel(stream_stores=["r"], threshold=None)(stepped_result), numba.njit(stepped_result), "r"),
    "plain": (sj.stream_kernel(stream_stores=True)(returned_result), numba.njit(returned_result), "return"),
}
RESULT_ARGS = {"named": lambda x, y: (1.5, x, y), "returned": lambda x, y: (x, y, 1.5, 2.5, 0.25),
               "stepped": lambda x, y: (x, 3), "plain": lambda x, y: (x, y, 1.5, 2.5, 0.25)}


@pytest.mark.parametrize("which", sorted(RESULTS))
@pytest.mark.parametrize("n", [0, 1, 7, 1001])
@pytest.mark.parametrize("view", ["c", "off", "rev", "strided", "2d"])
def test_array_expression_results_equal_njit(which, n, view):
    rng = np.random.default_rng(n)
    base_x, base_y = rng.uniform(-5, 15, 2 * n + 2), rng.standard_normal(2 * n + 2)
    pick = {"c": lambda a: a[:n], "off": lambda a: a[1:n + 1], "rev": lambda a: a[n::-1][:n],
            "strided": lambda a: a[:2 * n:2], "2d": lambda a: a[:2 * n].reshape(2, n)}[view]
    streamed, plain, _ = RESULTS[which]
    args = RESULT_ARGS[which](pick(base_x), pick(base_y))
    got, want = streamed(*args), plain(*args)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("which", ["named", "returned", "stepped"])
def test_named_array_expression_results_stream(which):
    streamed, _, name = RESULTS[which]
    x, y = np.random.default_rng(3).standard_normal((2, 1001))
    streamed(*RESULT_ARGS[which](x, y))
    row = streamed.stream_report().arrays[name]
    assert row.nt_vector_stores > 0 and streamed.stream_report().fences >= 1
    assert any("array expression, stored by a fused element loop into a new array" in n for n in row.notes)


def test_array_expression_results_stay_plain_under_true_and_the_report_says_why():
    streamed = RESULTS["plain"][0]
    x, y = np.random.default_rng(4).standard_normal((2, 1001))
    streamed(*RESULT_ARGS["plain"](x, y))
    row = streamed.stream_report().arrays["return"]
    assert row.nt_vector_stores == 0
    assert any("not streamed under stream_stores=True" in n for n in row.notes)


def test_array_expression_result_shape_errors_are_numbas():
    streamed, plain, _ = RESULTS["named"]
    x = np.ones(5)
    with pytest.raises(ValueError) as theirs:
        plain(1.0, x, np.ones(4))
    with pytest.raises(ValueError) as mine:
        streamed(1.0, x, np.ones(4))
    assert str(mine.value).splitlines()[0] == str(theirs.value).splitlines()[0]
    np.testing.assert_array_equal(streamed(1.0, x, np.ones(1)), x + 1.0)   # broadcast at run time: Numba's own


def test_named_array_computed_by_another_numpy_call_warns():
    def outer(x, y):
        r = np.outer(x, y)
        return r

    kernel = sj.stream_kernel(stream_stores=["r"], threshold=None)(outer)
    x = np.arange(3.0)
    with pytest.warns(sj.StreamWarning, match="neither allocates it with NumPy .* nor computes it by an array"):
        np.testing.assert_array_equal(kernel(x, x), np.outer(x, x))


def test_named_array_expression_that_cannot_be_fused_says_why():
    def bits(a, b):
        r = a & b
        return r

    kernel = sj.stream_kernel(stream_stores=["r"], threshold=None)(bits)
    a, b = np.random.default_rng(5).integers(0, 1 << 20, (2, 40))
    with pytest.warns(sj.StreamWarning, match="no store to it is streamed in .*bits: .* an array expression Numba"):
        np.testing.assert_array_equal(kernel(a, b), a & b)
    assert any("an array expression Numba computes itself" in n for n in kernel.stream_report().arrays["r"].notes)


def test_parallel_array_expression_result_streams_on_numbas_threads():
    kernel = sj.stream_kernel(stream_stores=["r"], threshold=None, parallel=True)(named_result)
    x, y = np.random.default_rng(6).standard_normal((2, 300_001))
    np.testing.assert_array_equal(kernel(1.5, x[1:], y[:-1]), 1.5 * x[1:] + y[:-1])
    assert kernel.stream_report().arrays["r"].nt_vector_stores > 0
    assert "__numba_parfor_gufunc" in kernel.inspect_llvm(kernel.signatures[0])


def store_then_result(out, x, y):
    out[:] = x * 2.0
    r = x + y                  # after the store's rewrite split the block
    return r


def test_a_result_after_a_rewritten_store_in_the_same_block():
    kernel = sj.stream_kernel(stream_stores=["out", "r"], threshold=None)(store_then_result)
    x, y = np.random.default_rng(7).standard_normal((2, 1001))
    out = np.empty(1001)
    np.testing.assert_array_equal(kernel(out, x, y), x + y)
    np.testing.assert_array_equal(out, x * 2.0)
    report = kernel.stream_report()
    assert report.arrays["out"].nt_vector_stores > 0 and report.arrays["r"].nt_vector_stores > 0


@numba.njit
def _placed_in_a_kernel(fresh, inputs):
    return placed_apart(fresh, inputs)


@pytest.mark.parametrize("shape, order, input_shapes", [
    ((70000,), "C", [(70000,)]),
    ((300, 257), "C", [(300, 257), (300, 257)]),
    ((300, 257), "F", [(300, 257)]),
    ((40, 30, 29), "C", [(40, 30, 29), (40, 30, 29)]),
], ids=["1d", "2d-two-inputs", "2d-fortran", "3d"])
def test_placement_in_a_kernel_follows_the_rule_numpy_runs(shape, order, input_shapes):
    """The kernel's placement (emitted inline) and the drop-ins' (NumPy)
    are one rule: wherever ``fresh`` and the inputs start within their
    pages, both keep ``fresh`` or both move it to the same page offset,
    with its shape, strides and no element lost."""
    rng = np.random.default_rng(11)
    size = int(np.prod(shape))
    backing = np.empty(size + 1024)  # (addresses only: never read)
    moved = kept = 0
    inputs = tuple(view_at(rng.standard_normal(s), rng.integers(0, 512) * 8) for s in input_shapes)
    for at in range(0, 4096, 56):  # (fresh at 74 offsets, all round the page)
        fresh = backing[at // 8:at // 8 + size].reshape(shape, order=order)
        in_kernel, in_python = _placed_in_a_kernel(fresh, inputs), placed_apart(fresh, inputs)
        assert in_kernel.shape == in_python.shape == fresh.shape and in_kernel.strides == fresh.strides
        if in_python.ctypes.data == fresh.ctypes.data:
            assert in_kernel.ctypes.data == fresh.ctypes.data
            kept += 1
        else:
            assert in_kernel.ctypes.data % 4096 == in_python.ctypes.data % 4096 == apart_offset(row_starts(inputs))
            in_kernel[...] = 1.5  # (every element of the moved view lies in its own buffer)
            assert np.all(in_kernel == 1.5)
            moved += 1
    # (with three row starts or fewer, at least a quarter of the page lies apart)
    assert moved and (kept or len(row_starts(inputs)) > 3)


def view_at(array, offset_bytes):
    """A copy of ``array`` whose data starts ``offset_bytes`` past a page boundary."""
    raw = np.empty(array.nbytes + 8192, np.uint8)
    start = (-raw.ctypes.data) % 4096 + offset_bytes
    placed = raw[start:start + array.nbytes].view(array.dtype).reshape(array.shape)
    placed[...] = array
    return placed


def _page_distance_to(address, start):
    ahead = (address - start) % 4096
    return min(ahead, 4096 - ahead)


def test_a_fortran_ordered_inputs_rows_are_its_columns():
    """The rows of a Fortran-ordered input lie a column stride apart, along
    its last axis: its first axis is the contiguous one. (The rule took
    ``strides[:-1]`` as the rows everywhere: for a Fortran input, the start
    plus and minus one element, so an output starting on the input's next
    column modulo a page was kept there.)"""
    u = view_at(np.zeros((257, 300)), 0).T  # (at page offset 0, its columns 2400 bytes apart)
    assert u.flags.f_contiguous and u.ctypes.data % 4096 == 0 and u.strides == (8, 2400)
    backing = np.empty(300 * 257 + 1024)
    at = (2400 - backing.ctypes.data) % 4096 // 8          # (fresh on u's second column modulo a page)
    fresh = backing[at:at + 300 * 257].reshape((300, 257), order="F")
    for placed in (_placed_in_a_kernel(fresh, (u,)), placed_apart(fresh, (u,))):
        assert placed.ctypes.data != fresh.ctypes.data and placed.strides == fresh.strides
        for column in (u.ctypes.data, u.ctypes.data + 2400, u.ctypes.data - 2400):
            assert _page_distance_to(placed.ctypes.data, column) >= 512
    assert sorted(row_starts((u,))) == [0, 1696, 2400]


def test_an_array_no_placement_improves_on_stays_where_it_is():
    """Inputs starting every 256 bytes round the page leave no cache line
    more than 128 bytes from one of them: an output 128 bytes from the
    nearest is as far apart as it can be, and is not allocated again (it
    was, to the same page offset). One nearer is moved."""
    raw = np.empty(16 * 1024 + 1024)
    first = (-raw.ctypes.data) % 4096 // 8
    inputs = tuple(raw[first + 32 * k:first + 32 * k + 8] for k in range(16))
    assert sorted(row_starts(inputs)) == list(range(0, 4096, 256))
    backing = np.empty(10_000 + 1024)
    for offset, kept in ((128, True), (640, True), (136, False), (8, False)):
        at = (offset - backing.ctypes.data) % 4096 // 8
        fresh = backing[at:at + 10_000]
        for placed in (_placed_in_a_kernel(fresh, inputs), placed_apart(fresh, inputs)):
            assert (placed.ctypes.data == fresh.ctypes.data) == kept, (offset, placed.ctypes.data % 4096)
            assert placed.ctypes.data % 4096 == (offset if kept else apart_offset(row_starts(inputs)))
