"""Helpers of the repository tasks' tests: bubblewrap with the workspace at ``/testbed``, the vendored suite.

:func:`opener` starts environments of the bubblewrap backend for a spec with
``workdir = "/testbed"`` (the workspace bound there, writable mounts lent to the slot uid:
the environment contract, ``backend.start(prepared, workspace=..., mounts=...)``).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

from reliabench.sandbox.bubblewrap import BubblewrapBackend
from reliabench.sandbox.environment import Environment, EnvironmentSpec, Mount, NetworkMode

__all__ = ["bwrap_available", "opener"]


def bwrap_available() -> bool:
    """bwrap is on PATH."""
    return shutil.which("bwrap") is not None


def opener(inside: str = "/testbed", slot: int = 0,
           network: NetworkMode = "none") -> Callable[[Path, Sequence[Mount]], Environment]:
    """``(workspace, mounts) -> Environment`` for :func:`reliabench.repository.venv.build_task` and the grader."""
    backend = BubblewrapBackend()
    prepared = backend.prepare(EnvironmentSpec(workdir=inside))

    def open_env(workspace: Path, mounts: Sequence[Mount]) -> Environment:
        return backend.start(prepared, workspace=workspace, slot=slot, mounts=mounts, network=network)

    return open_env


FIXTURE = Path(__file__).parent / "fixtures" / "repository" / "marshmallow-1359"
"""The vendored extract: SWE-bench's marshmallow-code__marshmallow-1359, its repository trimmed."""


def vendored_suite(tmp: Path):  # type: ignore[no-untyped-def]
    """Convert the vendored instance with ``suites import swebench`` into ``tmp/suite``; return the suite."""
    import json

    from reliabench.tasks.convert import ConvertOptions, import_suite
    from reliabench.tasks.suite import load_suite

    row = json.loads((FIXTURE / "instance.json").read_text(encoding="utf-8"))
    repos = tmp / "repos"
    repos.mkdir(parents=True)
    shutil.copyfile(FIXTURE / "repo.tar.gz", repos / f"{row['instance_id']}.tar.gz")
    (tmp / "instances.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    import_suite("swebench", tmp / "instances.jsonl", tmp / "suite", ConvertOptions(repos=repos))
    return load_suite(tmp / "suite")
