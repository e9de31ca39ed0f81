"""Copies of a split loop's blocks, their planned accesses rewritten.

`align_peel.py` versions a streamed loop by copying its blocks under new
labels (loop versioning, as Numba's ``MixedContainerUnroller`` clones loop
bodies) and turning the copy's planned accesses into intrinsic calls: its
streamed stores into ``stream_store`` through the aligned pointer (or, for
`staging.py`, into ``buffer_store`` to the staging buffer), its affine
loads into ``direct_load`` (or reads of aligned sources through
``load_at``).
"""

import copy

from numba.core import ir

from .. import codegen
from ..machine.profile import WIDE_VECTOR_BYTES
from ..machine.cpu_defaults import UNMEASURED
from ..protocol.markers import parse_load_marker, store_marker
from .rewrite.ir_build import Emitter, retarget
from .analysis.loop_work import float_operations
from .rewrite.peel_checks import itemsize
from .retype import copy_types
from .stream_loads import loads_a_stencil, marker_of


def clone_loop(state, loop, iterator):
    """A copy of the loop's blocks under new labels, reading ``iterator``;
    returns (new header label, old label -> new label)."""
    blocks = state.func_ir.blocks
    scope = blocks[loop.header].scope
    mapping = {}
    top = max(blocks)
    for label in sorted(loop.body):
        top += 1
        mapping[label] = top
    for label, new in mapping.items():
        block = copy.deepcopy(blocks[label], {id(scope): scope})
        for old_stmt, new_stmt in zip(blocks[label].body, block.body):
            copy_types(state, old_stmt, new_stmt)
        retarget(block, mapping)
        blocks[new] = block
    for stmt in blocks[mapping[loop.for_block]].body:
        if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr) and stmt.value.op == "iternext":
            stmt.value.value = ir.Var(scope, iterator, stmt.loc)
    return mapping[loop.header], mapping


def _position(blocks, access):
    return access.label, next(i for i, s in enumerate(blocks[access.label].body) if s is access.stmt)


def rewrite_copy(scan, blocks, mapping, plan, pointers, offset_of, source_pointers, options, result, scalar=(),
                 staged=False):
    """Turn the planned accesses of one loop copy into intrinsic calls: each
    streamed store to ``pointers`` (one per planned store) at ``offset_of``,
    streamed (the aligned pointers; scalar NT stores of the item sizes
    ``scalar``, `scalar_bytes`, where the copy stays scalar) or, ``staged``,
    plain (the staging buffers)."""
    edits = {}  # (new label, position) -> replacement statements builder
    for (access, _), pointer in zip(plan.stores, pointers):
        edits[_position(blocks, access)] = ("store", access, pointer)
    for access, _ in plan.loads:
        edits[_position(blocks, access)] = ("load", access, source_pointers.get(access))
    by_block = {}
    for (label, pos), edit in edits.items():
        by_block.setdefault(mapping[label], {})[pos] = edit
    for label, block_edits in by_block.items():
        block = blocks[label]
        body = []
        for pos, stmt in enumerate(block.body):
            edit = block_edits.get(pos)
            if edit is None:
                body.append(stmt)
                continue
            kind, access, pointer = edit
            emit = Emitter(block.scope, stmt.loc, body)
            arr = ir.Var(block.scope, access.array_var, stmt.loc)
            index = _access_index(emit, access, stmt)
            if kind == "store":
                value = stmt.value
                loaded = scan.definition(value.name)
                if isinstance(loaded, ir.Expr) and loaded.op in ("getitem", "static_getitem"):
                    value = emit.call(codegen.not_a_load, value)   # a copy: keep it a loop
                if staged:
                    emit.call(codegen.buffer_store, pointer, offset_of(emit), value)
                else:
                    emit.call(codegen.stream_store, arr, index, value, pointer, offset_of(emit),
                              emit.const(store_marker(access.array, scalar,
                                                      vector_lanes(scan, plan, access, options))))
                continue
            marker = marker_of(scan, plan, access, options, result)
            if pointer is not None:
                emit.call(codegen.load_at, pointer, offset_of(emit), emit.const(marker), target=stmt.target)
            elif marker is None:
                emit.call(codegen.direct_load, arr, index, target=stmt.target)
            else:
                emit.call(codegen.direct_stream_load, arr, index, emit.const(marker), target=stmt.target)
        block.body = body


def scalar_bytes(scan, plan, options, result):
    """The item sizes whose stores in ``plan``'s loop become scalar non-temporal stores where the loop does not
    vectorize: the machine profile's ``scalar_nt_bytes``, where the loop computes at most ``scalar_nt_ops``
    floating-point operations per element it stores; none where it computes more. The rows hold for sources
    lowered as they were measured with (``options.scalar_nt_prefetched``: prefetched as the profile's
    ``sources`` row says, or not); a loop with a source lowered otherwise (a strided or compute-bound one left
    unprefetched, a kernel's own ``prefetch_hint``) takes the rows of a CPU nobody measured (on the Intel Xeon
    VM, float32 scalar NT stores gained 1.13x with a source prefetch and lost 0.38x without,
    bench/scalar_nt_stores.py). Where that leaves a store plain, the report says why (if the loop did not
    vectorize)."""
    # (the rows are measured on the sources of streamed stores: loads the user streams are not among them)
    others = {access.array for access, _ in plan.stores} | result.streamed_loads
    prefetched = {bool(parse_load_marker(marker_of(scan, plan, load, options, result) or "none:0")[1])
                  for load, _ in plan.loads if load.array not in others}
    if prefetched <= {options.scalar_nt_prefetched}:
        sizes, most, whose = options.machine.scalar_nt_bytes, options.machine.scalar_nt_ops, "this CPU's scalar_nt_ops row allows"
    else:
        sizes, most = UNMEASURED["scalar_nt_bytes"][0], UNMEASURED["scalar_nt_ops"][0]
        whose = "a CPU nobody measured allows (a source of the loop is not prefetched)"
    ops = float_operations(scan, plan.loop) / max(1, len(plan.stores))
    if ops > most:
        sizes, hint = (), f"its loop computes {ops:g} floating-point operations per element stored, more than the " \
                          f"{most} {whose}"
    else:
        hint = (f"a source of its loop is {'not ' if options.scalar_nt_prefetched else ''}prefetched: it takes the "
                f"scalar NT stores of a CPU nobody measured, items of {' and '.join(map(str, sizes))} bytes")
    for access, _ in plan.stores:
        if itemsize(scan, access.array_var) in set(options.machine.scalar_nt_bytes) - set(sizes):
            hints = result.vector_hints.setdefault(access.array, [])
            hints += [hint] if hint not in hints else []
    return sizes


def vector_lanes(scan, plan, access, options):
    """The vector lanes ``plan``'s loop is to be vectorized with for its
    store ``access`` (`pre_o3/loop_widths.py`; 0: the width LLVM prefers):
    `WIDE_VECTOR_BYTES` wide where the machine profile's
    ``wide_stencil_bytes`` row lists the store's item size and the loop is
    a stencil's (`stream_loads.loads_a_stencil`: a Jacobi sweep's five loads
    per store, bound by its loads from the cache as much as by memory)."""
    size = itemsize(scan, access.array_var)
    return WIDE_VECTOR_BYTES // size if size in options.machine.wide_stencil_bytes and loads_a_stencil(plan) else 0


def _access_index(emit, access, stmt):
    """The full index of an access as one variable (a tuple when chained
    or static)."""
    original = stmt.index if isinstance(stmt, ir.SetItem) else getattr(stmt.value, "index", None) \
        if isinstance(stmt, ir.Assign) else None
    if isinstance(original, ir.Var) and not access.chained:
        return original
    return emit.index(access.index)
