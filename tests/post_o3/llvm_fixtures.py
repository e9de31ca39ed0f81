"""The captured modules (`capture.py`) and what the stage tests do with them."""

import os

import llvmlite.binding as llvm

from streamjit.protocol.targets import Target
from streamjit.llvm_text.module import Module

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
# the machines the fixtures were captured for, named so the tests do not depend on the host
X86 = Target("x86_64-unknown-linux-gnu", "icelake-server", "")
X86_SSE4A = Target("x86_64-unknown-linux-gnu", "znver4", "")
NEON = Target("aarch64-unknown-linux-gnu", "neoverse-n1", "")


def fixture_text(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return f.read()


def after(name, *stages, target=X86):
    """The fixture's `Module` after ``stages`` ran on it, in order."""
    module = Module(fixture_text(name))
    for stage in stages:
        stage.run(module, target)
    return module


def verified(module):
    """The module's text, once LLVM has parsed and verified it."""
    text = str(module)
    llvm.parse_assembly(text).verify()
    return text


def instructions(module, opcode=None):
    return [inst for function in module.functions for _, _, inst in function.instructions()
            if opcode is None or inst.opcode == opcode]
