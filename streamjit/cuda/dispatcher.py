"""GPU kernels: ``stream_kernel(target="cuda")`` on a loop function, and
``sj.cuda.jit`` on a kernel written for numba-cuda.

Per signature (the argument types, as numba-cuda types them), the kernel's
source goes through the GPU passes and then to ``numba.cuda.jit``:

1. for a loop function, `legality.py` (the CPU front end's decision: which
   arrays stream, and the same `StreamLegalityError`s), then `grid.py`
   (the ``prange`` nest becomes grid-stride loops), `async_loads.py` (with
   ``pipeline_stages=k``) and `vector.py`; for a numba-cuda kernel,
   `decision.py` (the CPU's rule, read off the syntax tree);
2. `hints.py` (both kinds): the remaining element accesses of streamed
   arrays become hinted intrinsics.

Both kinds take their options through the CPU's `options.validate_options`
(``target="cuda"``): an option means what it means on the CPU or raises
`StreamConfigError`. Either kind answers `stream_result` (the decision, a
`StreamResult` as on the CPU) and `stream_report` (the CPU's `StreamReport`,
counted in the PTX).

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
from ..options import validate_options
from ..plan import LOOP_NOTE, StreamOptions, StreamResult
from ..inspection.report import what_was_done
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


class CudaKernel:
    """A streamed GPU kernel: ``grid=True`` for a loop function (its prange
    nest is the grid), False for a numba-cuda kernel (its own indexing);
    ``measured``: ``threshold="auto"``'s rule, named arrays that measured
    slower streamed stay plain (`StreamOptions.measured`)."""

    def __init__(self, py_func, stores, loads, *, grid, prefetch=0, load_cache="cs", threads_per_block=None,
                 blocks=None, cuda_options=None, measured=False):
        if load_cache not in LOAD_CACHE:
            raise StreamConfigError(f"load_cache must be one of {', '.join(map(repr, LOAD_CACHE))}, "
                                    f"got {load_cache!r}")
        self.py_func = py_func
        self.load_cache = load_cache
        self.stores, self.loads = stores, loads
        self.measured = measured
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
        return StreamOptions(stream_stores=self.stores, stream_loads=self.loads, parallel=True,
                             measured=self.measured)

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
            kernel.stores, kernel.loads, notes = decision.named(kernel, self.stores, self.loads, self.measured)
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
            raise StreamError(f"pipeline_stages on the GPU uses cp.async, which needs sm_80 or later, not "
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
        """The CPU's `StreamReport`, counted in the PTX: per array, its
        streamed and plain loads and stores, and the hinted SASS opcodes;
        fences 0 and calls None, with why (`ptx.ABSENT`)."""
        argtypes = self._argtypes(signature)
        code = self.inspect_ptx(argtypes, cc=cc, threads_per_block=threads_per_block)
        _, kernel, result = self._kernel(argtypes, self._ring_threads(threads_per_block), False)
        notes = [(array, text) for array, texts in result.notes.items() for text in texts] + kernel.notes
        report = ptx.report(kernel.types, cc, code, ptx.sass(code, cc), notes, peeled_loops=kernel.peeled_loops,
                            streams=bool(result.streamed_stores))
        streamed = {a for a in result.streamed_stores & set(report.arrays)
                    if report.arrays[a].nt_vector_stores + report.arrays[a].nt_scalar_stores}
        named = set(self.stores) if isinstance(self.stores, tuple) else set()
        plain = {a for a, rep in report.arrays.items() if a not in streamed and (
            a in named or a in result.streamed_stores
            or self.stores is True and any(not n.endswith(LOOP_NOTE) for n in rep.notes))}
        report.done = what_was_done(self.py_func.__name__, result, streamed, plain)
        if result.streamed_loads:
            report.loads = "streamed loads: " + (f"cp.async into a {self.prefetch}-stage ring (pipeline_stages)"
                                                 if self.grid and self.prefetch
                                                 else f"ld.global.{LOAD_CACHE[self.load_cache]} (load_cache)")
        return report

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
            raise StreamError("pipeline_stages on the GPU uses cp.async, which needs sm_80 or later")
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


def make_kernel(func, *, target="cuda", stream_stores=False, stream_loads=False, threshold="auto",
                prefetch_distance=None, prefetch_hint=None, sigs=None, **options):
    """``stream_kernel(target="cuda", ...)``: a `CudaKernel` for a loop
    function, its options checked by `validate_options` for the GPU."""
    stream, gpu = validate_options(func, stream_stores, stream_loads, threshold, prefetch_distance, prefetch_hint,
                                   options, target=target)
    kernel = CudaKernel(func, stream.stream_stores, stream.stream_loads, grid=True, measured=stream.measured, **gpu)
    _eager(kernel, sigs)
    return kernel


def jit(func_or_sig=None, *, stream_stores=False, stream_loads=False, threshold="auto", load_cache="cs",
        **cuda_options):
    """``numba.cuda.jit`` with ``stream_stores`` / ``stream_loads``: the named
    arrays' element stores and loads get the PTX hints (True: the arrays the
    CPU's rule picks, `decision.py`; ``threshold="auto"``, as on the CPU,
    leaves named arrays plain where streaming measured slower, None streams
    them all), with no change to the kernel body (``cuda.grid``,
    ``cuda.shared.array`` and the rest stay numba-cuda's). The other
    options are numba-cuda's; the CPU's ``prefetch_distance``,
    ``prefetch_hint`` and a byte ``threshold`` raise `StreamConfigError`
    (`options.validate_options`). Launch as numba-cuda kernels are launched,
    ``kernel[blocks, threads](...)``; a signature (or a list of them) first,
    as numba-cuda takes it, compiles for it at decoration."""
    sigs = func_or_sig if isinstance(func_or_sig, (str, list, tuple)) else None
    prefetch = {name: cuda_options.pop(name, None) for name in ("prefetch_distance", "prefetch_hint")}

    def decorate(f):
        stream, gpu = validate_options(f, stream_stores, stream_loads, threshold, numba_options=dict(
            cuda_options, load_cache=load_cache), target="cuda", numba_cuda_kernel=True, **prefetch)
        kernel = CudaKernel(f, stream.stream_stores, stream.stream_loads, grid=False, measured=stream.measured,
                            **gpu)
        _eager(kernel, sigs)
        return kernel
    return decorate(func_or_sig) if callable(func_or_sig) else decorate


def _eager(kernel, sigs):
    """Rewrite ``kernel`` for each signature now, as ``numba.njit(sigs)``
    compiles eagerly: what the passes reject is raised at decoration."""
    for sig in [sigs] if isinstance(sigs, str) else sigs or ():
        kernel.inspect_source(sig)
        kernel.signatures.append(_signature(sig))
