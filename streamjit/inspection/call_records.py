"""What the compiled code records about each call, read back in Python.

The compiled code counts each call's path and each run-time check that
sent it to the plain loops itself (`passes/call_record.py`), in a global
array per signature: `summed_counters` reads them (``stream_calls``,
``stream_fallbacks``). The first time a check sends a call to the plain
loops, the code calls back into Python (`codegen.control.on_first_fallback`):
`listen_for_fallbacks` turns that call into one
`StreamWarning` per kernel and check, at the user's line that called the
kernel, naming why the call ran plain and what to change so that such calls
stream (`report.FALLBACK_REMEDIES`).
"""

import ctypes
import sys
import warnings
import weakref

from ..codegen import CALL_PATHS, FALLBACK_CHECKS
from ..codegen.control import on_first_fallback
from ..errors import StreamWarning
from ..numba_internals.codegen import global_value_address
from ..plan import METADATA_KEY
from .report import FALLBACK_REMEDIES, FALLBACK_WORDS

COUNTERS = len(CALL_PATHS) + len(FALLBACK_CHECKS)


def summed_counters(dispatcher, signature):
    """The call counters of one signature of ``dispatcher``, or summed over
    every compiled one: the `CALL_PATHS`, then the `FALLBACK_CHECKS`."""
    sigs = [dispatcher._signature_of(signature)] if signature is not None else list(dispatcher.overloads)
    total = [0] * COUNTERS
    for sig in sigs:
        result = dispatcher.overloads[sig].metadata.get(METADATA_KEY)
        if result is not None and result.call_counter is not None:
            address = global_value_address(dispatcher.targetctx.codegen(), result.call_counter)
            total = [a + b for a, b in zip(total, (ctypes.c_int64 * COUNTERS).from_address(address))]
    return total


def listen_for_fallbacks(dispatcher):
    """Have each compiled signature of ``dispatcher`` warn on its first
    fallback per check (`warn_fallback`), without keeping it alive."""
    reference = weakref.ref(dispatcher)

    def listener(check, streams):
        kernel = reference()
        if kernel is not None:
            warn_fallback(kernel, check, streams)

    for overload in dispatcher.overloads.values():
        result = overload.metadata.get(METADATA_KEY)
        if result is not None and result.call_counter is not None:
            on_first_fallback(result.call_counter,
                              lambda check, streams=bool(result.streamed_stores): listener(check, streams))


def warn_fallback(dispatcher, check, streams=True):
    """A `StreamWarning`, once per kernel and check, at the line that
    called the kernel: a run-time check sent a call to the plain loops
    (``streams``: code that streams stores; else a fused loop to Numba's
    own code), why, and what to change so that such calls stream (run the
    fused loop). Not under ``stream_stores=True``, which names no array:
    the report's calls line says it there."""
    if check in dispatcher._fallbacks_warned or dispatcher.stream_options.stream_stores is True:
        return
    dispatcher._fallbacks_warned.add(check)
    name = dispatcher.py_func.__name__
    ran, remedy = ("plain stores, not streamed ones", "to stream") if streams else \
        ("Numba's own code for an array expression, not the loop it was fused into", "to run the fused loop")
    message = (f"a call of {name} ran {ran}: {FALLBACK_WORDS[check]}; {remedy}, {FALLBACK_REMEDIES[check]} (said "
               f"once per kernel and reason; {name}.stream_fallbacks() counts such calls)")
    frame = _caller_frame()
    if frame is None:
        code = dispatcher.py_func.__code__
        warnings.warn_explicit(message, StreamWarning, code.co_filename, code.co_firstlineno,
                               module=dispatcher.py_func.__module__)
    else:
        warnings.warn_explicit(message, StreamWarning, frame.f_code.co_filename, frame.f_lineno,
                               module=frame.f_globals.get("__name__", "<unknown>"),
                               registry=frame.f_globals.setdefault("__warningregistry__", {}))


def _caller_frame():
    """The innermost Python frame outside streamjit: the line that called
    the kernel (compiled code has no frame), or None."""
    frame = sys._getframe(1)
    package = __name__.partition(".")[0]
    while frame is not None and frame.f_globals.get("__name__", "").partition(".")[0] == package:
        frame = frame.f_back
    return frame
