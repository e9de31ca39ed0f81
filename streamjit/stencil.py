"""`streamjit.stencil`: `numba.stencil`'s API, compiled as a streamed loop nest.

A stencil kernel is written at one point with relative indices
(``a[-1, 0] + a[1, 0]``). This module turns the kernel's syntax tree into a
plain loop nest over the interior, the way `numba.stencil` defines it:

    def kernel__stencil(a, b, out):
        for i0 in range(-min(0, lo0), a.shape[0] - max(0, hi0)):
            for i1 in range(-min(0, lo1), a.shape[1] - max(0, hi1)):
                <kernel body, a[e0, e1] -> a[i0 + e0, i1 + e1]>
                out[i0, i1] = <returned value>

and compiles it with `stream_kernel` (streamed stores to ``out`` by default,
``threshold="auto"``), so the interior gets the aligned loop, vector
non-temporal stores and the fence. The border is filled separately, in
Python, with ``cval``, exactly as `numba.stencil` does: when it allocates the
output, the border is ``cval`` (0 by default); with ``out=``, the whole
output is set to ``cval`` first only when ``cval`` was given.

The neighbourhood is inferred from constant relative indices or taken from
``neighborhood=``; arrays named in ``standard_indexing`` are indexed as
written. The output dtype is what `numba.stencil` infers (its own type
inference is used). Called with Dask arrays, it returns a lazy Dask array
(`dask.py`). Not supported yet: calling a streamjit stencil from inside
jitted code (call the `numba.stencil` kernel there, or pass arrays from
Python).
"""

import ast
import copy

import numba
import numpy as np

from .dask import is_dask_array, stencil_on_dask
from .dispatcher import make_dispatcher
from .errors import StreamConfigError
from .passes.source import HELPERS_NAME, build_function, function_tree
from .typing import intrinsics

_INDEX = "__streamjit_i{}"
_VALUE = "__streamjit_value"
_OPTIONS = ("cval", "neighborhood", "standard_indexing")


def stencil(func_or_mode="constant", **options):
    """Decorator, as `numba.stencil`: ``@stencil`` or ``@stencil(cval=0, ...)``.

    Extra options: ``stream_stores`` (default True: the output is streamed),
    ``stream_loads``, ``threshold`` (default ``"auto"``), ``prefetch_distance``,
    ``parallel`` (the outermost loop becomes a `prange` on worker threads).
    """
    if callable(func_or_mode):
        return StreamStencil(func_or_mode, "constant", options)
    if func_or_mode != "constant":
        raise ValueError(f"Unsupported mode style {func_or_mode}")
    return lambda func: StreamStencil(func, func_or_mode, options)


def _constant(node):
    """The integer value of ``node`` if it is an integer literal (maybe negated)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _constant(node.operand)
        return None if inner is None else (-inner if isinstance(node.op, ast.USub) else inner)
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def _components(subscript):
    index = subscript.slice
    return list(index.elts) if isinstance(index, ast.Tuple) else [index]


class _Absolute(ast.NodeTransformer):
    """Relative subscripts of the stencil's arrays become absolute ones."""

    def __init__(self, relative):
        self.relative = relative

    def visit_Subscript(self, node):
        self.generic_visit(node)
        if not (isinstance(node.value, ast.Name) and node.value.id in self.relative):
            return node
        parts = []
        for dim, offset in enumerate(_components(node)):
            here = ast.Name(id=_INDEX.format(dim), ctx=ast.Load())
            value = _constant(offset)
            parts.append(here if value == 0 else ast.BinOp(left=here, op=ast.Add(), right=offset))
        node.slice = parts[0] if len(parts) == 1 else ast.Tuple(elts=parts, ctx=ast.Load())
        return node


class _ReturnsToBreaks(ast.NodeTransformer):
    """``return x`` -> ``value = x; break`` (inside a one-trip loop)."""

    def visit_Return(self, node):
        assign = ast.Assign(targets=[ast.Name(id=_VALUE, ctx=ast.Store())], value=node.value)
        return [ast.copy_location(assign, node), ast.copy_location(ast.Break(), node)]

    def visit_FunctionDef(self, node):
        return node


class StreamStencil:
    """A stencil kernel; call it as ``kernel(*arrays, out=None, neighborhood=None)``."""

    def __init__(self, func, mode, options, tree=None):
        stream = {k: options.pop(k) for k in ("stream_stores", "stream_loads", "threshold", "prefetch_distance",
                                               "parallel") if k in options}
        unknown = sorted(set(options) - set(_OPTIONS))
        if unknown:
            raise StreamConfigError(f"unknown stencil option {unknown[0]!r}")
        self.py_func = func
        self.mode = mode
        self.options = options
        self._stream_options = {"stream_stores": True, "threshold": "auto", **stream}
        self._tree = tree if tree is not None else function_tree(func)
        self._all_options = {**options, **stream}
        self._params = [a.arg for a in self._tree.args.args]
        standard = options.get("standard_indexing", ())
        standard = (standard,) if isinstance(standard, str) else tuple(standard or ())
        if self._params and self._params[0] in standard:
            raise ValueError("The first argument to a stencil kernel must use relative indexing, not standard "
                             "indexing.")
        unknown_names = [n for n in standard if n not in self._params]
        if unknown_names:
            raise ValueError(f"Standard indexing requested for an array name not present in the stencil kernel "
                             f"definition: {unknown_names[0]}")
        if "out" in self._params:
            raise ValueError("Cannot use the reserved word 'out' in stencil kernels.")
        self._relative = [p for p in self._params if p not in standard]
        self._numba_stencil = numba.stencil(func, **options)
        self._loops = {}      # neighborhood -> dispatcher
        self._dtypes = {}     # argument types -> output dtype
        self.__name__ = func.__name__
        self.__doc__ = func.__doc__

    # -- neighbourhood and generated loop nest ---------------------------------

    def _inferred_neighborhood(self, ndim):
        bounds = [[0, 0] for _ in range(ndim)]
        seen = False
        for node in ast.walk(self._tree):
            if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) \
                    and node.value.id in self._relative:
                parts = _components(node)
                if len(parts) != ndim:
                    raise ValueError(f"stencil kernel {self.__name__}: '{node.value.id}' is indexed with "
                                     f"{len(parts)} indices but the arrays have {ndim} dimensions")
                for dim, part in enumerate(parts):
                    value = _constant(part)
                    if value is None:
                        raise ValueError("stencil kernel index is not constant, 'neighborhood' option required")
                    bounds[dim] = [min(bounds[dim][0], value), max(bounds[dim][1], value)]
                seen = True
        if not seen:
            raise ValueError("Stencil kernel with no accesses to relatively indexed arrays.")
        return tuple(tuple(b) for b in bounds)

    def _loop_nest_tree(self, neighborhood):
        kernel = copy.deepcopy(self._tree)
        body = [_Absolute(set(self._relative)).visit(stmt) for stmt in kernel.body]
        ndim = len(neighborhood)
        index = ast.Tuple(elts=[ast.Name(id=_INDEX.format(d), ctx=ast.Load()) for d in range(ndim)], ctx=ast.Load())
        target = ast.Subscript(value=ast.Name(id="out", ctx=ast.Load()),
                               slice=index.elts[0] if ndim == 1 else index, ctx=ast.Store())
        returns = [n for n in ast.walk(ast.Module(body=body, type_ignores=[])) if isinstance(n, ast.Return)]
        if len(returns) == 1 and body and body[-1] is returns[0]:
            body[-1] = ast.copy_location(ast.Assign(targets=[target], value=returns[0].value), returns[0])
        else:
            for loop in ast.walk(ast.Module(body=body, type_ignores=[])):
                if isinstance(loop, (ast.For, ast.While)) and any(isinstance(n, ast.Return) for n in ast.walk(loop)):
                    raise StreamConfigError(f"stencil kernel {self.__name__}: 'return' inside a loop is not "
                                            "supported")
            once = ast.For(target=ast.Name(id="__streamjit_once", ctx=ast.Store()),
                           iter=ast.Call(func=ast.Name(id="range", ctx=ast.Load()),
                                         args=[ast.Constant(value=1)], keywords=[]),
                           body=[s for stmt in body for s in _as_list(_ReturnsToBreaks().visit(stmt))], orelse=[])
            body = [ast.copy_location(once, kernel.body[0]),
                    ast.copy_location(ast.Assign(targets=[target], value=ast.Name(id=_VALUE, ctx=ast.Load())),
                                      kernel.body[-1])]
        first = self._params[0]
        for dim in reversed(range(ndim)):
            lo, hi = neighborhood[dim]
            stop = ast.BinOp(left=ast.Subscript(value=ast.Attribute(value=ast.Name(id=first, ctx=ast.Load()),
                                                                     attr="shape", ctx=ast.Load()),
                                                 slice=ast.Constant(value=dim), ctx=ast.Load()),
                             op=ast.Sub(), right=ast.Constant(value=max(0, hi)))
            parallel = dim == 0 and self._stream_options.get("parallel")
            loop_function = (ast.Attribute(value=ast.Name(id=HELPERS_NAME, ctx=ast.Load()), attr="prange",
                                           ctx=ast.Load()) if parallel else ast.Name(id="range", ctx=ast.Load()))
            loop = ast.For(target=ast.Name(id=_INDEX.format(dim), ctx=ast.Store()),
                           iter=ast.Call(func=loop_function,
                                         args=[ast.Constant(value=-min(0, lo)), stop], keywords=[]),
                           body=body, orelse=[])
            body = [ast.copy_location(loop, kernel)]
        kernel.name = f"{self.__name__}__stencil"
        kernel.args.args.append(ast.arg(arg="out"))
        kernel.body = body
        kernel.decorator_list = []
        ast.fix_missing_locations(kernel)
        return kernel

    def _dispatcher(self, neighborhood):
        if neighborhood not in self._loops:
            tree = self._loop_nest_tree(neighborhood)
            loop_nest = build_function(self.py_func, copy.deepcopy(tree), intrinsics)
            self._loops[neighborhood] = make_dispatcher(loop_nest, **self._stream_options)
        return self._loops[neighborhood]

    # -- calls ----------------------------------------------------------------

    def _output_dtype(self, args):
        argtys = tuple(numba.typeof(a) for a in args)
        if argtys not in self._dtypes:
            self._numba_stencil._typingctx.refresh()
            real_ret = self._numba_stencil.get_return_type(argtys)[0]
            self._dtypes[argtys] = numba.np.numpy_support.as_dtype(real_ret.dtype)
        return self._dtypes[argtys]

    @property
    def relative_params(self):
        """Parameter names, None where the parameter is standard-indexed."""
        return [p if p in self._relative else None for p in self._params]

    def __call__(self, *args, out=None, neighborhood=None):
        if len(args) != len(self._params):
            raise TypeError(f"{self.__name__}() takes {len(self._params)} arrays, {len(args)} given")
        first = args[0]
        if is_dask_array(first):
            return self._call_on_dask(args, out, neighborhood)
        if not isinstance(first, np.ndarray):
            raise ValueError("The first argument to a stencil kernel must be the primary input array.")
        for name, arg in zip(self._params[1:], args[1:]):
            if name in self._relative and isinstance(arg, np.ndarray):
                if arg.ndim != first.ndim:
                    raise ValueError("Secondary stencil array does not have same number of dimensions as the first "
                                     "stencil input.")
                if any(s < f for s, f in zip(arg.shape, first.shape)):
                    raise ValueError("Secondary stencil array has some dimension smaller the same dimension in the "
                                     "first stencil input.")
        neighborhood = self._neighborhood(neighborhood, first.ndim)
        cval = self.options.get("cval", 0)
        if out is None:
            out = np.empty(first.shape, self._output_dtype(args))
            for dim, (lo, hi) in enumerate(neighborhood):
                edge = [slice(None)] * first.ndim
                edge[dim] = slice(None, -min(0, lo))
                out[tuple(edge)] = cval
                edge[dim] = slice(first.shape[dim] - max(0, hi), None)
                out[tuple(edge)] = cval
        elif "cval" in self.options:
            out[...] = cval
        self._dispatcher(neighborhood)(*args, out)
        return out

    def _neighborhood(self, given, ndim):
        neighborhood = given if given is not None else self.options.get("neighborhood")
        if neighborhood is None:
            neighborhood = self._inferred_neighborhood(ndim)
        neighborhood = tuple(tuple(int(v) for v in bounds) for bounds in neighborhood)
        if len(neighborhood) != ndim:
            raise ValueError(f"{len(neighborhood)} dimensional neighborhood specified for {ndim} dimensional "
                             "input array")
        return neighborhood

    def _call_on_dask(self, args, out, neighborhood):
        if out is not None:
            raise ValueError(f"stencil {self.__name__}: out= is not supported with dask arrays")
        neighborhood = self._neighborhood(neighborhood, args[0].ndim)
        samples = tuple(np.ones((1,) * a.ndim, a.dtype) if is_dask_array(a) else a for a in args)
        return stencil_on_dask(self, args, neighborhood, self._output_dtype(samples))

    def __reduce__(self):
        """Pickled as the kernel, its syntax tree and its options (Dask
        workers rebuild and compile it on first use)."""
        return StreamStencil, (self.py_func, self.mode, dict(self._all_options), self._tree)

    def stream_report(self, neighborhood=None, signature=None):
        """The `StreamReport` of the compiled loop nest (see `stream_kernel`)."""
        if not self._loops:
            raise ValueError(f"stencil {self.__name__} has not been called yet")
        key = neighborhood if neighborhood is not None else next(iter(self._loops))
        return self._loops[key].stream_report(signature)


def _as_list(result):
    return result if isinstance(result, list) else [result]
