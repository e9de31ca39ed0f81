"""Make the marked, aligned vector stores of an optimized module non-temporal.

Runs on the final LLVM module *after* Numba's O3 pipeline. Attaching
`!nontemporal` earlier stops the loop vectorizer (LLVM asks whether an
under-aligned vector NT store is legal, and it is not), which yields one slow
scalar NT store per element. So streamed stores are only *marked* during
lowering (`markers.py`); once the vectorizer has widened them and
AlignmentFromAssumptions has raised their alignment from the `llvm.assume`
placed before the aligned loop, this pass attaches `!nontemporal` to every
marked vector store whose alignment covers its width.

Marked stores that stayed scalar (the aligned loop did not vectorize, or
the vectorizer's remainder iterations) become scalar NT stores
(`movnti`/`movntss`/`movntsd`), which have no alignment requirement:
`bench/scalar_nt_stores.py` measured them against plain stores in loops that
cannot vectorize, and they were never slower at 256 MiB (1.00x to 1.26x).
Before optimization they would have stopped the vectorizer; after it, they
are only the stores it left scalar.
"""

import re

from .markers import STREAM_STORE_SCOPE

_METADATA_DEF = re.compile(r"^!(\d+) = (?:distinct )?!\{(.*)\}\s*$", re.M)
_STORE = re.compile(
    r"^(?P<head>\s*store (?:volatile )?(?P<type><(?P<lanes>\d+) x (?P<elem>[^>]+)>|(?P<scalar>float|double|i32|i64))"
    r" [^\n]*?, align (?P<align>\d+))(?P<tail>[^\n]*)$",
    re.M,
)
_ELEMENT_BYTES = {"i1": 1, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "half": 2, "bfloat": 2, "float": 4, "double": 8, "ptr": 8}
# Vector NT stores exist for 16-byte (SSE, NEON q) registers and wider.
_MIN_VECTOR_BYTES = 16
# Make marked scalar stores non-temporal too (measured, see module doc);
# bench/scalar_nt_stores.py turns it off to compare.
SCALAR_NONTEMPORAL = True


def stream_scope_lists(llvm_text):
    """Ids of the `!alias.scope` list nodes that contain the streamed-store scope."""
    defs = {int(m.group(1)): m.group(2) for m in _METADATA_DEF.finditer(llvm_text)}
    scopes = {i for i, body in defs.items() if f'!"{STREAM_STORE_SCOPE}"' in body}
    refs = {i: set(map(int, re.findall(r"!(\d+)", body))) for i, body in defs.items()}
    return {i for i, body in refs.items() if body and body <= set(defs) and body & scopes and i not in scopes}


def is_streamable_store(match):
    """A store is emitted non-temporal only if its alignment covers it."""
    if match.group("scalar"):
        size = _ELEMENT_BYTES[match.group("scalar")]
        return SCALAR_NONTEMPORAL and int(match.group("align")) >= size
    size = int(match.group("lanes")) * _ELEMENT_BYTES.get(match.group("elem").strip(), 0)
    return size >= _MIN_VECTOR_BYTES and int(match.group("align")) >= min(size, 64)


def make_streamed_stores_nontemporal(llvm_text):
    """Return ``llvm_text`` with `!nontemporal` on aligned marked stores."""
    lists = stream_scope_lists(llvm_text)
    if not lists:
        return llvm_text
    ids = [int(m.group(1)) for m in _METADATA_DEF.finditer(llvm_text)]
    nt_id = max(ids) + 1
    marked = re.compile(r"!alias\.scope !(%s)\b" % "|".join(map(str, sorted(lists))))

    def rewrite(match):
        if "!nontemporal" in match.group("tail") or not marked.search(match.group("tail")):
            return match.group(0)
        if not is_streamable_store(match):
            return match.group(0)
        return f"{match.group('head')}{match.group('tail')}, !nontemporal !{nt_id}"

    rewritten = _STORE.sub(rewrite, llvm_text)
    if rewritten == llvm_text:
        return llvm_text
    return rewritten + f"\n!{nt_id} = !{{i32 1}}\n"
