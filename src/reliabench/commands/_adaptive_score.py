"""An adaptive run inside ``reliabench score`` and ``plan --pilot``: the estimates it reports at its stop."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reliabench.errors import InputError
from reliabench.files.untrusted import file_kind, read_file
from reliabench.records import Rollout
from reliabench.run.adaptive import ADAPTIVE_FILE, estimates_for_run, estimates_to_json
from reliabench.studies.adaptive import AdaptiveDesign
from reliabench.studies.adaptive_estimate import StopEstimates

__all__ = ["AdaptiveScore", "adaptive_for_score"]


@dataclass(frozen=True, slots=True)
class AdaptiveScore:
    """A finished adaptive run's design and its estimates at the stop."""

    design: AdaptiveDesign
    estimates: StopEstimates
    rollouts: int
    fixed_rollouts: int
    simulated: frozenset[str] = frozenset()

    def lines(self) -> list[str]:
        """The text section."""
        from reliabench.commands._adaptive import render_estimates

        head = [f"== adaptive run: stopped after {self.rollouts} of the fixed design's {self.fixed_rollouts} "
                "rollouts; the plain figures above can be biased by the data-dependent stop =="]
        return head + render_estimates(self.estimates, self.design, self.simulated)

    def attach(self, text: str, fmt: str) -> str:
        """Add the section to a rendered score report (JSON: an ``adaptive`` key)."""
        if fmt == "json":
            doc = json.loads(text)
            doc["adaptive"] = {"rollouts": self.rollouts, "fixed_rollouts": self.fixed_rollouts,
                               "estimate": estimates_to_json(self.estimates)}
            return json.dumps(doc, indent=2) + "\n"
        if fmt == "csv":
            return text
        return text + "\n" + "\n".join(self.lines()) + "\n"


def _design(doc: dict[str, Any]) -> AdaptiveDesign:
    d = doc["design"]
    return AdaptiveDesign(first=int(d["first"]), max_n=int(d["max_n"]), k=int(d["k"]),
                          confidence=float(d["confidence"]), target_half_width=d.get("target_half_width"),
                          settle=tuple((str(a), str(b)) for a, b in d.get("settle", [])),
                          margin=float(d.get("margin", 0.0)),
                          boundary=str(d.get("boundary", "obrien-fleming")),
                          half_width_rule=str(d.get("half_width_rule", "two-stage")))


def adaptive_for_score(source: str, records: Sequence[Rollout]) -> AdaptiveScore | None:
    """The estimates at the stop when ``source`` is a finished adaptive run, else None.

    They are recomputed from the run's records and its ``adaptive.json`` (the design, the n of
    every round, the seed), so they match what the run printed and follow any later re-judging
    of the records.

    Raises:
        InputError: ``adaptive.json`` is not a readable adaptive document.
    """
    path = Path(source) / ADAPTIVE_FILE
    if source == "-" or file_kind(path) in ("error", "dir"):
        return None
    try:
        doc = json.loads(read_file(path, under=Path(source)).decode("utf-8"))  # no link followed
        if not doc.get("finished"):
            return None
        design = _design(doc)
        history = [{str(a): int(n) for a, n in r["n"].items()} for r in doc["rounds"]]
        seed = int(doc["design"].get("seed", 0))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InputError(path, f"not an adaptive-run document ({exc!r})") from None
    names = list(history[-1])
    tasks = sorted({r.task_id for r in records if r.agent in names})
    if len(tasks) != int(doc.get("tasks", len(tasks))):
        return None  # a subset of the run's records: the design's statistic is not available
    est = estimates_for_run(records, tasks, design, history, seed)
    simulated = frozenset(r.agent for r in records if r.simulated)
    return AdaptiveScore(design, est, int(doc.get("rollouts", 0)), int(doc.get("fixed_rollouts", 0)),
                         simulated)
