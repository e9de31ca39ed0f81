"""glibc's libmvec in place of scalar math calls (`post_o3/vector_math.py`): accuracy and speed against njit.

Each loop ``out[i] = f(x[i])`` (``f(y[i], x[i])`` for arctan2) and NPBench's
arc_distance run under ``numba.njit(fastmath=True)`` and
``stream_kernel(stream_stores=True, fastmath=True)`` on the same random
float64 data; the table gives the largest difference in units in the last
place (ulp, at the larger of the two results) and relative, and the
medians of interleaved rounds. Arguments: sin, cos and arctan2 take
uniform [-10, 10], exp [-700, 700], log [1e-300, 1e300] log-uniform.

Run: python bench/vector_math.py [N] [rounds]   (default 2,500,000 float64, 7 rounds)
"""

import os
import sys
import time

import numba
import numpy as np

import streamjit as sj
from streamjit.machine.profile import cpu_name

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "npbench", "benchmarks", "pythran", "arc_distance"))
import arc_distance_numba_n  # noqa: E402 (NPBench's source, on the path above)


def _unary(f):
    def loop(out, x):
        for i in range(x.shape[0]):
            out[i] = f(x[i])
    return loop


def _binary(f):
    def loop(out, y, x):
        for i in range(x.shape[0]):
            out[i] = f(y[i], x[i])
    return loop


def arc_distance_loop(theta_1, phi_1, theta_2, phi_2):
    """arc_distance as one element loop: what NPBench's array expressions
    compute, without the broadcasting index recurrence that keeps their
    loop scalar under njit and streamjit (bench/README.md)."""
    out = np.empty_like(theta_1)
    for i in range(theta_1.shape[0]):
        temp = np.sin((theta_2[i] - theta_1[i]) / 2) ** 2 + np.cos(theta_1[i]) * np.cos(theta_2[i]) * np.sin(
            (phi_2[i] - phi_1[i]) / 2) ** 2
        out[i] = 2 * np.arctan2(np.sqrt(temp), np.sqrt(1 - temp))
    return out


def ulps(a, b):
    """Largest |a - b| in ulps of the larger magnitude (equal non-finite values: 0)."""
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    spacing = np.spacing(np.maximum(np.abs(a), np.abs(b)))
    return float(np.max(np.where(same, 0.0, np.abs(a - b) / spacing)))


def relative(a, b):
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    return float(np.max(np.where(same, 0.0, np.abs(a - b) / np.maximum(np.abs(b), np.finfo(b.dtype).tiny))))


def main(n=2_500_000, rounds=7):
    rng = np.random.default_rng(0)
    x = rng.uniform(-10, 10, n)
    y = rng.uniform(-10, 10, n)
    cases = {"sin": (_unary(np.sin), (x,)), "cos": (_unary(np.cos), (x,)),
             "exp": (_unary(np.exp), (rng.uniform(-700, 700, n),)),
             "log": (_unary(np.log), (10.0 ** rng.uniform(-300, 300, n),)),
             "arctan2": (_binary(np.arctan2), (y, x))}
    print(f"{cpu_name()}; numba {numba.__version__}; N={n:,} float64, {rounds} interleaved rounds, medians")
    print("| loop | max ulp | max rel. diff | njit ms | streamjit ms | speed-up |")
    print("|---|---|---|---|---|---|")
    for name, (loop, args) in cases.items():
        plain = numba.njit(fastmath=True)(loop)
        kernel = sj.stream_kernel(stream_stores=True, fastmath=True)(loop)
        out_plain, out_kernel = np.empty(n), np.empty(n)
        _row(name, lambda: plain(out_plain, *args), lambda: kernel(out_kernel, *args),
             lambda: (out_kernel, out_plain), rounds)
    angles = [rng.random(n) for _ in range(4)]
    for name, source in (("arc_distance", arc_distance_numba_n.arc_distance.py_func),
                         ("arc_distance as a loop", arc_distance_loop)):
        plain = numba.njit(fastmath=True)(source)
        kernel = sj.stream_kernel(stream_stores=True, fastmath=True)(source)
        results = {}
        _row(name, lambda: results.__setitem__("plain", plain(*angles)),
             lambda: results.__setitem__("kernel", kernel(*angles)), lambda: (results["kernel"], results["plain"]),
             rounds)


def _row(name, plain, kernel, outputs, rounds):
    plain()
    kernel()
    accuracy = outputs()
    ulp, rel = ulps(*accuracy), relative(*accuracy)
    times = {"plain": [], "kernel": []}
    for _ in range(rounds):
        for key, call in (("plain", plain), ("kernel", kernel)):
            start = time.perf_counter()
            call()
            times[key].append(time.perf_counter() - start)
    p, k = np.median(times["plain"]) * 1e3, np.median(times["kernel"]) * 1e3
    print(f"| {name} | {ulp:.1f} | {rel:.2e} | {p:.1f} | {k:.1f} | {p / k:.2f}x |", flush=True)


if __name__ == "__main__":
    main(*map(int, sys.argv[1:3]))
