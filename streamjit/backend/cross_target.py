"""Compile a kernel's module for another CPU, to inspect its streamed code.

The development machines are x86-64 with AVX-512, but users run on
Graviton, Apple silicon and older x86. This takes the kernel's linked LLVM module as it
was *before* optimization (kept by `library.StreamCodeLibrary`), points it
at another target triple / CPU / feature set, swaps the host's store fence
for that target's (`retarget.py`), and runs what the host build runs: O3
with that target's vectorizer, the same post-O3 stages
(`post_o3/stages.py`, exit fences included), then assembly from llvmlite's
target machine. Nothing is executed, so any target llvmlite was built with
can be inspected.
"""

import llvmlite.binding as llvm

from ..post_o3.stages import run_post_o3
from ..protocol.targets import Target
from .retarget import retarget_host_text

_initialized = False


def _target_machine(triple, cpu, features):
    global _initialized
    if not _initialized:
        llvm.initialize_all_targets()
        llvm.initialize_all_asmprinters()
        _initialized = True
    target = llvm.Target.from_triple(triple)
    return target.create_target_machine(cpu=cpu or "", features=features or "", opt=3, reloc="pic",
                                        codemodel="default")


def _parse(text, triple, tm):
    module = llvm.parse_assembly(text)
    module.triple = triple
    module.data_layout = str(tm.target_data)
    module.verify()
    return module


def compile_for_target(unoptimized_llvm_ir, triple, cpu=None, features=None):
    """Return ``(final LLVM IR text, assembly)`` of the module for that target."""
    tm = _target_machine(triple, cpu, features)
    text = retarget_host_text(unoptimized_llvm_ir, triple)
    module = _parse(text, triple, tm)
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    builder = llvm.create_pass_builder(tm, pto)
    builder.getModulePassManager().run(module, builder)
    final = run_post_o3(str(module), Target(triple, cpu, features), f"{triple} {cpu or ''}")[0]
    return final, tm.emit_assembly(_parse(final, triple, tm))
