"""The code library that runs the non-temporal rewrite, and the switch that
makes Numba use it.

Numba optimizes each function's final LLVM module inside its code library.
``StreamCodeLibrary`` builds it with `stages.build` instead: Numba's O3, the
same passes and flags, then the post-O3 stages on the optimized module
(`post_o3/stages.py`), before machine code is generated. It keeps the
rewritten text for `stream_report` (Numba's `inspect_llvm` shows the module
only after the backend has changed it in place) and the text before
optimization, to compile for other targets (`cross_target.py`, which builds
it with the same `stages.build`).

`stream_code_libraries` makes Numba create such libraries while it compiles
a streamjit kernel, so the rewrite reaches exactly the code compiled for
streamjit kernels and, with ``cache=True``, the cached object code is the
rewritten one.
"""

import contextlib

from numba.core.compiler_lock import global_compiler_lock

from ..numba_internals.codegen import PARFOR_WORKER_PREFIX, NumbaCodeLibrary, library_class, set_library_class
from ..protocol.targets import Target
from .o3 import host_machine, timing_records
from .stages import build


class StreamCodeLibrary(NumbaCodeLibrary):
    """A JIT code library whose final module gets non-temporal stores."""

    streamed_llvm_ir = None
    # the linked module before optimization (cross_target.py compiles it for other machines)
    unoptimized_module = None
    # the name of the kernel being compiled (`stream_code_libraries`): only
    # its own library gets the stages that change code Numba shares; None
    # for a kernel that names nothing, whose code is numba.njit's
    kernel_name = None

    # the assembly, emitted once (`get_asm_str`); Numba's own cache loads keep theirs here too
    cached_asm = None

    @property
    def unoptimized_llvm_ir(self):
        """The linked module before optimization, as text (None if unknown)."""
        return None if self.unoptimized_module is None else str(self.unoptimized_module)

    def optimize_final_module(self):
        # (a clone is built, as cross_target.py builds one for the host's
        # triple: the same code, whatever order linking left the uses in)
        self.unoptimized_module = self.final_module
        self.final_module, self.streamed_llvm_ir = build(
            self.unoptimized_module.clone(), host_machine(self), Target(), self.name, code=self._code(),
            record=timing_records(self))

    def get_asm_str(self):
        """The assembly of the final module, emitted on the first call only:
        each emission runs code generation's IR passes (CodeGenPrepare) on the
        module in place, so Numba's own method shows other register choices
        at each call, and `inspect_asm`, the stream report and the on-disk
        cache each ask for it."""
        if self.cached_asm is None:
            self.cached_asm = super().get_asm_str()
        return self.cached_asm

    def _code(self):
        """What this library holds, for the post-O3 stages: the kernel's own
        code, one of its prange workers (Numba names their libraries after
        the worker function), or a helper Numba shares. A kernel that names
        nothing to stream has no code of its own: the stages that change
        unmarked code (libmvec, the array pool) leave it numba.njit's."""
        if self.kernel_name is None:
            return "shared"
        if self.name == self.kernel_name:
            return "kernel"
        return "worker" if self.name.startswith(PARFOR_WORKER_PREFIX) else "shared"


@contextlib.contextmanager
def stream_code_libraries(codegen, kernel_name):
    """While compiling the streamjit kernel ``kernel_name`` (its qualified
    name, which Numba names its library after; None for a kernel that names
    nothing to stream, see `StreamCodeLibrary._code`), every code library the
    codegen creates is a `StreamCodeLibrary`: the kernel's own, and those
    Numba makes on the way, such as the separate gufunc functions of
    `prange` loops (`parallel=True`), so the rewrite reaches every function
    that holds a streamed store. Libraries without marked accesses come out
    unchanged. Numba keeps the libraries of its internal helpers (the
    allocator of arrays, ``np.copy``) and links them into later `numba.njit`
    compiles too, so stages that change unmarked code (``array_pool``) run
    on the kernel's own library only, where the helpers are linked in.
    Held under Numba's compiler lock, so no other compile sees the switch."""
    with global_compiler_lock:
        previous, previous_name = library_class(codegen), StreamCodeLibrary.kernel_name
        set_library_class(codegen, StreamCodeLibrary)
        StreamCodeLibrary.kernel_name = kernel_name
        try:
            yield
        finally:
            set_library_class(codegen, previous)
            StreamCodeLibrary.kernel_name = previous_name
