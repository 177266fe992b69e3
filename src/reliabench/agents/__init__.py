"""Agents: the protocol, the registry of kinds, and the agents file loader.

The kinds live in one registry (:data:`AGENT_KIND_REGISTRY`): the built-ins ``command``,
``openai``, ``replay``, ``python`` and ``simulated``, and third-party kinds of the entry-point group
``reliabench.agents``; :func:`load_agents` reads an ``agents.toml`` (see ``docs/agents.md``).
"""

from reliabench.agents.base import (
    AGENT_KIND_REGISTRY,
    Agent,
    AgentContext,
    AgentFactory,
    AgentRequest,
    AgentResult,
    AgentStatus,
    WorkspacePathError,
    delete_workspace_paths,
    register_agent_kind,
    resolve_in_workspace,
    write_prompt_file,
    write_workspace_files,
)
from reliabench.agents.command import CommandAgent
from reliabench.agents.config import FieldReader, load_agents, load_builtin_kinds
from reliabench.agents.infra import INFRA_REASONS, Endpoint, infra_result
from reliabench.agents.openai_agent import OpenAIAgent, OpenAISettings, parse_file_blocks
from reliabench.agents.preflight import PreflightProblem, check_agents
from reliabench.agents.python_agent import PythonAgent
from reliabench.agents.replay import ReplayAgent, read_replay_file

__all__ = [
    "AGENT_KIND_REGISTRY",
    "INFRA_REASONS",
    "Agent",
    "AgentContext",
    "AgentFactory",
    "AgentRequest",
    "AgentResult",
    "AgentStatus",
    "CommandAgent",
    "Endpoint",
    "FieldReader",
    "OpenAIAgent",
    "OpenAISettings",
    "PreflightProblem",
    "PythonAgent",
    "ReplayAgent",
    "WorkspacePathError",
    "check_agents",
    "delete_workspace_paths",
    "infra_result",
    "load_agents",
    "load_builtin_kinds",
    "parse_file_blocks",
    "read_replay_file",
    "register_agent_kind",
    "resolve_in_workspace",
    "write_prompt_file",
    "write_workspace_files",
]
