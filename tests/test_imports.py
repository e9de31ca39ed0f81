"""The package's import graph: module-level imports between streamjit's
modules form no cycle (a cycle works only in the order that happens to
import it, and `import streamjit` fails in another), and the bottom floor
(`machine.py`: facts and the profile) imports nothing of streamjit's but its
warning class. Read statically from the sources, as a reviewer's scan does."""

import ast
from pathlib import Path

import streamjit

PACKAGE = Path(streamjit.__file__).parent


def module_name(path):
    parts = ("streamjit",) + path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph():
    """``{module: modules it imports at module level}`` within streamjit."""
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        edges = set()
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
                target = ".".join(base + ([node.module] if node.module else [])) if node.level else node.module
                for alias in node.names:
                    edges.add(f"{target}.{alias.name}" if f"{target}.{alias.name}" in paths else target)
            elif isinstance(node, ast.Import):
                edges.update(alias.name for alias in node.names)
        graph[name] = {e for e in edges if e in paths and e != name}
    return graph


def cycles(graph):
    found, state = [], {}

    def visit(node, stack):
        state[node] = "open"
        stack.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == "open":
                found.append(stack[stack.index(target):] + [target])
            elif target not in state:
                visit(target, stack)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    return found


def test_no_import_cycle():
    assert cycles(import_graph()) == []


def test_the_scan_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c", "a"]]


def test_the_bottom_floor_imports_only_the_warning_class():
    assert import_graph()["streamjit.machine"] == {"streamjit.errors"}


def test_comments_cite_scripts_and_cpus_not_issues_or_sessions():
    """A reader of the code cannot follow "issue 27" or "session 33": a
    measured number cites the bench script and the CPU."""
    import re

    cited = [f"{p.relative_to(PACKAGE)}:{n}" for p in PACKAGE.rglob("*.py")
             for n, line in enumerate(p.read_text().splitlines(), 1)
             if re.search(r"\b(issue|session)s? \d", line, re.IGNORECASE)]
    assert cited == []


MAX_LINES = 450


def test_no_module_is_longer_than_a_reader_takes_in():
    """Every module of streamjit has at most `MAX_LINES` lines: a longer
    one holds more than one job, and is split along them."""
    lengths = {str(p.relative_to(PACKAGE)): len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py")}
    assert {name: n for name, n in lengths.items() if n > MAX_LINES} == {}
