"""One fence per execution of the outermost nest that writes each element
once: a row store inside loops that select the row (NPBench's
doitgen) is fenced after the whole nest, not after each row; a time loop,
or a loop whose body hands the array to code that may read what was
streamed, still fences each execution of the nest inside it. And a slice
update that reads shifted views of its own array (seidel_2d) builds no
fused loop: the kernel is Numba's."""

import os
import sys

import numba
import numpy as np
import pytest
from numba.core import ir
from numba.core.analysis import compute_cfg_from_blocks

import streamjit as sj
from streamjit.passes import array_stores, fence_placement, legality

from helpers import after

# the benchmark's kernel (bench/fences_per_nest.py): one definition, timed there, checked here
sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "bench"))
from fences_per_nest import doitgen_loop as doitgen  # noqa: E402


def library_reads_the_row_first(A, c):
    for r in range(A.shape[0]):
        for q in range(A.shape[1]):
            A[r, q, :] = np.cumsum(A[r, q, :]) * c   # a call reading the row before it is stored: a load


def rows_in_time_loop(A, x, steps):
    for t in range(steps):
        for q in range(A.shape[0]):
            A[q, :] = x * t


def reads_the_row_streamed_before(A, x):
    for q in range(1, A.shape[0]):
        A[q, :] = x * np.sum(A[q - 1])   # a library call reads the previous row, streamed in this nest


def seidel_rows(TSTEPS, N, A):
    for t in range(0, TSTEPS - 1):
        for i in range(1, N - 1):
            A[i, 1:-1] += (A[i - 1, :-2] + A[i - 1, 1:-1] + A[i - 1, 2:] + A[i, 2:] + A[i + 1, :-2]
                           + A[i + 1, 1:-1] + A[i + 1, 2:]) / 9.0


def _fence_loop_depths(seen):
    """For each block that fences, how many loops hold it."""
    blocks = seen.state.func_ir.blocks
    loops = compute_cfg_from_blocks(blocks).loops().values()
    return sorted(sum(label in lp.body for lp in loops) for label, block in blocks.items()
                  if any(isinstance(s, ir.Assign) and isinstance(s.value, ir.Global) and s.value.name == "store_fence"
                         for s in block.body))


def _misaligned(shape, rng):
    """A C-contiguous array 8 bytes off any vector alignment."""
    buffer = np.empty(int(np.prod(shape)) + 1)
    view = buffer[1:].reshape(shape)
    view[...] = rng.random(shape)
    return view


@pytest.mark.parametrize("sizes", [(3, 5, 17), (4, 9, 37), (2, 3, 33)])
def test_doitgen_equals_njit_on_odd_sizes_and_misaligned_views(sizes):
    rng = np.random.default_rng(sum(sizes))
    NR, NQ, NP = sizes
    A, C4 = _misaligned(sizes, rng), rng.random((NP, NP))
    expected = A.copy()
    numba.njit(doitgen)(NR, NQ, NP, expected, C4)
    kernel = sj.stream_kernel(stream_stores=True)(doitgen)
    kernel(NR, NQ, NP, A, C4)
    assert np.array_equal(A, expected)
    assert kernel.stream_calls()["streamed"] == 1  # (threshold 0 in the suite: the aligned loop ran)


def test_doitgen_nest_is_rooted_at_r_and_fenced_once_per_call(monkeypatch):
    args = (2, 3, 16, np.random.rand(2, 3, 16), np.random.rand(16, 16))
    seen = after(monkeypatch, legality, doitgen, args, stream_stores=True)
    (root, _), = seen.state.stream_facts.legal.values()
    assert root.var == "r" and root.parent is None
    seen = after(monkeypatch, fence_placement, doitgen, args, stream_stores=True)
    assert _fence_loop_depths(seen) and set(_fence_loop_depths(seen)) == {0}   # outside every loop: once per call
    kernel = sj.stream_kernel(stream_stores=True)(doitgen)
    kernel(*args)
    asm = kernel.inspect_asm(kernel.signatures[0])
    assert "sfence" in asm and "movntpd" in asm


def test_a_library_call_reading_the_row_first_does_not_cut_the_nest(monkeypatch):
    A = np.random.rand(3, 4, 16)
    # (named: under stream_stores=True a row read just before it is stored is an update in place, plain)
    seen = after(monkeypatch, legality, library_reads_the_row_first, (A.copy(), 0.5), stream_stores=["A"],
                 threshold=None)
    (root, _), = seen.state.stream_facts.legal.values()
    assert root.var == "r"
    expected = A.copy()
    numba.njit(library_reads_the_row_first)(expected, 0.5)
    sj.stream_kernel(stream_stores=["A"], threshold=None)(library_reads_the_row_first)(A, 0.5)
    assert np.array_equal(A, expected)


def test_a_row_read_just_before_it_is_stored_is_an_update_in_place():
    """NPBench's doitgen (``tmp = A[r, q, :] @ C4; A[r, q, :] = tmp``)
    streamed its rows at 0.96x the same code never streamed: the row's
    lines are in cache when they are written, so there is no read to save.
    stream_stores=True leaves it plain, as it does ``A[r, q, :] *= c``."""
    A = np.random.rand(3, 4, 16)
    kernel = sj.stream_kernel(stream_stores=True)(library_reads_the_row_first)
    expected = A.copy()
    numba.njit(library_reads_the_row_first)(expected, 0.5)
    kernel(A, 0.5)
    assert np.array_equal(A, expected)
    assert kernel.stream_result().streamed_stores == frozenset()
    notes = kernel.stream_report().arrays["A"].notes
    assert any("only updated in place" in n for n in notes)
    assert any("an update of what the block read before it" in n for n in notes)


def test_a_time_loop_still_fences_each_execution_of_the_row_nest(monkeypatch):
    A, x = np.zeros((5, 16)), np.random.rand(16)
    seen = after(monkeypatch, legality, rows_in_time_loop, (A, x, 3), stream_stores=True)
    (root, _), = seen.state.stream_facts.legal.values()
    assert root.var == "q"
    seen = after(monkeypatch, fence_placement, rows_in_time_loop, (A.copy(), x, 3), stream_stores=True)
    assert set(_fence_loop_depths(seen)) == {1}   # inside the time loop
    expected = np.zeros((5, 16))
    numba.njit(rows_in_time_loop)(expected, x, 3)
    sj.stream_kernel(stream_stores=True)(rows_in_time_loop)(A, x, 3)
    assert np.array_equal(A, expected)


def test_a_call_reading_a_row_streamed_in_the_nest_keeps_the_fence_per_row(monkeypatch):
    A, x = np.random.rand(6, 16), np.random.rand(16)
    seen = after(monkeypatch, legality, reads_the_row_streamed_before, (A.copy(), x), stream_stores=True)
    (root, _), = seen.state.stream_facts.legal.values()
    assert root.var != "q"   # the fused loop's own, inside q
    expected = A.copy()
    numba.njit(reads_the_row_streamed_before)(expected, x)
    sj.stream_kernel(stream_stores=True)(reads_the_row_streamed_before)(A, x)
    assert np.array_equal(A, expected)


def test_seidel_rows_build_no_fused_loop_and_equal_njit(monkeypatch):
    A = np.random.rand(11, 13)
    with pytest.warns(sj.StreamWarning, match="shifted views"):
        seen = after(monkeypatch, array_stores, seidel_rows, (3, 11, A.copy()), stream_stores=True)
    assert "copies_elementwise" not in seen.text and not seen.state.stream_facts.fallbacks
    expected = A.copy()
    numba.njit(seidel_rows)(3, 11, expected)
    kernel = sj.stream_kernel(stream_stores=True)(seidel_rows)
    with pytest.warns(sj.StreamWarning, match="shifted views"):
        kernel(3, 11, A)
    assert np.array_equal(A, expected)
    asm = kernel.inspect_asm(kernel.signatures[0])
    assert "sfence" not in asm and "movnt" not in asm


def whole_array_update(A):
    A[:] = np.sort(A) * 0.5 + A           # cholesky2's A[:] = np.linalg.cholesky(A) + np.triu(A, k=1)


def test_a_whole_array_handed_to_a_function_then_stored_is_an_update_in_place():
    """NPBench's cholesky2 streamed ``A[:] = ...`` of a 31 MiB A that
    ``np.linalg.cholesky(A)`` had just read: 0.92x never streamed."""
    A = np.random.rand(1000)
    expected = A.copy()
    numba.njit(whole_array_update)(expected)
    kernel = sj.stream_kernel(stream_stores=True, threshold=None)(whole_array_update)
    kernel(A)
    assert np.array_equal(A, expected) and kernel.stream_result().streamed_stores == frozenset()
    assert any("only updated in place" in n for n in kernel.stream_report().arrays["A"].notes)
