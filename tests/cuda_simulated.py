"""Run by tests/test_cuda_simulator.py in a process of its own with
NUMBA_ENABLE_CUDASIM=1 (the simulator replaces numba.cuda when numba.cuda
is first imported, so it cannot share the suite's process): every case
runs a GPU kernel on random data (odd sizes, views, empty arrays) and
numba.njit on a copy, and prints one JSON line {case: error or ""}."""

import functools
import json
import math
import os
import sys
import traceback

import numba
import numpy as np

assert os.environ.get("NUMBA_ENABLE_CUDASIM") == "1", "run with NUMBA_ENABLE_CUDASIM=1"
sys.path.insert(0, os.path.dirname(__file__))

import cuda_kernels as K  # noqa: E402
from numba import cuda  # noqa: E402

import streamjit as sj  # noqa: E402

RNG = np.random.default_rng(2026)
# one numba.njit dispatcher per function, compiled once for the cases that share it
NJIT = functools.cache(numba.njit)


def data(shape, dtype=np.float64):
    return (RNG.random(shape) * 2.0 + 0.25).astype(dtype)


def same(kernel, func, args, launch=None, reference=None):
    """Run the GPU kernel on ``args`` (launched with ``launch`` if given) and
    on copies ``reference`` (by default numba.njit of ``func``); compare
    every array."""
    expected = [a.base.copy()[tuple(_view_of(a))] if isinstance(a, np.ndarray) and a.base is not None else
                (a.copy() if isinstance(a, np.ndarray) else a) for a in args]
    (reference or NJIT(func))(*expected)
    (kernel[launch] if launch else kernel)(*args)
    for got, want in zip(args, expected):
        if isinstance(got, np.ndarray) and not np.array_equal(got, want):
            bad = np.argwhere(got != want)[:3].tolist()
            raise AssertionError(f"differs at {bad}")


def _view_of(view):
    """The index that makes ``view`` from its base (offsets and steps)."""
    base = view.base
    offset = view.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    index = []
    for n, (stride, base_stride) in enumerate(zip(view.strides, base.strides)):
        start = offset // base_stride
        offset -= start * base_stride
        step = stride // base_stride
        index.append(slice(start, start + step * view.shape[n] if view.shape[n] else start, step))
    return index


def cases():
    stages = {"": None, "-prefetch2": 2}
    for suffix, k in stages.items():
        triad = sj.stream_kernel(K.triad, target="cuda", stream_stores=["a"], stream_loads=["b", "c"],
                                 pipeline_stages=k)
        for n in (0, 1, 7, 33, 1001):
            yield f"triad-{n}{suffix}", lambda t=triad, n=n: same(
                t, K.triad, (data(n + 1, np.float32)[1:], data(n, np.float32), data(n, np.float32), np.float32(1.5)))
        yield f"triad-strided{suffix}", lambda t=triad: same(
            t, K.triad, (data(2 * 77, np.float32)[::2], data(77, np.float32), data(77, np.float32), np.float32(0.5)))
        jacobi = sj.stream_kernel(K.jacobi, target="cuda", stream_stores=["out"], stream_loads=["g"],
                                  pipeline_stages=k and k + 1)
        for shape in ((0, 0), (3, 3), (2, 9), (13, 37)):
            yield f"jacobi-{shape[0]}x{shape[1]}{suffix}", lambda j=jacobi, s=shape: same(j, K.jacobi,
                                                                                          (data(s), data(s)))
        yield f"jacobi-view{suffix}", lambda j=jacobi: same(j, K.jacobi, (data((11, 20))[:, 1:], data((11, 19))))
    fill = sj.stream_kernel(K.fill, target="cuda", stream_stores=True)
    for dtype in (np.float32, np.int32, np.int8):
        yield f"fill-{np.dtype(dtype).name}", lambda f=fill, d=dtype: same(f, K.fill, (data(37, d)[2:], d(3)))
    renamed = sj.stream_kernel(K.renamed_prange, target="cuda", stream_stores=True)
    yield "renamed-prange", lambda: same(renamed, K.renamed_prange, (data(45), data(45), data(45)))
    chained = sj.stream_kernel(K.chained_store, target="cuda", stream_stores=True, stream_loads=True)
    yield "chained-store", lambda: same(chained, K.chained_store, (data((5, 23)), data((5, 23))))
    rows = sj.stream_kernel(K.prange_rows, target="cuda", stream_stores=True)
    yield "prange-rows", lambda: same(rows, K.prange_rows, (data((9, 31))[:, 3:], data((9, 28))))
    grid = sj.stream_kernel(K.grid_2d, target="cuda", stream_stores=True, stream_loads=True)
    for shape in ((0, 5), (7, 9), (33, 17)):
        yield f"grid-2d-{shape[0]}x{shape[1]}", lambda s=shape: same(grid, K.grid_2d, (data(s), data(s)))
    grid3 = sj.stream_kernel(K.grid_3d, target="cuda", stream_stores=True, stream_loads=True)
    yield "grid-3d", lambda: same(grid3, K.grid_3d, (data((3, 5, 19)), data((3, 5, 19))))
    stepped = sj.stream_kernel(K.stepped, target="cuda", stream_stores=True)
    yield "stepped", lambda: same(stepped, K.stepped, (data(50), data(50)))
    branchy = sj.stream_kernel(K.branchy, target="cuda", stream_stores=True)
    yield "branchy", lambda: same(branchy, K.branchy, (data(41), RNG.random(41)))
    wrapped = sj.stream_kernel(K.from_the_end, target="cuda", stream_stores=True, stream_loads=True)
    yield "negative-indices", lambda: same(wrapped, K.from_the_end, (data(41, np.float32), data(41, np.float32)))
    alias = sj.stream_kernel(K.through_alias, target="cuda", stream_stores=True)
    yield "through-alias", lambda: same(alias, K.through_alias, (data(40)[3:], data(37)))
    update = sj.stream_kernel(K.update_rows, target="cuda", stream_stores=["out"])
    yield "update-rows", lambda: same(update, K.update_rows, (data((4, 29)), data((4, 29))))
    axpy = sj.cuda.jit(K.axpy_numba_cuda, stream_stores=["out"], stream_loads=["x"])
    for n in (0, 7, 1001):
        launch = (max(1, math.ceil(n / 64)), 64)
        yield f"numba-cuda-axpy-{n}", lambda n=n, launch=launch: same(
            axpy, K.axpy_numba_cuda, (data(n), data(n), data(n), 2.5), launch,
            reference=cuda.jit(K.axpy_numba_cuda)[launch])
    nc = sj.cuda.jit(K.axpy_numba_cuda, stream_stores=["out"], stream_loads=True, load_cache="nc")
    yield "numba-cuda-axpy-nc", lambda: same(nc, K.axpy_numba_cuda, (data(99), data(99), data(99), 0.5), (2, 64),
                                             reference=cuda.jit(K.axpy_numba_cuda)[2, 64])
    shared = sj.cuda.jit(K.reverse_blocks_numba_cuda, stream_stores=["out"], stream_loads=["x"])
    yield "numba-cuda-shared-memory", lambda: same(shared, K.reverse_blocks_numba_cuda, (data(192), data(192)),
                                                   (3, 64), reference=cuda.jit(K.reverse_blocks_numba_cuda)[3, 64])
    # the launch given by the caller: grid-stride loops cover any grid
    for launch in ((1, 32), (3, 64), (5, 128)):
        yield f"triad-launch-{launch[0]}x{launch[1]}", lambda launch=launch: same(
            triad, K.triad, (data(1001, np.float32), data(1001, np.float32), data(1001, np.float32), np.float32(2)),
            launch)
    ringed = sj.stream_kernel(K.triad, target="cuda", stream_stores=["a"], stream_loads=["b", "c"],
                              pipeline_stages=3, threads_per_block=64)
    yield "triad-prefetch3-64-threads", lambda: same(ringed, K.triad, (data(777, np.float32), data(777, np.float32),
                                                                       data(777, np.float32), np.float32(2)))
    yield "device-arrays-in-place", lambda: _in_place(sj.stream_kernel(K.jacobi, target="cuda", stream_stores=["out"],
                                                                       stream_loads=["g"]))


def _in_place(kernel):
    out, g = data((17, 29)), data((17, 29))
    expected = out.copy()
    NJIT(K.jacobi)(expected, g)
    device_out = cuda.to_device(out)
    kernel(device_out, cuda.to_device(g))
    np.testing.assert_array_equal(device_out.copy_to_host(), expected)


def main():
    results = {}
    for name, run in cases():
        try:
            run()
            results[name] = ""
        except Exception:
            results[name] = traceback.format_exc(limit=4)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
