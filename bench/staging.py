"""The staged loop (streamjit/passes/staging.py) against the aligned loop
and numba.njit, with arrays allocated alike, so that the loop's sources
trail its streamed stores by a few bytes modulo 4 KiB: a 2-D Jacobi sweep
with ``A`` and ``B`` at one offset in their pages, as ``B = A.copy()`` puts
them where the allocator maps each anew (its loads of ``A[i, j - 1]`` 8 bytes behind its
stores to ``B[i, j]``), the same for one step of bench/ping_pong.py's 3-D
heat (rows of 255 items: the staged loop's work per row counts) and triad with its
destination 12 bytes past its sources. Builds: the aligned loop (no page-alias check: the profile row of
CPUs where trailing sources do not stall), the staged loop at several strip
sizes (the check of CPUs where they stall: every call runs staged; the machine
profile's `strip_bytes` row picks one), and
numba.njit (what the plain fallback runs). njit's time / the build's:
median (min-max) of interleaved rounds; every result is checked equal to
numba.njit's first, and every staged call counted staged.

Run: python bench/staging.py [MiB] [rounds]
"""

import sys

import numba
import numpy as np

from streamjit import measure
from streamjit.measure.calibration import at_page_offset, staging_builds

from ping_pong import heat3d_swap

STRIPS = (512, 1024, 2048, 4096)


def jacobi_sweep(A, B):
    n, m = A.shape
    for i in range(1, n - 1):
        for j in range(1, m - 1):
            B[i, j] = 0.2 * (A[i, j] + A[i - 1, j] + A[i + 1, j] + A[i, j - 1] + A[i, j + 1])


def at_offset(array, offset):
    """A copy of ``array`` starting ``offset`` bytes into a 4 KiB page (as
    arrays allocated alike start at one offset: ``B = A.copy()`` where the
    allocator maps each anew)."""
    raw = np.empty(array.nbytes + 4096, np.uint8)
    skip = (offset - raw.ctypes.data) % 4096
    placed = raw[skip:skip + array.nbytes].view(array.dtype).reshape(array.shape)
    placed[...] = array
    return placed


def _workloads(mib):
    """{name: (function, streamed output, make fresh arguments)}."""
    rng = np.random.default_rng(0)
    side = int((mib / 2 * 2 ** 20 / 8) ** 0.5)
    grid = rng.random((side, side))
    cube = rng.random((int((mib / 2 * 2 ** 20 / 8) ** (1 / 3)),) * 3)
    n = mib * 2 ** 20 // 4 // 3

    def triad_args():
        fill = np.random.default_rng(1)
        return (at_page_offset((n,), 28, fill), at_page_offset((n,), 16, fill), at_page_offset((n,), 16, fill),
                np.float32(3))
    alike = (lambda: (at_offset(grid, 16), at_offset(grid, 16)))
    return {f"Jacobi sweep, B = A.copy() ({side}x{side} float64)": (jacobi_sweep, "B", alike),
            f"heat sweep, un = u.copy() ({cube.shape[0]}^3 float64)": (heat3d_swap, "un", lambda: (
                at_offset(cube, 16), at_offset(cube, 16), 0.1, 1)),
            f"triad, destination 12 bytes past its sources ({n} float32)": (measure.stream_triad, "a",
                                                                              triad_args)}


def _builds(function, output):
    """{build: kernel}; each staged build with its strip size."""
    builds = {"numba.njit": numba.njit(function)}
    for strip, kernel in staging_builds(function, output, STRIPS, threshold=None).items():
        builds["aligned loop (no check)" if strip is None else f"staged, {strip} B strips"] = kernel
    return builds


def _compile(builds, make):
    """Compile each build and check it equals njit."""
    expected = make()
    builds["numba.njit"](*expected)
    for name, kernel in builds.items():
        got = make()
        kernel(*got)
        assert all(np.array_equal(g, e) for g, e in zip(got, expected) if isinstance(g, np.ndarray)), name
    return expected


def main(mib=256, rounds=7):
    print(measure.host_description())
    print(f"{mib} MiB per workload; njit's time / this: median (min-max) of {rounds} interleaved rounds")
    for workload, (function, output, make) in _workloads(mib).items():
        builds = _builds(function, output)
        _compile(builds, make)
        arguments = {name: make() for name in builds}
        times = measure.interleaved_times({name: (lambda k=kernel, a=arguments[name]: k(*a))
                                           for name, kernel in builds.items()}, rounds)
        print(workload)
        for name, ratio in measure.speedups(times, "numba.njit").items():
            calls = getattr(builds[name], "stream_calls", dict)()
            path = ", ".join(f"{k} {v}" for k, v in calls.items() if v)
            print(f"  {name:28s} {ratio:.2f}x ({ratio.low:.2f}-{ratio.high:.2f})  {path}")
            if name.startswith("staged"):
                assert calls["staged"] and not calls["streamed"], (name, calls)


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
