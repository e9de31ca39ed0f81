"""Exceptions and warnings raised by streamjit.

All errors derive from ``StreamError`` (a ``ValueError``) so a caller can
catch every streaming problem at once; the subclasses say *when* it was
found: ``StreamConfigError`` at decoration (or, for options that depend on
the kernel body, at first compile), ``StreamLegalityError`` when a signature
is compiled and streaming a store would be unsafe.
"""

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


def warn_in_kernel(func_id, message, line=None):
    """A `StreamWarning` shown at the user's kernel (its file, and ``line``
    or the ``def`` line), not at the streamjit code that found it."""
    warnings.warn_explicit(message, StreamWarning, func_id.filename, line or func_id.firstlineno,
                           module=func_id.modname)
