"""Fills stream: ``arr.fill(v)``, ``arr[...] = v``, ``arr[:] = 0`` and loops
storing a loop-invariant value, zero or not, for every numeric dtype and
complex, through Numba's method overload and as explicit loops, on views,
rows and 2-D arrays. LLVM's loop idiom pass never turns them into memset."""

import re

import numba
import numpy as np
import pytest

import streamjit as sj
from fill_kernels import fillArr, fillArrSmall
from helpers import needs_x86_avx

DTYPES = [np.float64, np.float32, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.int64, np.uint64,
          np.complex128, np.complex64, np.bool_]


def fill_method(arr, v):
    arr.fill(v)


def fill_ellipsis(arr, v):
    arr[...] = v


def fill_slice_zero(arr, v):
    arr[:] = 0


def fill_loop(arr, v):
    for i in range(arr.shape[0]):
        arr[i] = v


def fill_loop_zero(arr, v):
    for i in range(arr.shape[0]):
        arr[i] = 0


def fill_interior(arr, v):
    arr[1:-1] = v


FORMS = [fill_method, fill_ellipsis, fill_slice_zero, fill_loop, fill_loop_zero, fill_interior]
KERNELS = {}


def kernel(form, name="arr"):
    if (form, name) not in KERNELS:
        KERNELS[form, name] = (sj.stream_kernel(stream_stores=[name])(form), numba.njit(form))
    return KERNELS[form, name]


def value_of(dtype):
    return dtype(True) if dtype is np.bool_ else dtype(3) if np.dtype(dtype).kind != "c" else dtype(3 - 2j)


def views(dtype, n=1001):
    base = (np.random.default_rng(n).standard_normal(n + 8) * 50).astype(dtype)
    return {"misaligned": base[1:n], "reversed": base[::-1], "strided": base[::3], "empty": base[:0],
            "aligned": base[:n]}


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("form", FORMS, ids=lambda f: f.__name__)
def test_fill_equals_njit_and_streams(form, dtype):
    streamed, plain = kernel(form)
    v = value_of(dtype)
    for label, view in views(dtype).items():
        expected = view.copy()
        plain(expected, v)
        got = view.copy()
        streamed(got, v)
        np.testing.assert_array_equal(got, expected, err_msg=label)
    report = streamed.stream_report(streamed.signatures[0])
    assert report.arrays["arr"].nt_vector_stores > 0, report
    assert "memset" not in report.arrays["arr"].notes


@needs_x86_avx
@pytest.mark.parametrize("dtype", [np.float64, np.uint8], ids=["float64", "uint8"])
def test_zero_fill_machine_code_is_vector_nt_stores_not_memset(dtype):
    streamed, _ = kernel(fill_method)
    a = np.ones(4096, dtype)
    streamed(a, dtype(0))
    assert not a.any()
    sig = streamed.signatures[-1]
    asm = streamed.inspect_asm(sig)
    assert re.search(r"^\s*vmovnt(?:ps|pd|dq)\s+%[yz]mm", asm, re.M)
    assert re.search(r"^\s*sfence", asm, re.M)
    # the streamed loop is not a call to memset (Numba's own array helpers may still call it)
    llvm_ir = streamed.inspect_llvm(sig)
    assert not re.search(r"call void @llvm\.memset[^\n]*!alias\.scope", llvm_ir)


@pytest.mark.parametrize("form", ["rows", "ellipsis", "method"])
def test_two_dimensional_fills(form):
    def rows(m, v):
        for i in range(m.shape[0]):
            m[i] = v

    def ellipsis(m, v):
        m[...] = v

    def method(m, v):
        m.fill(v)

    func = {"rows": rows, "ellipsis": ellipsis, "method": method}[form]
    streamed, plain = sj.stream_kernel(stream_stores=["m"])(func), numba.njit(func)
    base = np.random.default_rng(2).standard_normal((37, 70))
    for view in (base[:, 1:], base[1:, :-3], base[::-1]):
        expected, got = view.copy(), view.copy()
        plain(expected, 0.0)
        streamed(got, 0.0)
        np.testing.assert_array_equal(got, expected)
    assert streamed.stream_report().arrays["m"].nt_vector_stores > 0


def test_numba_issue_7534_fill_streams():
    report = fillArr.stream_report()
    assert report.arrays["arr"].nt_vector_stores > 0 and report.fences >= 1
    arr = np.full(1001, 7.0)
    fillArrSmall(arr)
    assert not arr.any()
    with pytest.raises(AssertionError):
        fillArrSmall(np.full(1000, 7.0))


def test_plain_path_keeps_memset_and_the_streamed_path_streams_it():
    """Below the threshold a zero fill is Numba's (LLVM's memset, the faster
    fill in cache); the memset LLVM made of the aligned loop is a streamed fill."""
    kernel = sj.stream_kernel(stream_stores=["arr"], threshold=1 << 16)(fill_slice_zero)
    for n in (1000, 100_000):
        a = np.ones(n + 1)[1:]
        kernel(a, 0.0)
        assert not a.any()
    llvm_ir = kernel.inspect_llvm(kernel.signatures[0])
    assert re.search(r"call void @llvm\.memset\.p0\.i64\((?![^\n]*!alias\.scope)", llvm_ir)
    assert re.search(r"call void @streamjit\.stream_fill\.\d+\(ptr %[\w.\-]+, i8 0,", llvm_ir)
    assert kernel.stream_report().arrays["arr"].nt_vector_stores > 0
