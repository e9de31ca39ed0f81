"""Fused slice stores of operators on two arrays of different dtypes (bool,
signed and unsigned integers, floats), unshifted and read through shifted
views, equal numba.njit bit for bit. Numba types a fused element's operator
as the scalar operator (``bool > int64`` compares int64s, ``int64 < uint64``
float64s, ``int64 + uint64`` adds int64s) and casts the result to the array
expression's type, which the ufunc's loop gives (``int64 + uint64``: a
float64 array); the fused loop must do both the same way. Comparisons and
division see full-range integers; sums and products see 64-bit integers
within ±2**31 as well, since a signed 64-bit overflow is undefined in Numba
(``nsw``) and njit's own result then depends on the spelling."""

import numba
import numpy as np
import pytest

import streamjit as sj

pytestmark = pytest.mark.filterwarnings("ignore::streamjit.StreamWarning")
OPERATORS = ["<", "==", "/", "+", "*"]
DEFINED_ON_FULL_RANGE = 3  # (the first three)
PAIRS = [(np.bool_, np.int64), (np.bool_, np.uint64), (np.int64, np.uint64), (np.int8, np.uint64),
         (np.uint32, np.int32), (np.bool_, np.float32), (np.uint64, np.float32), (np.int64, np.float64)]


def _functions():
    """The kernel storing ``a <op> b`` for each operator, whole and shifted,
    and a function returning those arrays (their dtypes)."""
    outputs = [f"o{k}" for k in range(2 * len(OPERATORS))]
    lines = [f"def kernel({', '.join(outputs)}, a, b):"]
    for k, symbol in enumerate(OPERATORS):
        lines += [f"    o{2 * k}[:] = a {symbol} b", f"    o{2 * k + 1}[1:] = a[:-1] {symbol} b[1:]"]
    lines += ["def results(a, b):", f"    return ({', '.join(f'a {symbol} b' for symbol in OPERATORS)})"]
    namespace = {}
    exec(compile("\n".join(lines) + "\n", "<mixed operand kernel>", "exec"), namespace)
    return namespace["kernel"], namespace["results"]


KERNEL, RESULTS = _functions()


def _data(rng, dtype, n, bounded):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, n).astype(np.bool_)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        low, high = (max(info.min, -2 ** 31), 2 ** 31) if bounded and dtype.itemsize == 8 else (info.min, info.max)
        values = rng.integers(low, high, n, dtype=dtype, endpoint=True)
        values[rng.integers(0, n, n // 8)] = 0
        return values
    values = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 20, n)).astype(dtype)
    special = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0], dtype)
    values[rng.integers(0, n, n // 8)] = special[rng.integers(0, 5, n // 8)]
    return values


@pytest.mark.parametrize("dtypes", PAIRS, ids=lambda d: "-".join(np.dtype(t).name for t in d))
def test_mixed_operand_dtypes_equal_njit(dtypes):
    plain, streamed = numba.njit(KERNEL), sj.stream_kernel(stream_stores=True, threshold=None)(KERNEL)
    rng = np.random.default_rng(PAIRS.index(dtypes))
    result_dtypes = [r.dtype for r in numba.njit(RESULTS)(_data(rng, dtypes[0], 1, True),
                                                          _data(rng, dtypes[1], 1, True))]
    for n in (1, 7, 300):
        for bounded in (True, False):
            a, b = _data(rng, dtypes[0], n, bounded), _data(rng, dtypes[1], n, bounded)
            want = [np.zeros(n, d) for d in result_dtypes for _ in range(2)]
            got = [np.zeros(n, d) for d in result_dtypes for _ in range(2)]
            plain(*want, a, b)
            streamed(*got, a, b)
            compared = len(want) if bounded else 2 * DEFINED_ON_FULL_RANGE
            for g, w, symbol in zip(got[:compared], want[:compared], np.repeat(OPERATORS, 2)):
                assert np.array_equal(g.view(np.uint8), w.view(np.uint8)), (symbol, n, a, b, g, w)
