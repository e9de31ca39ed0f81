"""`post_o3/exit_fences.py`: a store fence before each return an NT store
reaches without one (an exception raised inside the streamed nest)."""

from llvm_fixtures import after, instructions, verified

from streamjit.post_o3 import exit_fences, nontemporal
from streamjit.post_o3.exit_fences import EXIT_FENCE_MARK, unfenced_returns


def _kernel(module):
    return next(f for f in module.functions if "divide" in f.name and f.name.startswith("_ZN8"))


def test_the_division_by_zero_return_gets_the_functions_fence():
    module = after("divide.ll", nontemporal)
    stores, returns = unfenced_returns(_kernel(module))
    assert stores and returns
    assert exit_fences.run(module, None)
    text = verified(module)
    assert text.count(EXIT_FENCE_MARK) == len(returns)
    assert f"  tail call void @llvm.x86.sse.sfence() {EXIT_FENCE_MARK}" in text
    assert unfenced_returns(_kernel(module)) == (0, set())


def test_a_module_whose_returns_are_fenced_is_left_alone():
    module = after("triad_f32.ll", nontemporal)
    text = str(module)
    assert not exit_fences.run(module, None) and str(module) == text
    assert any(i.callee == "llvm.x86.sse.sfence" for i in instructions(module, "call"))


def test_streamjits_own_fills_are_not_fenced():
    """A streamed fill is called inside a streamed nest, whose fence follows
    the call: a fence at the fill's own end fenced every call (once per row
    of a 2-D fill) and inflated the report's count."""
    from streamjit.post_o3 import stream_memset

    module = after("fills.ll", stream_memset, nontemporal, exit_fences)
    text = verified(module)
    fills = [f for f in module.functions if f.name.startswith(stream_memset.FILL)]
    assert fills and all("nontemporal" in "\n".join(f.lines()) for f in fills)
    assert not any(EXIT_FENCE_MARK in "\n".join(f.lines()) for f in fills)
    assert text.count(EXIT_FENCE_MARK) == sum(EXIT_FENCE_MARK in "\n".join(f.lines()) for f in module.functions)


def test_unfenced_returns_follow_loops_and_chains_of_blocks():
    """The returns an NT store reaches without a fence are found through a
    loop back to itself and a chain of blocks; a path through a fence, and
    a return before the store, are not counted."""
    from streamjit.llvm_text.module import Module

    module = Module("""define void @f(ptr %p, i1 %c) {
entry:
  br i1 %c, label %early, label %loop
early:
  ret void
loop:
  store <8 x float> zeroinitializer, ptr %p, align 32, !nontemporal !0
  br i1 %c, label %loop, label %split
split:
  br i1 %c, label %fenced, label %one
fenced:
  call void @llvm.x86.sse.sfence()
  ret void
one:
  br label %two
two:
  br i1 %c, label %one, label %error
error:
  ret void
}
!0 = !{i32 1}""")
    function = module.functions[0]
    stores, returns = unfenced_returns(function)
    assert (stores, returns) == (1, {("error", 0)})
    assert exit_fences.run(module, None) and unfenced_returns(function) == (0, set())
