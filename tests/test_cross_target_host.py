"""Inspecting the code for the host's own triple, CPU and features shows the
host build: both builds run `backend/stages.build` (Numba's O3 for the target
machine, then the post-O3 stages), and its O3 leaves a module exactly as
Numba's own code library does, whatever Numba's vectorizer and refprune
flags say. (The build for another CPU once ran an O3 of its own, with SLP
vectorization and without refprune, and showed vector code the host build
did not have.)"""

import re
from types import SimpleNamespace

import llvmlite.binding as llvm
import numpy as np
import pytest
from numba.core import config
from numba.core.codegen import CPUCodeLibrary, get_host_cpu_features
from numba.misc.llvm_pass_timings import PassTimingsCollection

import kernels as K
import streamjit as sj
from streamjit.backend.o3 import host_machine, o3
from streamjit.protocol.targets import host_build_cpu
from helpers import compiled

F32 = np.zeros(300, np.float32)
GRID = np.zeros((20, 300), np.float32)
CALLS = {"copy": (K.copy, (F32.copy(), F32)),
         "triad": (K.triad, (F32.copy(), F32, F32, np.float32(2))),
         "stencil_2d": (K.jacobi_f32, (GRID.copy(), GRID)),
         "reduction": (K.store_then_read, (np.zeros(300), np.ones(300)))}


@sj.stream_kernel(stream_stores=True)
def doubled_plus(a):
    # a temporary array (Numba's own np.sort: no stream pass fuses it) and a
    # fresh output: reference counts for refprune (or Numba's text pruner) to
    # remove, and a loop SLP vectorizes further
    twice = np.sort(a)
    out = np.empty_like(a)
    for i in range(a.shape[0]):
        out[i] = twice[i] + a[i]
    return out


O3_CALLS = {"reduction": CALLS["reduction"], "temporary": (doubled_plus, (np.ones(300),))}

_LABEL = re.compile(r"^([^\s:#]+):", re.M)
# an x86 `#` or AArch64 `//` comment; not an AArch64 immediate (`#16`, `#-8`, `#:lo12:`)
_COMMENT = re.compile(r"\s*(?://|#(?![\d:-])).*$")


def normalized(asm):
    """The lines of ``asm`` without comments, blank lines and the file's
    name, each label (function, block, constant pool, global) renamed by
    the order it is defined in."""
    names = {}
    for label in _LABEL.findall(asm):
        names.setdefault(label, f"L{len(names)}")
    lines = []
    for line in asm.splitlines():
        line = _COMMENT.sub("", line).rstrip()
        if line and not line.lstrip().startswith((".file", ".ident")):
            lines.append(re.sub(r"[\w.$]+", lambda m: names.get(m.group(0), m.group(0)), line))
    return lines


def host_target():
    """``(triple, cpu, features)`` of the host build."""
    cpu, features = host_build_cpu()
    return llvm.get_process_triple(), cpu, get_host_cpu_features() if features is None else features


def test_normalized_keeps_instructions_and_renames_labels():
    asm = "\t.file\t\"x\"\nf:  # @f\n.LBB0_1:\n\tjne\t.LBB0_1  # loop\n\tadd\tx0, x0, #16 // imm\n"
    assert normalized(asm) == ["L0:", "L1:", "\tjne\tL1", "\tadd\tx0, x0, #16"]


@pytest.mark.parametrize("name", CALLS)
def test_inspecting_the_hosts_own_target_shows_the_host_build(name):
    kernel, args = CALLS[name]
    sig = compiled(kernel, *args)
    triple, cpu, features = host_target()
    host = kernel.inspect_asm(sig)
    inspected = kernel.inspect_asm(sig, target=triple, cpu=cpu, features=features)
    assert normalized(inspected) == normalized(host)
    assert len(normalized(host)) > 50


def _numbas_o3(library, module):
    """``module`` after Numba's own ``CPUCodeLibrary._optimize_final_module``."""
    numbas = SimpleNamespace(_codegen=library._codegen, _final_module=module,
                             _recorded_timings=PassTimingsCollection("o3"))
    CPUCodeLibrary._optimize_final_module(numbas)
    return numbas._final_module


@pytest.mark.parametrize("flags", [{}, {"SLP_VECTORIZE": 1}, {"LOOP_VECTORIZE": 0}, {"LLVM_REFPRUNE_PASS": 0}],
                         ids=["default", "slp", "no_loop_vectorize", "no_refprune_pass"])
@pytest.mark.parametrize("name", O3_CALLS)
def test_o3_is_numbas_own(monkeypatch, name, flags):
    kernel, args = O3_CALLS[name]
    library = kernel.overloads[compiled(kernel, *args)].library
    for flag, value in flags.items():
        monkeypatch.setattr(config, flag, value)
    ours = o3(llvm.parse_assembly(library.unoptimized_llvm_ir), host_machine(library))
    numbas = _numbas_o3(library, llvm.parse_assembly(library.unoptimized_llvm_ir))
    assert str(ours) == str(numbas)


def test_the_flags_change_what_o3_makes(monkeypatch):
    """So the comparison above sees each flag: with the SLP vectorizer, or
    Numba's text pruner in place of refprune, the module comes out otherwise."""
    kernel, args = O3_CALLS["temporary"]
    library = kernel.overloads[compiled(kernel, *args)].library
    default = str(o3(llvm.parse_assembly(library.unoptimized_llvm_ir), host_machine(library)))
    for flag, value in (("SLP_VECTORIZE", 1), ("LLVM_REFPRUNE_PASS", 0)):
        with monkeypatch.context() as patch:
            patch.setattr(config, flag, value)
            assert str(o3(llvm.parse_assembly(library.unoptimized_llvm_ir), host_machine(library))) != default, flag


def test_the_assembly_shown_is_the_same_at_every_call():
    """Numba emits a module's assembly anew at each call, and each emission
    runs code generation's IR passes on the module in place: its second call
    showed other register choices than its first (and the host build above
    differed from the inspected one after another test had read it)."""
    kernel, args = CALLS["stencil_2d"]
    sig = compiled(kernel, *args)
    assert len({kernel.inspect_asm(sig) for _ in range(3)}) == 1
