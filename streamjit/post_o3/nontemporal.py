"""Make the marked stores and loads of an optimized module non-temporal.

Runs on the final LLVM module *after* Numba's O3 pipeline. Attaching
`!nontemporal` earlier stops the loop vectorizer (LLVM asks whether an
under-aligned vector NT store is legal, and it is not), which yields one slow
scalar NT store per element. So streamed accesses are only *marked* during
lowering (`protocol/markers.py`); once the vectorizer has widened them and
AlignmentFromAssumptions has raised their alignment from the `llvm.assume`
placed before the aligned loop, this stage attaches `!nontemporal` to every
marked vector store or load whose alignment covers its width (a misaligned
vector NT store faults; an NT load needs it too, `vmovntdqa`).

Marked stores that stayed scalar because the aligned loop did not vectorize
become scalar NT stores (`movnti`/`movntss`/`movntsd`), which have no
alignment requirement, where their marker allows their item size (the
machine profile's ``scalar_nt_bytes`` row, `protocol.markers.store_marker`: 32-bit
`movnti` streams ran 0.4x plain stores on an Intel Xeon VM; measured per CPU
by `bench/scalar_nt_stores.py`; floats and doubles go through an integer
register as `movnti` where x86 has no scalar FP NT store, see `_movnti`). In
a function that does get vector NT stores, its scalar marked stores are the
vectorizer's remainder iterations, which write part of a cache line at the
end of each row: as NT stores those partial lines cost a memory transaction
each (a 3-D stencil with 400-element rows ran 0.92x instead of 1.05x the
plain loop), so there they stay plain. Scalar loads have no non-temporal
form and stay as they are; vector loads become non-temporal only where the
machine profile says so (on write-back memory `vmovntdqa` is an ordinary
load on most CPUs, and cost 20% on the Intel Xeon VM of
`bench/README.md`). Scalable (SVE) vectors need only element alignment for
`stnt1`/`ldnt1`.
"""

import llvmlite.binding as llvm

from ..protocol.markers import (MOVNTI_ASM, STREAM_LOAD_SCOPE, STREAM_STORE_SCOPE, parse_load_marker,
                                parse_store_marker)
from ..llvm_text import build
from ..llvm_text.module import ELEMENT_BYTES, vector_shape

# Vector NT accesses exist for 16-byte (SSE, NEON q) registers and wider.
_MIN_VECTOR_BYTES = 16
_SCALAR_TYPES = ("float", "double", "i32", "i64")
# the integer register and movnti suffix for each floating-point type
_INTEGER = {"float": ("i32", "l"), "double": ("i64", "q")}


def _streamable(inst, scalar_bytes):
    """Whether a marked access may be emitted non-temporal: aligned vectors,
    and scalar stores of the item sizes in ``scalar_bytes``."""
    if inst.type in _SCALAR_TYPES:
        return inst.opcode == "store" and ELEMENT_BYTES[inst.type] in scalar_bytes and \
            inst.align >= ELEMENT_BYTES[inst.type]
    shape = vector_shape(inst.type)
    if shape is None:
        return False
    scalable, lanes, element = shape
    element = ELEMENT_BYTES.get(element, 0)
    if scalable:  # SVE's stnt1/ldnt1 need element alignment only
        return element > 0 and inst.align >= element
    return lanes * element >= _MIN_VECTOR_BYTES and inst.align >= min(lanes * element, 64)


def _movnti(function, inst):
    """A scalar float/double store as ``movnti`` of its bits (inline asm that
    writes through the pointer, keeping the store's scope for the report)."""
    integer, suffix = _INTEGER[inst.type]
    bits = function.new_name("nti")
    return [build.cast(bits, "bitcast", f"{inst.type} {inst.value}", integer),
            build.call(None, "void", f'{MOVNTI_ASM}{suffix} $1, $0", "=*m,r,~{{memory}}"',
                       [f"ptr elementtype({integer}) {inst.pointer}", f"{integer} {bits}"], tail=inst.tail)]


def run(module, target):
    """Attach ``!nontemporal`` to the streamable marked accesses, per function."""
    # loads only where their marker allows non-temporal loads, scalar stores where theirs allows
    # scalar NT stores (the machine profile's choices)
    stores = module.marked_scope_lists(STREAM_STORE_SCOPE)
    scalar_bytes = {i: parse_store_marker(marker)[1] for i, marker in stores.items()}
    lists = {**stores,
             **{i: m for i, m in module.marked_scope_lists(STREAM_LOAD_SCOPE).items() if parse_load_marker(m)[2]}}
    if not lists:
        return False
    changed = False
    for function in module.functions:
        accesses = [(block, k, inst) for block, k, inst in function.instructions()
                    if inst.opcode in ("store", "load") and inst.scope() in lists and inst.align is not None]
        # (a function linked in from another streamjit library may already
        # have its vector stores non-temporal)
        vector_stores = any(inst.opcode == "store" and inst.type not in _SCALAR_TYPES and _streamable(inst, ())
                            for _, _, inst in accesses)
        for block, k, inst in reversed(accesses):  # (from the last, so a replacement moves no index still to come)
            # (scalar stores only where the function has no vector NT store: see the module doc)
            if "nontemporal" in inst.metadata or not _streamable(
                    inst, () if vector_stores else scalar_bytes.get(inst.scope(), ())):
                continue
            if inst.opcode == "store" and inst.type in _INTEGER and target.fp_through_integers:
                llvm.initialize_native_asmparser()  # (Numba's JIT does not; the inline asm needs it)
                block.insts[k:k + 1] = _movnti(function, inst)
            else:
                block.insts[k] = inst.with_metadata("nontemporal", module.nontemporal_node())
            changed = True
    return changed
