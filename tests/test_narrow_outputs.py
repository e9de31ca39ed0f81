"""Outputs narrower than the loop's widest type (booleans and bytes computed
from doubles) stream: the narrow vectors the vectorizer stores back to back
are joined into full-width non-temporal stores (lowering/widen_stores.py)."""

import re

import numba
import numpy as np
import pytest

import streamjit as sj
from test_codegen import needs_x86_avx


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
