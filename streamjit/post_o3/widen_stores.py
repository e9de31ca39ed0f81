"""Join narrow streamed vector stores into one full-width vector store.

The loop vectorizer picks its width from the widest type in the loop, so a
loop storing bytes computed from doubles (``out[i] = a[i] > 0.5``, a boolean
output) stores ``<4 x i8>`` vectors: four bytes, too narrow for any
non-temporal store instruction (they need 16 bytes or more), so nothing
streams. Unrolled, though, the aligned loop writes such vectors back to back
(``p``, ``p+4``, ``p+8``, ``p+12``) from an aligned ``p``. This stage, run
before `nontemporal.py`, joins a run of marked stores of one vector type
that follow each other in a block (debug records aside), to consecutive
addresses from one base (going up, or down in a reversed loop), into a
single store of their concatenation in address order (built by
``shufflevector``), when the lowest is aligned to the joined width and that
width is at least 16 bytes:

    store <4 x i8> %a, ptr %p, align 16      %ab = shufflevector %a, %b, <0..7>
    store <4 x i8> %b, ptr %p+4              %cd = shufflevector %c, %d, <0..7>
    store <4 x i8> %c, ptr %p+8        ->    %abcd = shufflevector %ab, %cd, <0..15>
    store <4 x i8> %d, ptr %p+12             store <16 x i8> %abcd, ptr %p, align 16

Nothing else runs between the stores, so the joined store writes the same
bytes at the same point; `nontemporal.py` then streams it like any other.

A value converted from floating point to a narrow integer (``fptoui``,
``fptosi``) is poison where it is out of range, so LLVM lowers it as it
likes: a narrow vector as a 32-bit conversion and a *saturating* pack
(``vcvttpd2dq`` + ``vpackusdw``: -49.5 to uint16 gives 0), where Numba's
scalar code and its full-width vector loop convert to 32 bits and
*truncate* (``cvttsd2si`` + a 16-bit store; ``vcvttpd2dq`` + ``vpmovdw``),
keeping the wrapped value NumPy gives (65487). So on x86 every narrow
marked store, joined or not (a remainder's), takes such a value as that conversion
spelled out (``fptosi`` to ``i32``, ``i64`` for an unsigned ``i32``, then
``trunc``), defined for every input, and stores the bytes the scalar code
stores.
"""

from ..protocol.markers import STREAM_STORE_SCOPE
from ..llvm_text import build
from ..llvm_text.module import LOCAL, type_bytes, vector_shape

_MIN_BYTES = 16
_MAX_BYTES = 64
# (conversion, integer element): the wider signed integer x86 converts through
_CONVERTED_THROUGH = {("fptoui", "i8"): "i32", ("fptosi", "i8"): "i32", ("fptoui", "i16"): "i32",
                      ("fptosi", "i16"): "i32", ("fptoui", "i32"): "i64"}


def _narrow_marked_store(inst, marked):
    """The bytes of a marked, not yet non-temporal, fixed-width vector store
    of a named value narrower than a non-temporal store (0: not one)."""
    if inst.opcode != "store" or inst.scope() not in marked or "nontemporal" in inst.metadata \
            or not LOCAL.fullmatch(inst.value or "") or inst.pointer is None or inst.align is None:
        return 0
    shape = vector_shape(inst.type)
    size = type_bytes(inst.type) if shape and not shape[0] else 0
    return size if size < _MIN_BYTES else 0


def _joinable(block, start, offsets, marked):
    """(the marked stores from ``block.insts[start]`` on that can be joined,
    lowest address first; the index after the last) or ([], start): none,
    or one, so nothing to join. The run goes up in memory, or down (a
    reversed loop's stores); its lowest store must be aligned to the joined
    width."""
    first = block.insts[start]
    size = _narrow_marked_store(first, marked)
    if not size:
        return [], start
    base, at = offsets.get(first.pointer, (first.pointer, 0))
    # (debug records between the stores run nothing)
    following = [(k, i) for k, i in enumerate(block.insts[start + 1:], start + 1) if i.is_instruction]
    for step in (size, -size):
        run, ends = [first], [start + 1]
        for k, inst in following:
            if size * len(run) >= _MAX_BYTES or inst.type != first.type or not _narrow_marked_store(inst, marked) \
                    or offsets.get(inst.pointer) != (base, at + step * len(run)):
                break
            run.append(inst)
            ends.append(k + 1)
        if len(run) > 1:
            break
    count = 1 << (len(run).bit_length() - 1)  # a power of two, for the concatenation tree
    # (the first `count` stores; their lowest address is the first going up, the last going down)
    while count > 1 and run[0 if step > 0 else count - 1].align < size * count:
        count //= 2
    if size * count < _MIN_BYTES:
        return [], start
    return (run[:count] if step > 0 else run[:count][::-1]), ends[count - 1]


def _spelled_out_conversions(function, stores, target):
    """(the instructions, the values to join): on x86, each stored value
    converted from floating point to a narrow integer, converted through the
    wider integer x86 converts it through, then truncated (see the module
    doc). Other targets' scalar code converts as their vector code does
    (AArch64's ``fcvtzu`` saturates: -49.5 to uint16 gives 0 in both), so
    there the conversions stay."""
    definitions = function.definitions()
    insts, values = [], []
    for store in stores:
        conversion, value = definitions.get(store.value), store.value
        _, lanes, element = vector_shape(store.type)
        wider = target.arch == "x86" and _CONVERTED_THROUGH.get((getattr(conversion, "opcode", None), element))
        if wider:
            source = conversion.operands[0].split(" to ")[0]
            through = function.new_name("convert")
            value = function.new_name("truncate")
            insts += [build.cast(through, "fptosi", source, f"<{lanes} x {wider}>"),
                      build.cast(value, "trunc", f"<{lanes} x {wider}> {through}", store.type)]
        values.append(value)
    return insts, values


def _joined(function, stores, target):
    """The instructions that store ``stores`` (lowest address first; one or
    more) as one."""
    _, lanes, element = vector_shape(stores[0].type)
    insts, values = _spelled_out_conversions(function, stores, target)
    while len(values) > 1:
        joined = []
        for a, b in zip(values[::2], values[1::2]):
            name = function.new_name("widen")
            insts.append(build.shuffle(name, f"<{lanes} x {element}>", a, b, range(2 * lanes)))
            joined.append(name)
        values, lanes = joined, 2 * lanes
    lowest = stores[0]
    insts.append(build.store(f"<{lanes} x {element}>", values[0], lowest.pointer, lowest.align, lowest.tail))
    return insts


def _rewritten_run(function, block, k, offsets, marked, target):
    """(the records that replace the narrow marked stores from
    ``block.insts[k]`` on, the index after them), or None."""
    if not _narrow_marked_store(block.insts[k], marked):
        return None
    stores, end = _joinable(block, k, offsets, marked)
    if not stores:  # (alone: its conversion, if any, spelled out)
        stores, end = [block.insts[k]], k + 1
    replacement = _joined(function, stores, target)
    if len(replacement) == 1:  # (alone, and no conversion to spell out)
        return None
    return replacement + [i for i in block.insts[k:end] if not i.is_instruction], end


def run(module, target):
    """Join the runs of narrow marked vector stores, per function; spell out
    the conversions of the values they store."""
    marked = set(module.marked_scope_lists(STREAM_STORE_SCOPE))
    if not marked:
        return False
    changed = False
    for function in module.functions:
        if not any(_narrow_marked_store(inst, marked) for _, _, inst in function.instructions()):
            continue
        offsets = function.constant_offsets()
        for block in function.blocks:
            changed |= block.rewrite_runs(lambda k: _rewritten_run(function, block, k, offsets, marked, target))
    return changed
