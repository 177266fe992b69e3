"""A container-like backend plugin for the runner's tests: host environments that pretend to be an image.

``FakeBox`` runs tasks that name an image (or a Dockerfile) of its own catalogue and refuses
host tasks, as a container backend does; under the hood each environment is a bubblewrap
environment (so containment still holds) with what a container has and a host environment
has not:

* the workspace at ``/workspace`` (or the spec's ``workdir``), not at its host path;
* a machine that outlives a command: ``/machine`` is the environment's own writable folder,
  kept until ``close`` (what ``tests = "same"`` hands over to the tests), and processes that
  outlive ``exec`` until ``stop_processes`` (``keeps_processes``);
* ``copy_in`` to any path (the staged tests of ``tests = "same"`` go where a container would
  put them);
* an image digest read by ``prepare`` (a missing image raises there), and a record of every
  call (``FakeBox.calls``, class-wide: the runner creates its own instance).

Register it with :func:`fakebox` (a fixture helper); ``CATALOGUE`` is the images it "has".
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from reliabench.errors import SandboxError
from reliabench.sandbox import HOST, Limits, Mount, SandboxResult
from reliabench.sandbox.bubblewrap import BubblewrapBackend
from reliabench.sandbox.environment import CONTAINER_WORKDIR, EnvironmentSpec, ImageRef, PreparedSpec
from reliabench.sandbox.host import HostEnvironment
from reliabench.sandbox.registry import _SHARED, SANDBOXES

NAME = "fakebox"


class FakeEnvironment:
    """One fake container: a bubblewrap environment with a machine folder and a process list."""

    keeps_processes = True

    def __init__(self, box: FakeBox, prepared: PreparedSpec, workspace: Path, slot: int,
                 mounts: Sequence[Mount], network: str) -> None:
        self.backend = NAME
        self.isolation = NAME
        self.image = prepared.image
        self._box = box
        self._machine = Path(tempfile.mkdtemp(prefix="rb-fakebox-"))
        os.chmod(self._machine, 0o777)
        self._copies: list[Mount] = []
        spec = EnvironmentSpec(workdir=prepared.spec.workdir or CONTAINER_WORKDIR)
        self._inner = HostEnvironment(box.inner, spec=spec, workspace=workspace, slot=slot,
                                      mounts=[*mounts, Mount(self._machine, target="/machine", writable=True)],
                                      network="none" if network == "endpoint" else network)  # type: ignore[arg-type]
        self.workdir = self._inner.workdir
        self.channel_dir = self._inner.channel_dir
        self.channel_host = self._inner.channel_host
        self.stopped = 0
        self.closed = False

    def exec(self, argv: Sequence[str], *, cwd: str | None = None, env: Mapping[str, str] | None = None,
             stdin: bytes | None = None, limits: Limits = Limits()) -> SandboxResult:
        self._box.record("exec", list(argv)[:3])
        if self.closed:
            raise SandboxError("the fake container is gone")
        self._inner._mounts = (*self._inner._mounts, *(
            (str(m.source), m.target or str(m.source), False) for m in self._copies))
        self._copies = []
        return replace(self._inner.exec(argv, cwd=cwd, env=env, stdin=stdin, limits=limits), isolation=NAME)

    def copy_in(self, source: Path, target: str) -> None:
        self._box.record("copy_in", target)
        if target.startswith(self.workdir) or target.startswith(self.channel_dir):
            self._inner.copy_in(source, target)
            return
        copy = Path(tempfile.mkdtemp(prefix="rb-fakebox-copy-", dir=self._machine.parent)) / "c"
        shutil.copytree(source, copy) if source.is_dir() else shutil.copyfile(source, copy)
        for p in [copy, *copy.rglob("*")] if copy.is_dir() else [copy]:
            os.chmod(p, 0o755 if p.is_dir() else 0o644)
        os.chmod(copy.parent, 0o755)
        self._copies.append(Mount(copy, target=target))

    def copy_out(self, source: str, target: Path, *, max_bytes: int) -> None:
        self._inner.copy_out(source, target, max_bytes=max_bytes)

    def stop_processes(self) -> None:
        self._box.record("stop_processes", None)
        self.stopped += 1

    def close(self) -> None:
        if self.closed:
            return
        self._box.record("close", None)
        self.closed = True
        self._inner.close()
        shutil.rmtree(self._machine, ignore_errors=True)


class FakeBox:
    """A container-like backend (see the module docstring)."""

    name = NAME
    calls: ClassVar[list[tuple[str, Any]]] = []
    catalogue: ClassVar[dict[str, str]] = {}
    fail_start: ClassVar[str | None] = None
    fail_after: ClassVar[int] = 0
    """``fail_start`` applies after this many successful starts."""
    lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self) -> None:
        self.inner = BubblewrapBackend()

    def record(self, what: str, detail: Any) -> None:
        with self.lock:
            self.calls.append((what, detail))

    def refuse(self, spec: EnvironmentSpec) -> str | None:
        self.record("refuse", spec.kind)
        if spec.kind == "host":
            return f"{spec.source or 'the task'}: runs on the host; the {NAME} backend runs images only"
        return None

    def prepare(self, spec: EnvironmentSpec) -> PreparedSpec:
        self.record("prepare", spec.image or str(spec.dockerfile))
        if spec.dockerfile is not None:
            digest = "sha256:" + hashlib.sha256(spec.dockerfile.read_bytes()).hexdigest()
            return PreparedSpec(spec, NAME, ImageRef(f"{NAME}-built:{digest[7:19]}", digest))
        assert spec.image is not None
        if spec.image not in self.catalogue:
            raise SandboxError(f"image {spec.image} is not in {NAME}: load it first")
        return PreparedSpec(spec, NAME, ImageRef(spec.image, self.catalogue[spec.image]))

    def start(self, prepared: PreparedSpec, *, workspace: Path, slot: int, mounts: Sequence[Mount] = (),
              network: str = "none", limits: Limits = Limits()) -> FakeEnvironment:
        self.record("start", (str(workspace), network, tuple(str(m.source) for m in mounts)))
        if prepared.backend != NAME:
            raise SandboxError(f"a spec prepared by {prepared.backend!r} given to {NAME!r}")
        with self.lock:
            started = sum(1 for c, _ in self.calls if c == "started")
        if self.fail_start is not None and started >= self.fail_after:
            raise SandboxError(self.fail_start)
        self.record("started", None)
        return FakeEnvironment(self, prepared, workspace, slot, mounts, network)

    def sweep(self) -> int:
        self.record("sweep", None)
        return 0


def digest_of(reference: str) -> str:
    """The fake digest of an image in the catalogue."""
    return "sha256:" + hashlib.sha256(reference.encode()).hexdigest()


@contextmanager
def fakebox(*images: str) -> Iterator[type[FakeBox]]:
    """Register ``fakebox`` with ``images`` in its catalogue for the duration; yields the class."""
    FakeBox.calls.clear()
    FakeBox.catalogue = {ref: digest_of(ref) for ref in images}
    FakeBox.fail_start = None
    FakeBox.fail_after = 0
    SANDBOXES.register(NAME, FakeBox, replace=True)
    try:
        yield FakeBox
    finally:
        SANDBOXES.unregister(NAME)
        _SHARED.pop(NAME, None)
        FakeBox.calls.clear()


__all__ = ["HOST", "NAME", "FakeBox", "FakeEnvironment", "digest_of", "fakebox"]
