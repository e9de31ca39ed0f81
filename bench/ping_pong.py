"""Time loops as Numba users write them, against numba.njit: a
2-D Jacobi with the buffers swapped after each sweep (``A, B = B, A``)
under ``stream_stores=True`` and with the arrays named, the same sweep as a
one-sweep kernel driven from an ``@numba.njit`` loop that swaps, a 3-D heat
with a swap, and the 1-D heat in its three forms: in place (operands
overlap: plain), a copy each step (``un = u.copy()``) and two buffers
swapped (slice expressions). 256 MiB of float64 in all per program (two
buffers of 128 MiB, or one of 256 MiB), ``STEPS`` time steps per call;
medians (min-max) of interleaved rounds of njit's time / the kernel's.
Every result is checked equal to numba.njit's first.

Run: python bench/ping_pong.py [MiB] [rounds]
"""

import sys

import numba
import numpy as np

import streamjit as sj
from streamjit import measure

STEPS = 4


def jacobi_swap(A, B, T):
    n, m = A.shape
    for t in range(T):
        for i in range(1, n - 1):
            for j in range(1, m - 1):
                B[i, j] = 0.2 * (A[i, j] + A[i - 1, j] + A[i + 1, j] + A[i, j - 1] + A[i, j + 1])
        A, B = B, A


def jacobi_sweep(A, B):
    n, m = A.shape
    for i in range(1, n - 1):
        for j in range(1, m - 1):
            B[i, j] = 0.2 * (A[i, j] + A[i - 1, j] + A[i + 1, j] + A[i, j - 1] + A[i, j + 1])


def driven_by_njit(sweep):
    @numba.njit
    def drive(A, B, T):
        for t in range(T):
            sweep(A, B)
            A, B = B, A
    return drive


def heat3d_swap(u, un, c, T):
    n0, n1, n2 = u.shape
    for t in range(T):
        for i in range(1, n0 - 1):
            for j in range(1, n1 - 1):
                for k in range(1, n2 - 1):
                    un[i, j, k] = u[i, j, k] + c * (u[i - 1, j, k] + u[i + 1, j, k] + u[i, j - 1, k]
                                                    + u[i, j + 1, k] + u[i, j, k - 1] + u[i, j, k + 1] - 6 * u[i, j, k])
        u, un = un, u


def heat_in_place(u, c, T):
    for t in range(T):
        u[1:-1] = u[1:-1] + c * (u[2:] - 2 * u[1:-1] + u[:-2])


def heat_copy(u, c, T):
    for t in range(T):
        un = u.copy()
        u[1:-1] = un[1:-1] + c * (un[2:] - 2 * un[1:-1] + un[:-2])


def heat_swap(u, un, c, T):
    for t in range(T):
        un[1:-1] = u[1:-1] + c * (u[2:] - 2 * u[1:-1] + u[:-2])
        u, un = un, u


def _programs(mib):
    """{program: (function, {build: kernel}, make arguments)}."""
    side = int((mib / 2 * 2 ** 20 / 8) ** 0.5)
    cube = int((mib / 2 * 2 ** 20 / 8 / 16) ** 0.5)
    half, whole = mib * 2 ** 20 // 16, mib * 2 ** 20 // 8
    rng = np.random.default_rng(0)
    grid, box, line, long = rng.random((side, side)), rng.random((16, cube, cube)), rng.random(half), rng.random(whole)
    true = dict(stream_stores=True)
    return {
        f"2-D Jacobi, A, B = B, A ({side}x{side})": (jacobi_swap, {
            "stream_stores=True": sj.stream_kernel(**true)(jacobi_swap),
            "['A', 'B'], threshold=None": sj.stream_kernel(stream_stores=["A", "B"], threshold=None)(jacobi_swap),
            "one sweep, njit driver": driven_by_njit(sj.stream_kernel(stream_stores=["B"])(jacobi_sweep))},
            lambda: (grid.copy(), grid.copy(), STEPS)),
        f"3-D heat, u, un = un, u (16x{cube}x{cube})": (heat3d_swap, {
            "stream_stores=True": sj.stream_kernel(**true)(heat3d_swap)},
            lambda: (box.copy(), box.copy(), 0.1, STEPS)),
        "1-D heat in place": (heat_in_place, {"stream_stores=True": sj.stream_kernel(**true)(heat_in_place)},
                              lambda: (long.copy(), 0.1, STEPS)),
        "1-D heat, un = u.copy() each step": (heat_copy, {"stream_stores=True": sj.stream_kernel(**true)(heat_copy)},
                                              lambda: (long.copy(), 0.1, STEPS)),
        "1-D heat, u, un = un, u (slices)": (heat_swap, {"stream_stores=True": sj.stream_kernel(**true)(heat_swap)},
                                             lambda: (line.copy(), line.copy(), 0.1, STEPS)),
    }


def main(mib=256, rounds=7):
    print(measure.host_description())
    print(f"{mib} MiB of float64 per program, {STEPS} steps per call; njit's time / this: median (min-max) of "
          f"{rounds} interleaved rounds")
    for program, (function, builds, make) in _programs(mib).items():
        builds = {"numba.njit": numba.njit(function), **builds}
        expected = make()
        builds["numba.njit"](*expected)
        for name, kernel in builds.items():
            got = make()
            kernel(*got)
            same = all(np.array_equal(g, e) for g, e in zip(got, expected) if isinstance(g, np.ndarray))
            assert same, f"{program}, {name}: not equal to numba.njit"
        arguments = {name: make() for name in builds}
        times = measure.interleaved_times({name: (lambda k=kernel, a=arguments[name]: k(*a))
                                           for name, kernel in builds.items()}, rounds)
        print(program)
        for name, ratio in measure.speedups(times, "numba.njit").items():
            print(f"  {name:28s} {ratio:.2f}x ({ratio.low:.2f}-{ratio.high:.2f})")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
