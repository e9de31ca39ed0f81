"""The facts the stream passes hand one another during one compile.

Numba's passes share a ``StateDict`` (``state.func_ir``, ``state.typemap``,
...). The stream passes keep all they hand to later passes in one
attribute of it, ``state.stream_facts``: a `StreamFacts` that the pipeline
(`kernel/pipeline.py`) makes before the first pass. Who produces and who reads each
field is declared by the passes themselves, as LLVM's ``AnalysisUsage`` does:
each pass module names the fields it reads (``REQUIRES``), sets
(``PRODUCES``) and leaves stale (``INVALIDATES``); the pipeline checks them
as it runs (`guarded`), and ``tests/test_passes.py`` checks the pipeline's
order against them. A pass leaves a fact stale where it removes or replaces
what the fact points at and a later pass reads that part; inserting
statements leaves the scan's arrays and the statements it found in place.
What the passes decided for the caller (the streamed
arrays, the notes, the split loops) is not here: it is the `StreamResult` in
the compile result's metadata (`plan.py`).
"""

from dataclasses import dataclass, field, fields


@dataclass
class StreamFacts:
    """The stream passes' shared facts for one compile of one signature."""

    # The kernel's `StreamOptions`; None compiles exactly as ``numba.njit``.
    # Set by the pipeline (`pipeline.StreamCompiler`, and `cuda/legality.py`
    # for the GPU's decision) before any pass.
    options: object = None
    # ``{id(statement): statement}``: the statements already typed (holding
    # them, so that no new statement reuses a dropped one's id); None until
    # the pipeline records them before the first typed pass
    # (`retype.snapshot`). A pass that copies typed statements adds the
    # copies (`retype.copy_types`); `retype` types the statements not in it.
    typed: dict | None = None
    # ``{view variable: array}``: the views of streamed arrays that
    # `array_stores` made for the element loops it wrote (a scan sees the
    # view's stores as the array's).
    views: dict = field(default_factory=dict)
    # ``[(array, line, text)]``: why a store `array_stores` met stayed Numba's
    # own, or how it was rewritten (copied into the `StreamResult`'s notes).
    store_notes: list = field(default_factory=list)
    # ``{id(store): (store, how)}``: the stores `array_stores` made, or kept as
    # the fallback of a loop it made (``how``: what it stores, or
    # ``"overlap"``).
    store_origin: dict = field(default_factory=dict)
    # The variables whose False sends a loop `array_stores` fused to Numba's
    # own store (a run-time check failed): calls counted as fallbacks.
    fallbacks: list = field(default_factory=list)
    # The `KernelScan` of the kernel after the rewrites of `array_stores` and
    # `parallel_blocks`: every load and store of an array and its loops.
    scan: object = None
    # ``{store: (nest root, dims)}`` for every streamed store (root None: the
    # store is a stage of its own).
    legal: dict = field(default_factory=dict)
    # The `PeelPlan`s of the loops `align_peel` split, innermost first.
    peels: list = field(default_factory=list)
    # The facts set so far and not left stale since (the pipeline's record,
    # not a fact).
    valid: set = field(default_factory=lambda: {"options"}, repr=False)


FACTS = tuple(f.name for f in fields(StreamFacts) if f.name != "valid")


class _Guarded:
    """``facts`` as one pass sees them: reading or setting a field outside
    ``allowed`` raises, naming the pass and the field."""

    def __init__(self, facts, allowed, name):
        object.__setattr__(self, "_seen", (facts, allowed, name))

    def _check(self, field_name):
        facts, allowed, name = object.__getattribute__(self, "_seen")
        if field_name not in allowed:
            raise AssertionError(f"stream pass {name!r} uses the fact {field_name!r}, which its REQUIRES and "
                                 f"PRODUCES do not declare")
        return facts

    def __getattr__(self, field_name):
        return getattr(self._check(field_name), field_name)

    def __setattr__(self, field_name, value):
        setattr(self._check(field_name), field_name, value)


def contract(module):
    """``(requires, produces, invalidates)`` a pass module declares."""
    return module.REQUIRES, module.PRODUCES, module.INVALIDATES


def guarded(facts, module, name):
    """``facts`` for the pass ``module`` (named ``name``) to run with: raises
    if a fact it requires was never produced or was left stale since; the
    object returned lets the pass use only the facts it declares."""
    requires, produces, _ = contract(module)
    missing = [f for f in requires if f not in facts.valid]
    if missing:
        raise AssertionError(f"stream pass {name!r} requires {', '.join(missing)}, which no pass before it "
                             "produced (or one invalidated since)")
    return _Guarded(facts, set(requires) | set(produces), name)


def record(facts, module, name):
    """After the pass ``module`` ran: raises if a fact it produces is unset;
    marks what it produced valid and what it invalidated stale."""
    _, produces, invalidates = contract(module)
    unset = [f for f in produces if getattr(facts, f) is None]
    if unset:
        raise AssertionError(f"stream pass {name!r} left {', '.join(unset)} unset, which it declares it produces")
    facts.valid.difference_update(invalidates)
    facts.valid.update(produces)
