"""reliabench's own rollout JSONL, read through the importer protocol (format ``jsonl``)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from reliabench.importers._common import ImportResult
from reliabench.importers.base import FormatImporter
from reliabench.records import read_jsonl

__all__ = ["FORMAT", "IMPORTER", "detect_line", "load"]

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


IMPORTER = FormatImporter(FORMAT, "reliabench rollouts", frozenset({"jsonl"}),
                          lambda path, data: detect_line(data), load)
"""reliabench's own rollout records, one JSON object per line."""
