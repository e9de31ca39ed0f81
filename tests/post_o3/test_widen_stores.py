"""`post_o3/widen_stores.py`: runs of narrow marked vector stores join into
one full-width store (which `nontemporal.py` then streams)."""

import re

import pytest
from llvm_fixtures import NEON, X86, after, fixture_text, instructions, verified

from streamjit.post_o3 import nontemporal, widen_stores
from streamjit.llvm_text.module import Module

NARROW = re.compile(r"store <4 x i8> (%[-\w.$\"]+|%\"[^\"]*\"), ptr (%[-\w.$]+|%\"[^\"]*\"), align (\d+)")


def _run_of_four(name):
    """(values, pointers, alignments) of the first four narrow stores, in line order."""
    found = NARROW.findall(fixture_text(name))[:4]
    return [f[0] for f in found], [f[1] for f in found], [int(f[2]) for f in found]


@pytest.mark.parametrize("name", ["positive_bool.ll", "names_bool.ll", "debug_positive_bool.ll"])
def test_four_byte_stores_going_up_become_one_streamed_16_byte_store(name):
    values, pointers, aligns = _run_of_four(name)
    assert aligns[0] == 16
    module = after(name, widen_stores, nontemporal)
    text = verified(module)
    joined = [i for i in instructions(module, "store") if i.type == "<16 x i8>"]
    assert len(joined) == 1 and joined[0].pointer == pointers[0] and joined[0].align == 16
    assert "nontemporal" in joined[0].metadata
    # the concatenation in address order: (a b) (c d)
    assert re.search(rf"= shufflevector <4 x i8> {re.escape(values[0])}, <4 x i8> {re.escape(values[1])}, "
                     r"<8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7>", text)
    assert not any(i.type == "<4 x i8>" and i.pointer in pointers for i in instructions(module, "store"))


def test_a_reversed_run_is_joined_lowest_address_first():
    values, pointers, aligns = _run_of_four("reversed_bool.ll")
    module = after("reversed_bool.ll", widen_stores)
    text = verified(module)
    joined = next(i for i in instructions(module, "store") if i.type == "<16 x i8>")
    # going down: the last store in line order has the lowest address, and the alignment
    assert joined.pointer == pointers[-1] and joined.align == aligns[-1] == 16
    assert re.search(rf"= shufflevector <4 x i8> {re.escape(values[3])}, <4 x i8> {re.escape(values[2])}, ", text)


def test_debug_records_between_the_stores_do_not_stop_the_join():
    text = fixture_text("debug_positive_bool.ll")
    record = re.search(r"^    #dbg_value\(.*$", text, re.M).group(0)
    first = NARROW.search(text).group(0)
    line = text[text.index(first):].split("\n")[0]
    module = Module(text.replace(line, f"{line}\n{record}", 1))
    assert widen_stores.run(module, X86)
    assert "store <16 x i8>" in verified(module) and record in str(module)


def test_offsets_are_read_per_function():
    """``second_function`` reuses the kernel's names at other offsets: the
    kernel's run is joined, the copy's (not consecutive) is not."""
    module = after("two_functions.ll", widen_stores)
    verified(module)
    kernel, second = module.functions[:2]
    assert any(i.type == "<16 x i8>" for _, _, i in kernel.instructions() if i.opcode == "store")
    assert not any(i.type == "<16 x i8>" for _, _, i in second.instructions() if i.opcode == "store")


def test_a_converted_value_is_converted_through_32_bits_and_truncated():
    """`fptoui <4 x double> to <4 x i16>` is poison out of range,
    and joined, x86 lowered it as a saturating pack (-49.5 -> 0); Numba's
    scalar code and full-width loop truncate a 32-bit conversion (65487)."""
    original = fixture_text("uint16_from_double.ll")
    narrow = re.findall(r"(%[-\w.]+) = fptoui <4 x double> (%[-\w.]+) to <4 x i16>", original)
    assert narrow
    module = after("uint16_from_double.ll", widen_stores)
    text = verified(module)
    for _, source in narrow:
        converted = re.search(rf"(%streamjit\.convert\.\d+) = fptosi <4 x double> {re.escape(source)} to <4 x i32>\n"
                              rf"  %streamjit\.truncate\.\d+ = trunc <4 x i32> \1 to <4 x i16>", text)
        assert converted, source
    stored = {i.value for i in instructions(module, "store") if i.type in ("<4 x i16>", "<16 x i16>")}
    assert not stored & {value for value, _ in narrow}


def test_on_aarch64_a_converted_value_keeps_its_conversion():
    """AArch64's scalar code converts as its vector code does (``fcvtzu``
    saturates: -49.5 to uint16 gives 0 in both): spelled out as x86's, the
    streamed store gave 65487 where numba.njit gives 0."""
    narrow = re.findall(r"(%[-\w.]+) = fptoui <4 x double> (%[-\w.]+) to <4 x i16>",
                        fixture_text("uint16_from_double.ll"))
    module = after("uint16_from_double.ll", widen_stores, target=NEON)
    text = verified(module)
    assert "streamjit.convert" not in text and "streamjit.truncate" not in text
    assert narrow and all(f"{value} = fptoui <4 x double> {source} to <4 x i16>" in text for value, source in narrow)
    assert "store <16 x i16>" in text                  # still joined
