"""Stream a split loop through a staging buffer where its sources trail its
stores modulo 4 KiB.

On CPUs where a load a few bytes behind a streamed store modulo a page
waits for that store to reach memory (4K aliasing: the machine profile's
``page_alias_bytes``, above 0 on Zen 2), a call whose arrays lie so (arrays
allocated alike: ``B = A.copy()``, ``np.empty_like(A)``) cannot run the
aligned loop at speed, and the plain loop stalls too. `align_peel.py` asks
this pass for a third version of such a loop: its iterations run in strips,
each computing the streamed stores into a buffer on the stack (ordinary
stores, in cache, half a page from the destination modulo 4 KiB), then
copying the strip before it out with the aligned non-temporal stores (one
strip behind, so that no load follows the streamed stores it trails),
``n`` elements, ``strip_bytes`` (the machine profile's row) per destination:

    if hi > start:                                  # (align_peel.py)
        if no_trailing_alias(...): <aligned loop>
        else:                                       # the staged loop
            p = aligned_pointer(out, idx(start)); region = staging_region(strip_bytes)
            for t in range(strips + 1):
                s = start + t * n; e = min(s + n, hi)
                buf = staging_slot(region, out, idx(s), t % 2, strip_bytes)
                for j in range(s, e): BODY''        # out[idx(j)] = v  ->  buffer_store(buf, j - s, v)
                q = s - n; last = staging_slot(region, out, idx(q), 1 - t % 2, strip_bytes)
                m = min(s, hi) - max(q, start); w = m - m % line    # (none for t == 0)
                for k in range(w):                                  # whole lines
                    stream_store(out, idx(q + k), load_at(last, k, None), p, q + k - start)
                for k in range(w, m):                               # the last line's rest
                    out[idx(q + k)] = load_at(last, k, None)

Only whole cache lines (``line`` elements) stream out: the rest of the
loop's last line is stored plainly, as the aligned loop leaves it. A plain
store into a line streamed in part (the next row's first elements share
it) waits for that line to reach memory, once per run of the loop: a 3-D
heat sweep with rows of 255 items ran staged at 0.48-0.49x njit with its
last lines streamed and 0.75-0.80x without (bench/staging.py 256 on an AMD
EPYC Zen 4 VM, family 25 model 17; the Jacobi sweep's long rows and triad
moved within noise).

Staging moves each strip's streamed stores after its other accesses, so it
is compiled only where that cannot change a result: a forward loop that
uses its arrays only in element accesses, never loads a streamed
destination, and cannot leave before its end. A strip is held in the
buffer until the next one is computed: a ``return`` or ``raise`` inside the
loop, or an exception Numba's own code raises (a division under the
``python`` error model, an integer power, an index under ``boundscheck``,
a call of another kernel), would leave it unwritten, and Numba lowers its
own exceptions as returns from the middle of a block, where no IR edge
could copy the strip out first. Such loops run their aligned copy or, where
sources trail the stores, the plain loop, with a note saying why. And
it runs only where the destinations share no memory with each other or
with the arrays the loop reads or writes (``disjoint``, per call). A call whose
trailing sources overlap the destination runs the plain loop, counted as a
``page_alias`` fallback.
"""

import operator

from numba.core import ir, types

from .. import codegen
from ..machine.profile import line_bytes
from ..protocol.markers import store_marker
from .analysis.affine import emit_index
from .analysis.indices import int_constant
from .analysis.raises import why_may_raise
from .rewrite.ir_build import Emitter, loop_nest, new_block, retarget
from .loop_copies import clone_loop, rewrite_copy
from .rewrite.peel_checks import itemsize

def _skips_a_store(scan, loop, stored_labels):
    """Whether one iteration of ``loop`` can pass none of ``stored_labels``
    (a staged strip would then stream out elements no iteration wrote)."""
    blocks = scan.func_ir.blocks
    start = blocks[loop.for_block].body[-1].truebr
    seen, todo = set(), [start]
    while todo:
        label = todo.pop()
        if label in seen or label in stored_labels:
            continue
        if label not in loop.body or label in (loop.header, loop.for_block):
            return True  # back at the header, or out of the loop, without a store
        seen.add(label)
        todo += [succ for succ, _ in scan.cfg.successors(label)]
    return False


def _other_stores(scan, plan):
    """The loop's element stores to arrays it does not stream (kept in
    their order, apart from the destinations: `disjoint_checks`)."""
    stored = {a.array_var for a, _ in plan.stores}
    return [a for a in scan.stores() if a.label in plan.loop.body and a.is_element and a.array_var not in stored]


def why_not_early_exits(scan, loop, targetctx):
    """None where ``loop`` always runs to its end, else what may leave it
    early (a staged strip would be left unwritten: see the module doc)."""
    blocks = scan.func_ir.blocks
    if loop.exits - {blocks[loop.for_block].body[-1].falsebr}:
        return "its loop can leave early (a return or raise inside it)"
    for label in sorted(loop.body):
        for stmt in blocks[label].body:
            reason = why_may_raise(scan.typemap, stmt, scan.definition, targetctx.error_model.raise_on_fp_zero_division,
                                   targetctx.enable_boundscheck)
            if reason:
                return f"its loop {reason}"
    return None


def why_not_staged(scan, plan, targetctx):
    """None where ``plan``'s loop can be staged, else why not
    (``targetctx``: the compile's error model and boundscheck)."""
    loop = plan.loop
    if int_constant(scan, loop.step) != 1:  # (-1: split loops count by one)
        return "its loop runs backwards"
    reason = why_not_early_exits(scan, loop, targetctx)
    if reason:
        return reason
    by_array = {}
    for access, dims in plan.stores:
        by_array.setdefault(access.array_var, []).append((access, dims))
    for stores in by_array.values():
        array = stores[0][0].array
        if len({tuple((d.key(), d.const) for d in dims) for _, dims in stores}) > 1:
            return f"its loop stores '{array}' at two different indices"
        if _skips_a_store(scan, loop, {access.label for access, _ in stores}):
            return f"an iteration of its loop may store no element of '{array}'"
    if any(a.array_var in by_array for a, _ in plan.loads):
        return "its loop loads a streamed destination"
    planned = {id(a.stmt) for a, _ in plan.stores + plan.loads} | {id(a.stmt) for a in _other_stores(scan, plan)}
    blocks = scan.func_ir.blocks
    for label in loop.body:
        for stmt in blocks[label].body:
            if id(stmt) in planned:
                continue
            used = next((v.name for v in stmt.list_vars() if isinstance(scan.typemap.get(v.name), types.Array)), None)
            if used is not None:
                return f"its loop uses the array '{used}' other than by element"
    return None


def disjoint_checks(scan, emitter, plan):
    """One ``disjoint`` per streamed destination and other array the loop
    reads or writes (staging reorders their accesses within a strip)."""
    scope, loc = emitter.scope, emitter.loc
    stored = list(dict.fromkeys(a.array_var for a, _ in plan.stores))
    others = list(dict.fromkeys([a.array_var for a, _ in plan.loads]
                                + [a.array_var for a in _other_stores(scan, plan)]))
    pairs = [(d, o) for k, d in enumerate(stored) for o in stored[k + 1:] + [x for x in others if x not in stored]]
    return [emitter.call(codegen.disjoint, ir.Var(scope, d, loc), ir.Var(scope, o, loc)) for d, o in pairs]


def staged_loop(state, scan, plan, start, hi, options, result):
    """The entry label of ``plan.loop``'s staged version over ``[start, hi)``
    (see the module doc), exiting where the loop exits; strips of
    ``options.machine.strip_bytes`` (the machine profile's row) per destination."""
    blocks, loop = scan.func_ir.blocks, plan.loop
    scope, loc = blocks[loop.header].scope, loop.loc
    exit_label = blocks[loop.for_block].body[-1].falsebr
    # (every planned store has one item size: `align_peel.plan_peels`)
    item = itemsize(scan, plan.stores[0][0].array_var)
    strip = options.machine.strip_bytes // item
    pre = Emitter(scope, loc)
    # one buffer per destination array (its stores share one index: `why_not_staged`)
    stores = list({access.array_var: (access, dims) for access, dims in plan.stores}.values())
    arrays = [ir.Var(scope, a.array_var, loc) for a, _ in stores]
    pointers = [pre.call(codegen.aligned_pointer, arr, emit_index(scan, d, loop, start, pre))
                for arr, (_, d) in zip(arrays, stores)]
    regions = [pre.call(codegen.staging_region, options.machine.strip_bytes) for _ in arrays]
    strips = pre.binop(operator.floordiv, pre.add(pre.sub(hi, start), strip - 1), strip)
    strip_body = new_block(blocks, scope, loc, [])
    entry, strip_header, (t,) = loop_nest(blocks, scope, loc, [pre.add(strips, 1)], strip_body, exit_label)
    pre.stmts.append(ir.Jump(entry, loc))

    def slots(emit, first, parity):
        return {arr.name: emit.call(codegen.staging_slot, region, arr, emit_index(scan, d, loop, first, emit), parity,
                                    options.machine.strip_bytes)
                for arr, (_, d), region in zip(arrays, stores, regions)}

    # strip t computes [first, end) into slot t % 2 (empty for t == strips), ...
    body = Emitter(scope, loc)
    first = body.add(start, body.binop(operator.mul, t, strip))
    end = body.call(codegen.smaller, body.add(first, strip), hi)
    parity = body.binop(operator.and_, t, 1)
    computing = slots(body, first, parity)
    iterator = body.temp("staged_iter").name
    body.range_iterator(range, [first, end], target=iterator)
    compute, mapping = clone_loop(state, loop, iterator)
    rewrite_copy(scan, blocks, mapping, plan, [computing[a.array_var] for a, _ in plan.stores],
                 lambda emit: emit.sub(ir.Var(scope, loop.induction, loc), first), {}, options, result, staged=True)
    # ... then streams out strip t - 1 (empty for t == 0): the loads of a strip never follow
    # the streamed stores of the strip just before it, which they would trail by a few bytes
    # (its start a whole number of strips from ``start``, which the alignment proof needs; none before t == 1)
    previous = body.sub(first, strip)
    copied = slots(body, previous, body.binop(operator.xor, parity, 1))
    count = body.sub(body.call(codegen.smaller, first, hi), body.call(codegen.larger, previous, start))
    # (whole lines stream out, the rest of the last one is stored plainly: see the module doc)
    whole = body.sub(count, body.binop(operator.mod, count, line_bytes() // item))

    def copy_out(first_item, items, streamed, then):
        """The entry of a loop storing ``items`` items of strip t - 1 from
        ``first_item`` on out of its slots into the destinations, as
        streamed stores (through the aligned pointers) or plain ones; on to
        ``then``."""
        out = Emitter(scope, loc)
        copy_body = new_block(blocks, scope, loc, [])
        copy_entry, copy_header, (k,) = loop_nest(blocks, scope, loc, [items], copy_body, then)
        at = out.add(first_item, k)
        j = out.add(previous, at)
        for (access, dims), arr, pointer in zip(stores, arrays, pointers):
            value = out.call(codegen.not_a_load, out.call(codegen.load_at, copied[arr.name], at, out.const(None)))
            out.call(codegen.stream_store, arr, emit_index(scan, dims, loop, j, out), value,
                     pointer if streamed else out.const(None), out.sub(j, start),
                     out.const(store_marker(access.array, options.machine.scalar_nt_bytes)))
        out.stmts.append(ir.Jump(copy_header, loc))
        blocks[copy_body].body = out.stmts
        return copy_entry

    rest = copy_out(whole, body.sub(count, whole), False, new_block(blocks, scope, loc, [ir.Jump(strip_header, loc)]))
    streamed = copy_out(body.const(0), whole, True, rest)
    body.stmts.append(ir.Jump(compute, loc))
    blocks[strip_body].body = body.stmts
    retarget(blocks[mapping[loop.for_block]], {exit_label: streamed})
    return new_block(blocks, scope, loc, pre.stmts)
