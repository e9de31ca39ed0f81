"""Streamed loops left early: a return or raise statement after (or before)
the store, Numba's own ZeroDivisionError and, under boundscheck, IndexError,
at stops in the head, the aligned loop and near the end, with the
destination 0, 8, 64, 192 (`helpers.staged_profile`'s page_alias_bytes: the
staged loop's case) and 2048 bytes past its sources modulo 4 KiB, aligned or not. Every
element numba.njit writes is written, bit for bit, the same exception is
raised, each return that a streamed store reaches is fenced, and
stream_calls() counts every call."""

import ctypes
import ctypes.util

import numba
import numpy as np
import pytest

import streamjit as sj
from streamjit.post_o3.exit_fences import unfenced_returns
from streamjit.llvm_text.module import Module

# (every kernel runs the 4K-aliasing check: the staged loop and its fallback are exited too)
pytestmark = pytest.mark.usefixtures("page_alias_check")


def return_after(out, a, b, stop):
    for i in range(1, out.shape[0]):
        out[i] = a[i] + b[i - 1]
        if i == stop:
            return i
    return -1


def return_before(out, a, b, stop):
    for i in range(1, out.shape[0]):
        if i == stop:
            return i
        out[i] = a[i] - b[i - 1]
    return -1


def raise_after(out, a, b, stop):
    for i in range(1, out.shape[0]):
        out[i] = a[i] * b[i - 1]
        if i == stop:
            raise ValueError("stop")
    return -1


def divide(out, a, b, stop):
    for i in range(1, out.shape[0]):
        out[i] = (a[i] + b[i - 1]) // (i - stop)  # ZeroDivisionError at i == stop
    return -1


def out_of_bounds(out, a, b, stop):
    for i in range(1, out.shape[0]):
        # (an index the peel cannot check ahead: IndexError at i == stop, under boundscheck)
        out[i] = a[i] + b[(i == stop) * b.shape[0] + i - 1]
    return -1


N = 1000
# in the head, in the aligned loop, within its last line, past the end (no exit)
STOPS = (1, 6, 37, 500, N - 3, N + 5)
# (bytes past the sources modulo 4 KiB, the sources' offset in their page)
PLACEMENTS = [(d, s) for d in (0, 8, 64, 192, 2048) for s in (64, 68)]
CASES = [(return_after, ("float64", "float32", "int32", "int64"), False),
         (return_before, ("float32", "int64"), False),
         (raise_after, ("float64", "int32"), False),
         (divide, ("float64", "float32", "int32", "int64"), False),
         (out_of_bounds, ("float64", "int32"), True)]


def _placed(rng, dtype, dest_past, source_at):
    """(out, a, b): random data, a and b ``source_at`` bytes into a page, out
    ``dest_past`` bytes past them modulo 4 KiB (at least 4 KiB apart)."""
    item = np.dtype(dtype).itemsize
    raw = np.empty(3 * (N * item + 8192), np.uint8)
    arrays = []
    for k, offset in enumerate((source_at, source_at, source_at + dest_past)):
        first = k * (N * item + 8192)
        first += (offset - (raw.ctypes.data + first)) % 4096
        array = raw[first:first + N * item].view(dtype)
        array[:] = rng.integers(-50, 50, N) if np.dtype(dtype).kind == "i" else rng.random(N) * 10 - 5
        arrays.append(array)
    a, b, out = arrays
    return out, a, b


def _run(kernel, out, a, b, stop):
    try:
        return kernel(out, a, b, stop), out.copy()
    except (ValueError, ZeroDivisionError, IndexError) as error:
        return type(error), out.copy()


def _assert_fenced(kernel):
    for signature in kernel.signatures:
        module = Module(kernel.inspect_llvm(signature))
        function = next(f for f in module.functions if f.name.startswith("_ZN") and kernel.py_func.__name__ in f.name)
        stores, returns = unfenced_returns(function)
        assert not returns, f"{stores} NT stores reach {len(returns)} unfenced returns"


@pytest.mark.parametrize("func, dtypes, boundscheck", CASES, ids=[c[0].__name__ for c in CASES])
def test_every_exit_leaves_njits_writes(func, dtypes, boundscheck):
    streamed = sj.stream_kernel(stream_stores=["out"], threshold=None, boundscheck=boundscheck)(func)
    plain = numba.njit(boundscheck=boundscheck)(func)
    rng = np.random.default_rng(sum(map(ord, func.__name__)))
    calls = 0
    for dtype in dtypes:
        for dest_past, source_at in PLACEMENTS:
            for stop in STOPS:
                out, a, b = _placed(rng, dtype, dest_past, source_at)
                expected, expected_out = _run(plain, out.copy(), a, b, stop)
                got, got_out = _run(streamed, out, a, b, stop)
                calls += 1
                where = f"{dtype}, out {dest_past} bytes past its sources at {source_at}, stop {stop}"
                assert got == expected, where
                assert got_out.tobytes() == expected_out.tobytes(), where
    assert sum(streamed.stream_calls().values()) == calls
    assert streamed.stream_calls()["streamed"] > 0  # (the aligned loop ran, the exits taken inside it)
    _assert_fenced(streamed)


def test_a_loop_that_may_leave_early_is_not_staged():
    kernel = sj.stream_kernel(stream_stores=["out"], threshold=None)(divide)
    kernel(*_placed(np.random.default_rng(0), "float64", 2048, 64), N + 5)
    report = str(kernel.stream_report())
    assert "not staged because its loop computes 'floordiv', which may raise ZeroDivisionError" in report


def _cube(x):
    return x * x * x


_ctypes_libm = ctypes.CDLL(ctypes.util.find_library("m"))
_cbrt = _ctypes_libm.cbrt
_cbrt.argtypes, _cbrt.restype = [ctypes.c_double], ctypes.c_double


def call_foreign(out, a, b, stop):
    for i in range(1, out.shape[0]):
        out[i] = _cbrt(a[i] + b[i - 1]) + stop


def call_kernel(out, a, b, stop):
    for i in range(1, out.shape[0]):
        out[i] = CUBE(a[i] + b[i - 1]) + stop


CUBE = numba.njit(_cube)


@pytest.mark.parametrize("func, why", [(call_foreign, "its loop calls "), (call_kernel, "its loop calls another kernel")])
def test_a_loop_calling_what_is_not_known_not_to_raise_is_not_staged(func, why):
    """A call is judged by a whitelist: a foreign function or another kernel may raise."""
    kernel, plain = sj.stream_kernel(stream_stores=["out"], threshold=None)(func), numba.njit(func)
    out, a, b = _placed(np.random.default_rng(2), "float64", 8, 64)
    expected = out.copy()
    plain(expected, a, b, 1.0)
    kernel(out, a, b, 1.0)
    assert out.tobytes() == expected.tobytes()
    report = str(kernel.stream_report())
    assert f"not staged because {why}" in report and kernel.stream_calls()["staged"] == 0, report


def test_calls_ended_by_numbas_own_exceptions_are_counted_under_their_path():
    kernel = sj.stream_kernel(stream_stores=["out"], threshold=None)(divide)
    rng = np.random.default_rng(1)
    out, a, b = _placed(rng, "float64", 2048, 64)
    kernel(out, a, b, N + 5)
    with pytest.raises(ZeroDivisionError):
        kernel(out, a, b, N // 2)  # (inside the aligned loop)
    with pytest.raises(ZeroDivisionError):
        kernel(out, a, b, 1)  # (in the head loop, the aligned one chosen to follow)
    out, a, b = _placed(rng, "float64", 0, 64)
    with pytest.raises(ZeroDivisionError):
        kernel(out, a, b, N // 2)  # (the plain loop: sources a few bytes behind the store)
    calls = kernel.stream_calls()
    assert calls["streamed"] == 3 and calls["after_check"] == 1 and sum(calls.values()) == 4, calls
    assert kernel.stream_fallbacks()["page_alias"] == 1
