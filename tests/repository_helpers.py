"""TEMPORARY test-only helper: bubblewrap with the workspace shown at a fixed path (``/testbed``).

Branch env21 gives the bubblewrap backend ``EnvironmentSpec.workdir`` and writable mounts
through the environment contract; until that is on main, repository tasks' tests, the
validation benchmark and the vendored extract start their environments with this helper,
which rewrites the bubblewrap command line of :class:`~reliabench.sandbox.bubblewrap.BubblewrapBackend`
(the workspace's ``--bind`` and ``--chdir`` go to the fixed path; writable mounts are
added). Remove it, and use ``backend.start(prepared, workspace=..., mounts=...)`` of a spec
with ``workdir = "/testbed"``, once env21 lands.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from reliabench.errors import SandboxError
from reliabench.files.untrusted import remove_tree
from reliabench.records import Isolation
from reliabench.sandbox.base import Limits, SandboxResult
from reliabench.sandbox.bubblewrap import BubblewrapBackend
from reliabench.sandbox.environment import Environment, ImageRef, Mount, NetworkMode
from reliabench.sandbox.host import copy_tree_bounded

__all__ = ["WorkdirBubblewrap", "bwrap_available", "opener"]


def bwrap_available() -> bool:
    """bwrap is on PATH."""
    return shutil.which("bwrap") is not None


class _Rewriting(BubblewrapBackend):
    def __init__(self, inside: str, cwd: str, writable: Sequence[str]) -> None:
        super().__init__()
        self._inside, self._cwd, self._writable = inside, cwd, tuple(writable)

    def _command(self, argv: Sequence[str], prog: str, *, workdir: str, **kw: object) -> list[str]:  # type: ignore[override]
        cmd = super()._command(argv, prog, workdir=workdir, **kw)  # type: ignore[arg-type]
        out: list[str] = []
        i = 0
        while i < len(cmd):
            if cmd[i : i + 3] == ["--bind", workdir, workdir]:
                out += ["--bind", workdir, self._inside]
                for w in self._writable:
                    out += ["--bind", w, w]
                i += 3
            elif cmd[i : i + 2] == ["--chdir", workdir]:
                out += ["--chdir", self._cwd]
                i += 2
            else:
                out.append(cmd[i])
                i += 1
        return out


class WorkdirBubblewrap:
    """An :class:`~reliabench.sandbox.environment.Environment` of bubblewrap with the workspace at ``inside``."""

    keeps_processes = False
    image: ImageRef | None = None
    backend = "bubblewrap"

    def __init__(
        self,
        workspace: Path,
        *,
        inside: str = "/testbed",
        slot: int = 0,
        mounts: Sequence[Mount] = (),
        network: NetworkMode = "none",
    ) -> None:
        self._workspace = Path(os.path.realpath(workspace))
        self.workdir = inside
        self._slot = slot
        self._mounts = tuple(mounts)
        self._network = network
        self.isolation: Isolation = "bubblewrap"
        parent = Path(tempfile.mkdtemp(prefix="rb-chan-"))
        os.chmod(parent, 0o711)
        self.channel_host = parent / "channel"
        self.channel_host.mkdir()
        self.channel_dir = str(self.channel_host)
        self._closed = False

    def exec(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        stdin: bytes | None = None,
        limits: Limits = Limits(),
    ) -> SandboxResult:
        if self._closed:
            raise SandboxError("the environment is closed")
        ro = [m.source for m in self._mounts if not m.writable]
        rw = [os.path.realpath(m.source) for m in self._mounts if m.writable]
        backend = _Rewriting(self.workdir, cwd or self.workdir, rw)
        return backend.run(
            argv,
            workdir=self._workspace,
            readonly=ro,
            env=env,
            limits=limits,
            network=self._network == "host",
            slot=self._slot,
        )

    def _host(self, inside: str) -> Path:
        rel = os.path.relpath(os.path.normpath(inside), self.workdir)
        if rel.startswith(".."):
            raise SandboxError(f"{inside}: outside {self.workdir}")
        return self._workspace / rel

    def copy_in(self, source: Path, target: str) -> None:
        copy_tree_bounded(source, self._host(target), max_bytes=1 << 40)

    def copy_out(self, source: str, target: Path, *, max_bytes: int) -> None:
        copy_tree_bounded(self._host(source), target, max_bytes=max_bytes)

    def stop_processes(self) -> None:
        pass

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            remove_tree(self.channel_host.parent)


def opener(inside: str = "/testbed", slot: int = 0, network: NetworkMode = "none"):  # type: ignore[no-untyped-def]
    """``(workspace, mounts) -> Environment`` for :func:`reliabench.repository.venv.build_task` and the grader."""

    def open_env(workspace: Path, mounts: Sequence[Mount]) -> Environment:
        return WorkdirBubblewrap(workspace, inside=inside, slot=slot, mounts=mounts, network=network)

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
