"""A small task suite on disk for runner tests: tasks that ask for ``add(a, b)`` in ``adder.py``."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

STARTER = "def add(a, b):\n    raise NotImplementedError\n"


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
    suite.mkdir(parents=True)
    (suite / "suite.toml").write_text(f'name = "{name}"\nversion = "0.1"\n')
    for tid in task_ids:
        task = suite / "tasks" / tid
        (task / "workspace").mkdir(parents=True)
        (task / "tests").mkdir()
        (task / "task.toml").write_text(f'id = "{tid}"\nlanguage = "python"\ntimeout_s = {timeout_s}\n')
        (task / "prompt.md").write_text(prompt)
        (task / "workspace" / "adder.py").write_text(STARTER)
        (task / "tests" / "test_adder.py").write_text(tests)
        if solution is not None:
            (task / "solution").mkdir()
            (task / "solution" / "adder.py").write_text(solution)
    if world_readable:
        for p in [suite, *suite.rglob("*")]:
            os.chmod(p, 0o755 if p.is_dir() else 0o644)
    return suite
