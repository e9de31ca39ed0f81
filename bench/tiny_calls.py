"""A tiny call under the default options against numba.njit: a
copy of 16 float32, 16 float64 and 64 float64 elements, called 20000 times
per round, interleaved rounds, medians (min-max) of the time per call.

Streamed at every size (``threshold=None``), each call pays for its
non-temporal stores: a line stored non-temporally leaves the cache for
memory, and the store fence at the end waits for it: 0.2-0.6 us more per
call for 16 or 64 float64 on our Intel Xeon VM, as the arrays' alignment
decides how many lines the aligned loop stores (none for 16 float32); the
same without the software prefetch. Under the default ``threshold="auto"``
a call below the threshold runs the plain loop: 0.99-1.00x numba.njit's
time (203-213 ns per call).

Run: python bench/tiny_calls.py
"""

import numba
import numpy as np

import streamjit as sj
from streamjit import measure


def copy(dst, src):
    for i in range(src.shape[0]):
        dst[i] = src[i]


def main(calls=20000, rounds=15):
    print(measure.host_description())
    builds = {"numba.njit": numba.njit(copy), "default (auto)": sj.stream_kernel(stream_stores=["dst"])(copy),
              "threshold=None": sj.stream_kernel(stream_stores=["dst"], threshold=None)(copy),
              "None, no prefetch": sj.stream_kernel(stream_stores=["dst"], threshold=None, prefetch_distance=0)(copy)}
    for dtype, n in ((np.float32, 16), (np.float64, 16), (np.float64, 64)):
        a, b = np.zeros(n, dtype), np.ones(n, dtype)
        for kernel in builds.values():
            kernel(a, b)
        times = measure.interleaved_times({k: measure.repeated(f, (a, b), calls) for k, f in builds.items()}, rounds)
        print(f"copy of {n} {np.dtype(dtype).name}: ns per call and numba.njit's time / this, medians (min-max) of "
              f"{rounds} rounds of {calls} calls")
        for name, ratio in measure.speedups(times, "numba.njit").items():
            ns = measure.Spread(t / calls * 1e9 for t in times[name])
            print(f"  {name:18s} {ns:6.1f} ({ns.low:.0f}-{ns.high:.0f}) ns   "
                  f"{ratio:.3f} ({ratio.low:.2f}-{ratio.high:.2f})")


if __name__ == "__main__":
    main()
