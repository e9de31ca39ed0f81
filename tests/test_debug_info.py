"""Kernels compiled with debug info on stream exactly what they stream
without it (issue 26: with ``NUMBA_DEBUGINFO=1`` the README's slice Jacobi
and a ``prange`` kernel failed with "Metadata id is already used": a fresh
metadata id ignored the debug-info nodes).

Numba reads ``NUMBA_DEBUGINFO`` once, at import, so each build runs in a
subprocess: this file, run as a script, compiles the kernels and prints
what their stream reports count."""

import json
import os
import subprocess
import sys

import numpy as np


def readme_jacobi(A, B, steps):
    for _ in range(steps):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])


def parallel_scale(out, a):
    for i in _prange(a.shape[0]):
        out[i] = 2.0 * a[i]


def zero_fill(out):
    for i in range(out.shape[0]):
        out[i] = 0.0


def reversed_positive(out, a):
    for i in range(a.shape[0] - 1, -1, -1):
        out[i] = a[i] > 0.5


def stencil_jacobi(a):
    return 0.25 * (a[0, 1] + a[0, -1] + a[1, 0] + a[-1, 0])


def _prange(n):  # (replaced by numba.prange in the subprocess)
    return range(n)


def _counts(report):
    """What one stream report says reached the code: per array NT stores,
    the machine code's, fences and stores no fence follows."""
    arrays = {name: [rep.nt_vector_stores, rep.nt_scalar_stores] for name, rep in report.arrays.items()}
    return {"arrays": arrays, "machine": [report.machine_nt_vector_stores, report.machine_nt_scalar_stores],
            "fences": report.fences - report.exit_fences, "unfenced": report.unfenced_stores}


def _build_and_count():
    import numba

    import streamjit as sj
    globals()["_prange"] = numba.prange
    rng = np.random.default_rng(0)
    grid = rng.random((300, 301))
    a = rng.random(5000) - 0.25
    kernels = {
        "readme_jacobi": (sj.stream_kernel(stream_stores=True)(readme_jacobi), (grid.copy(), grid.copy(), 2)),
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
    print(json.dumps(counts))


def _counts_with_debug_info(on):
    env = dict(os.environ, NUMBA_DEBUGINFO="1" if on else "0")
    done = subprocess.run([sys.executable, __file__], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_debug_info_streams_what_it_streams_without():
    """The same NT stores and nest fences. (With debug info Numba does not
    inline the array expressions' functions, so the Jacobi's nest has an
    exception path and its return gets an exit fence of its own.)"""
    with_debug, without = _counts_with_debug_info(True), _counts_with_debug_info(False)
    assert with_debug == without
    # and the kernels do stream: the comparison is not of empty reports
    for name, counts in without.items():
        assert counts["machine"][0] > 0 and counts["fences"] > 0 and counts["unfenced"] == 0, (name, counts)


if __name__ == "__main__":
    _build_and_count()
