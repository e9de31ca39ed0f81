"""stream_loads: where streamed (prefetched, non-temporal) loads should pay.

Workloads, each timed interleaved in one process, medians, ratios against
the same loop under numba.njit:
1. gather through a cache-resident table: out[i] = lut[key[i]] * x[i]
   (lut 4 MiB, key and x 256 MiB);
2. CSR sparse matrix-vector product, x resident in cache (2 MiB), the
   matrix's values and column indices streamed (>= 256 MiB together);
3. STREAM copy and triad with stream_loads=True added.
Variants: numba.njit, streamjit with stream_stores only, and with
stream_loads at several prefetch distances (bytes ahead; 0 = hint only).

Run: python bench/stream_loads.py [MiB]   (default 256)
"""

import sys

import numba
import numpy as np

import streamjit as sj
from streamjit import bench
from streamjit.bench import gather, spmv

DISTANCES = (0, 256, 512, 1024, 2048, 4096)


def variants(func, stores, loads):
    built = {"numba.njit": numba.njit(func), "stores only": sj.stream_kernel(stream_stores=stores)(func)}
    for d in DISTANCES:
        built[f"loads D={d}"] = sj.stream_kernel(stream_stores=stores, stream_loads=loads, prefetch_distance=d)(func)
    return built


def compare(name, kernels, args, check, rounds=11):
    for kernel in kernels.values():
        kernel(*args)
        check()
    medians = bench.interleaved_medians({k: (lambda k=k: kernels[k](*args)) for k in kernels}, rounds)
    base = medians["numba.njit"]
    print(f"{name}: " + ", ".join(f"{k} {base / t:.2f}x" for k, t in medians.items()), flush=True)
    return {k: base / t for k, t in medians.items()}


def main(mib):
    print(bench.host_description())
    rng = np.random.default_rng(0)

    n = mib * bench.MIB // 4
    lut = rng.random(bench.MIB, dtype=np.float64).astype(np.float32)           # 4 MiB
    key = rng.integers(0, lut.shape[0], n, dtype=np.int32)
    x = rng.random(n, dtype=np.float64).astype(np.float32)
    out = np.empty(n, np.float32)
    expected = lut[key] * x

    def check_gather():
        assert np.array_equal(out, expected)

    compare(f"gather {mib} MiB key/x, 4 MiB lut", variants(gather, ["out"], ["key", "x"]),
            (out, lut, key, x), check_gather)
    del key, x, out, expected

    per_row = 16
    nnz = mib * bench.MIB // 12                       # float64 value + int32 index
    rows = nnz // per_row
    xs = rng.random(bench.MIB // 4)                   # 2 MiB of float64
    indptr = np.arange(0, rows * per_row + 1, per_row, dtype=np.int64)
    indices = rng.integers(0, xs.shape[0], rows * per_row, dtype=np.int32)
    values = rng.random(rows * per_row)
    y = np.empty(rows)
    expected = numba.njit(spmv)
    y_ref = np.empty(rows)
    expected(y_ref, indptr, indices, values, xs)

    def check_spmv():
        assert np.allclose(y, y_ref)

    compare(f"CSR SpMV {mib} MiB of values+indices, 2 MiB x", variants(spmv, ["y"], ["indices", "values"]),
            (y, indptr, indices, values, xs), check_spmv)
    del indptr, indices, values, y, y_ref

    for kname in ("copy", "triad"):
        kernel = bench.STREAM_KERNELS[kname][0]
        a, b, c = (rng.random(n + 1, dtype=np.float64).astype(np.float32)[1:] for _ in range(3))
        args = bench._kernel_args(kname, a, b, c, np.float32(3))
        reference = np.empty_like(a)
        bench.STREAM_KERNELS[kname][1](reference, b, c, np.float32(3))

        def check_stream():
            assert np.allclose(a, reference)

        compare(f"STREAM {kname} {mib} MiB float32", variants(kernel, ["a"], True), args, check_stream)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 256)
