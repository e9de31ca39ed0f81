"""The code library and compiler pipeline that run the non-temporal rewrite.

Numba optimizes each function's final LLVM module inside its code library.
``StreamCodeLibrary`` lets that happen unchanged, then rewrites the
optimized module (`nontemporal.py`, `prefetch.py`) before machine code is
generated. It keeps the rewritten text for `stream_report` (Numba's
`inspect_llvm` shows the module only after the backend has changed it in
place) and the text before optimization, to compile for other targets
(`cross_target.py`).

``StreamCompiler`` is Numba's nopython pipeline plus one lowering pass that
gives the function such a library, so the rewrite reaches exactly the
kernels compiled by streamjit and, with ``cache=True``, the cached object
code is the rewritten one.
"""

import llvmlite.binding as llvm
from numba.core.codegen import JITCodeLibrary
from numba.core.compiler import CompilerBase, DefaultPassBuilder
from numba.core.compiler_machinery import LoweringPass, register_pass
from numba.core.typed_passes import AnnotateTypes

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


@register_pass(mutates_CFG=False, analysis_only=False)
class UseStreamCodeLibrary(LoweringPass):
    """Give the function a `StreamCodeLibrary` before it is lowered."""

    _name = "streamjit_use_stream_code_library"

    def __init__(self):
        LoweringPass.__init__(self)

    def run_pass(self, state):
        if state.library is None:
            codegen = state.targetctx.codegen()
            state.library = StreamCodeLibrary(codegen, state.func_id.func_qualname)
            state.library.enable_object_caching()
        return True


class StreamCompiler(CompilerBase):
    """Numba's nopython pipeline with the stream code library installed."""

    def define_pipelines(self):
        pm = DefaultPassBuilder.define_nopython_pipeline(self.state)
        pm.add_pass_after(UseStreamCodeLibrary, AnnotateTypes)
        pm.finalize()
        return [pm]
