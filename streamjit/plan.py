"""What a kernel was asked to stream, and what one compile of it decided.

`StreamOptions` are the validated decorator options, fixed per dispatcher;
the pipeline (`kernel/pipeline.py`) hands them to every pass as
``state.stream_facts.options`` (`passes/analysis/facts.py`). `StreamResult` is what
the passes decided for one signature (which arrays stream, which loops were
split, why a store stayed plain); it travels in the compile result's
metadata, where `stream_report` reads it.
"""

from dataclasses import dataclass, field, fields

from ._version import __version__
from .machine.profile import NO_ROWS, SCALAR_NT_ITEM_BYTES, LoadStage, MachineProfile

METADATA_KEY = "streamjit"
# The note on a streamed array stored by the kernel's own loops (how its
# stores were made: not a reason for anything).
LOOP_NOTE = "stored in a loop"


def plain_scalar_note(dtype, scalar_nt_bytes):
    """Why the scalar stores of ``dtype`` items (a loop that did not
    vectorize) stay plain where the machine profile's ``scalar_nt_bytes``
    row leaves them so; None where it does not."""
    itemsize = getattr(dtype, "bitwidth", 0) // 8
    if itemsize not in SCALAR_NT_ITEM_BYTES or itemsize in scalar_nt_bytes:
        return None
    return (f"this CPU's machine profile leaves scalar stores of {itemsize}-byte items plain (scalar_nt_bytes "
            f"{list(scalar_nt_bytes)}: `python -m streamjit info` says why)")


# How the note begins on a streamed loop that cannot run staged
# (`passes/staging.py`), on CPUs where trailing sources stall streamed stores.
NOT_STAGED = "calls whose sources trail the streamed store modulo 4 KiB run the plain loop, not staged because"
# The note on a temporary computed inside the element loop that reads it
# (`passes/rewrite/array_expressions.py`; the report lists these as fused).
FUSED_TEMPORARY = ("fused into the element loop storing {array} (line {line}): computed where it is read, "
                   "{views} time{s} per element, never stored as an array (unless a run-time check sends the call "
                   "to Numba's own code)")


@dataclass(frozen=True)
class StreamOptions:
    """A kernel's validated options (``stream_kernel(...)``), with the machine
    profile's rows it was compiled with; fixed per dispatcher, and part of
    every cache key (`cache_key`)."""
    stream_stores: object = False  # True, or a tuple of names
    stream_loads: object = False
    # how streamed loads, and the sources of streamed stores, are lowered:
    # the machine profile's choices with the kernel's own overrides
    loads: LoadStage = LoadStage()
    sources: LoadStage = LoadStage()
    # the sources of a stencil's loop that reads rows again (`passes/stream_loads.reads_rows_again`)
    stencil_sources: LoadStage = LoadStage()
    # bytes of streamed arrays above which the aligned loops run ("auto" until
    # the first compile reads it: options.resolved)
    threshold: int | str | None = None
    parallel: bool = False
    # threshold="auto": what measured slower streamed at every size (arrays
    # the kernel makes, updates in place) stays plain even when named
    measured: bool = False
    # the machine profile's rows the CPU code is compiled with (`machine.MachineProfile`:
    # the 4K check, the staged strips, scalar NT stores, the wide stencils);
    # the GPU's options read none (`machine.NO_ROWS`)
    machine: MachineProfile = NO_ROWS
    # where `loads` and `sources` came from (the profile, the kernel's overrides), for the report
    profile: str = field(default="", compare=False)

    @property
    def scalar_nt_prefetched(self):
        """Whether the scalar NT rows hold for sources prefetched: they were
        measured with the profile's own sources row."""
        return self.machine.sources.prefetches()

    def cache_key(self):
        """What, besides the source, decides the compiled code: streamjit's
        version and every field compared (all but where the profile came
        from), so a field added later enters the key by being declared."""
        return (__version__,) + tuple(getattr(self, f.name) for f in fields(self) if f.compare)


@dataclass
class StreamResult:
    """What the passes decided for one signature: the arrays whose stores
    and loads stream, the loops split for alignment, the notes saying why
    an array stayed plain, and the per-call counters' name (read back as
    ``calls`` and ``fallbacks``). ``kernel.stream_result(signature)``."""
    streamed_stores: frozenset = frozenset()
    streamed_loads: frozenset = frozenset()
    fresh_arrays: frozenset = frozenset()  # arrays the kernel allocates and stores to, or computes
    views: dict = field(default_factory=dict)  # view variable -> array, made by passes/array_stores.py
    size_arrays: tuple = ()  # the arrays whose bytes the threshold test adds up
    notes: dict = field(default_factory=dict)  # array -> [str]
    peeled_loops: int = 0
    # ping-pong buffers: the kernel's name of a swapped variable -> the arrays it may hold
    ping_pong: dict = field(default_factory=dict)
    call_counter: str = None  # the module global counting calls per path (`passes/call_record.py`)
    calls: dict = None  # its counts when `StreamDispatcher.stream_result` was called
    fallbacks: dict = None  # and its after_check calls per failed check (`StreamDispatcher.stream_fallbacks`)
    # array -> what in its aligned loops keeps LLVM from vectorizing them (`align_peel.vector_hints`)
    vector_hints: dict = field(default_factory=dict)

    def note(self, array, line, text):
        self.notes.setdefault(array, []).append(f"line {line}: {text}" if line else text)

    def marked_as(self, array):
        """The names the marks of streamed stores to ``array`` may carry: its
        own, and those of ping-pong variables that may hold it."""
        return [array] + sorted(n for n, roots in self.ping_pong.items() if array in roots and n != array)
