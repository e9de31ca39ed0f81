"""stream_loads: streamed loads are tagged and prefetched where their index
advances with the innermost loop; results never change."""

import re

import numba
import numpy as np
import pytest

import streamjit as sj
from streamjit.measure import calibration
from streamjit import codegen, measure
from streamjit.machine import profile as machine
from streamjit.machine.profile import LoadStage
from helpers import needs_x86_avx
from kernels import residual

PREFETCH_NTA = re.compile(r"^\s*prefetchnta\s", re.M)


# (named, and threshold=None: under True or "auto" an update in place stays plain)
@sj.stream_kernel(stream_loads=True, stream_stores=["out"], threshold=None)
def self_referencing(out, a):
    # Halide's case: a is streamed, the load of out is an ordinary self-load
    for i in range(a.shape[0]):
        out[i] = out[i] + 5 * a[i]


gather = sj.stream_kernel(stream_loads=["key", "x"], stream_stores=["out"])(measure.gather)
spmv = sj.stream_kernel(stream_loads=["indices", "values"], stream_stores=["y"])(measure.spmv)


@sj.stream_kernel(stream_loads=True, stream_stores=["out"])
def broadcast_rows(out, row_scale, m):
    first = m[0, 0]                       # outside every loop
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            out[i, j] = m[i, j] * row_scale[i] + first   # row_scale[i] does not advance with j


@sj.stream_kernel(stream_loads=["a"], prefetch_distance=0, stream_stores=["out"])
def hint_only(out, a):
    for i in range(a.shape[0]):
        out[i] = a[i - 1]                 # a[-1] at i = 0: Python's wraparound


@pytest.fixture(scope="module")
def rng():
    return np.random.default_rng(7)


def test_self_referencing_case(rng):
    out, a = rng.standard_normal(3001), rng.standard_normal(3001)
    expected = out + 5 * a
    self_referencing(out[1:], a[1:])
    np.testing.assert_allclose(out[1:], expected[1:])
    assert self_referencing.stream_result().streamed_loads == {"a"}
    report = self_referencing.stream_report()
    assert report.arrays["a"].prefetches > 0
    assert report.arrays["out"].prefetches == 0 and report.arrays["out"].plain_loads > 0
    assert report.arrays["out"].nt_vector_stores > 0 and report.fences == 1


def test_residual_streams_only_the_named_array(rng):
    f, g = rng.standard_normal(2000), rng.standard_normal(2000)
    h = np.zeros(2000)
    residual(h, f, g)
    np.testing.assert_array_equal(h, f + g)
    report = residual.stream_report()
    assert report.arrays["f"].prefetches > 0 and report.arrays["g"].prefetches == 0


def test_gather_prefetches_streams_not_table(rng):
    lut = rng.standard_normal(4096).astype(np.float32)
    key = rng.integers(0, 4096, 5001)
    x = rng.standard_normal(5001).astype(np.float32)
    out = np.zeros(5001, np.float32)
    gather(out, lut, key, x)
    np.testing.assert_array_equal(out, lut[key] * x)
    report = gather.stream_report()
    assert report.arrays["key"].prefetches > 0 and report.arrays["x"].prefetches > 0
    assert report.arrays["lut"].prefetches == 0


def test_csr_spmv(rng):
    rows, per_row = 300, 7
    indptr = np.arange(0, rows * per_row + 1, per_row)
    indices = rng.integers(0, 50, rows * per_row).astype(np.int32)
    values = rng.standard_normal(rows * per_row)
    x = rng.standard_normal(50)
    y = np.zeros(rows)
    spmv(y, indptr, indices, values, x)
    expected = (values * x[indices]).reshape(rows, per_row).sum(axis=1)
    np.testing.assert_allclose(y, expected)
    report = spmv.stream_report()
    assert report.arrays["values"].prefetches > 0 and report.arrays["indices"].prefetches > 0
    assert report.arrays["x"].prefetches == 0 and report.arrays["indptr"].prefetches == 0


def test_broadcast_and_outside_loop_loads_are_not_prefetched(rng):
    m = rng.standard_normal((20, 301))
    row_scale = rng.standard_normal(20)
    out = np.zeros_like(m)
    broadcast_rows(out, row_scale, m)
    np.testing.assert_allclose(out, m * row_scale[:, None] + m[0, 0])
    report = broadcast_rows.stream_report()
    notes = report.arrays["row_scale"].notes + report.arrays["m"].notes
    assert any("does not advance with the innermost loop 'j'" in n for n in notes)
    assert any("outside every loop" in n for n in notes)
    assert report.arrays["row_scale"].prefetches == 0 and report.arrays["m"].prefetches > 0


def test_prefetch_distance_zero_keeps_semantics_and_emits_no_prefetch(rng):
    a = rng.standard_normal(1000)
    out = np.zeros(1000)
    # (the load of a[i - 1] wraps around at i = 0, so its loop stays plain)
    with pytest.warns(sj.StreamWarning, match="streamed in hint_only: no store to it could be aligned"):
        hint_only(out, a)
    np.testing.assert_array_equal(out, np.roll(a, 1))
    assert hint_only.stream_report().arrays["a"].prefetches == 0


def test_stream_load_keeps_boundscheck():
    @sj.stream_kernel(stream_loads=["a"], boundscheck=True)
    def read_past(out, a):
        for i in range(out.shape[0]):
            out[i] = a[i]

    with pytest.raises(IndexError):
        read_past(np.zeros(10), np.zeros(5))


@pytest.mark.parametrize("value", [-1, 1.5, "far", True])
def test_prefetch_distance_is_validated(value):
    with pytest.raises(sj.StreamConfigError, match="prefetch_distance"):
        sj.stream_kernel(stream_loads=True, prefetch_distance=value)(lambda a: None)


@needs_x86_avx
def test_prefetchnta_in_machine_code_only_when_loads_are_streamed(rng):
    a = rng.standard_normal(100)
    residual(np.zeros(100), a, a)
    assert PREFETCH_NTA.search(residual.inspect_asm(residual.signatures[0]))

    @sj.stream_kernel(stream_stores=["h"])
    def stores_only(h, f, g):
        for i in range(h.shape[0]):
            h[i] = f[i] + g[i]

    stores_only(np.zeros(100), a, a)
    assert not PREFETCH_NTA.search(stores_only.inspect_asm(stores_only.signatures[0]))


@pytest.mark.parametrize("f_offset", [0, 1, 3])
@pytest.mark.parametrize("h_offset", [0, 1, 8])
def test_sources_aligned_or_not_give_the_same_result(f_offset, h_offset):
    rng = np.random.default_rng(f_offset * 10 + h_offset)
    f = rng.standard_normal(5000)[f_offset:f_offset + 4001]
    g = rng.standard_normal(4001)
    h = np.zeros(5000)[h_offset:h_offset + 4001]
    residual(h, f, g)
    np.testing.assert_array_equal(h, f + g)


@needs_x86_avx
def test_aligned_source_loads_are_vmovntdqa():
    # the loop taken when f is aligned where h is reads f with vmovntdqa
    h, f, g = np.zeros(4096), np.ones(4096), np.ones(4096)
    residual(h, f, g)
    sig = residual.signatures[0]
    asm = residual.inspect_asm(sig)
    assert re.search(r"^\s*vmovntdqa\s+.*%[yz]mm\d+$", asm, re.M)
    report = residual.stream_report(sig)
    assert report.arrays["f"].nt_loads > 0 and report.arrays["g"].nt_loads == 0


# Where a prefetch does not pay, a streamed load stays a plain
# load, per access, and the array leaves streamed_loads when none of its
# loads got anything (the report's notes say why).

@sj.stream_kernel(stream_loads=True, stream_stores=["out"], threshold=None)
def reads_its_own_result(out, a):
    c = a * 2.0                            # an array the kernel makes (mandelbrot1's C)
    for i in range(out.shape[0]):
        out[i] = c[i] + a[i]


@sj.stream_kernel(stream_loads=True, stream_stores=["out"], threshold=None)
def column_walk(out, u, v, k):
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = u[i, j, k] + v[i, j]   # vadv's u_pos[:, :, k]: a row apart per j


@sj.stream_kernel(stream_loads=True, stream_stores=["out"], threshold=None)
def sliced_walks(out, A, u, k):
    out[:] = A[:, k] + u[:, 1:-1] * 2.0    # syrk's A[:i + 1, k] (a column), then unit-stride rows


@sj.stream_kernel(stream_loads=True, stream_stores=["out"], threshold=None)
def outer_loads(out, a, b):
    for i in range(out.shape[0]):
        s = a[i]                           # its loop runs the j loop each iteration
        for j in range(out.shape[1]):
            out[i, j] = s * b[j]


@sj.stream_kernel(stream_loads=True, stream_stores=["out"], threshold=None)
def compute_bound(out, a, b):
    for i in range(out.shape[0]):
        x = a[i]                           # three calls (16 operations each) for two loads
        out[i] = np.exp(x) * np.sin(x) + np.cos(x) + b[i]


@sj.stream_kernel(stream_loads=True, stream_stores=["x"], threshold=None)
def array_operations(x, y, A, b, c):
    for i in range(A.shape[0]):            # NPBench's ludcmp: a dot product per element (its @ needs SciPy)
        y[i] = b[i] - np.sum(A[i, :i] * y[:i])
    for i in range(A.shape[0]):            # a method's reduction
        x[i] = c[i] * A[i].sum()


def plain_notes(kernel, array):
    return [n for n in kernel.stream_report().arrays[array].notes if n.endswith("plain load")]


def test_arrays_the_kernel_makes_are_not_streamed_loads(rng):
    a, out = rng.standard_normal(3000), np.zeros(3000)
    reads_its_own_result(out, a)
    np.testing.assert_allclose(out, 3 * a)
    assert reads_its_own_result.stream_result().streamed_loads == {"a"}
    report = reads_its_own_result.stream_report()
    assert report.arrays["a"].prefetches > 0
    assert "c" not in report.arrays or report.arrays["c"].prefetches == 0


def test_walks_wider_than_a_line_are_plain_loads(rng):
    u, v = rng.standard_normal((30, 40, 5)), rng.standard_normal((30, 40))
    out = np.zeros((30, 40))
    column_walk(out, u, v, 2)
    np.testing.assert_allclose(out, u[:, :, 2] + v)
    assert column_walk.stream_result().streamed_loads == {"v"}
    report = column_walk.stream_report()
    assert report.arrays["u"].prefetches == 0 and report.arrays["v"].prefetches > 0
    assert any("a strided walk (rows apart per iteration of 'j'" in n for n in plain_notes(column_walk, "u"))


def test_sliced_views_walking_a_column_are_plain_loads(rng):
    # A slice's view is typed layout "A" whatever it steps; its last axis is
    # contiguous only where the index ends in a slice without a step.
    A, u = rng.standard_normal((64, 7)), rng.standard_normal((64, 66))
    out = np.zeros((64, 64))
    sliced_walks(out, A, u, 3)
    np.testing.assert_allclose(out, A[:, 3] + u[:, 1:-1] * 2.0)
    report = sliced_walks.stream_report()
    assert report.arrays["A"].prefetches == 0 and report.arrays["u"].prefetches > 0
    assert any("rows apart per iteration of the element loop of a slice expression" in n
               for n in plain_notes(sliced_walks, "A"))


def test_loads_of_loops_that_run_inner_loops_are_plain(rng):
    a, b = rng.standard_normal(50), rng.standard_normal(300)
    out = np.zeros((50, 300))
    outer_loads(out, a, b)
    np.testing.assert_allclose(out, np.outer(a, b))
    assert outer_loads.stream_result().streamed_loads == {"b"}
    assert outer_loads.stream_report().arrays["a"].prefetches == 0
    assert any("each iteration of 'i' runs inner loops" in n for n in plain_notes(outer_loads, "a"))


def test_loads_of_loops_that_run_operations_over_arrays_are_plain(rng):
    A, b, c = rng.standard_normal((40, 40)), rng.standard_normal(40), rng.standard_normal(40)
    x, y = np.zeros(40), np.zeros(40)
    array_operations(x, y, A, b, c)
    want = np.zeros(40)
    for i in range(40):
        want[i] = b[i] - np.sum(A[i, :i] * want[:i])
    np.testing.assert_allclose(y, want)
    np.testing.assert_allclose(x, c * A.sum(axis=1))
    report = array_operations.stream_report()
    assert report.arrays["b"].prefetches == report.arrays["c"].prefetches == 0, str(report)
    for array, line in (("b", 3), ("c", 5)):     # (lines after the decorator's)
        line += array_operations.py_func.__code__.co_firstlineno
        assert any(f"runs an operation over arrays (line {line})" in n for n in plain_notes(array_operations, array))


def test_loads_of_compute_bound_loops_are_plain(rng):
    a, b = rng.standard_normal(3000), rng.standard_normal(3000)
    out = np.zeros(3000)
    compute_bound(out, a, b)
    np.testing.assert_allclose(out, np.exp(a) * np.sin(a) + np.cos(a) + b)
    assert compute_bound.stream_result().streamed_loads == frozenset()
    report = compute_bound.stream_report()
    assert report.arrays["a"].prefetches == report.arrays["b"].prefetches == 0
    assert any("compute-bound" in n for n in plain_notes(compute_bound, "b"))


def pressure_sweeps(nit, p, b):
    # cavity_flow's pressure loop: ``pn`` allocated three times under one name
    pn = np.empty_like(p)
    pn = p.copy()
    for q in range(nit):
        pn = p.copy()
        p[1:-1, 1:-1] = 0.25 * (pn[1:-1, 2:] + pn[1:-1, :-2] + pn[2:, 1:-1] + pn[:-2, 1:-1]) - b[1:-1, 1:-1]
        p[0, :] = p[1, :]


def test_an_array_the_kernel_allocates_again_is_one_array_and_a_prefetched_source(rng):
    """A name the kernel allocates into more than once (``pn = p.copy()``
    in a loop, after ``pn = np.empty_like(p)``) is one array: its loads
    are seen, and as a source of a streamed store it takes the profile's
    sources stage like a parameter (the streamed loop runs above the
    threshold, where such an array has left the L2), never a streamed load."""
    kernel = calibration.kernel_with_stages(pressure_sweeps, "p", False, LoadStage(), LoadStage("t1", 4096),
                                            threshold=None)
    p, b = rng.standard_normal((67, 45)), rng.standard_normal((67, 45))
    expected = p.copy()
    numba.njit(pressure_sweeps)(3, expected, b)
    kernel(3, p, b)
    np.testing.assert_array_equal(p, expected)
    calls = kernel.stream_calls()
    assert calls["streamed"] == 1
    report = kernel.stream_report()
    # (the report's rows trace parameters' pointers: the prefetches of pn's
    # loads are those it does not give to b)
    prefetches = len(re.findall(r"call void @llvm\.prefetch", kernel.inspect_llvm(kernel.signatures[0])))
    assert 0 < report.arrays["b"].prefetches < prefetches
    assert report.arrays["b"].nt_loads == 0 and "pn" not in kernel.stream_result().streamed_loads


def test_versions_of_an_ssa_name_are_its_own():
    from streamjit.passes.analysis.rebindings import version_name
    assert version_name("pn") == version_name("pn.1") == version_name("pn.1.1") == "pn"
    assert version_name("$12load.3") == "$12load"


def npbench_jacobi_2d(TSTEPS, A, B):
    for t in range(1, TSTEPS):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])


JACOBI_NJIT = numba.njit(npbench_jacobi_2d)


def _jacobi_equals_njit(kernel, A, steps):
    """``kernel`` (npbench_jacobi_2d) computes njit's result on the grid ``A``, ``B`` a copy of it."""
    B, expected = A.copy(), A.copy()
    JACOBI_NJIT(steps, expected, expected.copy())
    kernel(steps, A, B)
    np.testing.assert_array_equal(A, expected)


def copy_into(out, a):
    for i in range(a.shape[0]):
        out[i] = a[i]


def triad_into(out, a, b):
    for i in range(a.shape[0]):
        out[i] = a[i] + 3.0 * b[i]


def smooth_1d(out, a):
    for i in range(1, a.shape[0] - 1):
        out[i] = 0.25 * a[i - 1] + 0.5 * a[i] + 0.25 * a[i + 1]


# llvm.prefetch's locality argument per hint (LLVM LangRef: 0 none ... 3 keep in every level)
_LOCALITY = {"nta": 0, "t2": 1, "t1": 2, "t0": 3}


def _prefetch_localities(kernel):
    llvm_ir = kernel.inspect_llvm(kernel.signatures[0])
    return set(map(int, re.findall(r"call void @llvm\.prefetch\.p0\(ptr [^,]+, i32 0, i32 (\d), i32 1\)", llvm_ir)))


def test_a_stencils_loop_prefetches_its_sources_as_the_stencil_row_says(rng, monkeypatch, tmp_path):
    """The sources of a stencil's loop that loads rows of one array again
    (a 2-D sweep) take the profile's stencil_sources stage, those of other
    loops, a 1-D stencil's among them (its loads share their lines), its
    sources stage. And an array one nest streams is a source of the next
    nest that reads it (NPBench's jacobi_2d: no load of A or B was
    prefetched, each array being streamed by the other nest)."""
    stencil, other = LoadStage("t1", 4096), LoadStage("nta", 512)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))         # (a profile file of the test's own)
    machine.update_profile_file({"profile": {"sources": machine.stage_record(other),
                                             "stencil_sources": machine.stage_record(stencil)}})
    kernels = {f: sj.stream_kernel(stream_stores=True, threshold=None)(f)
               for f in (npbench_jacobi_2d, triad_into, smooth_1d)}
    _jacobi_equals_njit(kernels[npbench_jacobi_2d], rng.standard_normal((37, 45)), 4)
    a = rng.standard_normal(1001)
    out = np.empty_like(a)
    kernels[triad_into](out, a, a[::-1].copy())
    np.testing.assert_array_equal(out, a + 3.0 * a[::-1])
    smoothed, want = np.empty_like(a), np.empty_like(a)
    kernels[smooth_1d](smoothed, a)
    numba.njit(smooth_1d)(want, a)
    np.testing.assert_array_equal(smoothed[1:-1], want[1:-1])
    report = kernels[npbench_jacobi_2d].stream_report()
    assert report.arrays["A"].prefetches > 0 and report.arrays["B"].prefetches > 0
    assert _prefetch_localities(kernels[npbench_jacobi_2d]) == {_LOCALITY["t1"]}
    assert _prefetch_localities(kernels[triad_into]) == {_LOCALITY["nta"]}
    assert _prefetch_localities(kernels[smooth_1d]) == {_LOCALITY["nta"]}


def test_boolean_sources_are_prefetched_as_the_profile_says(rng, monkeypatch, tmp_path):
    """A copy of booleans compiles and streams where the profile prefetches
    sources (the step of a boolean source was read from a bitwidth Numba's
    boolean type does not have: AttributeError at compile)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    machine.update_profile_file({"profile": {"sources": machine.stage_record(LoadStage("nta", 2048))}})
    kernel = sj.stream_kernel(stream_stores=["out"], threshold=None)(copy_into)
    a = rng.standard_normal(1001) > 0
    out = np.empty_like(a)
    kernel(out, a)
    np.testing.assert_array_equal(out, a)
    assert kernel.stream_report().arrays["a"].prefetches > 0


@numba.njit
def _rows_hold(a, nbytes):
    return codegen.rows_hold(a, nbytes)


def test_rows_hold_compares_a_rows_bytes():
    grid = np.empty((3, 700))
    assert _rows_hold(grid, 5600) and not _rows_hold(grid, 5601)
    assert _rows_hold(grid[:, ::2], 2800) and not _rows_hold(grid[:, :511], 4096)  # (views: their own rows)
    assert _rows_hold(np.empty((2, 3, 512), np.float32), 2048) and not _rows_hold(np.empty((9, 45)), 4096)


def _nt_stores_and_prefetches(kernel):
    llvm_ir = kernel.inspect_llvm(kernel.signatures[0])
    return llvm_ir.count("!nontemporal"), len(re.findall(r"call void @llvm\.prefetch\.p0", llvm_ir))


def test_a_stencil_stage_for_long_rows_copies_the_aligned_loop_without_prefetches(rng, monkeypatch, tmp_path):
    """A stencil sources' stage with ``min_row_bytes`` gives a loop that reads
    rows again a second set of aligned copies with no prefetch, which the
    calls whose rows are shorter run (picked by `codegen.rows_hold`): the
    same non-temporal stores twice over, the prefetches once. Both row
    lengths compute what njit computes, and each call is counted by the
    copy it ran; the report says the rule. A loop that reads no row again
    keeps one set (its sources' stage)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    counts = {}
    for min_row in (0, 4096):
        machine.update_profile_file({"profile": {   # (no staged copy, whose calls would count as staged)
            "stencil_sources": machine.stage_record(LoadStage("t1", 4096, min_row_bytes=min_row)),
            "page_alias_bytes": 0}})
        kernels = {f: sj.stream_kernel(stream_stores=True, threshold=None)(f) for f in (npbench_jacobi_2d, smooth_1d)}
        for cols in (45, 700):                   # rows of 360 and 5600 bytes
            _jacobi_equals_njit(kernels[npbench_jacobi_2d], rng.standard_normal((9, cols)), 3)
        calls = kernels[npbench_jacobi_2d].stream_calls()   # (the rows of 360 bytes run the copy without prefetches)
        assert (calls["streamed"], calls["unprefetched"]) == ((1, 1) if min_row else (2, 0)), calls
        assert ("1 streamed without prefetches" in str(kernels[npbench_jacobi_2d].stream_report())) == bool(min_row)
        a = rng.standard_normal(1001)
        out = np.empty_like(a)
        kernels[smooth_1d](out, a)
        counts[min_row] = {f: _nt_stores_and_prefetches(k) for f, k in kernels.items()}
        rule = "prefetcht1 4096 bytes ahead in rows of 4096 bytes or more"
        assert (rule in str(kernels[npbench_jacobi_2d].stream_report())) == bool(min_row)
    (stores, prefetches), (versioned_stores, versioned_prefetches) = (counts[m][npbench_jacobi_2d] for m in (0, 4096))
    assert stores > 0 and prefetches > 0 and versioned_stores == 2 * stores and versioned_prefetches == prefetches
    assert counts[0][smooth_1d] == counts[4096][smooth_1d]
