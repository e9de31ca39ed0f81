"""The dispatcher `stream_kernel` returns (`api.py`).

The dispatcher *is* a Numba CPU dispatcher (calls go through Numba's C
dispatch, with no Python wrapper on the hot path; other jitted functions can
call it), compiling the user's function itself (from its bytecode, as Numba
does) with the pipeline of `pipeline.py` and code libraries that run the
LLVM rewrite (`backend/library.py`). It adds
`stream_report`, shows the rewritten module in `inspect_llvm`, and compiles
for other CPUs in `inspect_asm(target=..., cpu=...)`.
"""

import inspect
import io
import sys
import warnings

import llvmlite.binding as llvm
import numpy as np
import numba
from numba.core import sigutils
from numba.core.compiler import Compiler
from numba.core.registry import CPUDispatcher

from .cache import StreamFunctionCache, numba_options_key
from ..errors import StreamError, warnings_once
from ..backend.cross_target import compile_for_target
from ..backend.library import stream_code_libraries
from ..numba_internals.dispatch import (Reducible, dispatcher_cache, dispatcher_uuid, set_dispatcher_cache,
                                        set_dispatcher_uuid, set_pipeline_class, unpickled_dispatcher)
from ..options import resolved, validate_options
from .pipeline import compiler_for
from ..plan import METADATA_KEY, StreamResult
from ..inspection.report import build_report
from ..codegen import CALL_PATHS, FALLBACK_CHECKS
from ..inspection.call_records import listen_for_fallbacks, summed_counters


class StreamDispatcher(Reducible, CPUDispatcher):
    """A Numba dispatcher whose pipeline runs the stream passes."""

    def __init__(self, py_func, stream_options, numba_options, options, sigs=None):
        """``stream_options``: the validated `StreamOptions` (None: compile as
        ``numba.njit``); ``numba_options`` go to Numba; ``options`` are all
        the keyword arguments the kernel was made with, kept to rebuild it."""
        targetoptions = dict(numba_options)
        locals_ = targetoptions.pop("locals", None) or {}
        cache = targetoptions.pop("cache", False)
        # object mode (forceobj=True, nothing streamed) is Numba's own pipeline, as numba.jit(forceobj=True)
        objmode = bool(targetoptions.get("forceobj"))
        targetoptions["nopython"] = not objmode
        super().__init__(py_func, locals=locals_, targetoptions=targetoptions,
                         pipeline_class=Compiler if objmode else compiler_for(stream_options))
        self.stream_options = stream_options
        self._options = options
        self._eager_sigs = sigs
        self._signature = inspect.signature(py_func)
        self._cross_compiled = {}  # (signature, target, cpu, features) -> (LLVM IR, assembly)
        self._warnings_given = set()  # (line, message): a StreamWarning once per kernel, not per signature
        self._fallbacks_warned = set()  # the run-time checks whose fallback was warned about (once per kernel)
        self._streamed_trial = {}  # signature -> what stream_stores=True would do (a kernel naming nothing)
        if cache:
            self.enable_caching()

    def enable_caching(self):
        key = self.stream_options.cache_key() if self.stream_options else None
        set_dispatcher_cache(self, StreamFunctionCache(self.py_func, key,
                                                       numba_options_key(self.targetoptions, self.locals)))

    def pickled_states(self):
        """Pickled as the function (by value, as Numba pickles its own
        dispatchers: no source file is needed where it is rebuilt, e.g. on
        Dask workers) and the options; compiled again on first use."""
        return dict(uuid=dispatcher_uuid(self), py_func=self.py_func, options=self._options, sigs=self._eager_sigs)

    @classmethod
    def from_pickled_states(cls, uuid, py_func, options, sigs):
        alive = unpickled_dispatcher(cls, uuid)
        if alive is not None:
            return alive
        self = make_dispatcher(py_func, sigs=sigs, **options)
        set_dispatcher_uuid(self, uuid)
        return self

    def stream_result(self, signature=None):
        """What the stream passes decided for one signature, as a `StreamResult`.

        Parameters
        ----------
        signature : tuple of Numba types, or a signature string, optional
            One of ``self.signatures`` (compiled first if it is not); by
            default the latest compiled.

        Returns
        -------
        StreamResult
            ``streamed_stores`` and ``streamed_loads`` (array names),
            ``fresh_arrays``, ``size_arrays`` (the arrays the threshold test
            adds up), ``peeled_loops``, and ``notes`` per array (why a store
            stayed plain, how it was made).

        Examples
        --------
        >>> import numpy as np, streamjit as sj
        >>> @sj.stream_kernel(stream_stores=["dst"])
        ... def copy(dst, src):
        ...     for i in range(src.shape[0]):
        ...         dst[i] = src[i]
        >>> copy(np.zeros(8), np.ones(8))
        >>> sorted(copy.stream_result().streamed_stores)
        ['dst']
        """
        sig = self._signature_of(signature)
        result = self.overloads[sig].metadata.get(METADATA_KEY) or StreamResult()
        result.calls, result.fallbacks = self.stream_calls(sig), self.stream_fallbacks(sig)
        return result

    def stream_calls(self, signature=None):
        """How many calls took each path, counted by the compiled code
        itself (`passes/call_record.py`), as Numba's ``stats``.

        Parameters
        ----------
        signature : tuple of Numba types, or a signature string, optional
            Count the calls of this signature only (compiled first if it is
            not); by default the calls of every compiled signature, summed.

        Returns
        -------
        dict
            ``{"streamed": n, "below_threshold": n, "after_check": n,
            "plain": n, "staged": n, "unprefetched": n}``: an aligned loop
            ran; the streamed arrays were below ``threshold``; a run-time
            check (alignment, bounds, overlapping operands, a non-contiguous
            view) sent every loop to its plain version (`stream_fallbacks`
            says which); no aligned loop was reached (empty or short loops,
            or none could be aligned: ``stream_report`` says why); an
            aligned loop ran staged (a source a few bytes behind a streamed
            store modulo 4 KiB, on CPUs where that stalls the store: the
            strip is computed into a buffer in cache and streamed out of
            it); an aligned loop ran its copy without software prefetches
            (rows shorter than the machine profile's stencil-sources stage
            prefetches in). All zero before the first call, and for code
            that neither streams a store nor fused a loop (its calls run
            numba.njit's code). Code that fused loops but streams no store
            counts ``plain`` (its fused loops ran) and ``after_check`` (a
            fused loop's check sent the call to Numba's own code for the
            expression).
        """
        return dict(zip(CALL_PATHS, summed_counters(self, signature)))

    def stream_fallbacks(self, signature=None):
        """Of the calls `stream_calls` counts ``after_check``, how many
        each run-time check sent to the plain code (a call may fail more
        than one).

        Parameters
        ----------
        signature : tuple of Numba types, or a signature string, optional
            As for `stream_calls`: one signature, or by default every
            compiled signature's calls, summed.

        Returns
        -------
        dict
            ``{"bounds": n, "alignment": n, "contiguous": n, "page_alias":
            n, "operands": n}``: an index outside its array; streamed
            stores of different alignments; a row that is not contiguous;
            a source up to the machine profile's ``page_alias_bytes`` behind a
            streamed store modulo 4 KiB (its loads would wait for the stores
            in flight, on CPUs where they stall); a whole-array
            operand that overlaps the destination or has another shape.
            All zero where `stream_calls` counts nothing. The first call
            each check sends to the plain code gives a `StreamWarning`
            naming the remedy, once per kernel and check.

        Examples
        --------
        >>> import numpy as np, streamjit as sj
        >>> @sj.stream_kernel(stream_stores=["a", "b"], threshold=None)
        ... def fill(a, b):
        ...     for i in range(a.shape[0]):
        ...         a[i] = 1.0
        ...         b[i] = 2.0
        >>> buffer = np.zeros(2001)  # b starts 8 bytes further into a vector than a
        >>> fill(buffer[:1000], buffer[1001:])
        >>> fill.stream_calls()["after_check"], fill.stream_fallbacks()["alignment"]
        (1, 1)
        """
        return dict(zip(FALLBACK_CHECKS, summed_counters(self, signature)[len(CALL_PATHS):]))

    def above_threshold(self, *args, **kwargs):
        """Whether a call with these arguments would stream.

        The compiled kernel tests at entry whether its streamed arrays hold
        more bytes than ``threshold``; only then may its aligned loops
        stream. This makes the same test in Python, without calling.

        Parameters
        ----------
        *args, **kwargs
            The arguments of a call (compiled for their types first if needed).

        Returns
        -------
        bool
            True above the threshold, and always with ``threshold=None``.

        Examples
        --------
        >>> import numpy as np, streamjit as sj
        >>> @sj.stream_kernel(stream_stores=["dst"], threshold=4096)
        ... def copy(dst, src):
        ...     for i in range(src.shape[0]):
        ...         dst[i] = src[i]
        >>> small, large = np.ones(16), np.ones(1024)
        >>> copy.above_threshold(np.empty_like(small), small), copy.above_threshold(np.empty_like(large), large)
        (False, True)
        """
        bound = self._signature.bind(*args, **kwargs)
        # (as a call types them: an omitted argument with a default is Numba's Omitted)
        _, sig = self.fold_argument_types(tuple(map(self.typeof_pyval, args)),
                                          {k: self.typeof_pyval(v) for k, v in kwargs.items()})
        result = self.stream_result(tuple(sig))  # (compiled first: "auto" is read then)
        threshold = self.stream_options.threshold if self.stream_options else None
        if threshold is None:
            return True
        total = sum(bound.arguments[name].nbytes for name in result.size_arrays
                    if isinstance(bound.arguments.get(name), np.ndarray))
        return total > threshold

    def compile(self, sig):
        if self.stream_options is not None and self.stream_options.threshold == "auto":
            # read now, not at decoration (the pipeline and the on-disk cache key carry it)
            self.stream_options = resolved(self.stream_options)
            set_pipeline_class(self, compiler_for(self.stream_options))
            if isinstance(dispatcher_cache(self), StreamFunctionCache):
                self.enable_caching()
        own_code = self.py_func.__qualname__ if self.stream_options is not None else None  # (bare: njit's code)
        with stream_code_libraries(self.targetctx.codegen(), own_code), warnings_once(self._warnings_given):
            entry = super().compile(sig)
        self._check_stages_ran()
        listen_for_fallbacks(self)
        return entry

    def _check_stages_ran(self):
        """Raise unless every overload's code went through the post-O3 stages
        (a `StreamCodeLibrary`, or an entry of our cache, which holds their
        output): should Numba stop creating libraries through the class the
        switch sets (`backend/library.py`), kernels would compile without
        non-temporal stores and fences, silently, and always-streamed ones
        would fail to link. Costs a check per overload, after a compile."""
        for overload in self.overloads.values():
            if getattr(overload.library, "streamed_llvm_ir", None) is None:
                raise StreamError(f"{self.py_func.__qualname__}: its code did not go through streamjit's post-O3 "
                                  f"stages (numba {numba.__version__} no longer creates code libraries through the "
                                  f"class streamjit sets): report this, with your Numba version")

    def _signature_of(self, signature):
        if signature is None:
            if not self.signatures:
                raise ValueError(f"{self.py_func.__qualname__} has not been compiled yet: call it or pass a signature")
            return self.signatures[-1]
        try:
            args, _ = sigutils.normalize_signature(signature)
        except (NameError, SyntaxError, TypeError, NotImplementedError) as exc:
            # (Numba's own error for "void(int)", a Python type called with Numba's, is a bare NotImplementedError)
            raise StreamError(f"{self.py_func.__qualname__}: cannot read the signature {signature!r}: "
                              f"{str(exc) or 'an argument is not a Numba type'}; write Numba types, e.g. "
                              "'void(float32[::1], float64[:, ::1], int64)'") from None
        if args not in self.overloads:
            self.compile(args)
        return args

    def inspect_types(self, file=None, signature=None, pretty=False, style="default", **kwargs):
        """Numba's ``inspect_types``, without the lines of the statements the
        stream passes add (their variables are named ``$streamjit_...``):
        the annotated source reads as the user's code, typed. ``pretty=True``
        is Numba's own annotation, every statement kept."""
        if pretty:
            return super().inspect_types(file, signature, pretty, style, **kwargs)
        text = io.StringIO()
        super().inspect_types(file=text, signature=signature, **kwargs)
        (file or sys.stdout).write("".join(line for line in text.getvalue().splitlines(True)
                                           if "$streamjit_" not in line))

    def inspect_llvm(self, signature=None, *, target=None, cpu=None, features=None):
        """The LLVM IR handed to the backend, after the non-temporal rewrite.

        Parameters
        ----------
        signature : tuple of Numba types, or a signature string, optional
            One signature's IR; by default a dict of every compiled one's.
        target, cpu, features : str, optional
            Compile for another machine instead (see `inspect_asm`).

        Returns
        -------
        str, or dict of signature to str
            Streamed stores carry ``!nontemporal`` metadata.

        Examples
        --------
        >>> import numpy as np, streamjit as sj
        >>> @sj.stream_kernel(stream_stores=["dst"])
        ... def copy(dst, src):
        ...     for i in range(src.shape[0]):
        ...         dst[i] = src[i]
        >>> "!nontemporal" in copy.inspect_llvm("void(float64[::1], float64[::1])")
        True
        """
        if signature is None:
            return {sig: self.inspect_llvm(sig, target=target, cpu=cpu, features=features) for sig in self.signatures}
        if target is None and cpu is None and features is None:
            library = self._library(signature)
            return getattr(library, "streamed_llvm_ir", None) or library.get_llvm_str()
        return self._target_code(signature, target, cpu, features)[0]

    def inspect_asm(self, signature=None, *, target=None, cpu=None, features=None):
        """The assembly of the compiled kernel, as Numba's ``inspect_asm``.

        Parameters
        ----------
        signature : tuple of Numba types, or a signature string, optional
            One signature's assembly; by default a dict of every compiled one's.
        target : str, optional
            An LLVM triple (``"aarch64-unknown-linux-gnu"``): the same kernel
            module compiled for that machine, without running it.
        cpu : str, optional
            An LLVM CPU name (``"neoverse-v1"``, ``"skylake-avx512"``).
        features : str, optional
            LLVM target features (``"+avx2"``).

        Returns
        -------
        str, or dict of signature to str
            On x86 streamed stores are ``vmovntps``/``vmovntpd``/``vmovntdq``,
            fences ``sfence``.

        Examples
        --------
        >>> import numpy as np, streamjit as sj
        >>> @sj.stream_kernel(stream_stores=["dst"])
        ... def copy(dst, src):
        ...     for i in range(src.shape[0]):
        ...         dst[i] = src[i]
        >>> copy(np.zeros(8), np.ones(8))
        >>> "stnp" in copy.inspect_asm(copy.signatures[0], target="aarch64-unknown-linux-gnu")
        True
        """
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
            module = getattr(self.overloads[sig].library, "unoptimized_module", None)
            if module is None:
                raise StreamError(f"{self.py_func.__qualname__}{sig}: no module to compile for another target "
                                  "(loaded from Numba's on-disk cache?)")
            self._cross_compiled[key] = compile_for_target(module, target or llvm.get_process_triple(), cpu, features)
        return self._cross_compiled[key]

    def stream_report(self, signature=None, *, target=None, cpu=None, features=None, verbose=False):
        """What the compiled code of one signature streams, read from the code.

        Parameters
        ----------
        signature : tuple of Numba types, or a signature string, optional
            By default the latest compiled (a string or tuple is compiled
            first if it is not yet).
        target, cpu, features : str, optional
            Report on the kernel compiled for another machine (see `inspect_asm`).
        verbose : bool, optional
            Printed, show the table of instructions per array too.

        Returns
        -------
        StreamReport
            Printed, or shown in a REPL or Jupyter: what was fused and
            which arrays stream, what the calls so far did, where the speed
            comes from, and the notes saying why a named array stayed plain;
            with ``verbose``, a table per array of non-temporal vector and
            scalar stores, plain stores, non-temporal and plain loads,
            prefetches (instructions in the final LLVM IR), the fences,
            peeled loops and the machine code's NT stores.

        Examples
        --------
        >>> import numpy as np, streamjit as sj
        >>> @sj.stream_kernel(stream_stores=["dst"])
        ... def copy(dst, src):
        ...     for i in range(src.shape[0]):
        ...         dst[i] = src[i]
        >>> report = copy.stream_report("void(float32[::1], float32[::1])")
        >>> report.arrays["dst"].nt_vector_stores > 0, report.fences
        (True, 1)
        """
        sig = self._signature_of(signature)
        report = build_report(self, sig, self.inspect_llvm(sig, target=target, cpu=cpu, features=features),
                              self.inspect_asm(sig, target=target, cpu=cpu, features=features))
        if self.stream_options is None:
            report.done = self._unnamed_line(sig)
        report.verbose = verbose
        return report

    def _unnamed_line(self, sig):
        """The report's first line for a kernel that names nothing: what
        ``stream_stores=True`` would do to it, found by compiling it so
        (once per signature, when the report asks)."""
        head = (f"{self.py_func.__name__}: nothing is named in stream_stores or stream_loads, so nothing is fused "
                "or streamed (numba.njit's code)")
        if self._options.get("forceobj"):
            return head
        if sig not in self._streamed_trial:
            options = {k: v for k, v in self._options.items() if k not in ("cache", "stream_stores")}
            trial = make_dispatcher(self.py_func, stream_stores=True, **options)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    trial.compile(sig)
            except StreamError as exc:
                self._streamed_trial[sig] = f"stream_stores=True would not compile: {exc}"
            else:
                report = trial.stream_report(sig)
                self._streamed_trial[sig] = "with stream_stores=True: " + report.done.split(": ", 1)[1]
        return f"{head}; {self._streamed_trial[sig]}"


def make_dispatcher(func, *, stream_stores=False, stream_loads=False, threshold="auto", prefetch_distance=None,
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
