"""`post_o3/vector_math.py`: under fastmath, a vectorized loop's math calls
go to glibc's libmvec (``_ZGVdN4v_sin``) instead of one scalar call per lane;
results stay within libmvec's error of njit's; without fastmath nothing
changes; other targets get the versions their registers pass, or none."""

import os
import re
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest
from numba.core import config

import streamjit as sj
from streamjit.backend import stages as build_list
from streamjit.inspection.math_calls import math_call_notes, scalar_math_calls
from streamjit.post_o3 import vector_math
from streamjit.llvm_text.math_names import LIBMVEC_FUNCTIONS
from streamjit.llvm_text.module import Module
from streamjit.post_o3.stages import run_post_o3
from streamjit.protocol.targets import Target

libmvec = pytest.mark.skipif(not vector_math.available(), reason="no glibc libmvec on this x86-64 Linux host")
X86_64 = "x86_64-unknown-linux-gnu"
# The bound the docs state (docs/guide/getting-started.md), against njit
# without fastmath (glibc's scalar functions): libmvec's documented error
# (glibc manual, "Errors in Math Functions"). Measured with this module's
# data at 3 million arguments on AMD EPYC Zen 3 (AVX2's ``_ZGVd`` versions,
# glibc 2.36): 4 ulp at most (float64 tanh, float32 log), 1 to 3 elsewhere.
ULPS = 4
FASTMATH = {"fastmath=True": True, "fastmath={'afn'}": {"afn"}}


def _sines(out, x):
    for i in range(x.shape[0]):
        out[i] = np.sin(x[i])


def every_function(out, x, y):
    """Row r of ``out``: `REPLACED`[r] of ``x`` (and ``y``), each in a loop of its own (one vectorized loop each)."""
    n = x.shape[0]
    for i in range(n):
        out[0, i] = np.sin(x[i])
    for i in range(n):
        out[1, i] = np.cos(x[i])
    for i in range(n):
        out[2, i] = np.tan(x[i])
    for i in range(n):
        out[3, i] = np.arcsin(x[i])
    for i in range(n):
        out[4, i] = np.arccos(x[i])
    for i in range(n):
        out[5, i] = np.arctan(x[i])
    for i in range(n):
        out[6, i] = np.arctan2(y[i], x[i])
    for i in range(n):
        out[7, i] = np.sinh(x[i])
    for i in range(n):
        out[8, i] = np.cosh(x[i])
    for i in range(n):
        out[9, i] = np.tanh(x[i])
    for i in range(n):
        out[10, i] = np.exp(x[i])
    for i in range(n):
        out[11, i] = np.exp2(x[i])
    for i in range(n):
        out[12, i] = np.log(x[i])
    for i in range(n):
        out[13, i] = np.log2(x[i])
    for i in range(n):
        out[14, i] = np.log10(x[i])
    for i in range(n):
        out[15, i] = np.power(x[i], y[i])


# every function the stage replaces but exp10, which Python code does not reach
# (NumPy has none; LLVM makes 10.0 ** x an exp2 under afn): the stage tests cover it
REPLACED = ("sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "exp", "exp2", "log",
            "log2", "log10", "pow")
EVERY = {name: sj.stream_kernel(stream_stores=True, fastmath=flags, threshold=None)(every_function)
         for name, flags in FASTMATH.items()}
EVERY_EXACT = numba.njit(every_function)
SINES = sj.stream_kernel(stream_stores=True, fastmath=True)(_sines)
PLAIN_SINES = numba.njit(fastmath=True)(_sines)
EXACT = sj.stream_kernel(stream_stores=True)(_sines)
EXACT_PLAIN = numba.njit(_sines)


def ulps(a, b):
    """|a - b| in ulps of the larger magnitude (of their dtype), 0 where both are equal or both NaN."""
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    with np.errstate(invalid="ignore", over="ignore"):  # (inf - inf where both are inf: masked by `same`)
        return np.where(same, 0.0, np.abs(a.astype(np.float64) - b) / np.spacing(np.maximum(np.abs(a), np.abs(b))))


def _special(dtype):
    """Arguments where math functions take their special paths: NaN, the
    infinities, signed zeros, denormals, huge values, the bounds where exp
    overflows and underflows, pow's and atan2's special cases."""
    finfo = np.finfo(dtype)
    values = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, finfo.smallest_subnormal, -finfo.smallest_subnormal,
                       finfo.tiny / 3, finfo.tiny, finfo.max, -finfo.max, 1e20, -1e20, 2.0 ** 60, 1e6 * np.pi,
                       709.78, -745.2, 88.72, -103.97, 1.0, -1.0, 0.5, 2.0, -2.0, 3.0, -3.0], dtype)
    with np.errstate(over="ignore"):
        return np.repeat(values, len(values)), np.tile(values, len(values))  # (x, y): every pair


def _arguments(n, dtype, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.0, 1.0, n) * 10.0 ** rng.uniform(-4.0, 3.0, n)
    y = rng.uniform(-1.0, 1.0, n) * 10.0 ** rng.uniform(-4.0, 2.0, n)
    special_x, special_y = _special(dtype)
    return np.concatenate([x.astype(dtype), special_x]), np.concatenate([y.astype(dtype), special_y])


def _asm(kernel, **target):
    return "\n".join(kernel.inspect_asm(sig, **target) for sig in kernel.signatures)


def test_every_replaced_function_is_tested():
    assert set(REPLACED) | {"exp10"} == set(LIBMVEC_FUNCTIONS)


@libmvec
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fastmath", FASTMATH)
def test_every_function_is_within_the_documented_bound_of_njits(fastmath, dtype):
    """Each function libmvec replaces, float64 and float32, under both
    spellings of fastmath, against njit without fastmath (glibc's scalar
    functions): NaN where njit has NaN, the same infinities and signed
    zeros, and at most `ULPS` apart elsewhere."""
    x, y = _arguments(20000, dtype, 1)
    got, expected = np.empty((len(REPLACED), len(x)), dtype), np.empty((len(REPLACED), len(x)), dtype)
    with np.errstate(all="ignore"):
        EVERY[fastmath](got, x, y)
        EVERY_EXACT(expected, x, y)
    worst = {name: ulps(got[row], expected[row]).max() for row, name in enumerate(REPLACED)}
    assert {name: u for name, u in worst.items() if not u <= ULPS} == {}
    assert np.array_equal(np.isnan(got), np.isnan(expected))
    zeros_or_infinities = (expected == 0) | np.isinf(expected)
    assert np.array_equal(np.signbit(got[zeros_or_infinities]), np.signbit(expected[zeros_or_infinities]))
    asm = _asm(EVERY[fastmath])
    suffix = "f" if dtype == np.float32 else ""
    assert [name for name in REPLACED if not re.search(rf"_ZGV[bcde]N\d+v+_{name}{suffix}\b", asm)] == []


@libmvec
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fastmath", FASTMATH)
def test_results_do_not_depend_on_where_the_output_lies(fastmath, dtype):
    """The peeled head loops (until the destination is aligned), the
    aligned vector loop and its remainder compute an element alike: moving
    the destination by an element, which moves elements from one loop to
    another, changes no result; nor does a call so short that only the
    head loop runs."""
    kernel, n = EVERY[fastmath], 1003
    x, y = _arguments(n, dtype, 2)
    x, y = x[:n], y[:n]
    buffer, results = np.empty(len(REPLACED) * n + 16, dtype), []
    for shift in range(16):  # (16 float32s: 64 bytes, every alignment of the widest vector store)
        out = buffer[shift:shift + len(REPLACED) * n].reshape(len(REPLACED), n)
        with np.errstate(all="ignore"):
            kernel(out, x, y)
        results.append(out.copy())
    short = np.empty((len(REPLACED), 3), dtype)
    with np.errstate(all="ignore"):
        kernel(short, x[:3], y[:3])
    assert [shift for shift, result in enumerate(results) if not np.array_equal(result, results[0], equal_nan=True)] \
        == []
    assert np.array_equal(short, results[0][:, :3], equal_nan=True)
    calls = kernel.stream_calls()
    assert calls["streamed"] + calls["staged"] > 0


@libmvec
def test_the_machine_code_calls_libmvec_and_the_report_has_no_math_note():
    x = np.linspace(-5.0, 5.0, 1000)
    out = np.empty_like(x)
    SINES(out, x)
    asm = _asm(SINES)
    assert re.search(r"_ZGV[cde]N\d+v_sin\b", asm)  # (a ymm or zmm version: every CPU with AVX)
    report = SINES.stream_report()
    assert report.math_calls == [] and "math:" not in str(report)
    # numba.njit code compiled in the same process keeps its scalar calls
    PLAIN_SINES(out, x)
    assert "_ZGV" not in "\n".join(PLAIN_SINES.inspect_asm().values())


def test_a_kernel_naming_nothing_runs_numba_njits_code():
    """A bare ``stream_kernel`` is numba.njit, as its report says: no libmvec
    under fastmath, results bit for bit njit's, and its arrays come from
    Numba's allocator, not streamjit's pool."""
    bare = sj.stream_kernel(fastmath=True)(_sines)
    x = _arguments(1001, np.float64, 3)[0]
    out, expected = np.empty_like(x), np.empty_like(x)
    with np.errstate(all="ignore"):
        bare(out, x)
        PLAIN_SINES(expected, x)
    assert np.array_equal(out, expected, equal_nan=True)
    assert not any("_ZGV" in text for text in bare.inspect_llvm().values())
    assert "(numba.njit's code)" in str(bare.stream_report())
    plus_one = sj.stream_kernel(lambda a: a + 1.0)
    sj.release_memory()
    result = plus_one(np.ones(1 << 20))  # (8 MiB: an array the pool would take)
    del result
    assert sj.release_memory() == 0


@libmvec
def test_prange_workers_call_libmvec(monkeypatch):
    """A parallel kernel's loops run in prange workers Numba compiles into
    libraries of their own: those get libmvec too (they kept one scalar
    call per lane: NPBench's parallel arc_distance ran 1.09x njit on one
    thread, its sequential source 5.62x)."""
    seen = []

    def spy(text, target, name="", code="kernel"):
        result = run_post_o3(text, target, name, code=code)
        seen.append((code, result[0]))
        return result

    monkeypatch.setattr(build_list, "run_post_o3", spy)

    def sines(a):
        return np.sin(a) * 2.0

    x = _arguments(1001, np.float64, 4)[0]
    got = sj.stream_kernel(stream_stores=True, fastmath=True, parallel=True)(sines)(x)
    assert ulps(got, numba.njit(fastmath=True)(sines)(x)).max() <= ULPS
    assert any(code == "worker" and re.search(r"call [^@]*@_ZGV\w+_sin\(", text) for code, text in seen)


def test_without_fastmath_nothing_changes():
    x = _arguments(1001, np.float64, 5)[0]
    out, expected = np.empty_like(x), np.empty_like(x)
    EXACT(out, x)
    EXACT_PLAIN(expected, x)
    assert np.array_equal(out, expected, equal_nan=True)  # bit for bit, as njit
    assert "_ZGV" not in _asm(EXACT)
    assert not any("_ZGV" in text for text in EXACT.inspect_llvm().values())


@libmvec
def test_other_targets_get_the_versions_their_registers_pass():
    x = np.linspace(-5.0, 5.0, 100)
    SINES(np.empty_like(x), x)
    assert re.search(r"_ZGVdN4v_sin\b", _asm(SINES, target=X86_64, cpu="haswell"))
    assert re.search(r"_ZGVbN2v_sin\b", _asm(SINES, target=X86_64, cpu="x86-64"))
    assert "_ZGV" not in _asm(SINES, target="aarch64-unknown-linux-gnu", cpu="neoverse-n1")


@libmvec
def test_code_loaded_from_the_cache_resolves_libmvec(tmp_path):
    script = textwrap.dedent("""
        import numpy as np, streamjit as sj

        @sj.stream_kernel(stream_stores=True, fastmath=True, cache=True)
        def sines(out, x):
            for i in range(x.shape[0]):
                out[i] = np.sin(x[i])

        x = np.linspace(0.0, 3.0, 1000)
        out = np.empty_like(x)
        sines(out, x)
        print(np.abs(out - np.sin(x)).max() < 1e-15, sines.stats.cache_hits)
    """)
    path = tmp_path / "cached_sines.py"
    path.write_text(script)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    first = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=300)
    second = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=300)
    assert first.stdout.startswith("True"), first.stderr
    assert second.stdout.startswith("True") and "Counter()" not in second.stdout, second.stderr


# a loop over vectors, as O3 leaves it: approximate (fast, afn) calls and an exact one
LOOP = """
define void @kernel(ptr %p, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %j, %loop ]
  %a = getelementptr <8 x double>, ptr %p, i64 %i
  %x = load <8 x double>, ptr %a, align 8
  %s = tail call fast <8 x double> @llvm.sin.v8f64(<8 x double> %x)
  %y = shufflevector <8 x double> %x, <8 x double> poison, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %t = call afn <4 x double> @llvm.atan2.v4f64(<4 x double> %y, <4 x double> splat (double 2.0))
  %c = call <4 x double> @llvm.cos.v4f64(<4 x double> %y)
  %f = fptrunc <8 x double> %x to <8 x float>
  %e = call nnan afn <8 x float> @llvm.exp.v8f32(<8 x float> %f)
  store <8 x double> %s, ptr %a, align 8
  store <4 x double> %t, ptr %a, align 8
  store <4 x double> %c, ptr %a, align 8
  store <8 x float> %e, ptr %a, align 8
  %j = add i64 %i, 1
  %done = icmp eq i64 %j, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}

declare <8 x double> @llvm.sin.v8f64(<8 x double>)
declare <4 x double> @llvm.atan2.v4f64(<4 x double>, <4 x double>)
declare <4 x double> @llvm.cos.v4f64(<4 x double>)
declare <8 x float> @llvm.exp.v8f32(<8 x float>)
"""


def _rewritten(cpu, triple=X86_64):
    module = Module(LOOP)
    changed = vector_math.run(module, Target(triple, cpu, ""))
    text = str(module)
    if changed:
        import llvmlite.binding as llvm

        llvm.parse_assembly(text).verify()
    return changed, text


def _callees(text):
    return re.findall(r"call [^@]*@(_ZGV\w+)\(", text)


@libmvec
def test_stage_picks_the_widest_version_and_splits_wider_calls():
    changed, avx512 = _rewritten("skylake-avx512")
    assert changed and _callees(avx512) == ["_ZGVeN8v_sin", "_ZGVdN4vv_atan2", "_ZGVdN8v_expf"]
    # the flags stay, the exact cos stays an intrinsic, each version is declared once
    assert "call fast <8 x double> @_ZGVeN8v_sin(<8 x double> %x)" in avx512
    assert "@llvm.cos.v4f64(<4 x double> %y)" in avx512 and "call nnan afn <8 x float> @_ZGVdN8v_expf" in avx512
    assert avx512.count("declare <8 x double> @_ZGVeN8v_sin(<8 x double>)") == 1
    _, haswell = _rewritten("haswell")  # no zmm: two ymm calls, joined into %s
    assert _callees(haswell) == ["_ZGVdN4v_sin", "_ZGVdN4v_sin", "_ZGVdN4vv_atan2", "_ZGVdN8v_expf"]
    assert re.search(r"%s = shufflevector <4 x double> %\S+, <4 x double> %\S+, <8 x i32>", haswell)
    _, sse2 = _rewritten("x86-64")  # xmm only: four SSE calls
    assert _callees(sse2).count("_ZGVbN2v_sin") == 4 and _callees(sse2).count("_ZGVbN2vv_atan2") == 2
    _, avx = _rewritten("sandybridge")  # AVX without AVX2: libmvec's AVX versions
    assert "_ZGVcN4v_sin" in _callees(avx)


# a vector loop's neighbours, as O3 leaves them: a scalar head (intrinsic and
# C library call), a 2-lane remainder, an exact call, a function with no vector call
HEAD_AND_TAIL = """
define void @kernel(ptr %p, double %h, float %g) {
entry:
  %x = load <4 x double>, ptr %p, align 8
  %s = call fast <4 x double> @llvm.sin.v4f64(<4 x double> %x)
  %a = tail call fast double @llvm.sin.f64(double %h)
  %y = shufflevector <4 x double> %x, <4 x double> poison, <2 x i32> <i32 0, i32 1>
  %b = call afn <2 x double> @llvm.sin.v2f64(<2 x double> %y)
  %c = call afn double @sin(double 2.500000e+00)
  %e = call double @llvm.sin.f64(double %h)
  %t = call fast float @atan2f(float %g, float 2.000000e+00)
  store <4 x double> %s, ptr %p, align 8
  store double %a, ptr %p, align 8
  store <2 x double> %b, ptr %p, align 8
  store double %c, ptr %p, align 8
  store double %e, ptr %p, align 8
  store float %t, ptr %p, align 8
  ret void
}

declare <4 x double> @llvm.sin.v4f64(<4 x double>)
declare <2 x double> @llvm.sin.v2f64(<2 x double>)
declare double @llvm.sin.f64(double)
declare double @sin(double)
declare float @atan2f(float, float)
"""


@libmvec
def test_stage_calls_one_version_per_function_from_scalar_and_narrow_calls_too():
    """So that a kernel's head loops, vector loop and remainder compute
    alike: a scalar call becomes a lane of a padded vector call of the
    version the module's widest call takes, a narrower call a padded one."""
    import llvmlite.binding as llvm

    module = Module(HEAD_AND_TAIL)
    assert vector_math.run(module, Target(X86_64, "haswell", ""))
    text = str(module)
    llvm.parse_assembly(text).verify()
    assert _callees(text) == ["_ZGVdN4v_sin"] * 4
    assert re.search(r"%a = extractelement <4 x double> %\S+, i64 0", text)
    assert re.search(r"%b = shufflevector <4 x double> %\S+, <4 x double> poison, <2 x i32> <i32 0, i32 1>", text)
    assert re.search(r"insertelement <1 x double> poison, double 2.500000e\+00, i64 0", text)
    # exact, or without a vector call in the module (njit's C library call): as they were
    assert "%e = call double @llvm.sin.f64(double %h)" in text and "@atan2f(float %g" in text
    sse = Module(HEAD_AND_TAIL)  # xmm only: the 2-lane version for all of them, the 4 lanes split
    vector_math.run(sse, Target(X86_64, "x86-64", ""))
    assert _callees(str(sse)) == ["_ZGVbN2v_sin"] * 5


def test_stage_leaves_other_targets_alone():
    assert _rewritten("neoverse-n1", "aarch64-unknown-linux-gnu") == (False, str(Module(LOOP)))
    assert not _rewritten("skylake-avx512", "x86_64-pc-windows-msvc")[0]


@libmvec
def test_stage_is_named_and_dumped_for_the_kernels_own_module(monkeypatch, capsys):
    monkeypatch.setenv("STREAMJIT_DUMP_AFTER", "vector_math")
    text, changed = run_post_o3(LOOP, Target(X86_64, "haswell", ""), "kernel")
    assert changed and "_ZGVdN4v_sin" in text
    assert "---- streamjit: LLVM IR of kernel after vector_math ----" in capsys.readouterr().out
    # code Numba shares with numba.njit (not the kernel's own library) is left as it is
    assert run_post_o3(LOOP, Target(X86_64, "haswell", ""), code="shared") == (LOOP, False)
    assert run_post_o3(LOOP, Target(X86_64, "haswell", ""), code="worker")[1]   # a prange worker of the kernel


def test_math_calls_count_libmvec_calls_as_vectorized(monkeypatch):
    loop = LOOP.replace("@llvm.sin.v8f64(<8 x double> %x)", "@_ZGVeN8v_sin(<8 x double> %x)")
    scalar = "  %r = call fast double @llvm.sin.f64(double 1.0)\n  %j = add i64 %i, 1"
    functions = Module(loop.replace("  %j = add i64 %i, 1", scalar)).functions
    # sin: libmvec's in the loop, so the scalar call is its remainder; cos and exp: still split lane by lane
    assert scalar_math_calls(functions) == {"atan2", "cos", "exp"}
    monkeypatch.setattr(config, "USING_SVML", False, raising=False)
    monkeypatch.setattr(vector_math, "LIBMVEC", object())
    assert "fastmath=True" in math_call_notes([(3, ("cos",))])[-1]
