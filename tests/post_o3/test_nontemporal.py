"""`post_o3/nontemporal.py`: marked, aligned accesses get ``!nontemporal``;
scalar floats go through ``movnti`` where x86 has no scalar FP NT store."""

import re

from llvm_fixtures import X86, X86_SSE4A, after, fixture_text, instructions, verified

from streamjit.protocol.markers import STREAM_LOAD_SCOPE, STREAM_STORE_SCOPE
from streamjit.post_o3 import nontemporal
from streamjit.llvm_text.module import Module


def _marked(module, scope):
    lists = module.marked_scope_lists(scope)
    return [i for i in instructions(module) if i.opcode in ("store", "load") and i.scope() in lists]


def test_aligned_marked_vector_accesses_become_non_temporal():
    module = after("triad_f32.ll", nontemporal)
    text = verified(module)
    stores, loads = _marked(module, STREAM_STORE_SCOPE), _marked(module, STREAM_LOAD_SCOPE)
    vector_stores = [s for s in stores if s.type.startswith("<")]
    # (<8 x float>: 32 bytes, aligned 32 or 64 by the peel; <4 x float>: 16, aligned 16)
    assert vector_stores and all("nontemporal" in s.metadata for s in vector_stores)
    assert any("nontemporal" in load.metadata for load in loads)  # (the suite's profile: non-temporal loads)
    # the function has vector NT stores, so its scalar marked stores (remainders) stay plain
    assert all("nontemporal" not in s.metadata for s in stores if not s.type.startswith("<"))
    node = re.search(r"!nontemporal !(\d+)", text).group(1)
    assert f"\n!{node} = !{{i32 1}}" in text


def test_a_scalar_double_goes_through_movnti_on_x86():
    module = after("divide.ll", nontemporal, target=X86)
    text = verified(module)
    assert re.search(r'= bitcast double %[-\w.]+ to i64\n  call void asm sideeffect "movntiq \$1, \$0", '
                     r'"=\*m,r,~\{memory\}"\(ptr elementtype\(i64\) %[-\w.]+, i64 %streamjit\.nti\.\d+\), '
                     r"!alias\.scope", text)


def test_with_sse4a_a_scalar_double_store_is_tagged():
    module = after("divide.ll", nontemporal, target=X86_SSE4A)
    text = verified(module)
    assert "movnti" not in text
    assert any(s.type == "double" and "nontemporal" in s.metadata for s in _marked(module, STREAM_STORE_SCOPE))


def test_the_new_metadata_id_misses_debug_information_nodes():
    module = after("debug_prange.ll")
    assert nontemporal.run(module, X86)
    verified(module)  # (before, the id could be a !DILocation's: "Metadata id is already used")


def test_accesses_already_non_temporal_are_left_alone():
    once = str(after("triad_f32.ll", nontemporal))
    module = Module(once)
    assert not nontemporal.run(module, X86)
    assert str(module) == once


def test_an_unmarked_module_is_left_alone():
    text = fixture_text("triad_f32.ll").replace("streamjit.stream_", "elsewhere.")
    module = Module(text)
    assert not nontemporal.run(module, X86) and str(module) == text
