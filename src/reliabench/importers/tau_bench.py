"""tau-bench trials: a JSON list of ``{"task_id", "trial", "reward", "info", "traj"}``.

Each entry is one rollout: ``task_id`` (an integer or a string) is the task, ``trial`` the
rollout index. Success = ``reward`` within 1e-6 of 1 (tau-bench's own rule); the reward is
kept in ``meta.reward``. tau-bench reports pass^k = mean over tasks of C(c, k) / C(n, k),
which is exactly reliabench's ``pass^k`` on these records. The agent is the file name without
``.json`` (the historical trajectories are named ``<model>-<domain>.json``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from reliabench.errors import InputError
from reliabench.importers._common import ImportResult, expect_dict, read_json
from reliabench.importers.base import FormatImporter
from reliabench.records import Rollout

__all__ = ["FORMAT", "IMPORTER", "SUCCESS_TOLERANCE", "detect", "load"]

FORMAT = "tau-bench"
SUCCESS_TOLERANCE = 1e-6


def detect(data: Any) -> bool:
    """Whether decoded JSON looks like a tau-bench trials list."""
    if not isinstance(data, list) or not data or not isinstance(data[0], dict):
        return False
    return {"task_id", "reward", "trial"} <= data[0].keys()


def _int_like(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def load(path: Path, data: Any = None, *, agent: str | None = None) -> ImportResult:
    """Read a tau-bench results file.

    Args:
        path: The JSON file.
        data: Its decoded content when the caller already has it.
        agent: Name to give the agent (default: the file name without ``.json``).

    Raises:
        InputError: naming the file and the entry at fault.
    """
    obj = read_json(path) if data is None else data
    if not isinstance(obj, list):
        raise InputError(path, f"expected a list of trials, got {type(obj).__name__}")
    name = agent or path.name.removesuffix(".json")
    records: list[Rollout] = []
    seen: dict[tuple[str, int], int] = {}
    for i, raw in enumerate(obj):
        e = expect_dict(raw, path, f"[{i}]")
        task = e.get("task_id")
        if isinstance(task, bool) or not isinstance(task, (int, str)) or task == "":
            raise InputError(path, f"expected an integer or string, got {task!r}", field=f"[{i}].task_id")
        trial = _int_like(e.get("trial", 0))
        if trial is None or trial < 0:
            raise InputError(path, f"expected an integer >= 0, got {e.get('trial')!r}", field=f"[{i}].trial")
        reward = e.get("reward")
        if isinstance(reward, bool) or not isinstance(reward, (int, float)) or not math.isfinite(reward):
            raise InputError(path, f"expected a finite number, got {reward!r}", field=f"[{i}].reward")
        key = (str(task), trial)
        if key in seen:
            raise InputError(path, f"task {task!r} trial {trial} already given in entry [{seen[key]}]",
                             field=f"[{i}]")
        seen[key] = i
        records.append(Rollout(task_id=str(task), agent=name, rollout=trial,
                               verdict=abs(float(reward) - 1.0) <= SUCCESS_TOLERANCE,
                               meta={"source": FORMAT, "reward": float(reward)}))
    if not records:
        raise InputError(path, "no trials in this file")
    records.sort(key=lambda r: (_sort_key(r.task_id), r.rollout))
    return ImportResult(tuple(records), FORMAT,
                        ("success = reward within 1e-6 of 1; verdicts only (no per-test outcomes)",))


def _sort_key(task: str) -> tuple[int, str]:
    return (int(task), "") if task.isdigit() else (1 << 62, task)


IMPORTER = FormatImporter(FORMAT, "tau-bench", frozenset({"json"}), lambda path, data: detect(data), load)
"""A JSON list of trials with rewards."""
