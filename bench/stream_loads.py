"""stream_loads: where streamed (prefetched, non-temporal) loads should pay.

Workloads, each timed interleaved in one process, medians, ratios against
the same loop under numba.njit:
1. gather through a cache-resident table: out[i] = lut[key[i]] * x[i]
   (lut 4 MiB, key and x 256 MiB);
2. CSR sparse matrix-vector product, x resident in cache (2 MiB), the
   matrix's values and column indices streamed (>= 256 MiB together);
3. STREAM copy and triad with stream_loads=True added.
Variants: numba.njit, streamjit with stream_stores only, and with
stream_loads as this machine's profile lowers it, then at several prefetch
distances (bytes ahead, with the profile's hint; 0 = no prefetch).

Run: python bench/stream_loads.py [MiB]   (default 256)
"""

import functools
import sys

import numba
import numpy as np

import streamjit as sj
from streamjit import measure
from streamjit.measure import gather, spmv
from streamjit.machine.profile import machine_profile

DISTANCES = (0, 256, 512, 1024, 2048, 4096)


def variants(func, stores, loads):
    streamed = functools.partial(sj.stream_kernel, stream_stores=stores, threshold=None)   # at every size
    built = {"numba.njit": numba.njit(func), "stores only": streamed()(func),
             "loads (profile)": streamed(stream_loads=loads)(func)}
    for d in DISTANCES:
        built[f"loads D={d}"] = streamed(stream_loads=loads, prefetch_distance=d)(func)
    return built


def compare(name, kernels, args, check, rounds=11):
    for kernel in kernels.values():
        kernel(*args)
        check()
    medians = measure.interleaved_medians({k: (lambda k=k: kernels[k](*args)) for k in kernels}, rounds)
    base = medians["numba.njit"]
    print(f"{name}: " + ", ".join(f"{k} {base / t:.2f}x" for k, t in medians.items()), flush=True)
    return {k: base / t for k, t in medians.items()}


def run_gather(mib, rng):
    n = mib * measure.MIB // 4
    lut = rng.random(measure.MIB, dtype=np.float64).astype(np.float32)           # 4 MiB
    key = rng.integers(0, lut.shape[0], n, dtype=np.int32)
    x = rng.random(n, dtype=np.float64).astype(np.float32)
    out = np.empty(n, np.float32)
    expected = lut[key] * x

    def check():
        assert np.array_equal(out, expected)

    compare(f"gather {mib} MiB key/x, 4 MiB lut", variants(gather, ["out"], ["key", "x"]), (out, lut, key, x), check)


def run_spmv(mib, rng):
    per_row = 16
    rows = mib * measure.MIB // 12 // per_row            # float64 value + int32 index per nonzero
    x = rng.random(measure.MIB // 4)                     # 2 MiB of float64
    indptr = np.arange(0, rows * per_row + 1, per_row, dtype=np.int64)
    indices = rng.integers(0, x.shape[0], rows * per_row, dtype=np.int32)
    values = rng.random(rows * per_row)
    y, expected = np.empty(rows), np.empty(rows)
    numba.njit(spmv)(expected, indptr, indices, values, x)

    def check():
        assert np.allclose(y, expected)

    compare(f"CSR SpMV {mib} MiB of values+indices, 2 MiB x", variants(spmv, ["y"], ["indices", "values"]),
            (y, indptr, indices, values, x), check)


def run_stream(mib, rng, name):
    n = mib * measure.MIB // 4
    kernel = measure.STREAM_KERNELS[name][0]
    a, b, c = (rng.random(n + 1, dtype=np.float64).astype(np.float32)[1:] for _ in range(3))
    args = measure.kernel_args(name, a, b, c, np.float32(3))
    expected = np.empty_like(a)
    measure.STREAM_KERNELS[name][1](expected, b, c, np.float32(3))

    def check():
        assert np.allclose(a, expected)

    compare(f"STREAM {name} {mib} MiB float32", variants(kernel, ["a"], True), args, check)


def main(mib):
    print(measure.host_description())
    print(f"profile: {machine_profile().origin}; streamed loads: {machine_profile().stream_loads.describe()}")
    rng = np.random.default_rng(0)
    run_gather(mib, rng)
    run_spmv(mib, rng)
    for name in ("copy", "triad"):
        run_stream(mib, rng, name)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 256)
