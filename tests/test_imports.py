"""The package's import graph: module-level imports between streamjit's
modules form no cycle (a cycle works only in the order that happens to
import it, and `import streamjit` fails in another; every module is also
imported in fresh interpreters, alone and in two orders), and the floors of
the package, its folders and top-level modules, import only downwards
(`FLOORS`): the machine profile (`machine/profile.py`) imports nothing of
streamjit's but its warning class and the measured defaults, and
`protocol/`, what the code generation emits and the post-O3 stages read
back, nothing outside itself; at most ten modules stand loose in
`streamjit/`. Read statically from the sources, as a reviewer's scan does."""

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

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


def test_the_bottom_floor_imports_only_the_warning_class_and_the_measured_defaults():
    graph = import_graph()
    assert graph["streamjit.machine.profile"] == {"streamjit.errors", "streamjit.machine.cpu_defaults"}
    assert graph["streamjit.machine.cpu_defaults"] == set()


# The house from the bottom up: each room (a folder, a top-level module, and
# `passes/`'s two wings) stands on one floor, and imports only rooms on the
# floors below it; rooms on one floor stand side by side, neither importing
# the other. At the ground, what everything shares: the errors, the seam
# every private Numba name goes through (`numba_internals/`), what the code
# generation emits and the post-O3 stages read back (`protocol/`). Then what
# is known of the machine (`machine/`), the one reader of LLVM IR text
# (`llvm_text/`, read before and after O3) and the dumps and overrides of
# each step (`dump.py`, which warns); the code generation (run while
# Numba lowers), the plan and the stages on the LLVM module; the facts about
# Numba IR (`passes/analysis/`), the options, the build (`backend/`) and
# the report read back from the code (`inspection/`); the IR builders
# (`passes/rewrite/`); the passes; the kernel (`kernel/`: dispatcher,
# pipeline, cache); the front door (`api.py`) and the GPU kernels; the
# drop-ins and the measurements, which compile kernels; the CLI and the
# package's own `__init__.py` on top.
FLOORS = (("errors", "numba_internals", "protocol", "verify", "_version", "dask"),
          ("machine", "llvm_text", "dump"),
          ("codegen", "plan", "post_o3", "pre_o3"),
          ("passes.analysis", "options", "backend", "inspection"),
          ("passes.rewrite",),
          ("passes",),
          ("kernel",),
          ("api", "cuda"),
          ("dropins", "measure"),
          ("__main__", "__init__"))


def _room(module):
    """The room of a module: its wing of `passes/`, its folder under
    streamjit, or the top-level module itself (``__init__`` the package)."""
    parts = module.split(".")[1:] or ["__init__"]
    wing = ".".join(parts[:2])
    return wing if any(wing in names for names in FLOORS) else parts[0]


def _floor(module):
    room = _room(module)
    return next((i for i, names in enumerate(FLOORS) if room in names), None), room


def test_every_room_stands_on_a_floor():
    """A new folder or top-level module is placed on a floor (`FLOORS`)
    before the floors check can hold it to importing downwards."""
    assert sorted({room for module in import_graph() for floor, room in [_floor(module)] if floor is None}) == []


def test_the_floors_import_only_downwards():
    upwards = []
    for module, imported in import_graph().items():
        floor, room = _floor(module)
        for other in imported:
            other_floor, other_room = _floor(other)
            if room != other_room and other_floor >= floor:
                upwards.append(f"{module} -> {other}")
    assert sorted(upwards) == []


TOP_LEVEL_MODULES = 10


def test_the_top_level_holds_only_the_front_door_and_the_shared_vocabulary():
    """At most `TOP_LEVEL_MODULES` modules stand loose in `streamjit/`
    (the package, the CLI, the version, the errors, `api`, `options`,
    `plan`, `dump`, `verify`, `dask`); the rest lives in a folder whose name
    says what it holds."""
    loose = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(loose) <= TOP_LEVEL_MODULES, loose


def test_the_protocol_imports_nothing_of_streamjit_outside_itself():
    graph = import_graph()
    assert {other for module, imported in graph.items() if module.startswith("streamjit.protocol")
            for other in imported if not other.startswith("streamjit.protocol")} == set()


TESTS = Path(__file__).parent
BENCH = PACKAGE.parent / "bench"


def test_comments_cite_scripts_and_cpus_not_issues_or_sessions():
    """A reader of the code, its tests or its bench scripts cannot follow an
    issue or a session cited by its number: a measured number cites the
    bench script and the CPU, a test says what it tests. (An upstream
    project's issue, as Numba's "#7534", can be followed, and is not matched.)"""
    import re

    sources = [*PACKAGE.rglob("*.py"), *TESTS.rglob("*.py"), *BENCH.glob("*.py")]
    cited = [(str(p.relative_to(PACKAGE.parent)), n) for p in sources
             for n, line in enumerate(p.read_text().splitlines(), 1)
             if re.search(r"\b(issue|session)s? \d", line, re.IGNORECASE)]
    assert [f"{path}:{n}" for path, n in cited] == []


def _imported_modules(tree):
    """The top-level names of every module ``tree`` imports, at any depth
    (an import inside a function counts as much as one at the top)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            yield node.module.split(".")[0]


def test_no_test_module_imports_another():
    """What tests share lives in modules of their own (helpers.py, kernels.py
    and the other *_kernels.py): a test module imported by another runs its
    module-level code twice over, under two names where pytest imports it
    too, and ties the two files' edits together."""
    imports = {f"{p.relative_to(TESTS)}: {name}" for p in TESTS.rglob("test_*.py")
               for name in _imported_modules(ast.parse(p.read_text())) if name.startswith("test_")}
    assert sorted(imports) == []


def test_the_scan_finds_a_test_module_imported_anywhere():
    tree = ast.parse("import kernels\nfrom helpers import after\ndef f():\n    from test_codegen import compiled\n"
                     "import test_passes as p\nfrom . import test_x\n")
    assert sorted(name for name in _imported_modules(tree) if name.startswith("test_")) == ["test_codegen",
                                                                                             "test_passes"]


REVIEW_LINES = 400
HARD_LINES = 600
# Modules past REVIEW_LINES, each with its one job: a long module is a review
# trigger, not a failure. A docstring is never re-wrapped to fit a number.
LONG_MODULES = {
    "measure/calibration.py": "measures the machine profile's rows on this CPU and writes them",
    "passes/align_peel.py": "plans and applies the peel of each streamed loop to its vector alignment",
    "passes/legality.py": "Halide's per-nest rule for streamed stores, and what refusing one does",
    "passes/analysis/scan.py": "reads a function's stores, loads and loops into the facts every pass shares",
    "passes/array_stores.py": "rewrites slice stores of array expressions into element loops",
    "passes/rewrite/array_expressions.py": "decides which temporaries fuse into their consumers' loops",
    "kernel/dispatcher.py": "the StreamDispatcher: options, compile with the stream pipeline, report, inspect",
    "dropins/copy.py": "copyto and memcpy, streamed, threaded above glibc's threshold",
    "machine/profile.py": "the machine profile: its rows, their records and the profile file",
    "llvm_text/module.py": "the one reader and writer of LLVM IR text",
    "post_o3/pool.py": "the per-process pool of freed array blocks: its never-freed state, its functions, its cap",
    "inspection/report.py": "stream_report: what one signature's code does, read from the code, and how it prints",
}


def test_no_module_is_longer_than_a_reader_takes_in():
    """A module past `REVIEW_LINES` lines is listed in `LONG_MODULES` with its
    one job; none passes `HARD_LINES`, and none listed has shrunk back."""
    lengths = {str(p.relative_to(PACKAGE)): len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py")}
    assert {name: n for name, n in lengths.items() if n > REVIEW_LINES and name not in LONG_MODULES} == {}
    assert {name: n for name, n in lengths.items() if n > HARD_LINES} == {}
    assert {name for name in LONG_MODULES if lengths.get(name, 0) <= REVIEW_LINES} == set()


# Imports each module named on the command line into a fresh interpreter's
# streamjit, in that order ("order"), or each into a child forked before any
# of streamjit is imported ("alone": the third-party modules the package
# imports are loaded once, before the forks, so that a module costs
# milliseconds, not a Numba import). streamjit itself is a bare package
# until its own name comes: a submodule then loads only what it imports
# itself, not whatever ``streamjit/__init__.py`` happened to load first.
_IMPORTER = """
import importlib, importlib.util, os, sys, traceback, types
package_dir, mode, preload, *names = sys.argv[1:]

def load(name):
    if name != "streamjit":
        importlib.import_module(name)
        return
    spec = importlib.util.spec_from_file_location("streamjit", os.path.join(package_dir, "__init__.py"),
                                                  submodule_search_locations=[package_dir])
    spec.loader.exec_module(sys.modules["streamjit"])

def bare_package():
    package = types.ModuleType("streamjit")
    package.__path__ = [package_dir]
    sys.modules["streamjit"] = package

if mode == "order":
    bare_package()
    for name in names:
        load(name)
    sys.exit(0)
for module in preload.split(","):
    try:
        importlib.import_module(module)
    except ImportError:
        pass
failed = []
for name in names:
    pid = os.fork()
    if pid == 0:
        try:
            bare_package()
            load(name)
        except BaseException:
            traceback.print_exc()
            os._exit(1)
        os._exit(0)
    if os.waitpid(pid, 0)[1] != 0:
        failed.append(name)
print(" ".join(failed))
sys.exit(1 if failed else 0)
"""


def _third_party_imports():
    """The modules outside streamjit that its modules import at module level."""
    found = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ImportFrom) and not node.level:
                found.add(node.module)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
    return sorted(m for m in found if m.split(".")[0] != "streamjit")


def _import_in_fresh_interpreter(mode, names):
    return subprocess.run([sys.executable, "-c", _IMPORTER, str(PACKAGE), mode, ",".join(_third_party_imports()),
                           *names], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("order", ["sorted", "reversed"])
def test_every_module_imports_in_either_order(order):
    """All modules, in a fresh interpreter, imported in name order and in
    the reverse: a cycle that only works in the order the package happens
    to import it fails in one of them."""
    names = sorted(import_graph(), reverse=order == "reversed")
    done = _import_in_fresh_interpreter("order", names)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the modules are imported alone in forked children")
def test_every_module_imports_alone():
    """Each module, with nothing of streamjit imported before it but what it
    imports itself."""
    done = _import_in_fresh_interpreter("alone", sorted(import_graph()))
    assert done.returncode == 0, f"failed alone: {done.stdout}\n{done.stderr[-3000:]}"
