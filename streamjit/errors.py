"""Exceptions and warnings raised by streamjit.

All errors derive from ``StreamError`` (a ``ValueError``) so a caller can
catch every streaming problem at once; the subclasses say *when* it was
found: ``StreamConfigError`` at decoration (or, for options that depend on
the kernel body, at first compile), ``StreamLegalityError`` when a signature
is compiled and streaming a store would be unsafe.
"""

import contextlib
import contextvars
import warnings


class StreamError(ValueError):
    """Base class of every streamjit error."""


class StreamConfigError(StreamError):
    """Bad streaming options: unknown parameter names, wrong option types."""


class StreamLegalityError(StreamError):
    """Streaming a store would be unsafe; the message names array and line."""


class StreamWarning(UserWarning):
    """A named array is never stored (or loaded) by the kernel, or none of
    its stores could be streamed (the message says why)."""


# The warnings one kernel has given: (line, message), set by `warnings_once`
# while it compiles, so a second signature does not repeat them.
_given = contextvars.ContextVar("streamjit_warnings_given", default=None)


@contextlib.contextmanager
def warnings_once(given):
    """Within: `warn_in_kernel` skips what ``given`` (a set kept by one
    kernel) holds, and adds what it shows."""
    token = _given.set(given)
    try:
        yield
    finally:
        _given.reset(token)


def given_in_kernel(func_id, message, line=None):
    """Whether the kernel compiling now (`warnings_once`) has shown this
    warning (``line``: as `warn_in_kernel` takes it)."""
    given = _given.get()
    return given is not None and (line or func_id.firstlineno, message) in given


def warn_in_kernel(func_id, message, line=None):
    """A `StreamWarning` shown at the user's kernel (its file, and ``line``
    or the ``def`` line), not at the streamjit code that found it; once per
    kernel, line and message (`warnings_once`), not once per signature."""
    line = line or func_id.firstlineno
    given = _given.get()
    if given is not None:
        if (line, message) in given:
            return
        given.add((line, message))
    warnings.warn_explicit(message, StreamWarning, func_id.filename, line, module=func_id.modname)
