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
from streamjit.backend import o3
from streamjit.math_calls import math_call_notes, scalar_math_calls
from streamjit.post_o3 import vector_math
from streamjit.post_o3.module import Module
from streamjit.post_o3.stages import run_post_o3
from streamjit.protocol.targets import Target

libmvec = pytest.mark.skipif(not vector_math.available(), reason="no glibc libmvec on this x86-64 Linux host")
X86_64 = "x86_64-unknown-linux-gnu"
# libmvec's documented bound (glibc manual, "Errors in Math Functions"),
# plus the one ulp glibc's scalar functions, which njit calls, may be off by
ULPS = 5
SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324, 1e-310, 1e22, -1e22, 1e300, -1e300, 709.8, -745.2,
                    1e6 * np.pi, 2.0 ** 60])


def _unary(f):
    def loop(out, x):
        for i in range(x.shape[0]):
            out[i] = f(x[i])
    return loop


def _binary(f):
    def loop(out, y, x):
        for i in range(x.shape[0]):
            out[i] = f(y[i], x[i])
    return loop


FUNCTIONS = {"sin": _unary(np.sin), "cos": _unary(np.cos), "exp": _unary(np.exp), "log": _unary(np.log),
             "arctan2": _binary(np.arctan2)}
KERNELS = {name: sj.stream_kernel(stream_stores=True, fastmath=True)(loop) for name, loop in FUNCTIONS.items()}
PLAIN = {name: numba.njit(fastmath=True)(loop) for name, loop in FUNCTIONS.items()}
EXACT = sj.stream_kernel(stream_stores=True)(FUNCTIONS["sin"])
EXACT_PLAIN = numba.njit(FUNCTIONS["sin"])


def ulps(a, b):
    """|a - b| in ulps of the larger magnitude, 0 where both are equal or both NaN."""
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    with np.errstate(invalid="ignore"):  # (inf - inf where both are inf: masked by `same`)
        return np.where(same, 0.0, np.abs(a - b) / np.spacing(np.maximum(np.abs(a), np.abs(b))))


def _data(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-20.0, 20.0, n) * 10.0 ** rng.integers(-3, 3, n)
    x[rng.integers(0, n, min(n, len(SPECIAL)))] = SPECIAL[:min(n, len(SPECIAL))]
    return x


def _asm(kernel, **target):
    return "\n".join(kernel.inspect_asm(sig, **target) for sig in kernel.signatures)


# (where the allocator places out a few bytes behind y modulo 4 KiB, the call runs plain and warns: not what this tests)
@pytest.mark.filterwarnings("ignore::streamjit.StreamWarning")
@libmvec
@pytest.mark.parametrize("n", [1, 3, 7, 64, 1001, 4099])
@pytest.mark.parametrize("name", FUNCTIONS)
def test_fastmath_loops_call_libmvec_within_its_error(name, n):
    x, y = _data(n, n), _data(n, n + 1)
    args = (y, x) if name == "arctan2" else (x,)
    out, expected = sj.empty_like(x), np.empty(n)
    with np.errstate(all="ignore"):
        KERNELS[name](out, *args)
        PLAIN[name](expected, *args)
    assert np.array_equal(np.isnan(out), np.isnan(expected))
    assert ulps(out, expected).max() <= ULPS
    callee = {"arctan2": "atan2"}.get(name, name)
    assert re.search(rf"_ZGV[bcde]N\d+v+_{callee}\b", _asm(KERNELS[name]))


@libmvec
def test_the_machine_code_calls_libmvec_and_the_report_has_no_math_note():
    x = np.linspace(-5.0, 5.0, 1000)
    out = np.empty_like(x)
    KERNELS["sin"](out, x)
    asm = _asm(KERNELS["sin"])
    assert re.search(r"_ZGV[cde]N\d+v_sin\b", asm)  # (a ymm or zmm version: every CPU with AVX)
    report = KERNELS["sin"].stream_report()
    assert report.math_calls == [] and "math:" not in str(report)
    # numba.njit code compiled in the same process keeps its scalar calls
    PLAIN["sin"](out, x)
    assert "_ZGV" not in "\n".join(PLAIN["sin"].inspect_asm().values())


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

    monkeypatch.setattr(o3, "run_post_o3", spy)

    def sines(a):
        return np.sin(a) * 2.0

    x = _data(1001, 3)
    got = sj.stream_kernel(stream_stores=True, fastmath=True, parallel=True)(sines)(x)
    assert ulps(got, numba.njit(fastmath=True)(sines)(x)).max() <= ULPS
    assert any(code == "worker" and re.search(r"call [^@]*@_ZGV\w+_sin\(", text) for code, text in seen)


def test_without_fastmath_nothing_changes():
    x = _data(1001, 7)
    out, expected = np.empty_like(x), np.empty_like(x)
    EXACT(out, x)
    EXACT_PLAIN(expected, x)
    assert np.array_equal(out, expected, equal_nan=True)  # bit for bit, as njit
    assert "_ZGV" not in _asm(EXACT)
    assert not any("_ZGV" in text for text in EXACT.inspect_llvm().values())


@libmvec
def test_other_targets_get_the_versions_their_registers_pass():
    x = np.linspace(-5.0, 5.0, 100)
    KERNELS["sin"](np.empty_like(x), x)
    assert re.search(r"_ZGVdN4v_sin\b", _asm(KERNELS["sin"], target=X86_64, cpu="haswell"))
    assert re.search(r"_ZGVbN2v_sin\b", _asm(KERNELS["sin"], target=X86_64, cpu="x86-64"))
    assert "_ZGV" not in _asm(KERNELS["sin"], target="aarch64-unknown-linux-gnu", cpu="neoverse-n1")


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
