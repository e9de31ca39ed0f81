"""cache=True: the rewritten kernel is cached; a change of stream options
or Numba options never reuses an entry; an entry whose code calls what the
process lacks is a miss; a corrupted file is ignored with a warning and
recompiled; processes compiling at once all succeed; a kernel loaded from
the cache answers introspection as a fresh compile does."""

import os
import subprocess
import sys
import textwrap

import pytest

from helpers import checkout_env

KERNEL_MODULE = textwrap.dedent("""
    import hashlib, os, warnings
    import numpy as np
    import streamjit as sj
    loads = os.environ.get("STREAM_LOADS") == "1"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")

        @sj.stream_kernel(stream_stores=["dst"], stream_loads=["src"] if loads else False, cache=True,
                          threshold=4096)
        def copy(dst, src):
            for i in range(src.shape[0]):
                dst[i] = src[i]

        src = np.random.default_rng(0).standard_normal(1001)
        dst = np.zeros(1002)
        copy(dst[1:], src)
    assert (dst[1:] == src).all() and dst[0] == 0
    hits = sum(copy.stats.cache_hits.values())
    # what a kernel loaded from the cache answers, printed to be compared with a fresh compile's
    report = copy.stream_report()
    assert report.arrays["dst"].nt_vector_stores > 0 and report.machine_nt_vector_stores > 0
    answers = (str(report), copy.stream_result(), copy.above_threshold(dst[1:], src), copy.inspect_llvm(),
               copy.inspect_asm())
    digest = hashlib.sha256(repr(answers).encode()).hexdigest()[:16]
    warned = any(issubclass(w.category, sj.StreamWarning) and "unreadable" in str(w.message) for w in caught)
    print(hits, digest, warned)
""")


@pytest.fixture
def run(tmp_path):
    (tmp_path / "cached_kernel.py").write_text(KERNEL_MODULE)
    env = checkout_env(NUMBA_CACHE_DIR=str(tmp_path / "cache"))

    def start(stream_loads=False):
        return subprocess.Popen([sys.executable, "cached_kernel.py"], cwd=tmp_path, text=True,
                                env=dict(env, STREAM_LOADS="1" if stream_loads else "0"),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def finish(process):
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
        return out.split()

    def once(stream_loads=False):
        return finish(start(stream_loads))

    once.start, once.finish, once.cache_dir = start, finish, tmp_path / "cache"
    return once


def cache_files(cache_dir, suffix):
    return [p for p in cache_dir.rglob(f"*{suffix}")]


def test_cached_and_keyed_by_stream_options(run):
    hits, fresh, warned = run()
    assert (hits, warned) == ("0", "False")               # compiled
    # loaded from the cache, it answers stream_report, stream_result,
    # above_threshold and inspect_* as the fresh compile did (a cached
    # load once raised AttributeError, and refused a report)
    assert run() == ["1", fresh, "False"]
    hits, fresh_loads, _ = run(stream_loads=True)
    assert hits == "0" and fresh_loads != fresh          # other options: never the old entry
    assert run(stream_loads=True) == ["1", fresh_loads, "False"]
    assert run() == ["1", fresh, "False"]                 # both entries live side by side


def test_corrupted_data_file_is_ignored_and_recompiled(run):
    fresh = run()[1]
    for data in cache_files(run.cache_dir, ".nbc"):
        blob = data.read_bytes()
        data.write_bytes(blob[: len(blob) // 2])          # truncated
    assert run() == ["0", fresh, "True"]
    assert run() == ["1", fresh, "False"]                 # rewritten and good again
    for data in cache_files(run.cache_dir, ".nbc"):
        blob = bytearray(data.read_bytes())
        blob[len(blob) // 2] ^= 0xFF                       # one flipped byte, same length
        data.write_bytes(bytes(blob))
    assert run() == ["0", fresh, "True"]


def test_corrupted_index_is_ignored_and_rewritten(run):
    fresh = run()[1]
    for index in cache_files(run.cache_dir, ".nbi"):
        index.write_bytes(b"not a pickle at all")
    assert run() == ["0", fresh, "True"]
    assert run() == ["1", fresh, "False"]


def test_processes_compiling_at_once_all_succeed(run):
    processes = [run.start() for _ in range(3)]
    results = [run.finish(p) for p in processes]
    assert all(r[2] == "False" for r in results)
    assert run() == ["1", results[0][1], "False"]


LOADING_MODULE = textwrap.dedent("""
    import sys
    import numba, numpy as np
    import streamjit as sj

    @sj.stream_kernel(stream_stores=["out"], threshold=None, cache=True)
    def smooth(u):
        out = np.empty_like(u)
        out[0], out[-1] = u[0], u[-1]
        for i in range(1, u.shape[0] - 1):
            out[i] = 0.25 * u[i - 1] + 0.5 * u[i] + 0.25 * u[i + 1]
        return out

    @sj.stream_kernel(stream_stores=["dst"], threshold=None, parallel=True, cache=True)
    def double(dst, src):
        for i in numba.prange(dst.shape[0]):
            dst[i] = 2.0 * src[i]

    u = np.random.default_rng(0).random(100_003)
    out = smooth(u)
    registries = "numba.np.linalg" in sys.modules
    dst = np.zeros_like(u)
    double(dst, u)
    assert np.array_equal(out, numba.njit(smooth.py_func)(u)) and smooth.stream_calls()["streamed"] == 1
    assert np.array_equal(dst, 2.0 * u) and double.stream_calls()["streamed"] == 1
    print(sum(smooth.stats.cache_hits.values()), registries, sum(double.stats.cache_hits.values()))
""")


def run_twice(tmp_path, source):
    """Run the script ``source`` in two fresh processes sharing a cache
    directory (the first compiles, the second loads); both must succeed."""
    (tmp_path / "script.py").write_text(source)
    env = checkout_env(NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    runs = [subprocess.run([sys.executable, "script.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=300) for _ in range(2)]
    assert all(done.returncode == 0 for done in runs), runs[-1].stderr
    return runs


def test_a_cached_kernel_loads_without_numbas_registries(tmp_path):
    """Numba refreshes its CPU target before loading any cache entry: every
    registry of implementations, and SciPy (0.27-0.29 s of a cached
    kernel's first call, against 0.05 s without). An entry whose symbols
    all resolve loads without it; a parallel kernel's (its threading
    layer's symbols come with Numba's reload hooks) loads after it, and
    both run as compiled."""
    runs = run_twice(tmp_path, LOADING_MODULE)
    assert runs[0].stdout.split() == ["0", "True", "0"]   # compiled: the compile refreshes
    assert runs[1].stdout.split() == ["1", "False", "1"]  # loaded, the first without the registries


def library_declaring(name):
    """A cached code library's form (Numba's ``serialize_using_object_code``)
    whose code calls the function ``name``."""
    import llvmlite.binding as llvm
    import llvmlite.ir as ir

    module = ir.Module()
    double = ir.DoubleType()
    callee = ir.Function(module, ir.FunctionType(double, [double]), name)
    caller = ir.Function(module, ir.FunctionType(double, [double]), "caller")
    builder = ir.IRBuilder(caller.append_basic_block())
    builder.ret(builder.call(callee, caller.args))
    return "test", "object", (b"", llvm.parse_assembly(str(module)).as_bitcode())


def test_an_unresolved_declaration_is_seen():
    """An entry declaring a symbol nothing has installed loads only after
    the refresh: LLVM would stop the process on the call."""
    from numba.core.registry import cpu_target
    from streamjit.kernel.cache import declared_symbols, declared_symbols_resolve

    context = cpu_target.target_context
    assert declared_symbols(library_declaring("sqrt")) == ("sqrt",)
    assert declared_symbols_resolve(context, declared_symbols(library_declaring("sqrt")))
    assert not declared_symbols_resolve(context, declared_symbols(library_declaring("streamjit_no_such_symbol")))
    assert not declared_symbols_resolve(context, declared_symbols(("test", "bitcode", b"")))


def cached_function(x):
    return x


def test_an_entry_calling_what_is_not_here_is_a_miss():
    """An entry whose code calls a function this process lacks even after
    Numba's refresh and the entry's reload hooks (a libmvec or glibc symbol
    of the host that wrote it) is a miss, recompiled: loaded, LLVM would
    abort the process on the first call."""
    import inspect

    from numba.core.compiler import CompileResult
    from numba.core.registry import cpu_target
    from streamjit.kernel.cache import _InspectableCompileResults, declared_symbols

    hooks_ran = []
    fields = dict.fromkeys(list(inspect.signature(CompileResult._rebuild).parameters)[1:])
    fields.update(libdata=library_declaring("streamjit_no_such_symbol"), reload_init=[lambda: hooks_ran.append(1)])
    libdata = fields["libdata"]
    payload = (tuple(fields.values()), {"result": None, "llvm_ir": "", "asm": "",
                                        "declared": declared_symbols(libdata)})
    assert _InspectableCompileResults(cached_function).rebuild(cpu_target.target_context, payload) is None
    assert hooks_ran == [1]


def test_every_compared_option_is_in_the_cache_key():
    import dataclasses

    from streamjit.plan import StreamOptions

    keyed = [f.name for f in dataclasses.fields(StreamOptions) if f.compare]
    assert "parallel" in keyed
    same = [name for name in keyed
            if dataclasses.replace(StreamOptions(), **{name: object()}).cache_key() == StreamOptions().cache_key()]
    assert same == []


OPTIONS_MODULE = textwrap.dedent("""
    import os
    import numba
    import numpy as np
    import streamjit as sj

    parallel, fastmath = os.environ["PARALLEL"] == "1", os.environ["FASTMATH"] == "1"

    @sj.stream_kernel(stream_stores=["out"], threshold=None, cache=True, parallel=parallel, fastmath=fastmath)
    def sines(out, x):
        for i in numba.prange(x.shape[0]):
            out[i] = np.sin(x[i])

    x = np.linspace(-10.0, 10.0, 4099)
    out = np.empty_like(x)
    sines(out, x)
    asm = sines.inspect_asm(sines.signatures[0])
    print(sum(sines.stats.cache_hits.values()), "numba_parallel_for" in asm)
""")


def test_numba_options_never_share_an_entry(tmp_path):
    """Numba's own key holds no option: a parallel=False kernel of a
    function would load the parallel=True kernel's entry (and run on
    Numba's threads), a fastmath=False kernel the fastmath=True one's."""
    (tmp_path / "options_kernel.py").write_text(OPTIONS_MODULE)
    env = checkout_env(NUMBA_CACHE_DIR=str(tmp_path / "cache"))

    def run(parallel, fastmath):
        done = subprocess.run([sys.executable, "options_kernel.py"], cwd=tmp_path, capture_output=True, text=True,
                              env=dict(env, PARALLEL=parallel, FASTMATH=fastmath), timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    assert run("1", "0") == ["0", "True"]
    assert run("0", "0") == ["0", "False"]      # not the parallel entry
    assert run("0", "1") == ["0", "False"]      # not the exact entry
    assert run("1", "0") == ["1", "True"]       # (each loads its own)
    assert run("0", "0") == ["1", "False"]


def test_an_entry_is_tied_to_its_key(tmp_path):
    """Processes compiling different signatures at once each read the same
    index: Numba numbers their data files alike, they overwrite each other,
    and the index points one signature at another's code (float64 calls
    returning int64 bit patterns, in every later process). Two saves that
    read one index never share a data file here, and a file holding another
    key is never loaded as this one's."""
    from streamjit.kernel.cache import _ChecksummedCacheFile

    def cache_file():
        return _ChecksummedCacheFile(cache_path=str(tmp_path), filename_base="k", source_stamp=("stamp", 1))

    first, second = cache_file(), cache_file()
    index_read = first._load_index()                     # both processes see the empty index
    second._load_index = lambda: dict(index_read)
    first._load_index = lambda: dict(index_read)
    first.save(("float64",), "float64 code")
    second.save(("int64",), "int64 code")
    reader = cache_file()
    assert reader.load(("int64",)) == "int64 code"
    assert reader.load(("float64",)) is None             # its index entry lost: a miss, never int64's code
    # an index naming another key's file
    index = reader._load_index()
    index[("float64",)] = index[("int64",)]
    reader._save_index(index)
    assert cache_file().load(("float64",)) is None and cache_file().load(("int64",)) == "int64 code"


SIGNATURES_MODULE = textwrap.dedent("""
    import sys
    import numpy as np
    import streamjit as sj

    @sj.stream_kernel(stream_stores=["out"], threshold=None, cache=True)
    def f(out, a):
        for i in range(out.shape[0]):
            out[i] = a[i] * 3.0 + 1.0

    for name in sys.argv[1:]:
        a = np.arange(1000, dtype=name)
        out = np.zeros(1000, name)
        f(out, a)
        assert (out == (a * 3 + 1).astype(name)).all(), name
    print(sum(f.stats.cache_hits.values()))
""")


def test_signatures_compiled_at_once_each_run_their_own_code(tmp_path):
    (tmp_path / "signatures.py").write_text(SIGNATURES_MODULE)
    env = checkout_env()
    names = ["f8", "f4", "i8", "i4"]
    for round_ in range(2):
        env["NUMBA_CACHE_DIR"] = str(tmp_path / f"cache{round_}")
        processes = [subprocess.Popen([sys.executable, "signatures.py", name], cwd=tmp_path, env=env, text=True,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE) for name in names]
        for process in processes:
            assert process.wait(timeout=300) == 0, process.stderr.read()
        later = subprocess.run([sys.executable, "signatures.py", *names], cwd=tmp_path, env=env,
                               capture_output=True, text=True, timeout=300)
        assert later.returncode == 0, later.stderr


def test_editing_any_stage_changes_every_key(tmp_path):
    """Every entry's key holds `compiler_digest`: streamjit's sources and the
    Numba and llvmlite versions. An edit of a post-O3 stage changes it, so
    every cached kernel recompiles on its next call."""
    import shutil

    import streamjit
    from streamjit.kernel.cache import compiler_digest, sources_digest

    package = os.path.dirname(streamjit.__file__)
    assert compiler_digest()[2] == sources_digest(package)
    copy = tmp_path / "streamjit"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = sources_digest(str(copy))
    assert before == sources_digest(package)
    stage = copy / "post_o3" / "nontemporal.py"
    stage.write_text(stage.read_text() + "\n# edited\n")
    assert sources_digest(str(copy)) != before


COUNTED_MODULE = textwrap.dedent("""
    import streamjit as sj

    @sj.stream_kernel(stream_stores=["dst"], threshold=None, cache=True)
    def kernel(dst, src):
        for i in range(src.shape[0]):
            dst[i] = src[i] + OFFSET
""")


def test_kernels_of_one_name_from_two_modules_count_their_own_calls(tmp_path):
    """Two cached kernels of the same name and argument types from two
    modules, each compiled in a process of its own, shared one call counter
    once both were loaded into one process (both said 8 calls, not 3 and 5)."""
    for name, offset in (("m1", "1.0"), ("m2", "2.0")):
        (tmp_path / f"{name}.py").write_text(COUNTED_MODULE.replace("OFFSET", offset))
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(tmp_path), os.getcwd(), os.environ.get("PYTHONPATH", "")]))

    def run(code):
        done = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    for name in ("m1", "m2"):
        run(f"import numpy as np, {name}; {name}.kernel(np.zeros(1000), np.zeros(1000))")
    assert run("import numpy as np, m1, m2\n"
               "a, b, c = np.zeros(1000), np.zeros(1000), np.zeros(1000)\n"
               "for _ in range(3): m1.kernel(b, a)\n"
               "for _ in range(5): m2.kernel(c, a)\n"
               "print(b[0], c[0], sum(m1.kernel.stats.cache_hits.values()), sum(m2.kernel.stats.cache_hits.values()))\n"
               "print(m1.kernel.stream_calls()['streamed'], m2.kernel.stream_calls()['streamed'])\n") == \
        ["1.0", "2.0", "1", "1", "3", "5"]


POOL_MODULE = textwrap.dedent("""
    import sys
    import numpy as np
    import streamjit as sj
    from streamjit.post_o3 import pool

    @sj.stream_kernel(stream_stores=True, cache=True, threshold=None)
    def triad(a, b, c, s):
        for i in range(a.shape[0]):
            a[i] = b[i] + s * c[i]

    @sj.stream_kernel(stream_stores=True, cache=True, threshold=None)
    def doubled(src):
        out = np.empty_like(src)
        for i in range(src.shape[0]):
            out[i] = 2.0 * src[i]
        return out

    x = np.random.default_rng(0).random(1001)
    a = np.empty_like(x)
    triad(a, x, x, 2.0)
    assert np.array_equal(a, x + 2.0 * x)
    compiled_after_triad = pool._functions.cache_info().currsize
    assert np.array_equal(doubled(x), 2.0 * x)
    print(sum(triad.stats.cache_hits.values()), compiled_after_triad, pool._functions.cache_info().currsize)
""")


def test_a_cached_kernel_that_allocates_nothing_loads_without_the_pool(tmp_path):
    """Every cached load compiled the array pool's functions (almost half of a
    triad's load, bench/README.md, "Cached loads without the pool"); only
    code that reaches the pool needs them."""
    runs = run_twice(tmp_path, POOL_MODULE)
    assert runs[1].stdout.split() == ["1", "0", "1"]  # loaded; the pool's functions only for `doubled`
