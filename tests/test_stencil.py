"""streamjit.stencil against numba.stencil on the same kernels: values,
dtype, borders, neighbourhoods, standard indexing, out=, and errors; the
output streamed; one compile per signature; kernels without source; pickling."""

import pickle
import re

import numba
import numpy as np
import pytest

import stencil_kernels as S
import streamjit as sj
from helpers import random_array

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
    ("tiny-wide-neighborhood", S.jacobi, (A2[:3, :3],), {"neighborhood": ((-2, 2), (-1, 4)), "cval": 9.0}),
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


def out_report(kernel):
    """The report of the kernel's latest loop nest, and the output's entry
    (the output is the loop nest's last parameter)."""
    report = kernel.stream_report()
    return report, list(report.arrays.values())[-1]


def test_decorator_forms_and_streaming():
    kernel = sj.stencil(func_or_mode="constant", cval=0.0)(S.jacobi_f32)
    big = random_array(rng, (40, 4099), np.float32)
    np.testing.assert_array_equal(kernel(big), numba.stencil(S.jacobi_f32, cval=0.0)(big))
    report, _ = out_report(kernel)
    assert report.fences == 1 and report.peeled_loops == 1    # streamed above threshold="auto"
    streamed = sj.stencil(S.jacobi_f32, threshold=0)
    streamed(big)
    report, out = out_report(streamed)
    assert out.nt_vector_stores > 0 and report.machine_nt_vector_stores > 0
    plain = sj.stencil(S.jacobi_f32, stream_stores=False)
    np.testing.assert_array_equal(plain(big), numba.stencil(S.jacobi_f32)(big))
    report, out = out_report(plain)
    assert out.nt_vector_stores == 0 and report.machine_nt_vector_stores == 0 and report.fences == 0


def page_distance(a, b):
    """How far apart, modulo 4 KiB and either way round, two arrays' data start."""
    ahead = (a.ctypes.data - b.ctypes.data) % 4096
    return min(ahead, 4096 - ahead)


@pytest.mark.parametrize("offset", [0, 1, 5])
def test_allocated_output_lies_apart_from_the_input_modulo_a_page(offset):
    """AMD EPYC Zen 2: an output allocated as its input is (both
    mmap'd, at one offset in their pages) lies 4 bytes past the input's
    left neighbour modulo 4 KiB, where streamed loads wait for the stores in
    flight and the aligned loop's check sends every call to the plain loop.
    The drop-in allocates its outputs apart (`codegen/placement.py`)."""
    big = random_array(rng, (130, 512 + offset), np.float32)[:, offset:]
    got = sj.stencil(S.jacobi_f32)(big)
    np.testing.assert_array_equal(got, numba.stencil(S.jacobi_f32)(big))
    assert got.flags.c_contiguous and page_distance(got, big) >= 512


def test_plain_loop_nest_loads_contiguous_vectors():
    # numba.stencil's loop bounds, range(-min(0, lo), n - max(0, hi)), left as
    # calls, kept the negative-index wraparound in every access: gathers and
    # scatters, 2.2x as long on a 1000 x 1000 grid
    kernel = sj.stencil(S.jacobi, stream_stores=False)
    np.testing.assert_array_equal(kernel(B2), numba.stencil(S.jacobi)(B2))
    llvm = kernel.inspect_llvm()
    assert re.search(r"load <\d+ x double>", llvm)
    assert "masked.gather" not in llvm and "masked.scatter" not in llvm


@pytest.mark.parametrize("options", [{"stream_loads": True}, {"parallel": True}, {"cval": 2.5}])
def test_stream_options_stream_the_output(options):
    big = random_array(rng, (40, 4099), np.float32)
    kernel = sj.stencil(S.jacobi_f32, threshold=0, **options)
    reference = numba.stencil(S.jacobi_f32, **{k: v for k, v in options.items() if k == "cval"})
    np.testing.assert_array_equal(kernel(big), reference(big))
    report, out = out_report(kernel)
    assert out.nt_vector_stores > 0 and report.machine_nt_vector_stores > 0
    if options.get("stream_loads"):
        assert report.arrays["a"].prefetches > 0


@pytest.mark.parametrize("kernel, array", [(S.avg3, A1), (S.laplace3d, A3), (S.two_inputs, A2)],
                         ids=["1-D", "3-D", "two inputs"])
def test_parallel_in_every_dimension_count(kernel, array):
    args = (array, array) if kernel is S.two_inputs else (array,)
    np.testing.assert_array_equal(sj.stencil(kernel, parallel=True)(*args), numba.stencil(kernel)(*args))


def test_compiled_once_per_signature(monkeypatch):
    compiles = []
    compile_ir = numba.core.compiler.compile_ir
    monkeypatch.setattr(numba.core.compiler, "compile_ir", lambda *a, **k: compiles.append(1) or compile_ir(*a, **k))
    kernel = sj.stencil(S.jacobi)
    for _ in range(3):
        kernel(A2)
    assert len(compiles) == 1
    kernel(B2)                                   # another dtype
    kernel(A2, out=np.empty_like(A2))            # the output passed in
    kernel(A2)
    assert len(compiles) == 3


def misuse(make):
    """Each misuse of a stencil factory ``make`` (numba.stencil or sj.stencil)."""
    return [
        lambda: make(func_or_mode="reflect")(S.avg3),
        lambda: make(S.avg3, bogus=1)(A1),
        lambda: make(S.two_inputs)(A2, B2[:10]),
        lambda: make(S.two_inputs)(A2, B2[0]),
        lambda: make(S.avg3)(A2),
        lambda: make(S.windowed_sum)(A1),
        lambda: make(S.jacobi, neighborhood=((-1, 1),))(A2),
        lambda: make(S.weighted, standard_indexing=("a",))(A1, WEIGHTS),
        lambda: make(S.weighted, standard_indexing=("nope",))(A1, WEIGHTS),
        lambda: make(S.avg3)([1.0, 2.0, 3.0]),
        lambda: make(S.avg3, cval=1j)(A1),
        lambda: make(S.avg3, cval=1j)(A1, out=np.empty_like(A1)),
    ]


@pytest.mark.parametrize("case", range(len(misuse(numba.stencil))))
def test_misuse_raises_what_numba_stencil_raises(case):
    with pytest.raises(Exception) as expected:
        misuse(numba.stencil)[case]()
    with pytest.raises(type(expected.value)) as got:
        misuse(sj.stencil)[case]()
    assert str(got.value).splitlines()[0] == str(expected.value).splitlines()[0]


NO_SOURCE = """
def shifted(a):
    t = 1
    return a[t, 0] - 2 * a[0, 1 - 2]
"""


def test_kernel_without_source_and_pickled_by_value():
    namespace = {}
    exec(NO_SOURCE, namespace)                   # no file: only bytecode
    kernel = sj.stencil(namespace["shifted"], cval=-1.0)
    expected = numba.stencil(namespace["shifted"], cval=-1.0)(A2)
    np.testing.assert_array_equal(kernel(A2), expected)
    cloudpickle = pytest.importorskip("cloudpickle")
    rebuilt = pickle.loads(cloudpickle.dumps(kernel))
    assert rebuilt is not kernel and rebuilt.options == {"cval": -1.0}
    np.testing.assert_array_equal(rebuilt(A2), expected)


def test_pickled_with_its_options():
    kernel = sj.stencil(S.jacobi_f32, cval=1.0, threshold=0)
    rebuilt = pickle.loads(pickle.dumps(kernel))
    big = random_array(rng, (40, 4099), np.float32)
    np.testing.assert_array_equal(rebuilt(big), numba.stencil(S.jacobi_f32, cval=1.0)(big))
    assert out_report(rebuilt)[1].nt_vector_stores > 0


STENCIL_MODULE = """
import streamjit as sj

@sj.stencil(cval=-1.0)
def st(a):
    return a[0, 1] - a[-1, 0]
"""


def test_pickles_with_the_standard_pickle_from_main_and_from_a_module(tmp_path):
    """`pickle.dumps(st)` of an ``@sj.stencil`` raised
    "it's not the same object as __main__.st" (the decorator rebinds the
    function's name), from ``__main__`` and from an importable module, so
    ``multiprocessing.Pool`` failed. Both pickle now, and load in another
    process where neither the script nor the module is importable."""
    import subprocess
    import sys

    (tmp_path / "stencil_module.py").write_text(STENCIL_MODULE)
    script = STENCIL_MODULE + ("import pickle, sys\n"
                               "import stencil_module\n"
                               "pickle.dump([st, stencil_module.st], open(sys.argv[1], 'wb'))\n")
    subprocess.run([sys.executable, "-c", script, str(tmp_path / "stencils.pkl")], cwd=tmp_path, check=True,
                   timeout=120)
    (tmp_path / "stencil_module.py").unlink()
    with open(tmp_path / "stencils.pkl", "rb") as f:
        from_main, from_module = pickle.load(f)
    expected = numba.stencil(lambda a: a[0, 1] - a[-1, 0], cval=-1.0)(A2)
    for rebuilt in (from_main, from_module):
        assert rebuilt.options == {"cval": -1.0}
        np.testing.assert_array_equal(rebuilt(A2), expected)
