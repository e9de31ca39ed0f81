"""Streamed kernels against NumPy / plain-Python references on random data:
every dtype, odd sizes, misaligned destination views, empty arrays, 2-D and
3-D, overlapping arguments."""

import functools

import numba
import numpy as np
import pytest

import kernels as K
from helpers import DTYPES, random_array

SIZES = [0, 1, 15, 16, 17, 1000, 100003]
OFFSETS = range(16)


@functools.cache
def _njit_of(kernel):
    return numba.njit(kernel.py_func)


def njit_result(kernel, out, *args):
    """``out`` after the same loop compiled by plain numba.njit."""
    expected = out.copy()
    result = _njit_of(kernel)(expected, *args)
    return expected, result


def view_at(buffer_len, offset, n, dtype, fill):
    """A length-n view starting ``offset`` elements into a fresh buffer."""
    buf = np.full(buffer_len, fill, dtype=dtype)
    return buf, buf[offset:offset + n]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_copy_every_dtype_size_and_offset(dtype):
    rng = np.random.default_rng(42)
    sentinel = random_array(rng, 1, dtype)[0]
    for n in SIZES:
        src = random_array(rng, n, dtype)
        for offset in OFFSETS if n < 100003 else (0, 1, 7):
            buf, dst = view_at(n + 32, offset, n, dtype, sentinel)
            K.copy(dst, src)
            np.testing.assert_array_equal(dst, src)
            # nothing outside the destination view was written
            assert (buf[:offset] == sentinel).all() and (buf[offset + n:] == sentinel).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.complex128])
def test_triad_misaligned_views(dtype):
    rng = np.random.default_rng(1)
    n = 4099
    b, c = random_array(rng, n, dtype), random_array(rng, n, dtype)
    q = dtype(3)
    for offset in (0, 1, 5, 13):
        _, a = view_at(n + 32, offset, n, dtype, 0)
        K.triad(a, b, c, q)
        np.testing.assert_allclose(a, b + q * c, rtol=1e-6)


def test_source_views_and_dst_views_independently_misaligned():
    rng = np.random.default_rng(2)
    base = random_array(rng, 5000, np.float32)
    for s_off in (0, 3):
        for d_off in (0, 1, 15):
            src = base[s_off:s_off + 4000]
            _, dst = view_at(4100, d_off, 4000, np.float32, -1)
            K.copy(dst, src)
            np.testing.assert_array_equal(dst, src)


def test_non_contiguous_destination_is_correct():
    rng = np.random.default_rng(3)
    src = random_array(rng, 3001, np.float64)
    buf = np.zeros(6002)
    K.copy(buf[::2], src)
    np.testing.assert_array_equal(buf[::2], src)
    assert (buf[1::2] == 0).all()
    report = K.copy.stream_report((numba.typeof(buf[::2]), numba.typeof(src)))
    assert any("contiguous at run time" in note for note in report.arrays["dst"].notes)


def test_element_unaligned_buffer_is_correct():
    # data pointer not a multiple of the itemsize: no aligned loop may run
    raw = np.zeros(8 * 1001 + 1, np.uint8)
    dst = raw[1:].view(np.float64)
    assert not dst.flags.aligned
    src = np.random.default_rng(4).standard_normal(1001)
    K.copy(dst, src)
    np.testing.assert_array_equal(dst, src)


@pytest.mark.parametrize("n", [0, 1, 2, 33, 1000, 4097])
def test_index_forms(n):
    rng = np.random.default_rng(n)
    a, b = random_array(rng, n, np.float64), random_array(rng, n, np.float64)

    out = np.full(n, 7.0)
    K.shifted_store(out, a)
    expected = np.full(n, 7.0)
    expected[1:] = a[:-1]
    np.testing.assert_array_equal(out, expected)

    out = np.zeros(n)
    K.reverse(out, a)
    np.testing.assert_array_equal(out, a[::-1])

    out = np.zeros(2 * n)
    K.interleave(out, a, b)
    np.testing.assert_array_equal(out[0::2], a)
    np.testing.assert_array_equal(out[1::2], b)

    out = np.zeros(n)
    K.with_local_index(out, a)
    np.testing.assert_array_equal(out, 2 * a)

    out = np.zeros(n)
    K.clip_positive(out, a)
    np.testing.assert_array_equal(out, np.where(a > 0, a, 0))


@pytest.mark.parametrize("kernel", [K.accumulate, K.accumulate_aug], ids=["explicit", "augmented"])
def test_read_modify_write(kernel):
    # Numba computes float32 + 5 * float32 in float64; compare with the same
    # loop under numba.njit, bit for bit.
    rng = np.random.default_rng(5)
    out, a = random_array(rng, 2049, np.float32), random_array(rng, 2049, np.float32)
    expected, _ = njit_result(kernel, out[1:], a[1:])
    kernel(out[1:], a[1:])
    np.testing.assert_array_equal(out[1:], expected)


@pytest.mark.parametrize("shape", [(3, 3), (5, 17), (64, 203), (130, 1029)])
def test_jacobi_2d(shape):
    rng = np.random.default_rng(6)
    g = random_array(rng, shape, np.float32)
    out = np.full(shape, -1.0, np.float32)
    expected, _ = njit_result(K.jacobi, out, g)
    K.jacobi(out, g)
    np.testing.assert_array_equal(out, expected)
    # and the njit loop itself is the 5-point stencil
    stencil = 0.2 * (g[1:-1, 1:-1] + g[1:-1, :-2] + g[1:-1, 2:] + g[:-2, 1:-1] + g[2:, 1:-1])
    np.testing.assert_allclose(out[1:-1, 1:-1], stencil, rtol=1e-4, atol=1e-3)
    assert (out[0] == -1).all() and (out[-1] == -1).all() and (out[:, 0] == -1).all() and (out[:, -1] == -1).all()


def test_jacobi_2d_on_views():
    rng = np.random.default_rng(7)
    big = random_array(rng, (70, 260), np.float32)
    g = big[3:67, 5:250]            # not C-contiguous
    out_buf = np.zeros((64, 262), np.float32)
    out = out_buf[:, 1:246]          # not C-contiguous, element-aligned rows
    expected, _ = njit_result(K.jacobi, out, g)
    K.jacobi(out, g)
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.complex64])
def test_scale_3d(dtype):
    rng = np.random.default_rng(8)
    a = random_array(rng, (3, 5, 67), dtype)
    out = np.zeros_like(a)
    K.scale3d(out, a, dtype(3))
    np.testing.assert_array_equal(out, a * dtype(3))
    empty = np.zeros((2, 0, 4), dtype)
    K.scale3d(empty, empty.copy(), dtype(3))


def test_overlapping_arguments_match_python_loop():
    rng = np.random.default_rng(9)
    for n, shift in ((1000, 1), (1000, 17), (100003, 1), (5000, 64)):
        a = random_array(rng, n, np.float64)
        expected = a.copy()
        K.copy.py_func(expected[shift:], expected[:-shift])
        K.copy(a[shift:], a[:-shift])
        np.testing.assert_array_equal(a, expected)
        b = random_array(rng, n, np.float64)
        expected = b.copy()
        K.copy.py_func(expected[:-shift], expected[shift:])
        K.copy(b[:-shift], b[shift:])
        np.testing.assert_array_equal(b, expected)


def test_early_return_and_later_loads():
    rng = np.random.default_rng(10)
    a = random_array(rng, 3000, np.float64)
    out = np.zeros(3000)
    assert K.early_return(out, a, 2000) == 2000
    np.testing.assert_array_equal(out[:2000], a[:2000])
    assert (out[2000:] == 0).all()
    assert K.early_return(out, a, -5) == -1
    np.testing.assert_array_equal(out, a)
    out = np.zeros(3000)
    assert K.store_then_read(out, a) == pytest.approx(float(np.sum(a * 3)))


def test_negative_range_bounds_keep_python_wraparound():
    rng = np.random.default_rng(11)
    a = random_array(rng, 200, np.float64)
    out = np.zeros(200)
    K.ranged(out, a, -100, 50)   # negative indices wrap around, as in Python
    expected = np.zeros(200)
    K.ranged.py_func(expected, a, -100, 50)
    np.testing.assert_array_equal(out, expected)
    out = np.zeros(200)
    K.ranged(out, a, 3, 197)
    expected = np.zeros(200)
    expected[3:197] = a[3:197] + 1
    np.testing.assert_array_equal(out, expected)


def test_bare_kernel_matches_njit():
    rng = np.random.default_rng(12)
    src = random_array(rng, 1001, np.float32)
    d1, d2 = np.zeros_like(src), np.zeros_like(src)
    K.copy_plain(d1, src)
    K.copy_njit(d2, src)
    np.testing.assert_array_equal(d1, d2)
    np.testing.assert_array_equal(d1, src)


def test_raise_inside_streamed_loop():
    rng = np.random.default_rng(13)
    a = np.abs(random_array(rng, 5000, np.float64)) % 1.0
    out = np.zeros(5000)
    K.checked_scale(out, a, 2.0)
    np.testing.assert_array_equal(out, 2 * a)
    a[3000] = 5.0
    out = np.zeros(5000)
    with pytest.raises(ValueError, match="above limit"):
        K.checked_scale(out, a, 2.0)
    np.testing.assert_array_equal(out[:3000], 2 * a[:3000])
    assert (out[3000:] == 0).all()


@pytest.mark.parametrize("n", [1, 2, 100, 4099])
def test_wraparound_load_in_streamed_loop(n):
    a = random_array(np.random.default_rng(n), n, np.float64)
    out = np.zeros(n)
    K.with_left_neighbour(out, a)
    np.testing.assert_array_equal(out, np.roll(a, 1) + a + a)
