"""Software prefetch for streamed loads: the CPU's asynchronous load stage.

A streamed load is consumed once; what hides its memory latency is a
prefetch issued far enough ahead, the load for a later iteration started
now (TVM's asynchronous pipeline stage, on a CPU). This stage runs on the
final LLVM module *after* O3, so the prefetches neither block nor distort
the loop vectorizer: before every marked load whose scope carries a
distance D > 0 (`protocol/markers.py`), it inserts

    %p = getelementptr i8, ptr %addr, i64 D
    call void @llvm.prefetch.p0(ptr %p, i32 0, i32 0, i32 1)   ; prefetchnta

once per cache line per array per loop iteration: loads in one block whose
addresses are constant offsets of one pointer within the same 64-byte line
(a stencil's `a[i-1]`, `a[i]`, `a[i+1]`, or the lanes of one unrolled
vector) share one prefetch. A prefetch never faults, even past the end of
the array, on x86 and AArch64 (and LLVM drops it on targets without one).

A function that already has prefetches (a ``prange`` worker rewritten in
its own library, then linked into the kernel's module and optimized again,
which renames them) is left as it is: Numba emits no prefetch of its own,
so any prefetch there is ours. (Checking for our instruction names instead
let every optimization round add another copy: four prefetches per line.)
"""

from ..protocol.markers import STREAM_LOAD_SCOPE, parse_load_marker
from ..machine.profile import PREFETCH_HINTS, line_bytes
from ..llvm_text import build

PREFETCH = "llvm.prefetch.p0"
# (`captures(none)`: how LLVM 21 and later spell `nocapture`)
PREFETCH_DECLARATION = f"declare void @{PREFETCH}(ptr readonly captures(none), i32 immarg, i32 immarg, i32 immarg)"


def _prefetched_lines(function, block, prefetched, offsets):
    """``block.insts`` with a prefetch before each marked load that is the
    first of its cache line in the block; how many were added."""
    insts, seen, added = [], set(), 0
    for inst in block.insts:
        distance, locality = prefetched.get(inst.scope(), (0, None)) if inst.opcode == "load" else (0, None)
        if distance and inst.pointer is not None:
            base, offset = offsets.get(inst.pointer, (inst.pointer, 0))
            line_key = (base, (offset + distance) // line_bytes(), locality)
            if line_key not in seen:
                seen.add(line_key)
                name = function.new_name("prefetch")
                insts += [build.byte_offset(name, inst.pointer, distance),
                          build.call(None, "void", f"@{PREFETCH}",
                                     [f"ptr {name}", "i32 0", f"i32 {locality}", "i32 1"])]
                added += 1
        insts.append(inst)
    return insts, added


def run(module, target):
    """Insert prefetches ahead of marked, prefetchable loads, per function."""
    plans = {i: parse_load_marker(m) for i, m in module.marked_scope_lists(STREAM_LOAD_SCOPE).items()}
    prefetched = {i: (d, PREFETCH_HINTS[h]) for i, (h, d, _) in plans.items() if d and PREFETCH_HINTS.get(h) is not None}
    if not prefetched:
        return False
    changed = False
    for function in module.functions:
        instructions = function.instructions()
        if any((inst.callee or "").startswith("llvm.prefetch.") for _, _, inst in instructions) or \
                not any(inst.opcode == "load" and inst.scope() in prefetched for _, _, inst in instructions):
            continue
        offsets = function.constant_offsets()
        for block in function.blocks:
            block.insts, added = _prefetched_lines(function, block, prefetched, offsets)
            changed |= bool(added)
    if changed and not module.declares(PREFETCH):
        module.append(PREFETCH_DECLARATION)
    return changed
