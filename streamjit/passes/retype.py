"""Type the statements the rewriting passes inserted, with Numba's own
type inference.

The rewriting passes insert untyped statements (intrinsic calls, range
iterators, index arithmetic) into typed IR. Numba's type inference types
them exactly as it types user code, but running it over the whole function
again costs three times the first inference (the aligned loop doubles the
body): most of a kernel's extra compile time. So only the new statements
are typed: they go, in order, into a one-block function of their own, every
variable they read (or overwrite) seeded with the type it already has, and
the resulting types and call signatures are merged back. Statements copied
from typed ones (the aligned loop's blocks) take their originals' call
signatures when they are copied (`copy_types`).

Two things keep that typing cheap. The statements go in the blocks'
topological order, so a variable's definition comes before its uses and
Numba's propagation, which re-runs every constraint until nothing changes,
settles in two or three rounds rather than one round per backward use. And
each call's signature is resolved once per argument types (`_OnceTyping`):
the inserted statements repeat a few dozen calls hundreds of times over the
loop copies (jacobi_2d: 1684 resolutions of 64 distinct calls), and each
resolution runs Numba's template matching again.

`snapshot` records which statements are typed; the pipeline takes it before
the typed stream passes, and `retype` after each typing.
"""

from numba.core import ir, types
from numba.core.analysis import compute_cfg_from_blocks
from numba.core.typed_passes import type_inference_stage

from ..numba_internals.ir import rebuild_definitions

# The `StreamFacts` fields this pass reads, sets and leaves stale (`passes/analysis/facts.py`).
REQUIRES = ("typed",)
PRODUCES = ("typed",)
INVALIDATES = ()

_TERMINATORS = (ir.Jump, ir.Branch, ir.Return, ir.Raise, ir.StaticRaise, ir.DynamicRaise)


def snapshot(state):
    # by id, holding the statements: a dropped statement's id must not be
    # reused by a new one while this lives
    """Record the typed statements as they are before the first stream pass rewrites the IR, so
    that `retype` types only the statements inserted after."""
    state.stream_facts.typed = {id(s): s for block in state.func_ir.blocks.values() for s in block.body}


def copy_types(state, old, new):
    """``new`` is a copy of the typed statement ``old``."""
    for a, b in ((old, new), (getattr(old, "value", None), getattr(new, "value", None))):
        if a is not None and a in state.calltypes:
            state.calltypes[b] = state.calltypes[a]
    state.stream_facts.typed[id(new)] = new


class _OnceTyping:
    """Numba's typing context ``context`` for one type inference, each
    function type resolved once per argument types. Calls of dispatchers
    are resolved each time: their resolution compiles, and a recursive one
    depends on the typing in progress."""

    def __init__(self, context):
        self._context = context
        self._signatures = {}

    def __getattr__(self, name):
        return getattr(self._context, name)

    def resolve_function_type(self, func, args, kws):
        if isinstance(func, (types.Dispatcher, types.RecursiveCall)):
            return self._context.resolve_function_type(func, args, kws)
        key = (func, tuple(args), tuple(sorted(kws.items())))
        signature = self._signatures.get(key)
        if signature is None:
            signature = self._signatures[key] = self._context.resolve_function_type(func, args, kws)
        return signature


def retype(state):
    """Type the statements inserted since the last typing; False if none."""
    blocks = state.func_ir.blocks
    order = compute_cfg_from_blocks(blocks).topo_order()
    order += [label for label in blocks if label not in set(order)]  # blocks no path reaches
    new = [s for label in order for s in blocks[label].body
           if id(s) not in state.stream_facts.typed and not isinstance(s, _TERMINATORS)]
    if not new:
        return False
    rebuild_definitions(state.func_ir)
    entry = blocks[min(blocks)]
    loc = entry.loc
    defined = {s.target.name for s in new if isinstance(s, ir.Assign)}
    used = {v.name for s in new for v in s.list_vars()}
    seeds = {name: state.typemap[name] for name in used if name in state.typemap}
    none, ret = ir.Var(entry.scope, "$streamjit_none", loc), ir.Var(entry.scope, "$streamjit_ret", loc)
    block = ir.Block(entry.scope, loc)
    block.body = new + [ir.Assign(ir.Const(None, loc), none, loc), ir.Assign(ir.Expr.cast(none, loc), ret, loc),
                        ir.Return(ret, loc)]
    piece = state.func_ir.derive({0: block})
    rebuild_definitions(piece)
    typemap, _, calltypes, _ = type_inference_stage(
        _OnceTyping(state.typingctx), state.targetctx, piece, state.args, None, dict(state.locals or {}, **seeds),
        raise_errors=True)
    for name in defined - set(state.typemap):
        state.typemap[name] = typemap[name]
    state.calltypes.update(calltypes)
    state.stream_facts.typed.update((id(s), s) for s in new)
    return True


def run_pass(state):
    """Type the statements the stream passes inserted (`retype`). True when there were any."""
    return retype(state)
