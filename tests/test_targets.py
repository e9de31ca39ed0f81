"""The streamed code for other CPUs, compiled (not run) from the same module:
AArch64 pair stores and `dmb ishst`, AVX2 ymm, baseline SSE2 xmm, and a
release fence elsewhere; the host build honours NUMBA_CPU_NAME."""

import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kernels as K
from helpers import compiled

NEON = ("aarch64-unknown-linux-gnu", "neoverse-n1")
SVE = ("aarch64-unknown-linux-gnu", "neoverse-v1")
HASWELL = ("x86_64-unknown-linux-gnu", "haswell")
SSE2 = ("x86_64-unknown-linux-gnu", "x86-64")
RISCV = ("riscv64-unknown-linux-gnu", "generic-rv64")


@pytest.fixture(scope="module")
def kernels():
    """Each kernel compiled once on the host (any host), with its signature."""
    f32 = np.zeros(300, np.float32)
    grid = np.zeros((20, 300), np.float32)
    calls = {"copy": (K.copy, (f32.copy(), f32)),
             "triad": (K.triad, (f32.copy(), f32, f32, np.float32(2))),
             "jacobi": (K.jacobi_f32, (grid.copy(), grid)),
             "stream_loads": (K.residual, (np.zeros(300), np.zeros(300), np.zeros(300)))}
    return {name: (kernel, compiled(kernel, *args)) for name, (kernel, args) in calls.items()}


def asm_for(kernels, name, target):
    kernel, sig = kernels[name]
    return kernel.inspect_asm(sig, target=target[0], cpu=target[1])


STORE_KERNELS = ["copy", "triad", "jacobi", "stream_loads"]


@pytest.mark.parametrize("name", STORE_KERNELS)
def test_aarch64_neon_uses_pair_stores_and_dmb_ishst(kernels, name):
    asm = asm_for(kernels, name, NEON)
    assert re.search(r"^\s*stnp\s+q\d+, q\d+,", asm, re.M)
    assert re.search(r"^\s*dmb\s+ishst\s*$", asm, re.M)
    assert "sfence" not in asm


def test_aarch64_sve_uses_sve_nontemporal_stores(kernels):
    asm = asm_for(kernels, "copy", SVE)
    assert re.search(r"^\s*(stnt1w|stnp\s+q\d+)", asm, re.M)
    assert re.search(r"^\s*dmb\s+ishst\s*$", asm, re.M)


@pytest.mark.parametrize("name", STORE_KERNELS)
def test_avx2_uses_ymm_and_sfence(kernels, name):
    asm = asm_for(kernels, name, HASWELL)
    assert re.search(r"^\s*vmovnt(ps|pd|dq)\s+%ymm\d+,", asm, re.M)
    assert "zmm" not in asm
    assert re.search(r"^\s*sfence\s*$", asm, re.M)


@pytest.mark.parametrize("name", STORE_KERNELS)
def test_baseline_x86_64_uses_sse_xmm_and_sfence(kernels, name):
    asm = asm_for(kernels, name, SSE2)
    assert re.search(r"^\s*movnt(ps|pd|dq)\s+%xmm\d+,", asm, re.M)
    assert not re.search(r"%[yz]mm", asm)
    assert re.search(r"^\s*sfence\s*$", asm, re.M)


@pytest.mark.parametrize("target, prefetch", [(HASWELL, r"prefetchnta"), (NEON, r"prfm\s+pldl1strm")])
def test_streamed_loads_are_prefetched_on_each_target(kernels, target, prefetch):
    assert re.search(rf"^\s*{prefetch}\b", asm_for(kernels, "stream_loads", target), re.M)


@pytest.mark.parametrize("target, width", [(NEON, 32), (HASWELL, 32), (SSE2, 16)])
def test_alignment_peel_proves_each_targets_vector_width(kernels, target, width):
    kernel, sig = kernels["copy"]
    llvm_ir = kernel.inspect_llvm(sig, target=target[0], cpu=target[1])
    nt = re.findall(r"store <(\d+) x float> .*, align (\d+).*!nontemporal", llvm_ir)
    assert max(4 * int(lanes) for lanes, _ in nt) >= width      # full-width vectors...
    for lanes, align in nt:
        assert int(align) >= min(4 * int(lanes), 64)           # ...each proven aligned


def test_other_targets_get_a_release_fence_and_an_explanation(kernels):
    kernel, sig = kernels["copy"]
    asm = kernel.inspect_asm(sig, target=RISCV[0], cpu=RISCV[1])
    assert re.search(r"^\s*fence\s+rw,\s*w\s*$", asm, re.M)
    report = kernel.stream_report(sig, target=RISCV[0], cpu=RISCV[1])
    assert report.fences == 1
    assert any("no non-temporal store instruction" in n for n in report.arrays["dst"].notes)


def test_report_for_a_target(kernels):
    kernel, sig = kernels["copy"]
    report = kernel.stream_report(sig, target=NEON[0], cpu=NEON[1])
    assert report.fences == 1 and report.machine_nt_vector_stores > 0 and report.arrays["dst"].nt_vector_stores > 0


def test_host_build_honours_numba_cpu_name(tmp_path):
    script = textwrap.dedent("""
        import re, numpy as np, streamjit as sj

        @sj.stream_kernel(stream_stores=["dst"])
        def copy(dst, src):
            for i in range(src.shape[0]):
                dst[i] = src[i]

        a = np.arange(1000, dtype=np.float32)
        b = np.zeros(1001, np.float32)
        copy(b[1:], a)
        assert (b[1:] == a).all()
        asm = copy.inspect_asm(copy.signatures[0])
        print(bool(re.search(r"movntps\\s+%xmm", asm)), bool(re.search(r"%[yz]mm", asm)))
    """)
    (tmp_path / "portable.py").write_text(script)
    env = dict(os.environ, NUMBA_CPU_NAME="x86-64", NUMBA_CPU_FEATURES="",
               PYTHONPATH=os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")]))
    if not os.uname().machine == "x86_64":
        pytest.skip("the portable build checked here is x86-64's")
    out = subprocess.run([sys.executable, "portable.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "False"]


def test_aarch64_streamed_loads_are_non_temporal(kernels):
    assert re.search(r"^\s*ldnp\s+q\d+, q\d+,", asm_for(kernels, "stream_loads", NEON), re.M)
    assert re.search(r"^\s*ldnt1d\s", asm_for(kernels, "stream_loads", SVE), re.M)


def _divide(out, a):
    for i in range(a.shape[0]):
        out[i] = 1.0 / a[i]


def test_other_targets_fence_the_exits_the_host_build_fences():
    """The inspection for another target ran a copy of the post-O3
    chain without exit fences, so its report counted "unfenced" stores the
    host build fences."""
    import llvmlite.binding as llvm

    import streamjit as sj
    kernel = sj.stream_kernel(stream_stores=["out"], threshold=None)(_divide)
    sig = compiled(kernel, np.zeros(300), np.ones(300))
    host = kernel.stream_report(sig)
    assert host.exit_fences > 0 and host.unfenced_stores == 0
    for triple, cpu in ((llvm.get_process_triple(), None), NEON):
        report = kernel.stream_report(sig, target=triple, cpu=cpu)
        assert (report.exit_fences, report.unfenced_stores) == (host.exit_fences, 0), triple


@pytest.mark.skipif(not __import__("platform").machine() in ("x86_64", "AMD64"), reason="x86 only")
@pytest.mark.parametrize("cpu, through_integers", [("x86-64", True), ("znver4", False)])
def test_the_host_builds_target_facts_follow_numba_cpu_name(monkeypatch, cpu, through_integers):
    """The host build's target facts came from the host CPU, not from the
    CPU Numba builds for: an AMD host building for ``x86-64`` tagged scalar
    doubles for ``movntsd`` (SSE4A, which x86-64 lacks), and the report
    counted NT stores the machine code did not have."""
    from numba.core import config

    from streamjit.protocol.targets import Target

    monkeypatch.setattr(config, "CPU_NAME", cpu)
    monkeypatch.setattr(config, "CPU_FEATURES", "")
    assert Target().fp_through_integers is through_integers
