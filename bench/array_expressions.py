"""Array expressions, slice assignments, in-place operators and fresh
outputs: each kernel streamed (`stream_kernel(stream_stores=True)`)
against the same function under `numba.njit`, and against streamjit's own
element loops with plain stores (a threshold no array reaches: what fusing
the expression alone gives), in one process, interleaved rounds, medians
and ratios.

- time-stepped Jacobi 2-D with slice expressions, float64, N x N (default 5000), 4 sweeps per call;
- heat 3-D with slice expressions, float64, M^3 (default 300), 2 sweeps per call;
- `C *= beta; C += alpha * A`, float64, N x N, and `A[1:] += c * B[:-1]`, N*N elements, under
  stream_stores=True (which leaves arrays only updated in place plain) and named;
- `out[:] = a * x + y`, float64, N*N elements;
- a loop updating in place, `C[i] = C[i] * b`, N*N elements, under stream_stores=True (plain) and named;
- a fresh output: `r = np.empty_like(x); for i: r[i] = 2x + y; return r`, float64, N*N elements,
  under stream_stores=True (which leaves it plain) and named (``stream_stores=["r"]``);
- a returned array expression, `return np.minimum(np.maximum(x, 2), 10) * a + y * b + c`, float64,
  N*N elements, under stream_stores=True (plain) and named (``stream_stores=["return"]``).

Run: python bench/array_expressions.py [N] [M] [rounds]
"""

import sys

import numba
import numpy as np

import streamjit as sj
from streamjit import measure


def jacobi_steps(A, B, steps):
    for _ in range(steps):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])


def heat3d_steps(A, B, steps):
    for _ in range(steps):
        B[1:-1, 1:-1, 1:-1] = (0.125 * (A[2:, 1:-1, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[:-2, 1:-1, 1:-1])
                               + 0.125 * (A[1:-1, 2:, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, :-2, 1:-1])
                               + 0.125 * (A[1:-1, 1:-1, 2:] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, 1:-1, :-2])
                               + A[1:-1, 1:-1, 1:-1])
        A[1:-1, 1:-1, 1:-1] = (0.125 * (B[2:, 1:-1, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[:-2, 1:-1, 1:-1])
                               + 0.125 * (B[1:-1, 2:, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, :-2, 1:-1])
                               + 0.125 * (B[1:-1, 1:-1, 2:] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, 1:-1, :-2])
                               + B[1:-1, 1:-1, 1:-1])


def scale_accumulate(C, A, alpha, beta):
    C *= beta
    C += alpha * A


def axpy(out, a, x, y):
    out[:] = a * x + y


def shifted_accumulate(A, B, c):
    A[1:] += c * B[:-1]


def scale_loop(C, b):
    for i in range(C.shape[0]):
        C[i] = C[i] * b


def returned_expression(x, y, a, b, c):
    return np.minimum(np.maximum(x, 2.0), 10.0) * a + y * b + c


def fresh_output(x, y):
    r = np.empty_like(x)
    for i in range(x.shape[0]):
        r[i] = 2.0 * x[i] + y[i]
    return r


def compare(name, function, args, rounds, stream_stores=True):
    """njit, streamjit below its threshold (the same element loops, plain
    stores: what fusion alone gives) and streamjit streaming."""
    streamed = sj.stream_kernel(stream_stores=stream_stores, threshold=None)(function)
    fused = sj.stream_kernel(stream_stores=stream_stores, threshold=1 << 62)(function)
    plain = numba.njit(function)
    expected = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    want = plain(*expected)
    for kernel in (streamed, fused):
        check = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        got = kernel(*check)
        assert all(np.array_equal(g, w) for g, w in zip(check, expected) if isinstance(g, np.ndarray))
        assert got is None or np.array_equal(got, want)
    nt = sum(r.nt_vector_stores for r in streamed.stream_report().arrays.values())
    # (a runner returning a number would be taken for a time it measured)
    medians = measure.interleaved_medians({"streamjit": lambda: [streamed(*args)] and None,
                                           "fused": lambda: [fused(*args)] and None,
                                           "njit": lambda: [plain(*args)] and None}, rounds)
    print(f"{name:28s} {medians['njit'] * 1e3:9.1f} {medians['fused'] * 1e3:9.1f} {medians['streamjit'] * 1e3:9.1f}"
          f" {medians['njit'] / medians['streamjit']:9.2f}x {medians['fused'] / medians['streamjit']:9.2f}x"
          f"   vector NT stores in code: {nt}")


def main(n=5000, m=300, rounds=7):
    rng = np.random.default_rng(0)
    print(measure.host_description())
    print(f"{'kernel (float64), ms':28s} {'njit':>9s} {'fused':>9s} {'streamjit':>9s} {'vs njit':>10s} "
          f"{'vs fused':>10s}")
    compare(f"jacobi 2-D {n}x{n}, 4 sweeps", jacobi_steps,
            (rng.standard_normal((n, n)), rng.standard_normal((n, n)), 2), rounds)
    compare(f"heat 3-D {m}^3, 2 sweeps", heat3d_steps,
            (rng.standard_normal((m, m, m)), rng.standard_normal((m, m, m)), 1), rounds)
    compare(f"C *= b; C += a*A {n}x{n}", scale_accumulate,
            (rng.standard_normal((n, n)), rng.standard_normal((n, n)), 1.5, 0.5), rounds)
    compare("  the same, named", scale_accumulate,
            (rng.standard_normal((n, n)), rng.standard_normal((n, n)), 1.5, 0.5), rounds, stream_stores=["C"])
    vectors = (rng.standard_normal(n * n), rng.standard_normal(n * n))
    compare(f"out[:] = a*x + y {n * n}", axpy, (rng.standard_normal(n * n), 1.5) + vectors, rounds)
    compare(f"A[1:] += c*B[:-1] {n * n}", shifted_accumulate, vectors + (0.5,), rounds)
    compare("  the same, named", shifted_accumulate, vectors + (0.5,), rounds, stream_stores=["A"])
    compare(f"loop C[i] = C[i]*b {n * n}", scale_loop, (vectors[0], 1.0000001), rounds)
    compare("  the same, named", scale_loop, (vectors[0], 1.0000001), rounds, stream_stores=["C"])
    compare(f"fresh output {n * n} elems", fresh_output, vectors, rounds)
    compare("  the same, named", fresh_output, vectors, rounds, stream_stores=["r"])
    compare(f"returned expression {n * n}", returned_expression, vectors + (1.5, 2.5, 0.25), rounds)
    compare("  the same, named 'return'", returned_expression, vectors + (1.5, 2.5, 0.25), rounds,
            stream_stores=["return"])


if __name__ == "__main__":
    main(*map(int, sys.argv[1:4]))
