"""streamjit on NVIDIA GPUs (numba-cuda): ``stream_kernel(target="cuda")``
and `jit`.

Importing this package does not import numba.cuda: that happens on the
first compile or launch, so the CPU path never needs CUDA, and a machine
without numba-cuda or a GPU gets a `StreamError` saying which is missing
when it asks for a GPU kernel. See `dispatcher.py` for the passes. Options
are checked as on the CPU (`streamjit.options.validate_options`), and
``stream_report()`` returns the CPU's `streamjit.StreamReport`.
"""

from .dispatcher import CudaKernel, jit
from .ptx import CudaStreamReport  # (the same class as streamjit.StreamReport)

__all__ = ["jit", "CudaKernel"]
