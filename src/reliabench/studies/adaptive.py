r"""Adaptive allocation of rollouts: a group-sequential design that keeps estimates and intervals honest.

A fixed design runs n rollouts of every agent on every task. An adaptive run starts with
``first`` rollouts, looks at the data, and gives the next round's rollouts only to the agents
whose interval is still too wide (``target_half_width``) or whose comparison is still open
(``settle``), until the target is met or ``max_n`` is reached. This module holds the design
as pure functions (no I/O); ``reliabench.run.adaptive`` drives real runs with it.

**The design** (all choices fixed before any data is seen):

* *Equal rollouts per task within an agent.* An agent's n only moves along the schedule
  ``first, 2 first, 4 first, ..., max_n`` (:func:`look_schedule`) and always for ALL tasks at
  once. Every per-task estimate is therefore :math:`\mathrm{pass@}k(n, c_t)` with an n chosen
  before the task's new rollouts were seen; the rollouts of a round are the next indices of
  the fixed-n run's rollouts (same seeds), so the adaptive data is a prefix of the fixed data.
* *Stopping on the agent-level interval.* The decision to continue looks only at the
  agent-level (or pair-level) interval over tasks, never at a single task.
* *Repeated confidence intervals* (Jennison & Turnbull 1989; 2000, ch. 9). With T tasks and
  per-task values :math:`v_t(n)`, the agent estimate is :math:`\bar v(n)`. Because
  :math:`\mathrm{pass@}k(n, c)` is a U-statistic of the task's rollouts, the estimates at
  nested n satisfy :math:`\operatorname{Cov}(\bar v(n_i), \bar v(n_j)) = \operatorname{Var}
  \bar v(n_j)` for :math:`n_i \le n_j` -- the covariance of a Brownian motion observed at
  information times :math:`I_j = 1/\operatorname{Var}\bar v(n_j)`, so the standardised
  estimates have :math:`\operatorname{corr}(Z_i, Z_j) = \sqrt{I_i / I_j}`. The critical value
  :math:`c` solves :math:`P(\max_j |Z_j| < c) = 1 - \alpha` over ALL planned looks
  (:func:`boundary_constant`, exact recursive integration, Armitage, McPherson & Rowe 1969),
  and every look reports :math:`\bar v \pm c_t\,\mathrm{SE}` with :math:`c_t` the Student-t
  quantile (T - 1 df) at the same tail probability. These intervals hold *simultaneously* for
  all looks, so they keep coverage at any stopping time, whatever the stopping rule.
  Future variances are projected from the data at the current look with the Beta model of
  ``reliabench.studies.planning`` (only the within-task part changes with n).
* *Pairs* (``settle``): :math:`d_t = v_{tA} - v_{tB}` on shared tasks; the same argument
  holds for the pair's sequence of (n_A, n_B) states. A pair is settled when its repeated
  interval excludes 0 (a winner) or lies inside ``+-margin`` (equivalent). With several pairs
  the level is split equally between them (Bonferroni).
* *Allocation*: half-width mode advances each agent whose interval is still too wide; settle
  mode advances the agents of open pairs whose next step cuts the most within-task variance
  per rollout (every agent within half of the best gain).

The plain mean of per-task estimates at a look is unbiased at any FIXED n; with a
data-dependent stop it is not (the classic optional-stopping bias of group-sequential
designs). What a run reports at its stop is therefore the Rao-Blackwellised estimate and its
interval of ``reliabench.studies.adaptive_estimate`` (unbiased under the stopping rule);
:func:`reliabench.sim.design.simulate_design` measures its bias and coverage next to the plain
estimate's, the first-look estimate's, the decision intervals' and the fixed-n design's, and
the agreement with the fixed-n decisions (docs/statistics.md has the numbers).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special, stats

from reliabench.errors import InvalidArgumentError
from reliabench.metrics.arrays import FloatArray, IntArray
from reliabench.metrics.estimators import pass_at_k
from reliabench.studies.planning import AgentModel, fit_counts, variance_components

__all__ = [
    "AdaptiveDesign",
    "AgentCounts",
    "AgentLook",
    "Continuation",
    "Interval",
    "PairLook",
    "ProjectedLook",
    "Step",
    "boundary_constant",
    "continuation",
    "critical_value",
    "evaluate",
    "fixed_decisions",
    "fixed_intervals",
    "look_schedule",
]

DECISIONS = ("a_better", "b_better", "equivalent", "open")
_GRID = 201
_MIN_INFO_STEP = 1.01  # looks whose information grows by less than 1% count as one look


def look_schedule(first: int, max_n: int) -> tuple[int, ...]:
    """The rollouts per task an agent may reach: ``first`` doubling up to ``max_n``.

    Examples:
        >>> look_schedule(3, 20)
        (3, 6, 12, 20)
        >>> look_schedule(5, 5)
        (5,)
    """
    for name, value in (("first", first), ("max_n", max_n)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise InvalidArgumentError(f"{name} must be an integer >= 1, got {value!r}")
    if max_n < first:
        raise InvalidArgumentError(f"max_n must be >= first ({first}), got {max_n!r}")
    out = [int(first)]
    while out[-1] < max_n:
        out.append(min(2 * out[-1], int(max_n)))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class AdaptiveDesign:
    """What an adaptive run aims at, fixed before it starts.

    Attributes:
        first: Rollouts per task of every agent in the first round (>= k).
        max_n: Most rollouts per task of any agent.
        k: The k of reliability@k the intervals are about.
        confidence: Level of every reported interval (simultaneous over looks).
        target_half_width: Stop an agent once its interval is at most ``+-`` this wide.
        settle: Pairs ``(a, b)`` to settle: stop once every pair has a winner or is equivalent.
        margin: Equivalence margin of ``settle`` (0: only a winner settles a pair).
        boundary: Shape of the repeated intervals over looks: ``obrien-fleming`` (default:
            wide early, close to the fixed design's interval at max_n) or ``pocock``.
        half_width_rule: ``two-stage`` (default: the first round's spread of per-task values
            fixes each agent's final n, which is then run in one go, plain intervals) or
            ``sequential`` (a look at every step of the schedule, repeated intervals).
    """

    first: int
    max_n: int
    k: int = 1
    confidence: float = 0.95
    target_half_width: float | None = None
    settle: tuple[tuple[str, str], ...] = ()
    margin: float = 0.0
    boundary: str = "obrien-fleming"
    half_width_rule: str = "two-stage"

    def __post_init__(self) -> None:
        look_schedule(self.first, self.max_n)
        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1:
            raise InvalidArgumentError(f"k must be an integer >= 1, got {self.k!r}")
        if self.first < self.k:
            raise InvalidArgumentError(f"first must be >= k={self.k}, got {self.first!r}")
        if not 0.0 < self.confidence < 1.0:
            raise InvalidArgumentError(f"confidence must be in (0, 1), got {self.confidence!r}")
        if (self.target_half_width is None) == (not self.settle):
            raise InvalidArgumentError("give exactly one target: target_half_width or settle pairs")
        if self.target_half_width is not None and not 0.0 < self.target_half_width < 1.0:
            raise InvalidArgumentError(
                f"target_half_width must be in (0, 1), got {self.target_half_width!r}")
        for pair in self.settle:
            if len(pair) != 2 or pair[0] == pair[1]:
                raise InvalidArgumentError(f"settle: a pair is two different agents, got {pair!r}")
        if self.half_width_rule not in ("two-stage", "sequential"):
            raise InvalidArgumentError(
                f"half_width_rule must be 'two-stage' or 'sequential', got {self.half_width_rule!r}")
        if self.boundary not in ("pocock", "obrien-fleming"):
            raise InvalidArgumentError(
                f"boundary must be 'pocock' or 'obrien-fleming', got {self.boundary!r}")
        if not 0.0 <= self.margin < 1.0:
            raise InvalidArgumentError(f"margin must be in [0, 1), got {self.margin!r}")

    @property
    def mode(self) -> str:
        """``half_width`` or ``settle``."""
        return "half_width" if self.target_half_width is not None else "settle"

    @property
    def schedule(self) -> tuple[int, ...]:
        """:func:`look_schedule` of this design."""
        return look_schedule(self.first, self.max_n)

    @property
    def pair_alpha(self) -> float:
        """The level of each pair's interval: ``1 - confidence`` split over the pairs."""
        return (1.0 - self.confidence) / max(1, len(self.settle))


# ------------------------------------------------------------------------ the boundary


def _no_crossing(c: float, info: tuple[float, ...], shape: str) -> float:
    """P(|S_j| < b_j for all j) for a Brownian motion S observed at times ``info``.

    ``b_j = c sqrt(t_j)`` (Pocock) or ``c sqrt(t_L)`` (O'Brien-Fleming: the same bound on
    the sum scale, so the standardised bound is ``c sqrt(t_L / t_j)``).
    """
    def bound(t: float) -> float:
        return c * math.sqrt(t if shape == "pocock" else info[-1])

    t0 = info[0]
    x = np.linspace(-bound(t0), bound(t0), _GRID)
    w = _simpson(x)
    f = _pdf(x, math.sqrt(t0))
    for prev, t in itertools.pairwise(info):
        y = np.linspace(-bound(t), bound(t), _GRID)
        kernel = _pdf(y[:, None] - x[None, :], math.sqrt(t - prev))
        f = kernel @ (f * w)
        x, w = y, _simpson(y)
    return float(np.sum(f * w))


def _pdf(x: FloatArray, sd: float) -> FloatArray:
    out: FloatArray = x * (1.0 / sd)  # in place below: this is the inner loop of the boundary
    np.square(out, out=out)
    out *= -0.5
    np.exp(out, out=out)
    out *= 1.0 / (sd * math.sqrt(2.0 * math.pi))
    return out


def _simpson(x: FloatArray) -> FloatArray:
    h = (x[-1] - x[0]) / (len(x) - 1)
    w = np.ones(len(x))
    w[1:-1:2] = 4.0
    w[2:-1:2] = 2.0
    out: FloatArray = w * (h / 3.0)
    return out


@functools.lru_cache(maxsize=1 << 16)
def _constant(fractions: tuple[float, ...], alpha: float, shape: str) -> float:
    from scipy.optimize import brentq

    lo = float(stats.norm.ppf(1.0 - alpha / 2.0))
    if len(fractions) == 1:
        return lo
    if shape == "obrien-fleming":
        lo *= math.sqrt(fractions[0])
    hi = float(stats.norm.ppf(1.0 - alpha / (2.0 * len(fractions)))) + 0.01
    return float(brentq(lambda c: _no_crossing(c, fractions, shape) - (1.0 - alpha), lo, hi,
                        xtol=1e-6))


def boundary_constant(information: Sequence[float], alpha: float,
                      shape: str = "obrien-fleming") -> float:
    r"""The constant C of a two-sided boundary with :math:`P(\text{any } |Z_j| \ge b_j) = \alpha`.

    :math:`Z_j` are standardised estimates at information times :math:`I_1 < I_2 < \dots < I_L`
    with :math:`\operatorname{corr}(Z_i, Z_j) = \sqrt{I_i/I_j}` (a Brownian motion). The bound
    at look j is :math:`b_j = C` (``pocock``) or :math:`b_j = C\sqrt{I_L/I_j}`
    (``obrien-fleming``: wide at early looks, near the fixed-design quantile at the last).
    One look gives the normal quantile. Looks whose information grows by less than 1% are
    merged, and information fractions are rounded to 0.01 (C moves by < 0.005).

    Examples:
        >>> round(boundary_constant([1.0], 0.05), 3)
        1.96
        >>> round(boundary_constant([1, 2, 3, 4, 5], 0.05, "pocock"), 2)   # Pocock (1977), K=5
        2.41
        >>> round(boundary_constant([1, 2, 3, 4, 5], 0.05), 2)   # O'Brien-Fleming (1979), K=5
        2.04
    """
    if not 0.0 < alpha < 1.0:
        raise InvalidArgumentError(f"alpha must be in (0, 1), got {alpha!r}")
    if shape not in ("pocock", "obrien-fleming"):
        raise InvalidArgumentError(f"shape must be 'pocock' or 'obrien-fleming', got {shape!r}")
    return _constant(_fractions(information), float(alpha), shape)


def _fractions(information: Sequence[float]) -> tuple[float, ...]:
    info = sorted(float(i) for i in information)
    if not info or info[0] <= 0 or not all(math.isfinite(i) for i in info):
        raise InvalidArgumentError(f"information must be positive and finite, got {list(information)!r}")
    kept = [info[0]]
    for value in info[1:]:
        if value >= kept[-1] * _MIN_INFO_STEP:
            kept.append(value)
    last = kept[-1]
    fractions = tuple(max(round(v / last, 2), 0.01) for v in kept)
    merged = [fractions[0]]
    for value in fractions[1:]:
        if value > merged[-1]:
            merged.append(value)
    return tuple(merged)


def critical_value(information: Sequence[float], current: float, alpha: float,
                   shape: str = "obrien-fleming") -> float:
    """The standardised bound at the look with information ``current`` (one of ``information``).

    Examples:
        >>> info = [1, 2, 3, 4, 5]
        >>> round(critical_value(info, 5, 0.05), 2), round(critical_value(info, 1, 0.05), 2)
        (2.04, 4.56)
    """
    c = boundary_constant(information, alpha, shape)
    if shape == "pocock":
        return c
    return c * math.sqrt(max(information) / current)


# ------------------------------------------------------------------------ looks


@dataclass(frozen=True, slots=True)
class Interval:
    """An estimate with its (repeated) confidence interval over tasks.

    Attributes:
        value: Mean over tasks of the per-task estimates (NaN with no task).
        low: Lower bound.
        high: Upper bound.
        se: Standard error over tasks.
        tasks: Tasks used.
        critical: The multiplier of ``se`` (Student-t scale).
    """

    value: float
    low: float
    high: float
    se: float
    tasks: int
    critical: float

    @property
    def half_width(self) -> float:
        """``(high - low) / 2``."""
        return (self.high - self.low) / 2.0


@dataclass(frozen=True)
class AgentCounts:
    """One agent's per-task counts at its current look (aligned over the same tasks).

    Attributes:
        n: Eligible rollouts per task (among the first ``n_look`` of the task).
        c: Passing ones.
    """

    n: IntArray
    c: IntArray


@dataclass(frozen=True, slots=True)
class AgentLook:
    """An agent at one look.

    ``first_value`` is the estimate from each task's first ``design.first`` rollouts only:
    every run has them whatever it decides later, so it is exactly unbiased (the estimate
    at the stop, ``interval.value``, may carry optional-stopping bias; see the module).
    """

    agent: str
    n: int
    interval: Interval
    met: bool
    first_value: float = math.nan


@dataclass(frozen=True, slots=True)
class PairLook:
    """A pair at one look; the difference is ``a - b`` (``first_value``: see ``AgentLook``)."""

    a: str
    b: str
    n_a: int
    n_b: int
    interval: Interval
    decision: str
    first_value: float = math.nan


@dataclass(frozen=True, slots=True)
class Step:
    """What one look decided.

    Attributes:
        agents: Every agent's estimate and interval at its current n.
        pairs: Every settle pair's difference and decision.
        advance: Agents to run further, with their next n (empty: stop).
        stop_reason: ``target`` (met), ``max_n`` (budget spent first), or ``""`` (continue).
    """

    agents: tuple[AgentLook, ...]
    pairs: tuple[PairLook, ...]
    advance: Mapping[str, int]
    stop_reason: str


@functools.lru_cache(maxsize=4096)
def _pass_table(n: int, k: int) -> FloatArray:
    """``pass@k(n, c)`` for c = 0..n (NaN when n < k), computed once per (n, k)."""
    out: FloatArray = np.asarray(pass_at_k(n, np.arange(n + 1), k, k_exceeds_n="nan"), dtype=np.float64)
    out.flags.writeable = False
    return out


def _values(counts: AgentCounts, k: int) -> FloatArray:
    n = np.asarray(counts.n, np.int64)
    c = np.asarray(counts.c, np.int64)
    out = np.empty(n.shape, dtype=np.float64)
    for value in np.unique(n):
        mask = n == value
        out[mask] = _pass_table(int(value), k)[c[mask]]
    return out


def _t_scale(z: float, df: int) -> float:
    """The Student-t quantile with the same upper tail as the normal quantile z (tail-safe)."""
    if not math.isfinite(z):
        return z
    # = stats.t.isf(stats.norm.sf(z), df), through the same special functions without
    # scipy.stats' argument handling (this runs in the adaptive estimate's replay loops)
    return float(-special.stdtrit(df, special.ndtr(-z)))


def _interval(values: FloatArray, z_crit: float) -> Interval:
    v = values[~np.isnan(values)]
    t = int(v.size)
    if t < 2:
        mean = float(v.mean()) if t else math.nan
        return Interval(mean, -math.inf, math.inf, math.inf, t, math.inf)
    se = float(v.std(ddof=1) / math.sqrt(t))
    crit = _t_scale(z_crit, t - 1)
    mean = float(v.mean())
    return Interval(mean, mean - crit * se, mean + crit * se, se, t, crit)


class _Within:
    """Model-projected within-task variance W(n) of one agent (cached)."""

    def __init__(self, counts: AgentCounts, k: int) -> None:
        self.k = k
        self.model: AgentModel | None
        try:
            self.model = fit_counts("a", counts.n, counts.c)
        except InvalidArgumentError:
            self.model = None
        self._cache: dict[int, float] = {}

    def __call__(self, n: int) -> float:
        if n not in self._cache:
            if self.model is None:
                self._cache[n] = 0.25 / n  # no 2 tasks with 2 rollouts: the Bernoulli maximum
            else:
                self._cache[n] = variance_components(self.model, n, self.k, closed_form=True).within
        return self._cache[n]


def _rci(values: FloatArray, path: Sequence[tuple[int, ...]], now: tuple[int, ...],
         within: Sequence[Callable[[int], float]], alpha: float, shape: str) -> Interval:
    """The repeated interval at the current look ``now`` of a look sequence ``path``."""
    v = values[~np.isnan(values)]
    if v.size < 2:
        return _interval(values, math.inf)
    s2 = float(v.var(ddof=1))
    # the between-task part (and, for pairs, the covariance) does not move with n
    base = max(s2 - sum(w(n) for w, n in zip(within, now, strict=True)), 0.0)
    info = []
    for state in path:
        var = base + sum(w(n) for w, n in zip(within, state, strict=True))
        info.append(1.0 / max(var, 1e-12))
    current = 1.0 / max(base + sum(w(n) for w, n in zip(within, now, strict=True)), 1e-12)
    if s2 <= 0:
        return _interval(values, float(stats.norm.ppf(1 - alpha / 2)))
    return _interval(values, critical_value([*info, current], current, alpha, shape))


def _two_stage_n(values: FloatArray, n_now: int, schedule: tuple[int, ...],
                 within: Callable[[int], float], z: float, target: float) -> int:
    """The smallest scheduled n whose projected plain half-width meets ``target`` (else max_n)."""
    v = values[~np.isnan(values)]
    if v.size < 2:
        return schedule[-1]
    base = max(float(v.var(ddof=1)) - within(n_now), 0.0)
    crit = _t_scale(z, int(v.size) - 1)
    for n in schedule[schedule.index(n_now):]:
        if crit * math.sqrt((base + within(n)) / v.size) <= target:
            return n
    return schedule[-1]


def _greedy(n_now: Mapping[str, int], candidates: Sequence[str], schedule: tuple[int, ...],
            within: Mapping[str, Callable[[int], float]]) -> dict[str, int]:
    """Next n of the candidates whose step cuts the most within-task variance per rollout."""
    gains: dict[str, tuple[float, int]] = {}
    for a in candidates:
        i = schedule.index(n_now[a])
        if i + 1 < len(schedule):
            nxt = schedule[i + 1]
            gains[a] = ((within[a](n_now[a]) - within[a](nxt)) / (nxt - n_now[a]), nxt)
    if not gains:
        return {}
    best = max(g for g, _ in gains.values())
    return {a: nxt for a, (g, nxt) in gains.items() if g >= 0.5 * best}


def _decide(iv: Interval, margin: float) -> str:
    if iv.low > 0:
        return "a_better"
    if iv.high < 0:
        return "b_better"
    if margin > 0 and -margin < iv.low and iv.high < margin:
        return "equivalent"
    return "open"


def _pair_states(history: Sequence[Mapping[str, int]], a: str, b: str) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for h in history:
        state = (h[a], h[b])
        if not out or out[-1] != state:
            out.append(state)
    return out


def evaluate(design: AdaptiveDesign, counts: Mapping[str, AgentCounts],
             history: Sequence[Mapping[str, int]],
             first_counts: Mapping[str, AgentCounts] | None = None, *,
             decisions_only: bool = False) -> Step:
    """Look at the data of the current round and decide where the next round goes.

    Args:
        design: The design.
        counts: Per agent, per-task counts among each task's first ``history[-1][agent]``
            rollouts, aligned over the same tasks for every agent.
        history: The n of every agent at each look so far, this look last (the run loop
            appends to it; the path matters for the repeated intervals).
        first_counts: The counts among each task's first ``design.first`` rollouts (for the
            unbiased first-look estimates); default: ``counts`` when this is the first look.
        decisions_only: Skip what cannot change ``advance`` and the pair decisions (in settle
            mode, the agents' repeated intervals: they are then plain intervals). The
            Rao-Blackwellised estimate (``reliabench.studies.adaptive_estimate``) replays
            many orderings this way.

    Returns:
        A ``Step``: estimates, intervals, pair decisions, and the agents to advance.
    """
    if not history:
        raise InvalidArgumentError("history is empty: give the n of every agent at this look")
    now = history[-1]
    schedule = design.schedule
    for agent in counts:
        if agent not in now or now[agent] not in schedule:
            raise InvalidArgumentError(f"agent {agent!r}: n {now.get(agent)!r} is not on the schedule "
                                       f"{list(schedule)}")
    for pair in design.settle:
        for agent in pair:
            if agent not in counts:
                raise InvalidArgumentError(f"settle: no agent {agent!r}; have {', '.join(counts)}")
    k = design.k
    alpha = 1.0 - design.confidence
    within = {a: _Within(c, k) for a, c in counts.items()}
    values = {a: _values(c, k) for a, c in counts.items()}
    if first_counts is None and len(history) == 1:
        first_counts = counts
    first = {a: _values(c, k) for a, c in (first_counts or {}).items()}

    def first_mean(v: FloatArray | None) -> float:
        if v is None or np.all(np.isnan(v)):
            return math.nan
        return float(np.nanmean(v))

    agents: list[AgentLook] = []
    two_stage = design.mode == "half_width" and design.half_width_rule == "two-stage"
    z_plain = float(stats.norm.ppf(1.0 - alpha / 2.0))
    planned: dict[str, int] = {}
    for a in counts:
        if two_stage:
            iv = _interval(values[a], z_plain)
            if len(history) == 1 and design.target_half_width is not None:
                planned[a] = _two_stage_n(values[a], now[a], schedule, within[a], z_plain,
                                          design.target_half_width)
        elif decisions_only and design.mode == "settle":
            iv = _interval(values[a], z_plain)
        else:
            single: list[tuple[int, ...]] = [(n,) for n in schedule]
            iv = _rci(values[a], single, (now[a],), [within[a]], alpha, design.boundary)
        met = design.target_half_width is not None and iv.half_width <= design.target_half_width
        agents.append(AgentLook(a, now[a], iv, met, first_mean(first.get(a))))
    pairs: list[PairLook] = []
    if two_stage:
        advance = {a: n for a, n in planned.items() if n > now[a]}
        if advance:
            return Step(tuple(agents), (), advance, "")
        return Step(tuple(agents), (), {}, "target" if all(x.met for x in agents) else "max_n")
    if design.mode == "half_width":
        advance = {}
        for look in agents:
            i = schedule.index(look.n)
            if not look.met and i + 1 < len(schedule):
                advance[look.agent] = schedule[i + 1]
        reason = "" if advance else ("target" if all(x.met for x in agents) else "max_n")
        return Step(tuple(agents), (), advance, reason)
    # settle: project the greedy path of all open pairs to the end, per pair
    projected: list[dict[str, int]] = [dict(now)]
    agents_in_pairs = sorted({x for p in design.settle for x in p})
    while True:
        nxt = _greedy(projected[-1], agents_in_pairs, schedule, within)
        if not nxt:
            break
        projected.append({**projected[-1], **nxt})
    open_agents: set[str] = set()
    for a, b in design.settle:
        states: list[tuple[int, ...]] = list(_pair_states([*history[:-1], *projected], a, b))
        d = values[a] - values[b]
        iv = _rci(d, states, (now[a], now[b]), [within[a], within[b]], design.pair_alpha,
                  design.boundary)
        decision = _decide(iv, design.margin)
        fd = first[a] - first[b] if a in first and b in first else None
        pairs.append(PairLook(a, b, now[a], now[b], iv, decision, first_mean(fd)))
        if decision == "open":
            open_agents.update((a, b))
    advance = _greedy(now, sorted(open_agents), schedule, within)
    reason = "" if advance else ("target" if not open_agents else "max_n")
    return Step(tuple(agents), tuple(pairs), advance, reason)


def fixed_intervals(design: AdaptiveDesign, counts: Mapping[str, AgentCounts]) -> dict[str, Interval]:
    """The fixed-n design's plain t-interval of each agent's reliability@k, at ``design.confidence``."""
    z = float(stats.norm.ppf(1.0 - (1.0 - design.confidence) / 2.0))
    return {a: _interval(_values(c, design.k), z) for a, c in counts.items()}


def fixed_decisions(design: AdaptiveDesign, counts: Mapping[str, AgentCounts]) -> tuple[PairLook, ...]:
    """The fixed-n design's decisions: a plain t-interval per pair at the counts given."""
    z = float(stats.norm.ppf(1.0 - design.pair_alpha / 2.0))
    out = []
    for a, b in design.settle:
        d = _values(counts[a], design.k) - _values(counts[b], design.k)
        iv = _interval(d, z)
        out.append(PairLook(a, b, int(counts[a].n.max()), int(counts[b].n.max()), iv,
                            _decide(iv, design.margin)))
    return tuple(out)


# ------------------------------------------------------------------------ continuation


@dataclass(frozen=True, slots=True)
class ProjectedLook:
    """One future look of an adaptive continuation, projected from the pilot.

    Attributes:
        n: Rollouts per task of each agent at this look.
        extra_rollouts: Rollouts beyond the pilot's needed to reach it.
        half_widths: Projected interval half-width per target (agent, or ``a-b`` pair).
        met: Whether every target would be met here (estimates held at the pilot's values).
    """

    n: Mapping[str, int]
    extra_rollouts: int
    half_widths: Mapping[str, float]
    met: bool


@dataclass(frozen=True, slots=True)
class Continuation:
    """Is a finished run's decision settled, and what would an adaptive continuation need?

    Attributes:
        design: The design (its ``first`` is the pilot's n).
        now: The pilot's look (estimates, repeated intervals, decisions).
        settled: Whether the target is met with the pilot's data.
        looks: Projected future looks, up to the first that meets the target or ``max_n``.
        extra_rollouts: Rollouts needed beyond the pilot (0 if settled; None if not even at
            ``max_n``, as projected).
    """

    design: AdaptiveDesign
    now: Step
    settled: bool
    looks: tuple[ProjectedLook, ...]
    extra_rollouts: int | None


def continuation(design: AdaptiveDesign, counts: Mapping[str, AgentCounts]) -> Continuation:
    """Project an adaptive continuation of a finished run (the pilot).

    The pilot is look 1 (every agent at ``design.first`` rollouts per task). Later looks
    keep the pilot's estimates and shrink only the within-task variance, as the Beta model
    fitted to the pilot says (``reliabench.studies.planning``); the repeated-interval critical values
    are those of the projected look sequence. It is a projection, not a promise: the
    estimates will move.
    """
    names = list(counts)
    now = {a: design.first for a in names}
    step = evaluate(design, counts, [now])
    settled = not step.advance and step.stop_reason == "target"
    n_tasks = len(next(iter(counts.values())).n)
    within = {a: _Within(c, design.k) for a, c in counts.items()}
    values = {a: _values(c, design.k) for a, c in counts.items()}
    schedule = design.schedule

    def projected_interval(v: FloatArray, path: Sequence[tuple[int, ...]], state: tuple[int, ...],
                           ws: Sequence[Callable[[int], float]], alpha: float) -> tuple[float, float]:
        ok = v[~np.isnan(v)]
        if ok.size < 2:
            return math.nan, math.inf
        base = max(float(ok.var(ddof=1)) - sum(w(design.first) for w in ws), 0.0)
        info = [1.0 / max(base + sum(w(n) for w, n in zip(ws, s, strict=True)), 1e-12) for s in path]
        current = 1.0 / max(base + sum(w(n) for w, n in zip(ws, state, strict=True)), 1e-12)
        if design.mode == "half_width" and design.half_width_rule == "two-stage":
            crit = float(stats.norm.ppf(1.0 - alpha / 2.0))  # plain intervals (see evaluate)
        else:
            crit = critical_value([*info, current], current, alpha, design.boundary)
        crit_t = _t_scale(crit, ok.size - 1)
        return float(ok.mean()), crit_t * math.sqrt(1.0 / current / ok.size)

    looks: list[ProjectedLook] = []
    extra: int | None = 0 if settled else None
    if not settled:
        if design.mode == "half_width":
            path_states: list[dict[str, int]] = [dict(now)]
            for n in schedule[1:]:
                path_states.append({a: n for a in names})
        else:
            path_states = [dict(now)]
            members = sorted({x for p in design.settle for x in p})
            while True:
                nxt = _greedy(path_states[-1], members, schedule, within)
                if not nxt:
                    break
                path_states.append({**path_states[-1], **nxt})
        met_at: dict[str, int] = {}
        for state in path_states[1:]:
            widths: dict[str, float] = {}
            all_met = True
            if design.mode == "half_width":
                target = design.target_half_width or 0.0
                for a in names:
                    _, hw = projected_interval(values[a], [(n,) for n in schedule], (state[a],),
                                               [within[a]], 1.0 - design.confidence)
                    widths[a] = hw
                    if a not in met_at and hw <= target:
                        met_at[a] = state[a]
                    all_met &= a in met_at
                cost_state = {a: met_at.get(a, state[a]) for a in names}
            else:
                for a, b in design.settle:
                    path = _pair_states(path_states, a, b)
                    mean, hw = projected_interval(values[a] - values[b], list(path), (state[a], state[b]),
                                                  [within[a], within[b]], design.pair_alpha)
                    widths[f"{a}-{b}"] = hw
                    decided = _decide(Interval(mean, mean - hw, mean + hw, hw, 2, 1.0), design.margin)
                    all_met &= decided != "open"
                cost_state = state
            cost = n_tasks * sum(cost_state[a] - now[a] for a in names)
            looks.append(ProjectedLook(dict(cost_state), cost, widths, all_met))
            if all_met:
                extra = cost
                break
    return Continuation(design, step, settled, tuple(looks), extra)
