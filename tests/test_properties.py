"""Property test: a streamed copy and triad equal NumPy for any size, any
destination and source offset, any dtype."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import kernels as K
from test_correctness import DTYPES, random_array

cases = st.fixed_dictionaries({
    "n": st.one_of(st.integers(0, 70), st.integers(70, 5000)),
    "dst_offset": st.integers(0, 31),
    "src_offset": st.integers(0, 31),
    "dtype": st.sampled_from(DTYPES),
    "seed": st.integers(0, 2**32 - 1),
})


@settings(max_examples=150, deadline=None)
@given(cases)
def test_copy_matches_numpy(case):
    n, dtype = case["n"], case["dtype"]
    rng = np.random.default_rng(case["seed"])
    src_buf = random_array(rng, n + 32, dtype)
    src = src_buf[case["src_offset"]:case["src_offset"] + n]
    sentinel = random_array(rng, 1, dtype)[0]
    buf = np.full(n + 32, sentinel, dtype)
    dst = buf[case["dst_offset"]:case["dst_offset"] + n]
    K.copy(dst, src)
    np.testing.assert_array_equal(dst, src)
    assert (buf[:case["dst_offset"]] == sentinel).all() and (buf[case["dst_offset"] + n:] == sentinel).all()


@settings(max_examples=60, deadline=None)
@given(cases.filter(lambda c: np.dtype(c["dtype"]).kind == "f"))
def test_triad_matches_numpy(case):
    n, dtype = case["n"], case["dtype"]
    rng = np.random.default_rng(case["seed"])
    b, c = random_array(rng, n, dtype), random_array(rng, n, dtype)
    buf = np.zeros(n + 32, dtype)
    a = buf[case["dst_offset"]:case["dst_offset"] + n]
    q = dtype(1.5)
    K.triad(a, b, c, q)
    np.testing.assert_allclose(a, b + q * c, rtol=1e-6, atol=1e-3)
