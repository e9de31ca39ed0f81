"""What runs on the linked, unoptimized LLVM module, before Numba's O3:
hints the optimizer must read (`loop_widths.py`)."""
