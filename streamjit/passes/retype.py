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

`snapshot` records which statements are typed; the pipeline takes it before
the typed stream passes, and `retype` after each typing.
"""

from numba.core import ir
from numba.core.typed_passes import type_inference_stage

from ..numba_internals.ir import rebuild_definitions

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


def retype(state):
    """Type the statements inserted since the last typing; False if none."""
    blocks = state.func_ir.blocks
    new = [s for block in blocks.values() for s in block.body
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
        state.typingctx, state.targetctx, piece, state.args, None, dict(state.locals or {}, **seeds),
        raise_errors=True)
    for name in defined - set(state.typemap):
        state.typemap[name] = typemap[name]
    state.calltypes.update(calltypes)
    state.stream_facts.typed.update((id(s), s) for s in new)
    return True


def run_pass(state):
    """Type the statements the stream passes inserted (`retype`). True when there were any."""
    return retype(state)
