"""Vector width of streamed loops: the machine profile's ``wide_stencil_bytes``
row on and off. Streamed stencil loops (one array loaded at two elements or
more per iteration) compiled at the width LLVM prefers for this CPU (on many
AVX-512 CPUs 256 bits: ``prefer-256-bit``) against 512 bits
(`pre_o3/loop_widths.py`), with the swap Jacobi's C ceiling
(`bench/c/jacobi_nt.c`: plain, NT stores of 256 and 512 bits, with and
without a prefetch of the row below). Programs: the swap Jacobi of
bench/ping_pong.py (float64, buffers made by ``.copy()``), its heat_3d
(float64), a 5-point stencil (float32 data computed in float64, as NumPy
promotes ``0.25 * a``) and STREAM triad (float32 and float64,
``np.empty_like``), which is no stencil and keeps LLVM's width: its two
builds must match. Each kernel also never streamed (a threshold no call
reaches: its plain loops, which the row leaves alone). njit's time /
the build's: median (min-max) of interleaved rounds on the same arrays;
results checked against numba.njit.

Run: python bench/vector_width.py [MiB] [rounds] [programs: "swap Jacobi,heat_3d", by default all]
"""

import ctypes
import os
import shutil
import subprocess
import sys
import tempfile

import numba
import numpy as np

from streamjit import measure
from streamjit.measure.calibration import kernel_with_stages
from streamjit.machine.profile import LoadStage

from ping_pong import STEPS, heat3d_swap, jacobi_swap

HERE = os.path.dirname(os.path.abspath(__file__))
NEVER = 1 << 62  # a threshold no call reaches: the kernel's plain loops
# the row's two settings: LLVM's width, and 512 bits for stencils of every item size
WIDTHS = {"": (), ", 512-bit stencils": (1, 2, 4, 8, 16)}


def c_jacobi():
    """(jacobi_swap(A, B, n, m, steps, bits, prefetch) of bench/c/jacobi_nt.c, the widest NT store it was built
    with in bits: 512 where the CPU has AVX-512, else 256), or (None, 0) without gcc."""
    if not shutil.which("gcc"):
        return None, 0
    out = os.path.join(tempfile.mkdtemp(), "jacobi_nt.so")
    subprocess.run(["gcc", "-O3", "-march=native", "-shared", "-fPIC", os.path.join(HERE, "c", "jacobi_nt.c"),
                    "-o", out], check=True)
    library = ctypes.CDLL(out)
    function = library.jacobi_swap
    function.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t] + [ctypes.c_int] * 3
    return function, library.widest_nt_bits()


def stencil(out, a):
    for i in range(1, a.shape[0] - 1):
        for j in range(1, a.shape[1] - 1):
            out[i, j] = 0.25 * (a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1]) - a[i, j]


def programs(mib):
    """{program: (function, the array it streams, make arguments, {C build: (bits, prefetch)})}."""
    rng = np.random.default_rng(0)
    side, side32 = int((mib / 2 * 2 ** 20 / 8) ** 0.5), int((mib / 2 * 2 ** 20 / 4) ** 0.5)
    cube = int((mib / 2 * 2 ** 20 / 8) ** (1 / 3))
    grid, grid32, grid3 = rng.random((side, side)), rng.random((side32, side32), dtype=np.float32), \
        rng.random((cube, cube, cube))
    n = mib * 2 ** 20 // 12
    b, c = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    b64, c64 = rng.random(n // 2), rng.random(n // 2)
    c_builds = {"C plain": (0, 0), "C NT 256": (256, 0), "C NT 512": (512, 0), "C NT 256 + prefetch": (256, 1),
                "C NT 512 + prefetch": (512, 1)}
    return {f"swap Jacobi {side}x{side} float64, {STEPS} steps": (jacobi_swap, "B", lambda: (grid.copy(), grid.copy(),
                                                                                              STEPS), c_builds),
            f"heat_3d {cube}^3 float64, {STEPS} steps": (heat3d_swap, "un", lambda: (grid3.copy(), grid3.copy(), 0.1,
                                                                                       STEPS), {}),
            f"5-point stencil {side32}x{side32} float32": (stencil, "out", lambda: (grid32.copy(), grid32), {}),
            f"triad {n} float32": (measure.stream_triad, "a", lambda: (np.empty_like(b), b, c, np.float32(3)), {}),
            f"triad {n // 2} float64": (measure.stream_triad, "a", lambda: (np.empty_like(b64), b64, c64, 3.0), {})}


def main(mib=256, rounds=9, only=""):
    """Time the programs whose names start with one of the comma-separated ``only`` (every one by default)."""
    print(measure.host_description())
    print(f"{mib} MiB per program; njit's time / this: median (min-max) of {rounds} interleaved rounds")
    c_function, c_bits = c_jacobi()
    if c_function and c_bits < 512:
        print("C NT 512: not built (this CPU has no AVX-512)")
    for program, (function, output, make, c_builds) in programs(mib).items():
        if only and not program.startswith(tuple(only.split(","))):
            continue
        builds = {"numba.njit": numba.njit(function)}
        for label, threshold, widths in (("streamjit", None, WIDTHS), ("never streamed", NEVER, {"": ()})):
            for width, sizes in widths.items():
                builds[label + width] = kernel_with_stages(function, output, False, LoadStage(),
                                                           threshold=threshold, wide_stencil_bytes=sizes)
        expected = make()
        builds["numba.njit"](*expected)
        for name, kernel in builds.items():
            got = make()
            kernel(*got)
            assert all(np.allclose(g, e) for g, e in zip(got, expected) if isinstance(g, np.ndarray)), name
        arguments = make()  # (shared: every build runs on the same arrays, at the same addresses)
        runners = {name: (lambda k=kernel: k(*arguments)) for name, kernel in builds.items()}
        for name, (bits, prefetch) in (c_builds.items() if c_function else ()):
            if bits > c_bits:
                continue
            got = make()[:2]
            c_function(got[0].ctypes.data, got[1].ctypes.data, *got[0].shape, STEPS, bits, prefetch)
            assert all(np.allclose(g, e) for g, e in zip(got, expected)), name
            runners[name] = (lambda bits=bits, prefetch=prefetch: c_function(
                arguments[0].ctypes.data, arguments[1].ctypes.data, *arguments[0].shape, STEPS, bits, prefetch))
        times = measure.interleaved_times(runners, rounds)
        print(program)
        for name, ratio in measure.speedups(times, "numba.njit").items():
            print(f"  {name:30s} {ratio:.2f}x ({ratio.low:.2f}-{ratio.high:.2f})")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]), *sys.argv[3:4])
