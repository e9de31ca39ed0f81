"""`post_o3/prefetch.py`: one prefetch per cache line per array per
iteration ahead of the marked loads that ask for one."""

import re

from llvm_fixtures import after, instructions, verified

from streamjit.post_o3 import prefetch
from streamjit.llvm_text.module import Module

PREFETCH = re.compile(r"(%streamjit\.prefetch\.\d+) = getelementptr i8, ptr (%[-\w.$]+|%\"[^\"]*\"), i64 2048\n"
                      r"  call void @llvm\.prefetch\.p0\(ptr \1, i32 0, i32 0, i32 1\)\n"
                      r"  %[-\w.]+ = load [^\n]*, ptr \2, ")


def _prefetches(module):
    return [i for i in instructions(module, "call") if i.callee == "llvm.prefetch.p0"]


def test_each_cache_line_of_the_marked_loads_is_prefetched_once():
    module = after("triad_f32.ll", prefetch)
    text = verified(module)
    # right before the load, 2 KiB (the suite's profile) ahead of its address, prefetchnta
    assert PREFETCH.search(text)
    # the vector loop's unrolled 32-byte loads of b and c: two per 64-byte line, one prefetch each
    loop = next(b for f in module.functions for b in f.blocks if b.label == "vector.body")
    loads = [i for i in loop.insts if i.opcode == "load"]
    assert len(loads) == 8 and len([i for i in loop.insts if i.callee == "llvm.prefetch.p0"]) == 4
    assert "declare void @llvm.prefetch.p0(ptr readonly captures(none)" in text


def test_loads_through_quoted_and_dollar_names_are_prefetched_too():
    assert len(_prefetches(after("names_triad.ll", prefetch))) == len(_prefetches(after("triad_f32.ll", prefetch)))


def test_a_function_already_prefetched_gets_no_second_copy():
    once = str(after("triad_f32.ll", prefetch))
    module = Module(once)
    assert not prefetch.run(module, None)
    assert str(module) == once
