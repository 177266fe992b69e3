"""Terminal-Bench run results: ``results.json`` (one run, one or several trials per task).

Shape: ``{"results": [{"task_id", "trial_name", "is_resolved", "failure_mode",
"parser_results": {test: "passed" | "failed"} | null, ...}], "pass_at_k": {"2": ...},
"accuracy": ...}``.

* Each trial is one rollout. Trials of one task are numbered in ``trial_name`` order within
  a file; several results files of the same agent (a folder of single-run files, as some
  leaderboard submissions have) are independent runs and continue the numbering in file-name
  order.
* The agent is the name of the folder that holds the results file (``--agent`` overrides).
  A folder given on the command line is searched for ``results.json`` / ``*_results.json``;
  each folder that holds some is one agent.
* ``parser_results`` -> tests (``passed`` / ``failed``); ``is_resolved`` -> verdict.
* ``is_resolved: null`` (the harness could not decide; ``failure_mode`` is ``parse_error``,
  ``test_timeout``, ``unknown_agent_error`` ...) is a **failed attempt**, not an
  infrastructure error: its status is ``test_error`` for ``parse_error``, ``timeout`` for
  ``*timeout*`` modes, else ``agent_error``; it stays in n. Terminal-Bench's own accuracy and
  ``pass_at_k`` count these trials as unresolved, and its failure modes do not tell a broken
  host from an agent that broke its container -- excluding them would inflate every figure
  (on the public orchestrator/qwen-3-coder run, reliability@5 would read 0.44 instead of 0.39).
  Use ``reliabench audit`` to see how many there are (``meta.failure_mode`` keeps the mode).
* The harness's own ``pass_at_k`` and ``accuracy`` are kept as reported figures for audit.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from reliabench.errors import InputError
from reliabench.files.untrusted import find_files
from reliabench.importers._common import (
    ImportResult,
    ReportedFigure,
    expect_dict,
    expect_list,
    read_json,
)
from reliabench.importers.base import FormatImporter
from reliabench.records import Rollout, RolloutStatus, TestOutcome, TestOutcomeStatus

__all__ = ["FORMAT", "IMPORTER", "detect", "detect_dir", "load"]

FORMAT = "terminal-bench"
_OUTCOMES: dict[str, TestOutcomeStatus] = {"passed": "passed", "failed": "failed", "error": "error",
                                 "skipped": "skipped"}


def detect(data: Any) -> bool:
    """Whether decoded JSON looks like a Terminal-Bench ``results.json``."""
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        return False
    first = data["results"][0] if data["results"] else {}
    return ("pass_at_k" in data or "n_resolved" in data
            or (isinstance(first, dict) and "is_resolved" in first))


def _result_files(path: Path) -> list[Path]:
    return find_files(path, "*results.json")  # regular files only, no link followed


def detect_dir(path: Path) -> bool:
    """Whether a folder holds Terminal-Bench results files."""
    for f in _result_files(path)[:3]:
        try:
            if detect(read_json(f, under=path)):
                return True
        except InputError:
            continue
    return False


def _status(failure_mode: Any) -> RolloutStatus:
    mode = str(failure_mode or "")
    if mode == "parse_error":
        return "test_error"
    if "timeout" in mode:
        return "timeout"
    return "agent_error"


def _parse_file(path: Path, data: Any, agent: str, start: dict[str, int]
                ) -> tuple[list[Rollout], list[ReportedFigure], int]:
    obj = expect_dict(data, path, "results file")
    results = expect_list(obj.get("results"), path, "results")
    rows: list[tuple[str, str, int, dict[str, Any]]] = []
    for i, raw in enumerate(results):
        r = expect_dict(raw, path, f"results[{i}]")
        task = r.get("task_id")
        if not isinstance(task, str) or not task:
            raise InputError(path, f"expected a non-empty string, got {task!r}",
                             field=f"results[{i}].task_id")
        rows.append((task, str(r.get("trial_name") or ""), i, r))
    rows.sort(key=lambda t: (t[0], t[1], t[2]))
    records: list[Rollout] = []
    used: dict[str, int] = defaultdict(int)
    unresolved_null = 0
    for task, trial, i, r in rows:
        field = f"results[{i}]"
        resolved = r.get("is_resolved")
        if resolved is not None and not isinstance(resolved, bool):
            raise InputError(path, f"expected true, false or null, got {resolved!r}",
                             field=field + ".is_resolved")
        parser = r.get("parser_results")
        tests = None
        if parser is not None:
            pr = expect_dict(parser, path, field + ".parser_results")
            outs = []
            for name, value in pr.items():
                if value not in _OUTCOMES:
                    raise InputError(path, f"expected passed or failed, got {value!r}",
                                     field=f"{field}.parser_results.{name}")
                outs.append(TestOutcome(str(name), _OUTCOMES[value]))
            tests = tuple(outs)
        index = start.get(task, 0) + used[task]
        used[task] += 1
        meta: dict[str, Any] = {"source": FORMAT, "trial_name": trial, "file": path.name}
        if r.get("failure_mode") not in (None, "unset"):
            meta["failure_mode"] = r["failure_mode"]
        tokens = [r.get("total_input_tokens"), r.get("total_output_tokens")]
        if resolved is None:
            unresolved_null += 1
        records.append(Rollout(
            task_id=task, agent=agent, rollout=index, tests=tests,
            verdict=bool(resolved),
            status="completed" if resolved is not None else _status(r.get("failure_mode")),
            meta=meta | ({"tokens": sum(t for t in tokens if isinstance(t, int))}
                         if any(isinstance(t, int) for t in tokens) else {}),
        ))
    for task, count in used.items():
        start[task] = start.get(task, 0) + count
    reported: list[ReportedFigure] = []
    pak = obj.get("pass_at_k")
    if isinstance(pak, dict):
        for key, value in pak.items():
            if isinstance(value, (int, float)) and str(key).isdigit():
                reported.append(ReportedFigure(agent, "pass@k", int(key), float(value),
                                               f"{path}: pass_at_k[{key}]"))
    acc = obj.get("accuracy")
    if isinstance(acc, (int, float)) and not isinstance(acc, bool):
        reported.append(ReportedFigure(agent, "mean", 1, float(acc), f"{path}: accuracy"))
    return records, reported, unresolved_null


def load(path: Path, data: Any = None, *, agent: str | None = None) -> ImportResult:
    """Read a Terminal-Bench ``results.json`` or a folder of them.

    Args:
        path: A results file or a folder holding results files (one agent per folder).
        data: The decoded JSON of ``path`` when the caller already has it.
        agent: Name to give the agent (only with a single agent's files).

    Raises:
        InputError: naming the file and the trial at fault.
    """
    if path.is_dir():
        files = [f for f in _result_files(path) if detect(read_json(f, under=path))]
        if not files:
            raise InputError(path, "no Terminal-Bench results.json below this folder")
        decoded = None
    else:
        files = [path]
        decoded = data
    by_agent: dict[str, list[Path]] = defaultdict(list)
    for f in files:
        by_agent[agent or f.resolve().parent.name].append(f)
    records: list[Rollout] = []
    reported: list[ReportedFigure] = []
    notes: list[str] = []
    for name, fs in sorted(by_agent.items()):
        start: dict[str, int] = {}
        nulls = 0
        for f in sorted(fs):
            obj = decoded if decoded is not None and f == path else read_json(
                f, under=path if path.is_dir() else None)
            recs, rep, n_null = _parse_file(f, obj, name, start)
            records += recs
            nulls += n_null
            if len(fs) == 1:  # a per-run figure does not describe the pooled runs
                reported += rep
        if len(fs) > 1:
            notes.append(f"{name}: {len(fs)} results files read as independent runs "
                         "(their per-run figures are not compared with the pooled data)")
        if nulls:
            notes.append(f"{name}: {nulls} trial(s) with is_resolved = null counted as failed "
                         "attempts (status from failure_mode), as Terminal-Bench counts them")
    return ImportResult(tuple(records), FORMAT, tuple(notes), tuple(reported))


IMPORTER = FormatImporter(
    FORMAT, "Terminal-Bench", frozenset({"folder", "json"}),
    lambda path, data: detect_dir(path) if path.is_dir() else detect(data), load,
)
"""``results.json`` files, or a folder of them."""
