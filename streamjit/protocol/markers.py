"""Marks on LLVM memory instructions that must survive LLVM's optimizer.

A streamed store or load is emitted as an ordinary one carrying an
`!alias.scope` in a domain of our own. The loop vectorizer drops unknown
metadata kinds but keeps alias scopes on the vector instructions it creates,
and since no instruction lists our scopes in `!noalias`, the marks change no
aliasing decision. After optimization, the post-O3 stages find the marked
instructions by their scope names (`llvm_text/module.Module.marked_scope_lists`).

A load's scope name carries how it is lowered (`load_marker`: the prefetch
hint, the distance in bytes, 0 for none, and ``nt`` where it may become a
non-temporal load: `streamjit.stream_load:t1:4096`,
`streamjit.stream_load:nta:2048:nt`), so the rewrite after optimization
needs no state from the compiler; a store's carries the name of the array
it writes, the item sizes whose scalar stores may become non-temporal, and
the vector lanes its loop is to be vectorized with, where the profile sets
them (`store_marker`: `streamjit.stream_store:out:scalar=8`,
`streamjit.stream_store:out:scalar=8:lanes=8`). The loop width is read
before O3 (`pre_o3/loop_widths.py`), the rest after it.
"""

import llvmlite.ir as llir

DOMAIN_NAME = "streamjit"
STREAM_STORE_SCOPE = "streamjit.stream_store"
STREAM_LOAD_SCOPE = "streamjit.stream_load"
# what two post-O3 stages leave in the module, read back by the counts
# (`llvm_text/counts.py`): how `post_o3/nontemporal.py`'s ``movnti`` inline
# assembly starts, as the final module prints it, and the name of the
# streamed fill `post_o3/stream_memset.py` defines (``FILL.<width>``)
MOVNTI_ASM = 'asm sideeffect "movnti'
FILL = "streamjit.stream_fill"


def _mark(builder, instruction, scope_name):
    module = builder.module
    domain = module.add_metadata([llir.MetaDataString(module, DOMAIN_NAME)])
    scope = module.add_metadata([llir.MetaDataString(module, scope_name), domain])
    instruction.set_metadata("alias.scope", module.add_metadata([scope]))


def store_marker(array, scalar_bytes, lanes=0):
    """A store's scope suffix: the array it writes (which lets
    `stream_report` count the stores of arrays that are not parameters),
    ``scalar_bytes``, the item sizes whose stores may become scalar
    non-temporal stores where the vectorizer leaves them scalar (the
    machine profile's ``scalar_nt_bytes`` row), and ``lanes``, the vector
    lanes of its loop (0: LLVM's choice)."""
    return f"{array}:scalar=" + "-".join(map(str, scalar_bytes)) + (f":lanes={lanes}" if lanes else "")


def parse_store_marker(marker):
    """``(array, the item sizes whose scalar stores may be non-temporal, the loop's vector lanes or 0)``
    of a `store_marker` suffix."""
    array, _, rest = marker.partition(":scalar=")
    scalar, _, lanes = rest.partition(":lanes=")
    return array, tuple(int(n) for n in scalar.split("-") if n), int(lanes or 0)


def mark_streamed_store(builder, instruction, marker):
    """Tag a store instruction as a candidate for a non-temporal store,
    as ``marker`` (`store_marker`) says."""
    _mark(builder, instruction, f"{STREAM_STORE_SCOPE}:{marker}")


def load_marker(stage, prefetched=True):
    """How a load is lowered, as its scope suffix: ``stage`` (a
    `machine.LoadStage`), its prefetch dropped unless ``prefetched``."""
    distance = stage.distance if prefetched and stage.prefetches() else 0
    return f"{stage.hint}:{distance}" + (":nt" if stage.nt_loads else "")


def parse_load_marker(marker):
    """``(hint, distance, non-temporal)`` of a `load_marker` suffix."""
    hint, distance, *nt = marker.split(":")
    return hint, int(distance), nt == ["nt"]


def mark_streamed_load(builder, instruction, marker):
    """Tag a load to be lowered as ``marker`` (`load_marker`) says."""
    _mark(builder, instruction, f"{STREAM_LOAD_SCOPE}:{marker}")
