"""The stream passes, in order, inside Numba's own nopython pipeline.

Read this file like Halide's ``Lower.cpp``: it lists every pass streamjit
adds, where it runs and in which order. Each pass is one module under
``passes/`` with one entry point, ``run_pass(state)``, and a docstring that
says what it rewrites and why. What a pass hands to later passes is a field
of ``state.stream_facts`` (`passes/analysis/facts.py`); each pass module declares the
facts it reads, sets and leaves stale (``REQUIRES``, ``PRODUCES``,
``INVALIDATES``), which `_numba_pass` checks as the pass runs.

Before type inference (untyped Numba IR, right after Numba inlines
``inline="always"`` helpers):

1. ``canonical_loops``: ``for i, x in enumerate(a)`` and ``for x in a``
   over array parameters become ``range`` loops.

After type inference and phi removal (typed Numba IR: every variable typed,
helpers inlined, constants folded), before Numba's rewrites and parfors:

2. ``fills``: ``arr.fill(v)`` becomes the store ``arr[...] = v`` it is;
   ``array_stores``: row stores, slice assignments of array expressions,
   in-place operators and array-expression results of streamed arrays
   become (fused) element loops where that is exact (checked at run time),
   with the temporaries they read through views computed inside the loop
   (``array_expressions``: producer-consumer fusion);
   ``parallel_blocks``: with ``parallel=True``, streamed ``prange`` loops
   become parallel loops over blocks, each a sequential loop (both type
   what they insert right away, for the scan that follows);
3. ``accesses``: find every load and store of every array parameter, the
   loops around it (from the CFG), and which arrays are streamed;
4. ``legality``: Halide's per-stage rule for streamed stores;
5. ``align_peel``: innermost streamed loops split into a plain head and an
   aligned loop whose stores and loads are the intrinsics of
   ``codegen/`` (and, where trailing sources stall streamed stores, a
   staged loop: ``staging``);
6. ``fence_placement``: a store fence after each streamed nest (and its
   aligned loops);
7. ``size_check``: with a threshold, one size test at entry gates every
   aligned loop;
8. ``stream_loads``: the remaining loads of streamed sources are tagged;
9. ``call_record``: counters of which path each call took (streamed,
   below the threshold, after a run-time check), read by ``stream_calls``;
10. ``fresh_placement``: streamed arrays the kernel allocates uninitialized
    are placed apart from its array arguments modulo a page;
11. ``retype``: Numba's type inference over the inserted statements.

Numba then lowers and optimizes; ``backend/library.py`` builds the LLVM
module with the build list of ``backend/stages.py``: O3, then the post-O3
stages of ``post_o3/stages.py`` on the optimized module
(non-temporal tags, prefetches, AArch64 pairs, fences on the returns
exceptions take out of a streamed nest). After Numba's lowering:

12. ``nothing_streamed``: a warning for each array named in
    ``stream_stores`` none of whose stores reached the machine code as
    non-temporal stores, with the reasons.

``STREAMJIT_DUMP_AFTER=<pass name>`` (or ``all``) prints the IR after that
pass, as Numba's ``NUMBA_DEBUG_PRINT_AFTER`` does for its own passes; a
build step's name (`backend/stages.py`: ``loop_widths``, ``o3``, each post-O3
stage) prints the LLVM module after that step (`dump.py`), and
``STREAMJIT_OVERRIDE_AFTER=<build step>:<path.ll>`` replaces the kernel's
module after that step with the file's (an edited dump).
``STREAMJIT_VERIFY_EACH=1`` checks the IR after each pass that rewrites it,
and the LLVM module after each build step, naming the one at fault
(`verify.py`).

Private Numba APIs used here (``CompilerBase``, ``PassManager``, the pass
classes) are why Numba is pinned to the releases tested
(`versions.py`).
"""

import os
import warnings

from numba.core.compiler import CompilerBase, DefaultPassBuilder
from numba.core.compiler_machinery import AnalysisPass, FunctionPass, register_pass
from numba.core.typed_passes import InlineOverloads, NativeLowering, NativeParforLowering
from numba.core.untyped_passes import InlineInlinables

from ..dump import DUMP_ENV, OVERRIDE_ENV, dump_after, override_request
from ..errors import StreamWarning
from ..backend.stages import BUILD
from ..verify import verify_ir, verifying
from ..passes.analysis.facts import StreamFacts, guarded, record
from ..passes import (accesses, align_peel, array_stores, call_record, canonical_loops, fence_placement, fills,
                      fresh_placement, legality, nothing_streamed, parallel_blocks, retype, size_check, stream_loads)

UNTYPED_PASSES = (canonical_loops,)
TYPED_PASSES = (fills, array_stores, parallel_blocks, accesses, legality, align_peel, fence_placement, size_check,
                stream_loads, call_record, fresh_placement, retype)
LOWERED_PASSES = (nothing_streamed,)


def _pass_name(module):
    return module.__name__.rsplit(".", 1)[-1]


def _numba_pass(module, typed):
    """A Numba pass that runs ``module.run_pass(state)``: an ``AnalysisPass``,
    registered as one, where the module declares ``ANALYSIS_ONLY`` (it reads
    the IR and changes nothing in it; after lowering, where the IR holds
    Numba's ``del``s, only such passes run), else a ``FunctionPass``. It
    checks the module's contract over `StreamFacts` (`facts.guarded`,
    `facts.record`) and, with ``STREAMJIT_VERIFY_EACH=1``, the IR the pass
    left; before the first typed one, the typed statements are recorded
    (`retype.py`)."""
    name = _pass_name(module)
    analysis = getattr(module, "ANALYSIS_ONLY", False)
    base = AnalysisPass if analysis else FunctionPass

    def run_pass(self, state):
        facts = state.stream_facts
        if facts.options is None:
            return False
        if typed and facts.typed is None:
            retype.snapshot(state)
            facts.valid.add("typed")
        state.stream_facts = guarded(facts, module, name)
        try:
            changed = module.run_pass(state)
        finally:
            state.stream_facts = facts
        record(facts, module, name)
        if not analysis and verifying():
            verify_ir(state.func_ir, name)
        dump_after(name, f"IR of {state.func_id.func_qualname}", state.func_ir.dump)
        return bool(changed)

    cls = type(f"Stream_{name}", (base,), {
        "_name": f"streamjit_{name}", "__init__": lambda self: base.__init__(self), "run_pass": run_pass})
    return register_pass(mutates_CFG=not analysis, analysis_only=analysis)(cls)


_UNTYPED = [_numba_pass(m, typed=False) for m in UNTYPED_PASSES]
_TYPED = [_numba_pass(m, typed=True) for m in TYPED_PASSES]
_LOWERED = [_numba_pass(m, typed=False) for m in LOWERED_PASSES]


def deciding_passes(last="legality", skip=()):
    """``(untyped, typed)``: the Numba pass classes of the stream passes up
    to ``last`` (a pass name) in pipeline order, without those named in
    ``skip``; for a front end that needs the CPU's decision (which arrays
    stream, legality) but not its rewrites for the CPU's lowering (the GPU
    target, `cuda/legality.py`)."""
    names = [_pass_name(m) for m in UNTYPED_PASSES + TYPED_PASSES]
    if last not in names:
        raise ValueError(f"no stream pass named {last!r}; the passes: {', '.join(names)}")
    kept = {name for name in names[:names.index(last) + 1] if name not in skip}
    return tuple([cls for m, cls in zip(modules, classes) if _pass_name(m) in kept]
                 for modules, classes in ((UNTYPED_PASSES, _UNTYPED), (TYPED_PASSES, _TYPED)))


def _check_dump_env(pm):
    """A ``STREAMJIT_DUMP_AFTER`` that names none of the passes in ``pm``
    nor a build step would dump nothing, silently, and a
    ``STREAMJIT_OVERRIDE_AFTER`` that names no build step would replace
    nothing: warn, listing the names."""
    value = os.environ.get(DUMP_ENV)
    names = [cls.name().removeprefix("streamjit_") for cls, _ in pm.passes if cls.name().startswith("streamjit_")]
    if not names:
        return
    if value is not None and value != "all" and value not in names + list(BUILD):
        warnings.warn(f"{DUMP_ENV}={value!r} names no streamjit pass or stage, so nothing is printed; the names: "
                      f"{', '.join(names + list(BUILD))}, or 'all'", StreamWarning, stacklevel=2)
    request = override_request()
    if request is not None and request[0] not in BUILD:
        warnings.warn(f"{OVERRIDE_ENV}: {request[0]!r} names no build step, so nothing is replaced; the steps: "
                      f"{', '.join(BUILD)}", StreamWarning, stacklevel=2)


def add_stream_passes(pm, untyped, typed, lowered=()):
    """Insert stream pass classes into Numba's nopython pipeline ``pm``, each
    list in its order: ``untyped`` after Numba inlines ``inline="always"``
    helpers, ``typed`` after it inlines overloads, ``lowered`` after its
    lowering."""
    lowering = next(cls for cls, _ in pm.passes if cls in (NativeLowering, NativeParforLowering))
    for classes, previous in ((untyped, InlineInlinables), (typed, InlineOverloads), (lowered, lowering)):
        for cls in classes:
            pm.add_pass_after(cls, previous)
            previous = cls


class StreamCompiler(CompilerBase):
    """Numba's nopython pipeline with the stream passes added. The stream
    options arrive as the class attribute ``stream_options`` (see
    `compiler_for`); None compiles exactly as ``numba.njit``."""

    stream_options = None

    def define_pipelines(self):
        self.state.stream_facts = StreamFacts(options=self.stream_options)
        pm = DefaultPassBuilder.define_nopython_pipeline(self.state)
        if self.stream_options is not None:
            add_stream_passes(pm, _UNTYPED, _TYPED, _LOWERED)
        pm.finalize()
        _check_dump_env(pm)
        return [pm]


def compiler_for(options):
    """The pipeline class that compiles with these `StreamOptions`."""
    return type("StreamCompiler", (StreamCompiler,), {"stream_options": options})
