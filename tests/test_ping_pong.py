"""Time loops that swap their buffers: each stage streams into
one of the arrays the swapped variable may hold, fenced, with Halide's
legality per stage; results equal numba.njit's on co-aligned, misaligned,
reversed and mixed inputs, odd and empty extents. Also: what each call ran
(``stream_calls``), legality before size, and stores that overlap their
own operands."""

import functools
import os
import sys
import warnings

import numba
import numpy as np
import pytest

import streamjit as sj
from streamjit.codegen import CALL_PATHS
from streamjit.inspection.report import COLUMNS

# the benchmark's kernels (bench/ping_pong.py): one definition, timed there, checked here
sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "bench"))
from kernels import copy_source  # noqa: E402
from ping_pong import heat3d_swap, heat_in_place, heat_swap, jacobi_swap, main as bench_main  # noqa: E402


def jacobi_tmp(A, B, T):
    n, m = A.shape
    for t in range(T):
        for i in range(1, n - 1):
            for j in range(1, m - 1):
                B[i, j] = 0.2 * (A[i, j] + A[i - 1, j] + A[i + 1, j] + A[i, j - 1] + A[i, j + 1])
        tmp = A
        A = B
        B = tmp


def jacobi_slices(A, B, T):
    for t in range(T):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[:-2, 1:-1] + A[2:, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:])
        A, B = B, A


def heat3d_slices(u, un, c, T):
    for t in range(T):
        un[1:-1, 1:-1, 1:-1] = u[1:-1, 1:-1, 1:-1] + c * (
            u[:-2, 1:-1, 1:-1] + u[2:, 1:-1, 1:-1] + u[1:-1, :-2, 1:-1] + u[1:-1, 2:, 1:-1] + u[1:-1, 1:-1, :-2]
            + u[1:-1, 1:-1, 2:] - 6 * u[1:-1, 1:-1, 1:-1])
        u, un = un, u


def reversed_swap(a, b, T):
    n = a.shape[0]
    for t in range(T):
        for i in range(n - 2, 0, -1):
            b[i] = 0.5 * (a[i - 1] + a[i + 1])
        a, b = b, a


# (kernel, shape of each buffer, scalar arguments before T, the names of the buffers)
SWAPS = [(jacobi_swap, (37, 53), (), ("A", "B")), (jacobi_tmp, (29, 67), (), ("A", "B")),
         (jacobi_slices, (37, 53), (), ("A", "B")), (heat_swap, (1001,), (0.1,), ("u", "un")),
         (heat3d_swap, (7, 9, 37), (0.1,), ("u", "un")), (heat3d_slices, (7, 9, 37), (0.1,), ("u", "un")),
         (reversed_swap, (999,), (), ("a", "b"))]


def _buffer(seed, shape, kind):
    rng = np.random.default_rng(seed)
    if kind == "co":
        return rng.random(shape)
    if kind == "mis":
        return rng.random(int(np.prod(shape)) + 1)[1:].reshape(shape)
    return rng.random(shape)[..., ::-1]   # "rev"


def _run(kernel, shape, scalars, kinds, steps):
    a, b = _buffer(1, shape, kinds[0]), _buffer(2, shape, kinds[1])
    kernel(a, b, *scalars, steps)
    return a, b


# (one numba.njit build per function for both parametrizations: each compiles its signatures once)
_njit = functools.cache(numba.njit)


@functools.cache
def _named(func, names):
    return sj.stream_kernel(stream_stores=list(names), threshold=None)(func)


@pytest.mark.parametrize("func, shape, scalars, names", SWAPS, ids=[s[0].__name__ for s in SWAPS])
def test_swapped_buffers_stream_and_equal_njit(func, shape, scalars, names):
    kernel, reference = _named(func, names), _njit(func)
    for kinds in (("co", "co"), ("mis", "co"), ("rev", "rev"), ("co", "mis")):
        for steps in (0, 1, 4):
            got, want = _run(kernel, shape, scalars, kinds, steps), _run(reference, shape, scalars, kinds, steps)
            for g, w in zip(got, want):
                assert g.tobytes() == w.tobytes(), (kinds, steps)
        report = kernel.stream_report(kernel.signatures[-1])
        for name in names:  # each buffer is written by the stages, streamed
            assert report.arrays[name].nt_vector_stores > 0, str(report)
        assert report.fences > 0 and report.unfenced_stores == 0, str(report)
    empty = [np.empty((0,) * len(shape)), np.empty((0,) * len(shape))]
    kernel(*empty, *scalars, 2)
    assert kernel.stream_calls(kernel.signatures[0])["streamed"] > 0


@pytest.mark.parametrize("func, shape, scalars, names", SWAPS, ids=[s[0].__name__ for s in SWAPS])
def test_stream_stores_true_streams_what_naming_both_buffers_streams(func, shape, scalars, names):
    everything, named = sj.stream_kernel(stream_stores=True, threshold=None)(func), _named(func, names)
    got, want = _run(everything, shape, scalars, ("mis", "co"), 3), _run(named, shape, scalars, ("mis", "co"), 3)
    assert all(g.tobytes() == w.tobytes() for g, w in zip(got, want))
    reports = [kernel.stream_report(kernel.signatures[0]) for kernel in (everything, named)]
    counts = [{name: [getattr(rep, column) for column in COLUMNS] for name, rep in report.arrays.items()}
              for report in reports]
    assert counts[0] == counts[1] and reports[0].fences == reports[1].fences
    assert reports[0].machine_nt_vector_stores == reports[1].machine_nt_vector_stores > 0


def test_the_other_buffer_is_read_as_a_source_not_a_self_load():
    """Loads of ``A`` in the stage that stores ``B`` are the stage's
    sources: prefetched ahead like any source of a streamed store."""
    kernel = sj.stream_kernel(stream_stores=True, threshold=None, prefetch_distance=4096, prefetch_hint="t1")(
        jacobi_swap)
    kernel(np.random.rand(20, 33), np.random.rand(20, 33), 2)
    report = kernel.stream_report()
    assert report.arrays["A"].prefetches > 0, str(report)


def test_swapped_buffers_in_one_stage_stay_legal():
    """Two swapped buffers stored in one nest write two arrays (a swap is a
    permutation): legal; a buffer swapped inside its own loop stays plain,
    with the reason."""
    def both(A, B, C, T):
        for t in range(T):
            for i in range(1, A.shape[0] - 1):
                A[i] = C[i] + 1.0
                B[i] = C[i] * 2.0
            A, B = B, A

    def inside(A, B, T):
        n = A.shape[0]
        for i in range(n):
            for j in range(A.shape[1]):
                B[i, j] = A[i, j] + 1.0
            A, B = B, A

    for func, args in ((both, (np.zeros(100), np.zeros(100), np.random.rand(100), 3)),
                       (inside, (np.random.rand(8, 40), np.random.rand(8, 40), 1))):
        kernel, reference = sj.stream_kernel(stream_stores=True, threshold=None)(func), numba.njit(func)
        got, want = [a.copy() if isinstance(a, np.ndarray) else a for a in args], \
            [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        kernel(*got)
        reference(*want)
        assert all(g.tobytes() == w.tobytes() for g, w in zip(got, want) if isinstance(g, np.ndarray))


def test_rebinding_that_is_not_a_swap_is_checked_as_one_array():
    """``B = A`` in a time loop, or before it: ``A`` and ``B`` may then hold
    one array, so two stores to them in one nest may write one element twice."""
    def alias(A, B, T):
        for t in range(T):
            for i in range(A.shape[0]):
                A[i] = 1.0
                B[i] = 2.0
            B = A

    def same_start(A, B, T):
        B = A
        for t in range(T):
            for i in range(A.shape[0]):
                A[i] = 1.0
                B[i] = 2.0
            A, B = B, A

    rng = np.random.default_rng(5)
    for func in (alias, same_start):
        with pytest.raises(sj.StreamLegalityError, match="may write the same element"), warnings.catch_warnings():
            warnings.simplefilter("ignore", sj.StreamWarning)  # (same_start stores to B only as A)
            sj.stream_kernel(stream_stores=["A", "B"], threshold=None)(func)(np.zeros(10), np.zeros(10), 2)
        # stream_stores=True names neither: both stay plain, with numba.njit's results
        kernel = sj.stream_kernel(stream_stores=True, threshold=None)(func)
        got = [rng.random(10), rng.random(10)]
        want = [a.copy() for a in got]
        kernel(*got, 2)
        numba.njit(func)(*want, 2)
        assert all(g.tobytes() == w.tobytes() for g, w in zip(got, want))
        assert not {"A", "B"} & kernel.stream_result().streamed_stores


def histogram(counts, idx):
    for i in range(idx.shape[0]):
        counts[idx[i]] += 1


@pytest.mark.parametrize("threshold", ["auto", None, 0, 1 << 40])
def test_an_illegal_named_store_is_an_error_whatever_the_threshold(threshold, monkeypatch):
    monkeypatch.delenv("STREAMJIT_THRESHOLD", raising=False)
    kernel = sj.stream_kernel(stream_stores=["counts"], threshold=threshold)(histogram)
    with pytest.raises(sj.StreamLegalityError, match="counts"):
        kernel(np.zeros(8), np.arange(8) % 3)


def test_stream_calls_count_each_path():
    kernel = sj.stream_kernel(stream_stores=["dst"], threshold=4096)(copy_source)
    large, small = np.random.rand(10_000), np.random.rand(10)
    kernel(np.empty_like(large), large)
    kernel(np.empty_like(small), small)
    kernel(np.empty_like(small), small)
    assert kernel.stream_calls() == dict.fromkeys(CALL_PATHS, 0) | {"streamed": 1, "below_threshold": 2}
    strided = np.random.rand(10_000, 2)[:, 0]     # a non-contiguous source: the run-time check fails
    kernel(np.empty_like(strided), strided)
    assert kernel.stream_calls(kernel.signatures[-1]) == \
        dict.fromkeys(CALL_PATHS, 0) | {"after_check": 1}
    assert kernel.stream_result(kernel.signatures[-1]).calls["after_check"] == 1
    assert kernel.stream_fallbacks(kernel.signatures[-1]) == \
        {"bounds": 0, "alignment": 0, "contiguous": 1, "page_alias": 0, "operands": 0}
    assert "calls: 0 streamed, 0 plain below the threshold, 1 plain after a run-time check " \
        "(1: a row that is not contiguous)" in str(kernel.stream_report(kernel.signatures[-1]))
    assert set(kernel.stream_fallbacks(kernel.signatures[0]).values()) == {0}


def shift_right(dst, src, first):
    for i in range(first, dst.shape[0]):
        dst[i] = src[i - 1]


def test_stream_fallbacks_say_an_index_wrapped():
    """From ``first = 0``, ``src[-1]`` wraps (Python's meaning, which Numba
    keeps): the bounds check sends the call to Numba's loop, and the report
    says so; from ``first = 1`` the same code streams."""
    kernel = sj.stream_kernel(stream_stores=["dst"], threshold=None)(shift_right)
    src = np.random.rand(1001)
    dst = np.empty_like(src)
    kernel(dst, src, 0)
    np.testing.assert_array_equal(dst, np.roll(src, 1))
    assert kernel.stream_calls() == dict.fromkeys(CALL_PATHS, 0) | {"after_check": 1}
    assert kernel.stream_fallbacks() == {"bounds": 1, "alignment": 0, "contiguous": 0, "page_alias": 0, "operands": 0}
    assert "(1: an index outside its array)" in str(kernel.stream_report())
    kernel(dst, src, 1)
    assert kernel.stream_calls()["streamed"] == 1 and kernel.stream_fallbacks()["bounds"] == 1


def test_stream_calls_count_overlapping_operands_and_short_loops():
    def shift(out, x):
        out[1:] = x[:-1] * 2.0

    kernel = sj.stream_kernel(stream_stores=["out"], threshold=None)(shift)
    x = np.random.rand(1000)
    kernel(x, x)                                 # out and x are one array: Numba's own store
    assert kernel.stream_calls() == dict.fromkeys(CALL_PATHS, 0) | {"after_check": 1}
    assert kernel.stream_fallbacks()["operands"] == 1
    assert "(1: an operand overlapping its destination, or of another shape)" in str(kernel.stream_report())
    kernel(np.empty(1000), x)
    assert kernel.stream_calls()["streamed"] == 1
    kernel(np.empty(1), np.empty(1))             # nothing to store: no aligned loop reached
    assert kernel.stream_calls()["plain"] == 1


def test_the_benchmark_runs_and_checks_its_results():
    with pytest.warns(sj.StreamWarning, match="operands overlap"):   # (its in-place heat, as the issue wrote it)
        bench_main(mib=2, rounds=1)   # (it asserts every result equal to numba.njit's)


def test_in_place_heat_says_its_operands_overlap():
    kernel = sj.stream_kernel(stream_stores=True)(heat_in_place)
    u = np.random.rand(1000)
    want = u.copy()
    with pytest.warns(sj.StreamWarning, match="operands overlap.*second buffer"):
        kernel(u, 0.1, 3)
    numba.njit(heat_in_place)(want, 0.1, 3)
    assert u.tobytes() == want.tobytes()
    report = kernel.stream_report()
    assert report.arrays["u"].nt_vector_stores == 0
    assert any("operands overlap" in n for n in report.arrays["u"].notes), str(report)
    assert kernel.stream_calls() == dict.fromkeys(CALL_PATHS, 0) | {"plain": 1}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kernel(u, 0.1, 3)                          # warned once, at compile time
