"""The stages run on the optimized LLVM module, in order.

Read this like `kernel/pipeline.py`, which lists the Numba-IR passes: Numba lowers
and runs O3, then these stages rewrite the optimized module's text, each one
module with one entry point ``run(module, target) -> changed``, working per
function on the records of `llvm_text/module.py`:

1. ``keep_scalar``: the calls that kept the peeled head loops scalar go;
2. ``vector_math``: under fastmath, vector calls of ``sin``, ``cos``,
   ``atan2``, ``exp`` ... become calls of glibc's libmvec (x86-64 Linux),
   instead of one scalar call per lane;
3. ``stream_memset``: a marked, aligned ``memset`` LLVM made of a streamed
   loop becomes a streamed fill;
4. ``widen_stores``: runs of narrow marked vector stores join into one
   full-width store;
5. ``nontemporal``: marked, aligned stores (and loads, where the machine
   profile says so) get ``!nontemporal``; scalar floats go through ``movnti``
   on x86;
6. ``pair_nontemporal``: on AArch64, adjacent 128-bit NT accesses become
   256-bit ``stnp``/``ldnp`` pairs;
7. ``prefetch``: prefetches ahead of the marked loads that ask for them;
8. ``exit_fences``: a store fence before every return an NT store reaches
   unfenced (the exceptions raised inside a streamed nest);
9. ``array_pool``: the large arrays the kernel allocates reuse the memory
   of freed ones, instead of fresh pages.

They are the last steps of the build list (`backend/stages.py`): the host
build (`backend/library.py`) and the inspection for other CPUs
(`backend/cross_target.py`) both run it, so they cannot drift apart. Which
targets a stage runs for is written in `APPLIES`, not inside the stage. ``STREAMJIT_DUMP_AFTER=<stage name>`` prints the module after that
stage, for each module that holds streamjit marks, and for the kernel's own
module where a stage has work on unmarked code;
``STREAMJIT_OVERRIDE_AFTER=<stage name>:<path.ll>`` replaces the kernel's
own module after that stage with the file's (`dump.py`).
"""

from ..dump import dump_after, override_after, override_request
from ..verify import verify_llvm, verifying
from ..protocol.keep_scalar import MARKER as KEEP_SCALAR
from ..protocol.markers import DOMAIN_NAME
from . import (array_pool, exit_fences, keep_scalar, nontemporal, pair_nontemporal, prefetch, stream_memset,
               vector_math, widen_stores)
from ..llvm_text.module import Module

STAGES = (keep_scalar, vector_math, stream_memset, widen_stores, nontemporal, pair_nontemporal, prefetch,
          exit_fences, array_pool)
# The stages that change code without streamjit's marks, and the code they
# may change (`run_post_o3`'s ``code``): the kernel's own module, and for
# vector math the modules of its prange workers (their loops are the
# kernel's, compiled apart by Numba's parfor lowering); never the helpers
# Numba links into `numba.njit` code too.
UNMARKED_CODE_STAGES = {vector_math: ("kernel", "worker"), array_pool: ("kernel",)}
# The targets a stage runs for, written here rather than inside the stage (a
# `Target` predicate; every target where a stage is absent): the pairs are
# AArch64's ``stnp``/``ldnp``, the pool is built on Linux's allocator.
APPLIES = {pair_nontemporal: lambda target: target.arch == "aarch64", array_pool: lambda target: target.linux}


def stage_name(stage):
    """A stage's name: its module's last dotted component (``nontemporal``), as
    ``STREAMJIT_DUMP_AFTER`` takes it."""
    return stage.__name__.rsplit(".", 1)[-1]


STAGE_NAMES = tuple(map(stage_name, STAGES))


def run_post_o3(text, target, module_name="", code="kernel"):
    """(``text`` after every stage for ``target``, whether any changed it).

    Numba makes many modules while it compiles a kernel (its helpers, the
    wrappers), and most hold nothing of streamjit's: no mark, no
    keep-scalar call, no allocation to advise and no vector math call, so
    no stage has work there. Those are passed through without being parsed (first-call
    compile time). ``code``: "kernel" (the kernel's own module), "worker"
    (one of its prange workers) or "shared" (a helper Numba shares with
    other compiles, `backend/library.py`); the stages that change unmarked
    code run on the code `UNMARKED_CODE_STAGES` lets them."""
    marked = f'!"{DOMAIN_NAME}' in text
    unmarked_work = any(code in where and stage.has_work(text) for stage, where in UNMARKED_CODE_STAGES.items())
    request = override_request()
    overriding = code == "kernel" and request is not None and request[0] in STAGE_NAMES
    if not marked and KEEP_SCALAR not in text and not unmarked_work and not overriding:
        return text, False
    module = Module(text)
    changed = False
    for stage in STAGES:
        if code in UNMARKED_CODE_STAGES.get(stage, (code,)) and APPLIES.get(stage, bool)(target):
            changed |= stage.run(module, target)
            if verifying():
                verify_llvm(module, stage_name(stage))
            if marked or unmarked_work:
                dump_after(stage_name(stage), f"LLVM IR of {module_name or 'the module'}", lambda: print(module))
        replacement = override_after(stage_name(stage), module) if overriding else None
        if replacement is not None:
            module, changed = Module(str(replacement)), True
    return (str(module), True) if changed else (text, False)
