"""The Agent protocol and the registry of agent kinds.

An agent gets a task's prompt, a FRESH copy of the task's starter workspace and a seed; it
edits the workspace in place and returns what it can tell about the attempt. It never sees
the suite's hidden tests. Kinds (``command``, ``openai``, ``replay``, ``python``,
``simulated``) register a factory that builds an agent from its ``[[agents]]`` table.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, TypeAlias, get_args, runtime_checkable

from reliabench.errors import ConfigError, InvalidArgumentError
from reliabench.plugins import Registry

if TYPE_CHECKING:
    from reliabench.sandbox.base import Limits
    from reliabench.sandbox.environment import Environment, EnvironmentSpec, Mount, NetworkMode
    from reliabench.tasks.suite import Suite

__all__ = [
    "AGENT_KIND_REGISTRY",
    "AGENT_STATUSES",
    "Agent",
    "AgentContext",
    "AgentEnvironment",
    "AgentFactory",
    "AgentRequest",
    "AgentResult",
    "AgentStatus",
    "WorkspacePathError",
    "delete_workspace_paths",
    "register_agent_kind",
    "resolve_in_workspace",
    "write_prompt_file",
    "write_workspace_files",
]


AgentStatus: TypeAlias = Literal["completed", "agent_error", "timeout", "infra_error"]
"""What an agent can say about its attempt (a subset of :data:`reliabench.records.RolloutStatus`:
``test_error`` and ``no_change`` are the harness's verdicts, never an agent's)."""
AGENT_STATUSES: Final[frozenset[AgentStatus]] = frozenset(get_args(AgentStatus))


class AgentEnvironment(Protocol):
    """The rollout's environment as an agent reaches it: started on first use, closed by the runner.

    A ``command`` agent runs its command there: on the host for a host task (in the backend
    its own ``sandbox`` key names), in the task's image for a container task (the run's
    container backend), with the workspace at the environment's ``workdir``. It never shows
    the task's hidden tests or its reference solution (a mount that would is refused).
    """

    spec: EnvironmentSpec
    """Where the task runs (its ``[environment]``)."""

    def open(self, *, mounts: Sequence[Mount] = (), network: NetworkMode = "none",
             limits: Limits | None = None, sandbox: str = "auto") -> Environment:
        """Start the rollout's environment (once; a second call with the same arguments returns it).

        Args:
            mounts: Host paths to show, read-only (the prompt file, the agent's own files).
            network: The agent's network (``none``, ``endpoint``, ``host``).
            limits: The environment's limits (a container's cgroup); None: the run's.
            sandbox: For a host task, the host backend to run in (an agent's ``sandbox``
                key; ``auto``: the strongest here). A container task runs in the run's
                container backend: only ``auto`` (or that backend's name) is accepted.

        Raises:
            SandboxError: It cannot be started as asked (refused by name, or the backend
                failed): the harness's failure, ``infra_error``.
        """
        ...


@dataclass(frozen=True, slots=True)
class AgentRequest:
    """What an agent gets for one rollout.

    Attributes:
        task_id: The task's id.
        prompt: The task's prompt (``prompt.md``).
        workspace: A fresh copy of the starter workspace; the agent edits it in place.
        seed: Per-rollout seed derived from (run seed, task, agent, rollout).
        rollout: The rollout index (0-based).
        timeout_s: Wall-clock budget for the agent.
        feedback_dir: Visible tests the agent may run, when the task provides some.
        prompt_file: The prompt written to a file outside the workspace, for agent CLIs.
        slot: The worker slot running this rollout. Sandboxed agents run as the slot's uid,
            and runs of one slot must never overlap, so concurrent rollouts need distinct
            slots (the runner gives each worker its own).
        environment: The rollout's environment (:class:`AgentEnvironment`), started when the
            agent first opens it and closed by the runner; None outside a run (an agent then
            starts its own on the host).
    """

    task_id: str
    prompt: str
    workspace: Path
    seed: int
    rollout: int
    timeout_s: float
    feedback_dir: Path | None = None
    prompt_file: Path | None = None
    slot: int = 0
    environment: AgentEnvironment | None = None


@dataclass(frozen=True, slots=True)
class AgentResult:
    """What an agent reports about one rollout.

    Attributes:
        status: ``completed``, ``agent_error`` or ``timeout`` (``infra_error`` when the
            infrastructure, not the agent, failed: a missing API key, an endpoint that is
            down, refuses the key or is overloaded, a sandbox that cannot start; such results
            carry ``meta["infra_reason"]``, see :mod:`reliabench.agents.infra`).
        tokens: Tokens used, when known (``tokens_in + tokens_out`` when both are known).
        usd: Cost in US dollars, when known.
        tokens_in: Prompt (input) tokens, when known.
        tokens_out: Completion (output) tokens, when known.
        log: Human-readable log of the attempt (stored as an artifact).
        transcript: Machine-readable conversation, when there is one.
        meta: Anything else worth keeping on the record (for example the simulated
            agent's chosen behaviour).
    """

    status: AgentStatus = "completed"
    tokens: int | None = None
    usd: float | None = None
    log: str = ""
    transcript: list[dict[str, Any]] | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    tokens_in: int | None = None
    tokens_out: int | None = None

    def __post_init__(self) -> None:
        """Reject a status outside :data:`AgentStatus` (a plugin agent's typo)."""
        if not isinstance(self.status, str) or self.status not in AGENT_STATUSES:
            raise InvalidArgumentError(
                f"AgentResult.status: expected one of {', '.join(get_args(AgentStatus))}, "
                f"got {self.status!r}")


@runtime_checkable
class Agent(Protocol):
    """One configured agent.

    ``run`` is called once per rollout, possibly from worker threads or processes, so it must
    not keep per-rollout state on ``self``.
    """

    name: str
    kind: str
    simulated: bool

    def run(self, request: AgentRequest) -> AgentResult:
        """Edit ``request.workspace`` in place and report on the attempt."""
        ...


@dataclass(frozen=True, slots=True)
class AgentContext:
    """What a factory may need besides the agent's own table.

    Attributes:
        config_path: The agents file (relative paths in it are relative to its folder).
        table_index: 1-based position of the ``[[agents]]`` table, for error messages.
        suite: The suite the agents will run on, when the caller knows it (a kind whose agents
            need more of a task than its request, such as ``simulated``, reads it from here).
    """

    config_path: Path
    table_index: int
    suite: Suite | None = None

    def error(self, field_name: str, message: str) -> ConfigError:
        """Build a ConfigError pointing at this agent's table."""
        return ConfigError(self.config_path, message, field=f"agents[{self.table_index}].{field_name}")


AgentFactory = Callable[[Mapping[str, Any], AgentContext], Agent]

AGENT_KIND_REGISTRY: Registry[AgentFactory] = Registry(
    "agents",
    builtins={
        "command": "reliabench.agents.command:_make_command",
        "openai": "reliabench.agents.openai_agent:_make_openai",
        "replay": "reliabench.agents.replay:_make_replay",
        "python": "reliabench.agents.python_agent:_make_python",
        "simulated": "reliabench.sim.agent:simulated_agent_factory",
    },
    what="agent kind",
    expected="an agent factory (a callable (table, context) -> Agent)",
)
"""The agent kind registry (entry-point group ``reliabench.agents``: kind -> factory)."""



def register_agent_kind(kind: str) -> Callable[[AgentFactory], AgentFactory]:
    """Register a factory for an agent ``kind`` in this process (a decorator).

    A packaged kind is an entry point instead: ``kind = "module:factory"`` in the group
    ``reliabench.agents``. A later registration of the same kind replaces an earlier one;
    a built-in kind cannot be replaced (``InvalidArgumentError``).
    """

    def deco(factory: AgentFactory) -> AgentFactory:
        return AGENT_KIND_REGISTRY.register(kind, factory, replace=True)

    return deco


# --- helpers for adapters -------------------------------------------------------------------


class WorkspacePathError(InvalidArgumentError):
    """A path an agent asked to write or delete is not confined to its workspace."""


def _check_relative(path: str) -> PurePosixPath:
    if not isinstance(path, str) or not path or "\0" in path:
        raise WorkspacePathError(f"path {path!r}: expected a non-empty relative path")
    if "\\" in path:
        raise WorkspacePathError(f"path {path!r}: use '/' as the separator")
    pure = PurePosixPath(path)
    if pure.is_absolute() or PureWindowsPath(path).drive:
        raise WorkspacePathError(f"path {path!r}: absolute paths are not allowed")
    if ".." in pure.parts:
        raise WorkspacePathError(f"path {path!r}: '..' is not allowed")
    if not pure.parts or pure.parts == (".",):
        raise WorkspacePathError(f"path {path!r}: names no file")
    return pure


def resolve_in_workspace(workspace: Path, path: str, *, follow_last: bool = True) -> Path:
    """Resolve a relative ``path`` inside ``workspace``, refusing anything that escapes it.

    Absolute paths, ``..`` components, backslashes and symlinks (already in the workspace)
    that point outside it are rejected.

    Args:
        workspace: The rollout's workspace.
        path: A POSIX-style path relative to the workspace.
        follow_last: Resolve a symlink in the last component too (for writing); ``False``
            keeps the last component itself (for deleting a link, not its target).

    Returns:
        The real path to operate on, inside the real workspace.

    Raises:
        WorkspacePathError: when the path is not confined to the workspace.
    """
    pure = _check_relative(path)
    root = workspace.resolve()
    target = root.joinpath(*pure.parts)
    real = target.resolve() if follow_last else target.parent.resolve() / target.name
    if real != root and not real.is_relative_to(root):
        raise WorkspacePathError(f"path {path!r}: leads outside the workspace (through a symlink)")
    if real == root:
        raise WorkspacePathError(f"path {path!r}: names the workspace itself")
    return real


def write_workspace_files(workspace: Path, files: Mapping[str, str]) -> list[str]:
    """Write text files (UTF-8) into the workspace, creating folders as needed.

    Every path is checked with :func:`resolve_in_workspace` before anything is written, so a
    bad path leaves the workspace untouched.

    Returns:
        The paths written, in order.

    Raises:
        WorkspacePathError: when a path is not confined to the workspace or names a folder.
    """
    targets = [(p, resolve_in_workspace(workspace, p)) for p in files]
    for rel, real in targets:
        if real.is_dir():
            raise WorkspacePathError(f"path {rel!r}: is a directory")
    for rel, real in targets:
        real.parent.mkdir(parents=True, exist_ok=True)
        real.write_text(files[rel], encoding="utf-8")
    return [rel for rel, _ in targets]


def delete_workspace_paths(workspace: Path, paths: Iterable[str]) -> list[str]:
    """Delete files, symlinks or folders of the workspace; missing ones are skipped.

    Returns:
        The paths that existed and were deleted.

    Raises:
        WorkspacePathError: when a path is not confined to the workspace.
    """
    targets = [(p, resolve_in_workspace(workspace, p, follow_last=False)) for p in paths]
    deleted: list[str] = []
    for rel, real in targets:
        if real.is_symlink() or real.is_file():
            real.unlink()
        elif real.is_dir():
            shutil.rmtree(real)
        else:
            continue
        deleted.append(rel)
    return deleted


def write_prompt_file(request: AgentRequest, directory: Path) -> AgentRequest:
    """Write ``request.prompt`` to ``directory/prompt.md`` and return the request with it set.

    ``directory`` must be outside the workspace (an agent CLI reads the prompt from there).
    A request that already has a ``prompt_file`` is returned unchanged.
    """
    if request.prompt_file is not None:
        return request
    ws = request.workspace.resolve()
    d = directory.resolve()
    if d == ws or d.is_relative_to(ws):
        raise InvalidArgumentError(f"directory {directory}: must be outside the workspace {ws}")
    d.mkdir(parents=True, exist_ok=True)
    path = d / "prompt.md"
    path.write_text(request.prompt, encoding="utf-8")
    path.chmod(0o644)  # sandboxed agents run as another uid
    return replace(request, prompt_file=path)
