"""Halide's per-stage rule: separate nests inside an outer sequential loop
are separate stages, even when the outer index selects what they write;
each streams, with a fence after it (NPBench's vadv and gramschmidt)."""

import numba
import numpy as np

import streamjit as sj


def vadv_shaped(ccol, dcol, divided):
    for k in range(1, ccol.shape[2]):
        ccol[:, :, k] = dcol[:, :, k] * 2.0
        ccol[:, :, k] = ccol[:, :, k] * divided[:, :, k]


def planes(ccol, dcol, divided):   # vadv's loop over planes of contiguous rows
    for k in range(1, ccol.shape[0]):
        ccol[k, :, :] = dcol[k, :, :] * 2.0
        ccol[k, :, :] = ccol[k, :, :] * divided[k, :, :]


def gramschmidt(A, R, Q):
    n = A.shape[1]
    for k in range(n):
        nrm = (A[:, k] * A[:, k]).sum()
        R[k, k] = np.sqrt(nrm)
        Q[:, k] = A[:, k] / R[k, k]
        for j in range(k + 1, n):
            R[k, j] = (Q[:, k] * A[:, j]).sum()
            A[:, j] -= Q[:, k] * R[k, j]


def test_planes_written_twice_per_k_stream_and_equal_njit():
    """Each store of the k loop is a stage: both stream, each fenced (with
    threshold=None: under "auto" the second, an update in place, stays
    plain). In vadv's own shape the planes are columns (k indexes the last
    dimension): legal too, but their elements lie a row apart, so Numba
    stores them."""
    rng = np.random.default_rng(0)
    dcol, divided = rng.standard_normal((9, 70, 6)), rng.standard_normal((9, 70, 6))
    for function, expected_nt in ((planes, True), (vadv_shaped, False)):
        kernel = sj.stream_kernel(stream_stores=["ccol"], threshold=None)(function)
        for ccol in (np.zeros((9, 70, 6)), np.zeros((9, 71, 6))[:, 1:]):
            expected, got = ccol.copy(), ccol.copy()
            numba.njit(function)(expected, dcol, divided)
            kernel(got, dcol, divided)
            np.testing.assert_array_equal(got, expected)
        report = kernel.stream_report()
        assert (report.arrays["ccol"].nt_vector_stores > 0) == expected_nt, function.__name__
        if expected_nt:
            assert report.peeled_loops == 2 and report.fences >= 2 and not report.unfenced_stores
        else:
            assert "a column (an integer index in the last dimension" in " ".join(report.arrays["ccol"].notes)


def test_gramschmidt_with_r_named_is_legal_and_equals_njit():
    rng = np.random.default_rng(1)
    for name in ("R", "Q"):
        kernel = sj.stream_kernel(stream_stores=[name])(gramschmidt)
        A = rng.random((40, 12)) + np.eye(40, 12)
        got = (A.copy(), np.zeros((12, 12)), np.zeros((40, 12)))
        expected = (A.copy(), np.zeros((12, 12)), np.zeros((40, 12)))
        with np.errstate(all="ignore"):
            kernel(*got)
            numba.njit(gramschmidt)(*expected)
        for g, e in zip(got, expected):
            np.testing.assert_array_equal(g, e)
        assert not kernel.stream_report().unfenced_stores
