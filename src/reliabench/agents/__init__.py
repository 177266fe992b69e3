"""Agents: the protocol, the registry of kinds, and the agents file loader."""

from reliabench.agents.base import (
    AGENT_KINDS,
    Agent,
    AgentContext,
    AgentFactory,
    AgentRequest,
    AgentResult,
    register_agent_kind,
)

__all__ = [
    "AGENT_KINDS",
    "Agent",
    "AgentContext",
    "AgentFactory",
    "AgentRequest",
    "AgentResult",
    "register_agent_kind",
]
