"""PTX -> machine code (ptxas, nvdisasm), and the GPU stream report.

No GPU is needed: numba-cuda compiles to PTX without a device, and
ptxas + nvdisasm (the ``nvidia-cuda-nvcc`` and ``nvidia-cuda-nvdisasm``
wheels, or a CUDA toolkit on ``PATH``) turn it into SASS, where the hints
show as ``STG.E.EF`` (``.128`` for a vector store), ``LDG.E.EF`` (or
``LDG.E.NA...CONSTANT`` for ``load_cache="nc"``),
``LDGSTS`` / ``LDGDEPBAR`` / ``DEPBAR.LE SB0, n``. The report counts the
hinted PTX instructions per array from the comment each intrinsic puts
after its instruction (``// sj:<kind>:<array>``, `intrinsics.py`).
"""

import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass, field

from ..errors import StreamError

_HINT = re.compile(r"//\s*sj:(\w+):(\w*)")
# SASS opcodes that show the hints, counted in the report
SASS_HINTS = {
    "STG.E.EF": re.compile(r"\bSTG\.E\.EF(?:\.(?:32|64))?\s"),
    "STG.E.EF.128": re.compile(r"\bSTG\.E\.EF\.128\b"),
    "LDG.E.EF": re.compile(r"\bLDG\.E\.EF(?:\.(?:32|64))?\s"),
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


@dataclass
class ArrayCounts:
    vector_stores: int = 0  # st.global.cs.v4.b32 / .v2.b64
    scalar_stores: int = 0  # st.global.cs
    vector_loads: int = 0  # ld.global.cs.v4.b32 / .v2.b64 (or .nc)
    loads: int = 0  # ld.global.cs or ld.global.nc.L1::no_allocate
    async_copies: int = 0  # cp.async into a ring
    notes: list = field(default_factory=list)


@dataclass
class CudaStreamReport:
    signature: tuple
    cc: tuple
    arrays: dict  # name -> ArrayCounts
    commits: int = 0  # cp.async.commit_group
    waits: int = 0  # cp.async.wait_group
    machine: Counter = field(default_factory=Counter)  # SASS opcode -> count (SASS_HINTS)

    def __str__(self):
        lines = [f"GPU stream report for {self.signature} (sm_{self.cc[0]}{self.cc[1]}, counted in PTX)",
                 f"{'array':>10}{'st.cs vec':>12}{'st.cs':>12}{'ld vec':>12}{'ld':>12}{'cp.async':>12}"]
        for name, c in sorted(self.arrays.items()):
            lines.append(f"{name:>10}{c.vector_stores:>12}{c.scalar_stores:>12}{c.vector_loads:>12}{c.loads:>12}"
                         f"{c.async_copies:>12}")
        lines.append(f"commit_group: {self.commits}   wait_group: {self.waits}   SASS: "
                     + ", ".join(f"{k} {self.machine[k]}" for k in SASS_HINTS))
        lines += [f"  {name}: {note}" for name, c in sorted(self.arrays.items()) for note in c.notes]
        return "\n".join(lines)


def report(signature, cc, ptx, machine_code, arrays, notes):
    """The report of one compile: ``arrays`` are the kernel's array
    parameters; ``notes`` (array, text) pairs."""
    counts = {name: ArrayCounts() for name in arrays}
    result = CudaStreamReport(signature, cc, counts)
    for line in ptx.splitlines():
        found = _HINT.search(line)
        if not found:
            continue
        kind, array = found.groups()
        if kind == "commit":
            result.commits += 1
        elif kind == "wait":
            result.waits += 1
        else:
            entry = counts.setdefault(array, ArrayCounts())
            field_name = {"st": "scalar_stores", "ld": "loads", "cp": "async_copies"}.get(
                kind, "vector_loads" if kind.startswith("ld") else "vector_stores")
            setattr(entry, field_name, getattr(entry, field_name) + 1)
    for line in machine_code.splitlines():
        for opcode, pattern in SASS_HINTS.items():
            result.machine[opcode] += bool(pattern.search(line))
    for array, text in notes:
        counts.setdefault(array, ArrayCounts()).notes.append(text)
    return result
