"""Capture the fixtures of the post-O3 stage tests from the pinned LLVM.

Each fixture is an optimized module exactly as `post_o3/stages.run_post_o3`
receives it (after Numba's O3, before any stage), from kernels compiled
here; run again after a bump of Numba / llvmlite:

    python tests/post_o3/capture.py

The module with debug info comes from a second process with
``NUMBA_DEBUGINFO=1`` (Numba reads it at import). Two fixtures are edits of
captured ones, printed back by LLVM itself so they are what LLVM prints:
value names with ``$`` and quotes, and a second function that reuses the
first one's names for other constant offsets.
"""

import os
import re
import subprocess
import sys
import tempfile

import numpy as np
from numba import prange

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures")
NEON = ("aarch64-unknown-linux-gnu", "neoverse-n1")


def triad(a, b, c, q):
    for i in range(a.shape[0]):
        a[i] = b[i] + q * c[i]


def positive(out, a):
    for i in range(a.shape[0]):
        out[i] = a[i] > 0.5


def reversed_positive(out, a):
    for i in range(a.shape[0] - 1, -1, -1):
        out[i] = a[i] > 0.5


def convert(out, a):
    for i in range(a.shape[0]):
        out[i] = a[i]


def fills(zeros, sevens, bytes_of, flags, v):
    """Every memset form LLVM makes of a streamed loop: a zero of doubles,
    a constant byte, a variable byte, a boolean."""
    for i in range(zeros.shape[0]):
        zeros[i] = 0.0
    for i in range(sevens.shape[0]):
        sevens[i] = 7
    for i in range(bytes_of.shape[0]):
        bytes_of[i] = v
    for i in range(flags.shape[0]):
        flags[i] = True


def divide(out, a):
    """A ZeroDivisionError leaves the streamed nest by a path of its own."""
    for i in range(a.shape[0]):
        out[i] = 1.0 / a[i]


def _captured(compile_kernel, where="library", which=-1):
    """The input of `run_post_o3` for the last (or ``which``) module holding
    streamjit marks that ``compile_kernel()`` builds (through
    ``backend.<where>``)."""
    import importlib
    module = importlib.import_module(f"streamjit.backend.{where}")
    seen, original = [], module.run_post_o3

    def recording(text, *args):
        if "streamjit.stream_" in text:
            seen.append(text)
        return original(text, *args)

    module.run_post_o3 = recording
    try:
        compile_kernel()
    finally:
        module.run_post_o3 = original
    return seen[which]


def _write(name, text):
    with open(os.path.join(FIXTURES, name), "w") as f:
        f.write(text)


def _printed_by_llvm(text):
    import llvmlite.binding as llvm
    module = llvm.parse_assembly(text)
    module.verify()
    return str(module)


def _renamed(text, names):
    """``text`` with each local name renamed (whole names only)."""
    for old, new in names.items():
        text = re.sub(re.escape(old) + r"(?![-\w.$])", lambda _: new, text)
    return text


def _second_function(text, function, offsets):
    """``text`` with a copy of ``function`` named ``@second_function`` whose
    one-index ``getelementptr i8`` offsets are replaced per ``offsets``."""
    start = text.index(next(line for line in text.split("\n") if line.startswith("define ") and function in line))
    end = text.index("\n}\n", start) + 3
    copy = re.sub(r"@\"?[\w.$]*" + re.escape(function) + r"[\w.$]*\"?\(", "@second_function(", text[start:end], count=1)
    copy = re.sub(r"getelementptr i8, ptr (%[-\w.$]+), i64 (\d+)",
                  lambda m: f"getelementptr i8, ptr {m.group(1)}, i64 {offsets.get(int(m.group(2)), m.group(2))}", copy)
    copy = copy.replace("define ", "define internal ", 1).replace(" !dbg !", " !dbg.removed !", 1)
    return text[:end] + copy + text[end:]


def capture_plain():
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="streamjit-capture-")  # (not the user's profile)
    from streamjit.machine.profile import LoadStage, stage_record, update_profile_file
    # the suite's machine profile (tests/conftest.py): streamed loads prefetched nta 2 KiB ahead, non-temporal;
    # scalar NT stores of every item size
    update_profile_file({"profile": {"stream_loads": stage_record(LoadStage("nta", 2048, True)),
                                     "sources": stage_record(LoadStage()), "scalar_nt_bytes": [4, 8]}})
    import streamjit as sj

    f64, f32 = np.random.default_rng(0).random(1000), np.ones(1000, np.float32)
    kernel = sj.stream_kernel(stream_stores=["a"], stream_loads=["b", "c"], threshold=None)(triad)
    triad_text = _captured(lambda: kernel(f32.copy(), f32, f32, np.float32(2)))
    _write("triad_f32.ll", triad_text)
    _write("aarch64_triad.ll", _captured(lambda: kernel.inspect_asm(kernel.signatures[0], target=NEON[0], cpu=NEON[1]),
                                         "cross_target"))
    narrow = sj.stream_kernel(stream_stores=["out"], threshold=None)(positive)
    narrow_text = _captured(lambda: narrow(np.zeros(1000, np.bool_), f64))
    _write("positive_bool.ll", narrow_text)
    backwards = sj.stream_kernel(stream_stores=["out"], threshold=None)(reversed_positive)
    _write("reversed_bool.ll", _captured(lambda: backwards(np.zeros(1000, np.bool_), f64)))
    converting = sj.stream_kernel(stream_stores=["out"], threshold=None)(convert)
    _write("uint16_from_double.ll", _captured(lambda: converting(np.zeros(1000, np.uint16), f64)))
    filled = sj.stream_kernel(stream_stores=True, threshold=None)(fills)
    u8 = np.zeros(1000, np.uint8)
    _write("fills.ll", _captured(lambda: filled(np.ones(1000), u8.copy(), u8.copy(), np.zeros(1000, np.bool_),
                                                np.uint8(3))))
    raising = sj.stream_kernel(stream_stores=["out"], threshold=None)(divide)
    _write("divide.ll", _captured(lambda: raising(np.zeros(1000), f64 + 1)))
    # value names LLVM prints with `$` and in quotes: the triad's first loaded-from
    # pointers, the narrow stores' pointers
    loads = re.findall(r"= load <\d+ x float>, ptr (%[-\w.$]+), align", triad_text)[:4]
    _write("names_triad.ll", _printed_by_llvm(_renamed(triad_text, dict(zip(loads, (
        '%"src$ 0"', "%$src.1", '%"src 2"', "%src-$3"))))))
    stores = re.findall(r"store <4 x i8> %[-\w.$]+, ptr (%[-\w.$]+), align", narrow_text)[:4]
    _write("names_bool.ll", _printed_by_llvm(_renamed(narrow_text, dict(zip(stores, (
        '%"$out 0"', "%$out.1", '%"out 2"', "%out-$3"))))))
    # a second function with the first one's names at other constant offsets
    kernel_name = re.search(r"define [^\n]*@(_ZN[\w.]*positive[\w.]*)\(", narrow_text).group(1)
    _write("two_functions.ll", _printed_by_llvm(_second_function(narrow_text, kernel_name, {4: 104, 8: 108, 12: 112})))


def parallel_scale(out, a):
    for i in prange(a.shape[0]):
        out[i] = 2.0 * a[i]


def capture_debug():
    import streamjit as sj
    parallel = sj.stream_kernel(stream_stores=["out"], parallel=True)(parallel_scale)
    # (the prange worker's own module, first optimized: its largest metadata ids are debug information's)
    _write("debug_prange.ll", _captured(lambda: parallel(np.zeros(1000), np.ones(1000)), which=0))
    narrow = sj.stream_kernel(stream_stores=["out"], threshold=None)(positive)
    _write("debug_positive_bool.ll", _captured(lambda: narrow(np.zeros(1000, np.bool_),
                                                              np.random.default_rng(0).random(1000))))


if __name__ == "__main__":
    if sys.argv[1:] == ["--debug"]:
        capture_debug()
    else:
        capture_plain()
        subprocess.run([sys.executable, __file__, "--debug"], env=dict(os.environ, NUMBA_DEBUGINFO="1"), check=True)
