"""`stream_kernel`: the decorator and the dispatcher it returns.

The dispatcher *is* a Numba CPU dispatcher (calls go through Numba's C
dispatch, with no Python wrapper on the hot path; other jitted functions can
call it), compiling the user's function itself (from its bytecode, as Numba
does) with the pipeline of `pipeline.py` and code libraries that run the
LLVM rewrite (`lowering/library.py`). It adds
`stream_report`, shows the rewritten module in `inspect_llvm`, and compiles
for other CPUs in `inspect_asm(target=..., cpu=...)`.
"""

import inspect

import llvmlite.binding as llvm
import numpy as np
from numba.core import sigutils
from numba.core.registry import CPUDispatcher

from .cache import StreamFunctionCache
from .errors import StreamError
from .lowering.cross_target import compile_for_target
from .lowering.library import stream_code_libraries
from .options import validate_options
from .pipeline import compiler_for
from .plan import METADATA_KEY, StreamResult
from .report import build_report


class StreamDispatcher(CPUDispatcher):
    """A Numba dispatcher whose pipeline runs the stream passes."""

    def __init__(self, py_func, stream_options, numba_options, options, sigs=None):
        """``stream_options``: the validated `StreamOptions` (None: compile as
        ``numba.njit``); ``numba_options`` go to Numba; ``options`` are all
        the keyword arguments the kernel was made with, kept to rebuild it."""
        targetoptions = dict(numba_options)
        locals_ = targetoptions.pop("locals", None) or {}
        cache = targetoptions.pop("cache", False)
        targetoptions.pop("nopython", None)
        targetoptions["nopython"] = True
        super().__init__(py_func, locals=locals_, targetoptions=targetoptions,
                         pipeline_class=compiler_for(stream_options))
        self.stream_options = stream_options
        self._options = options
        self._eager_sigs = sigs
        self._signature = inspect.signature(py_func)
        self._cross_compiled = {}  # (signature, target, cpu, features) -> (LLVM IR, assembly)
        if cache:
            self.enable_caching()

    def enable_caching(self):
        key = self.stream_options.cache_key() if self.stream_options else None
        self._cache = StreamFunctionCache(self.py_func, key)

    def _reduce_states(self):
        """Pickled as the function (by value, as Numba pickles its own
        dispatchers: no source file is needed where it is rebuilt, e.g. on
        Dask workers) and the options; compiled again on first use."""
        return dict(uuid=str(self._uuid), py_func=self.py_func, options=self._options, sigs=self._eager_sigs)

    @classmethod
    def _rebuild(cls, uuid, py_func, options, sigs):
        try:
            return cls._memo[uuid]
        except KeyError:
            pass
        self = make_dispatcher(py_func, sigs=sigs, **options)
        self._set_uuid(uuid)
        return self

    def stream_result(self, signature=None):
        """The `StreamResult` of one compiled signature (the latest by default)."""
        sig = self._signature_of(signature)
        return self.overloads[sig].metadata.get(METADATA_KEY) or StreamResult()

    def above_threshold(self, *args, **kwargs):
        """Whether a call with these arguments passes the kernel's size test
        (``threshold``): its streamed arrays hold more bytes than the
        threshold. Always True without a threshold. The compiled kernel makes
        the same test at entry; only then may its aligned loops stream."""
        threshold = self.stream_options.threshold if self.stream_options else None
        if threshold is None:
            return True
        bound = self._signature.bind(*args, **kwargs)
        sig = tuple(self.typeof_pyval(a) for a in bound.args)
        result = self.stream_result(sig)
        total = sum(bound.arguments[name].nbytes for name in result.size_arrays
                    if isinstance(bound.arguments.get(name), np.ndarray))
        return total > threshold

    def compile(self, sig):
        with stream_code_libraries(self.targetctx.codegen()):
            return super().compile(sig)

    def _signature_of(self, signature):
        if signature is None:
            if not self.signatures:
                raise ValueError(f"{self.py_func.__qualname__} has not been compiled yet: call it or pass a signature")
            return self.signatures[-1]
        args, _ = sigutils.normalize_signature(signature)
        if args not in self.overloads:
            self.compile(args)
        return args

    def inspect_llvm(self, signature=None, *, target=None, cpu=None, features=None):
        """LLVM IR as handed to the backend, after the non-temporal rewrite;
        for another ``target`` triple / ``cpu`` / ``features``, see `inspect_asm`."""
        if signature is None:
            return {sig: self.inspect_llvm(sig, target=target, cpu=cpu, features=features) for sig in self.signatures}
        if target is None and cpu is None and features is None:
            library = self._library(signature)
            return getattr(library, "streamed_llvm_ir", None) or library.get_llvm_str()
        return self._target_code(signature, target, cpu, features)[0]

    def inspect_asm(self, signature=None, *, target=None, cpu=None, features=None):
        """Assembly, as Numba's; with ``target`` (an LLVM triple such as
        ``"aarch64-unknown-linux-gnu"``), ``cpu`` (``"neoverse-v1"``,
        ``"haswell"``) or ``features`` (``"+avx2"``), the same kernel module
        compiled for that machine instead, without running it."""
        if signature is None:
            return {sig: self.inspect_asm(sig, target=target, cpu=cpu, features=features) for sig in self.signatures}
        if target is None and cpu is None and features is None:
            library = self._library(signature)
            return getattr(library, "cached_asm", None) or library.get_asm_str()
        return self._target_code(signature, target, cpu, features)[1]

    def _library(self, signature):
        return self.overloads[self._signature_of(signature)].library

    def _target_code(self, signature, target, cpu, features):
        """(final LLVM IR, assembly) compiled for another target, once per target."""
        sig = self._signature_of(signature)
        key = (sig, target, cpu, features)
        if key not in self._cross_compiled:
            module = getattr(self.overloads[sig].library, "unoptimized_llvm_ir", None)
            if module is None:
                raise StreamError(f"{self.py_func.__qualname__}{sig}: no module to compile for another target "
                                  "(loaded from Numba's on-disk cache?)")
            self._cross_compiled[key] = compile_for_target(module, target or llvm.get_process_triple(), cpu, features)
        return self._cross_compiled[key]

    def stream_report(self, signature=None, *, target=None, cpu=None, features=None):
        """A `StreamReport` for one compiled signature (the latest by default),
        for the host or, like `inspect_asm`, for another target."""
        sig = self._signature_of(signature)
        return build_report(self, sig, self.inspect_llvm(sig, target=target, cpu=cpu, features=features),
                            self.inspect_asm(sig, target=target, cpu=cpu, features=features))


def make_dispatcher(func, *, stream_stores=False, stream_loads=False, threshold=None, prefetch_distance=None,
                    prefetch_hint=None, sigs=None, **numba_options):
    """A `StreamDispatcher` for ``func``, compiled for ``sigs`` (eager, as
    ``numba.njit(sigs)``: no other signature is compiled later)."""
    stream_options, forwarded = validate_options(func, stream_stores, stream_loads, threshold, prefetch_distance,
                                                 prefetch_hint, numba_options)
    options = dict(stream_stores=stream_stores, stream_loads=stream_loads, threshold=threshold,
                   prefetch_distance=prefetch_distance, prefetch_hint=prefetch_hint, **numba_options)
    dispatcher = StreamDispatcher(func, stream_options, forwarded, options, sigs)
    for sig in sigs or ():
        dispatcher.compile(sig)
    if sigs:
        dispatcher.disable_compile()
    return dispatcher


def stream_kernel(*args, stream_stores=False, stream_loads=False, threshold=None, prefetch_distance=None,
                  prefetch_hint=None, **numba_options):
    """Compile a NumPy loop function with streamed (non-temporal) stores.

    Used bare (``@stream_kernel``), with options (``@stream_kernel(stream_stores=["dst"])``)
    or with eager signatures first, as ``numba.njit``.
    ``target="cuda"`` compiles the same function for an NVIDIA GPU (its prange
    nest becomes the grid; see ``streamjit/cuda``).
    """
    sigs = None
    if args and not callable(args[0]):
        sigs, args = args[0], args[1:]
        sigs = sigs if isinstance(sigs, list) else [sigs]

    target = numba_options.pop("target", "cpu")

    def decorate(func):
        if target != "cpu":  # a GPU kernel: only now is numba.cuda imported
            from .cuda.dispatcher import make_kernel
            return make_kernel(func, target=target, stream_stores=stream_stores, stream_loads=stream_loads,
                               threshold=threshold, prefetch_distance=prefetch_distance, sigs=sigs, **numba_options)
        return make_dispatcher(func, stream_stores=stream_stores, stream_loads=stream_loads, threshold=threshold,
                               prefetch_distance=prefetch_distance, prefetch_hint=prefetch_hint, sigs=sigs,
                               **numba_options)

    if args:
        return decorate(args[0])
    return decorate
