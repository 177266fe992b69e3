"""Drive a real adaptive run: rounds of ``run_suite``, per-agent n from ``reliabench.studies.adaptive``.

Round 1 runs ``first`` rollouts of every agent on every task. After each round the store's
records (only each task's first n rollouts of each agent, so a round never sees more than
its design allows) go to :func:`reliabench.studies.adaptive.evaluate`, which says which agents get
the next step of the schedule. Rollout i of a (task, agent) has the same seed as in a fixed-n
run, so an adaptive run is a prefix of the fixed run with the same seed.

Resuming: the same command replays the rounds from the store (every decision is a
deterministic function of the recorded rollouts) and runs only what is missing. The rounds
and the final decision are written atomically to ``RUN/adaptive.json`` after every round.
At the stop, the reported estimates and intervals are the Rao-Blackwellised ones of
``reliabench.studies.adaptive_estimate`` (unbiased under the stopping rule), seeded with the
run's seed; ``adaptive.json`` keeps them under ``estimate`` (its format:
:mod:`reliabench.runs.adaptive_file`; the records are read between rounds through
:class:`reliabench.runs.RunDirectory`).
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from reliabench.agents.base import Agent
from reliabench.errors import InvalidArgumentError
from reliabench.run.runner import ProgressEvent, RunSettings, RunSummary, run_suite
from reliabench.runs.adaptive_file import ADAPTIVE_FILE, adaptive_document
from reliabench.runs.directory import RunDirectory
from reliabench.studies.adaptive import AdaptiveDesign, Step, evaluate
from reliabench.studies.adaptive_estimate import StopEstimates
from reliabench.studies.adaptive_score import counts_at, estimates_for_run
from reliabench.tasks.suite import Suite

__all__ = ["AdaptiveRunResult", "run_adaptive"]


@dataclass(frozen=True, slots=True)
class AdaptiveRunResult:
    """What an adaptive run did.

    Attributes:
        steps: One ``Step`` per round, the last one final.
        history: The n of every agent at each round.
        rollouts: Rollouts the design used (per-task n summed over tasks and agents).
        fixed_rollouts: Rollouts of the fixed-n design at ``max_n``.
        stop_reason: ``target``, ``max_n`` or ``interrupted``.
        summaries: The ``RunSummary`` of each round.
        estimates: The Rao-Blackwellised estimates and intervals at the stop (None when the
            run was interrupted).
    """

    steps: tuple[Step, ...]
    history: tuple[Mapping[str, int], ...]
    rollouts: int
    fixed_rollouts: int
    stop_reason: str
    summaries: tuple[RunSummary, ...]
    estimates: StopEstimates | None = None


def _write_atomic(path: Path, doc: Mapping[str, Any]) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".adaptive-", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=2, sort_keys=True)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def run_adaptive(
    suite: Suite,
    agents: Sequence[Agent],
    out_dir: str | Path,
    settings: RunSettings,
    design: AdaptiveDesign,
    *,
    tasks: Sequence[str] | None = None,
    progress: Callable[[ProgressEvent], None] | None = None,
    on_round: Callable[[int, Step], None] | None = None,
    stop: threading.Event | None = None,
    agents_file: str | Path | None = None,
    provenance: Mapping[str, Any] | None = None,
) -> AdaptiveRunResult:
    """Run rounds until the design's target is met or ``max_n`` is reached.

    ``settings.n`` is ignored (the design's ``first`` is stored as the run's n); ``provenance``
    goes to ``run_suite`` (kept with the run, not part of its identity).

    Raises:
        InvalidArgumentError: a settle pair names an agent that is not in ``agents``.
    """
    names = [a.name for a in agents]
    for pair in design.settle:
        for name in pair:
            if name not in names:
                raise InvalidArgumentError(f"--settle: no agent {name!r}; the agents file has "
                                           f"{', '.join(names)}")
    task_ids = sorted(tasks) if tasks else sorted(t.id for t in suite.tasks)
    base = replace(settings, n=design.first)
    history: list[dict[str, int]] = [{a: design.first for a in names}]
    steps: list[Step] = []
    summaries: list[RunSummary] = []
    reason = "interrupted"
    estimates: StopEstimates | None = None
    out = Path(out_dir)
    while True:
        summary = run_suite(suite, agents, out, base, tasks=tasks, progress=progress, stop=stop,
                            agents_file=agents_file, n_per_agent=history[-1], provenance=provenance)
        summaries.append(summary)
        if summary.skipped + summary.executed < summary.planned:
            break  # stopped before the round was complete: resume later
        with RunDirectory.open(out) as run:
            records = run.records()
        step = evaluate(design, counts_at(records, task_ids, history[-1]), history,
                        counts_at(records, task_ids, history[0]))
        steps.append(step)
        if not step.advance:
            estimates = estimates_for_run(records, task_ids, design, history, settings.seed)
        if on_round is not None:
            on_round(len(steps), step)
        _write_atomic(out / ADAPTIVE_FILE, adaptive_document(design, history, steps, len(task_ids), names,
                                                             estimates, settings.seed))
        if not step.advance:
            reason = step.stop_reason
            break
        history.append({**history[-1], **step.advance})
    used = len(task_ids) * sum(history[len(steps) - 1].values()) if steps else 0
    return AdaptiveRunResult(tuple(steps), tuple(history), used,
                             len(task_ids) * design.max_n * len(names), reason, tuple(summaries),
                             estimates)
