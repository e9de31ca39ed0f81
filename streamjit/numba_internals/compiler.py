"""Numba's compiler driver: ending a pipeline early with a result."""

from numba.core import compiler

# Raised by a pass with a result: the pipeline stops there and
# ``compiler.compile_extra`` returns the result (as Numba's ``WithLifting``).
EarlyPipelineCompletion = compiler._EarlyPipelineCompletion
