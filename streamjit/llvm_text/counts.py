"""What the final module's instructions do to memory: the classification
the report, the nothing-streamed check and the exit fences share.

Each record of `module.py` is one of: a store (non-temporal or plain, vector
or scalar), a scalar store made ``movnti`` (`post_o3/nontemporal.py`), a
streamed fill (`post_o3/stream_memset.py`), a masked store, a load, a prefetch, a store
fence; counted per array in an `ArrayReport`.
"""

from dataclasses import dataclass, field

from ..protocol.markers import FILL, MOVNTI_ASM, STREAM_STORE_SCOPE, parse_store_marker

# every target's store fence (`protocol/targets.emit_store_fence`)
_FENCE_CALLS = ("llvm.x86.sse.sfence", "llvm.aarch64.dmb")


@dataclass
class ArrayReport:
    """One array's accesses in a kernel's final LLVM IR, by kind (counts of
    instructions, not of executions), and the notes that say why a store or
    load was left plain."""
    nt_vector_stores: int = 0
    nt_scalar_stores: int = 0
    plain_stores: int = 0
    nt_loads: int = 0
    plain_loads: int = 0
    prefetches: int = 0
    notes: list = field(default_factory=list)


def access_kind(inst):
    """The `ArrayReport` field that counts ``inst`` (None: no array access)."""
    if inst.opcode == "store":
        nt = "nontemporal" in inst.metadata
        return "plain_stores" if not nt else "nt_vector_stores" if inst.type.startswith("<") else "nt_scalar_stores"
    if inst.opcode == "load":
        return "nt_loads" if "nontemporal" in inst.metadata else "plain_loads"
    if inst.opcode != "call":
        return None
    callee = inst.callee or ""
    if (inst.asm or "").startswith(MOVNTI_ASM):
        return "nt_scalar_stores"
    if callee.startswith(FILL + "."):
        return "nt_vector_stores"
    if callee.startswith("llvm.prefetch."):
        return "prefetches"
    if callee.startswith("llvm.masked.store."):
        return "plain_stores"
    return None


def is_nt_store(inst):
    """True when the record ``inst`` is a non-temporal store: vector or scalar, a ``movnti`` or a
    streamed fill (`access_kind`)."""
    return access_kind(inst) in ("nt_vector_stores", "nt_scalar_stores")


def is_store_fence(inst):
    """True when ``inst`` is a store fence: an LLVM ``fence``, or a call of a target's fence
    intrinsic (x86 ``sfence``, AArch64 ``dmb``)."""
    return inst.opcode == "fence" or inst.callee in _FENCE_CALLS


def count_marked_stores(functions, module, *arrays):
    """An `ArrayReport` of the stores in ``functions`` marked as streamed to
    any of ``arrays`` (the aligned loops' stores: the only ones attributable
    to an array that is not a parameter; several names where ping-pong
    variables may hold the array)."""
    lists = {i for i, marker in module.marked_scope_lists(STREAM_STORE_SCOPE).items()
             if parse_store_marker(marker)[0] in arrays}
    report = ArrayReport()
    for function in functions:
        for _, _, inst in function.instructions():
            kind = access_kind(inst) if inst.scope() in lists else None
            # (a marked masked store is the vectorizer's, never made non-temporal)
            if kind and kind.endswith("stores") and not (inst.callee or "").startswith("llvm.masked."):
                setattr(report, kind, getattr(report, kind) + 1)
    return report


def kernel_functions(module, mangled_name):
    """The kernel's function and the worker functions Numba generated for
    its ``prange`` loops (``parallel=True``), linked into the same module."""
    kernel = module.function(mangled_name)
    workers = [f for f in module.functions if f.header.startswith("define linkonce_odr ")
               and f.name.startswith("_ZN") and "__numba_parfor_gufunc" in f.name]
    return ([kernel] if kernel else []) + workers
