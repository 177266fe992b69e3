"""An importer plugin: a harness that writes ``{"harness": "scorelog", "scores": {task: [score, ...]}}``.

Each score is one trial of the task (a rollout); a trial passes when its score reaches
``--pass-score`` (1.0 by default). Detection is by content: a JSON object whose ``harness``
is ``scorelog``.

Entry point, in the plugin's ``pyproject.toml``::

    [project.entry-points."reliabench.importers"]
    scorelog = "scores_importer:importer"

Then ``reliabench import results.json`` (detected), ``--format scorelog --pass-score 0.5``,
and every command that takes records (``score``, ``audit``...) reads the file.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from reliabench.errors import InputError
from reliabench.importers import (
    ImporterOption,
    ImportResult,
    SourceShape,
    expect_dict,
    expect_list,
    read_json,
)
from reliabench.records import Rollout

__all__ = ["ScorelogImporter", "importer"]


class ScorelogImporter:
    """Reads scorelog files (see the module docstring)."""

    name = "scorelog"
    label = "scorelog"
    shapes: frozenset[SourceShape] = frozenset({"json"})
    options = (ImporterOption("pass_score", "score at or above which a trial passes (default 1.0)."),)

    def detect(self, path: Path, data: Any) -> bool:
        """A decoded object with ``"harness": "scorelog"``."""
        return isinstance(data, dict) and data.get("harness") == "scorelog"

    def load(self, path: Path, data: Any, *, agent: str | None = None,
             options: Mapping[str, Any] | None = None) -> ImportResult:
        """One rollout per score; ``data`` is None when the format was named, not detected."""
        doc = expect_dict(read_json(path) if data is None else data, path, "file")
        raw_pass = (options or {}).get("pass_score", "1.0")
        try:
            pass_score = float(raw_pass)
        except ValueError:
            raise InputError(path, f"--pass-score: expected a number, got {raw_pass!r}") from None
        name = agent or str(doc.get("agent") or path.stem)
        records: list[Rollout] = []
        for task, raw in sorted(expect_dict(doc.get("scores"), path, "scores").items()):
            for i, score in enumerate(expect_list(raw, path, f"scores.{task}")):
                if isinstance(score, bool) or not isinstance(score, (int, float)) \
                        or not math.isfinite(score):
                    raise InputError(path, f"expected a finite number, got {score!r}",
                                     field=f"scores.{task}[{i}]")
                records.append(Rollout(task_id=task, agent=name, rollout=i,
                                       verdict=score >= pass_score,
                                       meta={"source": self.name, "score": float(score)}))
        return ImportResult(tuple(records), self.name,
                            (f"a trial passes when its score is >= {pass_score:g}",))


importer = ScorelogImporter()
