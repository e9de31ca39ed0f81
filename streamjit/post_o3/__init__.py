"""What runs on the optimized LLVM module, after Numba's O3 and before
machine code: the reader (`module.py`) and the stages (`stages.py`)."""
