"""Vector width of streamed loops: streamjit's kernels as LLVM tunes them
for this CPU (on many AVX-512 CPUs 256-bit vectors: ``prefer-256-bit``)
against the same kernels compiled to prefer 512-bit vectors (the LLVM
function attribute ``"prefer-vector-width"="512"`` on every function of
the kernel's module, before optimization), with the swap Jacobi's C
ceiling (`bench/c/jacobi_nt.c`: plain, NT stores of 256 and 512 bits,
with and without a prefetch of the row below). Each kernel streamed and
never streamed (a threshold no call reaches: its plain loops, which the
width changes too). Programs: the swap Jacobi of bench/ping_pong.py
(float64, buffers made by ``.copy()``), STREAM triad (float32 and float64,
``np.empty_like``) and a 5-point stencil (float32). njit's time / the build's: median
(min-max) of interleaved rounds; results checked against numba.njit.

A measurement for a possible machine-profile row, not a lowering
streamjit applies: the 512-bit build changes streamjit's build step for
the kernels compiled under `wide_vectors`.

Run: python bench/vector_width.py [MiB] [rounds]
"""

import contextlib
import ctypes
import os
import re
import shutil
import subprocess
import sys
import tempfile

import llvmlite.binding as llvm
import numba
import numpy as np

import streamjit as sj
from streamjit import measure
from streamjit.backend import library

from ping_pong import STEPS, jacobi_swap

HERE = os.path.dirname(os.path.abspath(__file__))
NEVER = 1 << 62  # a threshold no call reaches: the kernel's plain loops


@contextlib.contextmanager
def wide_vectors():
    """Kernels first called inside compile preferring 512-bit vectors."""
    build = library.build

    def preferring_512(module, machine, *args, **kwargs):
        text = re.sub(r"^(attributes #\d+ = \{)", r'\1 "prefer-vector-width"="512"', str(module), flags=re.M)
        text = re.sub(r"^(define [^\n]*\)[^#\n]*) \{$", r"\1 #9999 {", text, flags=re.M)
        wide = llvm.parse_assembly(text + '\nattributes #9999 = { "prefer-vector-width"="512" }\n')
        wide.name = module.name
        return build(wide, machine, *args, **kwargs)

    library.build = preferring_512
    try:
        yield
    finally:
        library.build = build


def c_jacobi():
    """jacobi_swap(A, B, n, m, steps, bits, prefetch) of bench/c/jacobi_nt.c, or None without gcc."""
    if not shutil.which("gcc"):
        return None
    out = os.path.join(tempfile.mkdtemp(), "jacobi_nt.so")
    subprocess.run(["gcc", "-O3", "-march=native", "-shared", "-fPIC", os.path.join(HERE, "c", "jacobi_nt.c"),
                    "-o", out], check=True)
    function = ctypes.CDLL(out).jacobi_swap
    function.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t] + [ctypes.c_int] * 3
    return function


def stencil(out, a):
    for i in range(1, a.shape[0] - 1):
        for j in range(1, a.shape[1] - 1):
            out[i, j] = 0.25 * (a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1]) - a[i, j]


def programs(mib):
    """{program: (function, make arguments, {C build: (bits, prefetch)})}."""
    rng = np.random.default_rng(0)
    side, side32 = int((mib / 2 * 2 ** 20 / 8) ** 0.5), int((mib / 2 * 2 ** 20 / 4) ** 0.5)
    grid, grid32 = rng.random((side, side)), rng.random((side32, side32), dtype=np.float32)
    n = mib * 2 ** 20 // 12
    b, c = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    b64, c64 = rng.random(n // 2), rng.random(n // 2)
    c_builds = {"C plain": (0, 0), "C NT 256": (256, 0), "C NT 512": (512, 0), "C NT 256 + prefetch": (256, 1),
                "C NT 512 + prefetch": (512, 1)}
    jacobi = f"swap Jacobi {side}x{side} float64, {STEPS} steps"
    return {jacobi: (jacobi_swap, lambda: (grid.copy(), grid.copy(), STEPS), c_builds),
            f"triad {n} float32": (measure.stream_triad, lambda: (np.empty_like(b), b, c, np.float32(3)), {}),
            f"triad {n // 2} float64": (measure.stream_triad, lambda: (np.empty_like(b64), b64, c64, 3.0), {}),
            f"5-point stencil {side32}x{side32} float32": (stencil, lambda: (grid32.copy(), grid32), {})}


def main(mib=256, rounds=9):
    print(measure.host_description())
    print(f"{mib} MiB per program; njit's time / this: median (min-max) of {rounds} interleaved rounds")
    c_function = c_jacobi()
    for program, (function, make, c_builds) in programs(mib).items():
        builds = {"numba.njit": numba.njit(function)}
        for label, threshold in (("streamjit", None), ("never streamed", NEVER)):
            for width in ("", ", 512-bit"):
                builds[label + width] = sj.stream_kernel(stream_stores=True, threshold=threshold)(function)
        arguments = {name: make() for name in builds}
        expected = make()
        builds["numba.njit"](*expected)
        for name, kernel in builds.items():
            with wide_vectors() if name.endswith("512-bit") else contextlib.nullcontext():
                kernel(*arguments[name])
            got = make()
            kernel(*got)
            assert all(np.allclose(g, e) for g, e in zip(got, expected) if isinstance(g, np.ndarray)), name
        runners = {name: (lambda k=kernel, a=arguments[name]: k(*a)) for name, kernel in builds.items()}
        for name, (bits, prefetch) in (c_builds.items() if c_function else ()):
            got = make()[:2]
            c_function(got[0].ctypes.data, got[1].ctypes.data, *got[0].shape, STEPS, bits, prefetch)
            assert all(np.allclose(g, e) for g, e in zip(got, expected)), name
            a, b = make()[:2]
            runners[name] = (lambda a=a, b=b, bits=bits, prefetch=prefetch:
                             c_function(a.ctypes.data, b.ctypes.data, *a.shape, STEPS, bits, prefetch))
        times = measure.interleaved_times(runners, rounds)
        print(program)
        for name, ratio in measure.speedups(times, "numba.njit").items():
            print(f"  {name:26s} {ratio:.2f}x ({ratio.low:.2f}-{ratio.high:.2f})")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
