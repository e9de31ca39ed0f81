"""Numba's O3, the ``o3`` step of the build list (`stages.py`): Numba's CPU
optimization of a library's final module, as
``CPUCodeLibrary._optimize_final_module`` runs it:

- a cheap module pipeline that inlines as much as it can, so the
  reference-count pruner sees whole functions: O0 without vectorizers
  (``NUMBA_OPT=max``: O3 with the loop vectorizer), then loop rotation,
  instcombine and jump threading (unless ``NUMBA_OPT=0``), then refprune;
- Numba's text-level reference-count pruner instead, when
  ``NUMBA_LLVM_REFPRUNE_PASS=0``;
- the full module pipeline: ``NUMBA_OPT``, the loop vectorizer as
  ``NUMBA_LOOP_VECTORIZE`` says (on by default) and the SLP vectorizer as
  ``NUMBA_SLP_VECTORIZE`` says (off by default), then refprune.

What O3 does depends on the target machine (its vector width, its cost
model), so it is run with the machine the code is built for: the host
build's is Numba's own (``NUMBA_CPU_NAME`` / ``NUMBA_CPU_FEATURES``).

The Numba internals O3 needs: the pass builder of ``numba.core.llvm_bindings``
(the same in Numba 0.66, 0.67 and 0.68), the text pruner of
``numba.core.runtime.nrtopt``, and, through `numba_internals.codegen`, the
refprune flags and a code library's target machine and timing records.
`tests/test_cross_target_host.py` checks that ``o3`` leaves a module exactly
as Numba's own method does.
"""

import contextlib

from numba.core import config
from numba.core.llvm_bindings import create_pass_builder
from numba.core.runtime.nrtopt import remove_redundant_nrt_refct

from ..numba_internals.codegen import refprune_flags, target_machine, timing_record

# The names Numba records the two pipelines' timings under (NUMBA_LLVM_PASS_TIMINGS).
CHEAP = "Module passes (cheap optimization for refprune)"
FULL = "Module passes (full optimization)"


def no_record(name, builder):
    """`o3`'s ``record`` that times nothing."""
    return contextlib.nullcontext()


def _module_pipeline(machine, opt, loop_vectorize, slp_vectorize, cheap=False):
    """(module pass manager, pass builder), as ``CPUCodegen._module_pass_manager``."""
    builder = create_pass_builder(machine, opt=opt, loop_vectorize=loop_vectorize, slp_vectorize=slp_vectorize)
    manager = builder.getModulePassManager()
    if cheap and config.OPT != 0:
        # rotated loops early, so that fewer fail to vectorize on unknown
        # PHI nodes; instcombine and jump threading let SVML calls vectorize
        manager.add_loop_rotate_pass()
        manager.add_instruction_combine_pass()
        manager.add_jump_threading_pass()
    if config.LLVM_REFPRUNE_PASS:
        manager.add_refprune_pass(refprune_flags())
    return manager, builder


def o3(module, machine, record=no_record):
    """Optimize the linked ``module`` for the target machine ``machine`` as
    Numba does (see the module docstring); return the optimized module (the
    same object, unless the text-level pruner made a new one). ``record(name,
    pass_builder)`` is a context manager timing each pipeline."""
    opt_max = config.OPT.is_opt_max
    cheap, cheap_builder = _module_pipeline(machine, 3 if opt_max else 0, loop_vectorize=opt_max,
                                            slp_vectorize=False, cheap=True)
    full, full_builder = _module_pipeline(machine, config.OPT, config.LOOP_VECTORIZE, config.SLP_VECTORIZE)
    with record(CHEAP, cheap_builder):
        cheap.run(module, cheap_builder)
    if not config.LLVM_REFPRUNE_PASS:
        module = remove_redundant_nrt_refct(module)
    with record(FULL, full_builder):
        full.run(module, full_builder)
    return module


def host_machine(library):
    """The target machine of a Numba code library's code generator."""
    return target_machine(library.codegen)


def timing_records(library):
    """``record(name, pass_builder)`` of a Numba code library (`o3`)."""
    return timing_record(library)
