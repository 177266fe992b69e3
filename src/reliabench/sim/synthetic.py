r"""The synthetic multi-rollout benchmark: tasks x agents x rollouts x hidden tests.

A seeded, vectorized generator of per-rollout test counts, built to show the gap between the
misapplied pass@k (n = tests of one submission) and reliability@k (n = independent rollouts).

The generative model (all latent effects on the logit scale, :math:`\sigma(x) = 1/(1+e^{-x})`,
:math:`\operatorname{logit} = \sigma^{-1}`):

.. math::

    T_i &\sim \mathrm{UniformInt}\{t_{\min}, \dots, t_{\max}\}
        && \text{hidden tests of task } i \\
    H_i &\sim \mathrm{Binomial}(T_i, f_{\mathrm{edge}})
        && \text{of which edge-case tests} \\
    d_i &\sim \mathcal N(0, \sigma_d^2) && \text{task difficulty} \\
    s_j &= s_{\min} + (s_{\max} - s_{\min})\, j / (A - 1) && \text{agent skill (evenly spaced)} \\
    e_{ij} &\sim \mathcal N(0, \sigma_{\mathrm{int}}^2) && \text{agent-task interaction} \\
    \eta_{ij} &= s_j - d_i + e_{ij} \\
    \varepsilon_{ijr} &\sim \mathcal N(0, 1) && \text{rollout factor, shared by its tests} \\
    K_{ijr} &\sim \mathrm{Bernoulli}\bigl(\sigma(\operatorname{logit} \pi_{\mathrm{core}}
        + \eta_{ij})\bigr) && \text{the rollout "got the core right"} \\
    p_{ijr} &= \sigma(\operatorname{logit} p_{\mathrm{test}} + \eta_{ij}
        + \sigma_r \varepsilon_{ijr}) && \text{pass probability of a regular test} \\
    q_{ijr} &= \sigma(\operatorname{logit} p_{\mathrm{edge}} + \eta_{ij}
        + \sigma_r \varepsilon_{ijr}) && \text{pass probability of an edge-case test} \\
    P_{ijr} &= \begin{cases}
        \mathrm{Bin}(T_i - H_i, p_{ijr}) + \mathrm{Bin}(H_i, q_{ijr}) & K_{ijr} = 1 \\
        \mathrm{Bin}(T_i, p_{\mathrm{broken}}) & K_{ijr} = 0
    \end{cases} && \text{tests passed}

Given the rollout's latents, its tests are independent; they are correlated through
:math:`K_{ijr}` and :math:`\varepsilon_{ijr}` (within a rollout) and through
:math:`\eta_{ij}` (across the rollouts of one pair). Test counts are binomial draws, so no
per-test outcome is ever materialized: memory is O(tasks x agents x rollouts), generated in
blocks of tasks. A rollout passes when :math:`P_{ijr} = T_i`.

With every spread zero, ``core_prob = 1`` and ``edge_fraction = 0``, :math:`P \sim
\mathrm{Bin}(T, p_{\mathrm{test}})`: the misapplied pass@1 is :math:`p_{\mathrm{test}}` and
reliability@1 is :math:`p_{\mathrm{test}}^T` (the analytic check in the tests).

Every parameter lives in :class:`SimulationConfig` (documented in ``docs/simulate.md``); the
defaults are the package file ``simulate_default.toml``, and a user TOML file overrides any
subset of them.

Examples:
    >>> cfg = default_config().replace(tasks=5, agents=2, rollouts=3)
    >>> bench = generate(cfg, seed=1)
    >>> bench.tests_passed.shape
    (5, 2, 3)
    >>> bool((bench.tests_passed <= bench.tests_total[:, None, None]).all())
    True
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

import numpy as np
import numpy.typing as npt
from scipy.special import expit, logit

from reliabench.errors import ConfigError, InvalidArgumentError
from reliabench.files.toml import read_toml, tomllib
from reliabench.metrics.analysis import CountTable, ScoreReport, parse_ks, score_counts
from reliabench.metrics.arrays import FloatArray, IntArray
from reliabench.records import Rollout
from reliabench.studies.proxy_validity import ProxyStudy, proxy_study

__all__ = [
    "DEFAULT_CONFIG_RESOURCE",
    "GENERATOR",
    "MAX_ROLLOUTS",
    "PARAMETERS",
    "SWEEP_ALIASES",
    "SimulatedBenchmark",
    "SimulationConfig",
    "SimulationResult",
    "SweepPoint",
    "SweepResult",
    "default_config",
    "generate",
    "load_config",
    "run_simulation",
    "sweep",
    "count_table",
    "to_records",
]

GENERATOR: Final = "reliabench.studies.synthetic"
"""The generator's name in each record's ``meta`` (where the module lived when records first carried it).
"""
DEFAULT_CONFIG_RESOURCE: Final = "simulate_default.toml"
MAX_ROLLOUTS: Final = 10**8  # tasks x agents x rollouts (int32 counts: 400 MB at most)
_BLOCK_ROLLOUTS: Final = 1 << 18  # rollouts generated per block (bounds working memory)


# name -> (kind, description); kind is "int" or "float". The order is the documented order.
PARAMETERS: Final[Mapping[str, tuple[str, str]]] = MappingProxyType({
    "tasks": ("int", "number of tasks N (>= 1)"),
    "agents": ("int", "number of agents A (>= 1)"),
    "rollouts": ("int", "independent rollouts n per (task, agent) pair (>= 1)"),
    "tests_min": ("int", "fewest hidden tests of a task (>= 1)"),
    "tests_max": ("int", "most hidden tests of a task (>= tests_min)"),
    "edge_fraction": ("float", "probability that a test is an edge-case test, in [0, 1]"),
    "test_pass_prob": ("float", "pass probability of a regular test at eta = 0, in [0, 1]"),
    "edge_pass_prob": ("float", "pass probability of an edge-case test at eta = 0, in [0, 1]"),
    "skill_min": ("float", "skill (logit) of the weakest agent (finite)"),
    "skill_max": ("float", "skill (logit) of the strongest agent (>= skill_min)"),
    "difficulty_sd": ("float", "sd of task difficulty (logit, >= 0)"),
    "interaction_sd": ("float", "sd of the agent-task interaction (logit, >= 0)"),
    "rollout_sd": ("float", "sd of the rollout factor shared by the tests of a rollout (>= 0)"),
    "core_prob": ("float", "P(rollout gets the core right) at eta = 0, in [0, 1]"),
    "broken_pass_prob": ("float", "per-test pass probability when the core is wrong, in [0, 1]"),
    "seed": ("int", "default seed (>= 0); --seed overrides it"),
})

# sweep names that are not config keys: name -> config keys it sets (k is handled apart)
SWEEP_ALIASES: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType({
    "tests": ("tests_min", "tests_max"),
    "n": ("rollouts",),
    "k": (),
})


@dataclass(frozen=True, slots=True)
class SimulationConfig:
    """Every parameter of the generator; constructing one validates it.

    See the module docstring for the model and ``docs/simulate.md`` for each parameter.

    Raises:
        InvalidArgumentError: naming the parameter and its bad value.
    """

    tasks: int
    agents: int
    rollouts: int
    tests_min: int
    tests_max: int
    edge_fraction: float
    test_pass_prob: float
    edge_pass_prob: float
    skill_min: float
    skill_max: float
    difficulty_sd: float
    interaction_sd: float
    rollout_sd: float
    core_prob: float
    broken_pass_prob: float
    seed: int

    def __post_init__(self) -> None:
        for name, (kind, _) in PARAMETERS.items():
            value = getattr(self, name)
            if kind == "int":
                if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                    raise InvalidArgumentError(f"{name} must be an integer, got {value!r}")
                minimum = 0 if name == "seed" else 1
                if value < minimum:
                    raise InvalidArgumentError(f"{name} must be >= {minimum}, got {value!r}")
                object.__setattr__(self, name, int(value))
            else:
                if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)):
                    raise InvalidArgumentError(f"{name} must be a number, got {value!r}")
                if not math.isfinite(value):
                    raise InvalidArgumentError(f"{name} must be finite, got {value!r}")
                object.__setattr__(self, name, float(value))
        for name in ("edge_fraction", "test_pass_prob", "edge_pass_prob", "core_prob",
                     "broken_pass_prob"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise InvalidArgumentError(f"{name} must be in [0, 1], got {value!r}")
        for name in ("difficulty_sd", "interaction_sd", "rollout_sd"):
            value = getattr(self, name)
            if value < 0.0:
                raise InvalidArgumentError(f"{name} must be >= 0, got {value!r}")
        if self.tests_max < self.tests_min:
            raise InvalidArgumentError(
                f"tests_max must be >= tests_min={self.tests_min}, got {self.tests_max!r}")
        if self.skill_max < self.skill_min:
            raise InvalidArgumentError(
                f"skill_max must be >= skill_min={self.skill_min}, got {self.skill_max!r}")
        size = self.tasks * self.agents * self.rollouts
        if size > MAX_ROLLOUTS:
            raise InvalidArgumentError(
                f"tasks x agents x rollouts must be <= {MAX_ROLLOUTS}, got "
                f"{self.tasks} x {self.agents} x {self.rollouts} = {size}")

    def replace(self, **changes: Any) -> SimulationConfig:
        """A copy with some parameters changed (validated; unknown names raise)."""
        unknown = sorted(set(changes) - set(PARAMETERS))
        if unknown:
            raise InvalidArgumentError(
                f"unknown simulation parameter {unknown[0]!r} (expected one of {', '.join(PARAMETERS)})")
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, int | float]:
        """The parameters as a plain dict, in documented order."""
        return {name: getattr(self, name) for name in PARAMETERS}


def _read_toml(path: Path) -> dict[str, Any]:
    return read_toml(path, "a simulation config")


def _from_mapping(base: Mapping[str, Any], data: Mapping[str, Any], source: str) -> SimulationConfig:
    """Merge ``data`` over ``base`` and validate; errors name ``source`` and the key."""
    for key in data:
        if key not in PARAMETERS:
            raise ConfigError(source, f"unknown key (expected one of {', '.join(PARAMETERS)})",
                              field=str(key))
    merged = {**base, **data}
    missing = [name for name in PARAMETERS if name not in merged]
    if missing:
        raise ConfigError(source, "missing key", field=missing[0])
    # Validate key by key first, so that the error names the key that is wrong.
    for key in data:
        try:
            dataclasses.replace(_PROBE, **{key: data[key]})
        except InvalidArgumentError as exc:
            raise ConfigError(source, str(exc), field=key) from None
    try:
        return SimulationConfig(**merged)
    except InvalidArgumentError as exc:  # a relation between keys (tests_max < tests_min, ...)
        key = str(exc).split(" ", 1)[0]
        raise ConfigError(source, str(exc), field=key) from None


# A valid configuration used only to check single keys in isolation (relations are checked
# on the merged config).
_PROBE: Final = SimulationConfig(
    tasks=1, agents=1, rollouts=1, tests_min=1, tests_max=10**9, edge_fraction=0.0,
    test_pass_prob=0.5, edge_pass_prob=0.5, skill_min=-1e300, skill_max=1e300,
    difficulty_sd=0.0, interaction_sd=0.0, rollout_sd=0.0, core_prob=1.0,
    broken_pass_prob=0.0, seed=0,
)


def default_config() -> SimulationConfig:
    """The package default (``simulate_default.toml``), which reproduces claim (1)."""
    ref = resources.files("reliabench.sim").joinpath(DEFAULT_CONFIG_RESOURCE)
    text = ref.read_text(encoding="utf-8")
    data = tomllib.loads(text)
    return _from_mapping({}, data, f"<reliabench.sim>/{DEFAULT_CONFIG_RESOURCE}")


def load_config(path: str | Path | None = None) -> SimulationConfig:
    """Load a simulation config: the defaults, overridden by the keys of ``path``.

    Args:
        path: A TOML file with any subset of the keys of :data:`PARAMETERS` at top level;
            ``None`` gives the defaults.

    Raises:
        ConfigError: naming the file and the key, for an unknown key, a bad value, a file
            that is not valid TOML, or a missing file.
    """
    base = default_config()
    if path is None:
        return base
    p = Path(path)
    return _from_mapping(base.to_dict(), _read_toml(p), str(p))


@dataclass(frozen=True)
class SimulatedBenchmark:
    """The generated benchmark: test counts per rollout plus the latents that produced them.

    Attributes:
        config: The configuration.
        seed: The seed used.
        task_ids: Task ids, ``sim-task-0000`` ... (length N).
        agent_ids: Agent names, ``sim-agent-00`` ... from weakest to strongest (length A).
        tests_total: Hidden tests per task, shape (N,).
        edge_tests: Edge-case tests per task, shape (N,).
        tests_passed: Tests passed per rollout, shape (N, A, n), int32.
        skill: Agent skills s_j, shape (A,).
        difficulty: Task difficulties d_i, shape (N,).
    """

    config: SimulationConfig
    seed: int
    task_ids: tuple[str, ...]
    agent_ids: tuple[str, ...]
    tests_total: IntArray
    edge_tests: IntArray
    tests_passed: npt.NDArray[np.int32]
    skill: FloatArray
    difficulty: FloatArray

    @property
    def passed(self) -> npt.NDArray[np.bool_]:
        """Whether each rollout passed all its tests, shape (N, A, n)."""
        out: npt.NDArray[np.bool_] = self.tests_passed == self.tests_total[:, None, None]
        return out


def _skills(cfg: SimulationConfig) -> FloatArray:
    if cfg.agents == 1:
        return np.array([(cfg.skill_min + cfg.skill_max) / 2.0])
    return np.linspace(cfg.skill_min, cfg.skill_max, cfg.agents)


def _logit(p: float) -> float:
    """``logit(p)``, with +-inf at 1 and 0."""
    with np.errstate(divide="ignore"):
        return float(logit(p))


def generate(config: SimulationConfig, seed: int | None = None) -> SimulatedBenchmark:
    """Draw one synthetic benchmark (see the module docstring for the model).

    Deterministic: the same config and seed give the same counts on every platform numpy
    supports. Rollouts are drawn in blocks of tasks (about 2**18 rollouts per block, a size
    fixed by the config, so results do not depend on memory); each block has its own
    random stream, ``SeedSequence(seed, spawn_key=(1, block))``.

    Args:
        config: A validated :class:`SimulationConfig`.
        seed: Overrides ``config.seed`` when given (an integer >= 0).

    Returns:
        A :class:`SimulatedBenchmark`.

    Raises:
        InvalidArgumentError: for a bad seed or a config that is not a SimulationConfig.
    """
    if not isinstance(config, SimulationConfig):
        raise InvalidArgumentError(f"config must be a SimulationConfig, got {type(config).__name__}")
    if seed is None:
        seed = config.seed
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InvalidArgumentError(f"seed must be an integer >= 0, got {seed!r}")
    seed = int(seed)
    cfg = config
    n_tasks, n_agents, n_roll = cfg.tasks, cfg.agents, cfg.rollouts
    top = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0,)))
    tests_total = top.integers(cfg.tests_min, cfg.tests_max, endpoint=True, size=n_tasks)
    edge_tests = top.binomial(tests_total, cfg.edge_fraction)
    difficulty = top.normal(0.0, 1.0, size=n_tasks) * cfg.difficulty_sd
    skill = _skills(cfg)

    base_test = _logit(cfg.test_pass_prob)
    base_edge = _logit(cfg.edge_pass_prob)
    base_core = _logit(cfg.core_prob)
    passed = np.empty((n_tasks, n_agents, n_roll), dtype=np.int32)
    block = max(1, _BLOCK_ROLLOUTS // (n_agents * n_roll))
    for b, start in enumerate(range(0, n_tasks, block)):
        stop = min(start + block, n_tasks)
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(1, b)))
        m = stop - start
        interaction = rng.normal(0.0, 1.0, size=(m, n_agents)) * cfg.interaction_sd
        eta = skill[None, :] - difficulty[start:stop, None] + interaction  # (m, A)
        eps = rng.normal(0.0, 1.0, size=(m, n_agents, n_roll)) * cfg.rollout_sd
        z = eta[:, :, None] + eps
        p_core = expit(base_core + eta)  # (m, A); +-inf bases give exactly 1 or 0
        core = rng.random((m, n_agents, n_roll)) < p_core[:, :, None]
        p_test = expit(base_test + z)
        p_edge = expit(base_edge + z)
        total = tests_total[start:stop, None, None]
        edge = edge_tests[start:stop, None, None]
        shape = (m, n_agents, n_roll)
        regular_ok = rng.binomial(np.broadcast_to(total - edge, shape), p_test)
        edge_ok = rng.binomial(np.broadcast_to(edge, shape), p_edge)
        broken = rng.binomial(np.broadcast_to(total, shape), cfg.broken_pass_prob)
        passed[start:stop] = np.where(core, regular_ok + edge_ok, broken)
    width_t = max(4, len(str(n_tasks - 1)))
    width_a = max(2, len(str(n_agents - 1)))
    return SimulatedBenchmark(
        config=cfg,
        seed=seed,
        task_ids=tuple(f"sim-task-{i:0{width_t}d}" for i in range(n_tasks)),
        agent_ids=tuple(f"sim-agent-{j:0{width_a}d}" for j in range(n_agents)),
        tests_total=tests_total.astype(np.int64),
        edge_tests=edge_tests.astype(np.int64),
        tests_passed=passed,
        skill=skill,
        difficulty=difficulty,
    )


def to_records(bench: SimulatedBenchmark) -> Iterator[Rollout]:
    """The benchmark as ``Rollout`` records (lazily), marked ``simulated=True``.

    Each record has ``tests_total`` / ``tests_passed`` (no per-test names) and
    ``meta = {"generator": "reliabench.studies.synthetic", "seed": seed}``; the meta mapping is shared.
    """
    meta = MappingProxyType({"generator": GENERATOR, "seed": bench.seed})
    totals = bench.tests_total.tolist()
    for i, task in enumerate(bench.task_ids):
        total = totals[i]
        rows = bench.tests_passed[i].tolist()
        for j, agent in enumerate(bench.agent_ids):
            for r, got in enumerate(rows[j]):
                yield Rollout(task_id=task, agent=agent, rollout=r, tests_total=total,
                              tests_passed=got, simulated=True, meta=meta)


def count_table(bench: SimulatedBenchmark) -> CountTable:
    """The benchmark's per-(task, agent) counts, built straight from its arrays.

    Equal to ``analysis.count_pairs(to_records(bench))`` (a test checks it) without making
    one ``Rollout`` object per rollout, so scoring 10**6 simulated rollouts takes a moment.
    """
    passed = bench.passed
    n_tasks, n_agents, n_roll = passed.shape
    c = passed.sum(axis=2).astype(np.int64)
    shape = (n_tasks, n_agents)
    return CountTable(
        tasks=bench.task_ids,
        agents=bench.agent_ids,
        n=np.full(shape, n_roll, np.int64),
        c=c,
        c_secure=c.copy(),
        infra_errors=np.zeros(shape, np.int64),
        first_total=np.broadcast_to(bench.tests_total[:, None], shape).astype(np.int64),
        first_passed=bench.tests_passed[:, :, 0].astype(np.int64),
        first_pass=passed[:, :, 0].copy(),
        simulated=frozenset(bench.agent_ids),
        secure_known=False,
        cwe_counts={a: {} for a in bench.agent_ids},
        lens_counts={a: {} for a in bench.agent_ids},
    )


@dataclass(frozen=True)
class SimulationResult:
    """A generated benchmark, its score report and its proxy study.

    Attributes:
        benchmark: The generated counts.
        report: ``analysis.score`` of its records (render with ``report.render_score``).
        proxy: The proxy study (claim 2) at ``proxy.k``.
    """

    benchmark: SimulatedBenchmark
    report: ScoreReport
    proxy: ProxyStudy


def run_simulation(
    config: SimulationConfig,
    *,
    seed: int | None = None,
    ks: Sequence[int] = (1, 5, 10),
    proxy_k: int = 1,
    confidence: float = 0.95,
    n_resamples: int = 2_000,
) -> SimulationResult:
    """Generate, score (``analysis.score``) and run the proxy study, all with one seed.

    Args:
        config: The configuration.
        seed: Overrides ``config.seed``.
        ks: The k values of the score report.
        proxy_k: The k of reliability@k in the proxy study (<= rollouts).
        confidence: Confidence level of every interval.
        n_resamples: Bootstrap resamples of every interval (0 disables them).

    Returns:
        A :class:`SimulationResult`.
    """
    ks_t = parse_ks(list(ks))
    bench = generate(config, seed)
    report = score_counts(count_table(bench), ks_t, confidence=confidence, n_resamples=n_resamples,
                          seed=bench.seed)
    study = proxy_study(report.counts, k=proxy_k, confidence=confidence,
                        n_resamples=n_resamples, seed=bench.seed)
    return SimulationResult(bench, report, study)


@dataclass(frozen=True, slots=True)
class SweepPoint:
    """The figures at one value of a swept parameter and one k.

    The misapplied, reliability and inflation figures are per-agent means over tasks
    (as in the score table); ``*_mean`` averages them over agents, ``inflation_min`` /
    ``inflation_max`` give the range across agents.
    """

    param: str
    value: float
    k: int
    misapplied_mean: float
    reliability_mean: float
    inflation_mean: float
    inflation_min: float
    inflation_max: float
    rho_pairs: float
    rho_agents: float


@dataclass(frozen=True)
class SweepResult:
    """One-at-a-time sweeps around a base config (data for a table or a figure).

    Attributes:
        base: The base configuration.
        seed: The seed of every point.
        points: One row per (parameter, value, k).
    """

    base: SimulationConfig
    seed: int
    points: tuple[SweepPoint, ...]

    def to_rows(self) -> list[dict[str, float | int | str]]:
        """The points as plain dicts (for JSON, CSV, or plotting)."""
        return [dataclasses.asdict(p) for p in self.points]


def _nanstat(values: Sequence[float], fn: str) -> float:
    arr = np.asarray(values, dtype=np.float64)
    if np.isnan(arr).all():
        return math.nan
    return float(getattr(np, fn)(arr))


def _sweep_values(name: str, values: Sequence[float]) -> list[float]:
    if name != "k" and name not in SWEEP_ALIASES and name not in PARAMETERS:
        raise InvalidArgumentError(
            f"sweep parameter must be one of k, n, tests, {', '.join(p for p in PARAMETERS if p != 'seed')}"
            f"; got {name!r}")
    if name == "seed":
        raise InvalidArgumentError("sweep parameter 'seed' is not a model parameter; use --seed")
    if not values:
        raise InvalidArgumentError(f"sweep {name}: give at least one value")
    return list(values)


def sweep(
    config: SimulationConfig,
    sweeps: Mapping[str, Sequence[float]],
    *,
    seed: int | None = None,
    ks: Sequence[int] = (1,),
    proxy_k: int = 1,
) -> SweepResult:
    """Vary one parameter at a time around ``config`` and report inflation and rho.

    For each parameter value the benchmark is regenerated with the same seed and scored
    without bootstrap intervals. ``k`` re-scores the base benchmark at each k (its proxy
    study uses that k); ``n`` is an alias of ``rollouts``; ``tests`` sets ``tests_min`` and
    ``tests_max`` together. Other names are :data:`PARAMETERS` keys.

    Args:
        config: The base configuration.
        sweeps: Parameter name -> values.
        seed: Overrides ``config.seed``.
        ks: The k values reported at each point of a non-``k`` sweep.
        proxy_k: The k of the proxy study at each point of a non-``k`` sweep.

    Returns:
        A :class:`SweepResult`.

    Raises:
        InvalidArgumentError: for an unknown parameter or a value it cannot take.
    """
    ks_t = parse_ks(list(ks))
    seed_v = config.seed if seed is None else seed
    points: list[SweepPoint] = []
    for name, raw_values in sweeps.items():
        values = _sweep_values(name, raw_values)
        for value in values:
            if name == "k":
                k_list: tuple[int, ...] = parse_ks([value])  # type: ignore[list-item]
                cfg = config
                pk = k_list[0]
            else:
                keys = SWEEP_ALIASES.get(name, (name,))
                kind = PARAMETERS[keys[0]][0]
                if kind == "int":
                    if float(value) != int(value):
                        raise InvalidArgumentError(f"sweep {name}: expected integers, got {value!r}")
                    value = int(value)
                try:
                    cfg = config.replace(**dict.fromkeys(keys, value))
                except InvalidArgumentError as exc:
                    raise InvalidArgumentError(f"sweep {name}={value!r}: {exc}") from None
                k_list = ks_t
                pk = proxy_k
            bench = generate(cfg, seed_v)
            report = score_counts(count_table(bench), k_list, n_resamples=0, seed=bench.seed)
            study = proxy_study(report.counts, k=pk, n_resamples=0, seed=bench.seed)
            for k in k_list:
                mis = [a.metrics[f"misapplied_pass@{k}"].value for a in report.agents]
                rel = [a.metrics[f"reliability@{k}"].value for a in report.agents]
                inf = [a.metrics[f"inflation@{k}"].value for a in report.agents]
                points.append(SweepPoint(
                    param=name, value=float(value), k=k,
                    misapplied_mean=_nanstat(mis, "nanmean"),
                    reliability_mean=_nanstat(rel, "nanmean"),
                    inflation_mean=_nanstat(inf, "nanmean"),
                    inflation_min=_nanstat(inf, "nanmin"),
                    inflation_max=_nanstat(inf, "nanmax"),
                    rho_pairs=study.get("first_fraction", "pairs", "spearman").value,
                    rho_agents=study.get("first_fraction", "agents", "spearman").value,
                ))
    return SweepResult(config, seed_v, tuple(points))

