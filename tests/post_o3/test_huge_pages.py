"""`post_o3/huge_pages.py`: the arrays a kernel allocates get NumPy's
huge-page advice: each call to Numba's allocation of array memory goes
through one wrapper, which advises from NumPy's 4 MiB on."""

import re

import numpy as np
import pytest
from llvm_fixtures import NEON, X86, verified

import streamjit as sj
from streamjit import machine
from streamjit.post_o3 import huge_pages
from streamjit.post_o3.module import Module

ALLOCATING = """
declare noalias ptr @NRT_MemInfo_alloc_aligned(i64, i32)

define ptr @kernel(i64 %n) {
entry:
  %a = tail call ptr @NRT_MemInfo_alloc_aligned(i64 %n, i32 32)
  %b = tail call ptr @NRT_MemInfo_alloc_aligned(i64 64, i32 32)
  ret ptr %b
}
"""

needs_advice = pytest.mark.skipif(not huge_pages.ADVISE, reason="NumPy gives no huge-page advice here "
                                  "(not Linux, or NUMPY_MADVISE_HUGEPAGE=0)")


@pytest.fixture
def huge_pages_row(monkeypatch, tmp_path):
    """A machine profile whose ``huge_pages`` row is on (off by default)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    machine.update_profile_file({"profile": {"huge_pages": True}})
    assert machine.machine_profile().huge_pages


@needs_advice
@pytest.mark.parametrize("target", [X86, NEON], ids=["x86", "aarch64"])
def test_every_allocation_goes_through_one_advising_wrapper(huge_pages_row, target):
    module = Module(ALLOCATING)
    assert huge_pages.run(module, target)
    text = verified(module)
    assert text.count('call ptr @"streamjit.alloc_advised"(') == 2
    assert text.count('define linkonce_odr ptr @"streamjit.alloc_advised"(') == 1
    assert re.search(r"call i32 @madvise\(ptr %pages, i64 %bytes, i32 14\)", text)
    assert "icmp uge i64 %size, 4194304" in text
    # a module linking this one in: the wrapper's own call is not rewritten, nor is it defined twice
    again = Module(text)
    huge_pages.run(again, target)
    relinked = verified(again)
    assert relinked.count("define linkonce_odr") == 1 and relinked.count("call ptr @NRT_MemInfo_alloc_aligned(") == 1


def test_a_module_that_allocates_nothing_is_left_alone():
    text = ALLOCATING.replace("NRT_MemInfo_alloc_aligned", "other_function")
    module = Module(text)
    assert not huge_pages.run(module, X86)
    assert str(module) == Module(text).__str__()


def _advised(array):
    """Whether the mapping holding the middle of ``array``'s data was
    advised MADV_HUGEPAGE (``hg`` in its VmFlags; the advice covers whole
    pages, so the first holds none)."""
    address, inside = array.ctypes.data + array.nbytes // 2, False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            head = line.split()[0]
            if "-" in head and not head.endswith(":"):
                start, end = (int(x, 16) for x in head.split("-"))
                inside = start <= address < end
            elif inside and head == "VmFlags:":
                return "hg" in line.split()[1:]
    return False


ADVISED_SCRIPT = """
import sys
import numpy as np
import streamjit as sj
from streamjit import machine
sys.path.insert(0, {here!r})
from test_huge_pages import _advised
if {row}:
    machine.update_profile_file({{"profile": {{"huge_pages": True}}}})
a = np.random.default_rng(0).random((8 << 20) // 8)
out = sj.stream_kernel(stream_stores=True)(lambda a: a * 2.0)(a)
assert np.array_equal(out, a * 2.0)
small = sj.stream_kernel(stream_stores=True)(lambda a: a * 2.0)(a[:1000])
print(_advised(a * 2.0), _advised(out), _advised(small))
"""


def advised_in_a_fresh_process(tmp_path, row):
    """(NumPy's array advised, the kernel's large one, its small one), in a
    process of its own (Numba keeps the allocation routine it compiled first
    for the whole process)."""
    import os
    import subprocess
    import sys

    script = ADVISED_SCRIPT.format(here=os.path.dirname(os.path.abspath(__file__)), row=row)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, XDG_CACHE_HOME=str(tmp_path)))
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_off_by_default(tmp_path):
    assert not machine.default_profile(*machine.cpu_identity()).huge_pages
    assert not huge_pages.run(Module(ALLOCATING), X86)
    assert advised_in_a_fresh_process(tmp_path, False)[1] == "False"


@needs_advice
def test_a_large_array_the_kernel_allocates_is_advised_as_numpys(tmp_path):
    # NumPy's own, the control; the kernel's; a small one (in the heap, unadvised, as NumPy's)
    assert advised_in_a_fresh_process(tmp_path, True) == ["True", "True", "False"]
