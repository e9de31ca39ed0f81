"""A `StreamWarning` for every array named in ``stream_stores`` that ends
with no streamed store.

Runs after Numba's lowering, when the optimized module exists: whether a
store became a non-temporal store is only known there (the loop may not
have vectorized, the target may have no scalar non-temporal store), so the
check reads the code, as `stream_report` does, not the plan. The warning
gives the reasons the passes recorded (`StreamResult.notes`) and is shown
at the user's kernel. Arrays streamed under ``stream_stores=True`` are not
warned about: the user did not name them, and the report notes say why.
"""

import re

import llvmlite.binding as llvm

from ..errors import warn_in_kernel
from ..plan import LOOP_NOTE, METADATA_KEY
from ..report import COLUMNS, PARFOR_BODY, ArrayReport, count_marked_stores, function_body


def _reasons(result, name, stores):
    """Why none of ``stores`` (an `ArrayReport` of the marked stores) streams."""
    notes = [n for n in result.notes.get(name, []) if not n.endswith(LOOP_NOTE) and " stored by " not in n]
    if stores.nt_scalar_stores:
        notes.append("its aligned loop did not vectorize, and this target has no scalar non-temporal store")
    elif stores.plain_stores:
        notes.append("its aligned loop did not vectorize to full-width aligned vector stores")
    return notes or ["no store to it could be aligned to a full vector"]


def run_pass(state):
    options, result = state.stream_options, state.metadata.get(METADATA_KEY)
    if result is None or not isinstance(options.stream_stores, tuple):
        return False
    llvm_text = getattr(state.library, "streamed_llvm_ir", None) or ""
    names = [state.cr.fndesc.mangled_name] + PARFOR_BODY.findall(llvm_text)
    functions = "".join(function_body(llvm_text, n, lambda n: rf'^define [^\n]*@"?{n}"?\(', "\n}\n") for n in names)
    x86 = llvm.get_process_triple().startswith(("x86_64", "i686"))
    for name in options.stream_stores:
        if name not in result.streamed_stores and name not in result.notes:
            continue  # never stored: `accesses.py` said so
        marked = [count_marked_stores(functions, llvm_text, n) for n in result.marked_as(name)]
        stores = ArrayReport(**{c: sum(getattr(r, c) for r in marked) for c in COLUMNS})
        # vector NT stores always reach the machine; scalar ones only on x86
        # (`movnti`, `movntsd`; `nontemporal.py` sends floats through `movnti`)
        if name in result.streamed_stores and (stores.nt_vector_stores or stores.nt_scalar_stores and x86):
            continue
        reasons = _reasons(result, name, stores)
        line = next((int(m.group(1)) for m in map(re.compile(r"^line (\d+):").match, reasons) if m), None)
        warn_in_kernel(state.func_id, f"stream_stores names '{name}', but no store to it is streamed in "
                       f"{state.func_id.func_qualname}: " + "; ".join(reasons), line)
    return False
