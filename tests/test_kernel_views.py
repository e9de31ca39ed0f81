"""Views the kernel makes of an array (``a.ravel()`` of a C-contiguous
array, ``a.reshape(...)``, ``a.T``, a row ``a[i]``) are followed to the array:
their stores are the array's, checked, streamed and counted as its."""

import numba
import numpy as np
import pytest

import streamjit as sj


def through_ravel(out, a):
    o = out.ravel()
    x = a.ravel()
    for i in range(o.shape[0]):
        o[i] = x[i] * 2.0


def through_reshape(out, a):
    o = out.reshape(out.size)
    for i in range(o.shape[0]):
        o[i] = a[i] + 1.0


def through_transpose(out, a):
    t = out.T
    for i in range(t.shape[0]):
        for j in range(t.shape[1]):
            t[i, j] = a[j, i] * 0.5


def through_row(out, a):
    for i in range(out.shape[0]):
        r = out[i]
        for j in range(r.shape[0]):
            r[j] = a[i, j] * 3.0


CASES = {through_ravel: lambda rng: rng.standard_normal((23, 41)),
         through_reshape: lambda rng: rng.standard_normal(23 * 41),
         through_transpose: lambda rng: rng.standard_normal((23, 41)),
         through_row: lambda rng: rng.standard_normal((23, 41))}


@pytest.mark.parametrize("func", list(CASES), ids=lambda f: f.__name__)
def test_stores_through_views_stream_and_equal_njit(func):
    kernel = sj.stream_kernel(stream_stores=["out"], threshold=None)(func)
    a = CASES[func](np.random.default_rng(0))
    expected, got = np.zeros((23, 41)), np.zeros((23, 41))
    numba.njit(func)(expected, a)
    kernel(got, a)
    np.testing.assert_array_equal(got, expected)
    report = kernel.stream_report()
    assert report.arrays["out"].nt_vector_stores > 0 and not report.unfenced_stores


def test_ravel_of_a_strided_array_is_a_copy_and_stays_numba_s():
    # Numba's ravel copies a non-contiguous array: stores to the copy never reach out
    kernel = sj.stream_kernel(stream_stores=["out"], threshold=None)(through_ravel)
    base = np.zeros((23, 42))
    expected, got = base.copy(), base.copy()
    a = np.random.default_rng(1).standard_normal((23, 41))
    numba.njit(through_ravel)(expected[:, 1:], a)
    with pytest.warns(sj.StreamWarning, match="never stores to it"):
        kernel(got[:, 1:], a)
    np.testing.assert_array_equal(got, expected)
