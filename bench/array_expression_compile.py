"""First-call compile time of array-expression kernels: numba.njit,
Numba's own parfor machinery lowered sequentially (the route design.md
describes: ParforPass, then `lower_parfor_sequential`, with parallel=False),
and streamjit (fused element loops, Numba's store kept as the fallback).
CPU time of fresh compiles, interleaved, medians.

Run: python bench/array_expression_compile.py [rounds]
"""

import statistics
import sys
import time

import numba
import numpy as np
from numba.core.compiler import CompilerBase, DefaultPassBuilder
from numba.core.compiler_machinery import FunctionPass, register_pass
from numba.core.cpu import ParallelOptions
from numba.core.typed_passes import ParforPass
from numba.parfors.parfor import lower_parfor_sequential

import streamjit as sj

SOURCES = {
    "Jacobi 2-D slices": "def f(A, B):\n    B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] "
                         "+ A[2:, 1:-1] + A[:-2, 1:-1])\n",
    "out[:] = a * x + y": "def f(out, a, x, y):\n    out[:] = a * x + y\n",
}
ARGS = {
    "Jacobi 2-D slices": lambda: (np.ones((20, 30)), np.ones((20, 30))),
    "out[:] = a * x + y": lambda: (np.ones(100), 2.0, np.ones(100), np.ones(100)),
}


@register_pass(mutates_CFG=True, analysis_only=False)
class SequentialParfors(FunctionPass):
    _name = "bench_sequential_parfors"

    def __init__(self):
        FunctionPass.__init__(self)

    def run_pass(self, state):
        lower_parfor_sequential(state.typingctx, state.func_ir, state.typemap, state.calltypes, state.metadata)
        return True


class ParforsLoweredSequentially(CompilerBase):
    def define_pipelines(self):
        self.state.flags.auto_parallel = ParallelOptions(True)
        pm = DefaultPassBuilder.define_nopython_pipeline(self.state)
        pm.add_pass_after(SequentialParfors, ParforPass)
        pm.finalize()
        return [pm]


def fresh(name):
    namespace = {"np": np}
    exec(SOURCES[name], namespace)
    return namespace["f"]


BUILDERS = {
    "numba.njit": numba.njit,
    "parfors, sequential": lambda f: numba.njit(pipeline_class=ParforsLoweredSequentially)(f),
    "streamjit": lambda f: sj.stream_kernel(stream_stores=True)(f),
}


def main(rounds=7):
    for name in SOURCES:
        times = {key: [] for key in BUILDERS}
        for _ in range(rounds):
            for key, build in BUILDERS.items():
                kernel = build(fresh(name))
                start = time.process_time()
                kernel(*ARGS[name]())
                times[key].append(time.process_time() - start)
        medians = {key: statistics.median(t) for key, t in times.items()}
        print(f"{name:20s}", "  ".join(f"{key} {m * 1e3:.0f} ms ({m / medians['numba.njit']:.2f}x)"
                                        for key, m in medians.items()))


if __name__ == "__main__":
    main(*map(int, sys.argv[1:2]))
