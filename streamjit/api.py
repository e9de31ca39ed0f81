"""`stream_kernel`, the decorator: a `StreamDispatcher` (`kernel/dispatcher.py`) for
the CPU, a GPU kernel (`cuda/`) for ``target="cuda"``, or, under
``NUMBA_DISABLE_JIT=1``, the function itself (`kernel/disabled.py`)."""

import inspect

from .kernel.disabled import jit_disabled, python_function
from .kernel.dispatcher import make_dispatcher
from .errors import StreamConfigError
from .options import validate_options


def check_signatures(func, sigs):
    """Raise `StreamConfigError` where ``sigs``, the signatures Numba takes
    first, are names (``stream_kernel(["dst"])``, meant as the arrays to
    stream): a name is never a signature, and Numba would fail on it with a
    ``NameError`` saying nothing of ``stream_stores``."""
    names = [sig for sig in sigs or () if isinstance(sig, str) and sig.isidentifier()]
    if names:
        parameters = inspect.signature(func).parameters
        what = ("parameter names" if all(name in parameters for name in names) else "names, not signatures such as "
                "'void(float32[::1], float32[::1])'")
        raise StreamConfigError(f"stream_kernel({names!r}) passes {what} of {func.__qualname__} as the signatures "
                                f"numba.njit takes first; to stream their stores, write "
                                f"stream_kernel(stream_stores={names!r})")


def stream_kernel(*args, stream_stores=False, stream_loads=False, threshold="auto", prefetch_distance=None,
                  prefetch_hint=None, **numba_options):
    """Compile a NumPy loop function with Numba, streaming the stores you name.

    Stores to the named arrays become aligned, full-width vector
    non-temporal stores (x86: ``vmovntps``/``vmovntpd``/``vmovntdq``), which
    bypass the cache, with a store fence after each streamed loop nest.
    Anything ``numba.njit`` compiles, this compiles; a store to a named
    array that cannot stream legally (one loop execution writing an element
    twice) raises `StreamLegalityError` (under ``stream_stores=True``, which
    names none, the array stays plain with a note), and ``stream_report()``
    says what streamed.

    Used as ``numba.njit`` is: bare (``@stream_kernel``: ``numba.njit``,
    nothing streamed), with options (``@stream_kernel(stream_stores=["dst"])``),
    with eager signatures first (``@stream_kernel("void(f4[::1], f4[::1])",
    stream_stores=["dst"])``: compiled now, no other signature later), or
    called on a function (``stream_kernel(f, stream_stores=["dst"])``).

    Parameters
    ----------
    stream_stores : bool, str or list of str, default False
        The arrays whose stores stream: parameters, arrays the kernel
        allocates (by variable name) and ``"return"`` (an array expression
        returned unnamed). A string is one name. True: every array parameter
        the kernel stores to, except those only updated in place.
    stream_loads : bool, str or list of str, default False
        Array parameters whose loads stream, lowered as this machine's
        profile chose (a software prefetch ahead, non-temporal loads, or
        plain loads). True: every array parameter the kernel does not store
        to. Naming an array the kernel stores to is a `StreamConfigError`.
        Loads where a prefetch does not pay stay plain, each decided on its
        own (a walk wider than a cache line, a loop that runs inner loops or
        is compute-bound, an array the kernel allocates); ``stream_result``
        lists only arrays that got something, and the report says why not.
    threshold : "auto", int or None, default "auto"
        Stream only when the streamed arrays hold more bytes than this: one
        comparison at entry, below which the plain loop runs as under
        ``numba.njit`` (so tiny calls cost what they cost there). "auto",
        read at the first compile (usually the first call):
        ``STREAMJIT_THRESHOLD`` (bytes), else what ``python -m streamjit
        calibrate`` measured, else a third of the last-level cache, else
        16 MiB; "auto" also leaves plain, even when named, what measured
        slower streamed at every size (arrays the kernel makes, arrays only
        updated in place; the report says so). An int: that many bytes.
        None: always stream. With ``target="cuda"``, "auto" and None mean
        the same (a GPU kernel has no size test: it streams at every size)
        and an int raises `StreamConfigError`.
    prefetch_distance : int or None, default None
        Bytes ahead to prefetch streamed loads and the sources of streamed
        stores (0: no prefetch). None: the machine profile's. With
        ``target="cuda"`` only 0 and None (no prefetch); the GPU's
        asynchronous load stage is ``pipeline_stages=``.
    prefetch_hint : {"t0", "t1", "t2", "nta", "none"} or None, default None
        The prefetch instruction for them. None: the machine profile's. Not
        with ``target="cuda"`` (a `StreamConfigError`).
    target : {"cpu", "cuda"}, default "cpu"
        "cuda" compiles the same function for an NVIDIA GPU (its ``prange``
        nest becomes the grid; see ``streamjit.cuda``), which also takes
        ``pipeline_stages`` (1 to 8: an asynchronous ``cp.async`` load stage
        of that many slots for the streamed loads), ``load_cache``,
        ``threads_per_block`` and ``blocks``; the CPU does not. An option
        one target does not take raises `StreamConfigError` naming it and
        the target (`options.validate_options`).
    **numba_options
        Every keyword ``numba.njit`` takes, with Numba's meaning: ``cache``,
        ``fastmath``, ``boundscheck``, ``nogil``, ``error_model``,
        ``locals``, ``parallel`` (loops written with `prange` run on
        Numba's threads, each block fenced by its worker), ``debug``,
        ``inline`` (``"always"``: jitted callers compile the body into
        their own, unstreamed), ``no_cpython_wrapper``, ``no_cfunc_wrapper``,
        ``no_rewrites``, ``_nrt``, ... and ``nopython=True``.
        ``forceobj=True`` compiles in object mode, as
        ``numba.jit(forceobj=True)``: nothing streams (a `StreamWarning`
        says so).

    Returns
    -------
    StreamDispatcher
        A Numba dispatcher (callable from other jitted functions) with
        ``stream_report()``, ``stream_result()``, ``above_threshold()``,
        ``inspect_llvm()`` and ``inspect_asm()``.

    Raises
    ------
    StreamConfigError
        A misspelt or misused option (with a "did you mean"), a name that is
        not a parameter; a bad ``STREAMJIT_THRESHOLD`` at the first call.

    Examples
    --------
    >>> import numpy as np, streamjit as sj
    >>> @sj.stream_kernel(stream_stores=["dst"])
    ... def copy(dst, src):
    ...     for i in range(src.shape[0]):
    ...         dst[i] = src[i]
    >>> src = np.arange(1000, dtype=np.float32)
    >>> dst = np.empty_like(src)
    >>> copy(dst, src)
    >>> bool((dst == src).all())
    True
    >>> copy.stream_report().arrays["dst"].nt_vector_stores > 0
    True
    """
    sigs = None
    if args and not callable(args[0]):
        sigs, args = args[0], args[1:]
        sigs = sigs if isinstance(sigs, list) else [sigs]

    target = numba_options.pop("target", "cpu")

    def decorate(func):
        check_signatures(func, sigs)
        if jit_disabled():  # as numba.njit: the function itself, for pdb, prints and coverage
            # (its options checked as with JIT on: code passing its tests this way decorates the same with JIT on)
            validate_options(func, stream_stores, stream_loads, threshold, prefetch_distance, prefetch_hint,
                             numba_options, target=target)
            return python_function(func)
        if target != "cpu":  # a GPU kernel: only now is numba.cuda imported
            from .cuda.dispatcher import make_kernel
            return make_kernel(func, target=target, stream_stores=stream_stores, stream_loads=stream_loads,
                               threshold=threshold, prefetch_distance=prefetch_distance, prefetch_hint=prefetch_hint,
                               sigs=sigs, **numba_options)
        return make_dispatcher(func, stream_stores=stream_stores, stream_loads=stream_loads, threshold=threshold,
                               prefetch_distance=prefetch_distance, prefetch_hint=prefetch_hint, sigs=sigs,
                               **numba_options)

    if args:
        return decorate(args[0])
    return decorate
