"""Host environments: the environment contract over backends that run one sandboxed command at a time.

``bubblewrap``, ``namespaces``, ``none`` and the warm jail (:mod:`reliabench.warm.backend`)
run each command as its own sandboxed process on this host; nothing lives between two commands
but the workspace and the channel folder. :class:`HostBackend` gives such a backend the
lifecycle of :mod:`reliabench.sandbox.environment`: ``prepare`` has nothing to build,
``start`` checks what is asked against what the backend can give (refusing it by name before
anything starts) and returns a :class:`HostEnvironment`, whose ``exec`` is one sandboxed
process (:meth:`HostBackend.spawn`, the one method each backend defines). ``run`` is the
one-command convenience: ``start`` + ``exec`` + ``close``.

What each backend can give is declared on its class (:class:`HostBackend` attributes):

=============  ==============================  ===============  ===============  ========
backend        network modes                   paths elsewhere  writable mounts  stdin
=============  ==============================  ===============  ===============  ========
bubblewrap     none, endpoint, host            yes (workdir)    yes              yes
namespaces     none, host                      no               no               yes
none           none (not enforced), host       no               no               yes
warm           none                            no               yes              no
=============  ==============================  ===============  ===============  ========

"Paths elsewhere" is a :class:`~reliabench.sandbox.environment.Mount` whose ``target`` is not
its own host path, and a spec's ``workdir`` (the workspace shown at, say, ``/testbed``): only
a backend with a private file-system view can place a host folder somewhere else. A backend
without one (``namespaces``, ``none``) shows the host as Unix permissions let the slot uid
see it, so it cannot make a mount read-only or writable either: it refuses writable mounts.

The channel folder (:attr:`HostEnvironment.channel_host`) is made fresh per environment in a
root-owned 0711 folder, owned by the slot uid (mode 0700) when reliabench runs as root, and
is writable by the commands at its own path: the agent's usage file and the hidden tests'
outcome socket live there.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Final

from reliabench.errors import SandboxError
from reliabench.files.untrusted import open_regular, remove_tree, walk_tree
from reliabench.records import Isolation
from reliabench.sandbox.base import DEFAULT_PATH, Limits, SandboxResult
from reliabench.sandbox.environment import (
    HOST,
    EnvironmentSpec,
    ImageRef,
    Mount,
    NetworkMode,
    PreparedSpec,
)
from reliabench.sandbox.rootfs import SYSTEM_DIRS, under
from reliabench.sandbox.slots import slot_uid

__all__ = ["HostBackend", "HostEnvironment", "HostView", "copy_tree_bounded"]

_RESERVED_INSIDE: Final = (*SYSTEM_DIRS, "/proc", "/dev", "/etc", "/sys", "/run")
"""Inside paths a ``workdir`` or a mount target may not be (or be below): the sandbox's own."""


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


@dataclass(frozen=True, slots=True)
class HostView:
    """What one host command sees of the host: the workspace and the mounts, host path -> inside path.

    Attributes:
        workspace: The workspace's real host path.
        workdir: Where the command sees the workspace.
        cwd: The command's working directory (inside).
        readonly: ``(host path, inside path)`` of each read-only mount.
        writable: ``(host path, inside path)`` of each writable mount the caller asked for.
        channel: ``(host path, inside path)`` of the channel folder (writable, owned by the
            command's uid).
    """

    workspace: str
    workdir: str
    cwd: str
    readonly: tuple[tuple[str, str], ...] = ()
    writable: tuple[tuple[str, str], ...] = ()
    channel: tuple[str, str] | None = None


def _inside_path_problem(path: str) -> str | None:
    """Why ``path`` cannot be a place inside a host sandbox (None: it can)."""
    if not path.startswith("/") or os.path.normpath(path) != path or path == "/":
        return "an absolute, normalised path other than /"
    for reserved in _RESERVED_INSIDE:
        if under(path, reserved):
            return f"a path outside the sandbox's own {reserved}"
    return None


class HostEnvironment:
    """One rollout phase on this host: every ``exec`` is one sandboxed process of ``runner``."""

    keeps_processes: bool = False
    image: ImageRef | None = None

    def __init__(self, runner: HostBackend, *, spec: EnvironmentSpec, workspace: Path, slot: int,
                 mounts: Sequence[Mount] = (), network: NetworkMode = "none") -> None:
        self._runner = runner
        self.backend = runner.name
        self.isolation: Isolation = runner.name
        self._workspace = os.path.realpath(workspace)
        if not os.path.isdir(self._workspace):
            raise SandboxError(f"workspace is not a directory: {workspace}")
        self.workdir = spec.workdir or self._workspace
        self._slot = slot
        self._mounts = tuple((os.path.realpath(m.source), m.target or os.path.realpath(m.source), m.writable)
                             for m in mounts)
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

    def _view(self, cwd: str | None) -> HostView:
        return HostView(
            workspace=self._workspace, workdir=self.workdir, cwd=cwd or self.workdir,
            readonly=tuple((s, t) for s, t, w in self._mounts if not w),
            writable=tuple((s, t) for s, t, w in self._mounts if w),
            channel=(str(self.channel_host), self.channel_dir),
        )

    def exec(self, argv: Sequence[str], *, cwd: str | None = None, env: Mapping[str, str] | None = None,
             stdin: bytes | None = None, limits: Limits = Limits()) -> SandboxResult:
        """Run ``argv`` as one sandboxed process; see :class:`~reliabench.sandbox.environment.Environment`."""
        if stdin is not None and not self._runner.feeds_stdin:
            raise SandboxError(f"the {self.backend} backend does not feed standard input")
        stdin_file: Path | None = None
        try:
            if stdin is not None:
                fd, name = tempfile.mkstemp(prefix="rb-stdin-")
                with os.fdopen(fd, "wb") as fh:
                    fh.write(stdin)
                stdin_file = Path(name)
            return self.exec_file(argv, cwd=cwd, env=env, stdin=stdin_file, limits=limits)
        finally:
            if stdin_file is not None:
                stdin_file.unlink(missing_ok=True)

    def exec_file(self, argv: Sequence[str], *, cwd: str | None = None, env: Mapping[str, str] | None = None,
                  stdin: Path | None = None, limits: Limits = Limits()) -> SandboxResult:
        """:meth:`exec` with standard input read from the host file ``stdin`` (opened by the parent).

        Raises:
            SandboxError: The environment is closed, or the command could not be started.
        """
        if self._closed:
            raise SandboxError("the environment is closed")
        if stdin is not None and not self._runner.feeds_stdin:
            raise SandboxError(f"the {self.backend} backend does not feed standard input, got stdin={stdin}")
        if cwd is not None and not (under(cwd, self.workdir) or under(cwd, self.channel_dir)):
            raise SandboxError(f"cwd {cwd}: outside the workspace ({self.workdir}) and the channel folder")
        return self._runner.spawn(argv, view=self._view(cwd), env=env, limits=limits,
                                  network=self._network == "host", slot=self._slot, stdin=stdin)

    def _host_path(self, path: str) -> Path:
        """The host path of ``path`` inside (the workspace or the channel folder); no link on the way."""
        inside = os.path.normpath(path)
        roots = ((self.workdir, self._workspace), (self.channel_dir, str(self.channel_host)))
        for root_inside, root_host in roots:
            if not under(inside, root_inside):
                continue
            rel = os.path.relpath(inside, root_inside)
            host = Path(root_host) if rel == "." else Path(root_host) / rel
            # no component below the root may be a link the agent planted: a copy never goes
            # through one
            probe = Path(root_host)
            for part in host.relative_to(root_host).parts[:-1]:
                probe = probe / part
                if probe.is_symlink():
                    raise SandboxError(f"{path}: {probe} is a link (never followed)")
            return host
        raise SandboxError(f"{path}: outside the workspace and the channel folder")

    def copy_in(self, source: Path, target: str) -> None:
        """Copy a host file or folder into the workspace or the channel folder."""
        if self._closed:
            raise SandboxError("the environment is closed")
        dest = self._host_path(target)
        try:
            if os.path.lexists(dest):
                remove_tree(dest) if dest.is_dir() and not dest.is_symlink() else dest.unlink()
            copy_tree_bounded(source, dest, max_bytes=1 << 40)
        except OSError as exc:
            raise SandboxError(f"copying {source} in: {exc}") from None

    def copy_out(self, source: str, target: Path, *, max_bytes: int) -> None:
        """Copy a file or folder of the workspace or channel folder out (bounded, no link followed)."""
        if self._closed:
            raise SandboxError("the environment is closed")
        src = self._host_path(source)
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
    """The lifecycle of a backend that runs one sandboxed command at a time on this host.

    A subclass defines :meth:`spawn` and says what it can give in the class attributes below;
    :meth:`refuse` and :meth:`start` refuse the rest by name before anything starts.
    """

    name: str
    networks: ClassVar[frozenset[NetworkMode]] = frozenset({"none", "host"})
    """The network modes it gives."""
    moves_paths: ClassVar[bool] = False
    """It can show a host path somewhere else (a mount's ``target``, a spec's ``workdir``)."""
    writable_mounts: ClassVar[bool] = False
    """It can show a mount writable (and keep the others read-only)."""
    feeds_stdin: ClassVar[bool] = True
    """It feeds standard input to a command."""

    def spawn(self, argv: Sequence[str], *, view: HostView, env: Mapping[str, str] | None,
              limits: Limits, network: bool, slot: int, stdin: Path | None) -> SandboxResult:
        """Run ``argv`` as one sandboxed process seeing ``view`` (each host backend defines it).

        Raises:
            SandboxError: The sandbox could not be set up.
        """
        raise NotImplementedError  # pragma: no cover - every host backend defines it

    def run(self, argv: Sequence[str], *, workdir: Path, readonly: Sequence[Path] = (),
            env: Mapping[str, str] | None = None, limits: Limits = Limits(), network: bool = False,
            slot: int = 0, stdin: Path | None = None) -> SandboxResult:
        """One command in a host environment on ``workdir``: ``start`` + ``exec`` + ``close``.

        Args:
            argv: The command; ``argv[0]`` is looked up on ``PATH`` if it has no slash.
            workdir: The workspace: the only writable place besides ``/tmp`` and the channel
                folder, seen at its own path, the command's cwd.
            readonly: Host paths shown read-only at their own path.
            env: The whole environment of the command; None gives a minimal one.
            limits: Resource limits.
            network: The host's network (``network = "host"``) instead of none.
            slot: The worker slot; runs of one slot never overlap.
            stdin: A host file fed to standard input (None: ``/dev/null``).

        Returns:
            What happened; a command that fails is a result, not an exception.

        Raises:
            SandboxError: The sandbox could not be set up, or an argument asks for what this
                backend cannot give (raised before anything starts).
        """
        environment = self.start(self.prepare(HOST), workspace=workdir, slot=slot,
                                 mounts=[Mount(Path(p)) for p in readonly],
                                 network="host" if network else "none")
        try:
            return environment.exec_file(argv, env=env, limits=limits, stdin=stdin)
        finally:
            environment.close()

    def harness_problem(self, python: str, modules: Sequence[str]) -> str | None:
        """Why the slot uid cannot start ``python`` importing ``modules`` here (None: it can).

        A backend that shows the interpreter through its own binds (bubblewrap, warm) or runs
        as the caller (none) always can; :class:`~reliabench.sandbox.namespaces.NamespacesBackend`
        checks the host's permissions.
        """
        return None

    def probe(self) -> str | None:
        """Run ``true`` once on an empty workspace: why this backend does not work here, or None."""
        with tempfile.TemporaryDirectory(prefix="rb-probe-") as tmp:
            os.chmod(tmp, 0o755)
            true = shutil.which("true", path=DEFAULT_PATH) or "/bin/true"
            try:
                result = self.run([true], workdir=Path(tmp), limits=Limits(wall_s=10.0), slot=0)
            except SandboxError as exc:
                return str(exc)
        if result.returncode != 0:
            detail = result.stderr.strip().splitlines()[-1:] or [f"exit status {result.returncode}"]
            return f"{self.name} does not work on this host: {detail[0]}"
        return None

    def refuse(self, spec: EnvironmentSpec) -> str | None:
        """Why this backend cannot run ``spec`` (one line, with the fix), or None.

        A host backend runs host tasks only, as the slot uid, on the host's own root.
        """
        where = spec.source or "the task"
        if spec.kind != "host":
            what = spec.image if spec.image is not None else str(spec.dockerfile)
            return (f"{where}: runs in a container ({what}); the {self.name} backend runs on the "
                    "host only: use --sandbox auto (or --sandbox podman, --sandbox docker)")
        if spec.user is not None:
            return (f"{where}: user = {spec.user!r} needs a container backend; the {self.name} "
                    "backend runs every command as the slot's own non-root uid")
        if spec.writable_root:
            return (f"{where}: writable_root = true needs a container backend; the {self.name} "
                    "backend shows the host's system folders read-only")
        if spec.workdir is not None:
            if not self.moves_paths:
                return (f"{where}: workdir = {spec.workdir!r} needs a backend with a private file "
                        f"system view (bubblewrap, a container); the {self.name} backend shows the "
                        "workspace at its own path")
            problem = _inside_path_problem(spec.workdir)
            if problem is not None:
                return f"{where}: workdir = {spec.workdir!r}: expected {problem}"
        return None

    def prepare(self, spec: EnvironmentSpec) -> PreparedSpec:
        """Nothing to build on the host (refused specs raise ``SandboxError``)."""
        why = self.refuse(spec)
        if why is not None:
            raise SandboxError(why)
        return PreparedSpec(spec=spec, backend=self.name)

    def start(self, prepared: PreparedSpec, *, workspace: Path, slot: int, mounts: Sequence[Mount] = (),
              network: NetworkMode = "none", limits: Limits = Limits()) -> HostEnvironment:
        """A :class:`HostEnvironment` on ``workspace`` (``limits`` apply per command).

        Raises:
            SandboxError: ``prepared`` is another backend's, or a network mode or mount this
                backend cannot give (named; nothing was started).
        """
        if prepared.backend != self.name:
            raise SandboxError(f"a spec prepared by {prepared.backend!r} given to {self.name!r}")
        slot_uid(slot)  # checks the range
        if network not in self.networks:
            raise SandboxError(f"the {self.name} backend cannot give network = {network!r} (it gives "
                               f"{', '.join(sorted(self.networks))})")
        for m in mounts:
            source = os.path.realpath(m.source)
            if m.target is not None and m.target != source:
                if not self.moves_paths:
                    raise SandboxError(f"the {self.name} backend shows host paths at their own path "
                                       f"only, not {m.source} at {m.target}")
                problem = _inside_path_problem(m.target)
                if problem is not None:
                    raise SandboxError(f"mount target {m.target}: expected {problem}")
            if m.writable and not self.writable_mounts:
                raise SandboxError(f"the {self.name} backend cannot show {m.source} writable (it has "
                                   "no private file-system view)")
            if not os.path.exists(source):
                raise SandboxError(f"mount source {m.source} does not exist")
        return HostEnvironment(self, spec=prepared.spec, workspace=workspace, slot=slot, mounts=mounts,
                               network=network)

    def sweep(self) -> int:
        """Host runs leave nothing a later run must remove (the slot's sweep covers processes)."""
        return 0
