"""`post_o3/stream_memset.py`: each marked, aligned memset form LLVM makes
of a streamed loop becomes a streamed fill; Numba's own memsets stay."""

import re

from llvm_fixtures import after, fixture_text, verified

from streamjit.post_o3 import stream_memset

# a zero of doubles, a variable byte, a boolean, a constant byte (`capture.fills`)
FORMS = ("i8 0", "i8 %arg.v", "i8 1", "i8 7")


def test_every_marked_memset_form_becomes_a_streamed_fill():
    original = fixture_text("fills.ll")
    marked = re.findall(r"call void @llvm\.memset\.p0\.i64\(ptr align 64 (%[-\w.]+), (i8 [^,]+), i64 ([^,]+), "
                        r"i1 false\), !alias\.scope", original)
    assert sorted(value for _, value, _ in marked) == sorted(FORMS)
    module = after("fills.ll")
    assert stream_memset.run(module, None)
    text = verified(module)
    for pointer, value, size in marked:
        assert f"call void @streamjit.stream_fill.64(ptr {pointer}, {value}, i64 {size}), !alias.scope" in text
    # one definition, whose vector stores are non-temporal
    assert text.count("define internal void @streamjit.stream_fill.64(") == 1
    assert re.search(r"store <64 x i8> %all, ptr %q, align 64, !nontemporal !\d+", text)


def test_numbas_own_memsets_stay():
    numba_memsets = fixture_text("fills.ll").count("call void @llvm.memset.p0.i64(ptr noundef nonnull align 8")
    assert numba_memsets
    assert verified(after("fills.ll", stream_memset)).count("@llvm.memset.p0.i64(ptr noundef nonnull align 8") \
        == numba_memsets


def test_a_module_without_marked_memsets_is_left_alone():
    module = after("triad_f32.ll")
    assert not stream_memset.run(module, None)
    assert str(module) == fixture_text("triad_f32.ll")
