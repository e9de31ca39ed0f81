"""Numba's code generation: which class a code library is, its final
module around O3, the JIT engine's symbols, the target machine, and the
cached form of a library.

`NumbaCodeLibrary` is Numba's JIT code library with its final-module step
under public names: a subclass overrides `optimize_final_module` (by
default Numba's O3) and reads or replaces `final_module`.
"""

from numba.core import codegen as _codegen
from numba.core.codegen import JITCodeLibrary

# How Numba's parfor lowering names a prange worker function, and so the
# code library it compiles the worker into (`parfors/parfor_lowering.py`).
PARFOR_WORKER_PREFIX = "__numba_parfor_gufunc_"


def library_class(codegen):
    """The class Numba's ``codegen.create_library`` instantiates."""
    return codegen._library_class


def set_library_class(codegen, cls):
    """Make ``codegen.create_library`` instantiate ``cls`` (a `NumbaCodeLibrary`)."""
    codegen._library_class = cls


class NumbaCodeLibrary(JITCodeLibrary):
    """Numba's JIT code library, its final-module step under public names."""

    @property
    def final_module(self):
        """The library's linked LLVM module (``llvmlite.binding``): before
        `optimize_final_module` the unoptimized one, after it what becomes
        machine code."""
        return self._final_module

    @final_module.setter
    def final_module(self, module):
        self._final_module = module

    def optimize_final_module(self):
        """Optimize `final_module` in place or replace it; this default is
        Numba's own O3. Numba calls it once, when the library is finalized."""
        JITCodeLibrary._optimize_final_module(self)

    def _optimize_final_module(self):
        self.optimize_final_module()


def target_machine(codegen):
    """The ``llvmlite.binding.TargetMachine`` Numba's CPU code generator
    ``codegen`` (``context.codegen()``, ``library.codegen``) compiles for."""
    return codegen._tm


def timing_record(library):
    """``record(name, pass_builder)``: the context manager under which a code
    library times an LLVM pipeline (``NUMBA_LLVM_PASS_TIMINGS``)."""
    return library._recorded_timings.record


def refprune_flags():
    """The reference-count pruner's flags, as Numba reads them from
    ``NUMBA_LLVM_REFPRUNE_FLAGS``."""
    return _codegen._parse_refprune_flags()


def symbol_defined(codegen, name):
    """Whether the JIT engine of ``codegen`` defines the symbol ``name``."""
    return codegen._engine.is_symbol_defined(name)


def global_value_address(codegen, name):
    """The address of the global value ``name`` in the JIT engine of ``codegen``."""
    return codegen._engine.get_global_value_address(name)


def cached_bitcode(libdata):
    """The LLVM bitcode in the cached form of a code library (Numba's
    ``serialize_using_object_code()``: ``(name, "object", (object code,
    bitcode))``), or None for a form of another kind."""
    _, kind, data = libdata
    return data[1] if kind == "object" else None
