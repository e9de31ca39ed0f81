"""Every option on both targets, as a table: for each option and value,
either the CPU and ``target="cuda"`` both take it with the same meaning
(the same validated options, the same arrays streamed and left plain, with
the same notes), or the target that has no use for it raises
`StreamConfigError` naming the option and the target (a value neither
takes raises on both). `sj.cuda.jit` takes the options it shares with the
CPU in the same meaning. No GPU needed: the GPU's decision is read from
`stream_result` (the CPU front end, or the syntax tree), without PTX."""

import importlib.util
import inspect

import pytest
from numba import types as T

import streamjit as sj
from streamjit.options import FORWARDED_NUMBA_OPTIONS, GPU_NUMBA_OPTIONS, GPU_OPTIONS, STREAM_OPTIONS
from streamjit.plan import NOT_STAGED

try:
    from numba import cuda
except ImportError:  # (only the sj.cuda.jit rows need it)
    cuda = None

HAS_NUMBA_CUDA = importlib.util.find_spec("numba_cuda") is not None
needs_numba_cuda = pytest.mark.skipif(not HAS_NUMBA_CUDA, reason="numba-cuda is not installed")
# (naming acc, which "auto" leaves plain, warns on the CPU: not what these tests are about)
pytestmark = pytest.mark.filterwarnings("ignore:stream_stores names .acc.")


def update(out, acc, a):
    # acc is only updated in place: what threshold="auto" (and stream_stores=True) leave plain
    for i in sj.prange(a.shape[0]):
        out[i] = a[i] * 2.0
        acc[i] += a[i]


def update_numba_cuda(out, acc, a):
    # update, written for numba-cuda (sj.cuda.jit)
    i = cuda.grid(1)
    if i < a.shape[0]:
        out[i] = a[i] * 2.0
        acc[i] += a[i]


SIG = (T.float64[::1],) * 3
SAME, CPU_ONLY, GPU_ONLY, NEITHER = "same", "cpu only", "cuda only", "neither"
NAMED = dict(stream_stores=["out", "acc"])

# (options, which targets take them): every stream option, every GPU option,
# every Numba option stream_kernel forwards, with good and bad values.
TABLE = [
    ({}, SAME),
    (dict(stream_stores=True), SAME),
    (dict(stream_stores="out"), SAME),
    (dict(stream_stores=["out"]), SAME),
    (dict(stream_stores=False, stream_loads=False), SAME),
    (dict(stream_stores=["nope"]), NEITHER),
    (dict(stream_stores=3), NEITHER),
    (dict(stream_stores=["out"], stream_loads=True), SAME),
    (dict(stream_stores=["out"], stream_loads=["a"]), SAME),
    (dict(stream_loads=["nope"]), NEITHER),
    (dict(NAMED, threshold="auto"), SAME),
    (dict(NAMED, threshold=None), SAME),
    (dict(stream_stores=True, threshold=None), SAME),
    (dict(NAMED, threshold=1 << 20), CPU_ONLY),
    (dict(NAMED, threshold=0), CPU_ONLY),
    (dict(NAMED, threshold=-1), NEITHER),
    (dict(NAMED, threshold="big"), NEITHER),
    (dict(NAMED, prefetch_distance=None), SAME),
    (dict(NAMED, stream_loads=True, prefetch_distance=0), SAME),
    (dict(NAMED, prefetch_distance=512), CPU_ONLY),
    (dict(NAMED, prefetch_distance=2), CPU_ONLY),
    (dict(NAMED, prefetch_distance=-1), NEITHER),
    (dict(NAMED, prefetch_hint=None), SAME),
    (dict(NAMED, prefetch_hint="t0"), CPU_ONLY),
    (dict(NAMED, prefetch_hint="nta"), CPU_ONLY),
    (dict(NAMED, prefetch_hint="none"), CPU_ONLY),
    (dict(NAMED, prefetch_hint="t9"), NEITHER),
    (dict(NAMED, pipeline_stages=2), GPU_ONLY),
    (dict(NAMED, pipeline_stages=0), GPU_ONLY),
    (dict(NAMED, pipeline_stages=9), NEITHER),
    (dict(NAMED, load_cache="cs"), GPU_ONLY),
    (dict(NAMED, load_cache="nc"), GPU_ONLY),
    (dict(NAMED, load_cache="ca"), NEITHER),
    (dict(NAMED, threads_per_block=64), GPU_ONLY),
    (dict(NAMED, blocks=4), GPU_ONLY),
    (dict(NAMED, fastmath=True), SAME),
    (dict(NAMED, parallel=True), SAME),
    (dict(NAMED, parallel=False), CPU_ONLY),
    (dict(NAMED, nopython=True), SAME),
    (dict(NAMED, nopython=False), NEITHER),
    (dict(NAMED, fastmth=True), NEITHER),
] + [(dict(NAMED, **{name: value}), CPU_ONLY) for name, value in (
    ("cache", False), ("boundscheck", False), ("nogil", True), ("error_model", "numpy"), ("locals", {}),
    ("debug", False), ("inline", "never"), ("forceinline", False), ("no_cpython_wrapper", False),
    ("no_cfunc_wrapper", False), ("no_rewrites", False), ("_nrt", True), ("looplift", True), ("forceobj", False),
    ("_dbg_extend_lifetimes", False), ("_dbg_optnone", False))]


def _row_id(row):
    options, kind = row
    shown = {k: v for k, v in options.items() if k != "stream_stores" or len(options) == 1}
    return (",".join(f"{k}={v!r}" for k, v in shown.items()) or "defaults") + f"-{kind.replace(' ', '_')}"


def _option(options):
    """The option a row is about (its last one)."""
    return list(options)[-1] if options else None


def cpu_kernel(options):
    return sj.stream_kernel(update, **options)


def gpu_kernel(options):
    return sj.stream_kernel(update, target="cuda", **options)


def decision(result):
    """What one compile decided: the arrays streamed, and each array's notes
    without their line numbers (the CPU's loop notes aside, and its note on
    calls that cannot run staged)."""
    notes = {array: sorted(n.split(": ", 1)[1] if n.startswith("line ") else n for n in texts
                           if not n.endswith("stored in a loop") and not n.endswith(": plain load")
                           and NOT_STAGED not in n)
             for array, texts in result.notes.items()}
    return set(result.streamed_stores), set(result.streamed_loads), {a: n for a, n in notes.items() if n}


def cpu_decision(kernel):
    kernel.compile(SIG)
    return decision(kernel.stream_result(SIG))


def gpu_decision(kernel):
    return decision(kernel.stream_result(SIG))


def assert_refused(make, options, target):
    with pytest.raises(sj.StreamConfigError) as error:
        make(options)
    message = str(error.value)
    assert _option(options).split("=")[0] in message or _option(options) == "fastmth", message
    if target:
        assert f"target='{target}'" in message, message


@pytest.mark.parametrize("row", TABLE, ids=[_row_id(r) for r in TABLE])
def test_every_option_means_the_same_on_both_targets_or_raises(row):
    options, kind = row
    if kind == NEITHER:
        assert_refused(cpu_kernel, options, None)
        assert_refused(gpu_kernel, options, None)
        return
    if kind == CPU_ONLY:
        cpu_kernel(options)  # (accepted: what it does on the CPU, test_njit_options.py and the rest say)
        assert_refused(gpu_kernel, options, "cuda")
        return
    if kind == GPU_ONLY:
        assert_refused(cpu_kernel, options, "cpu")
        gpu_kernel(options)
        return
    cpu, gpu = cpu_kernel(options), gpu_kernel(options)
    # the validated options agree
    stream = cpu.stream_options
    if stream is None:  # (nothing named: numba.njit on the CPU, nothing hinted on the GPU)
        assert not gpu.stores and not gpu.loads
    else:
        assert (stream.stream_stores, stream.stream_loads, stream.measured) == (gpu.stores, gpu.loads, gpu.measured)
        if options.get("prefetch_distance") == 0:  # no prefetch, on both
            assert stream.loads.distance == stream.sources.distance == 0 and gpu.prefetch == 0
    if "fastmath" in options:
        assert cpu.targetoptions["fastmath"] is gpu.cuda_options["fastmath"] is True
    if HAS_NUMBA_CUDA:  # and so do the decisions
        assert cpu_decision(cpu) == gpu_decision(gpu)


def test_the_table_runs_every_option():
    named = {name for options, _ in TABLE for name in options}
    assert set(STREAM_OPTIONS + GPU_OPTIONS + GPU_NUMBA_OPTIONS + FORWARDED_NUMBA_OPTIONS) <= named
    assert {kind for _, kind in TABLE} == {SAME, CPU_ONLY, GPU_ONLY, NEITHER}
    # (stream_kernel takes these, and target; sj.cuda.jit's are checked below)
    assert set(inspect.signature(sj.stream_kernel).parameters) == {"args", *STREAM_OPTIONS, "numba_options"}


@pytest.mark.parametrize("options, plain", [
    (NAMED, {"acc"}), (dict(NAMED, threshold=None), set()), (dict(stream_stores=True), {"acc"}),
    (dict(stream_stores=True, threshold=None), {"acc"})], ids=["auto", "none", "true", "true-none"])
def test_threshold_auto_leaves_the_same_arrays_plain_on_both(options, plain):
    # (the decisions are compared in the table too; here what they are)
    cpu = cpu_decision(cpu_kernel(options))
    assert {"out", "acc"} - cpu[0] == plain
    if HAS_NUMBA_CUDA:
        assert gpu_decision(gpu_kernel(options)) == cpu


@needs_numba_cuda
@pytest.mark.parametrize("options", [NAMED, dict(NAMED, threshold=None), dict(stream_stores=True),
                                     dict(stream_stores=["out"], stream_loads=["a"])],
                         ids=["auto", "none", "true", "loads"])
def test_sj_cuda_jit_takes_the_shared_options_in_the_same_meaning(options):
    gpu = sj.cuda.jit(update_numba_cuda, **options)
    assert gpu_decision(gpu) == cpu_decision(cpu_kernel(options))


@pytest.mark.parametrize("options, option", [
    (dict(prefetch_distance=512), "prefetch_distance"), (dict(prefetch_hint="t0"), "prefetch_hint"),
    (dict(threshold=1 << 20), "threshold"), (dict(pipeline_stages=2), "pipeline_stages"),
    (dict(threads_per_block=64), "threads_per_block")])
def test_sj_cuda_jit_refuses_what_it_has_no_use_for(options, option):
    with pytest.raises(sj.StreamConfigError, match=f"{option}.*streamjit.cuda.jit"):
        sj.cuda.jit(update_numba_cuda, stream_stores=["out"], **options)
