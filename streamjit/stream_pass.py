"""The stream pass: from a kernel and its stream options to the function
Numba compiles, plus the decisions `stream_report` explains.

Order of work (each step is one module under `passes/`):
1. `accesses`: find loops, subscripts and assignments in the syntax tree;
2. `legality`: prove that streamed stores never write an element twice;
3. `parallel_blocks`: with parallel=True, split streamed `prange` loops
   into blocks, so each worker peels and fences its own;
   `align_peel` (planning): pick the loops whose stores can be aligned;
4. `stream_loads` (planning): the streamed loads and their prefetch distance;
5. `fence_placement`: one store fence after each aligned loop nest;
6. `size_check`: with a threshold, one size test at entry that all aligned
   loops require;
7. `align_peel` (rewrite): split those loops into head and aligned loop;
8. `stream_loads` (rewrite): tag the streamed loads left in the tree;
9. `source`: build the new function.
Errors found here are kept and raised when a signature is compiled, as the
options promise; nothing is streamed when there is nothing to stream.
"""

import copy
import warnings
from dataclasses import dataclass, field

from . import __version__
from .errors import StreamConfigError, StreamError, StreamWarning
from .passes.accesses import scan_kernel
from .passes.align_peel import apply_peel, plan_peels
from .passes.fence_placement import place_fences
from .passes.size_check import insert_size_check
from .passes.legality import check_stream_stores
from .passes.parallel_blocks import split_prange_loops
from .passes.source import build_function, function_tree, source_file
from .passes.stream_loads import plan_stream_loads, rewrite_stream_loads
from .typing import intrinsics


# Bytes ahead that streamed loads are prefetched when the user does not say
# (measured: bench/stream_loads.py, see bench/README.md).
DEFAULT_PREFETCH_DISTANCE = 2048


@dataclass
class StreamPlan:
    func: object  # what Numba compiles
    streamed_stores: frozenset = frozenset()
    streamed_loads: frozenset = frozenset()
    notes: dict = field(default_factory=dict)  # array -> [str]
    peeled_loops: int = 0
    prefetch_distance: int = DEFAULT_PREFETCH_DISTANCE
    threshold: int | None = None  # bytes of streamed arrays above which the aligned loops run
    source_tree: object = None  # the kernel's syntax tree as written (None when nothing streams)
    error: StreamError | None = None

    def streamed_arrays(self):
        return sorted(self.streamed_stores | self.streamed_loads)

    def cache_key(self):
        """What, besides the source, decides the compiled code."""
        return (__version__, tuple(sorted(self.streamed_stores)), tuple(sorted(self.streamed_loads)),
                self.prefetch_distance, self.threshold)


def _named(option, candidates):
    return set(candidates) if option is True else set(option or ())


def plan_stream(func, stream_stores, stream_loads, prefetch_distance=DEFAULT_PREFETCH_DISTANCE, threshold=None,
                tree=None, parallel=False):
    """Analyse and rewrite ``func`` for the validated stream options; ``tree``
    is its syntax tree when it has no source file (generated code);
    ``parallel`` when Numba will run `prange` loops on worker threads."""
    if not stream_stores and not stream_loads:
        return StreamPlan(func=func)
    source_tree = tree if tree is not None else function_tree(func)
    tree = copy.deepcopy(source_tree)
    scan = scan_kernel(tree)
    filename = source_file(func)
    stored = {s.array for s in scan.stores()} & set(scan.params)
    loaded = {a.array for a in scan.loads()} & set(scan.params)
    streamed = _named(stream_stores, stored)
    for name in sorted(streamed - stored):
        warnings.warn(f"stream_stores names '{name}', but {func.__qualname__} never stores to it",
                      StreamWarning, stacklevel=3)
    loads = _named(stream_loads, loaded - stored)
    for name in sorted(set(stream_loads if isinstance(stream_loads, (list, tuple)) else ()) - loaded - stored):
        warnings.warn(f"stream_loads names '{name}', but {func.__qualname__} never loads it",
                      StreamWarning, stacklevel=3)
    plan = StreamPlan(func=func, streamed_stores=frozenset(streamed & stored), streamed_loads=frozenset(loads),
                      prefetch_distance=prefetch_distance, threshold=threshold, source_tree=source_tree)
    self_loads = sorted(loads & stored)
    if self_loads:
        plan.error = StreamConfigError(
            f"stream_loads names '{self_loads[0]}', which {func.__qualname__} also stores to: "
            "a kernel cannot stream its own self-loads")
        return plan
    try:
        check_stream_stores(scan, sorted(plan.streamed_stores), filename)
    except StreamError as exc:
        plan.error = exc
        return plan
    if parallel and split_prange_loops(scan, plan.streamed_stores):
        scan = scan_kernel(tree)
    peels = plan_peels(scan, plan.streamed_stores, plan.notes)
    load_plan = plan_stream_loads(scan, plan.streamed_loads, prefetch_distance, plan.notes)
    if not peels and not plan.streamed_loads:
        return plan
    place_fences(scan, [p.nest_root for p in peels], parallel)
    size_gate = insert_size_check(tree, plan.streamed_arrays(), threshold) if peels else None
    for peel in sorted(peels, key=lambda p: -p.depth):
        # below a threshold the head loop is the whole plain path and must
        # vectorize; without one it only peels (or takes rare fallbacks)
        apply_peel(scan, peel, load_plan, size_gate, scalar_head=threshold is None)
    rewrite_stream_loads(tree, load_plan)
    plan.peeled_loops = len(peels)
    plan.func = build_function(func, tree, intrinsics)
    return plan
