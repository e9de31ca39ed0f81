"""A named array none of whose stores is streamed raises a StreamWarning that
names it and gives the reason, shown at the user's kernel; arrays streamed
under stream_stores=True are not warned about."""

import warnings

import llvmlite.binding as llvm
import numba
import numpy as np
import pytest

import streamjit as sj


def step_two(out, a):
    for i in range(0, a.shape[0], 2):
        out[i] = a[i]


def with_break(out, a):
    for i in range(a.shape[0]):
        if a[i] > 10.0:
            break
        out[i] = a[i]


def scaled_index(out, a):
    for i in range(a.shape[0] // 2):
        out[2 * i] = a[i]


def index_array(out, a):
    out[a > 0.5] = 1.0


def one_element(out, a):
    for i in range(a.shape[0]):
        out[0] = a[i]


def recurrence(out, a):
    acc = 0.0
    for i in range(a.shape[0]):
        acc = acc * 0.5 + a[i]
        out[i] = acc


def fresh_under_auto(a):
    r = np.empty_like(a)
    for i in range(a.shape[0]):
        r[i] = 2.0 * a[i]
    return r


# x86 streams the stores of a loop that does not vectorize (movntsd with
# AMD's SSE4A, else movnti through an integer register); other targets do not
X86 = llvm.get_process_triple().startswith("x86_64")
CASES = [
    (step_two, {}, "its loop step is not 1"),
    (scaled_index, {}, "the last index is not 'i' plus a loop-invariant offset"),
    (index_array, {}, "an index-array store"),
    (one_element, {}, "one element, whichever the iteration"),
]


def _call(kernel, func):
    a = np.random.default_rng(1).random(203)
    if func is fresh_under_auto:
        return kernel(a)
    return kernel(np.zeros(203), a)


@pytest.mark.parametrize("func, options, reason", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_named_array_that_streams_nothing_warns_with_the_reason(func, options, reason):
    kernel = sj.stream_kernel(stream_stores=["out"], **options)(func)
    with pytest.warns(sj.StreamWarning, match=rf"stream_stores names 'out', but no store to it is streamed in "
                                              rf"{func.__name__}: .*{reason}") as caught:
        _call(kernel, func)
    # shown at the kernel, not inside streamjit
    assert all(w.filename == __file__ for w in caught if issubclass(w.category, sj.StreamWarning))
    # the code is Numba's all the same
    a = np.random.default_rng(1).random(203)
    expected, got = np.zeros(203), np.zeros(203)
    numba.njit(func)(expected, a)
    kernel(got, a)
    np.testing.assert_array_equal(got, expected)


def test_fresh_array_named_under_auto_streams_without_a_warning():
    """Naming an array the kernel makes streams it, as naming a parameter
    does (the threshold decides per call; the suite's is 0 bytes)."""
    kernel = sj.stream_kernel(stream_stores=["r"], threshold="auto")(fresh_under_auto)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sj.StreamWarning)
        _call(kernel, fresh_under_auto)
    assert kernel.stream_calls()["streamed"] == 1


def test_no_warning_when_it_streams_or_was_not_named():
    def copy(out, a):
        for i in range(a.shape[0]):
            out[i] = a[i]

    with warnings.catch_warnings():
        warnings.simplefilter("error", sj.StreamWarning)
        _call(sj.stream_kernel(stream_stores=["out"])(copy), copy)
        # under True the report notes say why; nothing is warned
        _call(sj.stream_kernel(stream_stores=True)(step_two), step_two)
        _call(sj.stream_kernel(stream_stores=True)(with_break), with_break)


def test_never_stored_warning_points_at_the_kernel():
    def reads_only(out, a):
        return a[0]

    with pytest.warns(sj.StreamWarning, match="never stores to it") as caught:
        sj.stream_kernel(stream_stores=["out"])(reads_only)(np.zeros(3), np.ones(3))
    assert caught[0].filename == __file__


@pytest.mark.parametrize("func", [recurrence, with_break], ids=lambda f: f.__name__)
def test_loop_that_does_not_vectorize_streams_scalar_stores_on_x86_else_warns(func):
    kernel = sj.stream_kernel(stream_stores=["out"], threshold=None)(func)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _call(kernel, func)
    warned = [w for w in caught if issubclass(w.category, sj.StreamWarning)]
    if X86:
        assert not warned and kernel.stream_report().machine_nt_scalar_stores > 0
    else:
        assert warned and "did not vectorize" in str(warned[0].message)


def prefix_sum(out, a):
    for i in range(1, out.shape[0]):
        out[i] = out[i - 1] + a[i]


def row_prefix(out, a):
    for i in range(1, out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = out[i - 1, j] * 0.5 + a[i, j]


@pytest.mark.parametrize("function, shape", [(prefix_sum, (1001,)), (row_prefix, (9, 67))])
def test_a_loop_reading_back_what_it_would_stream_stays_plain_or_warns(function, shape):
    """Each load of an element the loop streamed a moment ago waits for it to
    reach memory (bench/read_back.py: 0.48x njit): under True and "auto" the
    array stays plain with the reason; named with threshold=None it streams
    and warns at the kernel."""
    rng = np.random.default_rng(1)
    a, start = rng.random(shape), rng.random(shape)
    expected = start.copy()
    numba.njit(function)(expected, a)
    line = function.__code__.co_firstlineno + 1 + len(shape)
    for options in ({"stream_stores": True}, {"stream_stores": ["out"]}):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            kernel = sj.stream_kernel(**options)(function)
            out = start.copy()
            kernel(out, a)
        np.testing.assert_array_equal(out, expected)
        report = kernel.stream_report()
        assert report.arrays["out"].nt_vector_stores + report.arrays["out"].nt_scalar_stores == 0
        assert any(f"line {line}: loaded back at another element" in n for n in report.arrays["out"].notes)
        assert not any("waits for the streamed store" in str(w.message) for w in caught)
    with pytest.warns(sj.StreamWarning, match=f"line {line} loads back at another element .* waits for the streamed"):
        kernel = sj.stream_kernel(stream_stores=["out"], threshold=None)(function)
        out = start.copy()
        kernel(out, a)
    np.testing.assert_array_equal(out, expected)
    assert kernel.stream_calls()["streamed"] == 1


def test_a_reason_warned_at_its_line_is_not_warned_again():
    """An update whose operands overlap warns at its line; the warning that
    nothing of the named array streams, with that same reason, is not given
    a second time."""
    def heat(u, c, steps):
        for _ in range(steps):
            u[1:-1] = u[1:-1] + c * (u[2:] - 2 * u[1:-1] + u[:-2])

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sj.stream_kernel(stream_stores=["u"])(heat)(np.ones(100), 0.1, 2)
    assert [str(w.message).startswith("its right-hand side reads other elements of 'u'")
            for w in caught if issubclass(w.category, sj.StreamWarning)] == [True]
