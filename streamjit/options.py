"""Validation of `stream_kernel` options at decoration time.

Bad options are caught before any compilation, with the option and the
offending value named: a name that is not a parameter, a value of the wrong
type, a Numba option streamjit does not forward.
"""

import inspect

from .errors import StreamConfigError
from .plan import DEFAULT_PREFETCH_DISTANCE, StreamOptions
from .threshold import default_threshold

# Numba options passed through unchanged to the nopython compiler
# (``nopython=True`` is what stream_kernel always does; it is accepted).
FORWARDED_NUMBA_OPTIONS = ("cache", "fastmath", "boundscheck", "nogil", "error_model", "locals", "parallel",
                           "nopython")


def _names(option_name, value, params, func):
    if value is True or value is False or value is None:
        return bool(value)
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise StreamConfigError(
            f"{option_name} must be True, False or a list of parameter names, got {value!r}")
    # a parameter, or for stores a local variable (an array the kernel allocates)
    # or "return" (the array it returns unnamed)
    names = set(params) | (set(func.__code__.co_varnames) | {"return"} if option_name == "stream_stores" else set())
    unknown = [v for v in value if v not in names]
    if unknown:
        raise StreamConfigError(
            f"{option_name} names '{unknown[0]}', which is not a parameter of {func.__qualname__}"
            f"{' nor one of its variables' if option_name == 'stream_stores' else ''}"
            f" (parameters: {', '.join(params) or 'none'})")
    return tuple(dict.fromkeys(value))


def _prefetch_distance(value):
    if value is None:
        return DEFAULT_PREFETCH_DISTANCE
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise StreamConfigError(f"prefetch_distance must be None or a number of bytes >= 0, got {value!r}")
    return value


def _threshold(value):
    """None (always stream), or the byte threshold; "auto" asks the machine."""
    if value is None:
        return None
    if value == "auto":
        try:
            return default_threshold()[0]
        except ValueError as exc:
            raise StreamConfigError(str(exc)) from None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise StreamConfigError(f"threshold must be None, 'auto' or a number of bytes >= 0, got {value!r}")
    return value


def validate_options(func, stream_stores, stream_loads, threshold, prefetch_distance, numba_options):
    """Return ``(StreamOptions or None, numba_options)`` checked against
    ``func``; None when nothing is streamed (the kernel is ``numba.njit``)."""
    if not callable(func) or not hasattr(func, "__code__"):
        raise StreamConfigError(f"stream_kernel expects a Python function, got {func!r}")
    params = list(inspect.signature(func).parameters)
    stores = _names("stream_stores", stream_stores, params, func)
    loads = _names("stream_loads", stream_loads, params, func)
    measured = threshold == "auto"
    threshold = _threshold(threshold)
    unknown = sorted(set(numba_options) - set(FORWARDED_NUMBA_OPTIONS))
    if unknown:
        raise StreamConfigError(
            f"unknown option {unknown[0]!r}; stream_kernel accepts stream_stores, stream_loads, threshold "
            f"and the Numba options {', '.join(FORWARDED_NUMBA_OPTIONS)}")
    if numba_options.get("nopython", True) is not True:
        raise StreamConfigError("stream_kernel compiles in nopython mode only: nopython must be True")
    if not stores and not loads:
        return None, numba_options
    return StreamOptions(stores, loads, _prefetch_distance(prefetch_distance), threshold,
                         bool(numba_options.get("parallel")), measured), numba_options
