"""Numba's private names are used in `streamjit/numba_internals/` only.

The rule, read from the sources (comments and docstrings are not code), for
every module of streamjit outside the seam:

1. no import of an underscore name from Numba, nor of a Numba module whose
   path has one (``from numba.core.runtime import _nrt_python``);
2. no assignment to an attribute of anything imported from Numba (a
   monkeypatch: ``compiler.compile_ir = ...``);
3. an underscore attribute (``x._y``, or ``getattr(x, "_y")``) never on
   something imported from Numba, and, where ``_y`` is a name Numba's
   sources have (any ``_y`` identifier in the installed Numba), only where
   streamjit defines ``_y`` itself (a function, class or assignment at
   module level or in a class body, or ``self._y = ...``); a class
   inheriting from Numba does not define the names its Numba ancestors
   have. (Other packages' private names, NumPy's or llvmlite's, are not
   this rule's business.)
4. in a class inheriting from Numba (directly or through the seam), no
   definition or ``self._y`` / ``super()._y`` use of a name its Numba
   ancestors have (their class attributes, and what their sources assign
   to ``self``): an override of Numba's private method, or its private
   state.

`ALLOWED` names the exceptions, with why. Below the scan, a contract test
per assumption of each seam module, against the installed Numba (CI runs
this file on every Numba release streamjit declares).
"""

import ast
import functools
import importlib
import inspect
import re
import textwrap
from pathlib import Path

import numba

import streamjit

PACKAGE = Path(streamjit.__file__).parent
SEAM = PACKAGE / "numba_internals"

ALLOWED = {
    "_replace": "namedtuple's public API",
    "_getframe": "CPython's sys._getframe",
    "_insert": "llvmlite's IRBuilder._insert (not Numba's): instructions llvmlite has no builder method for",
    "_implementation": "NumPy's function behind np.copyto's dispatch",
}
# Defined in Numba compiler passes: the pass protocol of Numba's documentation on custom pipelines.
PASS_PROTOCOL = {"_name"}


@functools.lru_cache(maxsize=1)
def numba_names():
    """The underscore names the installed Numba defines: its modules, and
    what its sources define or assign (``def _y``, ``class _y``, ``_y =``,
    ``x._y =``)."""
    root = Path(numba.__file__).parent
    names = {p.name.split(".")[0] for p in root.rglob("_*") if p.is_file()}
    defining = re.compile(r"(?:\bdef|\bclass)\s+(_[A-Za-z]\w*)|^\s*(_[A-Za-z]\w*)\s*(?::[^=\n]*)?=(?!=)"
                          r"|\.(_[A-Za-z]\w*)\s*=(?!=)", re.MULTILINE)
    for path in root.rglob("*.py"):
        names.update(n for match in defining.findall(path.read_text(errors="replace")) for n in match if n)
    return frozenset(names)


def _private(name):
    return name.startswith("_") and not name.startswith("__") and not name.endswith("_")


def _numba_module(name):
    return name is not None and (name == "numba" or name.startswith("numba."))


def _numba_bound(tree):
    """Names a module binds to Numba modules or objects by importing them."""
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names if _numba_module(a.name))
        elif isinstance(node, ast.ImportFrom) and not node.level and _numba_module(node.module):
            bound.update(a.asname or a.name for a in node.names)
    return bound


def _root(node):
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _attribute_uses(tree):
    """``(node, base, name, stored)`` for each ``x.name`` and ``getattr(x, "name")``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            yield node, node.value, node.attr, isinstance(node.ctx, (ast.Store, ast.Del))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "hasattr", "setattr", "delattr") and len(node.args) >= 2
              and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
            yield node, node.args[0], node.args[1].value, node.func.id in ("setattr", "delattr")


def _numba_ancestors(cls):
    return [k for k in cls.__mro__[1:] if _numba_module(k.__module__) or k.__module__.startswith(SEAM_MODULE)]


SEAM_MODULE = "streamjit.numba_internals"


def _names_of(numba_class):
    """The private names a Numba (or seam) class has: its class attributes,
    and what its source assigns to ``self``."""
    names = {n for n in vars(numba_class) if _private(n)}
    try:
        source = textwrap.dedent(inspect.getsource(numba_class))
    except (OSError, TypeError):
        return names
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and _root(node) == "self":
            names.add(node.attr) if _private(node.attr) else None
    return names


def _inherited(cls):
    """The private names ``cls`` has from its Numba ancestors (empty for a class of streamjit's own)."""
    names = set()
    if isinstance(cls, type):
        for ancestor in _numba_ancestors(cls):
            names |= _names_of(ancestor)
        if any(k.__module__.startswith("numba.core.compiler_machinery") for k in cls.__mro__):
            names -= PASS_PROTOCOL
    return names


def _classes(tree, namespace):
    """``(class node, the class, the private names it inherits from Numba)``."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            cls = namespace.get(node.name)
            yield node, cls, _inherited(cls)


def defined_names(tree, namespace):
    """The private names a module defines itself (see the rule, 3)."""
    names = {t.id for node in tree.body for t in _targets(node) if isinstance(t, ast.Name)}
    names |= {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                   ast.ClassDef))}
    for node, _, inherited in _classes(tree, namespace):
        own = {item.name for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))}
        own |= {t.id for item in node.body for t in _targets(item) if isinstance(t, ast.Name)}
        own |= {sub.attr for sub in ast.walk(node) if isinstance(sub, ast.Attribute)
                and isinstance(sub.ctx, ast.Store) and _root(sub) in ("self", "cls")}
        names |= own - inherited
    # (classes made inside functions, e.g. by a factory: their own attributes)
    names |= {sub.attr for sub in ast.walk(tree) if isinstance(sub, ast.Attribute)
              and isinstance(sub.ctx, ast.Store) and _root(sub) in ("self", "cls")
              and not any(sub.attr in inherited for _, _, inherited in _classes(tree, namespace))}
    return {n for n in names if _private(n)}


def _targets(node):
    if isinstance(node, ast.Assign):
        return [t for target in node.targets for t in ast.walk(target)]
    if isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        return [node.target]
    return []


def touches(source, namespace, defined):
    """Where ``source`` (a module's, its objects in ``namespace``) touches a
    private Numba name, by the rule above, ``defined`` being the private names
    streamjit defines; as ``"line: what"``."""
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and _numba_module(node.module):
            parts = node.module.split(".") + [a.name for a in node.names]
            if any(_private(p) for p in parts):
                found.append(f"{node.lineno}: from {node.module} import {', '.join(a.name for a in node.names)}")
        elif isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names
                      if _numba_module(a.name) and any(_private(p) for p in a.name.split("."))]
    bound, inherited_uses = _numba_bound(tree), {}
    for node, cls, inherited in _classes(tree, namespace):
        for item in node.body:
            for name in [item.name] if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) else \
                    [t.id for t in _targets(item) if isinstance(t, ast.Name)]:
                if name in inherited:
                    found.append(f"{item.lineno}: {node.name}.{name} (overrides Numba's)")
        for sub in ast.walk(node):
            if isinstance(sub, ast.Attribute) and sub.attr in inherited and (
                    _root(sub.value) in ("self", "cls") and isinstance(sub.value, ast.Name)
                    or isinstance(sub.value, ast.Call) and getattr(sub.value.func, "id", None) == "super"):
                inherited_uses[id(sub)] = f"{sub.lineno}: {node.name}: {ast.unparse(sub)} (Numba's)"
    for node, base, name, stored in _attribute_uses(tree):
        root = _root(base) if not isinstance(base, ast.Call) else None
        if id(node) in inherited_uses:
            found.append(inherited_uses[id(node)])
        elif stored and root in bound:
            found.append(f"{node.lineno}: {ast.unparse(node)} (assigns into Numba)")
        elif _private(name) and name not in ALLOWED and (root in bound or name not in defined
                                                          and name in numba_names()):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return sorted(set(found), key=lambda f: (int(f.split(":")[0]), f))


def _module_name(path):
    parts = ("streamjit",) + path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _outside_the_seam():
    for path in sorted(PACKAGE.rglob("*.py")):
        if SEAM not in path.parents:
            yield path, importlib.import_module(_module_name(path))


def test_only_the_seam_touches_numba_private_names():
    modules = [(path, path.read_text(), vars(module)) for path, module in _outside_the_seam()]
    defined = set().union(*(defined_names(ast.parse(source), namespace) for _, source, namespace in modules))
    found = [f"{path.relative_to(PACKAGE)}:{where}" for path, source, namespace in modules
             for where in touches(source, namespace, defined)]
    assert found == []


def test_the_seam_imports_nothing_of_streamjit():
    """So that every floor may use it (`tests/test_imports.py`, FLOORS)."""
    imported = {f"{path.name}: {node.module}" for path in SEAM.rglob("*.py")
                for node in ast.walk(ast.parse(path.read_text()))
                if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("streamjit"))}
    assert imported == set()


_NAMESPACE = {}


def _scan(source):
    namespace = dict(_NAMESPACE)
    exec(compile(source, "<scanned>", "exec"), namespace)  # noqa: S102 (the test's own snippets)
    tree = ast.parse(source)
    return touches(source, namespace, defined_names(tree, namespace))


def test_the_scan_finds_each_kind_of_touch():
    assert _scan("from numba.core.runtime import _nrt_python\n") == [
        "1: from numba.core.runtime import _nrt_python"]
    assert _scan("import numba.core.runtime._nrt_python\n") == ["1: import numba.core.runtime._nrt_python"]
    assert _scan("from numba.core import compiler\ndef f():\n    compiler.compile_ir = print\n") == [
        "3: compiler.compile_ir (assigns into Numba)"]  # (in a function: the snippets are run)
    assert _scan("from numba.core import compiler\nx = compiler._EarlyPipelineCompletion\n") == [
        "2: compiler._EarlyPipelineCompletion"]
    assert _scan("def f(codegen):\n    codegen._library_class = None\n") == ["2: codegen._library_class"]
    assert _scan("def f(a):\n    return getattr(a, '_ary', a)\n") == ["2: getattr(a, '_ary', a)"]
    source = ("from numba.core.codegen import JITCodeLibrary\n"
              "class L(JITCodeLibrary):\n"
              "    def _optimize_final_module(self):\n"
              "        return self._final_module\n")
    assert _scan(source) == ["3: L._optimize_final_module (overrides Numba's)", "4: L: self._final_module (Numba's)"]
    source = ("from numba.core.registry import CPUDispatcher\n"
              "class D(CPUDispatcher):\n"
              "    def compile(self, sig):\n"
              "        self._cache = None\n"
              "        return super()._rebuild\n")
    assert _scan(source) == ["4: D: self._cache (Numba's)", "5: D: super()._rebuild (Numba's)"]


def test_the_scan_lets_streamjit_use_its_own_private_names():
    source = ("import sys\n"
              "from numba.core.registry import CPUDispatcher\n"
              "_table = {}\n"
              "class D(CPUDispatcher):\n"
              "    def _warn(self):\n"
              "        self._given = set()\n"
              "        return self._given, sys._getframe(0), _table\n"
              "def f(kernel, builder):\n"
              "    kernel._warn(); builder._insert(None)\n"
              "    return kernel._given\n")
    assert _scan(source) == []


# ---- contract tests: each seam function against the installed Numba ----

import ctypes  # noqa: E402
import operator  # noqa: E402
import pickle  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

import llvmlite.binding as llvm  # noqa: E402
import llvmlite.ir as llir  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from numba.core import compiler, ir, ir_utils, types  # noqa: E402
from numba.core.caching import CompileResultCacheImpl  # noqa: E402
from numba.core.compiler_lock import global_compiler_lock  # noqa: E402
from numba.core.compiler_machinery import FunctionPass, register_pass  # noqa: E402
from numba.core.registry import cpu_target  # noqa: E402
from numba.core.untyped_passes import IRProcessing  # noqa: E402
from numba.extending import intrinsic  # noqa: E402

from streamjit.numba_internals import arrays, caching, codegen, cuda_simulator, dispatch, runtime, stencils  # noqa: E402
from streamjit.numba_internals import ir as seam_ir  # noqa: E402
from streamjit.numba_internals.compiler import EarlyPipelineCompletion  # noqa: E402
from helpers import checkout_env  # noqa: E402


def _library_with(text, cls):
    """A finalized code library of class ``cls`` holding the LLVM IR ``text``."""
    context_codegen = cpu_target.target_context.codegen()
    with global_compiler_lock:
        previous = codegen.library_class(context_codegen)
        codegen.set_library_class(context_codegen, cls)
        try:
            library = context_codegen.create_library("seam_contract")
        finally:
            codegen.set_library_class(context_codegen, previous)
        machine = codegen.target_machine(context_codegen)
        module = llir.Module("seam_contract")
        module.triple, module.data_layout = machine.triple, str(machine.target_data)
        library.enable_object_caching()
        library.add_ir_module(module)
        library.add_llvm_module(llvm.parse_assembly(f'target triple = "{machine.triple}"\n'
                                                    f'target datalayout = "{machine.target_data}"\n{text}'))
        library.finalize()
    return library


_ANSWER = "@seam_counter_{n} = global i64 7\ndefine i64 @seam_answer_{n}() {{\n  ret i64 41\n}}\n"


def test_create_library_instantiates_the_library_class_and_the_hook_replaces_the_final_module():
    seen = []

    class Rewriting(codegen.NumbaCodeLibrary):
        def optimize_final_module(self):
            seen.append(str(self.final_module))
            super().optimize_final_module()
            self.final_module = llvm.parse_assembly(str(self.final_module).replace("ret i64 41", "ret i64 42"))

    assert codegen.library_class(cpu_target.target_context.codegen()).__name__ == "JITCodeLibrary"
    library = _library_with(_ANSWER.format(n=1), Rewriting)
    assert isinstance(library, Rewriting) and len(seen) == 1 and "ret i64 41" in seen[0]
    answer = ctypes.CFUNCTYPE(ctypes.c_int64)(library.get_pointer_to_function("seam_answer_1"))
    assert answer() == 42  # (the replaced module is what became machine code)


def test_a_prange_worker_is_compiled_into_a_library_named_by_the_prefix():
    names = []

    class Recording(codegen.NumbaCodeLibrary):
        def optimize_final_module(self):
            names.append(self.name)
            super().optimize_final_module()

    def halves(a):
        for i in numba.prange(a.shape[0]):
            a[i] *= 0.5

    cg = cpu_target.target_context.codegen()
    previous = codegen.library_class(cg)
    codegen.set_library_class(cg, Recording)
    try:
        numba.njit(parallel=True)(halves)(np.ones(8))
    finally:
        codegen.set_library_class(cg, previous)
    assert any(name.startswith(codegen.PARFOR_WORKER_PREFIX) for name in names), names


def test_the_engine_answers_for_symbols_and_global_addresses():
    library = _library_with(_ANSWER.format(n=2), codegen.NumbaCodeLibrary)
    context_codegen = library.codegen
    assert codegen.symbol_defined(context_codegen, "seam_counter_2")
    assert not codegen.symbol_defined(context_codegen, "seam_no_such_symbol")
    assert ctypes.c_int64.from_address(codegen.global_value_address(context_codegen, "seam_counter_2")).value == 7


def test_the_cached_form_of_a_library_holds_its_bitcode():
    library = _library_with(_ANSWER.format(n=3), codegen.NumbaCodeLibrary)
    libdata = library.serialize_using_object_code()
    assert libdata[1] == "object"
    module = llvm.parse_bitcode(codegen.cached_bitcode(libdata))
    assert "seam_answer_3" in {f.name for f in module.functions}
    assert codegen.cached_bitcode(("name", "bitcode", b"")) is None


def test_target_machine_timing_record_and_refprune_flags():
    context_codegen = cpu_target.target_context.codegen()
    machine = codegen.target_machine(context_codegen)
    assert isinstance(machine, llvm.TargetMachine)
    assert machine.triple.split("-")[0] == llvm.get_process_triple().split("-")[0]
    library = _library_with(_ANSWER.format(n=4), codegen.NumbaCodeLibrary)
    builder = llvm.create_pass_builder(machine, llvm.create_pipeline_tuning_options())
    with codegen.timing_record(library)("seam contract", builder):
        pass
    assert isinstance(codegen.refprune_flags(), llvm.RefPruneSubpasses)


def _cached_function(x):
    return x + 1


def test_the_function_cache_and_its_files_take_the_hooks(tmp_path, monkeypatch):
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path))
    calls = []

    class Results(CompileResultCacheImpl):
        def reduce(self, cres):
            calls.append("reduce")
            return super().reduce(cres)

    class Files(caching.CacheFile):
        def save_data(self, name, data):
            calls.append(("save_data", name))
            super().save_data(name, data)

        def load_data(self, name):
            calls.append(("load_data", name))
            return super().load_data(name)

    class Cache(caching.FunctionCache):
        results_class = Results

        def __init__(self, py_func):
            super().__init__(py_func)
            self.use_cache_file(Files)

        def index_key(self, sig, codegen_):
            return super().index_key(sig, codegen_) + ("seam",)

    kernel = numba.njit(_cached_function)
    assert type(dispatch.dispatcher_cache(kernel)).__name__ == "NullCache"
    cache = Cache(_cached_function)
    dispatch.set_dispatcher_cache(kernel, cache)
    assert dispatch.dispatcher_cache(kernel) is cache and cache.function_repr == repr(_cached_function)
    assert kernel(1) == 2
    (name,) = [c[1] for c in calls if c[0] == "save_data"]
    assert "reduce" in calls and name == cache.cache_file.data_name(1)
    (key,) = cache.cache_file.load_index()
    assert key[-1] == "seam" and Path(cache.cache_file.index_path).exists()
    assert Path(cache.cache_file.data_path(name)).exists()
    loaded = cache.load_without_refresh(kernel.signatures[0], kernel.targetctx)
    assert loaded is not None and loaded.entry_point is not None and ("load_data", name) in calls
    with cache.cache_file.open_for_write(str(tmp_path / "written")) as f:
        f.write(cache.cache_file.dump([1]))
    assert pickle.loads((tmp_path / "written").read_bytes()) == [1]


class _Pickled(dispatch.Reducible):
    def __init__(self, value):
        self.value = value

    def pickled_states(self):
        return dict(value=self.value)

    @classmethod
    def from_pickled_states(cls, value):
        return cls(value + 1)


def test_numba_pickles_a_reducible_by_its_states():
    assert pickle.loads(pickle.dumps(_Pickled(1))).value == 2


def test_dispatcher_identity_and_pipeline_class():
    compiled = []

    class Recording(compiler.Compiler):
        def define_pipelines(self):
            compiled.append(self.state.func_id.func_name)
            return super().define_pipelines()

    kernel = numba.njit(lambda x: x * 2)
    dispatch.set_pipeline_class(kernel, Recording)
    assert kernel(2) == 4 and compiled == ["<lambda>"]
    uuid = dispatch.dispatcher_uuid(kernel)
    assert dispatch.unpickled_dispatcher(type(kernel), uuid) is kernel
    other = numba.njit(lambda x: x)
    dispatch.set_dispatcher_uuid(other, "seam-contract-uuid")
    assert dispatch.dispatcher_uuid(other) == "seam-contract-uuid"
    assert dispatch.unpickled_dispatcher(type(other), "seam-contract-uuid") is other
    assert dispatch.unpickled_dispatcher(type(other), "seam-no-such-uuid") is None


@register_pass(mutates_CFG=False, analysis_only=True)
class _Stop(FunctionPass):
    _name = "streamjit_seam_contract_stop"

    def __init__(self):
        FunctionPass.__init__(self)

    def run_pass(self, state):
        raise EarlyPipelineCompletion(("stopped", state.func_id.func_name))


class _StoppingCompiler(compiler.CompilerBase):
    def define_pipelines(self):
        pm = compiler.DefaultPassBuilder.define_nopython_pipeline(self.state)
        pm.add_pass_after(_Stop, IRProcessing)
        pm.finalize()
        return [pm]


def _stopped(x):
    return x


def test_a_pass_ends_the_pipeline_early_with_its_result():
    flags = compiler.Flags()
    result = compiler.compile_extra(cpu_target.typing_context, cpu_target.target_context, _stopped, (types.int64,),
                                    None, flags, {}, pipeline_class=_StoppingCompiler)
    assert result == ("stopped", "_stopped")


def _branchy(a, b):
    c = a + b
    return c * 2


def test_definitions_rebuilt_and_expression_fields():
    func_ir = compiler.run_frontend(_branchy)
    func_ir._definitions.clear()
    seam_ir.rebuild_definitions(func_ir)
    definition = ir_utils.get_definition(func_ir, "c")
    assert isinstance(definition, ir.Expr) and definition.op == "binop"
    fields = seam_ir.expr_fields(definition)
    assert {"fn", "lhs", "rhs"} <= set(fields) and fields["fn"] is operator.add
    other = ir.Var(definition.lhs.scope, "seam_other", definition.loc)
    seam_ir.set_expr_fields(definition, dict(fields, rhs=other))
    assert definition.rhs is other and other in definition.list_vars()


@intrinsic
def _allocated(typingctx, n):
    array_type = types.Array(types.float64, 1, "C")

    def lower(context, builder, sig, args):
        array = arrays.allocate_array(context, builder, array_type, [args[0]])
        return arrays.structure_value(array)

    return array_type(n), lower


def test_an_array_allocated_while_lowering():
    allocate = numba.njit(lambda n: _allocated(n))
    out = allocate(5)
    assert out.shape == (5,) and out.dtype == np.float64 and out.flags.c_contiguous


def test_the_nrt_module_exports_the_functions_asked_for():
    from numba.core.runtime import rtsys

    rtsys.initialize(cpu_target.target_context)
    assert runtime.nrt_function_address("NRT_MemInfo_alloc_external") > 0
    with pytest.raises(AttributeError):
        runtime.nrt_function_address("seam_no_such_function")


def test_the_runtime_symbols_are_those_rtsys_installs_without_its_compile():
    """`install_runtime_symbols` installs the names and addresses
    ``rtsys.initialize`` installs, and compiles no NRT module (whose
    library ``rtsys.library`` answers only after Numba's own)."""
    code = ("import llvmlite.binding as ll\n"
            "from numba.core.registry import cpu_target\n"
            "from numba.core.runtime import rtsys\n"
            "from streamjit.numba_internals.runtime import install_runtime_symbols\n"
            "installed, add_symbol = {}, ll.add_symbol\n"
            "ll.add_symbol = lambda name, address: (installed.__setitem__(name, address), add_symbol(name, address))\n"
            "install_runtime_symbols()\n"
            "ours = dict(installed)\n"
            "try:\n"
            "    rtsys.library\n"
            "except RuntimeError:\n"
            "    print('not-compiled')\n"
            "installed.clear()\n"
            "rtsys.initialize(cpu_target.target_context)\n"
            "print(len(ours), ours == installed, ll.address_of_symbol('NRT_MemInfo_call_dtor') == ours['NRT_MemInfo_call_dtor'])\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=checkout_env(),
                          timeout=120)
    lines = done.stdout.split()
    assert lines[0] == "not-compiled" and int(lines[1]) > 0 and lines[2:] == ["True", "True"], done.stderr[-2000:]


def test_a_library_links_its_own_copy_of_the_nrt_functions():
    """What lets cached code load without the NRT module compiled: the
    object code of a function taking an array defines the reference
    counting it calls (Numba links the NRT module into every library)."""
    first = numba.njit(lambda a: a[0])
    first(np.ones(3))
    (overload,) = first.overloads.values()
    module = llvm.parse_bitcode(codegen.cached_bitcode(overload.library.serialize_using_object_code()))
    defined = {f.name for f in module.functions if not f.is_declaration}
    declared = {f.name for f in module.functions if f.is_declaration}
    assert "NRT_decref" in defined and not {"NRT_incref", "NRT_decref"} & declared


def test_the_thread_pool_is_launched_only_when_asked():
    code = ("import numba\nfrom streamjit.numba_internals.runtime import thread_pool_launched\n"
            "before = thread_pool_launched()\nnumba.get_num_threads()\nprint(before, thread_pool_launched())\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=checkout_env(),
                          timeout=120)
    assert done.stdout.split() == ["False", "True"], done.stderr[-2000:]


def _neighbours(a):
    return a[-1] + a[1]


def test_a_stencil_loop_nest_is_built_and_captured():
    numba_stencil = numba.stencil(_neighbours)
    func = stencils.stencil_func(numba_stencil, "constant", dict(numba_stencil.options))
    argty = types.Array(types.float64, 1, "C")
    stencils.typing_context(func).refresh()
    return_type, typemap, calltypes = func.get_return_type((argty,))
    out_type = types.Array(return_type.dtype, 1, "C")
    original = compiler.compile_ir
    func_ir, loop_types = stencils.loop_nest(func, out_type, return_type, typemap, calltypes, (argty,))
    assert compiler.compile_ir is original and isinstance(func_ir, ir.FunctionIR) and len(loop_types) == 2
    assert tuple(loop_types) == (argty, out_type) and len(func_ir.arg_names) == 2
    out = func_ir.arg_names[1]
    stores = [stmt for block in func_ir.blocks.values() for stmt in block.body
              if isinstance(stmt, ir.SetItem) and stmt.target.name.split(".")[0] == out]
    assert stores  # (the loop nest writes the output parameter; tests/test_stencil.py compiles such nests)
    assert isinstance(stencils.target_context(numba_stencil), type(cpu_target.target_context))


def test_the_host_array_of_a_simulated_device_array():
    a = np.ones(3)
    assert cuda_simulator.host_array(a) is a
    devicearray = pytest.importorskip("numba.cuda.simulator.cudadrv.devicearray")
    assert cuda_simulator.host_array(devicearray.FakeCUDAArray(a)) is a
