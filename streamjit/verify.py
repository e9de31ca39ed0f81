"""``STREAMJIT_VERIFY_EACH=1``: check the code after each step that changes
it, and name the step at fault, as Numba checks its IR after each of its
passes in its own debugging mode and LLVM's ``-verify-each`` does.

After each stream pass that rewrites Numba IR (`kernel/pipeline.py`): every block
ends in its one terminator, the blocks share one scope, and Numba's
post-processing (the control-flow graph, the variables' lifetimes) runs on
a copy. After each step of the LLVM build (`backend/stages.py`): LLVM's
verifier. Off by default: the checks cost compile time.
"""

import os

import llvmlite.binding as llvm
from numba.core.ir_utils import legalize_single_scope
from numba.core.postproc import PostProcessor

VERIFY_ENV = "STREAMJIT_VERIFY_EACH"


def verifying():
    """Whether ``STREAMJIT_VERIFY_EACH`` asks for the checks."""
    return os.environ.get(VERIFY_ENV, "0") not in ("", "0")


def _failed(what, where, error):
    return AssertionError(f"{VERIFY_ENV}: the {what} after {where} is invalid: {error}")


def verify_ir(func_ir, name):
    """Raise, naming the stream pass ``name``, if ``func_ir`` is not valid
    Numba IR. The post-processing runs on a copy: it would canonicalize the
    control-flow graph of the IR it checks."""
    try:
        for block in func_ir.blocks.values():
            block.verify()
        if not legalize_single_scope(func_ir.blocks):
            raise ValueError("its blocks have more than one scope")
        PostProcessor(func_ir.copy()).run(emit_dels=False)
    except Exception as error:
        raise _failed("Numba IR", f"stream pass {name!r}", error) from error


def verify_llvm(module, name):
    """Raise, naming the build step ``name``, if ``module`` (an llvmlite
    module, or anything whose text is LLVM IR) does not parse or verify."""
    try:
        llvm.parse_assembly(str(module)).verify()
    except RuntimeError as error:
        raise _failed("LLVM module", f"build step {name!r}", error) from error
