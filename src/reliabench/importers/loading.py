"""Reading a source: detect its format by content, then load it with its importer.

``detect_format`` asks the importers of the registry (:data:`~reliabench.importers.base.IMPORTERS`)
in order, by the shape of the source: a folder, a zip archive, a JSON document, or JSONL (whose
first line is decoded; a one-line JSON object with ``task_id`` counts as JSONL). ``load_foreign``
checks the options against the chosen importer's declared ones; ``load_source`` is the one
loader of records from foreign sources and JSONL. A run directory of ``reliabench run`` is not
theirs to read: :class:`reliabench.runs.RunDirectory` reads it (commands go through
:func:`reliabench.runs.open_source`, which takes both).
"""

from __future__ import annotations

import dataclasses
import zipfile
from contextlib import closing
from pathlib import Path
from typing import Any

from reliabench.errors import InputError, InvalidArgumentError, UsageError
from reliabench.files.jsonl import read_jsonl_lines
from reliabench.importers._common import ImportResult, read_json
from reliabench.importers.base import IMPORTERS, Importer, SourceShape, importers_for
from reliabench.records import read_jsonl

__all__ = ["detect_format", "load_foreign", "load_source"]


def _labels(shape: SourceShape, joiner: str) -> str:
    return joiner.join(imp.label for _, imp in importers_for(shape))


def _detect(path: Path, shape: SourceShape, data: Any) -> str | None:
    for name, imp in importers_for(shape):
        if imp.detect(path, data):
            return name
    return None


def _first_line(path: Path) -> Any:
    with closing(read_jsonl_lines(path)) as lines:
        try:
            for item in lines:
                return item.value
        except InputError as exc:
            raise InputError(path, f"neither JSON nor JSONL: {exc.detail}", line=exc.line) from None
    raise InputError(path, "empty file")


def detect_format(path: str | Path) -> tuple[str, Any]:
    """Find the format of ``path``; return it with the decoded JSON (None if not read).

    Raises:
        InputError: when the path is missing or no importer recognizes it.
        UsageError: an importer plugin fails to load.
    """
    p = Path(path)
    if not p.exists():
        raise InputError(p, "no such file or folder")
    if p.is_dir():
        found = _detect(p, "folder", None)
        if found is not None:
            return found, None
        raise InputError(p, "no known result files in this folder (looked for "
                         f"{_labels('folder', ' and ')} results)")
    if zipfile.is_zipfile(p):
        found = _detect(p, "zip", None)
        if found is not None:
            return found, None
        raise InputError(p, f"a zip archive of no known format (looked for {_labels('zip', ', ')})")
    data: Any = None
    try:
        data = read_json(p)
    except InputError:
        if p.suffix == ".json":
            raise
    if data is not None:
        found = _detect(p, "json", data)
        if found is not None:
            return found, data
        if isinstance(data, dict) and "task_id" in data:
            line: Any = data  # a one-line JSONL file
        else:
            raise InputError(p, f"JSON of no known format ({_labels('json', ', ')})")
    else:
        line = _first_line(p)
    found = _detect(p, "jsonl", line)
    if found is not None:
        return found, None
    raise InputError(p, f"JSONL of no known format ({_labels('jsonl', ' or ')})", line=1)


def load_foreign(path: str | Path, *, format: str = "auto", agent: str | None = None,
                 **options: Any) -> ImportResult:
    """Read any supported result file or folder into rollout records.

    Args:
        path: A file or a folder (not a run directory of ``reliabench run``:
            :class:`reliabench.runs.RunDirectory` reads those).
        format: ``auto`` (detect) or a format of the importer registry.
        agent: Name to give the agent, overriding the name the format implies.
        **options: The format's declared options (``Importer.options``: ``scorer=`` for
            inspect, ``variant=`` for evalplus, ``leaderboard=`` for a SWE-bench leaderboards
            file); None means not given.

    Returns:
        An ``ImportResult`` (records, format, notes, figures the harness reported itself).

    Raises:
        InputError: naming the file and position of a problem, or when nothing matches.
        InvalidArgumentError: for an unknown format name or an option the format lacks.
        UsageError: ``path`` is a run directory (read it with :func:`reliabench.runs.open_source`).
    """
    p = Path(path)
    data: Any = None
    from reliabench.store import is_run_directory

    if format == "auto" and is_run_directory(p):  # a run directory of `reliabench run`
        raise UsageError(f"{p}: a run directory of reliabench run, not a foreign source: read it with "
                         "reliabench.runs.open_source (or RunDirectory)")
    if format == "auto":
        fmt, data = detect_format(p)
    elif format in IMPORTERS:
        fmt = format
        if not p.exists():
            raise InputError(p, "no such file or folder")
    else:
        raise InvalidArgumentError(f"format must be auto or one of {', '.join(IMPORTERS.names())}, "
                                   f"got {format!r}")
    importer = IMPORTERS.get(fmt)
    result = importer.load(p, data, agent=agent, options=_check_options(importer, fmt, options))
    if not result.records:
        raise InputError(p, f"no records found (format {fmt})")
    return result


def _check_options(importer: Importer, fmt: str, options: dict[str, Any]) -> dict[str, Any]:
    """The options given (None means not given), checked against the importer's declarations."""
    given = {k: v for k, v in options.items() if v is not None}
    declared = {o.name: o for o in importer.options}
    unknown = set(given) - set(declared)
    if unknown:
        raise InvalidArgumentError(f"option(s) {', '.join(sorted(unknown))} do not apply to format {fmt!r}")
    for name, value in given.items():
        choices = declared[name].choices
        if choices is not None and value not in choices:
            raise InvalidArgumentError(f"{name} must be one of {', '.join(choices)} for format {fmt!r}, "
                                       f"got {value!r}")
    return given


def load_source(source: str | Path, input_format: str = "auto", **options: Any) -> ImportResult:
    """Read rollout records from any source: the ONE loader of every command that takes records.

    ``source`` is ``-`` (rollout JSONL on stdin), a run directory of ``reliabench run``, a
    rollout JSONL file, or any format ``reliabench import`` reads (``input_format`` names it,
    or ``auto`` detects it; ``options`` are the format's own, e.g. ``scorer=``).

    Raises:
        UsageError: for a directory that is neither a run nor a known result folder.
        InputError: for unreadable input or no records.
    """
    if str(source) == "-":
        if input_format not in ("auto", "jsonl"):
            raise UsageError(f"standard input is read as rollout JSONL, not {input_format!r}")
        records = read_jsonl("-")
        if not records:
            raise InputError("<stdin>", "no rollout records (expected one JSON object per line)")
        if options.get("agent") is not None:
            records = [dataclasses.replace(r, agent=options["agent"]) for r in records]
        return ImportResult(tuple(records), "jsonl")
    p = Path(source)
    from reliabench.store import is_run_directory

    if input_format == "auto" and p.is_dir() and not is_run_directory(p):
        try:
            detect_format(p)
        except InputError:
            raise UsageError(f"{p}: a directory but not a run directory (no reliabench.sqlite), nor a "
                             f"folder of {_labels('folder', ' or ')} results") from None
    if p.is_file() and _blank(p):
        raise InputError(p, "no rollout records (expected one JSON object per line)")
    return load_foreign(p, format=input_format, **options)


def _blank(path: Path) -> bool:
    """Whether a file holds only whitespace (read in chunks, stops at the first other byte)."""
    with path.open("rb") as fh:
        while chunk := fh.read(65536):
            if chunk.strip():
                return False
    return True
