"""What runs on the optimized LLVM module, after Numba's O3 and before
machine code: the stages (`stages.py` lists them), each reading and
writing the module through the reader of `llvm_text/`."""
