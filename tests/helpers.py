"""What several test modules share that is not a kernel (the shared kernels
are in kernels.py and the other *_kernels.py modules): random arrays of
every dtype, data placed in a page, the x86-64 machine-code mark, a call
that returns its signature, the stream passes' IR right after one runs,
the environment of a test's Python subprocess, and the pattern a documented example's printed report is compared with.
No test module imports another (tests/test_imports.py checks)."""

import dataclasses
import functools
import io
import os
import re
from unittest import mock

import llvmlite.binding as llvm
import numba
import numpy as np
import pytest
from numba.core import ir
from numba.core.analysis import compute_cfg_from_blocks

import streamjit as sj
from streamjit.machine.cpu_defaults import STALLING_PAGE_ALIAS_BYTES

# ---------------------------------------------------------------- subprocesses

CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def checkout_env(**variables):
    """The environment for a test's Python subprocess: this checkout's
    streamjit first on its path (a script's sys.path starts at the
    script's folder, ``-c`` at the working directory), and ``variables``."""
    path = os.pathsep.join(filter(None, [CHECKOUT, os.environ.get("PYTHONPATH")]))
    return dict(os.environ, PYTHONPATH=path, **variables)

# ---------------------------------------------------------------- the staged loop


def staged_profile():
    """Kernels decorated inside get the suite's profile with the 4K-aliasing
    check of the CPUs whose streamed stores stall behind sources a few bytes
    behind them modulo 4 KiB (Zen 2's row; the suite's profile has none): a
    call whose sources trail its streamed stores by less runs the staged loop
    (`passes/staging.py`), or the plain loop where it cannot be staged."""
    from streamjit import options
    profile = dataclasses.replace(options.machine_profile(), page_alias_bytes=STALLING_PAGE_ALIAS_BYTES)
    return mock.patch.object(options, "machine_profile", lambda: profile)


# ---------------------------------------------------------------- arrays

DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
          np.float32, np.float64, np.complex64, np.complex128, np.bool_]


def random_array(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) > 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    values = rng.standard_normal(shape) * 1e3
    if dtype.kind == "c":
        values = values + 1j * rng.standard_normal(shape)
    return values.astype(dtype)


def at_offset(n, offset, dtype, rng):
    """Random data of ``n`` items of ``dtype`` starting ``offset`` bytes into a 4 KiB page."""
    itemsize = np.dtype(dtype).itemsize
    raw = np.empty(n * itemsize + 8192, np.uint8)
    skip = (offset - raw.ctypes.data) % 4096
    array = raw[skip:skip + n * itemsize].view(dtype)
    array[:] = rng.integers(0, 100, n) if np.dtype(dtype).kind == "i" else rng.random(n) * 10 - 5
    return array


# ---------------------------------------------------------------- machine code

X86_AVX = llvm.get_process_triple().startswith("x86_64") and llvm.get_host_cpu_features().get("avx", False)
needs_x86_avx = pytest.mark.skipif(not X86_AVX, reason="machine-code checks are written for x86-64 with AVX")


def compiled(kernel, *args):
    """Call ``kernel`` and return the signature those arguments compiled."""
    kernel(*args)
    return tuple(numba.typeof(a) for a in args)


# ---------------------------------------------------------------- the passes' IR

class Seen:
    """What a pass left: the IR as text, its loops and calls, the state."""

    def __init__(self, state):
        self.state = state
        out = io.StringIO()
        state.func_ir.dump(file=out)
        self.text = out.getvalue()
        assigns = [s for b in state.func_ir.blocks.values() for s in b.body if isinstance(s, ir.Assign)]
        values = {s.target.name: s.value.value for s in assigns if isinstance(s.value, (ir.Global, ir.FreeVar))}
        self.globals = list(values.values())
        # the globals that are called
        self.called = [values.get(s.value.func.name) for s in assigns
                       if isinstance(s.value, ir.Expr) and s.value.op == "call"]
        self.loops = len(compute_cfg_from_blocks(state.func_ir.blocks).loops())


def after(monkeypatch, module, function, args, **options):
    """Compile ``function`` for ``args`` and return `Seen` right after ``module``'s pass."""
    # (threshold None: no size test unless asked)
    return compiled_after(monkeypatch, module, sj.stream_kernel(**{"threshold": None, **options})(function), args)


def compiled_after(monkeypatch, module, kernel, args):
    """Call ``kernel`` on ``args``, which compiles it for them, and return `Seen` right after ``module``'s pass."""
    seen = []
    original = module.run_pass

    def run_pass(state):
        changed = original(state)
        seen.append(Seen(state))
        return changed

    monkeypatch.setattr(module, "run_pass", run_pass)
    kernel(*args)
    return seen[-1]


def hdiff_args(shape, seed):
    """NPBench hdiff's arguments ``(in_field, out, coeff)`` for an output of ``shape``."""
    rng = np.random.default_rng(seed)
    I, J, K = shape
    return rng.standard_normal((I + 4, J + 4, K)), rng.standard_normal((I, J, K)), rng.standard_normal((I, J, K))


@functools.cache
def compiled_hdiff():
    """``(kernel, Seen)``: hdiff streamed, compiled once per process for the
    tests of test_temporaries.py and test_view_shifts.py (the suite's longest
    compile; both files' tests share an xdist group), and its IR right after
    `passes/array_stores.py`'s pass."""
    from streamjit.measure.calibration_stencils import hdiff  # NPBench's, as calibrate times it
    from streamjit.passes import array_stores

    kernel = sj.stream_kernel(stream_stores=True, threshold=None)(hdiff)
    with pytest.MonkeyPatch.context() as patch:
        return kernel, compiled_after(patch, array_stores, kernel, hdiff_args((4, 5, 6), 0))


# ---------------------------------------------------------------- documented output

# The bytes of the README tour's calls under threshold="auto" (copy's dst[1:], jacobi's A and B); each streams
# where this machine's threshold lies below them.
TOUR_CALL_BYTES = (16 << 20) * 4 - 4
STREAMED = "calls: 1 streamed, 0 plain below the threshold"
BELOW = "calls: 0 streamed, 1 plain below the threshold"


def expected_pattern(output, threshold=0):
    """A regex of the expected output: the loads line as any text, the
    table's rows and the machine code's store counts as any numbers; the
    calls line of a call under ``threshold="auto"`` below ``threshold``
    saying so, that of a kernel allocating its output streamed or staged."""
    lines, auto, allocates = [], True, False
    for line in output.rstrip("\n").splitlines():
        if re.match(r"\w+: ", line) and not line.startswith(("calls: ", "loads: ", "speed from: ")):
            auto = line.split(":")[0] in ("copy", "jacobi")          # (the kernels left at threshold="auto")
            allocates = line.split(":")[0] in ("saxpy", "clipped")   # (the kernels that allocate their output)
        if line.startswith("loads: "):
            lines.append(r"loads: .*")
        elif re.fullmatch(r"\s*\w+(\s+\d+){6}", line):                       # a table row
            lines.append(r"\s*" + re.escape(line.split()[0]) + r"(\s+\d+){6}")
        elif line.startswith("fences: "):  # (another CPU's backend may split vector stores: a note says so)
            lines.append(r"fences: \d+   peeled loops: \d+   machine NT stores: \d+ vector, \d+ scalar"
                         r"(\n  \(machine code: [^\n]*\))?")
        elif allocates and line.startswith(STREAMED):
            # (where the allocator puts the kernel's array a few bytes ahead of its source in a page, on a CPU
            # whose profile checks that, the call runs staged: no argument of the call decides it)
            lines.append(re.escape(line).replace(re.escape("calls: 1 streamed, "), "calls: (1 streamed, |0 streamed, "
                                                 r"1 streamed through a staging buffer \([^)]*\), )"))
        else:
            if auto and threshold >= TOUR_CALL_BYTES:
                line = line.replace(STREAMED, BELOW)
            lines.append(re.escape(line))
    return "\n".join(lines)
