"""The code library that runs the non-temporal rewrite, and the switch that
makes Numba use it.

Numba optimizes each function's final LLVM module inside its code library.
``StreamCodeLibrary`` lets that happen unchanged, then rewrites the
optimized module (`nontemporal.py`, `prefetch.py`) before machine code is
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

import llvmlite.binding as llvm
from numba.core.codegen import JITCodeLibrary
from numba.core.compiler_lock import global_compiler_lock

from .alignment import bundle_alignment_promises
from .nontemporal import make_streamed_accesses_nontemporal
from .pair_stores import pair_streamed_stores
from .prefetch import insert_stream_prefetches


class StreamCodeLibrary(JITCodeLibrary):
    """A JIT code library whose final module gets non-temporal stores."""

    streamed_llvm_ir = None
    unoptimized_llvm_ir = None

    def _optimize_final_module(self):
        self.unoptimized_llvm_ir = self._rewrite_final_module(bundle_alignment_promises, keep_input=True)
        super()._optimize_final_module()
        self.streamed_llvm_ir = self._rewrite_final_module(
            lambda text: insert_stream_prefetches(pair_streamed_stores(make_streamed_accesses_nontemporal(text))))

    def _rewrite_final_module(self, rewrite, keep_input=False):
        """Apply a text-to-text rewrite to the final module; return the new
        text (or the text it started from, with ``keep_input``)."""
        text = str(self._final_module)
        rewritten = rewrite(text)
        if rewritten is not text:
            module = llvm.parse_assembly(rewritten)
            module.verify()
            module.name = self._final_module.name
            self._final_module = module
        return text if keep_input else rewritten


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
