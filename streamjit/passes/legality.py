"""Legality of ``stream_stores``: Halide's rule, per execution of a nest.

A stage may stream its stores only if each execution of its loop nest
writes every element at most once. For one store, the nest is the loops
whose variables select the element: from the outermost loop whose variable
appears in the index inward. Loops outside it (a time loop, a ``while``
convergence loop, a row loop around a nest that rewrites one row) re-run
the complete nest, which is legal, with a fence after each execution
(`fence_placement.py`). Proved on typed IR, conservatively:

- every index dimension is affine (`affine.py`) in the loop variables, or
  an invariant slice;
- every loop of the nest, from its root inward, is a ``range`` loop that
  selects a dimension of its own (``c*var + invariant``, ``c != 0``, no
  other loop variable), so distinct iterations write distinct elements;
- two stores to the same array in one nest either have the same index in
  mutually exclusive branches of one ``if``, or differ in some dimension by
  a constant that no iteration step can make up (``out[2*i]`` and
  ``out[2*i+1]``);
- a store outside every loop runs once per call, and so does a slice or
  row store with invariant bounds in every execution of the loops around it.

A store through a view `array_stores.py` made (``v = A[r, q, :]`` then
``v[j] = tmp[j]``) is indexed by the view's own loops, but the loops
around the view select the element too: its nest grows outward over each
enclosing ``range`` loop whose variable selects a dimension of ``A`` of
its own (NPBench's doitgen: one fence after the ``r, q`` nest, not one
per 2 KiB row), stopping at the first that does not (a time loop), or
whose body outside the nest hands ``A`` to anything but a load of an
element, a read of the row this iteration writes before it writes it
(``A[r, q, :] @ C4``: a library call may read on other threads, which
must not see an element streamed earlier in the execution unfenced), the
fused loop's own check and fallback, or an element store (checked below).

Refused: scatter (``out[idx[i]]``) and computed indices (``out[i * m +
j]``), a loop inside the nest whose variable does not select the element
(``for i: for t: out[i] = ...``, a row-sum ``out[i] += m[i, j]``), a store
repeated by every iteration of its loops (``out[0]`` in a prange loop), a
``while`` loop inside the nest, and two stores that may write one element.
Each reason says how to write the loop so that it streams. Halide's
directive semantics decide what a refusal does: an array the user named
in ``stream_stores`` raises `StreamLegalityError` at the store's line;
under ``stream_stores=True`` the user named none, so an array whose
stores cannot stream (with every array that may hold the same elements)
stays plain, and the report notes why.
"""

from numba.core import ir, types

from ..errors import StreamLegalityError
from ..plan import LOOP_NOTE, METADATA_KEY
from .analysis.indices import index_atoms, is_slice
from .analysis.affine import Affine, AffineAnalyzer
from .parallel_blocks import is_block_loop

# The `StreamFacts` fields this pass reads, sets and leaves stale (`passes/analysis/facts.py`).
REQUIRES = ("options", "scan", "store_origin")
PRODUCES = ("legal",)
INVALIDATES = ()
ANALYSIS_ONLY = True  # (it reads the IR and changes nothing in it)


class _Refused(Exception):
    """A store that may not stream, and why."""

    def __init__(self, store, reason):
        super().__init__(reason)
        self.store, self.reason = store, reason

    def error(self):
        store = self.store
        return StreamLegalityError(f"{store.loc.filename}:{store.line}: cannot stream stores to '{store.array}': "
                                   f"{self.reason}")


def _fail(store, reason):
    raise _Refused(store, reason)


# How to write a store that every iteration of an inner loop repeats (a
# reduction) so that it streams.
_ACCUMULATE = ("; to stream it, accumulate in a scalar (`s += ...` in that loop) and store `s` once after the loop")


def _rewrite(loop):
    """How to write ``loop`` (not over a ``range``) so that its variable
    selects the element: a loop Numba users write, and its rewrite."""
    if loop.kind == "while":
        return (f"; write the loop at line {loop.line} as `for i in range(start, stop):` (a while loop's counter, "
                "`i += 1`, is not a loop variable streamjit can follow)")
    return (f"; for the loop at line {loop.line}, write `for i in range(a.shape[0]):` (one loop per dimension), "
            "or `for idx in np.ndindex(a.shape):` with `v = a[idx]` in place of `for idx, v in np.ndenumerate(a):`")


def _not_affine(store):
    loop = next((l for l in reversed(store.loops) if not l.is_range), None)
    if loop is not None:
        kind = "while" if loop.kind == "while" else "non-range for"
        _fail(store, f"the store is inside a {kind} loop (line {loop.line}) and its index is not an affine "
              "function of range() loop variables, so its iterations may write the same element" + _rewrite(loop))
    _fail(store, "the index is not an affine function of range() loop variables (a scatter or computed "
          "index may write one element twice); a flattened index such as `out[i * m + j]`, `m` not a constant, "
          "streams written `v[i, j]` on a 2-D view, `v = out.reshape(n, m)`")


def store_dims(scan, store, analyzer):
    """Affine forms of a store's index dimensions (None where not affine);
    an invariant slice is a term of its own: it covers the same elements in
    every iteration, like an invariant index."""
    dims = []
    for atom in store.index:
        if isinstance(atom, slice) or (isinstance(atom, ir.Var) and store.kind == "slice"
                                       and analyzer.of(atom) is None):
            key = ("slice", repr(atom)) if isinstance(atom, slice) else analyzer.term_key(atom.name)
            dims.append(None if key is None else Affine(terms={key: 1}))
        else:
            dims.append(analyzer.of(atom))
    return dims


def nest_root(store, dims):
    """The outermost enclosing loop whose variable selects the element."""
    used = {loop for d in dims if d is not None for loop in d.coeffs}
    return next((loop for loop in store.loops if loop in used), None)


def analyze_store(scan, store):
    """(nest root, dims) of a store, or a `StreamLegalityError`."""
    if store.kind == "opaque":
        loop = next((l for l in reversed(store.loops) if not l.is_range), None)
        _fail(store, "the index is not visible to the compiler (a tuple index built elsewhere)"
              + (_rewrite(loop) if loop is not None else ""))
    if store.kind == "view":
        _fail(store, f"the store goes through a view of the parameter (made at line {store.view.loc.line}, "
              "e.g. a reassignment to a slice), whose elements streamjit cannot relate to the parameter's")
    outer = AffineAnalyzer(scan, store.loops[0] if store.loops else None)
    first = store_dims(scan, store, outer)
    root = nest_root(store, first)
    if root is None and store.loops:
        if any(d is None for d in first):
            _not_affine(store)
        if store.is_element and any(loop.kind == "prange" for loop in store.loops):
            loop = store.loops[-1]  # (threads racing on one element: a reduction)
            _fail(store, f"the index does not depend on the loop variable '{loop.var}' (line {loop.line}), "
                  "so every iteration of that parallel loop writes the same element")
        # no loop selects what it writes (a whole-array store, or one element
        # such as a boundary value `u[0] = 0` in a time loop): a stage of its
        # own, re-run by the loops around it; an element store stays plain
        return None, first
    # invariance is judged per execution of the nest, not of the time loops around it
    dims = store_dims(scan, store, AffineAnalyzer(scan, root)) if root is not None else first
    if any(d is None for d in dims):
        _not_affine(store)
    nest = store.loops[store.loops.index(root):] if root is not None else ()
    for loop in nest:
        if is_block_loop(loop):
            continue  # its blocks run the loop inside it over disjoint ranges (an inner prange, split)
        if not loop.is_range:
            kind = "while" if loop.kind == "while" else "non-range for"
            _fail(store, f"the store is inside a {kind} loop (line {loop.line}) within its nest, whose "
                  "iterations may write the same element" + _rewrite(loop))
        if any(d.only_loop() is loop for d in dims):
            continue
        if not any(loop in d.coeffs for d in dims):
            _fail(store, f"the index does not depend on the loop variable '{loop.var}' (line {loop.line}), "
                  "so every iteration of that loop writes the same element" + _ACCUMULATE)
        _fail(store, f"the loop variable '{loop.var}' only appears mixed with other loop variables, "
              "so distinct iterations may write the same element")
    if any(l not in store.loops for d in dims for l in d.coeffs):
        _fail(store, "the index uses the variable of a loop that has ended")
    return root, dims


# Attributes that read an array's metadata, not its elements.
_METADATA = {"shape", "size", "ndim", "strides", "dtype", "itemsize", "nbytes"}


def _through_view(scan, view, own, analyzer):
    """Dims of ``view[own]`` in the index space of the array ``view``
    subscripts: its integer atoms, and per slice (or dimension left out)
    the view's next own dimension plus the slice as an invariant term (a
    slice step is never 0: distinct view indices stay distinct elements);
    None where an atom is not affine or invariant."""
    atoms = index_atoms(scan, view)
    if atoms is None or any(a is Ellipsis for a in atoms):
        return None
    atoms = atoms + [slice(None)] * (scan.typemap[view.value.name].ndim - len(atoms))
    dims, own = [], list(own)
    for atom in atoms:
        if not is_slice(scan.typemap, atom):
            dims.append(analyzer.of(atom))
            continue
        key = ("slice", repr(atom)) if isinstance(atom, slice) else analyzer.term_key(atom.name)
        inner = own.pop(0) if own else None
        dims.append(None if key is None or inner is None else Affine(dict(inner.coeffs), {**inner.terms, key: 1},
                                                                     dict(inner.names), inner.const))
    return None if own or None in dims else dims


def _reads_its_row_first(scan, var, label, whole, outer, inner):
    """Whether ``var`` is a view of the row the store's iteration writes
    (its dims the store's ``whole`` dims but for the loops of the nest
    rooted at ``inner``) and block ``label`` runs before that nest in the
    iteration of the loops around it, up to ``outer``."""
    view = scan.definition(var)
    if not (isinstance(view, ir.Expr) and view.op in ("getitem", "static_getitem")):
        return False
    own = [Affine(terms={("own", k): 1}) for k in range(scan.typemap[var].ndim)]
    dims = _through_view(scan, view, own, AffineAnalyzer(scan, outer))
    if dims is None or len(dims) != len(whole):
        return False
    for mine, theirs in zip(dims, whole):
        kept = {l: c for l, c in theirs.coeffs.items() if l.header not in inner.body}
        terms = {k: c for k, c in mine.terms.items() if k[0] != "own"}
        if mine.coeffs != kept or terms != theirs.terms or mine.const != theirs.const:
            return False
    return label in scan.cfg.dominators()[inner.header]  # (every path to the nest passes it)


def _touches(scan, store, whole, outer, inner, origin):
    """Whether a statement of the loop ``outer`` outside the nest rooted at
    ``inner`` hands the stored array, or a view of it, to anything but what
    the module header allows."""
    bases = {scan.arrays.get(store.array)} | {v for v in scan.groups if scan.group_name(v) == store.array} \
        | {v for v, name in scan.versions.items() if name == store.array}

    def rooted(name):
        while scan.canonical(name) not in bases:
            value = scan.definition(name)
            if not (isinstance(scan.typemap.get(name), types.Array) and isinstance(value, ir.Expr)
                    and value.op in ("getitem", "static_getitem")):
                return False
            name = value.value.name
        return True

    for label in outer.body - inner.body:
        for stmt in scan.func_ir.blocks[label].body:
            if isinstance(stmt, (ir.SetItem, ir.StaticSetItem)) and rooted(stmt.target.name):
                if id(stmt) in origin or any(a.stmt is stmt and a.is_element for a in scan.stores()):
                    continue  # a fallback of a fused loop, or an element store legality checks
                return True
            value = stmt.value if isinstance(stmt, ir.Assign) else None
            if isinstance(value, ir.Var) or isinstance(value, ir.Expr) and (
                    value.op in ("getitem", "static_getitem") or value.op == "getattr" and value.attr in _METADATA):
                continue  # a load, a view (its own uses are checked), a copy, the shape
            for var in stmt.list_vars():
                if var.name != store.array_var and (value is None or var.name != stmt.target.name) \
                        and rooted(var.name) and not _reads_its_row_first(scan, var.name, label, whole, outer, inner):
                    return True  # (the destination's own uses: the fused loop's run-time check)
    return False


def _view_nest(scan, store, root, origin):
    """(root, dims in the array's own index space) of the largest nest
    around ``root`` that writes each element once per execution, for a
    store through a view `array_stores.py` made (module header); (root,
    None) for any other store."""
    view = scan.definition(store.array_var) if store.array_var in scan.views else None
    bases = set(scan.arrays.values()) | set(scan.groups)
    if root is None or not (isinstance(view, ir.Expr) and view.op in ("getitem", "static_getitem")
                            and scan.canonical(view.value.name) in bases):
        return root, None
    found = (root, None)
    for k in range(store.loops.index(root) - 1, -1, -1):
        analyzer = AffineAnalyzer(scan, store.loops[k])
        own = store_dims(scan, store, analyzer)
        whole = None if None in own else _through_view(scan, view, own, analyzer)
        nest = store.loops[k:]
        if whole is None or any(l not in store.loops for d in whole for l in d.coeffs) \
                or not all(loop.is_range and loop.kind != "prange" and any(d.only_loop() is loop for d in whole)
                           for loop in nest) \
                or _touches(scan, store, whole, store.loops[k], root, origin):
            break
        found = (store.loops[k], whole)
    return found


def _exclusive(scan, a, b):
    """True if blocks ``a`` and ``b`` sit in opposite branches of one ``if``:
    each branch target is entered only from the branch, and dominates one of
    them."""
    doms = scan.cfg.dominators()
    for label, block in scan.func_ir.blocks.items():
        term = block.body[-1]
        if not isinstance(term, ir.Branch) or term.truebr == term.falsebr:
            continue
        t, f = term.truebr, term.falsebr
        if [p for p, _ in scan.cfg.predecessors(t)] != [label] or [p for p, _ in scan.cfg.predecessors(f)] != [label]:
            continue
        if (t in doms[a] and f in doms[b]) or (f in doms[a] and t in doms[b]):
            return True
    return False


def _provably_disjoint(dims_a, dims_b):
    if len(dims_a) != len(dims_b):
        return False
    for da, db in zip(dims_a, dims_b):
        if da.key() == db.key():
            diff, step = da.const - db.const, da.stride_gcd()
            if diff and (step == 0 or diff % step):
                return True
    return False


def _same_index(dims_a, dims_b):
    return len(dims_a) == len(dims_b) and all(
        da.key() == db.key() and da.const == db.const for da, db in zip(dims_a, dims_b))


def index_array_store(scan, store):
    """Whether ``store`` indexes with an array (``out[out < 0] = 0``,
    ``out[idx] = v``): Numba's own store, whose elements no pass sees."""
    return store.kind == "opaque" and any(isinstance(a, ir.Var) and isinstance(scan.typemap[a.name], types.Array)
                                          for a in store.index)


def numba_whole_store(scan, store, origin):
    """Whether ``store`` is one Numba makes itself, with plain stores, that
    no pass streams: a whole-array operator (``B *= 2``), an index-array
    store, a row or slice assignment `array_stores.py` did not turn into an
    element loop (``y[:k] += alpha * np.flip(y[:k])``: its operands are not
    elementwise), or the fallback of one it did: the element loop is
    checked instead (a view that moves with an outer loop, ``out[i:i + 2] =
    ...`` in an ``i`` loop, is a stage re-run by that loop, as a time loop
    re-runs a nest)."""
    return store.kind in ("inplace", "row", "slice") or index_array_store(scan, store) \
        or (not store.is_element and id(store.stmt) in origin)


def _check_one_array(scan, names, origin):
    """{store: (nest root, dims)} of the stores to ``names`` (one array:
    `_conflict_sets`), or `_Refused` at the first that may not stream."""
    # stores Numba makes itself (`numba_whole_store`) run once, as a
    # stage of their own, with plain stores
    indexed = []
    for s in (s for array in names for s in scan.stores(array) if not numba_whole_store(scan, s, origin)):
        root, dims = analyze_store(scan, s)
        root, whole = _view_nest(scan, s, root, origin)
        indexed.append((s, root, dims, whole or dims))  # (compared in the array's own index space)
    stage = {a: root_a for a, root_a, _, _ in indexed}
    conflicts = []
    for n, (a, root_a, _, dims_a) in enumerate(indexed):
        for b, root_b, _, dims_b in indexed[n + 1:]:
            if root_a is None or root_a is not root_b:
                continue
            if _provably_disjoint(dims_a, dims_b):
                continue
            if _same_index(dims_a, dims_b) and _exclusive(scan, a.label, b.label):
                continue
            separate = _separate_stages(a, b)
            if separate is None:
                conflicts.append((a, b))
                continue
            # two nests run one after the other (Halide's stages), each fenced after it runs
            for store, child in zip((a, b), separate):
                stage[store] = child or stage[store]
    for a, b in conflicts:
        if stage[a] is stage[b]:
            first, second = sorted((a, b), key=lambda s: s.line)
            _fail(second, f"this store and the one at line {first.line} may write the same element; to "
                  "stream it, compute the element's value in a scalar and store it once")
    return {a: (stage[a], dims_a) for a, _, dims_a, _ in indexed}


def check_stream_stores(scan, arrays, origin, named):
    """``({store: (nest root, dims)}, {array: _Refused})``: the stores to
    ``arrays`` that may stream, and the arrays whose stores may not (with
    every name that may hold the same array). ``named``: the user named
    the arrays (a list in ``stream_stores``), so a refusal raises
    `StreamLegalityError` instead. ``origin``: the stores `array_stores.py`
    made or kept as the fallback of its loops."""
    analyzed, refused = {}, {}
    for names in _conflict_sets(scan, arrays):
        try:
            analyzed.update(_check_one_array(scan, names, origin))
        except _Refused as refusal:
            if named:
                raise refusal.error() from None
            refused.update(dict.fromkeys(names, refusal))
    return analyzed, refused


# The note on an array whose stores cannot stream under stream_stores=True
# (the report's summary shows the words before the first colon).
REFUSED_NOTE = ("its stores cannot stream: {} (stream_stores=True leaves it plain; naming it in stream_stores "
                "raises StreamLegalityError)")


def _conflict_sets(scan, arrays):
    """The names whose stores may write one element, in groups: each array
    alone, except a ping-pong variable that may hold the same array as
    another name at once (``B = A`` in a time loop, not a swap:
    `rebindings.swaps_permute`), checked together with it, as one array."""
    sets = []
    for name in arrays:
        joined = next((s for s in sets for n in s if scan.roots(n) & scan.roots(name)
                       and scan.aliased_groups & {n, name}), None)
        if joined is not None:
            joined.append(name)
        else:
            sets.append([name])
    return sets


def _separate_stages(a, b):
    """``(loop of a, loop of b)``: the loops right inside the innermost loop
    holding both stores, where the two stores sit in different ones (None
    for a store right in that loop's body); None when both sit in one loop
    body, one stage. Separate nests inside a sequential loop are separate
    stages even when that loop's variable selects what both write (NPBench's
    ``vadv``: two nests writing plane ``k`` in turn): each stage writes an
    element at most once, and the fence after each orders them."""
    depth = 0
    while depth < min(len(a.loops), len(b.loops)) and a.loops[depth] is b.loops[depth]:
        depth += 1
    inner_a = a.loops[depth] if depth < len(a.loops) else None
    inner_b = b.loops[depth] if depth < len(b.loops) else None
    return None if inner_a is None and inner_b is None else (inner_a, inner_b)


def run_pass(state):
    """Check Halide's rule for every streamed store (and for the stores of arrays named but left
    plain by ``threshold="auto"``): an array named in ``stream_stores`` that fails it raises
    `StreamLegalityError` with the array, the cause and the line; under ``stream_stores=True`` it
    leaves the streamed arrays, with a note saying why. Note the streamed arrays' stores that stay
    plain (index-array stores, row or slice assignments Numba makes itself, a single element no
    loop selects). Changes nothing in the IR."""
    facts, result = state.stream_facts, state.metadata[METADATA_KEY]
    scan, options = facts.scan, facts.options
    # legality is the program's, not the call size's: arrays named but left
    # plain by threshold="auto" (`accesses.AUTO_NOTE`) are checked too
    named = set(options.stream_stores) & {a.array for a in scan.stores()} if options.measured else set()
    facts.legal, refused = check_stream_stores(scan, sorted(result.streamed_stores | named), facts.store_origin,
                                               options.stream_stores is not True)
    result.streamed_stores -= refused.keys()
    for name, refusal in sorted(refused.items()):
        result.notes[name] = [n for n in result.notes.get(name, []) if not n.endswith(LOOP_NOTE)]
        held = "" if name == refusal.store.array else f" (a store to '{refusal.store.array}', which it may hold)"
        result.note(name, refusal.store.line, REFUSED_NOTE.format(refusal.reason) + held)
    for store in scan.stores():
        if store.array not in result.streamed_stores:
            continue
        if index_array_store(scan, store):
            result.note(store.array, store.line, "an index-array store (a boolean mask or fancy indexing): "
                        "Numba's own, plain stores")
        elif store.kind in ("row", "slice") and id(store.stmt) not in facts.store_origin:
            result.note(store.array, store.line, f"a {store.kind} assignment Numba makes itself (its right-hand "
                        "side is not arithmetic and ufuncs on arrays and scalars): plain stores")
        elif store.is_element and store.loops and facts.legal[store][0] is None:
            result.note(store.array, store.line, "one element, whichever the iteration of the loops around it: "
                        "a stage of its own, plain stores")
    return False
