"""Validation of `stream_kernel` options at decoration time.

Bad options are caught before any compilation, with the option and the
offending value named: a name that is not a parameter, a value of the wrong
type, a Numba option streamjit does not forward; a misspelt option or name
gets the closest correct one as a suggestion ("did you mean").
"""

import dataclasses
import difflib
import inspect
import warnings

from .errors import StreamConfigError, StreamWarning
from .machine import HINT_DISTANCE, PREFETCH_HINTS, machine_profile
from .plan import StreamOptions
from .threshold import MAX_BYTES, default_threshold

# Every keyword numba.njit takes, passed through with Numba's meaning (the
# target options of Numba's CPU dispatcher, and its ``cache`` and
# ``locals``). ``nopython=True`` is what stream_kernel always does;
# ``forceobj=True`` compiles in object mode, which streams nothing (a
# StreamWarning says so).
FORWARDED_NUMBA_OPTIONS = ("cache", "fastmath", "boundscheck", "nogil", "error_model", "locals", "parallel",
                           "nopython", "debug", "inline", "forceinline", "no_cpython_wrapper", "no_cfunc_wrapper",
                           "no_rewrites", "_nrt", "looplift", "forceobj", "_dbg_extend_lifetimes", "_dbg_optnone")


STREAM_OPTIONS = ("stream_stores", "stream_loads", "threshold", "prefetch_distance", "prefetch_hint")


def did_you_mean(word, choices):
    """``" (did you mean 'x'?)"`` for the choice closest to ``word``, or ""."""
    close = difflib.get_close_matches(word, sorted(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def parse_array_names(option_name, value, params, func):
    """``stream_stores=`` / ``stream_loads=`` checked against ``func``: a
    bool for True/False/None, else the tuple of names (each a parameter, or
    for stores also a local variable or "return"), duplicates dropped."""
    if value is True or value is False or value is None:
        return bool(value)
    if isinstance(value, str):  # one name
        value = (value,)
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise StreamConfigError(
            f"{option_name} must be True, False, a parameter name or a list of them, got {value!r}")
    # a parameter, or for stores a local variable (an array the kernel allocates)
    # or "return" (the array it returns unnamed)
    names = set(params) | (set(func.__code__.co_varnames) | {"return"} if option_name == "stream_stores" else set())
    unknown = [v for v in value if v not in names]
    if unknown:
        raise StreamConfigError(
            f"{option_name} names '{unknown[0]}'{did_you_mean(unknown[0], names)}, which is not a parameter of "
            f"{func.__qualname__}{' nor one of its variables' if option_name == 'stream_stores' else ''}"
            f" (parameters: {', '.join(params) or 'none'})")
    return tuple(dict.fromkeys(value))


def _check_prefetch(prefetch_distance, prefetch_hint):
    if prefetch_distance is not None and (isinstance(prefetch_distance, bool) or not isinstance(prefetch_distance, int)
                                          or not 0 <= prefetch_distance <= 1 << 20):
        raise StreamConfigError(f"prefetch_distance must be None or a number of bytes from 0 to 1 MiB, "
                                f"got {prefetch_distance!r}")
    if prefetch_hint is not None and prefetch_hint not in PREFETCH_HINTS:
        raise StreamConfigError(f"prefetch_hint must be None or one of {', '.join(map(repr, PREFETCH_HINTS))}, "
                                f"got {prefetch_hint!r}")


def _load_stages(prefetch_distance, prefetch_hint):
    """``(loads, sources, where they come from)``: the machine profile's
    lowering of streamed loads and of the sources of streamed stores, with
    the kernel's ``prefetch_distance`` / ``prefetch_hint`` in place of the
    profile's for both."""
    profile = machine_profile()
    stages = []
    for stage in (profile.stream_loads, profile.sources):
        if prefetch_hint is not None:
            # (a hint asked for where the profile prefetches nothing needs a distance)
            stage = dataclasses.replace(stage, hint=prefetch_hint, distance=stage.distance or HINT_DISTANCE)
        if prefetch_distance is not None:
            stage = dataclasses.replace(stage, distance=prefetch_distance)
        stages.append(stage)
    overridden = ", ".join(f"{n}={v!r}" for n, v in (("prefetch_distance", prefetch_distance),
                                                     ("prefetch_hint", prefetch_hint)) if v is not None)
    return (*stages, profile.origin + (f"; {overridden} from the kernel" if overridden else ""))


def _threshold(value):
    """None (always stream), or the byte threshold; "auto" stays "auto"
    until the first compile (`resolved`)."""
    if value is None or value == "auto":
        return value
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_BYTES:
        raise StreamConfigError(f"threshold must be None, 'auto' or a number of bytes from 0 to 2**63-1, "
                                f"got {value!r}")
    return value


def resolved(options):
    """``options`` with ``threshold="auto"`` replaced by the bytes it means
    now: ``STREAMJIT_THRESHOLD``, the calibration, the cache size. Called at
    the first compile (usually the first call), not at decoration, so a
    variable set after the kernel is defined counts, as for `copyto`."""
    if options is None or options.threshold != "auto":
        return options
    try:
        return dataclasses.replace(options, threshold=default_threshold()[0])
    except ValueError as exc:
        raise StreamConfigError(str(exc)) from None


def validate_options(func, stream_stores, stream_loads, threshold, prefetch_distance, prefetch_hint, numba_options):
    """Return ``(StreamOptions or None, numba_options)`` checked against
    ``func``; None when nothing is streamed (the kernel is ``numba.njit``)."""
    if not callable(func) or not hasattr(func, "__code__"):
        raise StreamConfigError(f"stream_kernel expects a Python function, got {func!r}")
    params = list(inspect.signature(func).parameters)
    stores = parse_array_names("stream_stores", stream_stores, params, func)
    loads = parse_array_names("stream_loads", stream_loads, params, func)
    # "auto" leaves named arrays plain where streaming measured slower (True leaves them plain anyway)
    measured = threshold == "auto" and isinstance(stores, tuple)
    # (the default "auto" of a kernel that streams nothing reads neither the environment nor the machine)
    threshold = None if threshold == "auto" and not stores and not loads else _threshold(threshold)
    unknown = sorted(set(numba_options) - set(FORWARDED_NUMBA_OPTIONS))
    if unknown:
        raise StreamConfigError(
            f"unknown option {unknown[0]!r}{did_you_mean(unknown[0], STREAM_OPTIONS + FORWARDED_NUMBA_OPTIONS)}; "
            f"stream_kernel accepts {', '.join(STREAM_OPTIONS)} and the Numba options "
            f"{', '.join(FORWARDED_NUMBA_OPTIONS)}")
    if numba_options.get("nopython", True) is not True:
        raise StreamConfigError("stream_kernel compiles in nopython mode only: nopython must be True")
    if numba_options.get("forceobj"):
        named = ", ".join(f"{n}={v!r}" for n, v in (("stream_stores", stream_stores), ("stream_loads", stream_loads))
                          if v)
        warnings.warn_explicit(
            f"{func.__qualname__}: forceobj=True compiles in Numba's object mode, where each operation goes through "
            f"Python objects and no loop is compiled to machine code: nothing streams"
            f"{f' ({named} ignored)' if named else ''}", StreamWarning, func.__code__.co_filename,
            func.__code__.co_firstlineno, module=func.__module__)
        stores = loads = False
    _check_prefetch(prefetch_distance, prefetch_hint)
    if not stores and not loads:
        return None, numba_options
    # (read only by kernels that stream: a bare stream_kernel is numba.njit)
    loads_stage, sources_stage, profile = _load_stages(prefetch_distance, prefetch_hint)
    rows = machine_profile()
    return StreamOptions(stores, loads, loads_stage, sources_stage, threshold, bool(numba_options.get("parallel")),
                         measured, rows.page_alias_bytes, profile), numba_options
