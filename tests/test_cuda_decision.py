"""One meaning per option on both targets: on the same kernels, the CPU
(`stream_kernel`), ``target="cuda"`` (the CPU's decision on its typed IR)
and `sj.cuda.jit` (the CPU's rule on the syntax tree, `cuda/decision.py`)
stream the same arrays under ``stream_stores=True`` / ``stream_loads=True``,
leave the same ones plain with the same note, and see an array through the
same aliases; their reports have one shape. No GPU needed: the PTX
checks need numba-cuda and ptxas only."""

import dataclasses
import inspect
import re

import pytest
from numba import cuda
from numba import types as T

import cuda_kernels as K
import streamjit as sj
from streamjit.kernel import pipeline
from streamjit.cuda import decision, legality, ptx
from streamjit.cuda.source import parse
from streamjit.passes.accesses import IN_PLACE_NOTE
from streamjit.plan import StreamOptions
from streamjit.llvm_text.counts import ArrayReport
from streamjit.inspection.report import COLUMN_HEADS, COLUMNS

pytestmark = pytest.mark.skipif(bool(K.MISSING_TOOLCHAIN), reason=K.MISSING_TOOLCHAIN)

F64 = T.float64[::1]
K_TRIAD = (T.float32[::1],) * 3 + (T.float32,)


def copy(out, a):
    for i in sj.prange(a.shape[0]):
        out[i] = a[i]


def accumulate(out, acc, a):
    # acc is only updated in place: plain under stream_stores=True
    for i in sj.prange(a.shape[0]):
        out[i] = a[i]
        acc[i] += a[i]


def via_temp(b, a):
    # read, then written back, in one block: an update in place
    for i in sj.prange(b.shape[0]):
        t = b[i]
        b[i] = t + a[i]


def shifted(b, a):
    # two computations of i + 1 are two values: not seen as in place, on either target
    for i in sj.prange(b.shape[0] - 1):
        b[i + 1] = b[i + 1] * a[i]


def index_rebound(b, a):
    # i changes between the load and the store: another element, not in place
    for k in sj.prange(b.shape[0] - 1):
        i = k
        t = b[i]
        i = k + 1
        b[i] = t + a[k]


def chain(out, acc, a):
    o = out
    p = o
    q = acc
    for i in sj.prange(a.shape[0]):
        p[i] = a[i] + 1.0
        q[i] += a[i]


def chain_numba_cuda(out, acc, a):
    # chain, written for numba-cuda (which has no prange)
    o = out
    p = o
    q = acc
    i = cuda.grid(1)
    if i < a.shape[0]:
        p[i] = a[i] + 1.0
        q[i] += a[i]


def either(out, a, b):
    # o holds out or b: an alias of neither
    o = out
    if a[0] > 0:
        o = b
    for i in sj.prange(a.shape[0]):
        o[i] = a[i]


def scale_2d(u, a):
    for i in sj.prange(u.shape[0]):
        for j in range(u.shape[1]):
            u[i, j] = u[i, j] * a[i, j]


def scale_rows(u, a):
    # u[i][j]: a row, then its element; the same element on both sides
    for i in sj.prange(u.shape[0]):
        for j in range(u.shape[1]):
            u[i][j] = u[i][j] * a[i][j]


def transposed(u, a):
    # reads u[j, i], writes u[i, j]: not in place
    for i in sj.prange(u.shape[0]):
        for j in range(u.shape[1]):
            u[i, j] = u[j, i] * a[i, j]


def boundary_and_in_place(u, a):
    # u[0] = 0 is a boundary value; every other store is in place
    u[0] = 0.0
    for i in range(1, u.shape[0]):
        u[i] = u[i] * a[i]


def boundary_only(u, a):
    u[0] = a[0]
    u[-1] = a[1]


GRID_KERNELS = [copy, accumulate, via_temp, shifted, index_rebound, chain, either, scale_2d, scale_rows, transposed]
TWO_D = (scale_2d, scale_rows, transposed)
# (target="cuda" runs only prange nests on the grid; sj.cuda.jit takes any body)
KERNELS = GRID_KERNELS + [boundary_and_in_place, boundary_only]


def signature(func):
    return (T.float64[:, ::1] if func in TWO_D else F64,) * len(inspect.signature(func).parameters)


def decided(kernel, func):
    sig = signature(func)
    if hasattr(kernel, "compile"):
        kernel.compile(sig)
    result = kernel.stream_result(sig)
    in_place = {a for a, notes in result.notes.items() if any(IN_PLACE_NOTE in n for n in notes)}
    # (loads the CPU's lowering leaves plain, where a prefetch would not pay, were
    # chosen all the same: the GPU's cache hint costs nothing there)
    left_plain = {a for a, notes in result.notes.items() if any(n.endswith(": plain load") for n in notes)}
    return set(result.streamed_stores), set(result.streamed_loads) | left_plain, in_place


def cpu(func):
    return decided(sj.stream_kernel(func, stream_stores=True, stream_loads=True), func)


# A variable that holds one of several parameters (``either``) streams on the
# CPU since ping-pong buffers do (its stores go to one of a known
# set of arrays); the GPU's syntax-tree decision does not follow such
# variables yet and leaves them plain: a known difference, not hidden.
NOT_YET_ON_THE_GPU = pytest.mark.xfail(strict=True, reason="a variable holding one of several arrays streams on the "
                                       "CPU only (ping-pong rule), not yet in cuda/decision.py")


def _gpu_gaps(kernels):
    return [pytest.param(f, marks=NOT_YET_ON_THE_GPU) if f is either else f for f in kernels]


@pytest.mark.parametrize("func", _gpu_gaps(KERNELS), ids=lambda f: f.__name__)
def test_sj_cuda_jit_decides_as_the_cpu(func):
    gpu = decided(sj.cuda.jit(func, stream_stores=True, stream_loads=True), func)
    assert gpu == cpu(func)


@pytest.mark.parametrize("func", GRID_KERNELS, ids=lambda f: f.__name__)
def test_target_cuda_decides_as_the_cpu(func):
    gpu = decided(sj.stream_kernel(func, target="cuda", stream_stores=True, stream_loads=True), func)
    assert gpu == cpu(func)


def test_the_decisions_differ_between_kernels():
    # (the comparisons above would pass if every kernel streamed everything)
    assert cpu(accumulate) == ({"out"}, {"a"}, {"acc"})
    assert cpu(via_temp) == (set(), {"a"}, {"b"})
    # (index_rebound and transposed read back other elements of what they store: plain, as on the CPU)
    assert cpu(shifted)[0] == {"b"} and cpu(index_rebound)[0] == set()
    assert cpu(boundary_only)[0] == {"u"} and cpu(boundary_and_in_place)[0] == set()
    assert cpu(either)[0] == {"out", "b", "o"}   # (o: the variable's marks, holding out or b)
    assert cpu(scale_2d)[0] == cpu(scale_rows)[0] == cpu(transposed)[0] == set()


@pytest.mark.parametrize("func", GRID_KERNELS, ids=lambda f: f.__name__)
def test_the_syntax_tree_sees_the_aliases_the_cpu_sees(func):
    # (target="cuda" takes them from the CPU's typed IR, sj.cuda.jit from the syntax tree)
    sig = signature(func)
    from_ir = legality.analyze(func, sig, StreamOptions(stream_stores=True))[1]
    assert from_ir == decision.aliases(parse(func), dict(zip(inspect.signature(func).parameters, sig)))


def test_aliases_follow_chains_and_refuse_a_variable_holding_two_arrays():
    types = dict.fromkeys(("out", "acc", "a", "b"), F64)
    assert decision.aliases(parse(chain), types) == {"o": "out", "p": "out", "q": "acc"}
    assert decision.aliases(parse(chain_numba_cuda), types) == {"o": "out", "p": "out", "q": "acc"}
    assert decision.aliases(parse(either), types) == {}


@pytest.mark.parametrize("make, func", [
    (lambda f: sj.stream_kernel(f, target="cuda", stream_stores=True), chain),
    (lambda f: sj.cuda.jit(f, stream_stores=True), chain_numba_cuda)], ids=["target_cuda", "cuda_jit"])
def test_stores_through_a_chain_of_aliases_take_the_hint(make, func):
    report = make(func).stream_report(signature(func))
    out = report.arrays["out"]
    assert out.nt_scalar_stores + out.nt_vector_stores >= 1 and out.plain_stores == 0
    assert report.arrays["acc"].nt_scalar_stores == report.arrays["acc"].nt_vector_stores == 0
    assert report.arrays["acc"].plain_stores >= 1
    assert any(IN_PLACE_NOTE in note for note in report.arrays["acc"].notes)


def test_deciding_passes_stop_at_the_named_pass_and_skip_the_cpu_only_ones():
    untyped, typed = pipeline.deciding_passes(last="legality", skip=("parallel_blocks",))
    names = [cls._name.removeprefix("streamjit_") for cls in untyped + typed]
    assert names == ["canonical_loops", "fills", "array_stores", "accesses", "legality"]
    with pytest.raises(ValueError, match="no stream pass named 'legal'"):
        pipeline.deciding_passes(last="legal")


GLOBAL_ACCESS = re.compile(r"^\s*(?:@!?%\w+\s+)?(?:ld|st)\.global\.", re.M)


@pytest.mark.parametrize("func, sig, options", [
    (K.triad, K_TRIAD, {}),
    (K.triad, K_TRIAD, dict(stream_stores=["a"], stream_loads=["b"])),
    (K.jacobi, (T.float64[:, ::1],) * 2, dict(stream_stores=["out"]))], ids=["plain", "streamed", "stencil"])
def test_the_gpu_report_attributes_every_global_access_to_its_array(func, sig, options):
    kernel = sj.stream_kernel(func, target="cuda", **options)
    report = kernel.stream_report(sig)
    counted = sum(getattr(rep, column) for rep in report.arrays.values() for column in COLUMNS
                  if column != "prefetches")
    assert counted == len(GLOBAL_ACCESS.findall(kernel.inspect_ptx(sig)))


def test_both_reports_have_one_shape_and_agree_on_what_streams():
    sig = signature(accumulate)
    k = sj.stream_kernel(accumulate, stream_stores=True)
    k.compile(sig)
    cpu_report = k.stream_report(sig)
    gpu_report = sj.stream_kernel(accumulate, target="cuda", stream_stores=True).stream_report(sig)
    for report in (cpu_report, gpu_report):
        assert all(type(rep) is ArrayReport for rep in report.arrays.values())
        out, acc = report.arrays["out"], report.arrays["acc"]
        assert out.nt_vector_stores + out.nt_scalar_stores >= 1  # (the CPU's peeled head and tail stay plain)
        assert acc.nt_vector_stores + acc.nt_scalar_stores == 0 and acc.plain_stores >= 1
    # one class: the first line says what was done, the second what the calls did; the table follows (the GPU's
    # always: its counts are all it has; the CPU's with verbose=True)
    assert type(gpu_report) is type(cpu_report) is sj.StreamReport
    for report in (dataclasses.replace(cpu_report, verbose=True), gpu_report):
        lines = str(report).splitlines()
        assert lines[0].startswith("accumulate: ") and lines[1].startswith("calls: ")
        assert any(line.split()[:4] == ["array", *COLUMN_HEADS[0].split()] for line in lines)


# A kernel storing through its first array's data pointer (parameter 4) and
# a device function whose parameter 4 is another array's data pointer.
TWO_FUNCTIONS = """
.visible .func f(.param .u64 f_param_4)
{
\tld.param.u64 \t%rd1, [f_param_4];
\tst.global.f64 \t[%rd1], %fd1;
}
.visible .entry k(.param .u64 k_param_4, .param .u64 k_param_11)
{
\tld.param.u64 \t%rd1, [k_param_11];
\tcvta.to.global.u64 \t%rd2, %rd1;
\tmul.wide.s32 \t%rd3, %r1, 8;
\tadd.s64 \t%rd4, %rd2, %rd3;
\tld.global.f64 \t%fd1, [%rd4];
\tst.global.cs.f64 \t[%rd4+8], %fd1;
}
"""


def test_the_gpu_report_reads_the_kernel_function_only():
    report = ptx.report({"out": F64, "x": F64}, (9, 0), TWO_FUNCTIONS, "", [])
    assert report.arrays["x"] == ArrayReport(nt_scalar_stores=1, plain_loads=1)
    assert report.arrays["out"] == ArrayReport()
