"""Agents: the protocol, the registry of kinds, and the agents file loader.

Importing this package registers the built-in kinds ``command``, ``openai``, ``replay`` and
``python``; :func:`load_agents` reads an ``agents.toml`` (see ``docs/agents.md``).
"""

from reliabench.agents.base import (
    AGENT_KINDS,
    Agent,
    AgentContext,
    AgentFactory,
    AgentRequest,
    AgentResult,
    WorkspacePathError,
    delete_workspace_paths,
    register_agent_kind,
    resolve_in_workspace,
    write_prompt_file,
    write_workspace_files,
)
from reliabench.agents.command import CommandAgent
from reliabench.agents.config import FieldReader, load_agents, load_builtin_kinds
from reliabench.agents.openai_agent import OpenAIAgent, OpenAISettings, parse_file_blocks
from reliabench.agents.python_agent import PythonAgent
from reliabench.agents.replay import ReplayAgent, read_replay_file

__all__ = [
    "AGENT_KINDS",
    "Agent",
    "AgentContext",
    "AgentFactory",
    "AgentRequest",
    "AgentResult",
    "CommandAgent",
    "FieldReader",
    "OpenAIAgent",
    "OpenAISettings",
    "PythonAgent",
    "ReplayAgent",
    "WorkspacePathError",
    "delete_workspace_paths",
    "load_agents",
    "load_builtin_kinds",
    "parse_file_blocks",
    "read_replay_file",
    "register_agent_kind",
    "resolve_in_workspace",
    "write_prompt_file",
    "write_workspace_files",
]
