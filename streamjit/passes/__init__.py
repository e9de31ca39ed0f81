"""The stream passes over Numba IR, one module each with one entry point,
``run_pass(state)``; `kernel/pipeline.py` lists them in the order they run.
What they share stands below them: the facts about Numba IR in `analysis/`,
the IR builders in `rewrite/`. Two helpers still stand beside the passes,
`loop_copies.py` and `staging.py` (the aligned peel's copies of a loop and
its staged loop): they ask `stream_loads.py` how each load is marked."""
