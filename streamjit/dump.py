"""``STREAMJIT_DUMP_AFTER=<name>`` (or ``all``): print the code after a named
stage, as Numba's ``NUMBA_DEBUG_PRINT_AFTER`` does for its own passes. The
names are those of the Numba-IR passes (`kernel/pipeline.py`) and of the steps of the
LLVM build (`backend/stages.py`: ``loop_widths``, ``o3`` and the post-O3
stages).

``STREAMJIT_OVERRIDE_AFTER=<step>:<path.ll>``: the build continues after
the build step ``<step>`` from the LLVM module in the file instead of the
one the step made, as Triton's ``TRITON_KERNEL_OVERRIDE`` does for its
stages: dump a kernel's module after a step, edit it, and run the edit
without touching the compiler. Only a kernel's own module is replaced, the
one the file was dumped from: the same module name (the kernel's, on the
file's ``; ModuleID`` line) and the same functions for the same target. Numba numbers the functions it compiles
in a process, so the edit applies to a rerun of the program that dumped it,
compiling in the same order; a kernel of that name whose functions differ
(another signature, another order) is left as it is, with a warning.
"""

import hashlib
import os
import re
import warnings

import llvmlite.binding as llvm

from .errors import StreamWarning

DUMP_ENV = "STREAMJIT_DUMP_AFTER"
OVERRIDE_ENV = "STREAMJIT_OVERRIDE_AFTER"


def dump_after(name, what, show):
    """Print ``what`` after stage ``name`` with ``show()``, when asked to."""
    if os.environ.get(DUMP_ENV) in (name, "all"):
        print(f"---- streamjit: {what} after {name} ----")
        show()


def override_request():
    """``(step, path)`` that ``STREAMJIT_OVERRIDE_AFTER`` names, or None."""
    value = os.environ.get(OVERRIDE_ENV)
    if not value:
        return None
    step, _, path = value.partition(":")
    if not step or not path:
        raise ValueError(f"{OVERRIDE_ENV}={value!r}: expected <build step>:<path of an .ll file>")
    return step, path


def override_key():
    """What an override changes in the code, for the on-disk cache's key:
    the request and the file's digest (None without one), so that neither
    an overridden entry nor one built without the override is loaded for
    the other."""
    request = override_request()
    if request is None:
        return None
    try:
        with open(request[1], "rb") as f:
            return request, hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return request, None


def _read_override(step, path):
    """``(the module's name, the module)`` of the file: the name from its
    ``; ModuleID`` line, which LLVM's parser reads as the comment it is."""
    try:
        with open(path) as f:
            text = f.read()
        module = llvm.parse_assembly(text)
        module.verify()
    except (OSError, RuntimeError) as error:
        raise ValueError(f"{OVERRIDE_ENV}: the file {path!r} given for build step {step!r} is not a valid LLVM "
                         f"module: {error}") from error
    return _module_id(text), module


def _module_id(text):
    named = re.match(r"; ModuleID = '(.*)'", text)
    return named and named[1]


def _as_llvmlite(module):
    """``module`` as an llvmlite module named as its text says."""
    if isinstance(module, llvm.ModuleRef):
        return module
    text = str(module)
    parsed = llvm.parse_assembly(text)
    parsed.name = _module_id(text) or ""
    return parsed


def _defined(module):
    return module.triple, sorted(f.name for f in module.functions if not f.is_declaration)


def override_after(step, module):
    """The llvmlite module the build goes on with after ``step``, where
    ``STREAMJIT_OVERRIDE_AFTER`` names that step and a file dumped from
    ``module`` (a kernel's own module: an llvmlite module, or anything whose
    text is LLVM IR); None where it does not."""
    request = override_request()
    if request is None or request[0] != step:
        return None
    name, replacement = _read_override(*request)
    current = _as_llvmlite(module)
    if name != current.name:
        return None
    if _defined(replacement) != _defined(current):
        warnings.warn(f"{OVERRIDE_ENV}: {request[1]!r} was not used after {step!r} for {name!r}: it defines other "
                      "functions than this compile's (another signature, or kernels compiled in another order than "
                      "in the run that dumped it)", StreamWarning, stacklevel=2)
        return None
    print(f"---- streamjit: LLVM IR of {name} after {step} replaced by {request[1]} ----")
    replacement.name = name
    return replacement
