"""target="cuda" and sj.cuda.jit without a GPU: the kernels compile to PTX
(numba-cuda) and machine code (ptxas + nvdisasm, sm_80 and sm_90), and the
hints are there: STG.E.EF for streamed stores (.128 where vectorized),
LDG.E.EF for streamed loads, LDGSTS + LDGDEPBAR + DEPBAR.LE SB0, k-1 for
pipeline_stages=k. The same legality errors as on the CPU. Results are
checked under the simulator (test_cuda_simulator.py)."""

import functools
import re

import numpy as np
import pytest
from numba import cuda
from numba import types as T

import cuda_kernels as K
import streamjit as sj

# (without the CUDA toolchain extra, the whole module is reported as skipped, saying how to install it)
pytestmark = pytest.mark.skipif(bool(K.MISSING_TOOLCHAIN), reason=K.MISSING_TOOLCHAIN)

F32, F64, I32 = T.float32[::1], T.float64[::1], T.int32[::1]
F32_A = T.float32[:]  # a strided view: nothing proves its elements contiguous
F64_2D = T.float64[:, ::1]
TRIAD = (F32, F32, F32, T.float32)
CCS = [(8, 0), (9, 0)]
PLAIN_STORE = re.compile(r"\bSTG\.E(?:\.(?:32|64|128))?\s")


@functools.cache
def kernel(func, **options):
    return sj.stream_kernel(getattr(K, func), target="cuda", **options)


@functools.cache
def sass(func, sig, cc, **options):
    return kernel(func, **options).inspect_sass(sig, cc=cc)


@functools.cache
def report(func, sig, **options):
    return kernel(func, **options).stream_report(sig)


@pytest.mark.parametrize("cc", CCS, ids=lambda cc: f"sm_{cc[0]}{cc[1]}")
def test_triad_streams_vector_and_scalar_stores_and_loads(cc):
    code = sass("triad", TRIAD, cc, stream_stores=("a",), stream_loads=("b", "c"))
    assert "STG.E.EF.128" in code  # the aligned groups
    assert "LDG.E.EF.128" in code  # their loads, where the sources share the destination's alignment
    assert re.search(r"\bSTG\.E\.EF\s", code)  # the peeled head and tail
    assert re.search(r"\bLDG\.E\.EF\s", code)
    assert not PLAIN_STORE.search(code)


@pytest.mark.parametrize("cc", CCS, ids=lambda cc: f"sm_{cc[0]}{cc[1]}")
def test_jacobi_rows_of_doubles_stream_16_byte_stores(cc):
    code = sass("jacobi", (F64_2D, F64_2D), cc, stream_stores=("out",), stream_loads=("g",))
    assert "STG.E.EF.128" in code and re.search(r"\bLDG\.E\.EF\.64\s", code)
    assert not PLAIN_STORE.search(code)


@pytest.mark.parametrize("cc", CCS, ids=lambda cc: f"sm_{cc[0]}{cc[1]}")
def test_load_cache_nc_takes_the_read_only_path(cc):
    code = sass("triad", TRIAD, cc, stream_stores=("a",), stream_loads=("b", "c"), load_cache="nc")
    assert re.search(r"\bLDG\.E\.NA(?:\.\w+)*\.CONSTANT\b", code) and not re.search(r"\bLDG\.E\.EF\b", code)
    assert "STG.E.EF.128" in code


def test_eager_signature_compiles_at_decoration():
    k = sj.stream_kernel("void(float32[::1], float32[::1], float32[::1], float32)", target="cuda",
                         stream_stores=["a"])(K.triad)
    assert k.signatures == [TRIAD]
    assert k.stream_report().arrays["a"].nt_vector_stores >= 1  # the eager signature is the default


def test_nothing_named_nothing_hinted():  # the control
    r = report("triad", TRIAD)
    assert all(c.nt_vector_stores == c.nt_scalar_stores == c.nt_loads == 0 for c in r.arrays.values())
    assert r.arrays["a"].plain_stores >= 1 and r.arrays["b"].plain_loads >= 1 and r.arrays["c"].plain_loads >= 1
    assert r.machine["STG.E.EF"] == r.machine["STG.E.EF.128"] == r.machine["LDG.E.EF"] == 0


def test_report_counts_hinted_ptx_per_array():
    r = report("triad", TRIAD, stream_stores=("a",), stream_loads=("b",))
    assert r.arrays["a"].nt_vector_stores >= 1 and r.arrays["a"].nt_scalar_stores >= 1
    assert r.arrays["b"].nt_loads >= 1 and r.arrays["b"].plain_loads == 0 and r.machine["LDG.E.EF.128"] >= 1
    assert r.arrays["c"].nt_loads == 0 and r.arrays["c"].plain_loads >= 1  # c is not named
    assert r.arrays["a"].plain_stores == 0
    assert r.machine["STG.E.EF.128"] >= 1 and r.machine["LDG.E.EF"] >= 1
    assert "NT vec st" in str(r) and "plain ld" in str(r)


@pytest.mark.parametrize("func,sig", [("triad", (F32_A, F32, F32, T.float32)),
                                      ("update_rows", (F64_2D, F64_2D)),
                                      ("branchy", (F64, F64)),
                                      ("stepped", (F64, F64))], ids=["strided", "reads-own", "branches", "step"])
def test_unproven_contiguity_keeps_scalar_streamed_stores(func, sig):
    # (threshold=None: update_rows updates out in place, which "auto" leaves plain, as on the CPU)
    r = report(func, sig, stream_stores=("out" if func != "triad" else "a",), threshold=None)
    stored = r.arrays["out" if func != "triad" else "a"]
    assert stored.nt_vector_stores == 0 and stored.nt_scalar_stores >= 1
    assert r.machine["STG.E.EF.128"] == 0 and r.machine["STG.E.EF"] >= 1


@pytest.mark.parametrize("depth", [1, 2, 4])
@pytest.mark.parametrize("cc", CCS, ids=lambda cc: f"sm_{cc[0]}{cc[1]}")
def test_pipeline_stages_are_an_asynchronous_load_stage(depth, cc):
    k = kernel("triad", stream_stores=("a",), stream_loads=("b", "c"), pipeline_stages=depth)
    assert f"cp.async.wait_group {depth - 1};" in k.inspect_ptx(TRIAD, cc=cc)
    code = sass("triad", TRIAD, cc, stream_stores=("a",), stream_loads=("b", "c"), pipeline_stages=depth)
    assert "LDGSTS" in code and "LDGDEPBAR" in code
    assert re.search(rf"DEPBAR\.LE SB0, 0x{depth - 1}\b", code)
    assert not re.search(r"\bLDG\.E", code)  # every load of b and c goes through the ring
    r = report("triad", TRIAD, stream_stores=("a",), stream_loads=("b", "c"), pipeline_stages=depth)
    assert r.arrays["b"].prefetches >= 1 and r.arrays["b"].nt_loads == 0 and r.commits >= 1 and r.waits >= 1


def test_stencil_rings_per_neighbour():
    r = report("jacobi", (F64_2D, F64_2D), stream_stores=("out",), stream_loads=("g",), pipeline_stages=3)
    assert r.arrays["g"].prefetches >= 5 and r.arrays["g"].nt_loads == 0
    assert r.machine["LDGSTS"] >= 5 and r.machine["DEPBAR.LE"] >= 1


def test_prefetch_needs_sm_80():
    k = kernel("triad", stream_stores=("a",), stream_loads=("b",), pipeline_stages=2)
    with pytest.raises(sj.StreamError, match="sm_80"):
        k.inspect_ptx(TRIAD, cc=(7, 5))


def test_rings_that_do_not_fit_in_shared_memory_are_an_error():
    k = kernel("jacobi", stream_stores=("out",), stream_loads=("g",), pipeline_stages=8)
    with pytest.raises(sj.StreamError, match="shared memory"):
        k.inspect_ptx((F64_2D, F64_2D), threads_per_block=1024)


@pytest.mark.parametrize("func,sig,array", [
    ("fill", (F64, T.float64), "out"), ("fill", (I32, T.int32), "out"),
    ("renamed_prange", (F64, F64, F64), "out"), ("chained_store", (F64_2D, F64_2D), "arr"),
    ("prange_rows", (F64_2D, F64_2D), "out"), ("grid_2d", (F64_2D, F64_2D), "out"),
    ("stepped", (F64, F64), "out")], ids=lambda v: v if isinstance(v, str) else None)
def test_cpu_tested_prange_shapes_compile_and_stream(func, sig, array):
    r = report(func, sig, stream_stores=True)
    assert r.arrays[array].nt_vector_stores + r.arrays[array].nt_scalar_stores >= 1
    assert r.machine["STG.E.EF"] + r.machine["STG.E.EF.128"] >= 1


@pytest.mark.parametrize("func,sig,dims", [("grid_2d", (F64_2D, F64_2D), 2),
                                           ("grid_3d", (T.float64[:, :, ::1],) * 2, 3)])
def test_a_perfect_prange_nest_is_a_grid_of_its_depth(func, sig, dims):
    source = kernel(func, stream_stores=True).inspect_source(sig)
    assert f".grid({dims})" in source and f".gridsize({dims})" in source and "prange" not in source
    assert report(func, sig, stream_stores=True).machine["STG.E.EF.128"] >= 1


@pytest.mark.parametrize("dtype", [T.int8, T.float16, T.uint16], ids=str)
def test_8_and_16_bit_numbers_take_the_scalar_hints_of_numba_cuda(dtype):
    sig = (dtype[::1], dtype)
    r = report("fill", sig, stream_stores=True)
    out = r.arrays["out"]
    assert out.nt_scalar_stores >= 1 and out.nt_vector_stores == out.plain_stores == 0
    assert r.machine["STG.E.EF"] >= 1 and r.machine["STG.E.EF.128"] == 0  # (the vector forms: 32 and 64 bits)
    assert f"st.global.cs.b{dtype.bitwidth}" in kernel("fill", stream_stores=True).inspect_ptx(sig)


def test_indices_of_two_widths_take_the_hints():
    sig = (T.int16[:, ::1],) * 2
    k = sj.cuda.jit(K.mixed_indices_numba_cuda, stream_stores=True, stream_loads=True)
    r = k.stream_report(sig)
    assert r.arrays["out"].nt_scalar_stores == r.arrays["x"].nt_loads >= 1  # (the loop is unrolled)
    assert r.arrays["out"].plain_stores == r.arrays["x"].plain_loads == 0


def test_other_dtypes_stay_plain_and_say_so():
    r = report("fill", (T.complex64[::1], T.complex64), stream_stores=True)
    assert r.arrays["out"].nt_scalar_stores == 0 and r.arrays["out"].plain_stores >= 1
    assert r.machine["STG.E.EF"] == 0
    assert any("no PTX cache hint" in note for note in r.arrays["out"].notes)


def test_numba_cuda_kernel_with_shared_memory_keeps_it():
    sig = (F64, F64)
    hinted = sj.cuda.jit(K.reverse_blocks_numba_cuda, stream_stores=["out"], stream_loads=["x"])
    r = hinted.stream_report(sig)
    assert r.arrays["out"].nt_scalar_stores == 1 and r.arrays["x"].nt_loads == 1
    code = hinted.inspect_sass(sig)
    assert re.search(r"\bSTS\b", code) and re.search(r"\bLDS\b", code) and "BAR.SYNC" in code
    assert re.search(r"\bSTG\.E\.EF\.64\b", code) and re.search(r"\bLDG\.E\.EF\.64\b", code)


def test_stores_through_an_alias_stream():
    r = report("through_alias", (F64, F64), stream_stores=True)
    assert r.arrays["out"].nt_vector_stores >= 1 and r.arrays["out"].nt_scalar_stores >= 1
    assert "o" not in r.arrays


def test_stores_the_syntax_tree_does_not_show_stay_plain_and_say_so():
    r = sj.cuda.jit(K.atomic_numba_cuda, stream_stores=["out"]).stream_report((F64, F64))
    assert r.arrays["out"].nt_scalar_stores == r.arrays["out"].nt_vector_stores == 0 and r.machine["STG.E.EF"] == 0
    assert any("none of its stores" in note for note in r.arrays["out"].notes)


def test_same_legality_error_as_on_the_cpu():
    cpu = sj.stream_kernel(stream_stores=["out"], parallel=True)(K.reduce_into)
    with pytest.raises(sj.StreamLegalityError) as on_cpu:
        cpu(np.zeros(1), np.ones(10))
    gpu = sj.stream_kernel(K.reduce_into, target="cuda", stream_stores=["out"])
    with pytest.raises(sj.StreamLegalityError) as on_gpu:
        gpu.inspect_ptx((F64, F64))
    assert str(on_gpu.value) == str(on_cpu.value)
    assert "does not depend on the loop variable 'i'" in str(on_gpu.value)


@pytest.mark.parametrize("func,message", [("two_nests", "grid-wide barrier"), ("returns_value", "returns nothing")])
def test_what_the_grid_cannot_run_is_an_error(func, message):
    with pytest.raises(sj.StreamError, match=message):
        sj.stream_kernel(getattr(K, func), target="cuda", stream_stores=["out"]).inspect_ptx((F64, F64))


@pytest.mark.skipif(cuda.is_available(), reason="a GPU is here")
def test_launch_without_a_gpu_says_what_is_missing():
    k = kernel("triad", stream_stores=("a",))
    a = np.ones(8, np.float32)
    with pytest.raises(sj.StreamError, match="no CUDA GPU"):
        k(a, a.copy(), a.copy(), np.float32(1))


def test_numba_cuda_kernel_gets_the_hints_without_changing_its_body():
    sig = (F64, F64, F64, T.float64)
    hinted = sj.cuda.jit(K.axpy_numba_cuda, stream_stores=["out"], stream_loads=["x"])
    r = hinted.stream_report(sig)
    assert r.arrays["out"].nt_scalar_stores == 1 and r.arrays["x"].nt_loads == 1 and r.arrays["y"].nt_loads == 0
    assert r.machine["STG.E.EF"] == 1 and r.machine["LDG.E.EF"] == 1
    assert "cuda.grid(1)" in hinted.inspect_source(sig)
    eager = sj.cuda.jit("void(float64[::1], float64[::1], float64[::1], float64)", stream_stores=["out"])
    assert eager(K.axpy_numba_cuda).stream_report().arrays["out"].nt_scalar_stores == 1  # as numba-cuda takes it
    plain = sj.cuda.jit(K.axpy_numba_cuda).stream_report(sig)
    assert plain.machine["STG.E.EF"] == 0 and plain.machine["LDG.E.EF"] == 0  # the control


class _Occupancy:
    """A compiled kernel as numba-cuda's occupancy query sees it: blocks of
    each size resident at once on a 132-SM device (2048 threads per SM, up
    to 1024 threads per block at 1 block per SM for this kernel)."""

    def compile(self, argtypes):
        return self

    def max_cooperative_grid_blocks(self, threads):
        return {128: 16, 256: 8, 512: 4, 1024: 1}[threads] * 132


@pytest.mark.parametrize("elements,threads,expected", [
    (1 << 24, None, (16 * 132, 128)),  # the smallest block that keeps the most threads resident
    (1000, None, (8, 128)),  # no more blocks than the largest array needs
    (0, None, (1, 128)),
    (1 << 24, 256, (8 * 132, 256)),  # the caller's block size
])
def test_launch_configuration_by_occupancy(elements, threads, expected):
    # the query itself needs a GPU; this checks what is made of its answers
    k = kernel("triad", stream_stores=("a",))
    args = (np.empty(elements, np.float32), np.empty(3, np.float32))
    assert k._configure(_Occupancy(), TRIAD, args, None, threads, sim=False) == expected
