"""The CPU front end's decision for a GPU kernel: which arrays stream, and
whether streaming them is legal.

`target="cuda"` applies the same rule with the same errors as the CPU
path, so this module does not re-derive it: it runs Numba's CPU nopython
front end on the loop function, with the stream passes that decide (those
of ``kernel/pipeline.py`` up to ``legality``, in its order), and stops before
lowering. What it returns is the `StreamResult` those passes build
(streamed stores and loads, notes), and which variables hold an array
parameter by their account; a store that may not stream raises the
same `StreamLegalityError`, naming the same line. numba-cuda types NumPy arrays with the same
``numba.types.Array``, so one signature serves both front ends.
"""

from dataclasses import replace

from numba.core import compiler, types
from numba.core.compiler_machinery import FunctionPass, register_pass
from numba.core.registry import cpu_target

from ..kernel import pipeline
from ..numba_internals.compiler import EarlyPipelineCompletion
from ..passes.analysis.facts import StreamFacts
from ..plan import METADATA_KEY, StreamResult

# The deciding passes are the pipeline's up to `legality`, without
# `parallel_blocks` (it splits prange loops into blocks for the CPU's
# threads; on the GPU the grid takes their place). The passes after
# `legality` (peeling, fences, size checks, load tags) rewrite for the
# CPU's lowering, which never runs.
_UNTYPED, _TYPED = pipeline.deciding_passes(last="legality", skip=("parallel_blocks",))


@register_pass(mutates_CFG=False, analysis_only=True)
class _StopAfterLegality(FunctionPass):
    _name = "streamjit_cuda_stop"

    def __init__(self):
        FunctionPass.__init__(self)

    def run_pass(self, state):
        raise EarlyPipelineCompletion((state.metadata.get(METADATA_KEY) or StreamResult(), _aliases(state)))


def _aliases(state):
    """{variable: array parameter} for each of the function's variables
    whose every version (Numba's SSA names it ``o``, ``o.1``, ...) holds one
    array parameter, by the CPU's own account (`KernelScan.canonical`:
    chains of copies, in-place operators): the GPU passes may write an
    access through it on the parameter."""
    scan, params = state.stream_facts.scan, set(state.func_id.arg_names)
    roots = {}
    for var, ty in state.typemap.items():
        if isinstance(ty, types.Array) and not var.startswith("$"):
            roots.setdefault(var.split(".")[0], set()).add(scan.canonical(var))
    return {name: root for name, (root, *more) in roots.items() if not more and root in params and name != root}


class _DecidingCompiler(pipeline.StreamCompiler):
    def define_pipelines(self):
        self.state.stream_facts = StreamFacts(options=self.stream_options)
        pm = compiler.DefaultPassBuilder.define_nopython_pipeline(self.state)
        pipeline.add_stream_passes(pm, _UNTYPED, _TYPED + [_StopAfterLegality])
        pm.finalize()
        return [pm]


def analyze(py_func, argtypes, options):
    """``(StreamResult, aliases)`` of ``py_func`` for ``argtypes`` under
    ``options`` (a `StreamOptions`), the aliases as `_aliases` finds them;
    raises `StreamLegalityError` as the CPU path does.
    ``prange`` loops are analysed as parallel loops (a reduction into a
    streamed array is rejected), whatever ``options.parallel`` says."""
    flags = compiler.Flags()
    flags.nrt = True
    flags.no_cpython_wrapper = True
    flags.no_cfunc_wrapper = True
    pipeline_class = type("CudaDecidingCompiler", (_DecidingCompiler,),
                          {"stream_options": replace(options, parallel=True)})
    return compiler.compile_extra(cpu_target.typing_context, cpu_target.target_context, py_func, tuple(argtypes),
                                  None, flags, {}, pipeline_class=pipeline_class)
