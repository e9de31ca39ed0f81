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
from ..lowering.markers import STREAM_STORE_SCOPE, marked_scope_lists
from ..lowering.nontemporal import MOVNTI_CALL
from ..lowering.stream_memset import FILL
from ..plan import LOOP_NOTE, METADATA_KEY
from ..report import PARFOR_BODY, function_body

_STORE = re.compile(r"^\s*store (?:volatile )?(?P<type><[^>]+>|\w+) [^\n]*!alias\.scope !(?P<scope>\d+)"
                    r"(?P<tail>[^\n]*)$", re.M)


def _stores(functions, llvm_text, name):
    """``(streamed, kinds)``: whether a store to ``name`` reaches the machine
    as non-temporal, and which kinds of marked stores there are: vector NT
    stores always do; scalar ones only as x86's ``movnti`` (integers) or,
    with AMD's SSE4A, ``movntss``/``movntsd``; elsewhere the backend emits a
    plain store (the floating-point ones go through an integer register
    there, `nontemporal.py`)."""
    lists = {i for i, n in marked_scope_lists(llvm_text, STREAM_STORE_SCOPE).items() if n == name}
    x86 = llvm.get_process_triple().startswith(("x86_64", "i686"))
    scalar_fp = x86 and llvm.get_host_cpu_features().get("sse4a", False)
    kinds = {kind for kind, call in (("scalar", MOVNTI_CALL.pattern), ("vector", r"call void @" + re.escape(FILL)))
             for m in re.finditer(r"^.*" + call + r".*!alias\.scope !(\d+).*$", functions, re.M)
             if int(m.groups()[-1]) in lists}
    for m in _STORE.finditer(functions):
        if int(m.group("scope")) not in lists:
            continue
        if "!nontemporal" not in m.group("tail"):
            kinds.add("plain")
        elif m.group("type").startswith("<"):
            kinds.add("vector")
        else:
            kinds.add("scalar" if (scalar_fp if m.group("type") in ("float", "double") else x86) else "scalar lost")
    return bool(kinds & {"vector", "scalar"}), kinds


def _reasons(result, name, kinds):
    notes = [n for n in result.notes.get(name, []) if not n.endswith(LOOP_NOTE) and " stored by " not in n]
    if "scalar lost" in kinds:
        notes.append("its aligned loop did not vectorize, and this CPU has no scalar non-temporal store for "
                     "these values")
    elif "plain" in kinds:
        notes.append("its aligned loop did not vectorize to full-width aligned vector stores")
    return notes or ["no store to it could be aligned to a full vector"]


def run_pass(state):
    options, result = state.stream_options, state.metadata.get(METADATA_KEY)
    if result is None or not isinstance(options.stream_stores, tuple):
        return False
    llvm_text = getattr(state.library, "streamed_llvm_ir", None) or ""
    names = [state.cr.fndesc.mangled_name] + PARFOR_BODY.findall(llvm_text)
    functions = "".join(function_body(llvm_text, n, lambda n: rf'^define [^\n]*@"?{n}"?\(', "\n}\n") for n in names)
    for name in options.stream_stores:
        if name not in result.streamed_stores and name not in result.notes:
            continue  # never stored: `accesses.py` said so
        streamed, kinds = _stores(functions, llvm_text, name)
        if name in result.streamed_stores and streamed:
            continue
        reasons = _reasons(result, name, kinds)
        line = next((int(m.group(1)) for m in map(re.compile(r"^line (\d+):").match, reasons) if m), None)
        warn_in_kernel(state.func_id, f"stream_stores names '{name}', but no store to it is streamed in "
                       f"{state.func_id.func_qualname}: " + "; ".join(reasons), line)
    return False
