"""Facts about Numba IR that the passes share: the scan of a function's
stores, loads and loops (`scan.py`), its index expressions (`indices.py`),
the variables a loop rebinds (`rebindings.py`), affine indices
(`affine.py`), the work in a loop (`loop_work.py`) and `StreamFacts`, what
each pass reads and produces (`facts.py`). No pass runs here."""
