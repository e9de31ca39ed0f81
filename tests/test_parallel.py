"""parallel=True: prange kernels stream and fence in every worker, with the
same results as the plain loop, and no path from a streamed store to a
return skips the fence (readers in other threads never see stale data
after the call returns)."""

import re
import types

import numba
import numpy as np
import pytest

import stencil_kernels as S
import streamjit as sj
from asm_paths import fence_paths, nt_stores_and_unfenced
from streamjit.codegen import CALL_PATHS
from streamjit.passes.parallel_blocks import BLOCK
from streamjit.post_o3 import exit_fences, stages
from streamjit.llvm_text.counts import is_store_fence
from helpers import needs_x86_avx, random_array


@sj.stream_kernel(stream_stores=["a"], parallel=True)
def triad(a, b, c, q):
    for i in sj.prange(a.shape[0]):
        a[i] = b[i] + q * c[i]


@sj.stream_kernel(stream_stores=["out"], stream_loads=["g"], parallel=True)
def jacobi(out, g):
    for r in sj.prange(1, g.shape[0] - 1):
        for c in range(1, g.shape[1] - 1):
            out[r, c] = 0.2 * (g[r, c] + g[r, c - 1] + g[r, c + 1] + g[r - 1, c] + g[r + 1, c])


@sj.stream_kernel(stream_stores=["out"], parallel=True)
def fill(out, value):
    for i in sj.prange(out.shape[0]):
        out[i] = value


@pytest.fixture(scope="module", autouse=True)
def two_threads():
    previous = numba.get_num_threads()
    numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
    yield
    numba.set_num_threads(previous)


@pytest.mark.parametrize("n", [0, 1, 17, 16385, 100003, 3 * BLOCK + 5])
@pytest.mark.parametrize("offset", [0, 1, 7])
def test_triad_sizes_and_views(n, offset):
    rng = np.random.default_rng(n + offset)
    b, c = random_array(rng, n, np.float64), random_array(rng, n, np.float64)
    buf = np.full(n + 16, -1.0)
    a = buf[offset:offset + n]
    triad(a, b, c, 2.5)
    np.testing.assert_array_equal(a, b + 2.5 * c)
    assert (buf[:offset] == -1).all() and (buf[offset + n:] == -1).all()


@pytest.mark.parametrize("shape", [(3, 3), (50, 1001), (7, 40000)])
def test_stencil_rows_in_parallel(shape):
    g = random_array(np.random.default_rng(1), shape, np.float64)
    out, ref = np.zeros_like(g), np.zeros_like(g)
    jacobi(out, g)
    numba.njit(jacobi.py_func)(ref, g)
    np.testing.assert_array_equal(out, ref)


@needs_x86_avx
def test_worker_code_streams_and_fences():
    a = np.zeros(1000)
    triad(a, a.copy(), a.copy(), 1.0)
    sig = triad.signatures[0]
    report = triad.stream_report(sig)
    assert report.arrays["a"].nt_vector_stores > 0 and report.fences >= 1
    asm = triad.inspect_asm(sig)
    worker = asm[asm.index("__numba_parfor_gufunc"):]
    assert re.search(r"vmovntp[sd]\s+%[yz]mm", worker) and re.search(r"^\s*sfence", worker, re.M)
    jacobi(np.zeros((5, 100)), np.zeros((5, 100)))
    assert jacobi.stream_report().arrays["g"].prefetches > 0


def test_reduction_on_a_streamed_array_is_rejected():
    def reduce_into(out, a):
        for i in sj.prange(a.shape[0]):
            out[0] += a[i]

    kernel = sj.stream_kernel(stream_stores=["out"], parallel=True)(reduce_into)
    with pytest.raises(sj.StreamLegalityError, match="does not depend on the loop variable 'i'"):
        kernel(np.zeros(1), np.ones(10))


def _drop_every_fence(module, target):
    """A post-O3 stage that undoes the fences: the code a check must reject."""
    changed = False
    for function in module.functions:
        for block in function.blocks:
            kept = [inst for inst in block.insts if not is_store_fence(inst)]
            changed |= len(kept) != len(block.insts)
            block.insts[:] = kept
    return changed


def _asm_of(kernel, *args):
    kernel(*args)
    return kernel.inspect_asm(tuple(numba.typeof(a) for a in args))


def _divide_all(out, a, d):
    for i in range(a.shape[0]):
        out[i] = a[i] // d[0]  # (ZeroDivisionError, raised from inside the streamed loop)


divide_all = sj.stream_kernel(stream_stores=["out"])(_divide_all)


@needs_x86_avx
@pytest.mark.parametrize("name", ["triad", "fill", "jacobi", "divide_all"])
def test_no_path_from_a_streamed_store_to_a_return_skips_the_fence(name):
    """Readers in other threads see every value once the call returns: in
    the machine code of the kernel and of each worker, every path from a
    non-temporal store to the function's return passes an ``sfence``, the
    paths of the exceptions raised inside a streamed loop included. (A
    reader thread that compared the array after each call passed with the
    fences removed too: the event that handed it over ordered the stores
    itself.)"""
    n = 3 * BLOCK + 5
    args = {"triad": (triad, np.zeros(n), np.ones(n), np.ones(n), 2.0),
            "fill": (fill, np.zeros(n, np.float32), np.float32(3.0)),
            "jacobi": (jacobi, np.zeros((40, 1003)), np.ones((40, 1003))),
            "divide_all": (divide_all, np.zeros(5000), np.arange(1.0, 5001.0), np.ones(1))}[name]
    paths = fence_paths(_asm_of(*args))
    streaming = [p for p in paths if p.stores]
    assert streaming and all("__numba_parfor_gufunc" in p.name for p in streaming) == (name != "divide_all"), \
        [(p.name, len(p.stores)) for p in paths]
    assert not [(p.name, p.unfenced) for p in paths if p.unfenced]


@needs_x86_avx
@pytest.mark.parametrize("removed", ["every fence", "the exit fences"])
def test_the_path_check_finds_stores_left_unfenced(monkeypatch, removed):
    """The check above fails on code whose fences are gone: every one (a
    post-O3 stage added after the others drops them), or only the exit
    fences, so that the exception raised inside the nest leaves unfenced."""
    if removed == "every fence":
        drop = types.ModuleType("drop_every_fence")
        drop.run = _drop_every_fence
        monkeypatch.setattr(stages, "STAGES", stages.STAGES + (drop,))
        kernel = sj.stream_kernel(stream_stores=["out"], parallel=True)(fill.py_func)
        args = (np.zeros(3 * BLOCK + 5, np.float32), np.float32(3.0))
    else:
        monkeypatch.setattr(exit_fences, "run", lambda module, target: False)
        kernel = sj.stream_kernel(stream_stores=["out"])(_divide_all)
        args = (np.zeros(5000), np.arange(1.0, 5001.0), np.ones(1))
    stores, unfenced = nt_stores_and_unfenced(_asm_of(kernel, *args))
    assert stores and unfenced
    if removed == "every fence":
        assert any("__numba_parfor_gufunc" in name for name, _ in unfenced)


def test_parallel_stencil_matches_numba_stencil():
    a = random_array(np.random.default_rng(2), (300, 700), np.float32)
    got = sj.stencil(S.jacobi_f32, parallel=True)(a)
    np.testing.assert_array_equal(got, numba.stencil(S.jacobi_f32)(a))


def test_a_pure_copy_in_prange_keeps_its_streamed_stores():
    # a worker's arguments are noalias: LLVM would turn the copy loop into memcpy
    @sj.stream_kernel(stream_stores=["dst"], parallel=True)
    def parallel_copy(dst, src):
        for i in sj.prange(dst.shape[0]):
            dst[i] = src[i]

    src = np.random.default_rng(7).standard_normal(100_003).astype(np.float32)
    dst = np.zeros_like(src)
    parallel_copy(dst[1:], src[:-1])
    np.testing.assert_array_equal(dst[1:], src[:-1])
    report = parallel_copy.stream_report()
    assert report.arrays["dst"].nt_vector_stores > 0 and report.machine_nt_vector_stores > 0
    assert report.unfenced_stores == 0, str(report)   # each worker fences its own stores


def test_inner_prange_in_a_row_loop_streams():
    """A prange inside a sequential row loop writes each
    element once (its blocks cover disjoint column ranges): legal, streamed."""
    def rows_then_parallel_columns(dst, src):
        for i in range(dst.shape[0]):
            for j in sj.prange(dst.shape[1]):
                dst[i, j] = src[i, j] * 0.5

    kernel = sj.stream_kernel(stream_stores=["dst"], parallel=True)(rows_then_parallel_columns)
    src = np.random.default_rng(4).standard_normal((37, 1003))
    expected = np.empty_like(src)
    numba.njit(parallel=True)(rows_then_parallel_columns)(expected, src)
    dst = np.empty((37, 1004))[:, 1:]
    kernel(dst, src)
    np.testing.assert_array_equal(dst, expected)
    assert kernel.stream_report().arrays["dst"].nt_vector_stores > 0


def parallel_copy(dst, src):
    for i in sj.prange(dst.shape[0]):
        dst[i] = src[i]


def test_parallel_calls_are_counted_once_per_call():
    """The call record's counts are sums, which parfors carry out of their
    workers: a call whose loop runs as several blocks on two threads counts
    once, on the path it took, as a serial call does."""
    kernel = sj.stream_kernel(stream_stores=["dst"], threshold=4096, parallel=True)(parallel_copy)
    large, small = np.random.rand(3 * BLOCK + 5), np.random.rand(10)
    for src in (large, small, small):
        dst = np.empty_like(src)
        kernel(dst, src)
        np.testing.assert_array_equal(dst, src)
    assert kernel.stream_calls() == dict.fromkeys(CALL_PATHS, 0) | {"streamed": 1, "below_threshold": 2}
    strided = np.random.rand(3 * BLOCK + 5, 2)[:, 0]  # (a non-contiguous source: every block's check fails)
    kernel(np.empty_like(strided), strided)
    assert kernel.stream_calls(kernel.signatures[-1]) == \
        dict.fromkeys(CALL_PATHS, 0) | {"after_check": 1}
    assert kernel.stream_fallbacks(kernel.signatures[-1]) == \
        {"bounds": 0, "alignment": 0, "contiguous": 1, "page_alias": 0, "operands": 0}
    assert "1 plain after a run-time check (1: a row that is not contiguous)" in \
        str(kernel.stream_report(kernel.signatures[-1]))


def result_of_2d(a, b):
    return a + 1.0


def inplace_on_rows(a, b):
    a[1:] -= 0.5 * (b[1:] - b[:-1])


def shifted_3d(a, b):
    a[1:-1, 1:-1, :] = b[2:, 1:-1, :] + b[:-2, 1:-1, :] - 4.0 * b[1:-1, 1:-1, :]


@pytest.mark.parametrize("kernel", [result_of_2d, inplace_on_rows, shifted_3d])
def test_fused_loop_nests_under_parallel_compile_and_equal_njit(kernel):
    """A fused loop nest of 2 or 3 dimensions under parallel=True: its
    outer loop is a prange, whose inner loops exit through a block of
    their own (Numba's prange conversion failed without one)."""
    rng = np.random.default_rng(5)
    shape = (37, 41) if kernel is not shifted_3d else (9, 11, 13)
    a, b = rng.standard_normal(shape), rng.standard_normal(shape)
    got_a, want_a = a.copy(), a.copy()
    got = sj.stream_kernel(stream_stores=True, parallel=True, threshold=None)(kernel)(got_a, b)
    want = numba.njit(parallel=True)(kernel)(want_a, b)
    np.testing.assert_array_equal(got_a, want_a)
    if want is not None:
        np.testing.assert_array_equal(got, want)
