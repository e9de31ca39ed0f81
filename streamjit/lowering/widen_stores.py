"""Join narrow streamed vector stores into one full-width vector store.

The loop vectorizer picks its width from the widest type in the loop, so a
loop storing bytes computed from doubles (``out[i] = a[i] > 0.5``, a boolean
output) stores ``<4 x i8>`` vectors: four bytes, too narrow for any
non-temporal store instruction (they need 16 bytes or more), so nothing
streams. Unrolled, though, the aligned loop writes such vectors back to back
(``p``, ``p+4``, ``p+8``, ``p+12``) from an aligned ``p``. This pass, run on
the optimized module before `nontemporal.py`, joins a run of marked stores
of one vector type on consecutive lines, to consecutive addresses from one
base (going up, or down in a reversed loop), into a single store of their
concatenation in address order (built by ``shufflevector``), when the
lowest is aligned to the joined width and that width is at least 16 bytes:

    store <4 x i8> %a, ptr %p, align 16      %ab = shufflevector %a, %b, <0..7>
    store <4 x i8> %b, ptr %p+4              %cd = shufflevector %c, %d, <0..7>
    store <4 x i8> %c, ptr %p+8        ->    %abcd = shufflevector %ab, %cd, <0..15>
    store <4 x i8> %d, ptr %p+12             store <16 x i8> %abcd, ptr %p, align 16

Nothing else runs between the stores, so the joined store writes the same
bytes at the same point; `nontemporal.py` then streams it like any other.
"""

import re

from .llvm_text import ELEMENT_BYTES, constant_offsets
from .markers import STREAM_STORE_SCOPE, marked_scope_lists

_STORE = re.compile(r"^(\s*)store <(\d+) x ([^>]+)> (%[\w.\-]+), ptr (%[\w.\-]+), align (\d+)(.*!alias\.scope !(\d+).*)$")
_MIN_BYTES = 16
_MAX_BYTES = 64


def _joinable(lines, start, offsets, marked):
    """The marked stores from line ``start`` on that can be joined, lowest
    address first (none, or one: nothing to join). The run goes up in
    memory, or down (a reversed loop's stores); its lowest store must be
    aligned to the joined width."""
    first = _STORE.match(lines[start])
    if not first or int(first.group(8)) not in marked or "!nontemporal" in first.group(7):
        return []
    size = int(first.group(2)) * ELEMENT_BYTES.get(first.group(3).strip(), 0)
    if not size or size >= _MIN_BYTES:
        return []
    base, at = offsets.get(first.group(5), (first.group(5), 0))
    run = [first]
    for step in (size, -size):
        while start + len(run) < len(lines) and size * len(run) < _MAX_BYTES:
            m = _STORE.match(lines[start + len(run)])
            if not m or (m.group(2), m.group(3)) != (first.group(2), first.group(3)) \
                    or int(m.group(8)) not in marked or offsets.get(m.group(5)) != (base, at + step * len(run)):
                break
            run.append(m)
        if len(run) > 1:
            break
    count = 1 << (len(run).bit_length() - 1)  # a power of two, for the concatenation tree
    # (the first `count` lines; their lowest address is the first going up, the last going down)
    while count > 1 and int(run[0 if step > 0 else count - 1].group(6)) < size * count:
        count //= 2
    joined = run[:count] if step > 0 else run[:count][::-1]
    return joined if size * count >= _MIN_BYTES else []


def widen_streamed_stores(llvm_text):
    """Return ``llvm_text`` with runs of narrow marked vector stores joined."""
    marked = set(marked_scope_lists(llvm_text, STREAM_STORE_SCOPE))
    if not marked:
        return llvm_text
    lines = llvm_text.split("\n")
    offsets = constant_offsets(lines)
    out, k, serial = [], 0, 0
    while k < len(lines):
        stores = _joinable(lines, k, offsets, marked)
        if not stores:
            out.append(lines[k])
            k += 1
            continue
        indent, element, lanes = stores[0].group(1), stores[0].group(3), int(stores[0].group(2))
        values = [s.group(4) for s in stores]
        while len(values) > 1:
            joined = []
            for a, b in zip(values[::2], values[1::2]):
                name = f"%streamjit.widen.{serial}"
                serial += 1
                mask = ", ".join(f"i32 {i}" for i in range(2 * lanes))
                out.append(f"{indent}{name} = shufflevector <{lanes} x {element}> {a}, <{lanes} x {element}> {b}, "
                           f"<{2 * lanes} x i32> <{mask}>")
                joined.append(name)
            values, lanes = joined, 2 * lanes
        lowest = stores[0]
        out.append(f"{indent}store <{lanes} x {element}> {values[0]}, ptr {lowest.group(5)}, align {lowest.group(6)}"
                   f"{lowest.group(7)}")
        k += len(stores)
    return "\n".join(out) if serial else llvm_text
