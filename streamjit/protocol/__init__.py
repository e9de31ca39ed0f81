"""What the code generation and the post-O3 stages share, beneath both:
the marks on streamed accesses (`markers.py`), the alignment assumptions
(`alignment.py`), the per-target facts, byte sizes, fences and
non-temporal instructions (`targets.py`) and the keep-scalar call
(`keep_scalar.py`). It imports nothing of streamjit's outside itself:
`codegen/` emits what these modules define while Numba lowers, and
`post_o3/` reads it back from the optimized module."""
