"""A ``memset`` LLVM made of a streamed loop becomes a streamed fill.

LLVM's loop idiom pass turns a loop that stores one value into a call to
``memset`` where it can prove the bytes: a zero of any type, any value of a
byte array. Done to an aligned loop, the streamed stores are gone (a zero
fill ran at the speed of a plain one), but the call keeps the loop's marks
(``!alias.scope`` of a streamed store, `protocol/markers.py`) and the
alignment the peel proved (``ptr align 64``). This stage replaces each such
marked ``memset`` with a call to a fill of our own, defined once in the
module: full-width aligned vector stores, made non-temporal, then the bytes
left over. The loop's fence after the nest still follows it. Numba's own
``memset`` calls, and those of the plain path (the peeled head, a kernel
below its threshold), carry no mark and stay ``memset``: in cache it is the
faster fill.
"""

from ..protocol.markers import FILL, STREAM_STORE_SCOPE
from ..llvm_text import build
from ..llvm_text.module import argument_align

MEMSET = "llvm.memset.p0.i64"
_MIN_BYTES = 16


def _definition(width, nt_id):
    """The fill: ``width``-byte non-temporal vector stores over the aligned
    bytes (the pointer is ``width``-aligned), then byte stores."""
    vec = f"<{width} x i8>"
    return f"""
define internal void @{FILL}.{width}(ptr align {width} %p, i8 %v, i64 %n) {{
entry:
  %one = insertelement {vec} poison, i8 %v, i64 0
  %all = shufflevector {vec} %one, {vec} poison, <{width} x i32> zeroinitializer
  %whole = and i64 %n, -{width}
  br label %vector.test
vector.test:
  %i = phi i64 [ 0, %entry ], [ %i.next, %vector ]
  %more = icmp ult i64 %i, %whole
  br i1 %more, label %vector, label %bytes.test
vector:
  %q = getelementptr i8, ptr %p, i64 %i
  store {vec} %all, ptr %q, align {width}, !nontemporal !{nt_id}
  %i.next = add i64 %i, {width}
  br label %vector.test
bytes.test:
  %j = phi i64 [ %whole, %vector.test ], [ %j.next, %bytes ]
  %left = icmp ult i64 %j, %n
  br i1 %left, label %bytes, label %done
bytes:
  %r = getelementptr i8, ptr %p, i64 %j
  store i8 %v, ptr %r, align 1
  %j.next = add i64 %j, 1
  br label %bytes.test
done:
  ret void
}}"""


def _fill_width(inst, marked):
    """The fill width for a marked, aligned ``memset`` (0: leave it)."""
    if inst.callee != MEMSET or inst.scope() not in marked or inst.arguments[3:] != ["i1 false"] \
            or inst.pointer is None:
        return 0
    align = argument_align(inst.arguments[0])
    return min(align, 64) if align and align >= _MIN_BYTES else 0


def run(module, target):
    """Make every marked, aligned ``memset`` a call to a streamed fill."""
    marked = set(module.marked_scope_lists(STREAM_STORE_SCOPE))
    if not marked or not module.declares(MEMSET):
        return False
    widths = set()
    for function in module.functions:
        for block, k, inst in function.instructions():
            width = _fill_width(inst, marked)
            if width:
                widths.add(width)
                value, size = inst.arguments[1], inst.arguments[2]
                block.insts[k] = build.call(None, "void", f"@{FILL}.{width}", [f"ptr {inst.pointer}", value, size],
                                            tail=inst.call_attributes + inst.tail)
    if not widths:
        return False
    nt_id = module.nontemporal_node()
    module.append("".join(_definition(w, nt_id) for w in sorted(widths)))
    return True
