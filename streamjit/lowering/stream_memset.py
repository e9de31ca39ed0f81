"""A ``memset`` LLVM made of a streamed loop becomes a streamed fill.

LLVM's loop idiom pass turns a loop that stores one value into a call to
``memset`` where it can prove the bytes: a zero of any type, any value of a
byte array. Done to an aligned loop, the streamed stores are gone (a zero
fill ran at the speed of a plain one), but the call keeps the loop's marks
(``!alias.scope`` of a streamed store, `markers.py`) and the alignment the
peel proved (``ptr align 64``). This pass, run on the optimized module,
replaces each such marked ``memset`` with a call to a fill of our own,
defined once in the module: full-width aligned vector stores, made
non-temporal, then the bytes left over. The loop's fence after the nest
still follows it. Numba's own ``memset`` calls, and those of the plain path
(the peeled head, a kernel below its threshold), carry no mark and stay
``memset``: in cache it is the faster fill.
"""

import re

from .markers import STREAM_STORE_SCOPE, marked_scope_lists, metadata_ids

_MEMSET = re.compile(r"^(?P<indent>\s*)(?:tail )?call void @llvm\.memset\.p0\.i64\(ptr (?:[\w()]+ )*?align (?P<align>\d+) "
                     r"(?P<ptr>%[\w.\-]+), i8 (?P<value>[^,]+), i64 (?P<size>[^,]+), i1 false\)"
                     r"(?P<tail>.*!alias\.scope !(?P<scope>\d+).*)$")
FILL = "streamjit.stream_fill"
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
}}
"""


def stream_marked_memsets(llvm_text):
    """Return ``llvm_text`` with every marked, aligned ``memset`` a streamed fill."""
    marked = set(marked_scope_lists(llvm_text, STREAM_STORE_SCOPE))
    if not marked or "@llvm.memset" not in llvm_text:
        return llvm_text
    widths = set()

    def rewrite(line):
        m = _MEMSET.match(line)
        if not m or int(m.group("scope")) not in marked or int(m.group("align")) < _MIN_BYTES:
            return line
        width = min(int(m.group("align")), 64)
        widths.add(width)
        return (f"{m.group('indent')}call void @{FILL}.{width}(ptr {m.group('ptr')}, i8 {m.group('value')}, "
                f"i64 {m.group('size')}){m.group('tail')}")

    text = "\n".join(rewrite(line) for line in llvm_text.split("\n"))
    if not widths:
        return llvm_text
    nt_id = max(metadata_ids(text)) + 1
    return text + "".join(_definition(w, nt_id) for w in sorted(widths)) + f"\n!{nt_id} = !{{i32 1}}\n"
