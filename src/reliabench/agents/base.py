"""The Agent protocol and the registry of agent kinds.

An agent gets a task's prompt, a FRESH copy of the task's starter workspace and a seed; it
edits the workspace in place and returns what it can tell about the attempt. It never sees
the suite's hidden tests. Kinds (``command``, ``openai``, ``replay``, ``python``,
``simulated``) register a factory that builds an agent from its ``[[agents]]`` table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from reliabench.errors import ConfigError

__all__ = [
    "AGENT_KINDS",
    "Agent",
    "AgentContext",
    "AgentFactory",
    "AgentRequest",
    "AgentResult",
    "register_agent_kind",
]


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
        solution_dir: The task's reference files; only simulated agents may read them.
        variants: ``(name, dir)`` of the task's alternative solutions; simulated agents only.
        prompt_file: The prompt written to a file outside the workspace, for agent CLIs.
    """

    task_id: str
    prompt: str
    workspace: Path
    seed: int
    rollout: int
    timeout_s: float
    feedback_dir: Path | None = None
    solution_dir: Path | None = None
    variants: tuple[tuple[str, Path], ...] = ()
    prompt_file: Path | None = None


@dataclass(frozen=True, slots=True)
class AgentResult:
    """What an agent reports about one rollout.

    Attributes:
        status: ``completed``, ``agent_error`` or ``timeout`` (``infra_error`` when the
            infrastructure, not the agent, failed: such rollouts are retried).
        tokens: Tokens used, when known.
        usd: Cost in US dollars, when known.
        log: Human-readable log of the attempt (stored as an artifact).
        transcript: Machine-readable conversation, when there is one.
        meta: Anything else worth keeping on the record (for example the simulated
            agent's chosen behaviour).
    """

    status: str = "completed"
    tokens: int | None = None
    usd: float | None = None
    log: str = ""
    transcript: list[dict[str, Any]] | None = None
    meta: dict[str, Any] = field(default_factory=dict)


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
    """

    config_path: Path
    table_index: int

    def error(self, field_name: str, message: str) -> ConfigError:
        """Build a ConfigError pointing at this agent's table."""
        return ConfigError(self.config_path, message, field=f"agents[{self.table_index}].{field_name}")


AgentFactory = Callable[[Mapping[str, Any], AgentContext], Agent]
AGENT_KINDS: dict[str, AgentFactory] = {}


def register_agent_kind(kind: str) -> Callable[[AgentFactory], AgentFactory]:
    """Register a factory for an agent ``kind`` (a decorator)."""

    def deco(factory: AgentFactory) -> AgentFactory:
        AGENT_KINDS[kind] = factory
        return factory

    return deco
