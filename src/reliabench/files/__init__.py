"""Reading and writing files safely.

- :mod:`~reliabench.files.untrusted`: bounded, no-follow reads of files an agent wrote.
- :mod:`~reliabench.files.output`: outputs written atomically (no half-written file).
- :mod:`~reliabench.files.json_input`: JSON input with depth and size limits, one-line errors.
- :mod:`~reliabench.files.jsonl`: the one JSONL reader (records, replay files, importers,
  converters): ``file:line`` errors, blank lines, CRLF, BOM, ``.gz``, a line-size limit.
- :mod:`~reliabench.files.toml`: TOML files with errors that name file and position.
"""

__all__: list[str] = []
