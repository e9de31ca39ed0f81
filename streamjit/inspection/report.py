"""`stream_report`: what the compiled code of one signature actually does.

Counts are read from the code, not echoed from the options. Per-array
counts come from the final LLVM IR of the kernel function (and, with
``parallel=True``, of the worker functions of its `prange` loops), the
module exactly as handed to the backend: every load, store and prefetch whose
address derives from an array parameter's data pointer (followed through
`getelementptr`, `freeze`, `phi` and `select`) is attributed to that parameter, and
classified as vector or scalar, non-temporal or plain. Fences and the total
of streaming store instructions are counted in the machine code.

A GPU kernel's report (``target="cuda"``, `cuda/ptx.py`) is the same
`StreamReport`, counted in the PTX and SASS, with what the GPU has none of
(fences, peeled loops, per-call counts) zero or None and the reason in
``absent``.
"""

import html
import inspect
import re
from dataclasses import dataclass, field

from numba import types
from numba.core.datamodel import default_manager
from numba.core.ir_utils import legalize_names

from ..protocol.targets import count_asm_streaming
from ..machine.cpu_defaults import UNMEASURED
from ..machine.profile import machine_profile
from .math_calls import math_call_notes, math_calls, vector_math_functions
from ..plan import FUSED_TEMPORARY, LOOP_NOTE, NOT_STAGED, plain_scalar_note
from ..post_o3.array_pool import POOLED, POOLED_FROM_BYTES
from ..llvm_text.counts import ArrayReport, access_kind, count_marked_stores, kernel_functions
from ..post_o3.exit_fences import EXIT_FENCE_MARK, unfenced_returns
from ..llvm_text.module import LOCAL, Module, argument_field
from ..protocol.markers import FILL

# Numba passes an array argument as its fields (`argument_field`); the
# position of the data pointer among them, from Numba's data model
_DATA_FIELD = default_manager.lookup(types.Array(types.float64, 1, "C")).get_field_position("data")


# The table's columns: ArrayReport fields, their heads, what they count.
COLUMNS = ("nt_vector_stores", "nt_scalar_stores", "plain_stores", "nt_loads", "plain_loads", "prefetches")
COLUMN_HEADS = ("NT vec st", "NT scal st", "plain st", "NT ld", "plain ld", "prefetch")
COLUMN_MEANINGS = {
    "nt_vector_stores": "non-temporal (streamed) vector stores",
    "nt_scalar_stores": "non-temporal scalar stores",
    "plain_stores": "ordinary (cached) stores",
    "nt_loads": "non-temporal loads",
    "plain_loads": "ordinary loads",
    "prefetches": "software prefetches",
}
LEGEND = ("(instructions in the LLVM IR, not executions; NT: non-temporal (streamed); vec/scal: vector/scalar; "
          "st/ld: store/load)")


@dataclass
class StreamReport:
    """What one compiled signature of a kernel streams, and what its calls did.

    ``kernel.stream_report(signature)`` returns it. Printed (or shown in
    Jupyter), its first line, ``done``, says what streamjit did to the
    kernel: the slice and array expressions it fused into loops, the arrays
    whose stores stream, those left plain and why (for a kernel that names
    nothing, what ``stream_stores=True`` would do); its second what the
    calls so far did (``calls`` and ``fallbacks``); then where the speed
    comes from (``gains``) and the notes; with ``verbose`` (as
    ``kernel.stream_report(verbose=True)`` gives it), the table of
    instructions per array last. ``arrays`` maps each array to its
    `ArrayReport` (accesses counted in the final LLVM IR); ``fences`` and
    the ``machine_nt_*`` counts are read off the assembly."""
    signature: tuple
    arrays: dict
    fences: int
    peeled_loops: int
    machine_nt_vector_stores: int
    machine_nt_scalar_stores: int
    unfenced_stores: int = 0  # streamed stores some path leads to a return from without a fence
    exit_fences: int = 0  # returns fenced because an exception raised in a streamed nest leads there
    loads: str = ""  # how loads were lowered: the machine profile used (calibrated or default) and its choices
    calls: dict = None  # calls so far per path (`StreamDispatcher.stream_calls`), None where not counted
    fallbacks: dict = None  # of the after_check calls, per failed check (`StreamDispatcher.stream_fallbacks`)
    done: str = ""  # what streamjit did to the kernel (`what_was_done`)
    math_calls: list = field(default_factory=list)  # (line or None, names): scalar math-library calls in loops
    streams: bool = True  # whether any store of this code streams (what an uncounted calls line says)
    # A GPU kernel's (`cuda/ptx.py`); on the CPU: None, 0, empty.
    cc: tuple = None  # the compute capability its PTX was compiled for
    commits: int = 0  # cp.async.commit_group in the PTX (``pipeline_stages``)
    waits: int = 0  # cp.async.wait_group
    machine: dict = field(default_factory=dict)  # SASS opcode -> count (`cuda.ptx.SASS_HINTS`)
    absent: str = ""  # why fences, peeled loops, calls and fallbacks are zeros or None here
    legend: str = ""  # what the table counts, when not the CPU's LLVM IR (`LEGEND`)
    gains: list = field(default_factory=list)  # where this code's speed comes from (`gains`), each a phrase
    verbose: bool = False  # whether printing shows the table of instructions (a GPU report's always does)

    def _title(self):
        where = f" (sm_{self.cc[0]}{self.cc[1]})" if self.cc else ""
        return f"{'GPU ' if self.cc else ''}stream report for ({', '.join(map(str, self.signature))}){where}"

    def _summary(self):
        return (f"fences: {self.fences}   peeled loops: {self.peeled_loops}   machine NT stores: "
                f"{self.machine_nt_vector_stores} vector, {self.machine_nt_scalar_stores} scalar")

    def _gpu_lines(self):
        if self.cc is None:
            return []
        return [f"commit_group: {self.commits}   wait_group: {self.waits}   SASS: "
                + ", ".join(f"{k} {n}" for k, n in self.machine.items())] + ([f"  ({self.absent})"] if self.absent
                                                                            else [])

    def _machine_note(self):
        """Why the machine code's count of vector NT stores differs from the
        table's, when it does: they count different things."""
        table = sum(rep.nt_vector_stores for rep in self.arrays.values())
        machine = self.machine_nt_vector_stores
        if machine == table or self.cc:  # (the GPU's: SASS for PTX, not LLVM IR; its legend says so)
            return None
        # (which of these it was, the report cannot tell from the text)
        why = ("the backend can split an LLVM vector store wider than a register into several, or duplicate "
               "blocks" if machine > table else "the backend can merge or drop LLVM stores")
        return (f"  (machine code: {machine} vector NT store instructions for the table's {table} LLVM IR stores: "
                f"{why})")

    def _calls_line(self):
        nt_stores = self.machine_nt_vector_stores + self.machine_nt_scalar_stores + sum(
            rep.nt_vector_stores + rep.nt_scalar_stores for rep in self.arrays.values())
        return calls_line(self.calls, self.fallbacks, self.streams, plain_stores=not nt_stores)

    def _notes(self):
        """The lines after the calls: where the speed comes from, fence
        checks, notes, loads."""
        lines = [f"speed from: {'; '.join(self.gains)}"] if self.gains else []
        if self.unfenced_stores:
            lines.append(f"  {self.unfenced_stores} streamed stores can reach the return without a store fence")
        if self.exit_fences:
            lines.append(f"  {self.exit_fences} returns fenced for exceptions raised inside a streamed nest")
        lines.extend(math_call_notes(self.math_calls))
        for name, rep in self.arrays.items():
            lines.extend(f"  {name}: {note}" for note in rep.notes)
        if self.loads:
            lines.append(f"loads: {self.loads}")
        return lines

    def table(self):
        """The lines of the table of instructions per array, with its title,
        legend and the machine code's counts (what ``verbose`` adds)."""
        width = max([len(h) for h in COLUMN_HEADS] + [len(n) for n in self.arrays])
        lines = [self._title(), "  ".join(h.rjust(width) for h in ("array",) + COLUMN_HEADS)]
        for name, rep in self.arrays.items():
            lines.append("  ".join([name.rjust(width)] + [str(getattr(rep, c)).rjust(width) for c in COLUMNS]))
        machine_note = self._machine_note()
        return (lines + [self.legend or LEGEND, self._summary()] + ([machine_note] if machine_note else [])
                + self._gpu_lines())

    def _head(self):
        """The lines before the table: what was done, the calls, the gains, the notes."""
        return ([self.done] if self.done else []) + [self._calls_line()] + self._notes()

    def __str__(self):
        tail = self.table() if self.verbose else [
            "(stream_report(verbose=True) adds the instructions per array in the compiled code)"]
        return "\n".join(self._head() + tail)

    def __repr__(self):
        """The report, as printed: what a REPL shows for ``k.stream_report()``."""
        return str(self)

    def _repr_html_(self):
        """The report as HTML for Jupyter; with ``verbose``, the table, each
        column head explained on hover."""
        lines = self._head()
        if self.done:
            lines = lines[1:]
        done = f"<p>{html.escape(self.done)}</p>" if self.done else ""
        text = f"<pre>{html.escape(chr(10).join(lines))}</pre>"
        if not self.verbose:
            return f"<div>{done}{text}</div>"
        heads = "".join(f'<th title="{html.escape(COLUMN_MEANINGS[c])}">{html.escape(h)}</th>'
                        for c, h in zip(COLUMNS, COLUMN_HEADS))
        rows = "".join(f"<tr><th>{html.escape(name)}</th>" + "".join(f"<td>{getattr(rep, c)}</td>" for c in COLUMNS)
                       + "</tr>" for name, rep in self.arrays.items())
        after = "\n".join(self.table()[2 + len(self.arrays):])
        return (f"<div>{done}{text}<b>{html.escape(self._title())}</b><table><tr><th>array</th>{heads}</tr>{rows}"
                f"</table><pre>{html.escape(after)}</pre></div>")


# What each run-time check that sent a call to the plain code found (`codegen.FALLBACK_CHECKS`).
FALLBACK_WORDS = {"bounds": "an index outside its array", "alignment": "streamed stores of different alignments",
                  "contiguous": "a row that is not contiguous",
                  "page_alias": "a source a few bytes behind a streamed store modulo 4 KiB, which stalls streamed "
                                "stores on this CPU (the machine profile's page_alias_bytes), where the loop could not "
                                "run staged (a note says why, or the arrays share memory)",
                  "operands": "an operand overlapping its destination, or of another shape"}


# What to change so that calls a check sends to the plain code stream:
# the remedy a fallback's warning names (`StreamDispatcher`).
FALLBACK_REMEDIES = {
    "bounds": "keep every index inside its array over the loop's range (Python wraps a negative index such as "
              "a[i - 1] at i = 0 around; the aligned loop does not): start the loop where every index is valid",
    "alignment": "pass streamed arrays that start at the same offset within a cache line (whole arrays, or views "
                 "offset by the same number of elements)",
    "contiguous": "pass arrays whose rows are contiguous: allocate an output contiguous where it is made "
                  "(np.empty((n, m)), not a transposed or strided view), or return a new array from the kernel "
                  "(np.ascontiguousarray of an output writes into a copy the caller never sees; of an input, it "
                  "serves); for a reversed view (x[::-1]), pass the array itself and run the loop backwards, "
                  "range(n - 1, -1, -1)",
    "page_alias": "allocate the output with streamjit.empty_like(source) instead of np.empty_like, np.zeros_like "
                  "or .copy(), which place it at the source's offset in its 4 KiB page (for a copy: "
                  "out = sj.empty_like(a); out[...] = a)",
    "operands": "pass operands of the destination's shape that do not overlap it (write into another array, then "
                "swap the two)",
}


def calls_line(calls, fallbacks=None, streams=True, plain_stores=False):
    """What ran: the calls so far, per path (`passes/call_record.py`), and
    which run-time checks sent calls to the plain code; None: not counted
    (``streams``: whether any store of the code streams; code that streams
    none is counted where it fused loops, which ran or fell back;
    ``plain_stores``: the aligned loops' stores all ended plain, so a call
    that ran them streamed nothing)."""
    if calls is None:
        return "calls: not counted" + ("" if streams else " (no store streams: every call runs the plain loops)")
    words = {"streamed": "streamed", "staged": "streamed through a staging buffer (a source a few bytes behind a "
                                               "streamed store modulo 4 KiB: make the second buffer with "
                                               "sj.empty_like, or measure whether this CPU stalls there with "
                                               "`python -m streamjit calibrate`)",
             "unprefetched": "streamed without prefetches (rows too short for them: see loads)",
             "below_threshold": "plain below the threshold",
             "after_check": "plain after a run-time check", "plain": "plain without reaching an aligned loop"} \
        if streams \
        else {"plain": "ran the fused loops (no store streams)", "after_check": "Numba's code after a run-time check"}
    if streams and plain_stores:
        words["streamed"] = "ran the aligned loop, whose stores stayed plain (see the notes)"
    # (staged and unprefetched calls only where there were some: on most CPUs no loop has those copies)
    parts = {path: f"{calls[path]} {words[path]}" for path in words
             if path not in ("staged", "unprefetched") or calls.get(path)}
    failed = [f"{n}: {FALLBACK_WORDS[check]}" + ("; allocate the output with streamjit.empty_like"
                                                 if check == "page_alias" else "")
              for check, n in (fallbacks or {}).items() if n]
    if failed:
        parts["after_check"] += f" ({'; '.join(failed)})"
    return "calls: " + ", ".join(parts.values())


def _asm_function(asm_text, name):
    """The lines of the named function in assembly text (Mach-O prefixes
    symbols with an underscore)."""
    start = next((m.start() for m in re.finditer(rf'^"?_?{re.escape(name)}"?:', asm_text, re.M)), None)
    if start is None:
        return ""
    end = asm_text.find(".cfi_endproc", start)
    return asm_text[start:end if end >= 0 else len(asm_text)]


def _origin_arrays(pointer, definitions, seen=None):
    """Array parameters whose data pointer ``pointer`` is derived from."""
    seen = set() if seen is None else seen
    if pointer is None or pointer in seen:
        return set()
    seen.add(pointer)
    field = argument_field(pointer)
    if field is not None and field[1] == _DATA_FIELD:
        return {field[0]}
    inst = definitions.get(pointer)
    if inst is None:
        return set()
    if inst.opcode in ("getelementptr", "freeze") or inst.callee == "llvm.launder.invariant.group.p0":
        return _origin_arrays(inst.pointer or next(iter(LOCAL.findall(" ".join(inst.operands))), None),
                              definitions, seen)
    if inst.opcode in ("phi", "select") and (inst.opcode == "select" or inst.operands[0].startswith("ptr ")):
        return set().union(*(_origin_arrays(p, definitions, seen) for p in LOCAL.findall(" ".join(inst.operands))))
    return set()


def count_array_accesses(functions, arrays, aliases=None):
    """Per-array access counts of LLVM functions (`llvm_text.module.Function`);
    ``aliases``: {argument name: array name} for the views
    `passes/array_stores.py` made, which reach ``prange`` workers as
    arguments of their own."""
    aliases = aliases or {}
    reports = {name: ArrayReport() for name in arrays}
    for function in functions:
        definitions = function.definitions()
        for _, _, inst in function.instructions():
            kind = access_kind(inst)
            if kind is None:
                continue
            for name in _origin_arrays(inst.pointer, definitions):
                report = reports.get(aliases.get(name, name))
                if report is not None:
                    setattr(report, kind, getattr(report, kind) + 1)
    return reports


def _signature_notes(result, name, aryty, rep, options):
    notes = list(result.notes.get(name, []))
    if name in result.streamed_stores:
        if aryty.layout != "C":
            notes.append(f"layout '{aryty.layout}': streamed only where the last dimension is contiguous at run time")
        if rep.nt_vector_stores == 0 and all(n.endswith(LOOP_NOTE) or NOT_STAGED in n for n in notes):
            kind = "scalar NT stores" if rep.nt_scalar_stores else "plain stores"
            why = list(result.vector_hints.get(name, []))
            plain = None if rep.nt_scalar_stores else plain_scalar_note(aryty.dtype, options.machine.scalar_nt_bytes)
            why += [plain] if plain else []
            notes.append(f"the aligned loop did not vectorize: {kind}" + (f"; {'; '.join(why)}" if why else ""))
    return notes


def _loads_line(options):
    """How this kernel's loads were lowered, and by whose choice."""
    parts = [f"sources of streamed stores: {options.sources.describe()}"]
    if options.stencil_sources != options.sources:
        parts.append(f"in a stencil's loop: {options.stencil_sources.describe()}")
    if options.stream_loads:
        measured = machine_profile().reasons.get("stream_loads") != UNMEASURED["stream_loads"][1]
        parts.insert(0, "streamed loads: " + (options.loads.describe() if options.loads != options.sources else
                                              "as the sources (" + ("no other lowering measured faster on this CPU"
                                                                    if measured else "not measured on this CPU") + ")"))
    return f"{'; '.join(parts)} ({options.profile})"


# How the notes of `passes/array_stores.py` say a store became an element loop.
_FUSED_NOTE = "element loop"


def fused_expressions(result):
    """How many slice assignments, in-place operators and array expressions
    became element loops (no temporaries), as the notes of
    `passes/array_stores.py` record them."""
    return sum(_FUSED_NOTE in note and "where the operands allow it" in note
               for notes in result.notes.values() for note in notes)


def fused_temporaries(result):
    """The temporaries computed inside the loops that read them (never
    stored as arrays), as the notes of `passes/array_stores.py` record them."""
    marker = FUSED_TEMPORARY.split(" {", 1)[0]
    return {name for name, notes in result.notes.items() if any(note.startswith(marker) or f": {marker}" in note
                                                                 for note in notes)}


def _why_plain(notes):
    """The first reason among an array's notes, without its line and details."""
    for note in notes:
        if note.endswith(LOOP_NOTE) or _FUSED_NOTE in note:
            continue
        reason = re.sub(r"^line \d+: ", "", note)
        return re.split(r": |; ", reason, maxsplit=1)[0]
    return "no store to it could be aligned to a full vector"


def _names(names):
    return ", ".join(sorted(names))


def what_was_done(name, result, streamed, plain):
    """The report's first line: ``name``'s fused expressions, the arrays
    whose stores stream (``streamed``), and those left plain, with why
    (``plain``: names)."""
    fused, temporaries = fused_expressions(result), fused_temporaries(result)
    parts = ["no slice or array expression fused" if not fused else
             f"fused {fused} slice/array expression{'s' if fused > 1 else ''} into "
             f"{'loops' if fused > 1 else 'a loop'} (no temporar{'ies' if fused > 1 else 'y'})"]
    if temporaries:
        parts.append(f"fused {len(temporaries)} temporar{'ies' if len(temporaries) > 1 else 'y'} "
                     f"({_names(temporaries)}) into the loops that read them (computed where read, never stored)")
    parts.append(f"streamed stores to {_names(streamed)}" if streamed else "streamed no store")
    if plain:
        parts.append("left " + ", ".join(f"{array} plain ({_why_plain(result.notes.get(array, []))})"
                                         for array in sorted(plain)))
    return f"{name}: " + "; ".join(parts)


def gains(result, functions, streamed):
    """Where the speed of this code comes from, each a phrase: fused
    loops, the array pool, libmvec's vector math, streamed stores (none
    where it is numba.njit's code)."""
    phrases = []
    fused, temporaries = fused_expressions(result), len(fused_temporaries(result))
    if fused or temporaries:
        counted = [f"{fused} expression{'s' if fused > 1 else ''}"] if fused else []
        counted += [f"{temporaries} temporar{'ies' if temporaries > 1 else 'y'}"] if temporaries else []
        phrases.append(f"fusion ({' and '.join(counted)} computed in loops, no temporary arrays)")
    calls = [inst.callee for function in functions for _, _, inst in function.instructions() if inst.callee]
    if result.fresh_arrays and POOLED in calls:
        phrases.append(f"the array pool (results of {POOLED_FROM_BYTES >> 20} MiB and more reuse freed blocks)")
    vector_math = vector_math_functions(calls)
    if vector_math:
        phrases.append(f"libmvec's vector {', '.join(vector_math)}")
    if streamed:
        phrases.append(f"streamed stores to {_names(streamed)}")
    return phrases


def build_report(dispatcher, sig, llvm_text, asm_text):
    """The report of one signature from its final LLVM IR and assembly."""
    module = Module(llvm_text)
    functions = kernel_functions(module, dispatcher.overloads[sig].fndesc.mangled_name)
    # (the streamed fills' stores are counted in the machine code; in the IR, their calls are)
    fills = [f.name for f in module.functions if f.name.startswith(FILL + ".")]
    asm_function = "".join(_asm_function(asm_text, name) for name in [f.name for f in functions] + fills)
    params = list(inspect.signature(dispatcher.py_func).parameters)
    arrays = {p: t for p, t in zip(params, sig) if isinstance(t, types.Array)}
    result = dispatcher.stream_result(sig)
    # (Numba names a worker's arguments after the variables, made legal)
    aliases = {legalize_names([view])[view]: array for view, array in result.views.items()}
    reports = count_array_accesses(functions, arrays, aliases)
    vector, scalar, fences = count_asm_streaming(asm_function)
    for name in result.streamed_stores & set(reports):
        # stores through a view the pointer trace cannot follow (`a.ravel()`,
        # `a.reshape(...)`) carry the array's name in their marks
        marked, rep = count_marked_stores(functions, module, name), reports[name]
        if marked.nt_vector_stores + marked.nt_scalar_stores > rep.nt_vector_stores + rep.nt_scalar_stores:
            rep.nt_vector_stores, rep.nt_scalar_stores = marked.nt_vector_stores, marked.nt_scalar_stores
    for name, rep in reports.items():
        rep.notes = _signature_notes(result, name, arrays[name], rep, dispatcher.stream_options)
    for name in sorted(result.fresh_arrays):
        reports[name] = count_marked_stores(functions, module, name)
        if name in result.streamed_stores:
            reports[name].notes.append("allocated by the kernel: only the stores of its aligned loops are counted")
        reports[name].notes += result.notes.get(name, [])
    for name in sorted(fused_temporaries(result) - set(reports)):
        reports[name] = count_marked_stores(functions, module, name)
        reports[name].notes += result.notes.get(name, [])
    for rep in reports.values():
        if rep.nt_vector_stores + rep.nt_scalar_stores and not vector + scalar:
            rep.notes.append("this target has no non-temporal store instruction: the backend emitted plain stores")
    streamed = {name for name in result.streamed_stores & set(reports)
                if reports[name].nt_vector_stores + reports[name].nt_scalar_stores}
    options = dispatcher.stream_options
    named = set(options.stream_stores) if options and isinstance(options.stream_stores, tuple) else set()
    # left plain: what was named, or under True what a note says stayed plain
    plain = {name for name in set(reports) - fused_temporaries(result) if name not in streamed and (
        name in named or name in result.streamed_stores or options and options.stream_stores is True
        and any(not n.endswith(LOOP_NOTE) and _FUSED_NOTE not in n for n in result.notes.get(name, [])))}
    counted = result.call_counter is not None
    return StreamReport(signature=sig, arrays=reports, fences=fences,
                        peeled_loops=result.peeled_loops,
                        machine_nt_vector_stores=vector, machine_nt_scalar_stores=scalar,
                        unfenced_stores=sum(unfenced_returns(f)[0] for f in functions),
                        exit_fences=sum(EXIT_FENCE_MARK in i.text for f in functions for _, _, i in f.instructions()),
                        loads=_loads_line(dispatcher.stream_options) if dispatcher.stream_options else "",
                        calls=dispatcher.stream_calls(sig) if counted else None,
                        fallbacks=dispatcher.stream_fallbacks(sig) if counted else None,
                        done=what_was_done(dispatcher.py_func.__name__, result, streamed, plain),
                        streams=bool(result.streamed_stores),
                        gains=gains(result, functions, streamed) if dispatcher.stream_options else [],
                        math_calls=math_calls(functions, dispatcher.overloads[sig].type_annotation))
