"""Building untyped Numba IR statements for the passes that rewrite code.

The rewriting passes add statements, blocks and whole loops to the typed
IR, untyped: `retype.py` runs Numba's type inference over the result, so
every inserted call is typed exactly as if the user had written it. This
module writes those statements: constants, globals, calls, operators and
``range`` loop skeletons in Numba's own IR shapes (those of its bytecode
front end), with fresh variable names and labels.
"""

import itertools
import operator

from numba.core import ir

_serial = itertools.count()


class Emitter:
    """Appends statements to ``stmts``, in ``scope`` at ``loc``."""

    def __init__(self, scope, loc, stmts=None):
        self.scope, self.loc = scope, loc
        self.stmts = [] if stmts is None else stmts

    def temp(self, hint="tmp"):
        return ir.Var(self.scope, f"$streamjit_{hint}.{next(_serial)}", self.loc)

    def assign(self, value, target=None, hint="tmp"):
        """``target = value`` (a new temporary when ``target`` is None);
        ``target`` may be a name or a Var. Returns the target Var."""
        if target is None:
            target = self.temp(hint)
        elif isinstance(target, str):
            target = ir.Var(self.scope, target, self.loc)
        self.stmts.append(ir.Assign(value, target, self.loc))
        return target

    def const(self, value):
        return self.assign(ir.Const(value, self.loc), hint="const")

    def global_(self, name, value):
        return self.assign(ir.Global(name, value, self.loc), hint=name)

    def value(self, x):
        """A Var for ``x``: an int becomes a constant, a Var stays."""
        return self.const(x) if isinstance(x, int) else x

    def call(self, func, *args, name=None, target=None):
        """``func(*args)`` through a global; ``target`` names the result."""
        fn = self.global_(name or func.__name__, func)
        return self.assign(ir.Expr.call(fn, [self.value(a) for a in args], (), self.loc), target=target, hint="call")

    def binop(self, fn, lhs, rhs):
        return self.assign(ir.Expr.binop(fn, self.value(lhs), self.value(rhs), self.loc), hint="op")

    def add(self, lhs, rhs):
        return self.binop(operator.add, lhs, rhs)

    def sub(self, lhs, rhs):
        return self.binop(operator.sub, lhs, rhs)

    def tuple_(self, items):
        return self.assign(ir.Expr.build_tuple([self.value(x) for x in items], self.loc), hint="tuple")

    def index(self, parts):
        """An index from its components: the one component, or their tuple."""
        return self.value(parts[0]) if len(parts) == 1 else self.tuple_(parts)

    def range_iterator(self, range_func, args, target=None):
        """``getiter(range_func(*args))``; ``target`` names the iterator."""
        rng = self.call(range_func, *args, name="range" if range_func is range else range_func.__name__)
        return self.assign(ir.Expr.getiter(rng, self.loc), target=target, hint="iter")


def new_label(blocks):
    """A block label not yet used in ``blocks`` (one above the highest)."""
    return max(blocks) + 1


def new_block(blocks, scope, loc, stmts):
    """Add a new block holding ``stmts`` to ``blocks`` (in ``scope``, at ``loc``) and return its
    label."""
    label = new_label(blocks)
    block = ir.Block(scope, loc)
    block.body = list(stmts)
    blocks[label] = block
    return label


def retarget(block, mapping):
    """Point the block's terminator at ``mapping[label]`` for mapped labels."""
    term = block.body[-1]
    if isinstance(term, ir.Jump):
        block.body[-1] = ir.Jump(mapping.get(term.target, term.target), term.loc)
    elif isinstance(term, ir.Branch):
        block.body[-1] = ir.Branch(term.cond, mapping.get(term.truebr, term.truebr),
                                   mapping.get(term.falsebr, term.falsebr), term.loc)


def drop_definition(blocks, definition):
    """Remove the assignment ``(label, stmt)``, so its target keeps the
    single definition the rewrite gives it instead."""
    label, stmt = definition
    blocks[label].body.remove(stmt)


def loop_nest(blocks, scope, loc, extents, body_label, exit_label, outer=range):
    """Blocks of ``for i0 in outer(extents[0]): for i1 in range(...): <body_label>``
    in Numba's loop shape; the body must jump back to the innermost header.
    An inner loop exits to a block that jumps back to its outer header, as
    Python's loops do (Numba's prange conversion retargets only jumps to
    the header, not branches). Returns (entry label, innermost header
    label, index variables)."""
    entry, outer_header, indices = None, None, []
    for depth, extent in enumerate(extents):
        head = Emitter(scope, loc)
        nxt = head.assign(ir.Expr.iternext(head.temp("iter"), loc), hint="next")
        indices.append(head.assign(ir.Expr.pair_first(nxt, loc), hint="index"))
        more = head.assign(ir.Expr.pair_second(nxt, loc), hint="more")
        done = exit_label if outer_header is None else new_block(blocks, scope, loc, [ir.Jump(outer_header, loc)])
        header = new_block(blocks, scope, loc, head.stmts + [ir.Branch(more, body_label, done, loc)])
        pre = Emitter(scope, loc)
        pre.range_iterator(outer if depth == 0 else range, [extent], target=blocks[header].body[0].value.value)
        pre.stmts.append(ir.Jump(header, loc))
        pre_label = new_block(blocks, scope, loc, pre.stmts)
        if outer_header is None:
            entry = pre_label
        else:
            retarget(blocks[outer_header], {body_label: pre_label})
        outer_header = header
    return entry, outer_header, indices
