"""The facts the stream passes hand one another during one compile.

Numba's passes share a ``StateDict`` (``state.func_ir``, ``state.typemap``,
...). The stream passes keep all they hand to later passes in one
attribute of it, ``state.stream_facts``: a `StreamFacts` that the pipeline
(`pipeline.py`) makes before the first pass. Each field names the pass that
produces it and the passes that read it. What the passes decided for the
caller (the streamed arrays, the notes, the split loops) is not here: it is
the `StreamResult` in the compile result's metadata (`plan.py`).
"""

from dataclasses import dataclass, field


@dataclass
class StreamFacts:
    """The stream passes' shared facts for one compile of one signature."""

    # The kernel's `StreamOptions`; None compiles exactly as ``numba.njit``.
    # Producer: `pipeline.StreamCompiler` (and `cuda/legality.py` for the GPU's
    # decision). Consumers: every pass.
    options: object = None
    # ``{id(statement): statement}``: the statements already typed (holding
    # them, so that no new statement reuses a dropped one's id); None until
    # the first typed pass. Producers: `retype.snapshot` (the pipeline, before
    # the first typed pass), `retype.copy_types`, `retype.retype`. Consumer:
    # `retype.retype`, which types the statements not in it.
    typed: dict | None = None
    # ``{view variable: array}``: the views of streamed arrays that
    # `array_stores` made for the element loops it wrote. Producer:
    # `array_stores`. Consumers: `parallel_blocks`, `accesses` (their scans
    # see the view's stores as the array's).
    views: dict = field(default_factory=dict)
    # ``[(array, line, text)]``: why a store `array_stores` met stayed Numba's
    # own, or how it was rewritten. Producer: `array_stores`. Consumer:
    # `accesses`, which copies them into the `StreamResult`'s notes.
    store_notes: list = field(default_factory=list)
    # ``{id(store): (store, how)}``: the stores `array_stores` made, or kept as
    # the fallback of a loop it made (``how``: what it stores, or
    # ``"overlap"``). Producer: `array_stores`. Consumers: `parallel_blocks`,
    # `accesses`, `legality`, `align_peel`.
    store_origin: dict = field(default_factory=dict)
    # The variables whose False sends a loop `array_stores` fused to Numba's
    # own store (a run-time check failed). Producer: `array_stores`.
    # Consumer: `call_record`, which counts those calls as fallbacks.
    fallbacks: list = field(default_factory=list)
    # The `KernelScan` of the kernel after the rewrites of `array_stores` and
    # `parallel_blocks`: every load and store of an array and its loops.
    # Producer: `accesses`. Consumers: `legality`, `align_peel`,
    # `size_check`, `stream_loads`, `fresh_placement`, `cuda/legality.py`.
    scan: object = None
    # ``{store: (nest root, dims)}`` for every streamed store (root None: the
    # store is a stage of its own). Producer: `legality`. Consumer:
    # `align_peel`.
    legal: dict = field(default_factory=dict)
    # The `PeelPlan`s of the loops `align_peel` split, innermost first.
    # Producer: `align_peel`. Consumers: `fence_placement`, `size_check`,
    # `call_record`.
    peels: list = field(default_factory=list)
