"""What a compiled kernel does, read back from its code: `stream_report`
(`report.py`), the math calls it makes (`math_calls.py`) and the records of
its calls, the path each one took (`call_records.py`)."""
