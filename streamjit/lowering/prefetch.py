"""Software prefetch for streamed loads: the CPU's asynchronous load stage.

A streamed load is consumed once; what hides its memory latency is a
prefetch issued far enough ahead, the load for a later iteration started
now (TVM's asynchronous pipeline stage, on a CPU). This pass runs on the
final LLVM module *after* O3, so the prefetches neither block nor distort
the loop vectorizer: before every marked load whose scope carries a
distance D > 0 (`markers.py`), it inserts

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

import re

from ..machine import PREFETCH_HINTS
from .llvm_text import constant_offsets
from .markers import STREAM_LOAD_SCOPE, marked_scope_lists, parse_load_marker

_LINE_BYTES = 64
_LOAD = re.compile(r"^\s*%[\w.\-]+ = load [^\n]*?, ptr (%[\w.\-]+)[^\n]*!alias\.scope !(\d+)")
_LABEL = re.compile(r"^[\w.\-]+:")
_PREFETCH_NAME = "streamjit.prefetch."
PREFETCH_DECLARATION = "declare void @llvm.prefetch.p0(ptr nocapture readonly, i32 immarg, i32 immarg, i32 immarg)"


def insert_stream_prefetches(llvm_text):
    """Return ``llvm_text`` with prefetches ahead of marked, prefetchable loads."""
    plans = {i: parse_load_marker(m) for i, m in marked_scope_lists(llvm_text, STREAM_LOAD_SCOPE).items()}
    prefetched = {i: (d, PREFETCH_HINTS[h]) for i, (h, d, _) in plans.items() if d and PREFETCH_HINTS.get(h) is not None}
    if not prefetched:
        return llvm_text
    lines = llvm_text.split("\n")
    offsets = constant_offsets(lines)
    out, seen, count, done = [], set(), 0, False
    for n, line in enumerate(lines):
        if line.startswith("define "):
            end = next((k for k in range(n, len(lines)) if lines[k] == "}"), len(lines))
            done = any("@llvm.prefetch." in body for body in lines[n:end])
        if _LABEL.match(line) or line.startswith("define "):
            seen = set()
        m = None if done else _LOAD.match(line)
        distance, locality = prefetched.get(int(m.group(2)), (0, None)) if m else (0, None)
        if distance:
            base, offset = offsets.get(m.group(1), (m.group(1), 0))
            line_key = (base, (offset + distance) // _LINE_BYTES, locality)
            if line_key not in seen:
                seen.add(line_key)
                name = f"%{_PREFETCH_NAME}{count}"
                count += 1
                out.append(f"  {name} = getelementptr i8, ptr {m.group(1)}, i64 {distance}")
                out.append(f"  call void @llvm.prefetch.p0(ptr {name}, i32 0, i32 {locality}, i32 1)")
        out.append(line)
    if not count:
        return llvm_text
    text = "\n".join(out)
    if "declare void @llvm.prefetch.p0" not in text:
        text += "\n" + PREFETCH_DECLARATION + "\n"
    return text
