"""What a command reads records from: a run directory, or any source the importers read.

:func:`open_source` is the one entry of every command that takes a SOURCE: a run directory
of ``reliabench run`` becomes a :class:`~reliabench.runs.RunDirectory` (opened once; its
re-tests, adaptive state, stored policy and artifacts come from it), anything else -- rollout
JSONL, ``-`` for standard input, another harness's files or folders -- is read by
:func:`reliabench.importers.load_source`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from reliabench.errors import UsageError
from reliabench.importers import ReportedFigure, StatedTotal, load_source
from reliabench.records import Rollout
from reliabench.runs.directory import RunDirectory

__all__ = ["RUN_FORMAT", "Source", "open_source", "read_source"]

RUN_FORMAT = "run"
"""The format name of a run directory (the importers' are the others)."""


@dataclass(frozen=True)
class Source:
    """Records read from a source, with the run directory they came from (if they did).

    Use as a context manager (it closes the run directory).

    Attributes:
        name: The source as given (a path, or ``-``).
        records: The rollout records.
        format: ``run`` for a run directory, else the importer's format (``jsonl``, ...).
        notes: The importer's notes (decisions and oddities worth telling the user).
        reported: Figures the foreign harness reported itself (``audit``).
        stated: Totals the source states about its own rows (``audit``).
        run: The run directory (None for any other source).
    """

    name: str
    records: tuple[Rollout, ...]
    format: str
    notes: tuple[str, ...] = ()
    reported: tuple[ReportedFigure, ...] = ()
    stated: tuple[StatedTotal, ...] = ()
    run: RunDirectory | None = None

    def close(self) -> None:
        """Close the run directory, if there is one."""
        if self.run is not None:
            self.run.close()

    def __enter__(self) -> Source:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def open_source(source: str | Path, input_format: str = "auto", *, agent: str | None = None,
                **options: Any) -> Source:
    """Read ``source``: a run directory (``input_format`` ``auto``), or anything ``import`` reads.

    Args:
        source: A run directory, ``-`` (rollout JSONL on standard input), a rollout JSONL file
            or any file or folder of a format of :data:`reliabench.importers.IMPORTERS`.
        input_format: ``auto`` (a run directory, or the format detected from the content) or
            a format name.
        agent: A name for the agent, overriding the source's.
        **options: The format's own options (``scorer=``, ``leaderboard=``; None: not given).

    Raises:
        UsageError: a run with no recorded rollout, or a directory that is neither a run nor a
            known result folder.
        InputError: for unreadable input or no records.
    """
    name = str(source)
    if name != "-" and input_format == "auto" and RunDirectory.is_run(name):
        run = RunDirectory.open(name)
        try:
            records = run.records()
            if not records:
                raise UsageError(f"{Path(name)}: the run has no recorded rollouts yet")
        except BaseException:
            run.close()
            raise
        if agent is not None:
            records = tuple(dataclasses.replace(r, agent=agent) for r in records)
        return Source(name, records, RUN_FORMAT, run=run)
    result = load_source(source, input_format, agent=agent, **options)
    return Source(name, result.records, result.format, result.notes, result.reported, result.stated)


def read_source(source: str | Path, input_format: str = "auto", *, agent: str | None = None,
                **options: Any) -> Source:
    """:func:`open_source` for a command that needs the records alone: a run directory is closed.

    Its ``run`` is still set (its :meth:`~reliabench.runs.RunDirectory.records` stay readable),
    but nothing more can be read from its store.
    """
    src = open_source(source, input_format, agent=agent, **options)
    src.close()
    return src
