"""The ``[SIMULATED]`` mark, written in one place: every renderer labels simulated agents with it.

A simulated agent (``Rollout.simulated``) never called a model. Terminal tables, Markdown,
LaTeX, CSV, JSON, HTML, SVG figures and the notes under them all take the mark, the label
and the sentences that explain it from here, so that they cannot drift apart. What metrics
and studies compute says which agents are simulated (``CountTable.simulated``,
``AgentSummary.simulated``, ``AgentRank.simulated``); the words are written here only.

Examples:
    >>> agent_label("sim-a", True), agent_label("real", False)
    ('sim-a [SIMULATED]', 'real')
    >>> mark_agent("sim-a", {"sim-a"})
    'sim-a [SIMULATED]'
    >>> fit_label("a-very-long-agent-name [SIMULATED]", 6)
    'a-very [SIMULATED]'
    >>> simulated_agents_note(["a", "b"])
    'SIMULATED agents (not real models): a, b'
    >>> with_simulated_note(("ragged n",), {"b", "a"})
    ('ragged n', 'simulated agents (marked [SIMULATED]) are not real models: a, b')
"""

from __future__ import annotations

import html
from collections.abc import Collection, Iterable
from typing import Final

__all__ = [
    "SIMULATED",
    "SIMULATED_MARK",
    "agent_label",
    "agent_label_html",
    "fit_label",
    "mark_agent",
    "marked_agents_note",
    "simulated_agents_note",
    "simulated_html",
    "with_simulated_note",
]

SIMULATED: Final = "SIMULATED"
"""The word, for sentences (``SIMULATED agents ...``) and titles."""

SIMULATED_MARK: Final = f"[{SIMULATED}]"
"""The mark written after a simulated agent's name."""


def agent_label(agent: str, simulated: bool) -> str:
    """``agent [SIMULATED]`` for a simulated agent, else ``agent``."""
    return f"{agent} {SIMULATED_MARK}" if simulated else agent


def mark_agent(agent: str, simulated_agents: Collection[str]) -> str:
    """``agent``, marked when it is one of ``simulated_agents``."""
    return agent_label(agent, agent in simulated_agents)


def fit_label(label: str, width: int) -> str:
    """A label (an ``agent_label``) cut to ``width`` characters of the agent's name; the mark stays whole.

    For figure legends and axes, where a long name must be cut: the mark is never cut off.
    """
    tail = f" {SIMULATED_MARK}"
    if label.endswith(tail):
        return label[: -len(tail)][:width] + tail
    return label[:width]


def simulated_html() -> str:
    """The mark as an HTML span (class ``sim``, styled by the report's CSS)."""
    return f'<span class="sim">{html.escape(SIMULATED_MARK)}</span>'


def agent_label_html(agent: str, simulated: bool) -> str:
    """The agent's name, HTML-escaped, followed by the mark's span when it is simulated."""
    label = html.escape(agent)
    return f"{label} {simulated_html()}" if simulated else label


def simulated_agents_note(agents: Iterable[str]) -> str:
    """``SIMULATED agents (not real models): a, b`` (in the order given), for notes and warnings."""
    return f"{SIMULATED} agents (not real models): {', '.join(agents)}"


def marked_agents_note(agents: Iterable[str]) -> str:
    """The note under a table whose rows carry the mark (agents in the order given)."""
    return f"simulated agents (marked {SIMULATED_MARK}) are not real models: {', '.join(agents)}"


def with_simulated_note(notes: Iterable[str], simulated: Collection[str]) -> tuple[str, ...]:
    """``notes`` followed by the note of :func:`marked_agents_note` when any agent is simulated."""
    out = tuple(notes)
    return (*out, marked_agents_note(sorted(simulated))) if simulated else out
