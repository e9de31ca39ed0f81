"""``numba.stencil``'s ``StencilFunc``: its contexts, and its loop nest
built but not compiled.

``StencilFunc._stencil_wrapper`` types the kernel, makes its relative
indices absolute, writes the loop skeleton, splices the kernel's IR into it
and compiles the result with ``compiler.compile_ir``, with no parameter for
another pipeline. `loop_nest` runs it with ``compiler.compile_ir`` replaced
by a capture (under Numba's compiler lock, so no other compile sees it).
"""

import contextlib

from numba.core import compiler
from numba.core.compiler_lock import global_compiler_lock
from numba.stencils.stencil import StencilFunc


def stencil_func(numba_stencil, mode, options):
    """A new ``StencilFunc`` of ``numba_stencil``'s kernel (what
    ``numba.stencil(mode, **options)`` made) with other ``options``."""
    return StencilFunc(numba_stencil.kernel_ir, mode, options)


def typing_context(stencil_func):
    """The typing context ``stencil_func`` (a ``StencilFunc``) compiles with."""
    return stencil_func._typingctx


def target_context(stencil_func):
    """The target context ``stencil_func`` compiles with."""
    return stencil_func._targetctx


@contextlib.contextmanager
def compile_ir_captured():
    """While active, ``compiler.compile_ir`` appends ``(func_ir, argument
    types)`` to the list this gives, and compiles nothing."""
    captured = []

    def capture(typingctx, targetctx, func_ir, args, *rest, **options):
        captured.append((func_ir, args))

    with global_compiler_lock:
        original = compiler.compile_ir
        compiler.compile_ir = capture
        try:
            yield captured
        finally:
            compiler.compile_ir = original


def loop_nest(stencil_func, out_type, return_type, typemap, calltypes, argtys):
    """``(func_ir, argument types)``: ``stencil_func``'s loop nest for the
    kernel's typing (``stencil_func.get_return_type(argtys)``), with the
    output a parameter of type ``out_type``, not compiled."""
    with compile_ir_captured() as captured:
        # (the first argument, `result`, only says whether the output is a parameter)
        stencil_func._stencil_wrapper(out_type, None, return_type, typemap, calltypes, *argtys, out_type)
    (func_ir, loop_types), = captured
    return func_ir, loop_types
