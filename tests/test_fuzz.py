"""Property tests: streamed kernels equal NumPy / numba.njit for generated
sizes, offsets, strides, dtypes and kernel shapes. A short budget runs with
the suite; `python -m pytest -m fuzz` runs the long one (see conftest.py)."""

import numba
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import kernels as K
from helpers import DTYPES, random_array

pytestmark = pytest.mark.fuzz

cases = st.fixed_dictionaries({
    "n": st.one_of(st.integers(0, 70), st.integers(70, 5000)),
    "dst_offset": st.integers(0, 31),
    "src_offset": st.integers(0, 31),
    "step": st.sampled_from([1, 1, 1, 2, -1]),
    "dtype": st.sampled_from(DTYPES),
    "seed": st.integers(0, 2**32 - 1),
})


def strided_view(buf, offset, n, step):
    view = buf[offset:offset + n * abs(step)]
    return view[::step]


@given(cases)
def test_copy_matches_numpy(case):
    n, dtype, step = case["n"], case["dtype"], case["step"]
    rng = np.random.default_rng(case["seed"])
    src = strided_view(random_array(rng, 2 * n + 64, dtype), case["src_offset"], n, 1)
    sentinel = random_array(rng, 1, dtype)[0]
    buf = np.full(2 * n + 64, sentinel, dtype)
    dst = strided_view(buf, case["dst_offset"], n, step)
    K.copy(dst, src)
    np.testing.assert_array_equal(dst, src)
    untouched = np.ones(buf.shape[0], bool)
    untouched[np.arange(buf.shape[0])[case["dst_offset"]:case["dst_offset"] + n * abs(step)][::step]] = False
    assert (buf[untouched] == sentinel).all()


@given(cases.filter(lambda c: np.dtype(c["dtype"]).kind == "f"))
def test_triad_matches_numpy(case):
    n, dtype = case["n"], case["dtype"]
    rng = np.random.default_rng(case["seed"])
    b, c = random_array(rng, n, dtype), random_array(rng, n, dtype)
    a = strided_view(np.zeros(2 * n + 64, dtype), case["dst_offset"], n, case["step"])
    q = dtype(1.5)
    K.triad(a, b, c, q)
    np.testing.assert_allclose(a, b + q * c, rtol=1e-6, atol=1e-3)


# (compiled once: a dispatcher made per example compiled its two layouts again at each of them)
JACOBI_NJIT = numba.njit(K.jacobi.py_func)

stencil_cases = st.fixed_dictionaries({
    "rows": st.integers(1, 40),
    "cols": st.integers(1, 300),
    "row_offset": st.integers(0, 3),
    "col_offset": st.integers(0, 17),
    "fortran": st.booleans(),
    "seed": st.integers(0, 2**32 - 1),
})


@given(stencil_cases)
def test_stencil_matches_njit_on_views(case):
    rng = np.random.default_rng(case["seed"])
    rows, cols = case["rows"], case["cols"]
    big = random_array(rng, (rows + 4, cols + 20), np.float32)
    if case["fortran"]:
        big = np.asfortranarray(big)
    r0, c0 = case["row_offset"], case["col_offset"]
    g = big[r0:r0 + rows, c0:c0 + cols]
    out = np.zeros_like(big)[r0:r0 + rows, c0:c0 + cols]
    ref = out.copy()
    JACOBI_NJIT(ref, g)
    K.jacobi(out, g)
    np.testing.assert_array_equal(out, ref)
