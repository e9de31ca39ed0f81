"""A loop that loads back the array it streams, at another element:
``out[i] = out[i - 1] + a[i]`` (a prefix sum), 256 MiB float64 per array,
against numba.njit, side by side, interleaved, medians:

- ``stream_stores=["out"]`` (threshold "auto"): left plain, with a note;
- ``stream_stores=["out"], threshold=None``: streamed anyway, with a
  warning that each load waits for the store before it to reach memory.

Run: python bench/read_back.py [MiB] [rounds]
"""

import sys
import warnings

import numba
import numpy as np

import streamjit as sj
from streamjit import measure


def prefix_sum(out, a):
    for i in range(1, out.shape[0]):
        out[i] = out[i - 1] + a[i]


def main(mib=256, rounds=7):
    print(measure.host_description())
    rng = np.random.default_rng(0)
    a = rng.random(mib * measure.MIB // 8)
    outs = {name: a.copy() for name in ("numba.njit", "stream_stores=['out']", "threshold=None")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sj.StreamWarning)
        kernels = {"numba.njit": numba.njit(prefix_sum),
                   "stream_stores=['out']": sj.stream_kernel(stream_stores=["out"])(prefix_sum),
                   "threshold=None": sj.stream_kernel(stream_stores=["out"], threshold=None)(prefix_sum)}
        for name, kernel in kernels.items():
            kernel(outs[name], a)
    for name in kernels:
        assert np.array_equal(outs[name], outs["numba.njit"]), name
    medians = measure.interleaved_medians({n: (lambda n=n: kernels[n](outs[n], a)) for n in kernels}, rounds)
    print(f"prefix sum out[i] = out[i - 1] + a[i], {mib} MiB float64 per array (speed relative to numba.njit)")
    for name, seconds in medians.items():
        calls = getattr(kernels[name], "stream_calls", lambda: None)()
        print(f"  {name:24s} {seconds * 1e3:8.1f} ms  {medians['numba.njit'] / seconds:5.2f}x"
              + (f"  calls: {calls}" if calls else ""))


if __name__ == "__main__":
    main(*(int(v) for v in sys.argv[1:3]))
