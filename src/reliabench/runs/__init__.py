"""The read side of a run: one object opens a run directory and reads what it keeps.

- :mod:`~reliabench.runs.directory`: :class:`RunDirectory`, the only code that opens a run's
  store and reads its artifacts and adaptive state (the write side is :mod:`reliabench.run`).
- :mod:`~reliabench.runs.source`: :func:`open_source`, what a command reads records from (a
  run directory, or any source :func:`reliabench.importers.load_source` reads).
- :mod:`~reliabench.runs.adaptive_file`: the format of ``RUN/adaptive.json``.
"""

from reliabench.runs.directory import RunDirectory
from reliabench.runs.source import RUN_FORMAT, Source, open_source, read_source

__all__ = ["RUN_FORMAT", "RunDirectory", "Source", "open_source", "read_source"]
