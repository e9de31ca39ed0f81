"""streamjit.stencil against numba.stencil on the same kernels: values,
dtype, borders, neighbourhoods, standard indexing, out=, and errors."""

import numba
import numpy as np
import pytest

import stencil_kernels as S
import streamjit as sj
from test_correctness import random_array

rng = np.random.default_rng(0)
A1 = random_array(rng, 1003, np.float64)
A1_F32 = random_array(rng, 1003, np.float32)
A1_INT = random_array(rng, 517, np.int32) % 1000
A2 = random_array(rng, (37, 101), np.float32)
B2 = random_array(rng, (37, 101), np.float64)
A3 = random_array(rng, (6, 7, 70), np.float64)
WEIGHTS = np.array([0.25, 0.5, 0.25])

CASES = [
    ("avg3", S.avg3, (A1,), {}),
    ("avg3-f32", S.avg3, (A1_F32,), {}),
    ("avg3-int", S.avg3, (A1_INT,), {}),
    ("forward-diff", S.forward_diff, (A1,), {}),
    ("jacobi", S.jacobi, (A2,), {}),
    ("jacobi-cval", S.jacobi, (A2,), {"cval": 5.0}),
    ("jacobi-f32", S.jacobi_f32, (A2,), {}),
    ("jacobi-view", S.jacobi, (A2[3:, 7:90],), {}),
    ("jacobi-fortran", S.jacobi, (np.asfortranarray(A2),), {}),
    ("asymmetric", S.asymmetric, (A2,), {}),
    ("explicit-neighborhood", S.jacobi, (A2,), {"neighborhood": ((-2, 2), (-1, 3))}),
    ("laplace3d", S.laplace3d, (A3,), {}),
    ("two-inputs", S.two_inputs, (A2, B2), {}),
    ("standard-indexing", S.weighted, (A1, WEIGHTS), {"standard_indexing": ("w",)}),
    ("loop-relative", S.windowed_sum, (A1,), {"neighborhood": ((-2, 2),)}),
    ("branches", S.branchy, (A1,), {}),
    ("function-calls", S.with_calls, (A1,), {}),
    ("int-floor-division", S.int_average, (A1_INT,), {"cval": -1}),
    ("bool-result", S.comparison, (A1,), {}),
    ("tiny", S.jacobi, (A2[:2, :2],), {}),
]


@pytest.mark.parametrize("name, kernel, args, options", CASES, ids=[c[0] for c in CASES])
def test_same_as_numba_stencil(name, kernel, args, options):
    expected = numba.stencil(kernel, **options)(*args)
    ours = sj.stencil(kernel, **options)
    got = ours(*args)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("with_cval", [False, True])
def test_out_argument(with_cval):
    options = {"cval": 3.0} if with_cval else {}
    expected = np.full(A2.shape, -7.0)
    numba.stencil(S.jacobi, **options)(A2, out=expected)
    got = np.full(A2.shape, -7.0)
    assert sj.stencil(S.jacobi, **options)(A2, out=got) is got
    np.testing.assert_array_equal(got, expected)


def test_neighborhood_at_call_time():
    kernel = sj.stencil(S.windowed_sum)
    got = kernel(A1, neighborhood=((-2, 2),))
    np.testing.assert_array_equal(got, numba.stencil(S.windowed_sum, neighborhood=((-2, 2),))(A1))


def test_decorator_forms_and_streaming():
    kernel = sj.stencil(func_or_mode="constant", cval=0.0)(S.jacobi_f32)
    big = random_array(rng, (40, 4099), np.float32)
    got = kernel(big)
    np.testing.assert_array_equal(got, numba.stencil(S.jacobi_f32, cval=0.0)(big))
    report = kernel.stream_report()
    assert report.fences == 1 and report.peeled_loops == 1
    streamed = sj.stencil(S.jacobi_f32, threshold=0)
    streamed(big)
    assert streamed.stream_report().arrays["out"].nt_vector_stores >= report.arrays["out"].nt_vector_stores


@pytest.mark.parametrize("call, error, match", [
    (lambda: sj.stencil(func_or_mode="reflect")(S.avg3), ValueError, "Unsupported mode style reflect"),
    (lambda: sj.stencil(S.two_inputs)(A2, B2[:10]), ValueError, "smaller"),
    (lambda: sj.stencil(S.two_inputs)(A2, B2[0]), ValueError, "same number of dimensions"),
    (lambda: sj.stencil(S.avg3)(A2), ValueError, "indexed with 1 indices but the arrays have 2"),
    (lambda: sj.stencil(S.windowed_sum)(A1), ValueError, "'neighborhood' option required"),
    (lambda: sj.stencil(S.jacobi, neighborhood=((-1, 1),))(A2), ValueError, "1 dimensional neighborhood"),
    (lambda: sj.stencil(S.weighted, standard_indexing=("a",)), ValueError, "must use relative indexing"),
    (lambda: sj.stencil(S.weighted, standard_indexing=("nope",)), ValueError, "not present"),
    (lambda: sj.stencil(S.avg3)([1.0, 2.0, 3.0]), ValueError, "primary input array"),
])
def test_misuse_raises(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_reference_rejects_the_same_misuse():
    # the same misuse fails under numba.stencil too (its messages vary by case)
    with pytest.raises(Exception):
        numba.stencil(S.two_inputs)(A2, B2[:10])
    with pytest.raises(Exception):
        numba.stencil(S.windowed_sum)(A1)
    with pytest.raises(Exception):
        numba.stencil(func_or_mode="reflect")(S.avg3)
