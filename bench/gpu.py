"""GPU streaming: copy, triad and the 5-point stencil with target="cuda"
(streamed loads ld.global.cs, and load_cache="nc": which is faster), against
plain numba-cuda kernels, the same kernels with cuda.stcs/ldcs
written by hand, and a device-to-device copy (cudaMemcpy) as the
bandwidth limit; then a pipeline-depth sweep (pipeline_stages = the
number of cp.async stages). One process, device arrays (no transfers in
the timings), interleaved rounds, medians.

Run: python bench/gpu.py [MiB per array, default 256]
     NUMBA_ENABLE_CUDASIM=1 python bench/gpu.py --smoke   (the script's logic
     on numba-cuda's simulator, tiny arrays; its timings mean nothing)

Without an NVIDIA GPU it says so and exits 0. Not yet run on a GPU: no
numbers in bench/README.md come from it.
"""

import math
import sys

import numpy as np

import streamjit as sj
from streamjit import measure

try:
    from numba import cuda
except ImportError:  # main() says so
    cuda = None

MIB = 1 << 20
BLOCK = 256
DEPTHS = (0, 1, 2, 3, 4, 6, 8)
# --smoke's elements per array: two blocks, the second partial, a length no vector width divides
SMOKE_ITEMS = 333


def copy(a, b):
    for i in sj.prange(a.shape[0]):
        a[i] = b[i]


def triad(a, b, c, q):
    for i in sj.prange(a.shape[0]):
        a[i] = b[i] + q * c[i]


def jacobi(out, g):
    for r in sj.prange(1, g.shape[0] - 1):
        for c in sj.prange(1, g.shape[1] - 1):
            out[r, c] = np.float32(0.2) * (g[r, c] + g[r, c - 1] + g[r, c + 1] + g[r - 1, c] + g[r + 1, c])


# The same loops written for numba-cuda: plain, and with cuda.stcs /
# cuda.ldcs at every access (what a user writes by hand today); jitted in
# `main`, once numba.cuda is known to be there.
def copy_plain(a, b):
    i, n = cuda.grid(1), cuda.gridsize(1)
    for k in range(i, a.shape[0], n):
        a[k] = b[k]


def copy_hinted(a, b):
    i, n = cuda.grid(1), cuda.gridsize(1)
    for k in range(i, a.shape[0], n):
        cuda.stcs(a, k, cuda.ldcs(b, k))


def triad_plain(a, b, c, q):
    i, n = cuda.grid(1), cuda.gridsize(1)
    for k in range(i, a.shape[0], n):
        a[k] = b[k] + q * c[k]


def triad_hinted(a, b, c, q):
    i, n = cuda.grid(1), cuda.gridsize(1)
    for k in range(i, a.shape[0], n):
        cuda.stcs(a, k, cuda.ldcs(b, k) + q * cuda.ldcs(c, k))


def jacobi_plain(out, g):
    x, y = cuda.grid(2)
    nx, ny = cuda.gridsize(2)
    for r in range(1 + y, g.shape[0] - 1, ny):
        for c in range(1 + x, g.shape[1] - 1, nx):
            out[r, c] = np.float32(0.2) * (g[r, c] + g[r, c - 1] + g[r, c + 1] + g[r - 1, c] + g[r + 1, c])


def jacobi_hinted(out, g):
    x, y = cuda.grid(2)
    nx, ny = cuda.gridsize(2)
    for r in range(1 + y, g.shape[0] - 1, ny):
        for c in range(1 + x, g.shape[1] - 1, nx):
            cuda.stcs(out, (r, c), np.float32(0.2) * (
                cuda.ldcs(g, (r, c)) + cuda.ldcs(g, (r, c - 1)) + cuda.ldcs(g, (r, c + 1))
                + cuda.ldcs(g, (r - 1, c)) + cuda.ldcs(g, (r + 1, c))))


HAND_WRITTEN = dict(copy=(copy_plain, copy_hinted), triad=(triad_plain, triad_hinted),
                    jacobi=(jacobi_plain, jacobi_hinted))


def synced(launch, args):
    def run():
        launch(*args)
        cuda.synchronize()
    return run


def table(mib, rounds, hand_hinted=True):
    n = mib * MIB // 4 if mib else SMOKE_ITEMS
    blocks = max(1, min(4096, math.ceil(n / BLOCK)))
    rng = np.random.default_rng(0)
    host = [rng.random(n, dtype=np.float64).astype(np.float32) for _ in range(3)]
    a, b, c = (cuda.to_device(x) for x in host)
    width = 8192 if n >= 8192 * 4 else 64
    out, g = (cuda.to_device(rng.random((n // width, width), dtype=np.float64).astype(np.float32))
              for _ in range(2))
    q = np.float32(3)
    cases = {
        "copy": (copy, dict(stream_stores=["a"], stream_loads=["b"]), (a, b), 2 * n * 4, (blocks, BLOCK)),
        "triad": (triad, dict(stream_stores=["a"], stream_loads=["b", "c"]), (a, b, c, q), 4 * n * 4,
                  (blocks, BLOCK)),
        "jacobi": (jacobi, dict(stream_stores=["out"], stream_loads=["g"]), (out, g), 2 * g.size * 4,
                   (blocks, (32, BLOCK // 32))),
    }
    for name, (func, options, args, nbytes, config) in cases.items():
        plain, hinted = (cuda.jit(f) for f in HAND_WRITTEN[name])
        runners = {
            "streamjit streamed": synced(sj.stream_kernel(func, target="cuda", **options), args),
            "streamjit streamed, nc loads": synced(sj.stream_kernel(func, target="cuda", load_cache="nc", **options),
                                                   args),
            "streamjit plain": synced(sj.stream_kernel(func, target="cuda"), args),
            "numba-cuda plain": synced(plain[config], args),
        }
        if hand_hinted:  # (the simulator has no cuda.stcs / cuda.ldcs)
            runners["numba-cuda stcs/ldcs"] = synced(hinted[config], args)
        if name == "copy":
            runners["device-to-device copy"] = synced(lambda dst, src: dst.copy_to_device(src), (a, b))
        results = {}
        for key, run in runners.items():
            run()  # compile, and the first touch
            results[key] = args[0].copy_to_host()
        for key, got in results.items():  # every variant computes the same
            if not np.allclose(got, results["streamjit streamed"], rtol=1e-6):
                raise SystemExit(f"bench/gpu.py: {name}: '{key}' differs from 'streamjit streamed'")
        medians = measure.interleaved_medians(runners, rounds)
        print(f"\n{name} ({nbytes / MIB:.0f} MiB moved per call), GB/s, median of {rounds}:")
        for key, seconds in medians.items():
            print(f"  {key:30s} {nbytes / seconds / 1e9:8.1f}")


def depth_sweep(mib, rounds):
    n = mib * MIB // 4 if mib else SMOKE_ITEMS
    rng = np.random.default_rng(1)
    a, b, c = (cuda.to_device(rng.random(n, dtype=np.float64).astype(np.float32)) for _ in range(3))
    args = (a, b, c, np.float32(3))
    runners = {depth: synced(sj.stream_kernel(triad, target="cuda", stream_stores=["a"],
                                                    stream_loads=["b", "c"], pipeline_stages=depth), args)
               for depth in DEPTHS}
    for run in runners.values():
        run()
    medians = measure.interleaved_medians(runners, rounds)
    print(f"\ntriad, cp.async pipeline depth (pipeline_stages; 0 = ld.global.cs), GB/s, median of {rounds}:")
    for depth, seconds in medians.items():
        print(f"  {depth:2d} {4 * n * 4 / seconds / 1e9:8.1f}")


def main(argv):
    smoke = "--smoke" in argv
    sizes = [int(x) for x in argv if x.isdigit()]
    mib = sizes[0] if sizes else 256
    if cuda is None:
        print("bench/gpu.py: numba-cuda is not installed (pip install 'streamjit[cuda]'); nothing measured")
        return 0
    if not cuda.is_available():
        print("bench/gpu.py: no CUDA GPU or driver on this machine; nothing measured "
              "(NUMBA_ENABLE_CUDASIM=1 python bench/gpu.py --smoke checks the script itself)")
        return 0
    rounds, mib = (1, 0) if smoke else (11, mib)
    if not smoke:
        print(cuda.get_current_device().name)
    table(mib, rounds, hand_hinted=not smoke)
    depth_sweep(mib, rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
