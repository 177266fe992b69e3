"""Reading and writing files safely.

- :mod:`~reliabench.files.untrusted`: bounded, no-follow reads of files an agent wrote.
- :mod:`~reliabench.files.output`: outputs written atomically (no half-written file).
- :mod:`~reliabench.files.json_input`: JSON input with depth and size limits, one-line errors.
- :mod:`~reliabench.files.toml`: TOML files with errors that name file and position.
"""

__all__: list[str] = []
