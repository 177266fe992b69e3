r"""How many rollouts per task and how many tasks: sample-size planning for reliability@k.

**The model.** Each task t of a benchmark has a success rate :math:`p_t` for an agent (the
chance that one rollout passes all hidden tests); across tasks, :math:`p_t \sim
\mathrm{Beta}(\alpha, \beta)` with mean :math:`\mu` and standard deviation :math:`\sigma`
(the *spread*): :math:`\alpha + \beta = \mu(1-\mu)/\sigma^2 - 1`. Given :math:`p_t`, the
n rollouts are independent: :math:`c_t \sim \mathrm{Bin}(n, p_t)`, so marginally
:math:`c_t` is beta-binomial. The per-task estimator :math:`\hat R_t = \mathrm{pass@}k(n, c_t)`
is unbiased for :math:`\theta_t = 1 - (1-p_t)^k`, and the benchmark figure is
:math:`\bar R = \frac1T \sum_t \hat R_t` over T tasks drawn from the task population (the
quantity ``analysis.score`` bootstraps over tasks).

**Variance components** (exact under the model, no normal approximation inside):

.. math::
    \operatorname{Var}\hat R_t = \underbrace{\operatorname{Var}\theta(p)}_{\text{between tasks } B}
    + \underbrace{\mathrm E_p \operatorname{Var}(\hat R \mid p)}_{\text{within task } W(n)},
    \qquad \operatorname{Var}\bar R = \frac{B + W(n)}{T}

with :math:`\mathrm E(1-p)^j = \mathrm B(\alpha, \beta + j)/\mathrm B(\alpha, \beta)`, so
:math:`B = \mathrm E(1-p)^{2k} - (\mathrm E(1-p)^k)^2`, and
:math:`B + W(n) = \sum_{c=0}^n \mathrm{BetaBin}(c; n, \alpha, \beta)\,\hat R(n, c)^2 -
(\mathrm E\theta)^2`. More rollouts shrink only W(n) (about as 1/n); more tasks shrink both.

**Half-width.** A normal-approximation CI has half-width :math:`h = z_{1-a/2}\sqrt{(B+W(n))/T}`,
so :math:`T(n) = \lceil z^2 (B + W(n)) / h^2 \rceil`. If tasks are limited to :math:`T_{max}`,
the smallest n with :math:`T(n) \le T_{max}` is recommended; when even :math:`W = 0` is not
enough (:math:`z^2 B / h^2 > T_{max}`), no number of rollouts reaches the target.

**Difference of two agents** (paired, same tasks). :math:`d_t = \hat R_{tA} - \hat R_{tB}`,
:math:`\operatorname{Var} d_t = V_A(n) + V_B(n) - 2\operatorname{Cov}(\theta_A, \theta_B)`
(rollout noise is independent between agents; task difficulty is shared). The two agents'
rates are linked by a Gaussian copula with correlation :math:`\rho` (``correlation``; the
covariance is computed by 2-D Gauss-Hermite quadrature). A two-sided level-a test of the mean
difference has power :math:`\Phi(|\Delta|\sqrt{T/\operatorname{Var} d} - z_{1-a/2})`, so
:math:`T(n) = \lceil (z_{1-a/2} + z_{\text{power}})^2 \operatorname{Var} d / \Delta^2 \rceil`.
Given only agent A's rates and :math:`\Delta` (in reliability@k units), agent B's mean rate is
solved so that :math:`\mathrm E\theta_B = \mathrm E\theta_A + \Delta` with B's spread.

**Pilot data.** Per agent, from tasks with :math:`n_t \ge 2`: :math:`\hat\mu` = mean of
:math:`c_t/n_t`; :math:`\hat\sigma^2 = s^2(c/n) - \overline{(c/n)(1 - c/n)/(n_t - 1)}` (the
sample variance of per-task rates less its binomial part, clipped to
:math:`[0, 0.99\,\hat\mu(1-\hat\mu)]`); the correlation of two agents is that of their per-task
rates on shared tasks, corrected for the binomial noise, clipped to [-0.99, 0.99]. The
pilot's own figure is not the target: the difference to detect is always given.

The recommendations are checked by simulation in the tests (the promised half-width and
power are met within a few percent).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import optimize, special, stats

from reliabench.errors import InvalidArgumentError
from reliabench.metrics.analysis import count_pairs
from reliabench.metrics.estimators import pass_at_k
from reliabench.records import Rollout

__all__ = [
    "DEFAULT_ROLLOUT_OPTIONS",
    "AgentModel",
    "DesignOption",
    "Plan",
    "VarianceComponents",
    "default_spread",
    "fit_counts",
    "fit_pilot",
    "pilot_correlation",
    "plan_difference",
    "plan_half_width",
    "shift_to_difference",
    "variance_components",
]

DEFAULT_ROLLOUT_OPTIONS = (1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 50)
_GH_NODES = 48


@dataclass(frozen=True, slots=True)
class AgentModel:
    r"""Per-task success rates of one agent: Beta with this mean and standard deviation.

    Attributes:
        name: The agent.
        mean: Mean per-task success rate :math:`\mu` in [0, 1].
        spread: Standard deviation of per-task rates :math:`\sigma`,
            ``0 <= spread < sqrt(mean * (1 - mean))`` (0: every task has rate ``mean``).
    """

    name: str
    mean: float
    spread: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.mean) and 0.0 <= self.mean <= 1.0):
            raise InvalidArgumentError(f"rate of {self.name!r} must be in [0, 1], got {self.mean!r}")
        limit = math.sqrt(self.mean * (1.0 - self.mean))
        if not (math.isfinite(self.spread) and self.spread >= 0.0):
            raise InvalidArgumentError(f"spread of {self.name!r} must be >= 0, got {self.spread!r}")
        if self.spread > 0 and self.spread >= limit:
            raise InvalidArgumentError(
                f"spread of {self.name!r} must be < sqrt(rate * (1 - rate)) = {limit:.4f} for rate "
                f"{self.mean}, got {self.spread!r}")

    @property
    def beta(self) -> tuple[float, float] | None:
        """``(alpha, beta)`` of the Beta distribution, or None for a point mass."""
        if self.spread == 0.0 or self.mean in (0.0, 1.0):
            return None
        total = self.mean * (1.0 - self.mean) / self.spread**2 - 1.0
        return self.mean * total, (1.0 - self.mean) * total


@dataclass(frozen=True, slots=True)
class VarianceComponents:
    r"""Mean and variance parts of the per-task reliability@k estimator.

    Attributes:
        value: :math:`\mathrm E\theta`, the population reliability@k.
        between: Between-task variance B.
        within: Within-task variance W(n) (rollout noise).
        n: Rollouts per task.
        k: The k.
    """

    value: float
    between: float
    within: float
    n: int
    k: int

    @property
    def total(self) -> float:
        """B + W(n): the variance of one task's estimate."""
        return self.between + self.within


@dataclass(frozen=True, slots=True)
class DesignOption:
    """One design: n rollouts per task and the tasks it needs.

    Attributes:
        rollouts: Rollouts per task (per agent).
        tasks: Tasks needed for the target.
        total_rollouts: ``rollouts * tasks`` per agent.
        achieved: Half-width (half-width mode) or power (difference mode) with ``tasks``
            tasks -- or with the task limit, when one is given.
        variance: Variance of one task's estimate (or of one task's difference).
    """

    rollouts: int
    tasks: int
    total_rollouts: int
    achieved: float
    variance: float


@dataclass(frozen=True, slots=True)
class Plan:
    """A sample-size plan.

    Attributes:
        mode: ``half_width`` or ``difference``.
        k: The k of reliability@k.
        agents: The per-task rate models used.
        target: The target half-width, or the target power.
        confidence: Confidence level (half-width mode) or 1 - alpha (difference mode).
        difference: The difference to detect (difference mode), in reliability@k units.
        correlation: Copula correlation of the two agents' rates (difference mode).
        options: One ``DesignOption`` per candidate n.
        recommended: The recommended option, or None when no candidate meets the target.
        max_tasks: The task limit, if any.
        notes: How the recommendation was chosen and what limits it.
    """

    mode: str
    k: int
    agents: tuple[AgentModel, ...]
    target: float
    confidence: float
    difference: float | None
    correlation: float | None
    options: tuple[DesignOption, ...]
    recommended: DesignOption | None
    max_tasks: int | None
    notes: tuple[str, ...]


def default_spread(mean: float, icc: float = 0.5) -> float:
    r"""A default spread: :math:`\sigma = \sqrt{\mathrm{icc}\,\mu(1-\mu)}`.

    ``icc`` is the share of a single rollout's outcome variance that lies between tasks
    (0: all tasks alike; 1: each task always or never solved). Agent benchmarks sit high.

    Examples:
        >>> round(default_spread(0.5), 4)
        0.3536
    """
    if not 0.0 <= icc < 1.0:
        raise InvalidArgumentError(f"icc must be in [0, 1), got {icc!r}")
    return math.sqrt(icc * mean * (1.0 - mean))


def _moment(model: AgentModel, j: int) -> float:
    """E[(1 - p)^j] under the model."""
    ab = model.beta
    if ab is None:
        return float((1.0 - model.mean) ** j)
    a, b = ab
    return float(np.exp(special.gammaln(b + j) + special.gammaln(a + b)
                        - special.gammaln(b) - special.gammaln(a + b + j)))


def variance_components(model: AgentModel, n: int, k: int, *,
                        closed_form: bool = False) -> VarianceComponents:
    r"""Mean, between- and within-task variance of :math:`\hat R_t = \mathrm{pass@}k(n, c_t)`.

    ``closed_form`` computes the beta-binomial pmf from log-Beta functions instead of
    ``scipy.stats.betabinom`` (equal to ~1e-16, much faster: the adaptive design calls this in
    its replay loops); the default keeps scipy's, whose digits ``plan`` prints.

    Examples:
        With every task at rate 0.5 (spread 0) there is no between-task variance, and for
        n = k = 1 the estimate is one Bernoulli draw: variance 0.25.

        >>> v = variance_components(AgentModel("a", 0.5, 0.0), n=1, k=1)
        >>> v.value, v.between, v.within
        (0.5, 0.0, 0.25)
    """
    if n < k or k < 1:
        raise InvalidArgumentError(f"need n >= k >= 1, got n={n}, k={k}")
    value = 1.0 - _moment(model, k)
    between = max(_moment(model, 2 * k) - _moment(model, k) ** 2, 0.0)
    c = np.arange(n + 1)
    ab = model.beta
    if ab is None:
        pmf = stats.binom.pmf(c, n, model.mean)
    elif not closed_form:
        pmf = stats.betabinom.pmf(c, n, ab[0], ab[1])
    else:
        pmf = np.exp(special.gammaln(n + 1) - special.gammaln(c + 1) - special.gammaln(n - c + 1)
                     + special.betaln(c + ab[0], n - c + ab[1]) - special.betaln(ab[0], ab[1]))
    second = float(np.sum(pmf * _pass_curve(n, k) ** 2))
    total = max(second - value**2, between)
    return VarianceComponents(value, between, total - between, n, k)


@functools.lru_cache(maxsize=1024)
def _pass_curve(n: int, k: int) -> npt.NDArray[np.float64]:
    """``pass@k(n, c)`` for c = 0..n, computed once per (n, k)."""
    out = np.asarray(pass_at_k(n, np.arange(n + 1), k), dtype=np.float64)
    out.flags.writeable = False
    return out


def _copula_cov(a: AgentModel, b: AgentModel, rho: float, k: int) -> float:
    """Cov(theta_A, theta_B) with a Gaussian copula of correlation rho (Gauss-Hermite)."""
    if a.beta is None or b.beta is None or rho == 0.0:
        return 0.0
    x, w = np.polynomial.hermite_e.hermegauss(_GH_NODES)
    w = w / w.sum()
    z1 = x[:, None]
    z2 = rho * x[:, None] + math.sqrt(1.0 - rho**2) * x[None, :]
    pa = stats.beta.ppf(stats.norm.cdf(z1), *a.beta)
    pb = stats.beta.ppf(stats.norm.cdf(z2), *b.beta)
    ta = 1.0 - (1.0 - pa) ** k
    tb = 1.0 - (1.0 - pb) ** k
    ww = w[:, None] * w[None, :]
    e_ab = float(np.sum(ww * ta * tb))
    e_a = float(np.sum(ww * np.broadcast_to(ta, ww.shape)))
    e_b = float(np.sum(ww * tb))
    return e_ab - e_a * e_b


def shift_to_difference(a: AgentModel, difference: float, k: int, *, spread: float | None = None,
                        name: str = "B") -> AgentModel:
    """Agent B whose population reliability@k is A's plus ``difference``.

    B keeps ``spread`` (default: A's), reduced where the new mean would not allow it.

    Raises:
        InvalidArgumentError: when the target lies outside (0, 1).
    """
    target = 1.0 - _moment(a, k) + difference
    if not 0.0 < target < 1.0:
        raise InvalidArgumentError(
            f"difference {difference!r} puts reliability@{k} of B at {target:.4f}, outside (0, 1)")
    sd = a.spread if spread is None else spread

    def model(mu: float) -> AgentModel:
        limit = math.sqrt(mu * (1.0 - mu))
        return AgentModel(name, mu, min(sd, 0.99 * limit))

    def gap(mu: float) -> float:
        return 1.0 - _moment(model(mu), k) - target

    lo, hi = 1e-9, 1.0 - 1e-9
    if gap(lo) > 0 or gap(hi) < 0:
        raise InvalidArgumentError(f"no rate gives reliability@{k} = {target:.4f} with spread {sd}")
    mu = float(optimize.brentq(gap, lo, hi, xtol=1e-12))
    return model(mu)


def _options(ns: Sequence[int] | None, k: int) -> tuple[int, ...]:
    cand = DEFAULT_ROLLOUT_OPTIONS if ns is None else tuple(ns)
    for n in cand:
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise InvalidArgumentError(f"rollout options must be integers >= 1, got {n!r}")
    out = tuple(sorted({int(n) for n in cand if n >= k}))
    if not out:
        raise InvalidArgumentError(f"no rollout option >= k={k} among {list(cand)!r}")
    return out


def _check_max_tasks(max_tasks: int | None) -> None:
    if max_tasks is not None and (isinstance(max_tasks, bool) or max_tasks < 2):
        raise InvalidArgumentError(f"max_tasks must be >= 2, got {max_tasks!r}")


def _pick(options: list[DesignOption], max_tasks: int | None, notes: list[str]) -> DesignOption | None:
    if max_tasks is None:
        best = min(options, key=lambda o: (o.total_rollouts, o.rollouts))
        notes.append("recommended: the fewest rollouts in total (more tasks shrink both variance "
                     "parts, more rollouts only the within-task part); give a task limit to "
                     "trade tasks for rollouts")
        return best
    feasible = [o for o in options if o.tasks <= max_tasks]
    if not feasible:
        notes.append(f"no candidate meets the target within {max_tasks} tasks")
        return None
    best = min(feasible, key=lambda o: o.rollouts)
    notes.append(f"recommended: the fewest rollouts per task that meet the target within "
                 f"{max_tasks} tasks")
    return best


def plan_half_width(
    agents: Sequence[AgentModel],
    k: int,
    half_width: float,
    *,
    confidence: float = 0.95,
    rollout_options: Sequence[int] | None = None,
    max_tasks: int | None = None,
) -> Plan:
    """Rollouts per task and tasks for a CI of reliability@k no wider than ``+-half_width``.

    With several agents the plan covers the one with the largest variance.

    Examples:
        >>> p = plan_half_width([AgentModel("a", 0.3, 0.2)], k=1, half_width=0.05,
        ...                     rollout_options=[1, 5])
        >>> [(o.rollouts, o.tasks) for o in p.options]
        [(1, 323), (5, 114)]
    """
    if not agents:
        raise InvalidArgumentError("agents is empty: give at least one rate model")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise InvalidArgumentError(f"k must be an integer >= 1, got {k!r}")
    if not (math.isfinite(half_width) and 0.0 < half_width < 1.0):
        raise InvalidArgumentError(f"half_width must be in (0, 1), got {half_width!r}")
    if not 0.0 < confidence < 1.0:
        raise InvalidArgumentError(f"confidence must be in (0, 1), got {confidence!r}")
    _check_max_tasks(max_tasks)
    z = float(stats.norm.ppf(0.5 + confidence / 2.0))
    options = []
    for n in _options(rollout_options, k):
        v = max(variance_components(a, n, k).total for a in agents)
        tasks = max(2, math.ceil(z * z * v / half_width**2 - 1e-9))
        used = tasks if max_tasks is None else max_tasks
        options.append(DesignOption(n, tasks, n * tasks, z * math.sqrt(v / used), v))
    notes: list[str] = []
    best = _pick(options, max_tasks, notes)
    if best is None and max_tasks is not None:
        floor = max(variance_components(a, k, k).between for a in agents)
        notes.append(f"even infinitely many rollouts give a half-width of "
                     f"{z * math.sqrt(floor / max_tasks):.4f} with {max_tasks} tasks "
                     "(between-task variance alone)")
    return Plan("half_width", int(k), tuple(agents), half_width, confidence, None, None,
                tuple(options), best, max_tasks, tuple(notes))


def plan_difference(
    a: AgentModel,
    b: AgentModel,
    k: int,
    difference: float,
    *,
    correlation: float = 0.5,
    alpha: float = 0.05,
    power: float = 0.8,
    rollout_options: Sequence[int] | None = None,
    max_tasks: int | None = None,
) -> Plan:
    """Rollouts per task and tasks to detect ``difference`` in reliability@k with ``power``.

    Args:
        a: Rate model of agent A.
        b: Rate model of agent B (build it with ``shift_to_difference`` when only A is known).
        k: The k.
        difference: The difference in reliability@k to detect (its sign does not matter).
        correlation: Copula correlation of the two agents' per-task rates, in (-1, 1).
        alpha: Two-sided significance level.
        power: Target power.
        rollout_options: Candidate rollouts per task.
        max_tasks: Task limit, if any.

    Examples:
        >>> a = AgentModel("A", 0.3, 0.2)
        >>> b = shift_to_difference(a, 0.1, k=1)
        >>> p = plan_difference(a, b, 1, 0.1, correlation=0.6, rollout_options=[1, 5])
        >>> [o.tasks for o in p.options]
        [317, 84]
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise InvalidArgumentError(f"k must be an integer >= 1, got {k!r}")
    if not (math.isfinite(difference) and 0.0 < abs(difference) < 1.0):
        raise InvalidArgumentError(f"difference must be non-zero and in (-1, 1), got {difference!r}")
    if not -1.0 < correlation < 1.0:
        raise InvalidArgumentError(f"correlation must be in (-1, 1), got {correlation!r}")
    if not 0.0 < alpha < 1.0:
        raise InvalidArgumentError(f"alpha must be in (0, 1), got {alpha!r}")
    if not 0.0 < power < 1.0:
        raise InvalidArgumentError(f"power must be in (0, 1), got {power!r}")
    _check_max_tasks(max_tasks)
    za = float(stats.norm.ppf(1.0 - alpha / 2.0))
    zb = float(stats.norm.ppf(power))
    cov = _copula_cov(a, b, correlation, k)
    options = []
    for n in _options(rollout_options, k):
        v = (variance_components(a, n, k).total + variance_components(b, n, k).total - 2.0 * cov)
        v = max(v, 1e-12)
        tasks = max(2, math.ceil((za + zb) ** 2 * v / difference**2 - 1e-9))
        used = tasks if max_tasks is None else max_tasks
        achieved = float(stats.norm.cdf(abs(difference) * math.sqrt(used / v) - za))
        options.append(DesignOption(n, tasks, n * tasks, achieved, v))
    notes = [f"covariance of the two agents' per-task reliability@{k} from rate correlation "
             f"{correlation}: {cov:.5f}"]
    best = _pick(options, max_tasks, notes)
    return Plan("difference", int(k), (a, b), power, 1.0 - alpha, difference, correlation,
                tuple(options), best, max_tasks, tuple(notes))


def _rates(records: Iterable[Rollout]) -> tuple[tuple[str, ...], npt.NDArray[np.int64],
                                                 npt.NDArray[np.int64]]:
    t = count_pairs(records)
    return t.agents, t.n, t.c


def fit_pilot(records: Iterable[Rollout]) -> tuple[AgentModel, ...]:
    """Fit a per-task rate model to each agent of pilot data (method of moments).

    Raises:
        InvalidArgumentError: when an agent has fewer than 2 tasks with n >= 2 rollouts.
    """
    agents, n, c = _rates(records)
    return tuple(fit_counts(name, n[:, j], c[:, j]) for j, name in enumerate(agents))


def fit_counts(name: str, n: npt.ArrayLike, c: npt.ArrayLike) -> AgentModel:
    """Fit one agent's per-task rate model to its per-task counts (method of moments).

    Tasks with fewer than 2 rollouts are left out (they cannot separate the two variance parts).

    Raises:
        InvalidArgumentError: when fewer than 2 tasks have n >= 2 rollouts.

    Examples:
        >>> fit_counts("a", [4, 4, 4, 4], [0, 4, 0, 4]).mean
        0.5
    """
    n_arr = np.asarray(n, dtype=np.int64)
    c_arr = np.asarray(c, dtype=np.int64)
    ok = n_arr >= 2
    if ok.sum() < 2:
        raise InvalidArgumentError(
            f"pilot: agent {name!r} needs at least 2 tasks with >= 2 rollouts each to separate "
            f"between- from within-task variance, has {int(ok.sum())}")
    nn = n_arr[ok].astype(float)
    p = c_arr[ok] / nn
    mu = float(p.mean())
    var = float(p.var(ddof=1) - np.mean(p * (1.0 - p) / (nn - 1.0)))
    limit = 0.99 * mu * (1.0 - mu)
    return AgentModel(name, mu, math.sqrt(min(max(var, 0.0), limit)))


def pilot_correlation(records: Iterable[Rollout], agent_a: str, agent_b: str) -> float:
    """Correlation of two agents' per-task rates on shared tasks, corrected for binomial noise.

    Returns 0 when it cannot be estimated (fewer than 3 shared tasks or no spread).
    """
    agents, n, c = _rates(records)
    if agent_a not in agents or agent_b not in agents:
        raise InvalidArgumentError(f"pilot: no agent {agent_a!r} or {agent_b!r}; has {', '.join(agents)}")
    i, j = agents.index(agent_a), agents.index(agent_b)
    ok = (n[:, i] >= 2) & (n[:, j] >= 2)
    if ok.sum() < 3:
        return 0.0
    pa = c[ok, i] / n[ok, i]
    pb = c[ok, j] / n[ok, j]
    cov = float(np.cov(pa, pb)[0, 1])
    va = float(pa.var(ddof=1) - np.mean(pa * (1 - pa) / (n[ok, i] - 1)))
    vb = float(pb.var(ddof=1) - np.mean(pb * (1 - pb) / (n[ok, j] - 1)))
    if va <= 0 or vb <= 0:
        return 0.0
    return float(np.clip(cov / math.sqrt(va * vb), -0.99, 0.99))
