"""The public API's docstrings (issue 21): Numba-style, every option with
its default and an example, and the examples run as written."""

import doctest
import importlib
import inspect

import pytest

import streamjit as sj

MODULES = ["streamjit.api", "streamjit.dispatcher", "streamjit.stencil", "streamjit.dropins"]


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
