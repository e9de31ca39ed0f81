"""`streamjit.stencil`: `numba.stencil`, with the loop nest compiled to stream.

A stencil kernel is written at one point with relative indices
(``a[-1, 0] + a[1, 0]``). `numba.stencil` turns it into a loop nest over the
interior: its ``StencilFunc._stencil_wrapper`` types the kernel, makes the
relative indices absolute (folding constants such as ``a[1 + 0, 0]`` or
``t = 1; a[t, 0]``), infers the neighbourhood, rejects misuse (assigning to
an input array, ...), writes the loop skeleton as Python text, turns it into
Numba IR and splices the kernel's IR into it, then compiles the result with
``compiler.compile_ir``. This module runs all of that unchanged, so a
streamjit stencil means exactly what a `numba.stencil` means and raises the
same errors, and replaces only the last step: the spliced IR is compiled by
streamjit's pipeline (`pipeline.compiler_for`), whose passes stream the
stores to the output (by default with ``threshold="auto"``).

Those passes stream stores to array *parameters*, so the loop nest is always
generated with the output as a parameter (``out0``): when the caller passes
no ``out=``, the output is allocated here, C-contiguous with the dtype
`numba.stencil` infers, and its border (everything outside the loop nest) is
set to ``cval`` (0 by default), which is what `numba.stencil`'s own
generated code does when it allocates. With ``out=``, the whole output is
set to ``cval`` first only when ``cval`` was given, by the generated code.

Called from Python, `numba.stencil` compiles its loop nest again on every
call; here each loop nest is compiled once per argument types, output type
and neighbourhood, and kept. With ``parallel=True`` the loop over the first
dimension becomes a `prange`. Called with Dask arrays, a stencil returns a
lazy Dask array (`dask.py`). Not supported yet: calling a streamjit stencil
from inside jitted code (call the `numba.stencil` kernel there).

The private parts of ``StencilFunc`` this relies on (its contexts, its
``_stencil_wrapper`` with ``compiler.compile_ir`` captured) go through
`numba_internals.stencils`; they and the layout of the IR it generates are
why Numba is pinned to the releases tested (`kernel/versions.py`).
"""

from dataclasses import dataclass
from types import SimpleNamespace

import numba
import numpy as np
from numba.core import compiler, ir, ir_utils, types
from numba.core.cpu import ParallelOptions
from numba.core.errors import NumbaValueError, TypingError
from numba.extending import typeof_impl
from numba.np.numpy_support import as_dtype

from ..codegen.placement import placed_apart
from ..dask import is_dask_array, stencil_on_dask
from ..kernel.disabled import jit_disabled, python_stencil
from ..backend.library import stream_code_libraries
from ..numba_internals.dispatch import Reducible
from ..numba_internals.ir import rebuild_definitions
from ..numba_internals.stencils import loop_nest, stencil_func, target_context, typing_context
from ..options import did_you_mean, resolved, validate_options
from ..kernel.pipeline import compiler_for
from ..plan import METADATA_KEY, StreamResult
from ..inspection.report import build_report

STREAM_OPTIONS = ("stream_stores", "stream_loads", "threshold", "prefetch_distance", "prefetch_hint", "parallel")
NUMBA_STENCIL_OPTIONS = ("cval", "standard_indexing", "neighborhood")  # what numba.stencil accepts


def stencil(func_or_mode="constant", **options):
    """`numba.stencil`, its loop nest compiled with streamed stores to the output.

    Used as `numba.stencil` is: ``@stencil``, ``@stencil(cval=0.0, ...)``,
    ``@stencil("constant", ...)`` or ``stencil(kernel, ...)``. The kernel is
    written at one point with relative indices (``a[-1, 0] + a[1, 0]``); the
    results (values, dtype, border) are `numba.stencil`'s.

    Parameters
    ----------
    func_or_mode : function or "constant", default "constant"
        The kernel, or the border mode (`numba.stencil` knows only "constant").
    cval : scalar, default 0
        The value of the output's border (where the neighbourhood leaves the
        input), as `numba.stencil`.
    neighborhood : tuple of (low, high) per dimension, optional
        The relative indices the kernel reads, as `numba.stencil`; also
        accepted per call (``kernel(a, neighborhood=...)``).
    standard_indexing : list of str, optional
        Parameters indexed absolutely, as `numba.stencil`.
    stream_stores : bool, default True
        Stream the stores to the output.
    stream_loads : bool, str or list of str, default False
        Input arrays whose loads are streamed (see `stream_kernel`).
    threshold : "auto", int or None, default "auto"
        Stream only when the arrays hold more bytes than this (see
        `stream_kernel`); None: always.
    prefetch_distance : int or None, default None
        Bytes ahead to prefetch (0: none); None: the machine profile's.
    prefetch_hint : {"t0", "t1", "t2", "nta", "none"} or None, default None
        The prefetch hint; None: the machine profile's.
    parallel : bool, default False
        The loop over the first dimension is a `prange` on Numba's threads.

    Returns
    -------
    StreamStencil
        Call it as ``kernel(*arrays, out=None, neighborhood=None)``: without
        ``out=`` the output is allocated, its border set to ``cval``. Each
        loop nest is compiled once per argument types. ``stream_report()``
        and ``inspect_llvm()`` show the latest loop nest (the output is named
        ``out0``). With Dask arrays it returns a lazy Dask array. It pickles
        (function and options) with the standard `pickle`. It cannot be
        called from jitted code yet (use `numba.stencil` there).

    Examples
    --------
    >>> import numpy as np, streamjit as sj
    >>> @sj.stencil(cval=-1.0)
    ... def average(a):
    ...     return 0.25 * (a[0, 1] + a[0, -1] + a[1, 0] + a[-1, 0])
    >>> average(np.ones((3, 4)))
    array([[-1., -1., -1., -1.],
           [-1.,  1.,  1., -1.],
           [-1., -1., -1., -1.]])
    >>> average.stream_report().arrays["out0"].nt_vector_stores > 0
    True
    """
    # (NUMBA_DISABLE_JIT=1: a Python function running the kernel at each point)
    make = (lambda func, mode: python_stencil(func, options)) if jit_disabled() else \
        (lambda func, mode: StreamStencil(func, mode, options))
    if isinstance(func_or_mode, str):
        return lambda func: make(func, func_or_mode)
    return make(func_or_mode, "constant")


@dataclass(frozen=True)
class LoopNest:
    """One compiled loop nest: its compile result, the function numba.stencil
    generated (whose parameters name the arrays), the output dtype and the
    neighbourhood, as ``((lo, hi), ...)`` per dimension."""

    cres: object
    py_func: object
    dtype: np.dtype
    neighborhood: tuple


class StreamStencil(Reducible):
    """A stencil kernel; call it as ``kernel(*arrays, out=None, neighborhood=None)``
    (``neighborhood`` at call time is a streamjit extension)."""

    def __init__(self, func, mode, options):
        self.py_func = func
        self.mode = mode
        self.options = dict(options)  # as given, to rebuild the stencil when unpickled
        for name in options:
            if name not in STREAM_OPTIONS + NUMBA_STENCIL_OPTIONS:  # numba.stencil's error, with a suggestion
                raise NumbaValueError(f"Unknown stencil option {name}"
                                      f"{did_you_mean(name, STREAM_OPTIONS + NUMBA_STENCIL_OPTIONS)}")
        stencil_options = {k: v for k, v in options.items() if k not in STREAM_OPTIONS}
        stream = {"stream_stores": True, "stream_loads": False, "threshold": "auto", "prefetch_distance": None,
                  "prefetch_hint": None, "parallel": False, **{k: v for k, v in options.items() if k in STREAM_OPTIONS}}
        # numba.stencil checks the mode and its options, and builds the kernel's IR
        self._numba = numba.stencil(mode, **stencil_options)(func)
        self._parallel = bool(stream.pop("parallel"))
        stream_options, _ = validate_options(func, numba_options={"parallel": self._parallel}, **stream)
        self._pipeline = compiler_for(stream_options)
        self._stencil_funcs = {}  # (neighborhood, output set to cval in the loop nest) -> StencilFunc
        self._loop_nests = {}     # (argument types, out type, neighborhood) -> LoopNest
        self.__name__ = func.__name__
        self.__doc__ = func.__doc__

    @property
    def relative_params(self):
        """Parameter names, None where the parameter is standard-indexed."""
        standard = self._numba.options.get("standard_indexing", [])
        return [None if p in standard else p for p in self._numba.kernel_ir.arg_names]

    def __call__(self, *args, out=None, neighborhood=None):
        if args and is_dask_array(args[0]):
            return self._call_on_dask(args, out, neighborhood)
        nest = self._loop_nest(tuple(numba.typeof(a) for a in args), None if out is None else numba.typeof(out),
                               _as_neighborhood(neighborhood))
        if out is None:
            # (apart from the inputs modulo a page: allocated alike, the
            # output trails them by a few bytes and the loops run plain)
            out = placed_apart(np.empty(args[0].shape, nest.dtype), tuple(a for a in args if isinstance(a, np.ndarray)))
            _fill_border(out, nest.neighborhood, self._numba.options.get("cval", 0))
        nest.cres.entry_point(*args, out)
        return out

    def _loop_nest(self, argtys, out_type, neighborhood):
        key = (argtys, out_type, neighborhood)
        if key not in self._loop_nests:
            self._loop_nests[key] = self._compile(argtys, out_type, neighborhood)
        return self._loop_nests[key]

    def _stencil_func(self, neighborhood, cval_in_loop_nest):
        """numba.stencil's StencilFunc for this kernel, with ``neighborhood``
        (None: its own), and without ``cval`` when the output is allocated
        here (numba.stencil's loop nest would set all of it to ``cval``)."""
        key = (neighborhood, cval_in_loop_nest)
        if key not in self._stencil_funcs:
            options = dict(self._numba.options)
            if not cval_in_loop_nest:
                options.pop("cval", None)
            if neighborhood is not None:
                options["neighborhood"] = neighborhood
            self._stencil_funcs[key] = stencil_func(self._numba, self.mode, options)
        return self._stencil_funcs[key]

    def _generate(self, argtys, out_type, neighborhood):
        """numba.stencil's loop nest for these types, not compiled: ``(IR,
        its argument types, output dtype, neighbourhood)``."""
        func = self._stencil_func(neighborhood, out_type is not None)
        # the steps of StencilFunc.__call__, private Numba API: see functions
        # defined since, type the kernel, build the loop nest
        typing_context(func).refresh()
        return_type, typemap, calltypes = func.get_return_type(argtys)
        if out_type is None:
            _check_cval(self._numba, return_type.dtype)
            out_type = types.Array(return_type.dtype, return_type.ndim, "C")
        func_ir, loop_types = loop_nest(func, out_type, return_type, typemap, calltypes, argtys)
        _fold_loop_bounds(func_ir)
        return (func_ir, tuple(loop_types), as_dtype(return_type.dtype),
                tuple(tuple(bounds) for bounds in func.neighborhood))

    def _compile(self, argtys, out_type, neighborhood):
        func_ir, loop_types, dtype, neighborhood = self._generate(argtys, out_type, neighborhood)
        flags = compiler.DEFAULT_FLAGS.copy()  # numba.stencil's flags
        if self._parallel:
            _outer_loop_in_parallel(func_ir)
            flags.auto_parallel = ParallelOptions(True)
        targetctx = target_context(self._numba)  # (the contexts numba.stencil compiles with)
        options = resolved(self._pipeline.stream_options)  # "auto" is read at the first call, not at decoration
        if options is not self._pipeline.stream_options:
            self._pipeline = compiler_for(options)
        with stream_code_libraries(targetctx.codegen(), func_ir.func_id.func_qualname):
            cres = compiler.compile_ir(typing_context(self._numba), targetctx, func_ir, loop_types, None, flags, {},
                                       pipeline_class=self._pipeline)
        return LoopNest(cres, func_ir.func_id.func, dtype, neighborhood)

    def _call_on_dask(self, args, out, neighborhood):
        if out is not None:
            raise ValueError(f"stencil {self.__name__}: out= is not supported with dask arrays")
        samples = tuple(numba.typeof(np.ones((1,) * a.ndim, a.dtype) if is_dask_array(a) else a) for a in args)
        _, _, dtype, neighborhood = self._generate(samples, None, _as_neighborhood(neighborhood))
        return stencil_on_dask(self, args, neighborhood, dtype)

    def pickled_states(self):
        """Pickled as the kernel function and the options, with Numba's
        pickler whatever pickler is used (the standard one too): the function
        by value where it cannot be imported under its own name, which is
        always the case when the decorator rebinds that name to the stencil
        (``@sj.stencil def st``, in ``__main__`` or a module); compiled again
        on first use (Dask workers, ``multiprocessing`` processes)."""
        return dict(py_func=self.py_func, mode=self.mode, options=self.options)

    @classmethod
    def from_pickled_states(cls, py_func, mode, options):
        return cls(py_func, mode, options)

    def _compiled(self, signature):
        """The latest loop nest, or the one whose argument types (the
        arrays, then the output) are ``signature``."""
        if not self._loop_nests:
            raise ValueError(f"stencil {self.__name__} has not been called yet")
        if signature is None:
            return list(self._loop_nests.values())[-1]
        return {nest.cres.signature.args: nest for nest in self._loop_nests.values()}[tuple(signature)]

    def inspect_llvm(self, signature=None):
        """The LLVM IR of a compiled loop nest (the latest, or the one for
        ``signature``), after the non-temporal rewrite."""
        library = self._compiled(signature).cres.library
        return getattr(library, "streamed_llvm_ir", None) or library.get_llvm_str()

    def stream_report(self, signature=None, verbose=False):
        """The `StreamReport` (see `stream_kernel`) of a compiled loop nest
        (the latest, or the one for ``signature``; printed with the table of
        instructions under ``verbose``). Arrays are named as the parameters
        of numba.stencil's loop nest: the kernel's, then the output's."""
        nest = self._compiled(signature)
        sig = nest.cres.signature.args
        result = nest.cres.metadata.get(METADATA_KEY) or StreamResult()
        # what build_report reads of a dispatcher, for this one compile
        # (no per-call record: the stencil's nest is called from a wrapper of its own)
        compiled = SimpleNamespace(overloads={sig: nest.cres}, py_func=nest.py_func, stream_result=lambda _: result,
                                   stream_options=self._pipeline.stream_options, stream_calls=lambda _: None,
                                   stream_fallbacks=lambda _: None)
        report = build_report(compiled, sig, self.inspect_llvm(sig), nest.cres.library.get_asm_str())
        report.verbose = verbose
        return report


@typeof_impl.register(StreamStencil)
def _not_in_jitted_code(stencil, context):
    """A stencil named in jitted code: say why it cannot be typed there, and
    what to call instead (else Numba says only "Untyped global name")."""
    raise TypingError(f"streamjit stencil {stencil.__name__!r} cannot be called from jitted code yet; there, call "
                      f"numba.stencil's kernel: numba.stencil({stencil.__name__}.py_func, ...)")


def _as_neighborhood(neighborhood):
    """A neighbourhood given at call time, hashable; None stays None."""
    return None if neighborhood is None else tuple(tuple(int(v) for v in bounds) for bounds in neighborhood)


def _check_cval(numba_stencil, dtype):
    """numba.stencil's check of ``cval`` against the output dtype, which its
    loop nest makes only where it allocates the output."""
    if "cval" in numba_stencil.options:
        cval_type = numba.typeof(numba_stencil.options["cval"])
        if not typing_context(numba_stencil).can_convert(cval_type, dtype):
            raise NumbaValueError("cval type does not match stencil return type.")


def _fill_border(out, neighborhood, cval):
    """``cval`` everywhere the loop nest does not write: per dimension, the
    first ``-lo`` and the last ``hi`` indices (as numba.stencil's loops run
    ``range(-min(0, lo), n - max(0, hi))``)."""
    for dim, (lo, hi) in enumerate(neighborhood):
        index = [slice(None)] * out.ndim
        index[dim] = slice(None, max(0, -lo))
        out[tuple(index)] = cval
        index[dim] = slice(max(0, out.shape[dim] - max(0, hi)), None)
        out[tuple(index)] = cval


def _outer_loop_in_parallel(func_ir):
    """The loop over the first dimension becomes a `prange`. numba.stencil's
    skeleton computes that loop's range, and no other, in the function's
    entry block (the loops inside and the kernel's own come later)."""
    entry = func_ir.blocks[min(func_ir.blocks)]
    (stmt,) = [s for s in entry.body
               if isinstance(s, ir.Assign) and isinstance(s.value, ir.Global) and s.value.value is range]
    stmt.value = ir.Global("prange", numba.prange, stmt.loc)


def _fold_loop_bounds(func_ir):
    """numba.stencil's skeleton writes each loop as ``range(-min(0, lo),
    n - max(0, hi))`` with constant ``lo`` and ``hi``. Left as calls, LLVM
    folds them too late to prove the loop index nonnegative: every access
    kept Numba's negative-index wraparound and the plain loop vectorized
    into gathers (a 1000 x 1000 float64 5-point stencil took 2.2x as long).
    Calls of ``min`` and ``max`` on integer constants become their value."""
    rebuild_definitions(func_ir)  # (after numba.stencil's renaming)
    for block in func_ir.blocks.values():
        for stmt in block.body:
            call = stmt.value if isinstance(stmt, ir.Assign) else None
            if not (isinstance(call, ir.Expr) and call.op == "call" and not call.kws):
                continue
            name = ir_utils.guard(ir_utils.find_callname, func_ir, call)
            args = [ir_utils.guard(ir_utils.find_const, func_ir, arg) for arg in call.args]
            if name in (("min", "builtins"), ("max", "builtins")) and len(args) > 1 \
                    and all(type(a) is int for a in args):
                stmt.value = ir.Const(min(args) if name[0] == "min" else max(args), call.loc)
