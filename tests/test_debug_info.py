"""Kernels compiled with debug info on stream exactly what they stream
without it (with ``NUMBA_DEBUGINFO=1`` the README's slice Jacobi
and a ``prange`` kernel failed with "Metadata id is already used": a fresh
metadata id ignored the debug-info nodes).

The build with ``NUMBA_DEBUGINFO=1`` runs in a process of its own, so that
the helpers Numba compiles once per process (and links into the kernels)
carry debug info too: this file, run as a script, compiles the kernels and
prints what their stream reports count. Every kernel of the correctness and
codegen suites is also compiled with ``debug=True`` (in this process: the
option is the kernel's own)."""

import functools
from unittest import mock
import json
import os
import subprocess
import sys

import numba
import numpy as np
import pytest

import streamjit as sj


def readme_jacobi(A, B, steps):
    for _ in range(steps):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])


def parallel_scale(out, a):
    for i in numba.prange(a.shape[0]):
        out[i] = 2.0 * a[i]


def zero_fill(out):
    for i in range(out.shape[0]):
        out[i] = 0.0


def reversed_positive(out, a):
    for i in range(a.shape[0] - 1, -1, -1):
        out[i] = a[i] > 0.5


def stencil_jacobi(a):
    return 0.25 * (a[0, 1] + a[0, -1] + a[1, 0] + a[-1, 0])


def _counts(report):
    """What one stream report says reached the code: per array NT stores,
    the machine code's, fences and stores no fence follows."""
    arrays = {name: [rep.nt_vector_stores, rep.nt_scalar_stores] for name, rep in report.arrays.items()}
    return {"arrays": arrays, "machine": [report.machine_nt_vector_stores, report.machine_nt_scalar_stores],
            "fences": report.fences - report.exit_fences, "unfenced": report.unfenced_stores}


def _build_and_count():
    """{kernel: `_counts` of its report}, each kernel compiled here and now."""
    rng = np.random.default_rng(0)
    grid = rng.random((300, 301))
    a = rng.random(5000) - 0.25
    kernels = {
        # (with the bounds checks debug info turns on for a kernel, as it does: a loop that may raise IndexError
        # is never staged, a strip held in the staging buffer would be left unwritten)
        "readme_jacobi": (sj.stream_kernel(stream_stores=True, boundscheck=True)(readme_jacobi),
                          (grid.copy(), grid.copy(), 2)),
        "parallel_scale": (sj.stream_kernel(stream_stores=["out"], parallel=True)(parallel_scale),
                           (np.zeros(5000), a)),
        "zero_fill": (sj.stream_kernel(stream_stores=["out"])(zero_fill), (np.ones(5000),)),
        "reversed_positive": (sj.stream_kernel(stream_stores=["out"])(reversed_positive),
                              (np.zeros(5000, np.bool_), a)),
        "stencil": (sj.stencil(stencil_jacobi), (grid,)),
    }
    counts = {}
    for name, (kernel, args) in kernels.items():
        kernel(*args)
        counts[name] = _counts(kernel.stream_report())
    return counts


def _counts_with_debug_info():
    env = dict(os.environ, NUMBA_DEBUGINFO="1")
    done = subprocess.run([sys.executable, __file__], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_debug_info_streams_what_it_streams_without(monkeypatch):
    """The same NT stores, every one fenced. (Debug info turns bounds checks
    on: the tail loop after a nest's NT stores can then raise, and that
    return gets a fence of its own, which a prange worker's report cannot
    tell from the nest's, its module being optimized again after linking;
    and Numba does not inline the array expressions' functions, so the
    Jacobi's nest has an exception path with an exit fence too.)"""
    with_debug = _counts_with_debug_info()
    monkeypatch.setenv("NUMBA_DEBUGINFO", "0")  # (Numba reads its environment again at each compile)
    without = _build_and_count()
    for counts in (with_debug, without):
        for name, kernel in counts.items():
            assert kernel.pop("fences") >= 1 and kernel["unfenced"] == 0, name
    assert with_debug == without
    # and the kernels do stream: the comparison is not of empty reports
    for name, counts in without.items():
        assert counts["machine"][0] > 0, (name, counts)


@functools.cache
def _suite_kernels():
    """{name: (kernel, function, arguments, whether it streams)} for each kernel of
    tests/kernels.py (the correctness and codegen suites'), and for the plain
    loops there that the codegen suite streams with options of its own."""
    import kernels as K
    from streamjit.kernel.dispatcher import StreamDispatcher
    from streamjit.machine import profile as machine
    from streamjit import options as options_module

    rng = np.random.default_rng(3)
    n = 4099
    a, b = rng.standard_normal(n), rng.standard_normal(n)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    grid = rng.standard_normal((64, 203)).astype(np.float32)
    calls = {
        "copy": ((np.zeros(n + 1)[1:], a), True),
        "copy_plain": ((np.zeros(n), a), False),
        "triad": ((np.zeros(n), a, b, 2.5), True),
        "shifted_store": ((np.zeros(n), a), True),
        "reverse": ((np.zeros(n), a), False),  # (its index runs backwards against the loop's: plain)
        "interleave": ((np.zeros(2 * n), a, b), False),  # (its stores are not aligned: plain, and said why)
        "accumulate": ((a32.copy(), b32), True),
        "accumulate_aug": ((a.copy(), b), False),  # (an update in place stays plain under True)
        "clip_positive": ((np.zeros(n), a), True),
        "jacobi": ((np.zeros_like(grid), grid), True),
        "scale3d": ((np.zeros((3, 5, 67)), rng.standard_normal((3, 5, 67)), 3.0), True),
        "with_local_index": ((np.zeros(n), a), True),
        "early_return": ((np.zeros(n), a, 2000), True),
        "ranged": ((np.zeros(n), a, 3, 3000), True),
        "store_then_read": ((np.zeros(n), a), True),
        "checked_scale": ((np.zeros(n), np.abs(a) % 1.0, 2.0), True),
        "with_left_neighbour": ((np.zeros(n), a), False),  # (its aligned loop does not vectorize: plain)
        "jacobi_f32": ((np.zeros_like(grid), grid), True),
        "add2d": ((np.zeros((40, 301)), rng.standard_normal((40, 301)), rng.standard_normal((40, 301))), True),
        "residual": ((np.zeros(n), a, b), True),
    }
    defined = {name for name, value in vars(K).items() if isinstance(value, StreamDispatcher)}
    assert defined == set(calls), f"a kernel of tests/kernels.py without its call here: {defined ^ set(calls)}"
    kernels = [(name, getattr(K, name).py_func, getattr(K, name)._options, args, streams)
               for name, (args, streams) in calls.items()]
    kernels += [("triad_by_three", K.triad_by_three, dict(stream_stores=["out"], threshold=None),
                 (np.zeros(n, np.float32), a32, b32), True),
                ("copy_until", K.copy_until, dict(stream_stores=["dst"], threshold=None),
                 (np.zeros(n), a, -1), True)]
    # (the profile of a CPU without the 4K-aliasing check, whatever profile
    # the worker has: the arguments, copied by the test, lie alike in their pages)
    with mock.patch.object(options_module, "machine_profile", lambda: machine.default_profile("GenuineIntel", 6)):
        return {name: (sj.stream_kernel(**options, debug=True)(func), func, args, streams)
                for name, func, options, args, streams in kernels}


SUITE_KERNELS = ["copy", "copy_plain", "triad", "shifted_store", "reverse", "interleave", "accumulate",
                 "accumulate_aug", "clip_positive", "jacobi", "scale3d", "with_local_index", "early_return", "ranged",
                 "store_then_read", "checked_scale", "with_left_neighbour", "jacobi_f32", "add2d", "residual",
                 "triad_by_three", "copy_until"]


def test_the_list_names_every_suite_kernel():
    assert sorted(_suite_kernels()) == sorted(SUITE_KERNELS)


@pytest.mark.parametrize("name", SUITE_KERNELS)
def test_the_suites_kernels_under_debug_info(name):
    """Each kernel the correctness and codegen suites compile, compiled
    with ``debug=True`` (debug info, and Numba's bounds checks with it),
    computes on its streamed path what ``numba.njit(debug=True)`` computes,
    and its machine code holds non-temporal stores where the kernel streams
    without debug info (none where it does not), each with a fence on every
    path to a return (`asm_paths`)."""
    from asm_paths import nt_stores_and_unfenced
    from helpers import X86_AVX

    kernel, func, args, streams = _suite_kernels()[name]
    expected = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    returned = numba.njit(debug=True)(func)(*expected)
    assert kernel(*got) == returned
    for want, have in zip(expected, got):
        np.testing.assert_array_equal(have, want)
    if streams:  # (the results compared are the streamed loop's: the suite streams from 0 bytes)
        assert kernel.stream_calls()["streamed"] == 1, kernel.stream_calls()
    if X86_AVX:  # (the machine code read here is x86-64's)
        stores, unfenced = nt_stores_and_unfenced(kernel.inspect_asm(kernel.signatures[0]))
        assert bool(stores) == streams and not unfenced, (stores, unfenced)


if __name__ == "__main__":
    print(json.dumps(_build_and_count()))
