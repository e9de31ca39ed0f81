"""Parallel streaming: STREAM copy and triad and the 5-point stencil with 1
and 2 threads, streamed (`stream_kernel(parallel=True)`) against the same
prange loop under `numba.njit(parallel=True)`, interleaved medians.

Run: python bench/parallel.py [MiB]   (default 256 per array, float32)
"""

import sys

import numba
import numpy as np

import streamjit as sj
from streamjit import measure


def copy(a, b):
    for i in numba.prange(a.shape[0]):
        a[i] = b[i]


def triad(a, b, c, q):
    for i in numba.prange(a.shape[0]):
        a[i] = b[i] + q * c[i]


def jacobi(out, g):
    for r in numba.prange(1, g.shape[0] - 1):
        for c in range(1, g.shape[1] - 1):
            out[r, c] = np.float32(0.2) * (g[r, c] + g[r, c - 1] + g[r, c + 1] + g[r - 1, c] + g[r + 1, c])


def main(mib):
    print(measure.host_description())
    n = mib * measure.MIB // 4
    rng = np.random.default_rng(0)
    a, b, c = (rng.random(n + 1, dtype=np.float64).astype(np.float32)[1:] for _ in range(3))
    grid = rng.random((n // 8192, 8192), dtype=np.float64).astype(np.float32)
    out = np.zeros(grid.size + 1, np.float32)[1:].reshape(grid.shape)
    cases = [("copy", copy, ["a"], (a, b)), ("triad", triad, ["a"], (a, b, c, np.float32(3))),
             ("jacobi5", jacobi, ["out"], (out, grid))]
    threads = [t for t in (1, 2) if t <= numba.config.NUMBA_NUM_THREADS]
    times = {}
    for name, func, stores, args in cases:
        streamed = sj.stream_kernel(stream_stores=stores, parallel=True, threshold=None)(func)
        plain = numba.njit(parallel=True)(func)
        for t in threads:
            numba.set_num_threads(t)
            streamed(*args)
            plain(*args)
            medians = measure.interleaved_medians({"streamed": lambda: streamed(*args),
                                                   "plain": lambda: plain(*args)}, 9)
            times[name, t] = medians
            print(f"{name:8s} {t} thread(s): streamed/plain = {medians['plain'] / medians['streamed']:.2f}x",
                  flush=True)
    for name, *_ in cases:
        if len(threads) == 2:
            one, two = times[name, 1], times[name, 2]
            print(f"{name:8s} scaling 1 -> 2 threads: streamed {one['streamed'] / two['streamed']:.2f}x, "
                  f"plain {one['plain'] / two['plain']:.2f}x")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 256)
