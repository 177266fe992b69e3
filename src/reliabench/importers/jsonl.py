"""reliabench's own rollout JSONL, read through the importer protocol (format ``jsonl``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from reliabench.importers._common import ImportResult
from reliabench.importers.base import ImporterOption, SourceShape
from reliabench.records import read_jsonl

__all__ = ["FORMAT", "IMPORTER", "JsonlImporter", "detect_line", "load"]

FORMAT = "jsonl"


def detect_line(obj: Any) -> bool:
    """Whether a first decoded line looks like a reliabench rollout record.

    ``read_jsonl`` then names any key that is missing.
    """
    return isinstance(obj, dict) and "task_id" in obj and ("agent" in obj or "rollout" in obj)


def load(path: Path, data: Any = None, *, agent: str | None = None) -> ImportResult:
    """Read rollout JSONL (``agent`` renames every record's agent).

    Raises:
        RecordError: naming the file and line of a record that breaks the schema.
    """
    del data
    records = read_jsonl(path)
    if agent is not None:
        records = [dataclasses.replace(r, agent=agent) for r in records]
    return ImportResult(tuple(records), FORMAT)


class JsonlImporter:
    """The ``jsonl`` importer: reliabench's own rollout records, one JSON object per line."""

    name = FORMAT
    label = "reliabench rollouts"
    shapes: frozenset[SourceShape] = frozenset({"jsonl"})
    options: tuple[ImporterOption, ...] = ()

    def detect(self, path: Path, data: Any) -> bool:
        """A first line with ``task_id`` and ``agent`` or ``rollout``."""
        return detect_line(data)

    def load(self, path: Path, data: Any, *, agent: str | None = None,
             options: Mapping[str, Any] | None = None) -> ImportResult:
        """See :func:`load`."""
        return load(path, data, agent=agent)


IMPORTER = JsonlImporter()
