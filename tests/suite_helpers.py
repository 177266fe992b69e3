"""A one-task suite written into a test's directory (what run, scan and rescan tests start from)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def one_task_suite(root: Path, workspace: Mapping[str, str], tests: Mapping[str, str], *,
                   task_id: str = "t1", name: str = "one-task", prompt: str = "Do the task.\n") -> Path:
    """Write ``root/suite`` with one task (starter files ``workspace``, hidden ``tests``); return it."""
    suite = root / "suite"
    task = suite / "tasks" / task_id
    (task / "workspace").mkdir(parents=True)
    (task / "tests").mkdir()
    (suite / "suite.toml").write_text(f'name = "{name}"\nversion = "0.1"\n')
    (task / "task.toml").write_text(f'id = "{task_id}"\nlanguage = "python"\ntimeout_s = 30\n')
    (task / "prompt.md").write_text(prompt)
    for rel, text in workspace.items():
        (task / "workspace" / rel).write_text(text)
    for rel, text in tests.items():
        (task / "tests" / rel).write_text(text)
    return suite
