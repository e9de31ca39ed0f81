"""What a ``@stream_kernel`` is and how it compiles: the dispatcher
(`dispatcher.py`), the stream pipeline of passes it compiles with
(`pipeline.py`), the on-disk cache (`cache.py`), the kernel under
``NUMBA_DISABLE_JIT`` (`disabled.py`) and the Numba versions checked
(`versions.py`)."""
