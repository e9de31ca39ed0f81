"""streamjit on Dask arrays: each chunk is one streamed kernel call.

When an array outgrows one machine, Dask splits it into chunks; every chunk
is a memory-bound kernel call, where streaming pays. Nothing here schedules
or distributes: Dask does. Kernels and stencils pickle as their function,
syntax tree and options (`StreamDispatcher.__reduce__`), so `distributed`
workers rebuild them and compile on first use (from Numba's on-disk cache
with ``cache=True``).

- A `streamjit.stencil` called with Dask arrays returns a lazy Dask array
  computed with `map_overlap`: the overlap is the stencil's neighbourhood,
  and no padding is added at the array's edges (``boundary="none"``), so
  the edge chunks' own border handling gives the global border ``cval``
  exactly as on one NumPy array. Chunks are written with plain stores
  unless the stencil was given ``stream_stores`` or ``threshold``
  (`for_dask`).
- `elementwise(kernel, *arrays)` maps a `@stream_kernel` whose first
  parameter is the output over matching chunks.

Dask is an optional dependency (``pip install ".[dask]"``); it is imported
only when these are used.
"""

import functools
import inspect
import pickle

import numpy as np

# pickled kernel -> the kernel, one per process (see `_shared`)
_KERNELS = {}


def is_dask_array(value):
    """True for a Dask collection with chunks (a Dask array), recognised by its type's module, so
    that checking never imports Dask."""
    return type(value).__module__.split(".")[0] == "dask" and hasattr(value, "chunks")


def _shared(kernel):
    """``kernel`` as it travels in a task graph: pickled once, and unpickled
    once per process by `_kernel`. Dask workers deserialize each task's
    arguments afresh, and a fresh kernel compiles again: with the kernel
    itself in every task, each 4096 x 4096 chunk of a stencil paid 0.23 s
    of compiling (streamed; 0.15 s plain) for 0.02 s of work, which made
    the streamed stencil 0.56x the plain one in a Dask pipeline."""
    import cloudpickle   # a dependency of dask; pickles kernels defined in __main__ too

    payload = cloudpickle.dumps(kernel)
    _KERNELS.setdefault(payload, kernel)     # this process keeps the kernel it was given, compiled or not
    return payload


def _kernel(payload):
    if payload not in _KERNELS:
        _KERNELS[payload] = pickle.loads(payload)
    return _KERNELS[payload]


def _check_same_chunks(arrays, names, what):
    for name, array in zip(names[1:], arrays[1:]):
        if array.chunks != arrays[0].chunks:
            raise ValueError(f"{what}: '{name}' has chunks {array.chunks}, but '{names[0]}' has "
                             f"{arrays[0].chunks}; rechunk them alike")


def elementwise(kernel, *arrays, dtype=None):
    """Lazy Dask array whose blocks are ``kernel(out_block, *in_blocks)``.

    ``kernel`` is a `stream_kernel` whose first parameter is the output;
    ``arrays`` are Dask arrays with identical chunks; the output has their
    shape and chunks and ``dtype`` (default: the first array's)."""
    import dask.array as da

    if not arrays or not all(is_dask_array(a) for a in arrays):
        raise TypeError("elementwise: pass the kernel's input arrays as dask arrays")
    params = list(inspect.signature(kernel.py_func).parameters)[1:]
    _check_same_chunks(arrays, params + [f"argument {i}" for i in range(len(params), len(arrays))],
                       f"elementwise({kernel.py_func.__name__})")
    out_dtype = np.dtype(dtype if dtype is not None else arrays[0].dtype)
    return da.map_blocks(_elementwise_block, *arrays, kernel=_shared(kernel), out_dtype=out_dtype, dtype=out_dtype)


def _elementwise_block(*blocks, kernel, out_dtype):
    out = np.empty(blocks[0].shape, out_dtype)
    _kernel(kernel)(out, *blocks)
    return out


def for_dask(stencil):
    """The stencil Dask chunks run: ``stencil`` itself when it was given
    ``stream_stores`` or ``threshold``, else the same stencil with plain
    stores. In a stencil-then-sum pipeline (bench/README.md) streaming
    did not measurably pay at any chunk size here: each task's output is a
    fresh allocation that the next task reads right back, and the streamed
    stencil's per-chunk task time, 1.05x the plain one's with 64 MiB chunks
    and 0.58x with 256 MiB, stayed within the spread between two variants
    that run identical plain code (0.94x and 0.70x)."""
    if "stream_stores" in stencil.options or "threshold" in stencil.options:
        return stencil
    return type(stencil)(stencil.py_func, stencil.mode, {**stencil.options, "stream_stores": False})


def stencil_on_dask(stencil, args, neighborhood, out_dtype):
    """Lazy Dask result of a `StreamStencil` over Dask array ``args`` (the
    relatively indexed ones; standard-indexed arguments may be NumPy)."""
    import dask.array as da

    relative = [i for i, name in enumerate(stencil.relative_params) if name is not None]
    lazy = [args[i] for i in relative]
    if not all(is_dask_array(a) for a in lazy):
        raise TypeError(f"stencil {stencil.__name__}: mix of dask and numpy arrays among relatively indexed "
                        "arguments; pass all of them as dask arrays")
    _check_same_chunks(lazy, [stencil.relative_params[i] for i in relative], f"stencil {stencil.__name__}")
    fixed = {i: a for i, a in enumerate(args) if i not in relative}
    depth = {dim: max(-lo, hi, 0) for dim, (lo, hi) in enumerate(neighborhood)}
    block = functools.partial(_stencil_block, stencil=_shared(for_dask(stencil)), fixed=fixed,
                              positions=tuple(relative), neighborhood=neighborhood)
    return da.map_overlap(block, *lazy, depth=depth, boundary="none", trim=True, dtype=out_dtype,
                          align_arrays=False)


def _stencil_block(*blocks, stencil, fixed, positions, neighborhood):
    args = dict(fixed)
    args.update(zip(positions, blocks))
    return _kernel(stencil)(*(args[i] for i in range(len(args))), neighborhood=neighborhood)
