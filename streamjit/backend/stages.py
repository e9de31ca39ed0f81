"""The build of a linked module into final code: one ordered list of named
steps, as Triton's backend stages.

``BUILD`` names them in the order they run:

1. ``loop_widths``: the vector widths the streamed stores' markers ask for,
   set on their loops before O3 reads them (`pre_o3/loop_widths.py`);
2. ``o3``: Numba's optimization of a library's final module (`o3.py`);
3. the post-O3 stages of `post_o3/stages.py` (``STAGES``), on the
   optimized text, each for the targets its ``APPLIES`` entry names.

The host build (`library.py`) and the build for another CPU
(`cross_target.py`) both call `build`, for their own target machine, so
they run the same list. Every step can be named in
``STREAMJIT_DUMP_AFTER`` (the first two print the modules of the kernel
and its prange workers, the post-O3 stages those that hold streamjit's
marks), every step in ``STREAMJIT_OVERRIDE_AFTER=<step>:<path.ll>``, which
replaces a kernel's own module after that step with the file's (`dump.py`:
the way to try an edit of the code one step makes), and
``STREAMJIT_VERIFY_EACH=1`` runs LLVM's verifier after each, naming the
step at fault (`verify.py`).
"""

import llvmlite.binding as llvm

from ..dump import dump_after, override_after
from ..post_o3.stages import STAGE_NAMES, run_post_o3
from ..pre_o3 import loop_widths
from ..verify import verify_llvm, verifying
from .o3 import no_record, o3

# The steps on the llvmlite module, each ``(name, step(module, machine,
# record) -> module)``; the post-O3 stages follow, on its text.
MODULE_STEPS = (("loop_widths", lambda module, machine, record: loop_widths.run(module)), ("o3", o3))
BUILD = tuple(name for name, _ in MODULE_STEPS) + STAGE_NAMES


def build(module, machine, target, name="", code="kernel", record=no_record):
    """``(final module, its text)``: ``module`` (linked, unoptimized, with
    the data layout of ``machine``) after every step of ``BUILD`` for
    ``target`` (a `protocol.targets.Target`). ``name`` names the module in
    dumps; ``code`` is `post_o3.stages.run_post_o3`'s (only a
    ``"kernel"`` module is overridden); ``record`` is `o3.o3`'s."""
    for step, run in MODULE_STEPS:
        module = run(module, machine, record)
        if verifying():
            verify_llvm(module, step)
        if code != "shared":
            dump_after(step, f"LLVM IR of {name or 'the module'}", lambda: print(module))
        replacement = override_after(step, module) if code == "kernel" else None
        module = module if replacement is None else replacement
    text, changed = run_post_o3(str(module), target, name, code=code)
    if changed:
        rewritten = llvm.parse_assembly(text)
        rewritten.verify()
        rewritten.name = module.name
        module = rewritten
    return module, text
