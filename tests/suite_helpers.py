"""A one-task suite written into a test's directory (what run, scan and rescan tests start from).

``write_adder_suite`` writes the runner tests' usual suite on top of it: tasks that ask for
``add(a, b)`` in ``adder.py``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

STARTER = "def add(a, b):\n    raise NotImplementedError\n"


def one_task_suite(root: Path, workspace: Mapping[str, str], tests: Mapping[str, str], *,
                   task_id: str = "t1", name: str = "one-task", prompt: str = "Do the task.\n",
                   timeout_s: int = 30) -> Path:
    """Write ``root/suite`` with one task (starter files ``workspace``, hidden ``tests``); return it."""
    suite = root / "suite"
    task = suite / "tasks" / task_id
    (task / "workspace").mkdir(parents=True)
    (task / "tests").mkdir()
    (suite / "suite.toml").write_text(f'name = "{name}"\nversion = "0.1"\n')
    (task / "task.toml").write_text(f'id = "{task_id}"\nlanguage = "python"\ntimeout_s = {timeout_s}\n')
    (task / "prompt.md").write_text(prompt)
    for rel, text in workspace.items():
        (task / "workspace" / rel).write_text(text)
    for rel, text in tests.items():
        (task / "tests" / rel).write_text(text)
    return suite


def write_adder_suite(root: Path, name: str, tests: str, *, task_ids: Sequence[str] = ("adder",),
                      prompt: str = "Implement add(a, b) in adder.py.\n", timeout_s: int = 20,
                      solution: str | None = None, world_readable: bool = False) -> Path:
    """Write ``root/suite``: one task per id, each with the starter, ``tests`` as ``tests/test_adder.py``.

    Args:
        root: Where the suite directory goes.
        name: The suite's name.
        tests: The hidden tests' source.
        task_ids: One task per id (same files).
        prompt: Each task's ``prompt.md``.
        timeout_s: Each task's time limit.
        solution: A reference ``solution/adder.py``, or None for no solution directory.
        world_readable: Make every file and directory readable by any uid (0644 / 0755).

    Returns:
        The suite directory.
    """
    suite = root / "suite"
    for tid in task_ids:
        suite = one_task_suite(root, {"adder.py": STARTER}, {"test_adder.py": tests}, task_id=tid,
                               name=name, prompt=prompt, timeout_s=timeout_s)
        if solution is not None:
            (suite / "tasks" / tid / "solution").mkdir()
            (suite / "tasks" / tid / "solution" / "adder.py").write_text(solution)
    if world_readable:
        for p in [suite, *suite.rglob("*")]:
            os.chmod(p, 0o755 if p.is_dir() else 0o644)
    return suite


def replay_run(root: Path, suite: Path, gens: Sequence[Mapping[str, object]], agents: Sequence[str],
               *args: str) -> Path:
    """Run ``suite`` with replay agents ``agents`` answering from ``gens`` (``reliabench run``); return RUN.

    ``gens`` are replay lines (agent, task_id, rollout, files); ``args`` are more ``run`` options.
    """
    import json

    from reliabench.cli import main

    (root / "gens.jsonl").write_text("".join(json.dumps(g) + "\n" for g in gens))
    (root / "agents.toml").write_text("".join(
        f'[[agents]]\nname = "{name}"\nkind = "replay"\npath = "gens.jsonl"\n\n' for name in agents))
    out = root / "run"
    assert main(["run", str(suite), "--agents", str(root / "agents.toml"), "--out", str(out), *args]) == 0
    return out
