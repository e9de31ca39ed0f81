"""The records the post-O3 stages add (`streamjit/llvm_text/build.py`): each
reads back as the instruction it builds, LLVM takes them, and no stage
spells an instruction in LLVM syntax of its own."""

import ast
from pathlib import Path

import llvmlite.binding as llvm
import pytest

import streamjit
from streamjit.llvm_text import build
from streamjit.llvm_text.module import Inst

POST_O3 = Path(streamjit.__file__).parent / "post_o3"


def _spelled_records(source):
    """The line numbers of the calls of `Inst` on an f-string in ``source``."""
    return [node.lineno for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Call)
            and "Inst" in (getattr(node.func, "id", None), getattr(node.func, "attr", None))
            and any(isinstance(argument, ast.JoinedStr) for argument in node.args)]


def test_no_stage_spells_an_instruction_of_its_own():
    spelled = [f"{path.name}:{line}" for path in sorted(POST_O3.rglob("*.py"))
               for line in _spelled_records(path.read_text())]
    assert spelled == []


def test_the_scan_finds_a_record_spelled_in_an_f_string():
    source = 'a = Inst(f"  {x} = load i8, ptr {p}")\nb = Inst(text)\nc = module.Inst(f"  ret {v}")\n'
    assert _spelled_records(source) == [1, 3]


# (record, what `Inst` reads back from its text)
RECORDS = [
    (build.store("<4 x float>", "%v", '%"p q"', 16, ", !nontemporal !0"),
     {"opcode": "store", "result": None, "type": "<4 x float>", "value": "%v", "pointer": '%"p q"', "align": 16,
      "metadata": {"nontemporal": "!0"}}),
    (build.load("%w", "<8 x float>", "%p", 32),
     {"opcode": "load", "result": "%w", "type": "<8 x float>", "pointer": "%p", "align": 32}),
    (build.call("%r", "<4 x double>", "@_ZGVdN4v_sin", ["<4 x double> %x"], "fast ", ", !dbg !1"),
     {"opcode": "call", "result": "%r", "type": "fast <4 x double>", "callee": "_ZGVdN4v_sin",
      "arguments": ["<4 x double> %x"], "metadata": {"dbg": "!1"}}),
    (build.call(None, "void", "@llvm.prefetch.p0", ["ptr %q", "i32 0", "i32 3", "i32 1"], tail=" #0"),
     {"opcode": "call", "result": None, "type": "void", "callee": "llvm.prefetch.p0", "pointer": "%q",
      "call_attributes": " #0"}),
    (build.call(None, "void", 'asm sideeffect "movntiq $1, $0", "=*m,r,~{memory}"',
                ["ptr elementtype(i64) %p", "i64 %b"]),
     {"opcode": "call", "callee": None, "asm": 'asm sideeffect "movntiq $1, $0", "=*m,r,~{memory}"',
      "pointer": "%p"}),
    (build.cast("%b", "bitcast", "double %x", "i64"),
     {"opcode": "bitcast", "result": "%b", "operands": ["double %x to i64"]}),
    (build.byte_offset("%q", "%p", 2048),
     {"opcode": "getelementptr", "result": "%q", "type": "i8", "pointer": "%p",
      "operands": ["i8", "ptr %p", "i64 2048"]}),
    (build.insert_element("%e", "<1 x double>", "poison", "double %x", 0),
     {"opcode": "insertelement", "result": "%e", "operands": ["<1 x double> poison", "double %x", "i64 0"]}),
    (build.extract_element("%d", "<4 x double>", "%v", 0),
     {"opcode": "extractelement", "result": "%d", "operands": ["<4 x double> %v", "i64 0"]}),
    (build.shuffle("%s", "<2 x i8>", "%a", "%b", range(4)),
     {"opcode": "shufflevector", "result": "%s",
      "operands": ["<2 x i8> %a", "<2 x i8> %b", "<4 x i32> <i32 0, i32 1, i32 2, i32 3>"]}),
]


@pytest.mark.parametrize("record, expected", RECORDS, ids=[expected["opcode"] for _, expected in RECORDS])
def test_a_record_reads_back_as_the_instruction_it_builds(record, expected):
    read = Inst(record.text)
    assert record.text.startswith("  ") and not record.text.startswith("   ") and read.is_instruction
    assert {name: getattr(read, name) for name in expected} == expected


def test_a_commented_copy_keeps_the_instruction_with_or_without_its_attachments():
    fence = Inst("  fence release, !dbg !7")
    assert build.commented(fence, "; mark").text == "  fence release, !dbg !7 ; mark"
    bare = build.commented(fence, "; mark", attachments=False)
    assert bare.text == "  fence release ; mark" and (bare.opcode, bare.metadata) == ("fence", {})


def test_llvm_takes_the_records():
    records = [build.byte_offset("%q", "%p", 64),
               build.load("%w", "<2 x i8>", "%q", 2),
               build.shuffle("%s", "<2 x i8>", "%w", "%a", range(4)),
               build.store("<4 x i8>", "%s", "%p", 4, ", !nontemporal !0"),
               build.cast("%bits", "bitcast", "double %x", "i64"),
               build.cast("%wide", "fptosi", "<4 x double> %v", "<4 x i32>"),
               build.cast("%narrow", "trunc", "<4 x i32> %wide", "<4 x i8>"),
               build.insert_element("%e", "<1 x double>", "poison", "double %x", 0),
               build.extract_element("%d", "<1 x double>", "%e", 0),
               build.call("%r", "double", "@llvm.sqrt.f64", ["double %d"], "fast "),
               build.call(None, "void", "@llvm.prefetch.p0", ["ptr %q", "i32 0", "i32 3", "i32 1"]),
               build.commented(Inst("  fence release"), "; mark")]
    text = "\n".join(["define void @f(ptr %p, <2 x i8> %a, double %x, <4 x double> %v) {",
                      *(record.text for record in records), "  ret void", "}",
                      "declare double @llvm.sqrt.f64(double)",
                      "declare void @llvm.prefetch.p0(ptr, i32 immarg, i32 immarg, i32 immarg)",
                      "!0 = !{i32 1}", ""])
    llvm.parse_assembly(text).verify()
