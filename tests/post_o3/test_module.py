"""The reader of the optimized module (`streamjit/llvm_text/module.py`)."""

import os
import re

import llvmlite.binding as llvm
import pytest
from llvm_fixtures import FIXTURES, fixture_text, instructions

from streamjit.llvm_text.module import Module, split_operands

ALL = sorted(os.listdir(FIXTURES))


@pytest.mark.parametrize("name", ALL)
def test_every_fixture_reads_and_prints_back_unchanged(name):
    text = fixture_text(name)
    module = Module(text)
    for function in module.functions:
        assert function.blocks  # (parsed)
    assert str(module) == text


def test_names_with_dollars_and_quotes_are_pointers_like_any_other():
    loads = [i.pointer for i in instructions(Module(fixture_text("names_triad.ll")), "load")]
    assert {'%"src$ 0"', '%"$src.1"', '%"src 2"', '%"src-$3"'} <= set(loads)
    stores = [i.pointer for i in instructions(Module(fixture_text("names_bool.ll")), "store")]
    assert {'%"$out 0"', '%"$out.1"', '%"out 2"', '%"out-$3"'} <= set(stores)


def test_a_record_holds_opcode_type_pointer_alignment_and_metadata():
    store = next(i for i in instructions(Module(fixture_text("triad_f32.ll")), "store") if i.align == 64)
    assert (store.type, store.pointer.startswith("%"), store.value.startswith("%")) == ("<8 x float>", True, True)
    assert list(store.metadata) == ["alias.scope"] and store.scope() == int(store.metadata["alias.scope"][1:])


def test_a_fresh_metadata_id_is_above_every_node_debug_info_included():
    """The old allocator took the largest generic ``!{...}`` id: with debug
    info, a ``!DILocation`` could hold the next one."""
    text = fixture_text("debug_prange.ll")
    generic = [int(n) for n in re.findall(r"^!(\d+) = (?:distinct )?!\{", text, re.M)]
    every = [int(n) for n in re.findall(r"^!(\d+) = ", text, re.M)]
    assert max(generic) < max(every)  # (what made the old allocator collide)
    module = Module(text)
    node = module.add_metadata("!{i32 1}")
    assert node == max(every) + 1
    llvm.parse_assembly(str(module)).verify()


def test_constant_offsets_are_per_function():
    """``second_function`` reuses the kernel's names for other offsets."""
    module = Module(fixture_text("two_functions.ll"))
    kernel, second = module.functions[:2]
    assert "positive" in kernel.name and second.name == "second_function"
    shared = set(kernel.constant_offsets()) & set(second.constant_offsets())
    assert any(kernel.constant_offsets()[n] != second.constant_offsets()[n] for n in shared)


def test_operands_split_outside_brackets_and_quotes():
    assert split_operands('<2 x i8> <i8 1, i8 2>, ptr %"a, b", align 2') == \
        ["<2 x i8> <i8 1, i8 2>", 'ptr %"a, b"', "align 2"]


def test_a_switch_is_one_record_whose_cases_are_successors():
    text = """define void @f(i32 %x) {
entry:
  switch i32 %x, label %"other one" [
    i32 0, label %zero
  ], !prof !0

zero:
  ret void

"other one":
  ret void
}

!0 = !{!"branch_weights", i32 1, i32 2}
"""
    module = Module(text)
    entry = module.functions[0].blocks[0]
    assert entry.successors() == ["other one", "zero"] and entry.insts[0].metadata == {"prof": "!0"}
    assert str(module) == text


def test_loops_are_the_natural_loops_with_their_latches():
    text = """define void @f(i64 %n) {
entry:
  br label %outer

outer:
  %i = phi i64 [ 0, %entry ], [ %i.next, %outer.latch ]
  br label %inner

inner:
  %j = phi i64 [ 0, %outer ], [ %j.next, %inner ]
  %j.next = add i64 %j, 1
  %more = icmp slt i64 %j.next, %n
  br i1 %more, label %inner, label %outer.latch

outer.latch:
  %i.next = add i64 %i, 1
  %again = icmp slt i64 %i.next, %n
  br i1 %again, label %outer, label %exit

exit:
  ret void
}
"""
    loops = sorted((latches, sorted(body)) for latches, body in Module(text).functions[0].loops())
    assert loops == [(["inner"], ["inner"]), (["outer.latch"], ["inner", "outer", "outer.latch"])]
