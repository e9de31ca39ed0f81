"""GPU kernels: ``stream_kernel(target="cuda")`` on a loop function, and
``sj.cuda.jit`` on a kernel written for numba-cuda.

Per signature (the argument types, as numba-cuda types them), the kernel's
source goes through the GPU passes and then to ``numba.cuda.jit``:

1. for a loop function, `legality.py` (the CPU front end's decision: which
   arrays stream, and the same `StreamLegalityError`s), then `grid.py`
   (the ``prange`` nest becomes grid-stride loops), `async_loads.py` (with
   ``prefetch_distance=k``) and `vector.py`; for a numba-cuda kernel,
   `decision.py` (the CPU's rule, read off the syntax tree);
2. `hints.py` (both kinds): the remaining element accesses of streamed
   arrays become hinted intrinsics.

Either kind answers `stream_result` (the decision, a `StreamResult` as on
the CPU) and `stream_report` (the CPU report's columns, counted in the PTX).

numba-cuda moves NumPy arguments to the device and back, and uses device
arrays in place. A loop function's launch is configured by occupancy
(``cuOccupancyMaxPotentialBlockSize``, and as many blocks as fit on the
device at once, no more than the largest array needs) unless the call
gives it, ``kernel[blocks, threads_per_block](...)`` as in numba-cuda.
numba.cuda is imported on first compile or call, never with streamjit:
without numba-cuda, or without a GPU, the call raises a `StreamError`
that says what is missing (``inspect_ptx``, ``inspect_sass`` and
``stream_report`` need no GPU).
"""

import ast
import inspect
import math

import numpy as np

from ..errors import StreamConfigError, StreamError
from ..options import parse_array_names
from ..plan import StreamOptions, StreamResult
from . import async_loads, decision, grid, hints, ptx, vector
from .intrinsics import LOAD_CACHE
from .source import Kernel, build, parse

# The compute capability `inspect_ptx`, `inspect_sass` and `stream_report`
# compile for when none is given. Chosen, not measured, as are the two below: no GPU has
# run these kernels (bench/README.md, "GPU (`python bench/gpu.py`):
# unmeasured").
DEFAULT_CC = (9, 0)
# The block size of kernels with load rings (sized into shared memory at
# compile time) when the caller gives none.
RING_THREADS = 256
# Block sizes the occupancy search tries.
BLOCK_SIZES = (128, 256, 512, 1024)
# Under the simulator every GPU thread is a Python thread: a small launch.
SIMULATED_LAUNCH = (2, 32)


def numba_cuda():
    """numba.cuda (the simulator's under ``NUMBA_ENABLE_CUDASIM=1``), or a StreamError."""
    try:
        from numba import cuda
    except ImportError as exc:
        raise StreamError("target='cuda' needs numba-cuda: pip install 'streamjit[cuda]' "
                          f"({exc})") from None
    return cuda


def simulated():
    """Whether numba.cuda is numba-cuda's simulator (``NUMBA_ENABLE_CUDASIM=1``)."""
    numba_cuda()
    from numba.cuda.core import config
    return bool(config.ENABLE_CUDASIM)


def _argtype(value):
    """The Numba type numba-cuda gives an argument."""
    import numba
    return value._numba_type_ if hasattr(value, "_numba_type_") else numba.typeof(value)


def _signature(signature):
    from numba.core import sigutils
    args, _ = sigutils.normalize_signature(signature)
    return tuple(args)


def _prefetch_stages(value):
    if value is None or value == 0:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 8:
        raise StreamConfigError(f"target='cuda': prefetch_distance is a number of pipeline stages from 1 to 8 "
                                f"(0 or None: no asynchronous load stage), got {value!r}")
    return value


class CudaKernel:
    """A streamed GPU kernel: ``grid=True`` for a loop function (its prange
    nest is the grid), False for a numba-cuda kernel (its own indexing)."""

    def __init__(self, py_func, stores, loads, *, grid, prefetch=0, load_cache="cs", threads_per_block=None,
                 blocks=None, cuda_options=None):
        if load_cache not in LOAD_CACHE:
            raise StreamConfigError(f"load_cache must be one of {', '.join(map(repr, LOAD_CACHE))}, "
                                    f"got {load_cache!r}")
        self.py_func = py_func
        self.load_cache = load_cache
        self.stores, self.loads = stores, loads
        self.grid = grid
        self.prefetch = prefetch
        self.threads_per_block, self.blocks = threads_per_block, blocks
        self.cuda_options = dict(cuda_options or {})
        self._params = list(inspect.signature(py_func).parameters)
        self._built = {}  # (argtypes, threads, simulated) -> (python function, Kernel, StreamResult)
        self._jitted = {}  # same key -> numba.cuda dispatcher
        self._ptx = {}  # (argtypes, threads, cc) -> PTX
        self.signatures = []

    def __repr__(self):
        return f"<streamjit GPU kernel {self.py_func.__qualname__}>"

    # -- compiling ---------------------------------------------------------
    def _options(self):
        return StreamOptions(stream_stores=self.stores, stream_loads=self.loads, parallel=True)

    def _kernel(self, argtypes, threads, sim):
        """(rewritten Python function, Kernel, StreamResult) for one signature."""
        key = (argtypes, threads, sim)
        if key in self._built:
            return self._built[key]
        if len(argtypes) != len(self._params):
            raise StreamError(f"{self.py_func.__qualname__} takes {len(self._params)} arguments, "
                              f"got {len(argtypes)}")
        kernel = Kernel(self.py_func, parse(self.py_func), dict(zip(self._params, argtypes)), frozenset(),
                        frozenset(), sim, numba_cuda(), threads_per_block=threads, load_cache=self.load_cache)
        if self.grid:
            from . import legality
            result, kernel.aliases = legality.analyze(self.py_func, argtypes, self._options()) \
                if (self.stores or self.loads) else (StreamResult(), {})
            kernel.stores, kernel.loads = result.streamed_stores, result.streamed_loads
            grid.run_pass(kernel)
            if self.prefetch:
                async_loads.run_pass(kernel, self.prefetch)
            vector.run_pass(kernel)
        else:
            # (no typed IR for the CPU's decision: its rule, on the syntax tree)
            kernel.aliases = decision.aliases(kernel.tree, kernel.types)
            kernel.stores, kernel.loads, notes = decision.named(kernel, self.stores, self.loads)
            result = StreamResult(streamed_stores=kernel.stores, streamed_loads=kernel.loads)
            for array, text in notes:
                result.note(array, 0, text)
        hints.run_pass(kernel)
        self._built[key] = (build(kernel), kernel, result)
        return self._built[key]

    def _ring_threads(self, threads):
        """The block size baked into load rings (None: the kernel has none)."""
        if not (self.grid and self.prefetch):
            return None
        return _count(threads or self.threads_per_block or (SIMULATED_LAUNCH[1] if simulated() else RING_THREADS))

    def inspect_source(self, signature=None, *, threads_per_block=None):
        """The rewritten Python source numba-cuda compiles."""
        argtypes = self._argtypes(signature)
        kernel = self._kernel(argtypes, self._ring_threads(threads_per_block), False)[1]
        return ast.unparse(kernel.tree)

    def inspect_ptx(self, signature=None, *, cc=DEFAULT_CC, threads_per_block=None):
        """PTX for compute capability ``cc`` (no GPU needed)."""
        if simulated():
            raise StreamError("inspect_ptx compiles for a GPU: unset NUMBA_ENABLE_CUDASIM")
        argtypes = self._argtypes(signature)
        if self.prefetch and self.grid and cc < (8, 0):
            raise StreamError(f"prefetch_distance on the GPU uses cp.async, which needs sm_80 or later, not "
                              f"sm_{cc[0]}{cc[1]}")
        ring = self._ring_threads(threads_per_block)
        if (argtypes, ring, cc) not in self._ptx:
            func = self._kernel(argtypes, ring, False)[0]
            options = {k: v for k, v in self.cuda_options.items() if k in ("fastmath", "lineinfo", "debug")}
            self._ptx[argtypes, ring, cc] = numba_cuda().compile_ptx(func, argtypes, cc=cc, **options)[0]
        return self._ptx[argtypes, ring, cc]

    def inspect_sass(self, signature=None, *, cc=DEFAULT_CC, threads_per_block=None):
        """Machine code (ptxas + nvdisasm) for ``sm_<cc>``: the hints show as
        ``STG.E.EF`` / ``STG.E.EF.128`` / ``LDG.E.EF`` / ``LDGSTS``."""
        return ptx.sass(self.inspect_ptx(signature, cc=cc, threads_per_block=threads_per_block), cc)

    def stream_result(self, signature=None, *, threads_per_block=None):
        """What was decided for one signature, as on the CPU: a `StreamResult`
        (``streamed_stores``, ``streamed_loads``, ``notes`` per array)."""
        return self._kernel(self._argtypes(signature), self._ring_threads(threads_per_block), False)[2]

    def stream_report(self, signature=None, *, cc=DEFAULT_CC, threads_per_block=None):
        """Per array, the PTX's streamed and plain loads and stores in the
        CPU report's columns (`ptx.CudaStreamReport`), and the hinted SASS
        opcodes."""
        argtypes = self._argtypes(signature)
        code = self.inspect_ptx(argtypes, cc=cc, threads_per_block=threads_per_block)
        _, kernel, result = self._kernel(argtypes, self._ring_threads(threads_per_block), False)
        notes = [(array, text) for array, texts in result.notes.items() for text in texts] + kernel.notes
        return ptx.report(kernel.types, cc, code, ptx.sass(code, cc), notes)

    def _argtypes(self, signature):
        if signature is None:
            if not self.signatures:
                raise ValueError(f"{self.py_func.__qualname__} has not been called yet: pass a signature")
            return self.signatures[-1]
        return signature if isinstance(signature, tuple) else _signature(signature)

    # -- launching ---------------------------------------------------------
    def __getitem__(self, config):
        blocks, threads = (config + (None,))[:2] if isinstance(config, tuple) else (config, None)

        def launch(*args):
            return self._launch(args, blocks, threads)
        return launch

    def __call__(self, *args):
        if not self.grid:
            raise StreamError(f"{self.py_func.__qualname__} is a numba-cuda kernel: launch it as "
                              "kernel[blocks, threads_per_block](...)")
        return self._launch(args, self.blocks, self.threads_per_block)

    def _launch(self, args, blocks, threads):
        cuda = numba_cuda()
        sim = simulated()
        if not sim and not cuda.is_available():
            raise StreamError(f"cannot launch {self.py_func.__qualname__}: no CUDA GPU or driver here "
                              "(inspect_ptx, inspect_sass and stream_report need none; NUMBA_ENABLE_CUDASIM=1 "
                              "runs kernels on the CPU)")
        # numba-cuda moves an array as one contiguous buffer: a strided view
        # goes through a contiguous copy, written back after the launch
        staged = tuple(np.ascontiguousarray(a) if isinstance(a, np.ndarray) and a.ndim and not
                       (a.flags.c_contiguous or a.flags.f_contiguous) else a for a in args)
        argtypes = tuple(_argtype(a) for a in staged)
        if argtypes not in self.signatures:
            self.signatures.append(argtypes)
        if self.grid and self.prefetch and not sim and cuda.get_current_device().compute_capability < (8, 0):
            raise StreamError("prefetch_distance on the GPU uses cp.async, which needs sm_80 or later")
        ring = self._ring_threads(threads)
        key = (argtypes, ring, sim)
        func, kernel, _ = self._kernel(argtypes, ring, sim)
        if key not in self._jitted:
            self._jitted[key] = cuda.jit(func, **self.cuda_options)
        jitted = self._jitted[key]
        if self.grid:
            blocks, threads = self._configure(jitted, argtypes, staged, blocks, ring or threads, sim)
            threads = _block_shape(threads, kernel.grid_dims)
        elif blocks is None or threads is None:
            raise StreamError(f"{self.py_func.__qualname__} is a numba-cuda kernel: launch it as "
                              "kernel[blocks, threads_per_block](...)")
        jitted[blocks, threads](*staged)
        for view, copy in zip(args, staged):
            if copy is not view and view.flags.writeable:
                view[...] = copy

    def _configure(self, jitted, argtypes, args, blocks, threads, sim):
        """(blocks, threads per block): the caller's, else by occupancy: the
        smallest block size that keeps the most threads resident
        (``cuOccupancyMaxActiveBlocksPerMultiprocessor``), and as many blocks
        as are resident at once, no more than the largest array needs (the
        loops are grid-stride: any grid covers every iteration)."""
        if sim:
            return blocks or SIMULATED_LAUNCH[0], threads or SIMULATED_LAUNCH[1]
        if blocks and threads:
            return blocks, threads
        compiled = jitted.compile(argtypes)
        sizes = [threads] if threads else list(BLOCK_SIZES)
        resident = {size: compiled.max_cooperative_grid_blocks(size) for size in sizes}
        size = max(sizes, key=lambda n: (resident[n] * _count(n), -_count(n)))
        largest = max((a.size for a in args if hasattr(a, "size") and hasattr(a, "shape")), default=1)
        return blocks or max(1, min(resident[size], math.ceil(largest / _count(size)))), size


def _count(threads):
    """Threads in a block given as a number or a shape."""
    return threads if isinstance(threads, int) else math.prod(threads)


def _block_shape(threads, dims):
    """A block for a grid of ``dims`` dimensions: 32 threads along x (a warp
    takes consecutive iterations of the innermost prange), the rest along y."""
    if dims == 1 or isinstance(threads, tuple):
        return threads
    x = min(32, threads)
    return (x, max(1, threads // x)) + (1,) * (dims - 2)


def make_kernel(func, *, target="cuda", stream_stores=False, stream_loads=False, threshold=None,
                prefetch_distance=None, load_cache="cs", threads_per_block=None, blocks=None, sigs=None,
                **options):
    """``stream_kernel(target="cuda", ...)``: a `CudaKernel` for a loop function."""
    if target != "cuda":
        raise StreamConfigError(f"target must be 'cpu' or 'cuda', got {target!r}")
    params = list(inspect.signature(func).parameters)
    if threshold is not None:
        raise StreamConfigError("target='cuda' has no threshold: a GPU kernel streams at every size (unmeasured "
                                "on hardware)")
    unknown = sorted(set(options) - {"fastmath", "parallel", "nopython"})
    if unknown:
        raise StreamConfigError(f"target='cuda' does not take the option {unknown[0]!r}; it takes stream_stores, "
                                "stream_loads, prefetch_distance (pipeline stages), load_cache, threads_per_block, "
                                "blocks and fastmath")
    kernel = CudaKernel(func, parse_array_names("stream_stores", stream_stores, params, func),
                        parse_array_names("stream_loads", stream_loads, params, func), grid=True,
                        prefetch=_prefetch_stages(prefetch_distance), load_cache=load_cache,
                        threads_per_block=threads_per_block,
                        blocks=blocks, cuda_options={"fastmath": options.get("fastmath", False)})
    _eager(kernel, sigs)
    return kernel


def jit(func_or_sig=None, *, stream_stores=False, stream_loads=False, load_cache="cs", **cuda_options):
    """``numba.cuda.jit`` with ``stream_stores`` / ``stream_loads``: the named
    arrays' element stores and loads get the PTX hints (True: the arrays the
    CPU's rule picks, `decision.py`), with no change to
    the kernel body (``cuda.grid``, ``cuda.shared.array`` and the rest stay
    numba-cuda's). Launch as numba-cuda kernels are launched,
    ``kernel[blocks, threads](...)``; a signature (or a list of them) first,
    as numba-cuda takes it, compiles for it at decoration."""
    sigs = func_or_sig if isinstance(func_or_sig, (str, list, tuple)) else None

    def decorate(f):
        params = list(inspect.signature(f).parameters)
        kernel = CudaKernel(f, parse_array_names("stream_stores", stream_stores, params, f),
                            parse_array_names("stream_loads", stream_loads, params, f), grid=False,
                            load_cache=load_cache, cuda_options=cuda_options)
        _eager(kernel, sigs)
        return kernel
    return decorate(func_or_sig) if callable(func_or_sig) else decorate


def _eager(kernel, sigs):
    """Rewrite ``kernel`` for each signature now, as ``numba.njit(sigs)``
    compiles eagerly: what the passes reject is raised at decoration."""
    for sig in [sigs] if isinstance(sigs, str) else sigs or ():
        kernel.inspect_source(sig)
        kernel.signatures.append(_signature(sig))
