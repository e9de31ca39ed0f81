"""The one reader and writer of LLVM IR text (`module.py`), the
instructions the post-O3 stages add to it (`build.py`), what a module's
instructions do to memory, counted per array (`counts.py`), and the names
math functions go by in it (`math_names.py`). Read before O3 (`pre_o3/`),
after it (`post_o3/`), by the report and by the build for another target
(`backend/retarget.py`)."""
