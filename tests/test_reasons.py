"""No silent plain: every stored array that does not stream has
a specific reason in the report."""

import numba
import numpy as np
import pytest

import streamjit as sj


def gufunc_like(x, y, res):
    acc = 0.0
    for i in range(x.shape[0]):
        res[i] = x[i] + y[i]
        acc += res[i]
    return acc


def test_a_float_reduction_is_named_where_the_loop_did_not_vectorize():
    kernel = sj.stream_kernel(stream_stores=True, threshold=None)(gufunc_like)
    x = np.random.rand(1001)
    got, want = np.zeros(1001), np.zeros(1001)
    assert kernel(x, x, got) == numba.njit(gufunc_like)(x, x, want)
    assert got.tobytes() == want.tobytes()
    report = kernel.stream_report()
    if report.arrays["res"].nt_vector_stores == 0:
        assert any("carries the float 'acc'" in n and "fastmath" in n for n in report.arrays["res"].notes), \
            str(report)
    fast = sj.stream_kernel(stream_stores=True, threshold=None, fastmath=True)(gufunc_like)
    fast(x, x, np.zeros(1001))
    assert fast.stream_report().arrays["res"].nt_vector_stores > 0


@numba.njit
def put(out, i, v):
    out[i] = v


def through_a_call(a, out):
    for i in range(a.shape[0]):
        put(out, i, a[i] * 2.0)


@pytest.mark.parametrize("stream_stores", [True, ["out"]])
def test_stores_made_by_a_called_function_are_named(stream_stores):
    kernel = sj.stream_kernel(stream_stores=stream_stores, threshold=None)(through_a_call)
    if stream_stores is True:
        kernel(np.random.rand(100), np.zeros(100))
    else:
        with pytest.warns(sj.StreamWarning, match="passed to 'put'.*inline='always'"):
            kernel(np.random.rand(100), np.zeros(100))
    assert any("passed to 'put'" in n for n in kernel.stream_report().arrays["out"].notes)


def test_a_warning_is_given_once_per_kernel_line_not_per_signature():
    kernel = sj.stream_kernel(stream_stores=["out"], threshold=None)(through_a_call)
    with pytest.warns(sj.StreamWarning) as first:
        kernel(np.random.rand(10), np.zeros(10))
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kernel(np.random.rand(10).astype(np.float32), np.zeros(10, np.float32))   # a second signature
    assert len(first) == 1
