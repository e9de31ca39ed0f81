"""Decide which arrays stream, from the facts `scan.py` finds: the arrays
``stream_stores`` / ``stream_loads`` name (``True``: every array parameter
the kernel stores to, except those it allocates or only updates in place,
each left plain with a note saying why), warnings for names the kernel never
stores to or loads, and the error for a streamed self-load. The decision is
the `StreamResult` every later pass and the report read.
"""

from numba.core import ir, types

from ..errors import StreamConfigError, warn_in_kernel
from ..plan import LOOP_NOTE, METADATA_KEY, StreamResult
from .analysis.affine import Affine, AffineAnalyzer
from .analysis.scan import root_array, scan_kernel

# The `StreamFacts` fields this pass reads, sets and leaves stale (`passes/analysis/facts.py`).
REQUIRES = ("options", "views", "store_notes", "store_origin")
PRODUCES = ("scan",)
INVALIDATES = ()
ANALYSIS_ONLY = True  # (it reads the IR and changes nothing in it)


def _named(option, candidates):
    return set(candidates) if option is True else set(option or ())


# Why ``stream_stores=True`` leaves the arrays a kernel allocates plain: a
# fresh allocation's pages are zeroed by the kernel on first touch, in cache,
# and a streamed store to such a line costs more than a cached one
# (bench/array_expressions.py: 0.68x numba.njit for a 200 MB fresh output).
FRESH_NOTE = ("allocated by the kernel: not streamed under stream_stores=True (its pages are zeroed in cache on "
              "first touch; streaming measured slower, bench/array_expressions.py); name it in stream_stores "
              "('return' for a returned unnamed array) to stream it anyway")


# Why ``stream_stores=True`` leaves arrays only updated in place plain
# (``C *= beta``, ``A[1:] += B[:-1]``, ``a[i] = a[i] * b`` in a loop, doitgen's
# ``tmp = A[r, q, :] @ C4; A[r, q, :] = tmp``): each
# element is read just before it is written, so its line is in cache and a
# streamed store saves no read-for-ownership; it measured slower
# (bench/array_expressions.py).
IN_PLACE_NOTE = ("only updated in place: not streamed under stream_stores=True (each element is read just before it "
                 "is written, so there is no read to save; streaming measured 0.75-0.94x, bench/array_expressions.py);"
                 " name it in stream_stores to stream it anyway")


# Why `align_peel.py` leaves the loop `array_stores.py` made of an update in
# place plain under the measured rules, whatever other stores to its array
# do, as for an array only updated in place (IN_PLACE_NOTE): NPBench's fdtd_2d streams ``ey[0, :]
# = ...`` and ran 0.96-0.97x its never-streamed self with ``ey[1:, :] -= ...``
# streamed too (Intel Xeon VM, family 6 model 167, bench/npbench.py).
UPDATE_NOTE = ("an update in place (each element is read just before it is written: no read to save): plain stores "
               "under stream_stores=True or threshold='auto', whatever other stores to it do; name it with "
               "threshold=None to stream it anyway")


def updates_stay_plain(options):
    """Whether the measured rules apply (stream_stores=True, or names under threshold="auto"), which leave an update
    in place plain."""
    return options.stream_stores is True or options.measured


def _atom_key(scan, atom):
    return scan.canonical(atom.name) if isinstance(atom, ir.Var) else atom


def _rewrites_what_it_read(scan, store):
    """Whether an element store writes the element its block read just
    before (``a[i] = a[i] * b``): an update in place written as a loop."""
    if store.kind != "element":
        return False
    body = scan.func_ir.blocks[store.label].body
    at = next(k for k, s in enumerate(body) if s is store.stmt)
    key = [_atom_key(scan, a) for a in store.index]
    return any(load.label == store.label and load.kind == "element" and any(s is load.stmt for s in body[:at])
               and [_atom_key(scan, a) for a in load.index] == key for load in scan.loads(store.array))


def _stores_an_in_place_result(scan, store):
    """Whether a row or slice store stores what an in-place operator made
    (``A[i, 1:-1] += expr``, which Python runs as ``v = A[i, 1:-1]; v +=
    expr; A[i, 1:-1] = v``) where `array_stores.py` kept Numba's own store
    (seidel_2d: its operands overlap)."""
    found = scan.defs.get(store.stmt.value.name, []) if isinstance(store.stmt, ir.SetItem) else []
    # (the statement itself: `scan.definition` follows an array's in-place result back to the view)
    return store.kind in ("row", "slice") and len(found) == 1 and isinstance(found[0][1].value, ir.Expr) \
        and found[0][1].value.op == "inplace_binop"


def _one_constant_element(scan, store):
    """``u[0] = 0``, ``u[-1] = v``: a boundary value, a plain store whatever the options."""
    def constant(atom):
        value = scan.definition(atom.name) if isinstance(atom, ir.Var) else None
        return isinstance(atom, int) or isinstance(value, ir.Const) and isinstance(value.value, int)
    return store.kind == "element" and all(constant(a) for a in store.index)


def _only_in_place(scan, name, origin):
    """Whether every store to ``name`` updates in place (its boundary
    values aside)."""
    stores = [a for a in scan.stores(name) if not _one_constant_element(scan, a)]
    return bool(stores) and all(a.kind == "inplace" or origin.get(id(a.stmt), (None, None))[1] in ("inplace", "update")
                                or _rewrites_what_it_read(scan, a) or _stores_an_in_place_result(scan, a)
                                for a in stores)


# Why threshold="auto" leaves them plain even when named.
AUTO_NOTE = ("threshold='auto' leaves it plain: streaming {} measured slower at every size tried "
             "(bench/array_expressions.py); give a byte threshold, or none, to stream it anyway")


# Why a loop that loads back, at another element, the array whose stores it
# would stream stays plain under stream_stores=True and threshold="auto":
# each such load waits for the non-temporal store before it to reach memory.
_READ_BACK_MEASURED = ("out[i] = out[i - 1] + a[i] measured 0.24x numba.njit on an AMD Zen 4, 0.48x on an Intel "
                       "Xeon, bench/read_back.py")
READ_BACK_NOTE = ("line {load}: loaded back at another element in the loop that stores it (line {store}): not "
                  "streamed under stream_stores=True or threshold='auto' (each load would wait for the streamed "
                  f"store before it to reach memory: {_READ_BACK_MEASURED}); name it with threshold=None to stream "
                  "it anyway")
READ_BACK_WARNING = ("stream_stores streams '{array}', which line {load} loads back at another element in the loop "
                     "that stores it (line {store}): each such load waits for the streamed store before it to reach "
                     f"memory ({_READ_BACK_MEASURED}); leave it out of stream_stores, or give threshold='auto', to "
                     "keep it plain")


def read_back(scan, name):
    """``(load, store)``: a load of ``name`` at another element than the one
    the store beside it writes, inside the store's innermost loop (a
    loop-carried read-back, ``out[i] = out[i - 1] + a[i]``); None if none."""
    for store in scan.stores(name):
        if not store.loops or store.kind != "element":
            continue
        analyzer = AffineAnalyzer(scan, store.loops[0])
        element = _element_of(analyzer, store)
        for load in scan.loads(name):
            if load.kind == "element" and any(loop is store.loops[-1] for loop in load.loops) \
                    and _element_of(analyzer, load) != element:
                return load, store
    return None


def _element_of(analyzer, access):
    """What selects the element an access reads or writes: the affine form
    of each index dimension (its `Affine.key` and constant), so that ``j + 1``
    computed twice is one element; the variable itself where not affine."""
    forms = [analyzer.of(atom) if isinstance(atom, ir.Var) else atom for atom in access.index]
    return [(f.key(), f.const) if isinstance(f, Affine) else f if f is not None else atom.name
            for f, atom in zip(forms, access.index)]


def _measured_slower(scan, name, origin, named):
    """Whether ``name`` is an array the kernel makes (every array a ping-pong
    variable may hold, for one) and not ``named`` by the user, one a loop
    loads back (`read_back`) or (once `array_stores.py` has made its loops:
    ``origin``) one only updated in place. (Naming an array the kernel makes,
    or "return", streams it as naming a parameter does, the threshold
    deciding per call: the name says the user wants it streamed.)"""
    return not named and scan.roots(name) <= scan.fresh or read_back(scan, name) is not None \
        or origin is not None and _only_in_place(scan, name, origin)


def stored_names(scan):
    """The names stores go to, and the arrays ping-pong variables among them may hold."""
    stored = {a.array for a in scan.stores()}
    return stored.union(*(scan.roots(name) for name in stored))


def streamed_store_names(options, scan, origin=None):
    """The arrays whose stores the options stream: with True, the array
    parameters stored to, except those only updated in place; a list names
    parameters or arrays the kernel makes, and with threshold="auto" it
    keeps the same exceptions but for the arrays the kernel makes. A ping-pong variable (``A, B = B, A`` in a
    time loop) streams when the arrays it may hold are named; they join the
    streamed arrays."""
    stored = {a.array for a in scan.stores()}
    option = set(options.stream_stores or ()) if options.stream_stores is not True else None
    named = stored if option is None else {n for n in stored if n in option or scan.roots(n) <= option}
    if updates_stay_plain(options):
        named = {name for name in named if not _measured_slower(scan, name, origin, option is not None)}
    return named.union(*(scan.roots(name) for name in named))


def _passed_to_functions(scan):
    """{array name: [(line, function name)]} for arrays handed to a jitted
    function Numba compiles on its own (not inlined at the IR level), whose
    stores no pass sees."""
    passed = {}
    for block in scan.func_ir.blocks.values():
        for stmt in block.body:
            if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr) and stmt.value.op == "call" \
                    and isinstance(scan.typemap.get(stmt.value.func.name), types.Dispatcher):
                callee = scan.typemap[stmt.value.func.name].dispatcher.py_func.__name__
                for arg in stmt.value.args:
                    root = root_array(scan, arg) if isinstance(scan.typemap.get(arg.name), types.Array) else None
                    if root is not None:
                        passed.setdefault(root[0], []).append((stmt.loc.line, callee))
    return passed


CALL_NOTE = ("passed to '{}', which Numba compiles as a function of its own: the stores it makes are plain, and no "
             "pass sees them; decorate it @numba.njit(inline='always') (its stores are then the kernel's) to stream "
             "them")


def _warn_unused(option, used, option_name, verb, func_id, typemap):
    """A StreamWarning for each name in a list option that the kernel never
    ``verb``s, shown at the kernel's ``def`` (a scalar parameter's says it
    is no array)."""
    if isinstance(option, tuple):
        for name in sorted(set(option) - used):
            ty = typemap.get(name) if name in func_id.arg_names else None
            if ty is not None and not isinstance(ty, (types.Array, types.Optional, types.Omitted, types.NoneType)):
                warn_in_kernel(func_id, f"{option_name} names '{name}', a scalar parameter of {func_id.func_qualname} "
                               f"({ty}), not an array: only arrays' {verb.split()[0].rstrip('s')}s stream")
            else:
                warn_in_kernel(func_id, f"{option_name} names '{name}', but {func_id.func_qualname} never {verb} it")


def run_pass(state):
    """Scan the kernel; decide the streamed arrays (`StreamResult`)."""
    facts = state.stream_facts
    options = facts.options
    scan = scan_kernel(state.func_ir, state.typemap, options.parallel, facts.views)
    func_name = state.func_id.func_qualname
    stored = stored_names(scan)
    loaded = {a.array for a in scan.loads()}
    streamed = streamed_store_names(options, scan, facts.store_origin)
    # arrays only handed to functions: named ones, or (under True) those the kernel neither loads nor stores
    passed = {name: calls for name, calls in _passed_to_functions(scan).items() if name not in stored and (
        name in options.stream_stores if isinstance(options.stream_stores, tuple)
        else options.stream_stores is True and name not in loaded)}
    # (named ones are warned about, with the note below, by `nothing_streamed.py`)
    # (a result named but not fused is noted by array_stores.py)
    locals_named = set(options.stream_stores) - set(state.func_id.arg_names) - stored - scan.results \
        if isinstance(options.stream_stores, tuple) else set()
    _warn_unused(options.stream_stores, stored | scan.results | locals_named | set(passed), "stream_stores",
                 "stores to", state.func_id, state.typemap)
    for name in sorted(locals_named):
        warn_in_kernel(state.func_id, f"stream_stores names '{name}', but {func_name} neither allocates it with NumPy "
                       "(np.empty, np.zeros, ...) and stores to it, nor computes it by an array expression: it stays "
                       "plain")
    loads = _named(options.stream_loads, loaded - stored)
    self_loads = sorted(loads & stored)
    if self_loads:
        raise StreamConfigError(f"stream_loads names '{self_loads[0]}', which {func_name} also stores to: "
                                "a kernel cannot stream its own self-loads")
    _warn_unused(options.stream_loads, loaded | stored, "stream_loads", "loads", state.func_id, state.typemap)
    result = StreamResult(streamed_stores=frozenset(streamed), streamed_loads=frozenset(loads & loaded),
                          fresh_arrays=frozenset(scan.fresh & stored | scan.results), views=dict(scan.views),
                          ping_pong=dict(scan.group_roots))
    read_backs = {name: found for name in stored for found in [read_back(scan, name)] if found}
    for name, (load, store) in sorted(read_backs.items()):
        if name in streamed:
            warn_in_kernel(state.func_id, READ_BACK_WARNING.format(array=name, load=load.line, store=store.line))
        elif options.stream_stores is True or name in (options.stream_stores if options.measured else ()):
            result.note(name, 0, READ_BACK_NOTE.format(load=load.line, store=store.line))
    if options.stream_stores is True:
        for name in sorted((scan.fresh & stored | scan.results) - streamed):
            result.note(name, 0, FRESH_NOTE)
        for name in sorted(stored - scan.fresh - streamed - set(read_backs)):
            result.note(name, 0, IN_PLACE_NOTE)
    elif options.measured:
        for name in sorted(set(options.stream_stores) & (stored | scan.results) - streamed - set(read_backs)):
            result.note(name, 0, AUTO_NOTE.format("an update in place"))
    for array, line, text in facts.store_notes:
        result.note(array, line, text)
    for name, calls in sorted(passed.items()):
        for line, callee in calls:
            result.note(name, line, CALL_NOTE.format(callee))
    for name in sorted(streamed):  # how the rest of its stores were made
        in_loops = [a for a in scan.stores(name) if a.loops and id(a.stmt) not in facts.store_origin
                    and a.kind not in ("inplace", "opaque")]
        if in_loops:
            result.note(name, in_loops[0].line, LOOP_NOTE)
    state.metadata[METADATA_KEY] = result
    facts.scan = scan
    return False
