"""What the passes build Numba IR with: blocks, loops and statements
(`ir_build.py`), the checks before a peel (`peel_checks.py`), the fusion of
array expressions' temporaries (`array_expressions.py`) and operands read at
shifted indices of the array they view (`view_shifts.py`). No pass runs
here: the passes, one ``run_pass`` each, stand in `passes/` above."""
