"""Numba's on-disk function cache (``numba.core.caching``), its private
steps under public names.

`CacheFile` is Numba's index-and-data-file pair, with the writing and the
reading of one data file as hooks (`save_data`, `load_data`) that Numba's
``save`` and ``load`` call. `FunctionCache` is Numba's function cache, with
the class of its compile results (`results_class`), its index key
(`index_key`) and its cache file (`use_cache_file`) to set, and
`load_without_refresh`: Numba's ``load_overload`` without the refresh of the
target context it starts with. `reload_hooks` are what Numba runs before it
loads a cached compile result.
"""

import inspect

from numba.core import caching
from numba.core.compiler import CompileResult
from numba.core.caching import IndexDataCacheFile


class CacheFile(IndexDataCacheFile):
    """Numba's index and data files of one function's cache."""

    def data_name(self, number):
        """Numba's name of the data file numbered ``number``."""
        return self._data_name(number)

    def data_path(self, name):
        return self._data_path(name)

    @property
    def index_path(self):
        return self._index_path

    def load_index(self):
        """``{key: data file name}``; empty for an index of another Numba or source stamp."""
        return self._load_index()

    def save_index(self, overloads):
        self._save_index(overloads)

    def dump(self, data):
        """``data`` pickled as Numba pickles cache entries."""
        return self._dump(data)

    def open_for_write(self, path):
        """A context manager giving a file that replaces ``path`` on exit
        (written to a temporary file, then renamed)."""
        return self._open_for_write(path)

    def save_data(self, name, data):
        """Write one data file (Numba's ``save`` calls this); override to change the format."""
        IndexDataCacheFile._save_data(self, name, data)

    def load_data(self, name):
        """Read one data file (Numba's ``load`` calls this)."""
        return IndexDataCacheFile._load_data(self, name)

    def _save_data(self, name, data):
        self.save_data(name, data)

    def _load_data(self, name):
        return self.load_data(name)


class FunctionCache(caching.FunctionCache):
    """Numba's cache of a function's compile results."""

    results_class = caching.CompileResultCacheImpl  # reduces and rebuilds one compile result

    @property
    def _impl_class(self):
        return self.results_class

    @property
    def function_repr(self):
        """``repr`` of the cached function, as Numba names it in messages."""
        return self._name

    @property
    def cache_file(self):
        return self._cache_file

    def use_cache_file(self, cls):
        """Keep entries in a ``cls`` (a `CacheFile`) made as Numba makes its own."""
        self._cache_file = cls(cache_path=self._cache_path, filename_base=self._impl.filename_base,
                               source_stamp=self._impl.locator.get_source_stamp())

    def index_key(self, sig, codegen):
        """An entry's key in the index; this default is Numba's (signature, CPU, bytecode)."""
        return caching.FunctionCache._index_key(self, sig, codegen)

    def _index_key(self, sig, codegen):
        return self.index_key(sig, codegen)

    def load_without_refresh(self, sig, target_context):
        """Numba's ``load_overload`` without the ``target_context.refresh()``
        it starts with: the compile result, or None."""
        with self._guard_against_spurious_io_errors():
            return self._load_overload(sig, target_context)
        return None  # (what the guard swallowed)


# (the position of ``reload_init`` in a reduced compile result, as
# ``CompileResult._rebuild`` takes its fields after the target context)
_RELOAD_INIT = list(inspect.signature(CompileResult._rebuild).parameters).index("reload_init") - 1


def reload_hooks(payload):
    """The functions Numba runs before it loads the reduced compile result
    ``payload`` (its ``reload_init``: a parallel kernel's starts the
    threading layer, whose functions its code calls)."""
    return payload[_RELOAD_INIT]
