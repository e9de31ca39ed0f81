"""NPBench's doitgen shape: ``for r: for q: tmp = A[r, q, :] @
C4; A[r, q, :] = tmp``, float64, NR=220, NQ=250, NP=270 (119 MB), against
numba.njit. The row store streams; its fence now runs once after the
``r, q`` nest (`passes/legality.py`) instead of after each 2160-byte row
(55,000 fences per call, each exposing the row's drain). Builds:

- numba.njit;
- stream_stores=True: with BLAS the row is read (by ``@``) just before it
  is stored, an update in place, so it stays plain;
- the array named, threshold=None (streamed, one fence per call);
- the same with a fence per row, as before (the nest cut at the row: the
  legality pass's view nest switched off while it compiles);
- the same with streaming switched off by a threshold no call reaches
  (fused, never streamed).

The same builds time a second nest with the same rows and almost no
compute, ``B[r, q, :] = 2.0 * A[r, q, :]``, where each row's fence is
exposed most (the issue's synthetic test: 2160-byte rows streamed 0.81x).
Each result is checked equal to numba.njit's first. Medians (min-max) of
interleaved rounds of njit's time / the build's, in one process. The
machine is shared with other sessions: take the ratios, not the times, and
rerun before trusting a difference of a few percent. Without SciPy (Numba's
``@`` calls its BLAS) the product is an inlined loop, the same for every
build: said in the output.

Run: python bench/fences_per_nest.py [NR NQ NP [rounds]]
"""

import sys
from unittest import mock

import numba
import numpy as np

import streamjit as sj
from streamjit import measure
from streamjit.passes import legality

try:
    import scipy.linalg.cython_blas  # noqa: F401  (Numba's BLAS for `@`)
    BLAS = True
except ImportError:
    BLAS = False


@numba.njit(inline="always")
def row_times(x, C):
    """``x @ C`` without BLAS."""
    out = np.zeros(C.shape[1])
    for k in range(C.shape[0]):
        for p in range(C.shape[1]):
            out[p] += x[k] * C[k, p]
    return out


def doitgen_blas(NR, NQ, NP, A, C4):
    for r in range(NR):
        for q in range(NQ):
            tmp = A[r, q, :] @ C4
            A[r, q, :] = tmp


def doitgen_loop(NR, NQ, NP, A, C4):
    for r in range(NR):
        for q in range(NQ):
            tmp = row_times(A[r, q, :], C4)
            A[r, q, :] = tmp


def scaled_rows(NR, NQ, NP, A, B):
    for r in range(NR):
        for q in range(NQ):
            B[r, q, :] = 2.0 * A[r, q, :]


def _compiled(kernel, args, per_row=False):
    """``kernel`` compiled by a first call (its result discarded)."""
    if per_row:  # the nest cut at the view's own loop, one fence per row
        with mock.patch.object(legality, "_view_nest", lambda scan, store, root, origin: (root, None)):
            kernel(*args())
    else:
        kernel(*args())
    return kernel


def _time(title, function, args, out, rounds, stored):
    """Check every build's result (argument ``out``, the array ``stored``)
    equal to numba.njit's, then time them."""
    named = f"stream_stores=['{stored}']"
    builds = {
        "numba.njit": _compiled(numba.njit(function), args),
        "stream_stores=True": _compiled(sj.stream_kernel(stream_stores=True)(function), args),
        named: _compiled(sj.stream_kernel(stream_stores=[stored], threshold=None)(function), args),
        "a fence per row (before)": _compiled(sj.stream_kernel(stream_stores=[stored], threshold=None)(function), args,
                                              per_row=True),
        "streaming off (threshold)": _compiled(sj.stream_kernel(stream_stores=[stored], threshold=2 ** 62)(function),
                                               args),
    }
    expected = args()
    builds["numba.njit"](*expected)
    for name, kernel in builds.items():
        got = args()
        kernel(*got)
        assert np.array_equal(got[out], expected[out]), f"{title}, {name}: not equal to numba.njit"
    print(title)
    for name in ("stream_stores=True", named, "a fence per row (before)"):
        print(f"  {name}: calls {builds[name].stream_calls()}")
    arguments = {name: args() for name in builds}
    times = measure.interleaved_times({name: (lambda k=kernel, a=arguments[name]: k(*a))
                                       for name, kernel in builds.items()}, rounds)
    for name, ratio in measure.speedups(times, "numba.njit").items():
        print(f"  {name:28s} {ratio:.2f}x ({ratio.low:.2f}-{ratio.high:.2f})")


def main(NR=220, NQ=250, NP=270, rounds=7):
    print(measure.host_description())
    print(f"NR={NR} NQ={NQ} NP={NP} float64 ({NR * NQ * NP * 8 / 1e6:.0f} MB per array); njit's time / this: median "
          f"(min-max) of {rounds} interleaved rounds; shared machine: rerun before trusting a few percent")
    rng = np.random.default_rng(0)
    A0 = rng.random((NR, NQ, NP))
    C4 = rng.random((NP, NP)) * (2.0 / NP)  # (rows keep their scale call after call)
    B0 = np.zeros_like(A0)
    _time(f"doitgen, {'A[r, q, :] @ C4 (BLAS)' if BLAS else 'an inlined row-times-matrix loop (no SciPy: no BLAS)'}",
          doitgen_blas if BLAS else doitgen_loop, lambda: (NR, NQ, NP, A0.copy(), C4), 3, rounds, "A")
    _time("B[r, q, :] = 2.0 * A[r, q, :]", scaled_rows, lambda: (NR, NQ, NP, A0, B0.copy()), 4, rounds, "B")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:5]))
