"""On-disk caching of streamed kernels (``cache=True``).

Numba's function cache keys an entry by signature, CPU and the function's
bytecode. A streamed kernel's machine code also depends on what the stream
pass did with it, so the key here adds the kernel's stream plan (streamed
arrays, the machine profile's rows), the Numba options it compiles with
(`numba_options_key`: Numba's key holds none, so a ``fastmath=True`` or
``parallel=True`` entry would be another kernel's), the runtime libraries
its code may call (`runtime_libraries`), a digest of streamjit's
sources and the Numba and llvmlite versions (`compiler_digest`) and any
``STREAMJIT_OVERRIDE_AFTER`` file (`dump.override_key`): changing an
option, editing, upgrading, overriding a build step or moving the cache to
another C library never reuses an old entry.

Numba's entry keeps only object code, and no compile metadata. Each entry
here also keeps what introspection reads: the `StreamResult` (for
``stream_result``, ``above_threshold``, ``stream_report``), the rewritten
LLVM IR and the assembly (for ``inspect_llvm``, ``inspect_asm`` and the
report's counts), so a kernel loaded from the cache answers them as a
fresh compile does.

An entry loads without Numba's refresh of its CPU target (every registry
of implementations imported, and SciPy) where every symbol its code
declares resolves already (`declared_symbols_resolve`), after it otherwise;
one whose symbols do not resolve even then is a miss, recompiled, never run.

A cache file that cannot be trusted is never loaded: every data file carries
a SHA-256 of its contents, checked before unpickling, and an entry or index
that fails to read is ignored with a `StreamWarning` and recompiled (the
index is rewritten when it is the broken part). Writes go through Numba's
temporary-file-and-rename, so processes compiling the same kernel at once
do not see each other's partial files.
"""

import contextlib
import functools
import hashlib
import itertools
import os
import pickle
import platform
import warnings

import llvmlite
import llvmlite.binding as llvm
import numba
from numba.core.caching import CompileResultCacheImpl

from ..dump import override_key
from ..errors import StreamWarning
from ..numba_internals.caching import CacheFile, FunctionCache, reload_hooks
from ..numba_internals.codegen import cached_bitcode, symbol_defined
from ..numba_internals.runtime import install_runtime_symbols
from ..plan import METADATA_KEY
from ..post_o3 import array_pool, vector_math

_DIGEST_BYTES = hashlib.sha256().digest_size


def sources_digest(package):
    """SHA-256 of the ``.py`` files under ``package``, with their paths."""
    digest = hashlib.sha256()
    for folder, subfolders, files in sorted(os.walk(package)):
        subfolders.sort()
        for name in sorted(f for f in files if f.endswith(".py")):
            path = os.path.join(folder, name)
            digest.update(os.path.relpath(path, package).encode())
            with open(path, "rb") as f:
                digest.update(f.read())
    return digest.hexdigest()


@functools.lru_cache(maxsize=1)
def compiler_digest():
    """What compiles a kernel besides its own source: streamjit's sources
    (every module of the package) and the Numba and llvmlite versions. Part
    of every entry's key, as Triton hashes its compiler into its cache keys:
    an edited or upgraded streamjit never runs an entry another one wrote
    (nor reads its call counters past their end)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # streamjit/, above kernel/
    return (numba.__version__, llvmlite.__version__, sources_digest(package))


def _same_in_every_process(value):
    """``repr(value)``, with sets and dicts in sorted order (their order
    follows string hashing, which differs from process to process)."""
    if isinstance(value, (set, frozenset)):
        return repr(sorted(map(_same_in_every_process, value)))
    if isinstance(value, dict):
        return repr(sorted((_same_in_every_process(k), _same_in_every_process(v)) for k, v in value.items()))
    return repr(value)


def numba_options_key(targetoptions, locals_):
    """The Numba options a kernel compiles with (its dispatcher's target
    options, and the types of ``locals``), as the same text in every
    process. Numba's own key holds none of them, though ``fastmath``,
    ``error_model``, ``boundscheck``, ``parallel``, ``debug`` and ``nogil``
    (the wrapper releasing the GIL) change the code; every option enters,
    as keying one that leaves the code alone costs only a second entry."""
    return tuple((name, _same_in_every_process(value)) for name, value in
                 sorted({**targetoptions, "locals": locals_}.items()))


@functools.lru_cache(maxsize=1)
def runtime_libraries():
    """What the code calls outside Numba and streamjit, where the process
    runs: whether libmvec loads (fastmath kernels call its vector functions,
    `post_o3/vector_math.py`) and the C library's name and version. An
    entry from a host with another glibc (a cache shared over NFS, an older
    image) is a miss, not code calling symbols this one lacks."""
    try:
        libc = os.confstr("CS_GNU_LIBC_VERSION")
    except (ValueError, OSError, AttributeError):  # (not glibc)
        libc = " ".join(platform.libc_ver())
    return vector_math.available(), libc


class _ChecksummedCacheFile(CacheFile):
    """Numba's index/data cache files, with a checksum on each data file,
    and each entry tied to its key.

    Numba numbers data files by the count of entries in the index it read:
    processes compiling different signatures at once each read the same
    index, pick the same number and overwrite each other's file, and the
    index then points a signature at another's code (float64 calls
    returning int64 bit patterns, in every later process). Here a data file
    is named by its key's digest, written before the index names it, and
    holds its key: a load whose file holds another key is a miss."""

    def save(self, key, data):
        name = self.data_name(int(hashlib.sha256(pickle.dumps(key, protocol=4)).hexdigest()[:15], 16))
        self.save_data(name, (key, data))
        overloads = self.load_index()
        overloads[key] = name
        self.save_index(overloads)

    def load(self, key):
        stored = super().load(key)
        if stored is None or stored[0] != key:
            return None
        return stored[1]

    def save_data(self, name, data):
        payload = self.dump(data)
        with self.open_for_write(self.data_path(name)) as f:
            f.write(hashlib.sha256(payload).digest() + payload)

    def load_data(self, name):
        path = self.data_path(name)
        with open(path, "rb") as f:
            blob = f.read()
        digest, payload = blob[:_DIGEST_BYTES], blob[_DIGEST_BYTES:]
        if hashlib.sha256(payload).digest() != digest:
            raise ValueError(f"checksum mismatch in {path}")
        return pickle.loads(payload)


# Numba's load_overload first refreshes its CPU target: it imports every
# registry of implementations (and SciPy, for BLAS, where installed), 0.54 of
# the 0.56 s that loading the copy drop-in's cached kernel took in a fresh
# process (AMD EPYC Zen 2 VM, bench/cached_first_call.py). Loading compiled code needs only
# the symbols it calls: Numba's runtime's C functions, installed by name
# (`install_runtime_symbols`), Numba's C helpers and the C library's, there
# from the start; not the LLVM compile of Numba's NRT module that
# `rtsys.initialize` adds (18-21 ms of the 35 ms that loading the copy
# kernel took, Intel Xeon VM, bench/copy_threads.py --load), as each
# library holds its own copy of that module's functions. A symbol that an
# extension's registry installs would not be there, and code calling an
# unresolved symbol stops the process (LLVM aborts), so an entry loads
# without the refresh where every symbol its code declares resolves
# already, and after it otherwise (e.g. a parallel kernel's, whose
# threading-layer symbols come with Numba's reload hooks). Any later
# compile refreshes anyway (Numba's CompilerBase does), which initializes
# the runtime in full.
def declared_symbols(libdata):
    """The functions and global variables that the cached library ``libdata``
    (Numba's `serialize_using_object_code`) declares without defining, as
    names; None for a form without bitcode. Read as the entry is saved: its
    bitcode parsed again at every load cost more than the rest of
    streamjit's load (jacobi_2d, bench/compile_time.py --cached, AMD EPYC
    Zen 3 VM)."""
    bitcode = cached_bitcode(libdata)
    if bitcode is None:
        return None
    module = llvm.parse_bitcode(bitcode)
    return tuple(value.name for value in itertools.chain(module.functions, module.global_variables)
                 if value.is_declaration and not value.name.startswith("llvm."))


def declared_symbols_resolve(target_context, declared):
    """Whether every symbol in ``declared`` (`declared_symbols`) resolves in
    this process already (False for None)."""
    if declared is None:
        return False
    codegen = target_context.codegen()
    return all(symbol_defined(codegen, name) or llvm.address_of_symbol(name) for name in declared)


class _InspectableCompileResults(CompileResultCacheImpl):
    """Numba's compile results, with what introspection needs beside them."""

    def reduce(self, cres):
        library = cres.library
        payload = super().reduce(cres)
        inspection = dict(result=(cres.metadata or {}).get(METADATA_KEY),
                          llvm_ir=getattr(library, "streamed_llvm_ir", None) or library.get_llvm_str(),
                          asm=library.get_asm_str(), declared=declared_symbols(payload[0]))
        return payload, inspection

    def rebuild(self, target_context, payload):
        payload, inspection = payload
        install_runtime_symbols()
        declared = inspection["declared"]
        if not declared_symbols_resolve(target_context, declared):
            target_context.refresh()
            for hook in reload_hooks(payload):  # (run again by Numba's rebuild: each starts what it starts once)
                hook()
            if not declared_symbols_resolve(target_context, declared):
                return None  # a miss: the code would call what is not here, and LLVM would abort
        cres = super().rebuild(target_context, payload)
        # (read by `load_overload`: the code reaches the array pool through its one symbol)
        cres.library.uses_array_pool = declared is None or array_pool.SYMBOL in declared
        # (read by StreamDispatcher.inspect_llvm / inspect_asm)
        cres.library.streamed_llvm_ir = inspection["llvm_ir"]
        cres.library.cached_asm = inspection["asm"]
        return cres._replace(metadata={METADATA_KEY: inspection["result"]})


class StreamFunctionCache(FunctionCache):
    """Numba's function cache, keyed also by the stream plan, the Numba
    options (``numba_options``, `numba_options_key`) and the runtime
    libraries, and checked."""

    results_class = _InspectableCompileResults

    def __init__(self, py_func, stream_key, numba_options):
        super().__init__(py_func)
        self._stream_key = stream_key
        self._numba_options = numba_options
        self.use_cache_file(_ChecksummedCacheFile)

    def index_key(self, sig, codegen):
        return super().index_key(sig, codegen) + (self._stream_key, self._numba_options, runtime_libraries(),
                                                  compiler_digest(), override_key())

    def load_overload(self, sig, target_context):
        try:
            # Numba's own load_overload without its refresh up front, which
            # `rebuild` makes where the entry needs it (see above)
            loaded = self.load_without_refresh(sig, target_context)
        except Exception as exc:  # anything unreadable: recompile instead
            warnings.warn(f"ignoring an unreadable cache entry of {self.function_repr} ({exc}); recompiling", StreamWarning)
            return None
        if loaded is not None and loaded.library.uses_array_pool:
            # (its code allocates through the pool; a bad STREAMJIT_POOL_BYTES raises here, naming itself;
            # code that does not is loaded without compiling the pool's functions: about half of
            # a triad's load, bench/README.md, "Cached loads without the pool")
            array_pool.switch_on()
        return loaded

    def save_overload(self, sig, data):
        try:
            super().save_overload(sig, data)
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError) as exc:
            warnings.warn(f"rewriting the unreadable cache index of {self.function_repr} ({exc})", StreamWarning)
            with contextlib.suppress(OSError):
                os.unlink(self.cache_file.index_path)
            super().save_overload(sig, data)
