"""PTX -> machine code (ptxas, nvdisasm), and the GPU stream report.

No GPU is needed: numba-cuda compiles to PTX without a device, and
ptxas + nvdisasm (the ``nvidia-cuda-nvcc`` and ``nvidia-cuda-nvdisasm``
wheels, or a CUDA toolkit on ``PATH``) turn it into SASS, where the hints
show as ``STG.E.EF`` (``.128`` for a vector store, ``.U8`` ... for narrow
numbers), ``LDG.E.EF`` (or
``LDG.E.NA...CONSTANT`` for ``load_cache="nc"``),
``LDGSTS`` / ``LDGDEPBAR`` / ``DEPBAR.LE SB0, n``. The report is the CPU's
`report.StreamReport` (an `ArrayReport` per array, in `report.COLUMNS`): it
counts global loads and stores, streamed (``.cs``, ``.L1::no_allocate``) or
not, for the array parameter their address is computed from, and
``cp.async`` copies by the comment each carries (``// sj:cp:<array>``,
`intrinsics.py`); the machine NT stores are the SASS's ``STG.E.EF``
(``.128``: vector), and what the GPU has none of is zero or None, with
why (`ABSENT`).
"""

import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter

from ..errors import StreamError
from ..llvm_text.counts import ArrayReport
from ..inspection.report import StreamReport

_HINT = re.compile(r"//\s*sj:(\w+):(\w*)")
# SASS opcodes that show the hints, counted in the report
SASS_HINTS = {
    "STG.E.EF": re.compile(r"\bSTG\.E\.EF(?:\.(?:U8|S8|U16|S16|32|64))?\s"),
    "STG.E.EF.128": re.compile(r"\bSTG\.E\.EF\.128\b"),
    "LDG.E.EF": re.compile(r"\bLDG\.E\.EF(?:\.(?:U8|S8|U16|S16|32|64))?\s"),
    "LDG.E.EF.128": re.compile(r"\bLDG\.E\.EF\.128\b"),
    "LDG.E.NA": re.compile(r"\bLDG\.E\.NA\b"),
    "LDGSTS": re.compile(r"\bLDGSTS\b"),
    "LDGDEPBAR": re.compile(r"\bLDGDEPBAR\b"),
    "DEPBAR.LE": re.compile(r"\bDEPBAR\.LE\b"),
}


def tool(name):
    """The path of a CUDA tool: in an ``nvidia`` wheel (the release of the
    NVVM numba-cuda uses, so it reads the PTX version NVVM writes), else on
    ``PATH``."""
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations if spec else None) or ():
        for sub in sorted(os.listdir(root), reverse=True):
            candidate = os.path.join(root, sub, "bin", name)
            if os.access(candidate, os.X_OK):
                return candidate
    found = shutil.which(name)
    if found:
        return found
    raise StreamError(f"{name} not found: pip install nvidia-cuda-nvcc nvidia-cuda-nvdisasm (the 'test-cuda' extra), "
                      "or put a CUDA toolkit's bin on PATH")


def sass(ptx, cc):
    """nvdisasm's listing of ``ptx`` assembled by ptxas for ``sm_<cc>``."""
    arch = f"sm_{cc[0]}{cc[1]}"
    with tempfile.TemporaryDirectory() as tmp:
        source, binary = os.path.join(tmp, "k.ptx"), os.path.join(tmp, "k.cubin")
        with open(source, "w") as f:
            f.write(ptx)
        for command in ([tool("ptxas"), f"-arch={arch}", source, "-o", binary], [tool("nvdisasm"), "-c", binary]):
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode:
                raise StreamError(f"{os.path.basename(command[0])} failed for {arch}: {done.stderr.strip()}")
        return done.stdout


# A PTX instruction that defines a register: opcode, destination, operands.
_DEFINES = re.compile(r"^\s*(?:@!?%\w+\s+)?([a-z][\w.:]*)\s+(%\w+)\s*,(.*);")
_PARAM = re.compile(r"\[\w+_param_(\d+)\]")
_REGISTER = re.compile(r"%\w+")
# A global memory access: store or load, the rest of its opcode, the
# register its address starts from.
_ACCESS = re.compile(r"^\s*(?:@!?%\w+\s+)?(st|ld)\.global\.(\S*)[^\[]*\[(%\w+)")
# Instructions whose result is still an address when an operand is (a
# pointer plus or minus an offset, a copy, a choice). The others (``and``,
# ``shr``, ``mul``, ``cvt``, loads...) make a number of it: the alignment
# tests of `vector.py` compute indices from one array's address, which do
# not make the other arrays' accesses that use them its accesses.
_POINTER_OPS = ("mov", "add", "sub", "mad", "cvta", "selp")
# The GPU's report is the CPU's class (kept under this name for code that imports it).
CudaStreamReport = StreamReport
# What the GPU report's table counts.
LEGEND = ("(instructions in the PTX, not executions; NT: st/ld.global.cs (or .nc); prefetch: cp.async into a load "
          "ring)")
# Why a GPU report's fences are 0 and its calls and fallbacks None.
ABSENT = ("GPU: fences 0, a .cs store is an ordinary store with a cache hint and the kernel's completion orders "
          "every store; calls and fallbacks not counted, a GPU kernel has no size test and counts no launches")


def _data_parameters(types):
    """{PTX parameter number: array} of the arrays' data pointers: numba-cuda
    passes each argument as the leaves of its data model's argument type
    (an array as its fields, the data pointer among them)."""
    from numba.cuda.descriptor import cuda_target
    models = cuda_target.target_context.data_model_manager
    found, at = {}, 0
    for name, ty in types.items():
        model = models.lookup(ty)
        if hasattr(ty, "ndim"):
            found[at + model.get_field_position("data")] = name
        at += _leaves(model.get_argument_type())
    return found


def _leaves(argument_type):
    return sum(map(_leaves, argument_type)) if isinstance(argument_type, tuple) else 1


def _address_arrays(ptx, data):
    """A function of a register: the arrays whose data pointers (``data``,
    `_data_parameters`) its value is an address into, through the
    registers that define it (every definition: loops redefine registers)
    by `_POINTER_OPS`."""
    defs = {}
    for line in ptx.splitlines():
        found = _DEFINES.match(line)
        if found:
            opcode, target, operands = found.groups()
            param = _PARAM.search(operands) if opcode.startswith("ld.param") else None
            sources = [int(param.group(1))] if param else _REGISTER.findall(operands) \
                if opcode.split(".")[0] in _POINTER_OPS else []
            defs.setdefault(target, []).extend(sources)

    def arrays(register):
        hit, stack, seen = set(), [register], set()
        while stack:
            source = stack.pop()
            if isinstance(source, int):
                hit.add(data.get(source))
            elif source not in seen:
                seen.add(source)
                stack.extend(defs.get(source, ()))
        return hit - {None}
    return arrays


# Where each function of a PTX module starts.
_FUNCTION = re.compile(r"^(?:\.visible\s+|\.weak\s+)?\.(entry|func)\b", re.M)


def _kernel_text(ptx):
    """The kernel's own functions (``.entry``) of a PTX module: a device
    function it calls numbers its own parameters and registers from 0."""
    starts = [(m.start(), m.group(1)) for m in _FUNCTION.finditer(ptx)] + [(len(ptx), None)]
    return "".join(ptx[at:end] for (at, kind), (end, _) in zip(starts, starts[1:]) if kind == "entry")


def _field(access):
    """The `ArrayReport` field that counts a global access (`_ACCESS`): a
    streamed one has the evict-first or the no-L1 cache operator."""
    kind, opcode = access.group(1), access.group(2).split(".")
    if "cs" not in opcode and "L1::no_allocate" not in opcode:
        return "plain_stores" if kind == "st" else "plain_loads"
    if kind == "ld":
        return "nt_loads"
    return "nt_vector_stores" if {"v2", "v4"} & set(opcode) else "nt_scalar_stores"


def report(types, cc, ptx, machine_code, notes, *, peeled_loops=0, done="", streams=True):
    """The report of one compile, a `StreamReport`: ``types`` the kernel's
    parameters and their types, ``notes`` (array, text) pairs, ``done`` its
    first line (`report.what_was_done`), ``streams`` whether any store
    streams. Global loads and stores of
    the kernel function count for the one array parameter their address
    derives from; the ``cp.async`` copies into load rings by the tag each
    carries."""
    counts = {name: ArrayReport() for name, ty in types.items() if hasattr(ty, "ndim")}
    machine = Counter({opcode: sum(bool(pattern.search(line)) for line in machine_code.splitlines())
                       for opcode, pattern in SASS_HINTS.items()})
    result = StreamReport(signature=tuple(types.values()), arrays=counts, fences=0, peeled_loops=peeled_loops,
                          machine_nt_vector_stores=machine["STG.E.EF.128"],
                          machine_nt_scalar_stores=machine["STG.E.EF"], done=done, streams=streams, cc=cc,
                          machine=machine, absent=ABSENT, legend=LEGEND, verbose=True)
    kernel = _kernel_text(ptx)
    arrays = _address_arrays(kernel, _data_parameters(types))
    for line in kernel.splitlines():
        tag, access = _HINT.search(line), _ACCESS.match(line)
        if tag and tag.group(1) in ("commit", "wait"):
            setattr(result, tag.group(1) + "s", getattr(result, tag.group(1) + "s") + 1)
            continue
        if tag:
            array, field_name = tag.group(2), "prefetches"
        elif access and len(arrays(access.group(3))) == 1:
            array, field_name = arrays(access.group(3)).pop(), _field(access)
        else:
            continue
        entry = counts.setdefault(array, ArrayReport())
        setattr(entry, field_name, getattr(entry, field_name) + 1)
    for array, text in notes:
        counts.setdefault(array, ArrayReport()).notes.append(text)
    return result
