"""Operands of a fused loop read from the array they are slices of, at
shifted indices (`passes/rewrite/view_shifts.py`): where the rule holds, the loop
reads the array itself, and everywhere results equal numba.njit's."""

import re

import numba
import numpy as np
import pytest

import streamjit as sj
from streamjit.passes import array_stores
from helpers import after, compiled_hdiff


def _reads(seen):
    """{array variable an element load of a fused loop reads: how many
    times}, in the IR right after the pass (later passes rewrite loads)."""
    counts = {}
    for array in re.findall(r"\$streamjit_element\.\d+ = getitem\(value=([^,]+),", seen.text):
        counts[array] = counts.get(array, 0) + 1
    return counts


@pytest.mark.xdist_group("hdiff")  # (compiled_hdiff: once per worker, with test_temporaries.py's tests)
def test_hdiffs_views_are_read_from_its_arrays():
    reads = _reads(compiled_hdiff()[1])
    # out_field's loop: lap_field at 8 views (5 reads of in_field each), the
    # 4 gradients (2 each), the centre (and lap_field's own loop, 5 more):
    # every one from in_field itself, none through a view
    assert reads["in_field"] == 8 * 5 + 4 * 2 + 1 + 5 and reads["coeff"] == 1
    assert not [name for name in reads if name.startswith("$")]


def chained(out, a):
    v = a[1:, 2:]
    out[:, :] = v[1:, :-1] * a[2:, 2:-1] - v[:-1, 1:]


def negative_and_strided(out, a):
    out[:] = a[-3:] + a[::2][:3]


def reassigned(out, a):
    a = a[1:]                   # (Numba's SSA names it a.1: a view of the argument a)
    out[:] = a[1:] - a[:-1]


def swapped(out, a, b):
    for _ in range(2):
        out[:] = a[1:] - a[:-1]
        a, b = b, a


def reads_its_destination(out, a):
    out[1:] = out[:-1] + a[1:]


def root_in_another_block(out, a, flag):
    b = a * 2.0
    if flag:
        out[:] = b[1:] - b[:-1]


def test_what_the_rule_leaves_as_views(monkeypatch):
    n = 9
    assert _reads(after(monkeypatch, array_stores, chained, (np.ones((n - 2, n - 3)), np.ones((n, n))),
                        stream_stores=True)) == {"a": 3}
    assert _reads(after(monkeypatch, array_stores, reassigned, (np.ones(n - 2), np.ones(n)),
                        stream_stores=True)) == {"a": 2}
    for kernel, args in ((negative_and_strided, (np.ones(3), np.ones(n))),
                         (swapped, (np.ones(n - 1), np.ones(n), np.ones(n))),
                         (root_in_another_block, (np.ones(n - 1), np.ones(n), True))):
        reads = _reads(after(monkeypatch, array_stores, kernel, args, stream_stores=True))
        assert [name for name in reads if name.startswith("$")], kernel.__name__   # read through their views
    assert "out" not in _reads(after(monkeypatch, array_stores, reads_its_destination, (np.ones(n), np.ones(n)),
                                     stream_stores=True))


COMPILED = {kernel: (sj.stream_kernel(stream_stores=True, threshold=None)(kernel), numba.njit(kernel))
            for kernel in (chained, negative_and_strided, reassigned, swapped, reads_its_destination,
                           root_in_another_block)}


def test_shifted_reads_equal_njit():
    # (the sizes in one test: parametrized, each xdist worker compiled the six kernels again)
    for n in (0, 1, 2, 3, 4, 5, 17):
        _check_shifted_reads(n)


def _check_shifted_reads(n):
    rng = np.random.default_rng(n)
    a2 = rng.standard_normal((n + 3, n + 3))
    cases = [(chained, (np.empty((n + 1, max(n, 0))), a2)),
             (negative_and_strided, (np.empty(3), rng.standard_normal(n + 5))),
             (reassigned, (np.empty(max(n - 2, 0)), rng.standard_normal(n))),
             (swapped, (np.empty(n), rng.standard_normal(n + 1), rng.standard_normal(n + 1))),
             (reads_its_destination, (rng.standard_normal(n + 1), rng.standard_normal(n + 1))),
             (root_in_another_block, (np.empty(n), rng.standard_normal(n + 1), True))]
    for kernel, args in cases:
        streamed, plain = COMPILED[kernel]
        got, want = [a.copy() for a in args[:2]], [a.copy() for a in args[:2]]
        streamed(*got, *args[2:])
        plain(*want, *args[2:])
        np.testing.assert_array_equal(got[0], want[0], err_msg=f"{kernel.__name__}, n={n}")


def test_a_start_past_the_end_on_an_empty_destination():
    def past(out, a):
        out[:] = a[3:] + a[5:]      # both clamped to a's length: empty, as out is

    kernel, a = sj.stream_kernel(stream_stores=True, threshold=None)(past), np.arange(2.0)
    out = np.empty(0)
    kernel(out, a)
    with pytest.raises(ValueError):
        kernel(np.empty(1), a)      # numba's own code raises, as njit does
    with pytest.raises(ValueError):
        numba.njit(past)(np.empty(1), a)


def explicit_slice_of_stop(out, a):
    out[:] = a[slice(3)] + a[slice(1, 4)]      # slice(3) is a[:3], not a[3:]


def test_an_explicit_slice_of_its_stop_is_not_read_as_a_start():
    a = np.random.default_rng(9).standard_normal(5)
    got, want = np.empty(3), np.empty(3)
    sj.stream_kernel(stream_stores=True, threshold=None)(explicit_slice_of_stop)(got, a)
    numba.njit(explicit_slice_of_stop)(want, a)
    np.testing.assert_array_equal(got, want)
