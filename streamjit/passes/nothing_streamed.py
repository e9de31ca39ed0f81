"""A `StreamWarning` for every array named in ``stream_stores`` that ends
with no streamed store.

Runs after Numba's lowering, when the optimized module exists: whether a
store became a non-temporal store is only known there (the loop may not
have vectorized, the target may have no scalar non-temporal store), so the
check reads the code, as `stream_report` does, not the plan: the records
the post-O3 stages left, counted by `llvm_text/counts.py`. The warning gives
the reasons the passes recorded (`StreamResult.notes`) and is shown
at the user's kernel. Arrays streamed under ``stream_stores=True`` are not
warned about: the user did not name them, and the report notes say why.
"""

import re

from ..errors import given_in_kernel, warn_in_kernel
from ..plan import LOOP_NOTE, METADATA_KEY, plain_scalar_note
from ..llvm_text.counts import count_marked_stores, kernel_functions
from ..llvm_text.module import Module
from ..protocol.targets import Target

# The `StreamFacts` fields this pass reads, sets and leaves stale (`passes/analysis/facts.py`).
REQUIRES = ("options",)
PRODUCES = ()
INVALIDATES = ()
ANALYSIS_ONLY = True  # (it reads the IR and changes nothing in it)


def _reasons(result, name, stores, plain_scalar):
    """Why none of ``stores`` (an `ArrayReport` of the marked stores) streams; ``plain_scalar``:
    the machine profile's reason to leave its scalar stores plain, or None."""
    notes = [n for n in result.notes.get(name, []) if not n.endswith(LOOP_NOTE) and " stored by " not in n]
    if stores.nt_scalar_stores:
        notes.append("its aligned loop did not vectorize, and this target has no scalar non-temporal store")
    elif stores.plain_stores:
        why = result.vector_hints.get(name, []) + ([plain_scalar] if plain_scalar else [])
        notes.append("its aligned loop did not vectorize to full-width aligned vector stores"
                     + (f", and {' and '.join(why)}" if why else ""))
    return notes or ["no store to it could be aligned to a full vector"]


_AT_LINE = re.compile(r"^line (\d+): ")


def _given_at_its_line(func_id, reason):
    """Whether ``reason`` ("line N: text") was warned about as it stands, at line N."""
    found = _AT_LINE.match(reason)
    return found is not None and given_in_kernel(func_id, reason[found.end():], int(found.group(1)))


def run_pass(state):
    """Warn (`StreamWarning`, at the kernel's line) for each array named in ``stream_stores`` none
    of whose stores reached the final module as non-temporal stores, with the reasons the report
    noted. Changes nothing in the IR."""
    options, result = state.stream_facts.options, state.metadata.get(METADATA_KEY)
    if result is None or not isinstance(options.stream_stores, tuple):
        return False
    # (the module as the post-O3 stages left it, read into the same records; a
    # library keeps its text, not the records, which take several times the memory)
    module = Module(getattr(state.library, "streamed_llvm_ir", None) or "")
    functions = kernel_functions(module, state.cr.fndesc.mangled_name)
    x86 = Target().arch == "x86"
    for name in options.stream_stores:
        if name not in result.streamed_stores and name not in result.notes:
            continue  # never stored: `accesses.py` said so
        stores = count_marked_stores(functions, module, *result.marked_as(name))
        # vector NT stores always reach the machine; scalar ones only on x86
        # (`movnti`, `movntsd`; `nontemporal.py` sends floats through `movnti`)
        if name in result.streamed_stores and (stores.nt_vector_stores or stores.nt_scalar_stores and x86):
            continue
        # (a reason already shown as a warning of its own, at its line, is not repeated)
        plain_scalar = plain_scalar_note(getattr(state.typemap.get(name), "dtype", None), options.machine.scalar_nt_bytes)
        reasons = [r for r in _reasons(result, name, stores, plain_scalar) if not _given_at_its_line(state.func_id, r)]
        if not reasons:
            continue
        line = next((int(m.group(1)) for m in map(_AT_LINE.match, reasons) if m), None)
        warn_in_kernel(state.func_id, f"stream_stores names '{name}', but no store to it is streamed in "
                       f"{state.func_id.func_qualname}: " + "; ".join(reasons), line)
    return False
