"""The code library that runs the non-temporal rewrite, and the switch that
makes Numba use it.

Numba optimizes each function's final LLVM module inside its code library.
``StreamCodeLibrary`` lets that happen unchanged, then rewrites the
optimized module (`widen_stores.py`, `nontemporal.py`, `prefetch.py`, `exit_fences.py`) before machine code is
generated. It keeps the rewritten text for `stream_report` (Numba's
`inspect_llvm` shows the module only after the backend has changed it in
place) and the text before optimization, to compile for other targets
(`cross_target.py`).

`stream_code_libraries` makes Numba create such libraries while it compiles
a streamjit kernel, so the rewrite reaches exactly the code compiled for
streamjit kernels and, with ``cache=True``, the cached object code is the
rewritten one.
"""

import contextlib
import re

import llvmlite.binding as llvm
from numba.core import cgutils
from numba.core.codegen import JITCodeLibrary
from numba.core.compiler_lock import global_compiler_lock

from .exit_fences import fence_exits
from .keep_scalar import remove_keep_scalar_calls
from .markers import STREAM_STORE_SCOPE
from .nontemporal import make_streamed_accesses_nontemporal
from .pair_nontemporal import pair_streamed_accesses
from .prefetch import insert_stream_prefetches
from .widen_stores import widen_streamed_stores


class StreamCodeLibrary(JITCodeLibrary):
    """A JIT code library whose final module gets non-temporal stores."""

    streamed_llvm_ir = None
    _unoptimized_module = None

    def add_ir_module(self, ir_module):
        """Numba's `add_ir_module` (the same four steps), with every function
        of a module that holds streamed stores declared ``no-builtin-memset``:
        LLVM's loop idiom pass turns a loop that stores one value into
        ``memset`` where it can prove the bytes, which any loop-invariant
        value of a byte array and a zero of any type are, and the streamed
        stores are gone (a zero fill ran at the speed of a plain one). Without
        ``memset`` in its library the pass leaves the loop to the vectorizer,
        whose stores are then made non-temporal. Calls to ``llvm.memset``
        that Numba makes itself still run ``memset``."""
        self._raise_if_finalized()
        text = cgutils.normalize_ir_text(str(ir_module))
        if STREAM_STORE_SCOPE in text:
            text = re.sub(r"^(define [^\n]*\))", r'\1 "no-builtin-memset"', text, flags=re.M)
        ll_module = llvm.parse_assembly(text)
        ll_module.name = ir_module.name
        ll_module.verify()
        self.add_llvm_module(ll_module)

    @property
    def unoptimized_llvm_ir(self):
        """The linked module before optimization, as text (None if unknown)."""
        return None if self._unoptimized_module is None else str(self._unoptimized_module)

    def _optimize_final_module(self):
        self._unoptimized_module = self._final_module.clone()
        super()._optimize_final_module()
        text = str(self._final_module)
        rewritten = fence_exits(insert_stream_prefetches(pair_streamed_accesses(make_streamed_accesses_nontemporal(
            widen_streamed_stores(remove_keep_scalar_calls(text))))))
        if rewritten is not text:
            module = llvm.parse_assembly(rewritten)
            module.verify()
            module.name = self._final_module.name
            self._final_module = module
        self.streamed_llvm_ir = rewritten


@contextlib.contextmanager
def stream_code_libraries(codegen):
    """While compiling a streamjit kernel, every code library the codegen
    creates is a `StreamCodeLibrary`: the kernel's own, and those Numba makes
    on the way, such as the separate gufunc functions of `prange` loops
    (`parallel=True`), so the rewrite reaches every function that holds a
    streamed store. Libraries without marked accesses come out unchanged.
    Held under Numba's compiler lock, so no other compile sees the switch."""
    with global_compiler_lock:
        previous = codegen._library_class
        codegen._library_class = StreamCodeLibrary
        try:
            yield
        finally:
            codegen._library_class = previous
