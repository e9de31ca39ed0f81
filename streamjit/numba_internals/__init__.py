"""The one seam between streamjit and Numba's private internals.

Every private Numba name streamjit uses (an underscore attribute, method,
module or class of Numba's), and its one monkeypatch, is used in this
package and nowhere else: each module here wraps one Numba subsystem in
small named functions (or a base class whose hooks have public names), and
the rest of streamjit calls those. `tests/test_numba_seam.py` enforces it
(its rule is written there) and holds a contract test per assumption
below, run on every Numba release CI installs (`kernel/versions.py`, `.ci/run`).
The modules import nothing of streamjit's, so every floor may use them.

Inventory (``name``: what streamjit uses it for; module here). Every name
was checked present, with the signature used, in the sources of Numba
0.66.0, 0.67.0 and 0.68.1; the contract tests run on the installed one.

codegen (code generation, ``numba.core.codegen``):
  ``CPUCodegen._library_class``: made `StreamCodeLibrary` while a kernel
      compiles, so its libraries run the post-O3 stages
      (`set_library_class`, `library_class`; `backend/library.py`)
  ``CodeLibrary._optimize_final_module``: overridden to build the module
      with O3 and the post-O3 stages (`NumbaCodeLibrary.optimize_final_module`)
  ``CodeLibrary._final_module``: the linked module read and replaced there
      (`NumbaCodeLibrary.final_module`)
  ``CPUCodegen._tm``: the target machine O3 runs for and whose triple picks
      the store fence (`target_machine`; `backend/o3.py`, `codegen/control.py`)
  ``CodeLibrary._recorded_timings``: timing the O3 pipelines as Numba does
      (`timing_record`; `backend/o3.py`)
  ``codegen._parse_refprune_flags``: the refprune pass's flags
      (`refprune_flags`; `backend/o3.py`)
  ``CPUCodegen._engine`` (``is_symbol_defined``, ``get_global_value_address``):
      whether a cached entry's symbols resolve, the call counters' address
      (`symbol_defined`, `global_value_address`; `kernel/cache.py`, `kernel/dispatcher.py`)
  the cached form ``(name, "object", (object code, bitcode))`` of
      ``serialize_using_object_code``: the bitcode read for its symbols
      (`cached_bitcode`; `kernel/cache.py`)
caching (the on-disk cache, ``numba.core.caching``):
  ``IndexDataCacheFile._data_name``, ``_data_path``, ``_index_path``,
      ``_load_index``, ``_save_index``, ``_dump``, ``_open_for_write``: the
      entry tied to its key and its checksummed data file (`CacheFile`)
  ``IndexDataCacheFile._save_data``, ``_load_data``: overridden for the
      checksum (`CacheFile.save_data`, `CacheFile.load_data`)
  ``Cache._impl_class``: compile results keeping the report's inputs
      (`FunctionCache.results_class`)
  ``Cache._index_key``: the key extended by the stream plan and the
      compiler digest (`FunctionCache.index_key`)
  ``Cache._name``, ``_cache_path``, ``_impl``, ``_cache_file``: the cache
      file replaced, messages (`FunctionCache.use_cache_file`,
      `cache_file`, `function_repr`)
  ``Cache._load_overload``, ``_guard_against_spurious_io_errors``: loading
      without the target refresh (`FunctionCache.load_without_refresh`)
dispatch (dispatchers and pickling, ``numba.core.dispatcher``, ``serialize``):
  ``ReduceMixin._reduce_states``, ``_rebuild``: pickling kernels and
      stencils by function and options (`Reducible`)
  ``Dispatcher._compiler`` (its ``pipeline_class``): ``threshold="auto"``
      resolved at the first compile (`set_pipeline_class`)
  ``Dispatcher._cache``: the streamjit cache installed and recognised
      (`set_dispatcher_cache`, `dispatcher_cache`)
  ``_MemoMixin._uuid``, ``_set_uuid``, ``_memo``: one object per pickled
      kernel in a process (`dispatcher_uuid`, `set_dispatcher_uuid`,
      `unpickled_dispatcher`)
compiler (``numba.core.compiler``):
  ``_EarlyPipelineCompletion``: the GPU front end stops after legality
      with its result (`EarlyPipelineCompletion`; `cuda/legality.py`)
ir (``numba.core.ir``):
  ``FunctionIR._definitions``: rebuilt after passes insert statements
      (`rebuild_definitions`; `passes/`, `dropins/stencil.py`)
  ``Expr._kws``: an expression's operands, read and re-emitted by the
      affine terms (`expr_fields`, `set_expr_fields`; `passes/analysis/affine.py`)
arrays (array lowering, ``numba.np.arrayobj``, ``numba.core.cgutils``):
  ``arrayobj._empty_nd_impl``: a new array allocated while lowering, for
      placement (`allocate_array`; `codegen/placement.py`)
  ``Structure._getvalue``: the placed array's value (`structure_value`)
runtime (``numba.core.runtime``, ``numba.np.ufunc.parallel``):
  ``numba.core.runtime._nrt_python``: the module whose C exports include
      ``NRT_MemInfo_alloc_external``, for the array pool
      (`nrt_function_address`; `post_o3/array_pool.py`); its ``c_helpers``,
      installed for LLVM under the names ``rtsys.initialize`` gives them,
      without the NRT module it compiles, for cached code
      (`install_runtime_symbols`; `kernel/cache.py`)
  ``parallel._is_initialized``: the copy threads counted without launching
      the threading layer (`thread_pool_launched`; `dropins/copy.py`)
stencils (``numba.stencils.stencil``):
  ``StencilFunc._typingctx``, ``_targetctx``: the contexts a stencil types
      and compiles with (`typing_context`, `target_context`)
  ``StencilFunc._stencil_wrapper``, with ``compiler.compile_ir``
      monkeypatched (the monkeypatch): numba.stencil's loop nest built, not
      compiled (`loop_nest`, `compile_ir_captured`)
  ``StencilFunc(kernel_ir, mode, options)``: undocumented constructor
      (`stencil_func`)
cuda_simulator (``numba.cuda.simulator``):
  ``FakeCUDAArray._ary``: the host array behind a simulated device array
      (`host_array`; `cuda/intrinsics.py`)

That is 42 private names, one cached layout and one monkeypatch. Left
where they are, and allowed by the seam test with their reason:
``_name`` on Numba compiler passes (the pass protocol Numba's documentation
on custom pipelines defines), ``_numba_type_`` (the typeof protocol of
Numba's own types), llvmlite's ``IRBuilder._insert`` (`protocol/`,
`codegen/`: not Numba's) and NumPy's ``np.copyto._implementation``. Numba's
non-underscore but undocumented modules (``numba.core.ir``, ``ir_utils``,
``typed_passes``, ``cgutils``, ``compiler_machinery``, ...) are its
extension surface for passes and lowering, imported where used; so are the
naming conventions of Numba's IR the report reads (``%arg.<name>.4``).
"""
