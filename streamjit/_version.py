"""The package version, in a module of its own: the cache key (`plan.py`)
reads it, and importing it from the package would make a cycle
(``__init__`` -> dispatcher -> options -> plan -> ``__init__``)."""

__version__ = "0.1.0"
