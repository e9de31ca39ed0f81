"""Delete the calls that kept the peeled head loops scalar.

The head loop in front of each aligned loop holds a call to an opaque
function (`protocol/keep_scalar.py` says why), so LLVM's vectorizer leaves
it scalar. The call has done its work once O3 is over; this stage deletes
it and its declaration, before machine code is generated, so it costs
nothing at run time.
"""

from ..protocol.keep_scalar import MARKER


def run(module, target):
    """Remove every call to the marker, and its declaration."""
    if not module.declares(MARKER):
        return False
    for function in module.functions:
        for block in function.blocks:
            block.insts = [inst for inst in block.insts if inst.callee != MARKER]
    module.remove_declaration(MARKER)
    return True
