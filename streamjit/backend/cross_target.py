"""Compile a kernel's module for another CPU, to inspect its streamed code.

The development machines are x86-64 with AVX-512, but users run on
Graviton, Apple silicon and older x86. This takes the kernel's linked LLVM
module as it was *before* optimization (kept by `library.StreamCodeLibrary`),
points it at another target triple / CPU / feature set, swaps the host's
store fence for that target's (`retarget.py`, on the module's text; an
x86 target takes a clone of the module, as the host build does: the order
of a value's uses, which a module's history sets, steers the order of the
phi operands O3 creates and so the register allocator's choices), and
builds it as the host build does, through the same `stages.build`: Numba's O3 for that target machine,
then the post-O3 stages (`post_o3/stages.py`, exit fences included), then
assembly from the target machine. The machine is made as Numba's JIT makes
its own, so a build for the host's triple, CPU and features gives the host
build's code. Nothing is executed, so any target llvmlite was built with
can be inspected.
"""

import llvmlite.binding as llvm
from numba.core import config

from ..protocol.targets import Target, arch_of
from .stages import build
from .retarget import retarget_host_text

_initialized = False


def _target_machine(triple, cpu, features):
    global _initialized
    if not _initialized:
        llvm.initialize_all_targets()
        llvm.initialize_all_asmprinters()
        _initialized = True
    target = llvm.Target.from_triple(triple)
    # the options of Numba's JIT code generation (`JITCPUCodegen`) on that machine
    reloc = "static" if target.name.startswith("x86") else "pic" if target.name.startswith("ppc") else "default"
    return target.create_target_machine(cpu=cpu or "", features=features or "", opt=config.OPT, reloc=reloc,
                                        codemodel="jitdefault", jit=True)


def _retargeted(unoptimized, triple, tm):
    module = (unoptimized.clone() if arch_of(triple) == "x86" else
              llvm.parse_assembly(retarget_host_text(str(unoptimized), triple)))
    module.triple = triple
    module.data_layout = str(tm.target_data)
    module.verify()
    return module


def compile_for_target(unoptimized_module, triple, cpu=None, features=None):
    """Return ``(final LLVM IR text, assembly)`` of the kernel's module before
    optimization (left unchanged) for that target."""
    tm = _target_machine(triple, cpu, features)
    module, final = build(_retargeted(unoptimized_module, triple, tm), tm, Target(triple, cpu, features),
                          f"{triple} {cpu or ''}")
    # Numba prints a host build's assembly from its module after the JIT made
    # the machine code, which changed the module in place (CodeGenPrepare
    # sinks addresses into their blocks): so is this assembly printed
    tm.emit_object(module)
    return final, tm.emit_assembly(module)
