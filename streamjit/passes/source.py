"""From a Python function to its syntax tree and back.

The stream pass rewrites the kernel's syntax tree, where loops, subscripts
and source lines are explicit, and hands Numba a new function built from the
rewritten tree. That function keeps the original's file name and line
numbers (Numba's errors and tracebacks point at the user's code), its module
globals (live, so helpers defined later in the module still resolve), its
closure values and defaults. The runtime helpers are passed in as one extra
closure variable, so the user's module namespace is never touched.
"""

import ast
import inspect
import textwrap
import types

from ..errors import StreamConfigError

HELPERS_NAME = "__streamjit__"


def function_tree(func):
    """The ``ast.FunctionDef`` of ``func``, with line numbers as in its file."""
    try:
        lines, first_line = inspect.getsourcelines(func)
    except (OSError, TypeError) as exc:
        raise StreamConfigError(
            f"cannot stream {func.__qualname__}: its source code is not available ({exc})"
        ) from None
    tree = ast.parse(textwrap.dedent("".join(lines)))
    ast.increment_lineno(tree, first_line - 1)
    node = tree.body[0]
    if not isinstance(node, ast.FunctionDef):
        raise StreamConfigError(f"cannot stream {func.__qualname__}: it is not a plain 'def' function")
    return node


def source_file(func):
    return func.__code__.co_filename


def build_function(original, tree, helpers):
    """Compile ``tree`` (a FunctionDef) into a function that behaves as
    ``original`` would with that body, with ``helpers`` bound to
    ``HELPERS_NAME``."""
    tree.decorator_list = []
    # (an original built here already has the helpers as a free variable)
    cells = dict(zip(original.__code__.co_freevars, original.__closure__ or ()))
    cells.pop(HELPERS_NAME, None)
    freevars = tuple(cells)
    factory = ast.FunctionDef(
        name="__streamjit_factory__",
        args=ast.arguments(
            posonlyargs=[], args=[ast.arg(arg=n) for n in (HELPERS_NAME, *freevars)],
            kwonlyargs=[], kw_defaults=[], defaults=[],
        ),
        body=[tree, ast.Return(value=ast.Name(id=tree.name, ctx=ast.Load()))],
        decorator_list=[],
        returns=None,
        **({"type_params": []} if "type_params" in ast.FunctionDef._fields else {}),
    )
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    ast.copy_location(factory, tree)
    code = compile(module, source_file(original), "exec")
    factory_code = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    make = types.FunctionType(factory_code, original.__globals__)
    func = make(helpers, *(cell.cell_contents for cell in cells.values()))
    func.__defaults__ = original.__defaults__
    func.__kwdefaults__ = original.__kwdefaults__
    func.__module__ = original.__module__
    func.__qualname__ = original.__qualname__
    func.__doc__ = original.__doc__
    return func
