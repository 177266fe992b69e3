"""The environment contract: where a rollout's commands run, with a lifecycle.

Every place reliabench runs code an agent wrote -- the agent phase of a command agent, the
hidden tests, a stdio case, a language's test command, the containment self-check -- goes
through this one contract. It is modelled on what Inspect AI's ``SandboxEnvironment`` shows
works (exec, file copies, per-task and per-sample set-up and clean-up), in our own words and
types, and with what reliabench adds: resource limits on every command, a bounded and
link-free way out, a channel folder instead of inherited descriptors, and the isolation that
was given recorded with every result.

The lifecycle, for one task of a run and one rollout of it::

    backend = get_backend("podman")                 # a registered EnvironmentBackend
    why = backend.refuse(spec)                      # before anything starts: None or the reason
    prepared = backend.prepare(spec)                # once per (task spec, run): build / check the image
    env = backend.start(prepared, workspace=ws, slot=3, mounts=[...], network=False, limits=lim)
    try:
        res = env.exec(["python3", "-m", "pytest"], limits=lim)   # as often as needed
        env.copy_in(host_dir, env.channel_dir + "/x")             # host -> environment
        env.copy_out(env.workdir + "/report.xml", host_file, max_bytes=1 << 20)
        env.stop_processes()                        # the tests of ``tests = "same"`` come next
    finally:
        env.close()                                 # nothing of it survives
    backend.sweep()                                 # leftovers of runs that were killed

What an :class:`Environment` promises:

* ``exec`` runs ``argv`` as the environment's user with ``cwd`` (default: :attr:`~Environment.workdir`)
  and the WHOLE environment ``env`` (nothing of the host's), ``stdin`` bytes on standard
  input, under :class:`~reliabench.sandbox.base.Limits` (wall time and output size enforced by
  the caller's side, the rest by rlimits or the runtime's cgroups), and returns a
  :class:`~reliabench.sandbox.base.SandboxResult`: exit status, bounded stdout and stderr, the
  limit that stopped it (``killed_reason``, in the same words on every backend), the
  isolation given. A command that fails is a result, not an exception. No process that
  ``exec`` started is left when it returns, except in an environment whose
  :attr:`~Environment.keeps_processes` is True (a container: processes live until
  :meth:`~Environment.stop_processes` or :meth:`~Environment.close`).
* The workspace -- a host folder the runner made for the rollout -- is the environment's
  only writable place besides its private ``/tmp`` (and the image's root where the spec
  asks for a writable root), visible at :attr:`~Environment.workdir`.
* :attr:`~Environment.channel_dir` is a folder the commands see and may write, backed by
  the host folder :attr:`~Environment.channel_host` (the same files, live: a bind mount), made
  fresh and empty for this environment. It carries what used to need inherited file
  descriptors: a Unix socket the harness binds in ``channel_host`` and listens on, which a
  command connects to at ``channel_dir`` (the signed outcome channel of the hidden tests:
  :mod:`reliabench.hidden_tests.outcome_socket`), and ``usage.json``, which an agent writes
  (:mod:`reliabench.agents.usage`). Any backend can carry a folder; only a backend on this host
  could carry descriptors. Nothing passes a descriptor into an environment.
* ``copy_in`` and ``copy_out`` move files and folders across, bounded; ``copy_out`` never
  follows a link and never writes outside ``dest``.
* ``close`` ends every process and removes everything the environment made (containers,
  volumes, the channel folder), also when called twice. A backend that can be left behind by
  a ``kill -9`` of reliabench (a container runtime) labels what it makes and removes such
  leftovers in :meth:`EnvironmentBackend.sweep`, which every run calls once before its first
  rollout -- only what a process that is gone left: two runs may share a host, and the Ray
  actors of one run a node.

Who starts what, per rollout (:mod:`reliabench.run.environments`): the agent's environment
when the agent first opens it (:class:`reliabench.agents.base.AgentEnvironment`, network as the
agent asks, read-only mounts); then, after the agent returned, that environment is closed
(``tests = "fresh"``: the tests get a new one from the same prepared spec, network ``none``,
the staged tests as a read-only mount) or its processes are stopped (``tests = "same"``: the
staged tests are copied in with ``copy_in`` and the tests run in it). The runner closes every
environment when the rollout ends.

What an :class:`EnvironmentBackend` promises:

* ``refuse(spec)`` says, before anything is started, why it cannot give what ``spec`` asks
  (an image on a host backend, a ``workdir`` a backend cannot place, a runtime that is not
  running, with the fix in the message) -- ``None`` when it can. The runner calls it for
  every task before the first rollout and refuses the run (exit 2) if no rollout could work.
* ``prepare(spec)`` does the once-per-task work (build a Dockerfile with the network off,
  check that an image exists and read its digest) and returns a :class:`PreparedSpec`;
  ``start`` takes only prepared specs. Failures raise
  :class:`~reliabench.errors.SandboxError` (the harness's failure, never the agent's).
* ``start`` raises :class:`~reliabench.errors.SandboxError` when the environment cannot be
  started (recorded as ``infra_error``, retried, never the agent's failure).

Backends are found by name in the one plugin registry (:mod:`reliabench.sandbox.registry`,
entry-point group ``reliabench.sandboxes``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal, Protocol, TypeAlias, runtime_checkable

from reliabench.records import Isolation
from reliabench.sandbox.base import Limits, SandboxResult

__all__ = [
    "CONTAINER_CHANNEL_DIR",
    "CONTAINER_WORKDIR",
    "HOST",
    "Environment",
    "EnvironmentBackend",
    "EnvironmentSpec",
    "ExecResult",
    "ImageRef",
    "Mount",
    "NetworkMode",
    "PreparedSpec",
    "TestsHandover",
]

ExecResult: TypeAlias = SandboxResult
"""What :meth:`Environment.exec` returns (the same type every backend has always returned)."""

TestsHandover: TypeAlias = Literal["fresh", "same"]
"""How the hidden tests of a container task meet the agent's work: ``fresh`` (a new
environment from the same image plus the agent's workspace: nothing the agent left running or
changed outside the workspace reaches the tests; SWE-bench's way) or ``same`` (the agent's
processes are stopped and the tests run in the agent's own environment; Terminal-Bench's way,
for tests that inspect the machine the agent set up)."""

NetworkMode: TypeAlias = Literal["none", "endpoint", "host"]
"""``none``: only loopback; ``endpoint``: none, plus the rollout's relay socket in a mounted
folder (:mod:`reliabench.agents.netrelay`); ``host``: the host's network (agents that ask for
``network = true``)."""

CONTAINER_WORKDIR: Final = "/workspace"
"""Where a container shows the workspace when the spec names no ``workdir``."""
CONTAINER_CHANNEL_DIR: Final = "/run/reliabench"
"""Where a container shows the channel folder."""


@dataclass(frozen=True, slots=True)
class EnvironmentSpec:
    """Where a task runs, as its ``[environment]`` table (or its suite's) declares it.

    Nothing set: the host, as reliabench always ran (``kind == "host"``). Exactly one of
    ``image`` and ``dockerfile`` for a container.

    Attributes:
        image: An OCI image reference the runtime has (never pulled: runs are offline).
        dockerfile: The host path of a Dockerfile; it is built once per suite by the runtime
            with the network off, its folder as the context, cached by content hash.
        tests: How the hidden tests meet the agent's work (:data:`TestsHandover`).
        workdir: Where commands see the workspace (absolute, inside the environment).
            None: ``/workspace`` in a container, the workspace's own host path on the host.
        user: ``None``: a non-root user (on the host the slot uid; in a container the slot
            uid too, numerically); ``"root"`` for tasks that install packages.
        writable_root: The image's root file system is writable (default read-only, with
            the workspace, ``/tmp`` and the channel folder writable).
        source: Where the spec was declared (``FILE:LINE``), for messages.
    """

    image: str | None = None
    dockerfile: Path | None = None
    tests: TestsHandover = "fresh"
    workdir: str | None = None
    user: Literal["root"] | None = None
    writable_root: bool = False
    source: str = ""

    @property
    def kind(self) -> Literal["host", "image", "dockerfile"]:
        """``host``, ``image`` or ``dockerfile``."""
        if self.image is not None:
            return "image"
        if self.dockerfile is not None:
            return "dockerfile"
        return "host"


HOST: Final = EnvironmentSpec()
"""The host environment (a task that declares none)."""


@dataclass(frozen=True, slots=True)
class ImageRef:
    """An image as it was used: the reference asked for and the content digest the runtime gave.

    Attributes:
        reference: As the task (or the build) named it, e.g. ``reliabench/python:bookworm``.
        digest: ``sha256:...`` of the image as the runtime stores it (its id), recorded with
            every rollout that ran in it.
    """

    reference: str
    digest: str


@dataclass(frozen=True, slots=True)
class PreparedSpec:
    """A spec a backend has prepared (:meth:`EnvironmentBackend.prepare`): ready to start.

    Attributes:
        spec: The spec as declared.
        backend: The name of the backend that prepared it.
        image: The image to start (None on the host).
    """

    spec: EnvironmentSpec
    backend: str
    image: ImageRef | None = None


@dataclass(frozen=True, slots=True)
class Mount:
    """A host path shown inside an environment.

    Attributes:
        source: The host path (a file or a folder).
        target: Where it is seen inside; None: at its own host path.
        writable: Read-write (default read-only).
    """

    source: Path
    target: str | None = None
    writable: bool = False


@runtime_checkable
class Environment(Protocol):
    """One started environment of one rollout phase (see the module docstring)."""

    backend: str
    """The name of the backend that started it."""
    isolation: Isolation
    """The isolation it gives, recorded with every result (``bubblewrap``, ``podman``, ...)."""
    workdir: str
    """Where commands see the workspace."""
    channel_dir: str
    """Where commands see the channel folder."""
    channel_host: Path
    """The channel folder on the host (fresh and empty at start; removed at close)."""
    image: ImageRef | None
    """The image it runs, None on the host."""
    keeps_processes: bool
    """True when processes an ``exec`` started may outlive it (until :meth:`stop_processes`)."""

    def exec(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        stdin: bytes | None = None,
        limits: Limits = Limits(),
    ) -> ExecResult:
        """Run ``argv`` in the environment (see the module docstring).

        Args:
            argv: The command; ``argv[0]`` is looked up on the environment's ``PATH``.
            cwd: The working directory inside (default :attr:`workdir`).
            env: The command's whole environment (``PATH`` defaults to
                :data:`~reliabench.sandbox.base.DEFAULT_PATH`); None gives a minimal one.
            stdin: Bytes fed to standard input (None: ``/dev/null``).
            limits: Resource limits of this command.

        Raises:
            SandboxError: The environment is closed or broken (the harness's failure).
        """
        ...

    def copy_in(self, source: Path, target: str) -> None:
        """Copy the host file or folder ``source`` to ``target`` inside (parents made).

        Raises:
            SandboxError: It could not be copied.
        """
        ...

    def copy_out(self, source: str, target: Path, *, max_bytes: int) -> None:
        """Copy the file or folder ``source`` inside to the host path ``target``.

        Regular files and folders only (links and special files are skipped, never
        followed), at most ``max_bytes`` in all; ``target`` must not exist.

        Raises:
            FileNotFoundError: ``source`` does not exist inside.
            SandboxError: It could not be copied, or it is larger than ``max_bytes``.
        """
        ...

    def stop_processes(self) -> None:
        """End every process started in the environment; its files stay."""
        ...

    def close(self) -> None:
        """End every process and remove everything the environment made; idempotent."""
        ...


@runtime_checkable
class EnvironmentBackend(Protocol):
    """A kind of environment: bubblewrap, namespaces, none, warm, podman, docker, or a plugin."""

    name: str
    """The backend's name in the registry (and, for most, the isolation it records)."""

    def refuse(self, spec: EnvironmentSpec) -> str | None:
        """Why this backend cannot run ``spec`` (one line, with the fix), or None."""
        ...

    def prepare(self, spec: EnvironmentSpec) -> PreparedSpec:
        """Do the once-per-task work for ``spec`` (build or check its image).

        Raises:
            SandboxError: The image is missing, the build failed, the runtime is down.
        """
        ...

    def start(
        self,
        prepared: PreparedSpec,
        *,
        workspace: Path,
        slot: int,
        mounts: Sequence[Mount] = (),
        network: NetworkMode = "none",
        limits: Limits = Limits(),
    ) -> Environment:
        """Start an environment for one rollout phase on the host folder ``workspace``.

        Args:
            prepared: What :meth:`prepare` returned.
            workspace: The rollout's workspace (a host folder), shown at the environment's
                ``workdir``.
            slot: The worker slot; environments of one slot never overlap.
            mounts: Further host paths to show (read-only unless marked writable).
            network: What network the commands get (:data:`NetworkMode`).
            limits: The limits of the environment as a whole (a container's cgroup:
                memory, processes, CPU); each ``exec`` has its own too.

        Raises:
            SandboxError: It could not be started (the harness's failure).
        """
        ...

    def sweep(self) -> int:
        """Remove what runs killed before their clean-up left behind; return how many."""
        ...
