"""The stream passes over Numba IR, one module each with one entry point,
``run_pass(state)``; `kernel/pipeline.py` lists them in the order they run."""
