"""Cost and time per agent: means per rollout, and reliability per dollar and per minute.

Computed from the rollouts that count (``infra_error`` rollouts are left out, as they are
from n), each mean over the rollouts that report the figure, with how many did::

    mean_x            = sum(x_r) / count(r reporting x)
    passes_per_usd    = passes / sum(usd_r)          (all counted rollouts report usd)
    passes_per_minute = passes / (sum(seconds_r) / 60)   (all report seconds)

``passes_per_usd`` is reliability@1 pooled over rollouts divided by the mean cost of a
rollout: the expected number of successful rollouts one dollar buys; ``passes_per_minute``
likewise per minute of wall time (agent phase + hidden tests). Both are None unless every
counted rollout reports the figure (a partial sum would flatter the agent), and None when the
denominator is 0.

The report page plots each agent's mean seconds, tokens and USD per rollout against its
reliability (:func:`cost_points`), and tabulates the per-phase figures a record carries
(:func:`phase_costs`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from reliabench.records import Rollout

__all__ = ["PHASES", "AgentCost", "AgentCostPoint", "CostFigure", "CostPoints", "cost_points", "cost_summary",
           "phase_costs"]

PHASES: Final = ("agent_s", "test_s", "tokens_in", "tokens_out")
"""The per-phase figures of a rollout (:func:`phase_costs`)."""


@dataclass(frozen=True, slots=True)
class CostFigure:
    """The mean of one figure over the rollouts that report it.

    Attributes:
        mean: The mean (None when no rollout reports it).
        total: The sum (None when it is past the largest float; the mean is still given).
        reported: How many rollouts report it.
    """

    mean: float | None
    total: float | None
    reported: int


@dataclass(frozen=True, slots=True)
class AgentCost:
    """Cost and time of one agent's counted rollouts.

    Attributes:
        agent: The agent.
        rollouts: Counted rollouts (``infra_error`` excluded).
        passes: How many of them pass.
        agent_s: Wall time of the agent phase.
        test_s: Wall time of the hidden tests.
        seconds: Wall time of the whole rollout.
        tokens_in: Prompt tokens.
        tokens_out: Completion tokens.
        tokens: All tokens.
        usd: Cost in US dollars.
        passes_per_usd: Successful rollouts per dollar (see the module docstring).
        passes_per_minute: Successful rollouts per minute of wall time.
    """

    agent: str
    rollouts: int
    passes: int
    agent_s: CostFigure
    test_s: CostFigure
    seconds: CostFigure
    tokens_in: CostFigure
    tokens_out: CostFigure
    tokens: CostFigure
    usd: CostFigure
    passes_per_usd: float | None
    passes_per_minute: float | None

    @property
    def known(self) -> bool:
        """Any figure is reported at all."""
        return any(f.reported for f in (self.seconds, self.agent_s, self.tokens, self.usd,
                                        self.tokens_in))


def _figure(values: Sequence[float | None]) -> CostFigure:
    """The mean and total of the known values; finite whatever they are (each is finite).

    Every value a record holds is finite, but a sum of them may not be (two rollouts that
    report ``usd = 1e308``): then the total is None (it does not fit a float) and the mean is
    taken as the sum of ``v / n``, which is at most the largest value, so never infinite.
    """
    known = [v for v in values if v is not None]
    if not known:
        return CostFigure(None, 0.0, 0)
    total = float(sum(known))
    if math.isfinite(total):
        return CostFigure(total / len(known), total, len(known))
    n = len(known)
    return CostFigure(math.fsum(v / n for v in known), None, n)


def _rate(passes: int, fig: CostFigure, rollouts: int, scale: float = 1.0) -> float | None:
    if rollouts == 0 or fig.reported != rollouts or fig.mean is None or fig.mean <= 0:
        return None
    if fig.total is None:  # the total does not fit a float: the same ratio, through the mean
        return (passes / rollouts) / (fig.mean / scale)
    return passes / (fig.total / scale)


def cost_summary(records: Iterable[Rollout]) -> tuple[AgentCost, ...]:
    """Per agent (sorted by name), the figures of the module docstring.

    Example:
        >>> from reliabench.records import Cost
        >>> rs = [Rollout("t", "a", i, verdict=i == 0, cost=Cost(usd=0.5, seconds=30.0))
        ...       for i in range(2)]
        >>> (c,) = cost_summary(rs)
        >>> (c.usd.mean, c.passes_per_usd, c.passes_per_minute)
        (0.5, 1.0, 1.0)
    """
    by_agent: dict[str, list[Rollout]] = {}
    for r in records:
        if r.status != "infra_error":
            by_agent.setdefault(r.agent, []).append(r)
    out = []
    for agent in sorted(by_agent):
        rs = by_agent[agent]

        def fig(name: str, rs: list[Rollout] = rs) -> CostFigure:
            return _figure([getattr(r.cost, name) if r.cost is not None else None for r in rs])

        passes = sum(r.passes for r in rs)
        usd, seconds = fig("usd"), fig("seconds")
        out.append(AgentCost(
            agent=agent, rollouts=len(rs), passes=passes,
            agent_s=fig("agent_s"), test_s=fig("test_s"), seconds=seconds,
            tokens_in=fig("tokens_in"), tokens_out=fig("tokens_out"), tokens=fig("tokens"),
            usd=usd,
            passes_per_usd=_rate(passes, usd, len(rs)),
            passes_per_minute=_rate(passes, seconds, len(rs), scale=60.0),
        ))
    return tuple(out)


def phase_costs(r: Rollout) -> dict[str, float]:
    """Per-phase times and token counts, when the record carries them; empty otherwise.

    Read from ``Cost`` (``agent_s``, ``test_s``, ``tokens_in``, ``tokens_out``) or from ``meta``.
    """
    out: dict[str, float] = {}
    for name in PHASES:
        value = getattr(r.cost, name, None) if r.cost is not None else None
        if value is None:
            value = r.meta.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[name] = float(value)
    return out


@dataclass(frozen=True, slots=True)
class AgentCostPoint:
    """One agent's means per rollout, as the report page plots and tabulates them.

    Attributes:
        agent: The agent.
        seconds: Mean wall time of its counted rollouts that report it (None: none do).
        tokens: Mean tokens (None: none reported, or zero everywhere: an unmetered agent).
        usd: Mean USD (None likewise).
        phases: Mean of each of :data:`PHASES` over the agent's rollouts that record it.
    """

    agent: str
    seconds: float | None
    tokens: float | None
    usd: float | None
    phases: Mapping[str, float]


@dataclass(frozen=True, slots=True)
class CostPoints:
    """The report page's cost figures: one point per agent, and whether any record has phases.

    Attributes:
        agents: Per agent, in the order asked for.
        phases_recorded: Whether any rollout records a per-phase figure.
    """

    agents: tuple[AgentCostPoint, ...]
    phases_recorded: bool


def _mean(values: Sequence[float]) -> float:
    with np.errstate(over="ignore"):
        mean = float(np.mean(values))
    if not math.isfinite(mean):  # in-range values whose sum is not a float
        mean = math.fsum(v / len(values) for v in values)
    return mean


def cost_points(records: Sequence[Rollout], agents: Sequence[str]) -> CostPoints:
    """Mean seconds, tokens and USD per counted rollout (``infra_error`` left out) of each agent.

    Tokens and USD that are zero or missing everywhere are None (simulated or unmetered
    agents); the phase means are over every rollout of the agent that records the phase.
    """
    phases = [phase_costs(r) for r in records]
    out = []
    for agent in agents:
        means: dict[str, float | None] = {}
        for attr in ("seconds", "tokens", "usd"):
            vals = [getattr(r.cost, attr) for r in records
                    if r.agent == agent and r.status != "infra_error" and r.cost is not None
                    and getattr(r.cost, attr) is not None]
            means[attr] = _mean(vals) if vals and (attr == "seconds" or any(vals)) else None
        per = [p for r, p in zip(records, phases, strict=True) if r.agent == agent and p]
        phase_means = {key: float(np.mean(vals)) for key in PHASES
                       if (vals := [p[key] for p in per if key in p])}
        out.append(AgentCostPoint(agent, means["seconds"], means["tokens"], means["usd"], phase_means))
    return CostPoints(tuple(out), any(phases))
