"""`post_o3/keep_scalar.py`: the head loops' marker calls and their declaration go."""

from llvm_fixtures import after, fixture_text, verified

from streamjit.post_o3 import keep_scalar


def test_the_marker_calls_and_declaration_are_deleted():
    assert "call void @streamjit.keep_scalar()" in fixture_text("triad_f32.ll")
    module = after("triad_f32.ll")
    assert keep_scalar.run(module, None)
    assert "streamjit.keep_scalar" not in verified(module)
    assert not keep_scalar.run(module, None)  # (nothing left to do)
