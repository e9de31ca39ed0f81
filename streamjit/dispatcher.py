"""`stream_kernel`: the decorator and the dispatcher it returns.

The dispatcher *is* a Numba CPU dispatcher (calls go through Numba's C
dispatch, with no Python wrapper on the hot path; other jitted functions can
call it), compiling the function produced by the stream pass with the
`StreamCompiler` pipeline. It adds `stream_report` and shows the rewritten
module in `inspect_llvm`.
"""

from numba.core import sigutils
from numba.core.registry import CPUDispatcher

from .lowering.library import StreamCompiler
from .options import validate_options
from .report import build_report
from .stream_pass import plan_stream


class StreamDispatcher(CPUDispatcher):
    """A Numba dispatcher for a kernel rewritten by the stream pass."""

    def __init__(self, py_func, plan, numba_options):
        options = dict(numba_options)
        locals_ = options.pop("locals", None) or {}
        cache = options.pop("cache", False)
        options["nopython"] = True
        super().__init__(plan.func, locals=locals_, targetoptions=options, pipeline_class=StreamCompiler)
        self.py_func = py_func
        self.__wrapped__ = py_func
        self.stream_plan = plan
        if cache:
            self.enable_caching()

    def compile(self, sig):
        error = self.stream_plan.error
        if error is not None:
            raise type(error)(*error.args)
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

    def inspect_llvm(self, signature=None):
        """LLVM IR as handed to the backend, after the non-temporal rewrite."""
        if signature is None:
            return {sig: self.inspect_llvm(sig) for sig in self.signatures}
        library = self.overloads[self._signature_of(signature)].library
        return getattr(library, "streamed_llvm_ir", None) or library.get_llvm_str()

    def stream_report(self, signature=None):
        """A `StreamReport` for one compiled signature (the latest by default)."""
        sig = self._signature_of(signature)
        return build_report(self, sig)


def stream_kernel(*args, stream_stores=False, stream_loads=False, threshold=None, prefetch_distance=None,
                  **numba_options):
    """Compile a NumPy loop function with streamed (non-temporal) stores.

    Used bare (``@stream_kernel``), with options (``@stream_kernel(stream_stores=["dst"])``)
    or with eager signatures first, as ``numba.njit``.
    """
    sigs = None
    if args and not callable(args[0]):
        sigs, args = args[0], args[1:]
        sigs = sigs if isinstance(sigs, list) else [sigs]

    def decorate(func):
        stores, loads, distance, forwarded = validate_options(
            func, stream_stores, stream_loads, threshold, prefetch_distance, numba_options)
        dispatcher = StreamDispatcher(func, plan_stream(func, stores, loads, distance), forwarded)
        for sig in sigs or ():
            dispatcher.compile(sig)
        return dispatcher

    if args:
        return decorate(args[0])
    return decorate
