"""Make the marked stores and loads of an optimized module non-temporal.

Runs on the final LLVM module *after* Numba's O3 pipeline. Attaching
`!nontemporal` earlier stops the loop vectorizer (LLVM asks whether an
under-aligned vector NT store is legal, and it is not), which yields one slow
scalar NT store per element. So streamed accesses are only *marked* during
lowering (`markers.py`); once the vectorizer has widened them and
AlignmentFromAssumptions has raised their alignment from the `llvm.assume`
placed before the aligned loop, this pass attaches `!nontemporal` to every
marked vector store or load whose alignment covers its width (a misaligned
vector NT store faults; an NT load needs it too, `vmovntdqa`).

Marked stores that stayed scalar because the aligned loop did not vectorize
become scalar NT stores (`movnti`/`movntss`/`movntsd`), which have no
alignment requirement: `bench/scalar_nt_stores.py` measured them against
plain stores in loops that cannot vectorize, and they were never slower at
256 MiB (AMD EPYC: 1.00x to 1.26x; Intel Xeon, where floats and doubles go
through an integer register as `movnti`, see `_movnti`: 1.10x to 1.58x). In a function that does get vector NT stores, its
scalar marked stores are the vectorizer's remainder iterations, which write
part of a cache line at the end of each row: as NT stores those partial
lines cost a memory transaction each (a 3-D stencil with 400-element rows
ran 0.92x instead of 1.05x the plain loop), so there they stay plain.
Scalar loads have no non-temporal form and stay as they are; vector loads
become non-temporal only where the machine profile says so (on
write-back memory `vmovntdqa` is an ordinary load on most CPUs, and cost
20% on our Intel Xeon VM). Scalable
(SVE) vectors need only element alignment for `stnt1`/`ldnt1`.
"""

import re

import llvmlite.binding as llvm

from .llvm_text import ELEMENT_BYTES
from .markers import STREAM_LOAD_SCOPE, STREAM_STORE_SCOPE, marked_scope_lists, metadata_ids, parse_load_marker

_ACCESS = re.compile(
    r"^(?P<head>\s*(?:store (?:volatile )?|%[\w.\-]+ = load (?:volatile )?)"
    r"(?P<type><(?P<scalable>vscale x )?(?P<lanes>\d+) x (?P<elem>[^>]+)>|(?P<scalar>float|double|i32|i64))"
    r"[^\n]*?, align (?P<align>\d+))(?P<tail>[^\n]*)$",
    re.M,
)
_FUNCTION = re.compile(r"^define [^\n]*\{\n.*?^\}$", re.M | re.S)
# Vector NT accesses exist for 16-byte (SSE, NEON q) registers and wider.
_MIN_VECTOR_BYTES = 16
# Make marked scalar stores non-temporal too (measured, see module doc);
# bench/scalar_nt_stores.py turns it off to compare.
SCALAR_NONTEMPORAL = True


def is_streamable(match, scalar_stores=True):
    """Whether a marked access may be emitted non-temporal: aligned vectors,
    and scalar stores when ``scalar_stores`` and `SCALAR_NONTEMPORAL`."""
    is_store = match.group("head").lstrip().startswith("store")
    if match.group("scalar"):
        size = ELEMENT_BYTES[match.group("scalar")]
        return is_store and scalar_stores and SCALAR_NONTEMPORAL and int(match.group("align")) >= size
    element = ELEMENT_BYTES.get(match.group("elem").strip(), 0)
    if match.group("scalable"):  # SVE's stnt1/ldnt1 need element alignment only
        return element > 0 and int(match.group("align")) >= element
    size = int(match.group("lanes")) * element
    return size >= _MIN_VECTOR_BYTES and int(match.group("align")) >= min(size, 64)


_SCALAR_FP_STORE = re.compile(r"^(?P<indent>\s*)store (?P<type>float|double) (?P<value>[^,]+), ptr (?P<ptr>%[\w.\-]+), "
                              r"align \d+(?P<tail>[^\n]*)$")
# the integer register and movnti suffix for each floating-point type
_INTEGER = {"float": ("i32", "l"), "double": ("i64", "q")}


# what `_movnti` makes, as it reads in the final module (its pointer in group 1)
MOVNTI_CALL = re.compile(r'call void asm sideeffect "movnti[lq] \$1, \$0", "=\*m,r[^"]*"\(ptr elementtype\(i(?:32|64)\) '
                         r'(%[\w.\-]+)')


def scalar_fp_through_integer_register(triple=None, cpu=None, features=None):
    """Whether scalar floating-point NT stores must go through an integer
    register on this host (or the ``triple``/``cpu``/``features`` given): x86
    has ``movnti`` for 32- and 64-bit integers, and ``movntss``/``movntsd``
    only with AMD's SSE4A; without it LLVM emits a tagged ``double`` store as
    a plain ``movsd`` (and folds a bitcast to ``i64`` back into one), so only
    inline assembly keeps the hint (measured: bench/README.md)."""
    if triple is None:
        triple, sse4a = llvm.get_process_triple(), llvm.get_host_cpu_features().get("sse4a", False)
    else:
        sse4a = "+sse4a" in (features or "") or bool(re.match(r"(znver|bdver|btver|amdfam10|barcelona)", cpu or ""))
    return triple.startswith(("x86_64", "i686")) and not sse4a


def _movnti(match, serial):
    """A scalar float/double store as ``movnti`` of its bits (inline asm that
    writes through the pointer, keeping the store's scope for the report)."""
    integer, suffix = _INTEGER[match.group("type")]
    bits = f"%streamjit.nti.{serial}"
    return (f"{match.group('indent')}{bits} = bitcast {match.group('type')} {match.group('value')} to {integer}\n"
            f"{match.group('indent')}call void asm sideeffect \"movnti{suffix} $1, $0\", \"=*m,r,~{{memory}}\"("
            f"ptr elementtype({integer}) {match.group('ptr')}, {integer} {bits}){match.group('tail')}")


def make_streamed_accesses_nontemporal(llvm_text, fp_through_integers=None):
    """Return ``llvm_text`` with `!nontemporal` on the streamable marked
    accesses; ``fp_through_integers``: see `scalar_fp_through_integer_register`
    (None: this host)."""
    # loads only where their marker allows non-temporal loads (the machine profile's choice)
    lists = {**marked_scope_lists(llvm_text, STREAM_STORE_SCOPE),
             **{i: m for i, m in marked_scope_lists(llvm_text, STREAM_LOAD_SCOPE).items() if parse_load_marker(m)[2]}}
    if not lists:
        return llvm_text
    nt_id = max(metadata_ids(llvm_text)) + 1
    marked = re.compile(r"!alias\.scope !(%s)\b" % "|".join(map(str, sorted(lists))))
    through_integers = scalar_fp_through_integer_register() if fp_through_integers is None else fp_through_integers
    serial = [0]
    if through_integers:
        llvm.initialize_native_asmparser()  # (Numba's JIT does not; the inline asm needs it)

    def candidate(match):
        tail = match.group("tail")
        return "!nontemporal" not in tail and marked.search(tail)

    def rewrite_function(function):
        # (a function linked in from another streamjit library may already
        # have its vector stores non-temporal)
        vector_stores = any(marked.search(m.group("tail")) and not m.group("scalar") and is_streamable(m)
                            and m.group("head").lstrip().startswith("store") for m in _ACCESS.finditer(function))

        def rewrite(match):
            if not candidate(match) or not is_streamable(match, scalar_stores=not vector_stores):
                return match.group(0)
            fp = _SCALAR_FP_STORE.match(match.group(0)) if through_integers else None
            if fp:
                serial[0] += 1
                return _movnti(fp, serial[0])
            return f"{match.group('head')}{match.group('tail')}, !nontemporal !{nt_id}"

        return _ACCESS.sub(rewrite, function)

    rewritten = _FUNCTION.sub(lambda m: rewrite_function(m.group(0)), llvm_text)
    if rewritten == llvm_text:
        return llvm_text
    return rewritten + f"\n!{nt_id} = !{{i32 1}}\n"
