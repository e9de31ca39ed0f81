"""Producer-consumer fusion (`passes/rewrite/array_expressions.py`): temporaries a
kernel computes and reads through shifted views are computed inside the
loop of the store that reads them, with Numba's results, and stay arrays
wherever that would change what the kernel computes."""

import ctypes
import math
import re

import numba
import numpy as np
import pytest

import streamjit as sj
from numba.core.runtime import rtsys
from streamjit.measure.calibration_stencils import hdiff  # NPBench's, as calibrate times it
from helpers import compiled_hdiff, hdiff_args


@pytest.mark.xdist_group("hdiff")
@pytest.mark.parametrize("shape", [(7, 9, 5), (1, 1, 1), (3, 2, 33), (0, 4, 3), (6, 5, 0)])
def test_hdiff_equals_numpy_bit_for_bit(shape):
    """Against NumPy running hdiff itself (numba.njit(hdiff) gives NumPy's
    result bit for bit; its compile, the suite's longest with hdiff's own,
    is left out)."""
    in_field, out, coeff = hdiff_args(shape, 1)
    want = out.copy()
    hdiff(in_field, want, coeff)
    compiled_hdiff()[0](in_field, out, coeff)
    np.testing.assert_array_equal(out, want)


@pytest.mark.xdist_group("hdiff")
def test_hdiff_temporaries_are_computed_in_the_loop(allocation_stats):
    kernel = compiled_hdiff()[0]
    args = hdiff_args((6, 7, 64), 2)
    kernel(*args)                                     # (compile)
    calls = kernel.stream_calls()
    ran = calls["streamed"] + calls["after_check"]
    before = rtsys.get_allocation_stats().mi_alloc
    kernel(*args)
    # Numba wraps each array argument in a meminfo; beyond those, not one
    # array allocated: no temporary (numba.njit(hdiff) allocates 4 or more)
    assert rtsys.get_allocation_stats().mi_alloc - before == len(args)
    calls = kernel.stream_calls()
    assert calls["streamed"] + calls["after_check"] == ran + 1
    report = kernel.stream_report()
    for name in ("lap_field", "flx_field", "fly_field"):
        assert any("fused into the element loop storing out_field" in n for n in report.arrays[name].notes)
    assert "8 times per element" in " ".join(report.arrays["lap_field"].notes)
    first = str(report).splitlines()[0]
    assert "fused 4 temporaries (flx_field, fly_field, lap_field, res)" in first and "plain" not in first


def test_operand_shapes_numba_rejects_raise_as_in_numba():
    def mismatched(a, b, out):
        t = a + b                      # (5,) + (6,): Numba raises
        out[:] = t[0:3] * 2.0

    kernel = sj.stream_kernel(stream_stores=True, threshold=None)(mismatched)
    a, b, out = np.ones(5), np.ones(6), np.zeros(3)
    with pytest.raises(ValueError):
        numba.njit(mismatched)(a, b, out)
    with pytest.raises(ValueError):
        kernel(a, b, out)


def test_a_temporary_read_elsewhere_stays_an_array():
    def returned(a, out):
        t = a * 2.0
        out[:] = t[1:] - t[:-1]
        return t

    kernel = sj.stream_kernel(stream_stores=True, threshold=None)(returned)
    a = np.random.default_rng(3).standard_normal(41)
    out, want = np.empty(40), np.empty(40)
    np.testing.assert_array_equal(kernel(a, out), numba.njit(returned)(a, want))
    np.testing.assert_array_equal(out, want)
    assert "into the loops that read them" not in str(kernel.stream_report()).splitlines()[0]


def test_a_write_between_the_temporary_and_its_reader_keeps_it():
    def written_between(a, out):
        t = a + 1.0
        a[0] = 100.0                   # after t is computed: t keeps a's old value
        out[:] = t[1:] + t[:-1]

    kernel = sj.stream_kernel(stream_stores=True, threshold=None)(written_between)
    rng = np.random.default_rng(4)
    a, out = rng.standard_normal(33), np.empty(32)
    a2, want = a.copy(), np.empty(32)
    kernel(a, out)
    numba.njit(written_between)(a2, want)
    np.testing.assert_array_equal(out, want)


def test_a_temporary_of_the_destination_is_not_fused():
    def smooth(u):
        t = u[2:] - u[:-2]             # NumPy semantics: computed before u is written
        u[1:-1] = u[1:-1] + 0.25 * t

    kernel = sj.stream_kernel(stream_stores=True, threshold=None)(smooth)
    u = np.random.default_rng(5).standard_normal(50)
    want = u.copy()
    numba.njit(smooth)(want)
    kernel(u)
    np.testing.assert_array_equal(u, want)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float64])
def test_mixed_dtypes_read_back_as_the_temporary_dtype(dtype):
    def mixed(a, b, out):
        t = a * b + 3
        out[:] = np.where(t[1:] > t[:-1], t[1:], -t[:-1]) * 0.5

    kernel = sj.stream_kernel(stream_stores=True, threshold=None)(mixed)
    rng = np.random.default_rng(6)
    a, b = (rng.uniform(-1e3, 1e3, 65)).astype(dtype), (rng.uniform(-1e3, 1e3, 65)).astype(dtype)
    a[3] = b[7] = np.nan if np.dtype(dtype).kind == "f" else a[3]
    out, want = np.empty(64), np.empty(64)
    kernel(a, b, out)
    numba.njit(mixed)(a, b, want)
    np.testing.assert_array_equal(out, want)


def test_recomputing_beyond_the_cost_rule_keeps_the_temporaries():
    def deep(a, out):
        t1 = a[1:] + a[:-1]
        t2 = t1[1:] + t1[:-1]
        t3 = t2[1:] + t2[:-1]
        t4 = t3[1:] + t3[:-1]
        t5 = t4[1:] + t4[:-1]
        t6 = t5[1:] + t5[:-1]
        t7 = t6[1:] + t6[:-1]
        t8 = t7[1:] + t7[:-1]
        out[:] = t8[1:] + t8[:-1]      # 2**9 views of a: past MAX_OPERANDS

    kernel = sj.stream_kernel(stream_stores=True, threshold=None)(deep)
    a = np.random.default_rng(7).standard_normal(100)
    out, want = np.empty(91), np.empty(91)
    kernel(a, out)
    numba.njit(deep)(a, want)
    np.testing.assert_array_equal(out, want)
    # out's loop reads t8 as an array (its own loop fuses what the rule allows)
    fused = re.search(r"fused \d+ temporar\w+ \(([^)]*)\)", str(kernel.stream_report()).splitlines()[0])
    assert fused is None or "t8" not in fused.group(1).split(", ")


def rank_two_update(A, u1, v1, u2, v2):   # NPBench gemver's first line (its products need SciPy's BLAS)
    A += np.outer(u1, v1) + np.outer(u2, v2)


@pytest.mark.parametrize("n", [1, 7, 64])
def test_outer_products_are_fused_into_an_update_kept_plain(allocation_stats, n):
    """``A`` is only updated in place, so its stores stay plain under
    ``stream_stores=True``, but its update still runs as one loop: neither
    outer product is made, and the values are Numba's."""
    kernel, plain = sj.stream_kernel(stream_stores=True, threshold=None)(rank_two_update), numba.njit(rank_two_update)
    rng = np.random.default_rng(n)
    args = [rng.standard_normal((n, n))] + [rng.standard_normal(n) for _ in range(4)]
    got, want = [a.copy() for a in args], [a.copy() for a in args]
    kernel(*got), plain(*want)
    np.testing.assert_array_equal(got[0], want[0])
    before = rtsys.get_allocation_stats().mi_alloc
    kernel(*[a.copy() for a in args])
    # the arguments' meminfos only (Numba wraps each array argument): no n x n temporary
    assert rtsys.get_allocation_stats().mi_alloc - before == len(args)
    first = str(kernel.stream_report()).splitlines()[0]
    assert "left A plain (only updated in place)" in first and "temporar" not in first.split("(no temporary)")[1]


def test_an_outer_product_overlapping_its_destination_runs_numbas_code():
    def update(A, u):
        A += np.outer(u, u)

    kernel = sj.stream_kernel(stream_stores=True, threshold=None)(update)
    buf = np.random.default_rng(9).standard_normal(30)
    A, u = buf[:25].reshape(5, 5), buf[20:25]          # u is A's last row
    A2, u2 = A.copy(), u.copy()
    numba.njit(update)(A2, u2)   # (Numba's: the product made before A changes)
    kernel(A, u)
    np.testing.assert_array_equal(A, A2)


def test_a_result_numba_types_fortran_compiles_as_numba_does():
    def flip(a, z):            # NPBench's contour_integral: X = np.linalg.inv(T) (Fortran); X = -X
        X = np.asfortranarray(a)
        if z < 1.0:
            X = -X
        return X * 2.0

    a = np.random.default_rng(8).standard_normal((5, 3))
    for z in (0.5, 2.0):
        np.testing.assert_array_equal(sj.stream_kernel(stream_stores=True)(flip)(a, z), numba.njit(flip)(a, z))


def test_an_update_of_a_plain_array_reading_itself_through_a_call_stays_numbas():
    def durbin(r):             # NPBench's durbin: y stays plain, np.flip(y[:k]) is a view of y
        y = np.empty_like(r)
        alpha = -r[0]
        beta = 1.0
        y[0] = -r[0]
        for k in range(1, r.shape[0]):
            beta *= 1.0 - alpha * alpha
            alpha = -(r[k] + np.sum(np.flip(r[:k]) * y[:k])) / beta
            y[:k] += alpha * np.flip(y[:k])
            y[k] = alpha
        return y

    kernel = sj.stream_kernel(stream_stores=True)(durbin)
    r = np.random.default_rng(10).uniform(0.0, 0.1, 40)
    np.testing.assert_array_equal(kernel(r), numba.njit(durbin)(r))
    assert str(kernel.stream_report()).startswith("durbin: no slice or array expression fused")


def _chain_of_two(out, a):
    t = a + 1.0
    u = t[1:] * t[:-1]
    out[1:] = u


def _chain_of_three(out, a):
    t = a * 0.5 - 1.0
    u = t[1:] - t[:-1]
    v = u[1:] + 2.0 * u[:-1]
    out[2:] = v


def _chain_read_twice(out, a, b):
    t = a + b
    u = t[2:] * t[:-2]
    out[1:-1] = u + t[1:-1]


@pytest.mark.parametrize("kernel", [_chain_of_two, _chain_of_three, _chain_read_twice], ids=lambda f: f.__name__)
def test_named_temporaries_read_through_views_of_temporaries_compile(kernel):
    """A named temporary of views of another temporary, stored whole: each
    view made before the loop has a name of its own in the function."""
    rng = np.random.default_rng(12)
    args = [rng.standard_normal(45)] + [rng.standard_normal(45) for _ in range(kernel.__code__.co_argcount - 1)]
    mine, want = [a.copy() for a in args], [a.copy() for a in args]
    sj.stream_kernel(stream_stores=True, threshold=None)(kernel)(*mine)
    numba.njit(kernel)(*want)
    np.testing.assert_array_equal(mine[0], want[0])


def test_a_foreign_function_writing_through_an_address_keeps_the_temporary():
    """A ctypes function handed ``a.ctypes.data`` (an integer) writes ``a``
    between the temporary and its reader: the temporary keeps ``a``'s old
    values, as under numba.njit."""
    memset = ctypes.CDLL(None).memset
    memset.argtypes, memset.restype = (ctypes.c_size_t, ctypes.c_int, ctypes.c_size_t), ctypes.c_size_t

    def cleared_between(out, a):
        t = a * 2.0
        memset(a.ctypes.data, 0, a.nbytes)
        out[:] = t[1:] + t[:-1]

    a = np.random.default_rng(13).standard_normal(4097)
    want, got = np.empty(4096), np.empty(4096)
    numba.njit(cleared_between)(want, a.copy())
    sj.stream_kernel(stream_stores=["out"], threshold=None)(cleared_between)(got, a.copy())
    np.testing.assert_array_equal(got, want)


def test_pure_calls_between_a_temporary_and_its_reader_keep_it_fused():
    def scaled(out, a, n):
        t = a * 2.0
        c = math.sqrt(abs(float(n))) + np.float64(min(n, 3))
        out[:] = t[1:] + c * t[:-1]

    kernel = sj.stream_kernel(stream_stores=["out"], threshold=None)(scaled)
    a = np.random.default_rng(14).standard_normal(65)
    want, got = np.empty(64), np.empty(64)
    numba.njit(scaled)(want, a, -7)
    kernel(got, a, -7)
    np.testing.assert_array_equal(got, want)
    assert "fused 1 temporary (t)" in str(kernel.stream_report()).splitlines()[0]


def _raises_between(out, a, b, n, m):
    t = a + b                      # shapes differ: numba.njit raises ValueError here
    q = n // m                     # m == 0: ZeroDivisionError, after
    out[:] = t[1:] * q


def _raises_in_the_store_index(out, a, b, n, m):
    out[n // m:] = a + b           # the value first (ValueError), then the index (ZeroDivisionError)


@pytest.mark.parametrize("kernel", [_raises_between, _raises_in_the_store_index], ids=lambda f: f.__name__)
def test_a_temporary_raises_before_a_later_statement_as_in_numba(kernel):
    kernel_sj = sj.stream_kernel(stream_stores=["out"], threshold=None)(kernel)
    rng = np.random.default_rng(15)
    args = (np.empty(4), rng.standard_normal(5), rng.standard_normal(6), 1, 0)
    for compiled in (numba.njit(kernel), kernel_sj):
        with pytest.raises(ValueError):
            compiled(*args)
    a, b = rng.standard_normal(5), rng.standard_normal(5)      # (and where nothing raises, njit's values)
    n, size = (7, 4) if kernel is _raises_between else (1, 5)
    want, got = np.zeros(size), np.zeros(size)
    numba.njit(kernel)(want, a, b, n, 2)
    kernel_sj(got, a, b, n, 2)
    np.testing.assert_array_equal(got, want)


FASTMATH_FIRST = """
import numpy as np, numba, streamjit as sj

def scalar_loop(out, a, b):
    for i in range(out.shape[0]):
        out[i] = a[i] + b[i] * 2

def product(out, a, b):
    out[:] = a * b

rng = np.random.default_rng(0)
a = rng.standard_normal(1000) * 1e3 + 1j * rng.standard_normal(1000)
b = rng.standard_normal(1000) * 1e3 + 1j * rng.standard_normal(1000)
numba.njit(fastmath=True)(scalar_loop)(np.empty_like(a), a, b)
got, want = np.empty_like(a), np.empty_like(a)
sj.stream_kernel(stream_stores=True, threshold=None)(product)(got, a, b)
numba.njit(product)(want, a, b)
print(int((got != want).sum()))
"""


def test_a_fused_element_computes_as_njits_array_expression_after_a_fastmath_kernel():
    """Numba compiles complex ``*`` as a subroutine it keeps per error model
    but not per fastmath flag: after a fastmath kernel of the process
    compiled it, a fused element computed under the kernel's error model
    (not the array expression's) took that fast subroutine and differed
    from njit in 436 of 1000 products (fuzzer seed 30039). A fresh process,
    so that no other test compiled the subroutine first."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", FASTMATH_FIRST], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == "0"
