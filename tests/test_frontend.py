"""The rewritten function behaves like the user's: closures, defaults,
module globals defined later, helper calls, calls from other jitted code,
and the store forms the legality pass accepts."""

import numba
import numpy as np
import pytest

import streamjit as sj
from helpers import X86_AVX


def make_closure_kernel(factor):
    @sj.stream_kernel(stream_stores=["out"])
    def scaled(out, a, bias=1.0):
        for i in range(a.shape[0]):
            out[i] = factor * a[i] + bias

    return scaled


def test_closure_values_and_defaults():
    k = make_closure_kernel(4.0)
    a = np.random.default_rng(0).standard_normal(300)
    out = np.zeros(300)
    k(out, a)
    np.testing.assert_array_equal(out, 4.0 * a + 1.0)
    k(out, a, 0.0)
    np.testing.assert_array_equal(out, 4.0 * a)


@sj.stream_kernel(stream_stores=["out"])
def uses_later_global(out, a):
    for i in range(a.shape[0]):
        out[i] = helper_defined_later(a[i])


@numba.njit
def helper_defined_later(x):
    return 2 * x + 1


def test_module_globals_are_live_and_helpers_callable():
    a = np.random.default_rng(1).standard_normal(500)
    out = np.zeros(500)
    uses_later_global(out, a)
    np.testing.assert_array_equal(out, 2 * a + 1)


def test_callable_from_njit_code():
    @sj.stream_kernel(stream_stores=["out"])
    def fill(out, value):
        for i in range(out.shape[0]):
            out[i] = value

    @numba.njit
    def caller(out):
        fill(out, 3.0)
        return out.sum()

    out = np.zeros(1001)
    assert caller(out) == 3003.0
    assert (out == 3).all()


def test_py_func_and_metadata_are_the_users():
    k = make_closure_kernel(1.0)
    assert k.py_func.__name__ == "scaled"
    assert k.__name__ == "scaled"
    assert "make_closure_kernel" in k.py_func.__qualname__


@sj.stream_kernel(stream_stores=["out"])
def top_level_and_rows(out, a):
    out[0, 0] = -1.0                 # outside any loop: runs once
    for i in range(1, a.shape[0]):
        out[i, :] = a[i]             # an invariant slice: rows are distinct


def test_top_level_store_and_row_slices():
    a = np.random.default_rng(2).standard_normal(6)
    out = np.zeros((6, 5))
    top_level_and_rows(out, a)
    assert out[0, 0] == -1.0 and (out[0, 1:] == 0).all()
    np.testing.assert_array_equal(out[1:], np.repeat(a[1:, None], 5, axis=1))


@sj.stream_kernel(stream_stores=True)
def two_outputs(lo_part, hi_part, a):
    for i in range(a.shape[0]):
        lo_part[i] = a[i] - 1
        hi_part[i] = a[i] + 1


def test_two_streamed_outputs_same_and_different_alignment():
    a = np.random.default_rng(3).standard_normal(2000)
    for off1, off2 in ((0, 0), (1, 1), (0, 3), (5, 2)):
        b1, b2 = np.zeros(2010), np.zeros(2010)
        two_outputs(b1[off1:off1 + 2000], b2[off2:off2 + 2000], a)
        np.testing.assert_array_equal(b1[off1:off1 + 2000], a - 1)
        np.testing.assert_array_equal(b2[off2:off2 + 2000], a + 1)
    if X86_AVX:  # both destinations are aligned by one peel when their offsets agree
        report = two_outputs.stream_report()
        assert report.arrays["lo_part"].nt_vector_stores > 0 and report.arrays["hi_part"].nt_vector_stores > 0


@sj.stream_kernel(stream_stores=["out"])
def keyword_and_step(out, a, step=2):
    for i in range(0, a.shape[0], step):
        out[i] = a[i]


def test_non_unit_step_loops_are_correct_and_plain():
    a = np.random.default_rng(4).standard_normal(101)
    out = np.zeros(101)
    with pytest.warns(sj.StreamWarning, match="no store to it is streamed in keyword_and_step: .* loop step is not 1"):
        keyword_and_step(out, a, step=3)
    expected = np.zeros(101)
    expected[::3] = a[::3]
    np.testing.assert_array_equal(out, expected)
    notes = keyword_and_step.stream_report().arrays["out"].notes
    assert any("loop step is not 1" in n for n in notes)
