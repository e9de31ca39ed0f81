"""Vector width of streamed loops: streamjit's kernels as LLVM tunes them
for this CPU (on many AVX-512 CPUs 256-bit vectors: ``prefer-256-bit``)
against the same kernels compiled to prefer 512-bit vectors (the LLVM
function attribute ``"prefer-vector-width"="512"`` on every function of
the kernel's module, before optimization), with the swap Jacobi's C
ceiling (`bench/c/jacobi_nt.c`: plain, NT stores of 256 and 512 bits,
with and without a prefetch of the row below). Programs: the swap Jacobi
of bench/ping_pong.py (float64, buffers made by ``.copy()``) and STREAM
triad (float32, ``np.empty_like``). njit's time / the build's: median
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


def programs(mib):
    """{program: (function, make arguments, {C build: (bits, prefetch)})}."""
    side = int((mib / 2 * 2 ** 20 / 8) ** 0.5)
    grid = np.random.default_rng(0).random((side, side))
    n = mib * 2 ** 20 // 12
    b, c = (np.random.default_rng(s).random(n, dtype=np.float32) for s in (1, 2))
    c_builds = {"C plain": (0, 0), "C NT 256": (256, 0), "C NT 512": (512, 0), "C NT 256 + prefetch": (256, 1),
                "C NT 512 + prefetch": (512, 1)}
    return {f"swap Jacobi {side}x{side} float64, {STEPS} steps": (jacobi_swap, lambda: (grid.copy(), grid.copy(), STEPS),
                                                                  c_builds),
            f"triad {n} float32": (measure.stream_triad, lambda: (np.empty_like(b), b, c, np.float32(3)), {})}


def main(mib=256, rounds=9):
    print(measure.host_description())
    print(f"{mib} MiB per program; njit's time / this: median (min-max) of {rounds} interleaved rounds")
    c_function = c_jacobi()
    for program, (function, make, c_builds) in programs(mib).items():
        builds = {"numba.njit": numba.njit(function),
                  "streamjit": sj.stream_kernel(stream_stores=True, threshold=None)(function),
                  "streamjit, 512-bit": sj.stream_kernel(stream_stores=True, threshold=None)(function)}
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
            print(f"  {name:24s} {ratio:.2f}x ({ratio.low:.2f}-{ratio.high:.2f})")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
