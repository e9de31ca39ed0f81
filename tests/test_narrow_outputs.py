"""Outputs narrower than the loop's widest type (booleans and bytes computed
from doubles) stream: the narrow vectors the vectorizer stores back to back
are joined into full-width non-temporal stores (post_o3/widen_stores.py),
and convert from floating point as njit does, bytes included."""

import re

import numba
import numpy as np
import pytest

import streamjit as sj
from helpers import needs_x86_avx


def compare_loop(out, a):
    for i in range(a.shape[0]):
        out[i] = a[i] > 0.5


def compare_arrays(out, a, b):
    out[:] = a < b


def to_bytes(out, a):
    for i in range(a.shape[0]):
        out[i] = np.int8(a[i] * 100.0)


def compare_reversed(out, a):
    for i in range(a.shape[0] - 1, -1, -1):   # narrow stores going down in memory
        out[i] = a[i] > 0.5


CASES = {compare_loop: np.bool_, compare_arrays: np.bool_, to_bytes: np.int8, compare_reversed: np.bool_}
KERNELS = {f: (sj.stream_kernel(stream_stores=["out"], threshold=None)(f), numba.njit(f)) for f in CASES}


def _inputs(func, n, rng):
    return [rng.random(n) for _ in range(2 if func is compare_arrays else 1)]


@pytest.mark.parametrize("func", list(CASES), ids=lambda f: f.__name__)
@pytest.mark.parametrize("n", [0, 1, 17, 1001, 4099])
def test_narrow_outputs_equal_njit(func, n):
    streamed, plain = KERNELS[func]
    rng = np.random.default_rng(n)
    inputs = _inputs(func, n, rng)
    base = np.zeros(n + 17, CASES[func])
    for view in (lambda x: x[1:n + 1], lambda x: x[:n], lambda x: x[n:0:-1] if n else x[:0]):
        expected, got = base.copy(), base.copy()
        plain(view(expected), *inputs)
        streamed(view(got), *inputs)
        np.testing.assert_array_equal(got, expected)


@needs_x86_avx
@pytest.mark.parametrize("func", list(CASES), ids=lambda f: f.__name__)
def test_narrow_outputs_hold_vector_nt_stores(func):
    streamed, _ = KERNELS[func]
    streamed(np.zeros(3001, CASES[func])[1:], *_inputs(func, 3000, np.random.default_rng(0)))
    sig = streamed.signatures[-1]
    assert streamed.stream_report(sig).arrays["out"].nt_vector_stores > 0
    assert re.search(r"^\s*vmovntdq\s+%[xyz]mm", streamed.inspect_asm(sig), re.M)


def converted(out, a):
    for i in range(a.shape[0]):
        out[i] = a[i]


def converted_reversed(out, a):
    for i in range(a.shape[0] - 1, -1, -1):
        out[i] = a[i]


def converted_scaled(out, a):
    for i in range(a.shape[0]):
        out[i] = a[i] * 2.0 - 1.0


# (source, output): float32 -> uint16 is left out: njit's full-width vector
# loop saturates (vpackusdw) where its scalar code, and NumPy, wrap, so which
# elements it saturates depends on where the peel starts the vector loop
CONVERSIONS = [(np.float64, np.uint8), (np.float64, np.int8), (np.float64, np.uint16), (np.float64, np.bool_),
               (np.float32, np.uint8), (np.float32, np.int8), (np.float32, np.bool_)]


@needs_x86_avx
@pytest.mark.parametrize("func", [converted, converted_reversed, converted_scaled], ids=lambda f: f.__name__)
@pytest.mark.parametrize("source, output", CONVERSIONS, ids=lambda t: np.dtype(t).name)
def test_out_of_range_conversions_equal_njit_byte_for_byte(func, source, output):
    """-49.5 -> uint8 gave 0 where njit and NumPy give 207 (the
    joined narrow stores' conversion became a saturating pack). An
    out-of-range conversion is undefined in LLVM (poison), for njit as for
    us: where njit wraps throughout as NumPy does (AVX-512), the streamed
    output must equal it byte for byte; where njit's own vector loop
    saturates and its scalar loops wrap (AVX2: -49.5 -> uint16 is 0 in the
    one, 65487 in the other, so the value depends on which loop stores the
    element), only the in-range elements are defined, and they must be
    equal. Lengths whose remainder after njit's 16-wide loop is under 4
    elements: longer, njit's own 4-wide epilogue saturates too."""
    streamed, plain = sj.stream_kernel(stream_stores=["out"], threshold=None)(func), numba.njit(func)
    rng = np.random.default_rng(0)
    for n in (515, 1027, 4099):
        for offset in (0, 1, 3):
            a = rng.uniform(-70000, 70000, n).astype(source)
            if output is not np.bool_:  # every other element in range, scaled or not
                a[1::2] = rng.uniform(np.iinfo(output).min / 2, np.iinfo(output).max / 2, n // 2)
            a[:3] = (-49.5, -1.0, 300.0)
            expected, out = np.zeros(n + offset, output)[offset:], np.zeros(n + offset, output)[offset:]
            plain(expected, a)
            streamed(out, a)
            values = a * 2.0 - 1.0 if func is converted_scaled else a
            if output is np.bool_ or np.array_equal(expected, values.astype(np.int64).astype(output)):
                assert out.tobytes() == expected.tobytes(), (n, offset)
            else:
                in_range = (values > np.iinfo(output).min - 1) & (values < np.iinfo(output).max + 1)
                assert np.array_equal(out[in_range], expected[in_range]), (n, offset)
    assert streamed.stream_report(streamed.signatures[0]).arrays["out"].nt_vector_stores > 0
