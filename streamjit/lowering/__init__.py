"""The code library and the pieces of lowering the code generation and the
post-O3 stages share: the marks on streamed accesses (`markers.py`), the
alignment assumptions (`alignment.py`), the per-target fences and NT
instructions (`targets.py`), the keep-scalar call (`keep_scalar.py`), the
library that runs the post-O3 stages on the host build (`library.py`) and
the inspection for other CPUs (`cross_target.py`)."""
