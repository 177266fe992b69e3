"""Host environments: the environment contract over a backend that runs one command on this host.

``bubblewrap``, ``namespaces`` and ``none`` run each command as its own sandboxed process
(:meth:`~reliabench.sandbox.base.SandboxBackend.run`); nothing lives between two commands but
the workspace. :class:`HostBackend` gives such a backend the lifecycle of
:mod:`reliabench.sandbox.environment`: ``prepare`` has nothing to build, ``start`` makes the
channel folder and returns a :class:`HostEnvironment`, whose ``exec`` is one ``run``; the
workspace is seen at its own host path, so ``copy_in``/``copy_out`` are bounded host copies.
A host backend refuses every spec that names an image or a Dockerfile.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from reliabench.errors import SandboxError
from reliabench.files.untrusted import open_regular, remove_tree, walk_tree
from reliabench.records import Isolation
from reliabench.sandbox.base import Limits, SandboxResult
from reliabench.sandbox.environment import (
    EnvironmentSpec,
    ImageRef,
    Mount,
    NetworkMode,
    PreparedSpec,
)
from reliabench.sandbox.slots import slot_uid

__all__ = ["HostBackend", "HostEnvironment", "copy_tree_bounded"]


def copy_tree_bounded(source: Path, target: Path, *, max_bytes: int, under: Path | None = None) -> int:
    """Copy the regular files and folders of ``source`` to ``target``; links are never followed.

    ``source`` may be a file or a folder. Links, FIFOs, sockets and devices are skipped.

    Returns:
        The number of bytes copied.

    Raises:
        FileNotFoundError: ``source`` does not exist.
        FileExistsError: ``target`` exists.
        SandboxError: More than ``max_bytes`` would be copied (what was copied is removed).
    """
    if os.path.lexists(target):
        raise FileExistsError(f"{target} exists")
    st = os.lstat(source)
    total = 0

    def copy_file(src: Path, dst: Path) -> None:
        nonlocal total
        with open_regular(src, under=under) as fh, open(dst, "wb") as out:
            while chunk := fh.read(1 << 20):
                total += len(chunk)
                if total > max_bytes:
                    raise SandboxError(f"copying {source} out: more than {max_bytes} bytes")
                out.write(chunk)

    try:
        if os.path.isdir(source) and not os.path.islink(source):
            target.mkdir(parents=True)
            for entry in walk_tree(source):
                if entry.kind == "dir":
                    (target / entry.rel).mkdir(parents=True, exist_ok=True)
                elif entry.kind == "file":
                    (target / entry.rel).parent.mkdir(parents=True, exist_ok=True)
                    copy_file(source / entry.rel, target / entry.rel)
        elif os.path.isfile(source) and not os.path.islink(source) and st.st_nlink >= 1:
            target.parent.mkdir(parents=True, exist_ok=True)
            copy_file(source, target)
        else:
            raise SandboxError(f"{source}: not a regular file or folder (never followed)")
    except BaseException:
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target, ignore_errors=True)
        elif os.path.lexists(target):
            os.unlink(target)
        raise
    return total


class HostEnvironment:
    """One rollout phase on this host: every ``exec`` is one sandboxed process of ``runner``."""

    keeps_processes: bool = False
    image: ImageRef | None = None

    def __init__(self, runner: HostBackend, *, workspace: Path, slot: int,
                 mounts: Sequence[Mount] = (), network: NetworkMode = "none") -> None:
        for m in mounts:
            if m.target is not None and m.target != str(m.source):
                raise SandboxError(f"the {runner.name} backend shows host paths at their own path only, "
                                   f"not {m.source} at {m.target}")
        self._runner = runner
        self.backend = runner.name
        self.isolation: Isolation = runner.name
        self._workspace = Path(os.path.realpath(workspace))
        self.workdir = str(self._workspace)
        self._slot = slot
        self._mounts = tuple(mounts)
        self._network = network
        parent = Path(tempfile.mkdtemp(prefix="rb-chan-"))
        os.chmod(parent, 0o711)
        self.channel_host = parent / "channel"
        self.channel_host.mkdir()
        if os.geteuid() == 0:
            os.chown(self.channel_host, slot_uid(slot), slot_uid(slot))
        os.chmod(self.channel_host, 0o700)
        self.channel_dir = str(self.channel_host)
        self._closed = False

    def exec(self, argv: Sequence[str], *, cwd: str | None = None, env: Mapping[str, str] | None = None,
             stdin: bytes | None = None, limits: Limits = Limits()) -> SandboxResult:
        """Run ``argv`` as one sandboxed process; see :class:`~reliabench.sandbox.environment.Environment`."""
        if self._closed:
            raise SandboxError("the environment is closed")
        workdir = Path(cwd) if cwd is not None else self._workspace
        readonly = [m.source for m in self._mounts if not m.writable] + [self.channel_host]
        stdin_file: Path | None = None
        try:
            if stdin is not None:
                fd, name = tempfile.mkstemp(prefix="rb-stdin-")
                with os.fdopen(fd, "wb") as fh:
                    fh.write(stdin)
                stdin_file = Path(name)
            return self._runner.run(argv, workdir=workdir, readonly=readonly, env=env, limits=limits,
                                    network=self._network == "host", slot=self._slot, stdin=stdin_file)
        finally:
            if stdin_file is not None:
                stdin_file.unlink(missing_ok=True)

    def _inside(self, path: str) -> Path:
        real = Path(os.path.normpath(path))
        for root in (self._workspace, self.channel_host):
            if real == root or root in real.parents:
                # no component below the root may be a link the agent planted: a copy never
                # goes through one
                probe = root
                for part in real.relative_to(root).parts[:-1]:
                    probe = probe / part
                    if probe.is_symlink():
                        raise SandboxError(f"{path}: {probe} is a link (never followed)")
                return real
        raise SandboxError(f"{path}: outside the workspace and the channel folder")

    def copy_in(self, source: Path, target: str) -> None:
        """Copy a host file or folder into the workspace or the channel folder."""
        dest = self._inside(target)
        try:
            if dest.exists():
                remove_tree(dest) if dest.is_dir() else dest.unlink()
            copy_tree_bounded(source, dest, max_bytes=1 << 40)
        except OSError as exc:
            raise SandboxError(f"copying {source} in: {exc}") from None

    def copy_out(self, source: str, target: Path, *, max_bytes: int) -> None:
        """Copy a file or folder of the workspace or channel folder out (bounded, no link followed)."""
        src = self._inside(source)
        if not os.path.lexists(src):
            raise FileNotFoundError(source)
        try:
            copy_tree_bounded(src, target, max_bytes=max_bytes, under=src.parent)
        except (OSError, ValueError) as exc:
            if isinstance(exc, FileNotFoundError):
                raise
            raise SandboxError(f"copying {source} out: {exc}") from None

    def stop_processes(self) -> None:
        """Nothing lives between two commands on a host backend."""

    def close(self) -> None:
        """Remove the channel folder; idempotent."""
        if self._closed:
            return
        self._closed = True
        remove_tree(self.channel_host.parent)


class HostBackend:
    """The lifecycle methods of a backend that runs one command at a time on this host."""

    name: str

    def run(self, argv: Sequence[str], *, workdir: Path, readonly: Sequence[Path] = (),
            env: Mapping[str, str] | None = None, limits: Limits = Limits(), network: bool = False,
            slot: int = 0, pass_fds: Sequence[int] = (), stdin: Path | None = None) -> SandboxResult:
        """One sandboxed process (each host backend defines it)."""
        raise NotImplementedError  # pragma: no cover - every host backend defines it

    def refuse(self, spec: EnvironmentSpec) -> str | None:
        """A host backend runs host tasks only, with the workspace at its own path."""
        if spec.kind != "host":
            what = spec.image if spec.image is not None else str(spec.dockerfile)
            return (f"{spec.source or 'the task'}: runs in a container ({what}); the {self.name} "
                    "backend runs on the host only: use --sandbox podman or --sandbox docker")
        if spec.workdir is not None:
            return (f"{spec.source or 'the task'}: workdir = {spec.workdir!r} needs a container "
                    f"backend; the {self.name} backend shows the workspace at its own path")
        return None

    def prepare(self, spec: EnvironmentSpec) -> PreparedSpec:
        """Nothing to build on the host."""
        why = self.refuse(spec)
        if why is not None:
            raise SandboxError(why)
        return PreparedSpec(spec=spec, backend=self.name)

    def start(self, prepared: PreparedSpec, *, workspace: Path, slot: int, mounts: Sequence[Mount] = (),
              network: NetworkMode = "none", limits: Limits = Limits()) -> HostEnvironment:
        """A :class:`HostEnvironment` on ``workspace`` (``limits`` apply per command)."""
        if prepared.backend != self.name:
            raise SandboxError(f"a spec prepared by {prepared.backend!r} given to {self.name!r}")
        return HostEnvironment(self, workspace=workspace, slot=slot, mounts=mounts, network=network)

    def sweep(self) -> int:
        """Host runs leave nothing a later run must remove (the slot's sweep covers processes)."""
        return 0
