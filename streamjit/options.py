"""Validation of `stream_kernel` options at decoration time, for both targets.

Bad options are caught before any compilation, with the option and the
offending value named: a name that is not a parameter, a value of the wrong
type, a Numba option streamjit does not forward; a misspelt option or name
gets the closest correct one as a suggestion ("did you mean").

`validate_options` checks the CPU's options (``target="cpu"``) and the
GPU's (``target="cuda"``: ``stream_kernel(target="cuda")`` and
``streamjit.cuda.jit``) with one set of rules, so an option means one
thing on both targets or raises `StreamConfigError` naming the option and
the target where it has no meaning:

- ``stream_stores`` / ``stream_loads``: the same names, the same rule;
- ``threshold``: "auto" leaves named arrays plain where streaming measured
  slower (updates in place, arrays loaded back at another element) on
  both; its size test is the CPU's (the GPU has none, and no measurement to
  set one from: a GPU kernel streams at every size); a byte threshold is
  CPU only; None streams what is named on both;
- ``prefetch_distance`` is bytes ahead, on the CPU only: 0 or None
  (no prefetch, the target's default) are accepted on both; the GPU's
  asynchronous load stage is counted in stages, ``pipeline_stages=``,
  which the CPU does not take;
- ``prefetch_hint`` picks the CPU's prefetch instruction: the GPU has none;
- ``load_cache``, ``threads_per_block``, ``blocks`` are the GPU's.
"""

import dataclasses
import difflib
import inspect
import warnings

from .errors import StreamConfigError, StreamWarning
from .machine.profile import HINT_DISTANCE, PREFETCH_HINTS, machine_profile
from .plan import StreamOptions
from .machine.threshold import MAX_BYTES, default_threshold

# Every keyword numba.njit takes, passed through with Numba's meaning (the
# target options of Numba's CPU dispatcher, and its ``cache`` and
# ``locals``). ``nopython=True`` is what stream_kernel always does;
# ``forceobj=True`` compiles in object mode, which streams nothing (a
# StreamWarning says so).
FORWARDED_NUMBA_OPTIONS = ("cache", "fastmath", "boundscheck", "nogil", "error_model", "locals", "parallel",
                           "nopython", "debug", "inline", "forceinline", "no_cpython_wrapper", "no_cfunc_wrapper",
                           "no_rewrites", "_nrt", "looplift", "forceobj", "_dbg_extend_lifetimes", "_dbg_optnone")


STREAM_OPTIONS = ("stream_stores", "stream_loads", "threshold", "prefetch_distance", "prefetch_hint")
# The GPU's own options (``target="cuda"``), which the CPU does not take.
GPU_OPTIONS = ("pipeline_stages", "load_cache", "threads_per_block", "blocks")
# The Numba options ``stream_kernel(target="cuda")`` takes, with the CPU's meaning.
GPU_NUMBA_OPTIONS = ("fastmath", "parallel", "nopython")
# The cache operators of the GPU's streamed loads (`cuda/intrinsics.LOAD_CACHE`).
GPU_LOAD_CACHES = ("cs", "nc")
# The most stages of the GPU's asynchronous load ring (`cuda/async_loads.py`).
MAX_PIPELINE_STAGES = 8
TARGETS = ("cpu", "cuda")


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
    """``(loads, sources, stencil sources, where they come from)``: the
    machine profile's lowering of streamed loads and of the sources of
    streamed stores (in a stencil's loop, and in others), with the kernel's
    ``prefetch_distance`` / ``prefetch_hint`` in place of the profile's for
    all three."""
    profile = machine_profile()
    stages = []
    for stage in (profile.stream_loads, profile.sources, profile.stencil_sources):
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


def validate_options(func, stream_stores=False, stream_loads=False, threshold="auto", prefetch_distance=None,
                     prefetch_hint=None, numba_options=None, *, target="cpu", numba_cuda_kernel=False):
    """Check ``func``'s options for ``target``, "cpu" or "cuda".

    For the CPU, return ``(StreamOptions or None, numba_options)``; None
    when nothing is streamed (the kernel is ``numba.njit``). For the GPU,
    return ``(StreamOptions, gpu_options)``: the stream options (no load
    stages, no size threshold) and a dict of the GPU kernel's settings
    (``prefetch``: the stages of ``pipeline_stages``, ``load_cache``,
    ``threads_per_block``, ``blocks``, ``cuda_options``: what goes to
    ``numba.cuda.jit``); ``numba_cuda_kernel``: the function is a
    numba-cuda kernel (``streamjit.cuda.jit``), whose other options are
    numba-cuda's own. An option the target does not take raises
    `StreamConfigError` naming the option and the target."""
    numba_options = dict(numba_options or {})
    if target not in TARGETS:
        raise StreamConfigError(f"target must be 'cpu' or 'cuda', got {target!r}")
    if not callable(func) or not hasattr(func, "__code__"):
        raise StreamConfigError(f"{'streamjit.cuda.jit' if numba_cuda_kernel else 'stream_kernel'} expects a "
                                f"Python function, got {func!r}")
    if target == "cuda":
        return _validate_gpu(func, stream_stores, stream_loads, threshold, prefetch_distance, prefetch_hint,
                             numba_options, numba_cuda_kernel)
    gpu_only = sorted(set(numba_options) & set(GPU_OPTIONS))
    if gpu_only:
        raise StreamConfigError(f"{gpu_only[0]} is an option of target='cuda': target='cpu' does not take it"
                                + ("; on the CPU, prefetch_distance (bytes) says how far ahead streamed loads "
                                   "are prefetched" if gpu_only[0] == "pipeline_stages" else ""))
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
    loads_stage, sources_stage, stencil_stage, profile = _load_stages(prefetch_distance, prefetch_hint)
    return StreamOptions(stores, loads, loads_stage, sources_stage, stencil_stage, threshold,
                         bool(numba_options.get("parallel")), measured, machine_profile(), profile), numba_options


def _pipeline_stages(value, where):
    if value is None or value == 0:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_PIPELINE_STAGES:
        raise StreamConfigError(f"{where}: pipeline_stages is a number of asynchronous load stages from 1 to "
                                f"{MAX_PIPELINE_STAGES} (0 or None: none), got {value!r}")
    return value


def _validate_gpu(func, stream_stores, stream_loads, threshold, prefetch_distance, prefetch_hint, options,
                  numba_cuda_kernel):
    """`validate_options` for ``target="cuda"``: the CPU's checks for what
    means the same there, a `StreamConfigError` naming the option and the
    target for what does not."""
    where = "streamjit.cuda.jit" if numba_cuda_kernel else "target='cuda'"
    params = list(inspect.signature(func).parameters)
    stores = parse_array_names("stream_stores", stream_stores, params, func)
    loads = parse_array_names("stream_loads", stream_loads, params, func)
    if threshold != "auto" and threshold is not None:
        _threshold(threshold)  # (a value the CPU would not take either gets the CPU's message)
        raise StreamConfigError(f"threshold={threshold!r} is not supported with {where}: a GPU kernel has no size "
                                "test and streams at every size; threshold='auto' (the default: named arrays "
                                "measured slower streamed stay plain) and None mean what they mean on the CPU")
    _check_prefetch(prefetch_distance, prefetch_hint)
    if prefetch_distance:
        raise StreamConfigError(f"prefetch_distance={prefetch_distance!r} (bytes ahead, on the CPU) is not supported "
                                f"with {where}: the GPU's asynchronous load stage is counted in stages, "
                                f"pipeline_stages=k (1 to {MAX_PIPELINE_STAGES}); prefetch_distance=0 or None: none")
    if prefetch_hint is not None:
        raise StreamConfigError(f"prefetch_hint={prefetch_hint!r} is not supported with {where}: a GPU has no "
                                "prefetch instruction to choose; pipeline_stages=k copies streamed loads ahead "
                                "(cp.async), load_cache= picks their cache operator")
    stages = _pipeline_stages(options.pop("pipeline_stages", None), where)
    load_cache = options.pop("load_cache", "cs")
    if load_cache not in GPU_LOAD_CACHES:
        raise StreamConfigError(f"load_cache must be one of {', '.join(map(repr, GPU_LOAD_CACHES))}, "
                                f"got {load_cache!r}")
    launch = {name: options.pop(name, None) for name in ("threads_per_block", "blocks")}
    if numba_cuda_kernel:
        # (its other options are numba.cuda.jit's, checked there)
        given = [name for name, value in (("pipeline_stages", stages), *launch.items()) if value]
        if given:
            raise StreamConfigError(f"{given[0]} is not supported with streamjit.cuda.jit: a numba-cuda kernel "
                                    "indexes its own threads and is launched as kernel[blocks, threads_per_block]"
                                    "(...); the option is stream_kernel(target='cuda')'s, for loop functions")
        cuda_options = options
    else:
        unknown = sorted(set(options) - set(GPU_NUMBA_OPTIONS))
        if unknown and unknown[0] in FORWARDED_NUMBA_OPTIONS:
            raise StreamConfigError(f"target='cuda' does not take the option {unknown[0]!r}; it takes "
                                    f"{', '.join(STREAM_OPTIONS[:3])}, {', '.join(GPU_OPTIONS)} and "
                                    f"{', '.join(GPU_NUMBA_OPTIONS)}")
        if unknown:
            choices = STREAM_OPTIONS + GPU_OPTIONS + GPU_NUMBA_OPTIONS
            raise StreamConfigError(f"unknown option {unknown[0]!r}{did_you_mean(unknown[0], choices)}; "
                                    f"target='cuda' takes {', '.join(choices)}")
        if options.get("nopython", True) is not True:
            raise StreamConfigError("stream_kernel compiles in nopython mode only: nopython must be True")
        if options.get("parallel", True) is not True:
            raise StreamConfigError("parallel=False is not supported with target='cuda': its prange nest always "
                                    "runs on the GPU's grid (parallel=True, or no parallel option)")
        cuda_options = {"fastmath": options.get("fastmath", False)}
    measured = threshold == "auto" and isinstance(stores, tuple)
    return (StreamOptions(stream_stores=stores, stream_loads=loads, parallel=True, measured=measured),
            dict(prefetch=stages, load_cache=load_cache, cuda_options=cuda_options, **launch))
