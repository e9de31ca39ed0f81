"""The public API's docstrings: Numba-style, every option with
its default and an example, and the examples run as written; and every
public top-level class and function of every public module has a docstring
(the API reference of docs/ is generated from them)."""

import ast
import doctest
import importlib
import inspect
from pathlib import Path

import pytest

import streamjit as sj

MODULES = ["streamjit.api", "streamjit.kernel.dispatcher", "streamjit.dropins.stencil", "streamjit.dropins.copy"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    results = doctest.testmod(importlib.import_module(name), optionflags=doctest.NORMALIZE_WHITESPACE)
    assert results.attempted > 0 and results.failed == 0


@pytest.mark.parametrize("function, options", [
    (sj.stream_kernel, ["stream_stores", "stream_loads", "threshold", "prefetch_distance", "prefetch_hint", "target",
                        "cache", "fastmath", "boundscheck", "nogil", "error_model", "locals", "parallel"]),
    (sj.stencil, ["func_or_mode", "cval", "neighborhood", "standard_indexing", "stream_stores", "stream_loads",
                  "threshold", "prefetch_distance", "prefetch_hint", "parallel"]),
    (sj.copyto, ["dst", "src", "casting", "where"]),
    (sj.memcpy, ["dst", "src"]),
    (sj.StreamDispatcher.stream_report, ["signature", "target", "cpu", "features"]),
    (sj.StreamDispatcher.stream_result, ["signature"]),
    (sj.StreamDispatcher.above_threshold, ["args"]),
    (sj.StreamDispatcher.inspect_llvm, ["signature", "target"]),
    (sj.StreamDispatcher.inspect_asm, ["signature", "target", "cpu", "features"]),
])
def test_every_option_is_documented_with_its_default(function, options):
    doc = inspect.getdoc(function)
    for section in ("Parameters\n----------", "Examples\n--------"):
        assert section in doc, section
    for option in options:
        assert f"{option} :" in doc or f"{option}," in doc or f"``{option}``" in doc, option
    for option, default in inspect.signature(function).parameters.items():
        if default.default is not inspect.Parameter.empty and default.default is not None and option in options:
            assert f"default {default.default!r}".replace("'", '"') in doc or \
                   f"default {default.default}" in doc, (option, default.default)


PACKAGE = Path(sj.__file__).parent


def public_modules():
    """Every module of the package whose dotted name has no part starting
    with an underscore (``__init__`` files stand for their package)."""
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        if not any(part.startswith("_") for part in parts):
            yield path, ".".join(("streamjit",) + parts)


def test_every_public_module_class_and_function_has_a_docstring():
    """Read from the sources (as a reviewer reads them, whatever a decorator
    returns): every module, and every top-level ``def`` and ``class`` whose
    name does not start with an underscore."""
    missing = []
    for path, module in public_modules():
        tree = ast.parse(path.read_text())
        if not ast.get_docstring(tree):
            missing.append(module)
        missing += [f"{module}.{node.name}" for node in tree.body
                    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                    and not node.name.startswith("_") and not ast.get_docstring(node)]
    assert not missing, f"{len(missing)} without a docstring: {', '.join(missing)}"
