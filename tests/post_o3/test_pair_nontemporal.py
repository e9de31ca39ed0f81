"""`post_o3/pair_nontemporal.py`: on AArch64, two adjacent 16-byte NT
accesses of one 32-byte block become one 32-byte access (`stnp`/`ldnp`)."""

import re

from llvm_fixtures import NEON, X86, after, fixture_text, instructions, verified

from streamjit.post_o3 import nontemporal, pair_nontemporal
from streamjit.llvm_text.module import Module
from streamjit.post_o3.stages import APPLIES, run_post_o3


def test_aarch64_neighbouring_16_byte_nt_accesses_become_pairs():
    before = after("aarch64_triad.ll", nontemporal, target=NEON)
    halves = [i for i in instructions(before) if "nontemporal" in i.metadata and i.type == "<4 x float>"]
    module = Module(str(before))
    assert pair_nontemporal.run(module, NEON)
    text = verified(module)
    pairs = [i for i in instructions(module) if "nontemporal" in i.metadata and i.type == "<8 x float>"]
    assert pairs and {p.opcode for p in pairs} == {"store", "load"}
    assert all(p.align >= 32 for p in pairs)
    assert len([i for i in instructions(module) if "nontemporal" in i.metadata]) == len(halves) - len(pairs)
    # a loaded pair's halves keep their names
    assert re.search(r"= shufflevector <8 x float> %streamjit\.pair\.\d+, <8 x float> poison, "
                     r"<4 x i32> <i32 4, i32 5, i32 6, i32 7>", text)


def test_other_targets_get_no_pairs():
    """The stage list, not the stage, says which targets pair (`stages.APPLIES`)."""
    assert APPLIES[pair_nontemporal](NEON) and not APPLIES[pair_nontemporal](X86)
    text, _ = run_post_o3(fixture_text("aarch64_triad.ll"), X86)
    assert "streamjit.pair" not in text
