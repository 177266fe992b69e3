r"""The behaviour model of the simulated agents, its ready profiles, and the rates it implies.

A simulated agent never calls a model. For every rollout it draws ONE behaviour from a
distribution that depends on the task, then produces the code for that behaviour from the
task's reference solution (see :mod:`reliabench.sim.agent`).

**Per-task success probability.** Each task gets a deterministic *difficulty* from its id,

.. math::

    u(t) = \mathrm{int}(\mathrm{sha256}(t)[0:8]) / 2^{64} \in [0, 1), \qquad
    d(t) = s \cdot (2u(t) - 1) \in [-s, s),

with spread :math:`s` = ``difficulty_spread`` (default :data:`DIFFICULTY_SPREAD` = 2.0, in
logits). The probability of a *good* attempt on task :math:`t` is

.. math::

    p_t = \sigma(\mathrm{logit}(\mathit{skill}) - d(t)), \qquad \sigma(x) = 1 / (1 + e^{-x}),

so a task of difficulty 0 is solved with probability ``skill`` and harder tasks less often
(``skill`` = 0 or 1 give ``p_t`` = 0 or 1 on every task). Because ``p_t`` differs across tasks,
pass@k, pass^k and pass@1 of a simulated agent differ as they do for real agents.

**Behaviours.** With :math:`q` = ``p_insecure`` and the four failure-mode probabilities
``p_mutation + p_hang + p_syntax_error + p_no_change = 1`` (each conditional on a bad attempt):

================ ================================ ==========================================
behaviour        probability per rollout          code written
================ ================================ ==========================================
``correct``      :math:`p_t (1 - q)`              the reference solution
``insecure``     :math:`p_t q`                    an insecure variant of the task (uniform)
``buggy``        :math:`(1 - p_t)` ``p_mutation`` reference + ``mutations`` AST mutations
``hang``         :math:`(1 - p_t)` ``p_hang``     reference + ``while True: pass`` in its API
``syntax_error`` :math:`(1-p_t)` ``p_syntax_error`` reference with broken syntax
``no_change``    :math:`(1 - p_t)` ``p_no_change`` the starter workspace, untouched
================ ================================ ==========================================

A task without an insecure variant turns ``insecure`` into ``correct`` (the agent records the
fallback), so there ``correct`` has probability :math:`p_t`.

**Implied rates** (:func:`implied_reliability`). As in :mod:`reliabench.metrics.analysis`, a rollout
*passes* when every functional hidden test passes, and is a *secure pass* when it also fails
no security test and has no static finding at or above the threshold. Insecure variants are
written to pass the functional tests and to be caught by a security test and/or the scanner
(their ``caught_by``). So with :math:`h_t` = 1 if task :math:`t` has an insecure variant
(else 0) and :math:`f_t` the probability that its insecure code fails a FUNCTIONAL test
(0 by design; a parameter for suites where that differs),

.. math::

    \mathrm{pass}_t = p_t (1 - q h_t f_t), \qquad \mathrm{secure}_t = p_t (1 - q h_t),

averaged over the tasks. The approximation: ``buggy``, ``hang``, ``syntax_error`` and
``no_change`` rollouts are taken to always fail. Hangs, syntax errors and untouched stubs do;
a mutant survives when no test tells it apart from the reference (an *equivalent* or
untested mutant), so a measured pass rate exceeds the implied one by ``buggy_rate`` times
the survival rate of mutants. On the bundled ``py30`` suite about 13% of single mutations
survive (36 of 276 sampled), i.e. a bias of +1 to +4 points for the ready profiles.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import MISSING, dataclass, fields
from types import MappingProxyType
from typing import Any

from reliabench.errors import InvalidArgumentError
from reliabench.tasks.suite import Task

__all__ = [
    "BEHAVIOURS",
    "DIFFICULTY_SPREAD",
    "FAILURE_MODES",
    "PROFILES",
    "ImpliedRates",
    "SimParams",
    "TaskImpliedRates",
    "behaviour_probabilities",
    "get_profile",
    "implied_reliability",
    "implied_reliability_for_tasks",
    "params_problem",
    "task_difficulty",
    "task_success_probability",
]

DIFFICULTY_SPREAD = 2.0
"""Default half-width, in logits, of the uniform spread of task difficulties."""

BEHAVIOURS: tuple[str, ...] = ("correct", "insecure", "buggy", "hang", "syntax_error", "no_change")
"""Every behaviour a simulated rollout can have, in the order they are drawn."""

FAILURE_MODES: tuple[str, ...] = ("p_mutation", "p_hang", "p_syntax_error", "p_no_change")
"""The parameters that split a bad attempt among ``buggy``, ``hang``, ``syntax_error``, ``no_change``."""

_SUM_TOLERANCE = 1e-6


@dataclass(frozen=True, slots=True)
class SimParams:
    """The parameters of a simulated agent (see the module docstring for the model).

    Attributes:
        name: Profile name (``custom`` for hand-made parameters).
        skill: Probability of a good attempt on a task of difficulty 0, in [0, 1].
        p_insecure: Probability that a good attempt uses an insecure variant, in [0, 1].
        p_mutation: Share of bad attempts that are the reference with AST mutations.
        p_hang: Share of bad attempts that never return (infinite loop).
        p_syntax_error: Share of bad attempts that do not compile.
        p_no_change: Share of bad attempts that leave the workspace untouched.
        mutations: AST mutations per buggy rollout (>= 1).
        difficulty_spread: Half-width ``s`` of the task difficulties, in logits (>= 0).
        description: One line for humans.

    Raises:
        InvalidArgumentError: if a value is outside its domain or the four failure-mode
            shares do not sum to 1.
    """

    skill: float
    p_insecure: float = 0.0
    p_mutation: float = 1.0
    p_hang: float = 0.0
    p_syntax_error: float = 0.0
    p_no_change: float = 0.0
    mutations: int = 1
    difficulty_spread: float = DIFFICULTY_SPREAD
    name: str = "custom"
    description: str = ""

    def __post_init__(self) -> None:
        problem = params_problem(self)
        if problem is not None:
            raise InvalidArgumentError(f"{problem[0]}: {problem[1]}")

    def to_dict(self) -> dict[str, float | int | str]:
        """Return the parameters as a JSON-friendly dict."""
        return {
            "name": self.name,
            "skill": self.skill,
            "p_insecure": self.p_insecure,
            "p_mutation": self.p_mutation,
            "p_hang": self.p_hang,
            "p_syntax_error": self.p_syntax_error,
            "p_no_change": self.p_no_change,
            "mutations": self.mutations,
            "difficulty_spread": self.difficulty_spread,
        }


def _probability_problem(value: object) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"expected a number in [0, 1], got {value!r}"
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        return f"expected a number in [0, 1], got {value!r}"
    return None


def params_problem(params: SimParams | Mapping[str, Any]) -> tuple[str, str] | None:
    """Return ``(field, message)`` for the first invalid parameter, or None if all are valid.

    ``params`` may also be a mapping of raw values (missing keys take the defaults of
    :class:`SimParams`; ``skill`` has none and is then reported).
    """
    if isinstance(params, Mapping):
        raw = dict(params)
        if "skill" not in raw:
            return "skill", "required (a number in [0, 1])"
        defaults = {f.name: f.default for f in fields(SimParams) if f.default is not MISSING}
        values: dict[str, Any] = {**defaults, **raw}
    else:
        values = {f.name: getattr(params, f.name) for f in fields(SimParams)}
    for field in ("skill", "p_insecure", *FAILURE_MODES):
        problem = _probability_problem(values[field])
        if problem is not None:
            return field, problem
    total = sum(float(values[f]) for f in FAILURE_MODES)
    if abs(total - 1.0) > _SUM_TOLERANCE:
        return (
            "p_mutation",
            f"p_mutation + p_hang + p_syntax_error + p_no_change must sum to 1 (they split a bad "
            f"attempt among failure modes), got {total:.6g}",
        )
    m = values["mutations"]
    if isinstance(m, bool) or not isinstance(m, int) or not 1 <= m <= 50:
        return "mutations", f"expected an integer in [1, 50], got {m!r}"
    s = values["difficulty_spread"]
    if isinstance(s, bool) or not isinstance(s, (int, float)) or not math.isfinite(s) or not (
        0.0 <= s <= 20.0
    ):
        return "difficulty_spread", f"expected a number in [0, 20] (logits), got {s!r}"
    return None


PROFILES: Mapping[str, SimParams] = MappingProxyType(
    {
        "sim-careful": SimParams(
            name="sim-careful",
            skill=0.9,
            p_insecure=0.03,
            p_mutation=0.9,
            p_hang=0.0,
            p_syntax_error=0.05,
            p_no_change=0.05,
            mutations=1,
            description="reliable and secure: solves most tasks, rarely writes insecure code",
        ),
        "sim-hasty": SimParams(
            name="sim-hasty",
            skill=0.75,
            p_insecure=0.6,
            p_mutation=0.8,
            p_hang=0.0,
            p_syntax_error=0.1,
            p_no_change=0.1,
            mutations=1,
            description="decent pass rate, but takes the insecure shortcut more often than not",
        ),
        "sim-flaky": SimParams(
            name="sim-flaky",
            skill=0.4,
            p_insecure=0.2,
            p_mutation=0.5,
            p_hang=0.2,
            p_syntax_error=0.2,
            p_no_change=0.1,
            mutations=2,
            description="unreliable: fails most attempts, sometimes hangs or does not compile",
        ),
    }
)
"""The three ready profiles, by name."""


def get_profile(name: str) -> SimParams:
    """Return the ready profile called ``name``.

    Raises:
        InvalidArgumentError: naming the known profiles.
    """
    try:
        return PROFILES[name]
    except (KeyError, TypeError):
        known = ", ".join(PROFILES)
        raise InvalidArgumentError(f"profile: unknown profile {name!r} (known: {known})") from None


def task_difficulty(task_id: str, spread: float = DIFFICULTY_SPREAD) -> float:
    """Return the deterministic difficulty ``d(t) = spread * (2u - 1)`` of a task, in logits.

    ``u`` is the first 8 bytes of the SHA-256 of the UTF-8 task id read as a big-endian
    integer divided by 2**64, so difficulties are spread uniformly over ``[-spread, spread)``
    and do not depend on the suite, the run or the machine.

    Example:
        >>> round(task_difficulty("interval_merge"), 4) == round(task_difficulty("interval_merge"), 4)
        True
        >>> -2.0 <= task_difficulty("roman_numerals") < 2.0
        True
    """
    digest = hashlib.sha256(task_id.encode("utf-8")).digest()
    u = int.from_bytes(digest[:8], "big") / 2.0**64
    return float(spread) * (2.0 * u - 1.0)


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


def task_success_probability(params: SimParams, task_id: str) -> float:
    """Return ``p_t = sigmoid(logit(skill) - d(t))``, the probability of a good attempt.

    Example:
        >>> task_success_probability(SimParams(skill=0.8, difficulty_spread=0.0), "any")
        0.8
        >>> task_success_probability(SimParams(skill=1.0), "any")
        1.0
    """
    skill = float(params.skill)
    if skill <= 0.0:
        return 0.0
    if skill >= 1.0:
        return 1.0
    if params.difficulty_spread == 0:
        return skill
    logit = math.log(skill / (1.0 - skill))
    return _sigmoid(logit - task_difficulty(task_id, params.difficulty_spread))


def behaviour_probabilities(
    params: SimParams, task_id: str, *, has_insecure_variant: bool = True
) -> dict[str, float]:
    """Return the probability of each behaviour (keys :data:`BEHAVIOURS`) on one task.

    With ``has_insecure_variant=False`` the ``insecure`` share is folded into ``correct``,
    as the agent does.

    Example:
        >>> p = behaviour_probabilities(SimParams(skill=0.5, p_insecure=0.5,
        ...     difficulty_spread=0.0), "t")
        >>> p["correct"], p["insecure"], p["buggy"]
        (0.25, 0.25, 0.5)
    """
    p_t = task_success_probability(params, task_id)
    q = float(params.p_insecure)
    bad = 1.0 - p_t
    out = {
        "correct": p_t * (1.0 - q),
        "insecure": p_t * q,
        "buggy": bad * params.p_mutation,
        "hang": bad * params.p_hang,
        "syntax_error": bad * params.p_syntax_error,
        "no_change": bad * params.p_no_change,
    }
    if not has_insecure_variant:
        out["correct"] += out["insecure"]
        out["insecure"] = 0.0
    return out


@dataclass(frozen=True, slots=True)
class TaskImpliedRates:
    """The rates the model implies on one task.

    Attributes:
        task_id: The task.
        p_task: Probability of a good attempt, ``p_t``.
        pass_rate: Probability that a rollout passes all hidden tests.
        secure_pass_rate: Probability that a rollout passes and is not insecure.
        buggy_rate: Probability that a rollout is a mutant (the approximation's scope).
    """

    task_id: str
    p_task: float
    pass_rate: float
    secure_pass_rate: float
    buggy_rate: float


@dataclass(frozen=True, slots=True)
class ImpliedRates:
    """Expected per-rollout rates, averaged over tasks (see :func:`implied_reliability`).

    Attributes:
        pass_at_1: Expected share of rollouts passing all hidden tests.
        secure_pass_at_1: Expected share of rollouts that pass and are not insecure.
        buggy_rate: Expected share of mutant rollouts, counted as failures.
        per_task: The same per task, in the order given.
    """

    pass_at_1: float
    secure_pass_at_1: float
    buggy_rate: float
    per_task: tuple[TaskImpliedRates, ...]


def _as_params(profile_or_params: str | SimParams) -> SimParams:
    if isinstance(profile_or_params, SimParams):
        return profile_or_params
    if isinstance(profile_or_params, str):
        return get_profile(profile_or_params)
    raise InvalidArgumentError(
        "profile_or_params: expected a profile name or SimParams, "
        f"got {type(profile_or_params).__name__}"
    )


def implied_reliability(
    profile_or_params: str | SimParams,
    task_ids: Sequence[str],
    has_insecure_variant: Mapping[str, bool],
    *,
    insecure_fails_tests: Mapping[str, float] | None = None,
) -> ImpliedRates:
    """Return the pass rate and secure-pass rate per rollout a configuration implies.

    ``pass_t = p_t (1 - q h_t f_t)`` and ``secure_t = p_t (1 - q h_t)``, averaged over
    ``task_ids`` (see the module docstring). Mutants are counted as failures; an equivalent
    mutant can pass, so measured rates may exceed these by up to ``buggy_rate`` times the
    mutant survival rate.

    Args:
        profile_or_params: A ready profile's name or a :class:`SimParams`.
        task_ids: The tasks, each weighted equally.
        has_insecure_variant: Whether each task has an insecure variant (``h_t``); missing
            tasks count as having none.
        insecure_fails_tests: Probability ``f_t`` that an insecure rollout of the task fails
            a functional hidden test; missing tasks, or None, mean 0 (insecure variants are
            written to pass the functional tests).

    Returns:
        The averaged rates and the per-task rates.

    Raises:
        InvalidArgumentError: on an unknown profile, no tasks, or ``f_t`` outside [0, 1].

    Example:
        >>> p = SimParams(skill=0.8, p_insecure=0.5, difficulty_spread=0.0)
        >>> r = implied_reliability(p, ["a", "b"], {"a": True, "b": False})
        >>> round(r.pass_at_1, 6), round(r.secure_pass_at_1, 6)
        (0.8, 0.6)
        >>> r = implied_reliability(p, ["a"], {"a": True}, insecure_fails_tests={"a": 1.0})
        >>> round(r.pass_at_1, 6), round(r.secure_pass_at_1, 6)
        (0.4, 0.4)
    """
    params = _as_params(profile_or_params)
    ids = list(task_ids)
    if not ids:
        raise InvalidArgumentError("task_ids: expected at least one task id, got none")
    fails = insecure_fails_tests or {}
    q = float(params.p_insecure)
    rows: list[TaskImpliedRates] = []
    for tid in ids:
        f = float(fails.get(tid, 0.0))
        if not 0.0 <= f <= 1.0:
            raise InvalidArgumentError(
                f"insecure_fails_tests: expected values in [0, 1], got {f!r} for {tid!r}"
            )
        h = 1.0 if has_insecure_variant.get(tid, False) else 0.0
        p_t = task_success_probability(params, tid)
        rows.append(
            TaskImpliedRates(
                task_id=tid,
                p_task=p_t,
                pass_rate=p_t * (1.0 - q * h * f),
                secure_pass_rate=p_t * (1.0 - q * h),
                buggy_rate=(1.0 - p_t) * float(params.p_mutation),
            )
        )
    n = len(rows)
    return ImpliedRates(
        pass_at_1=sum(r.pass_rate for r in rows) / n,
        secure_pass_at_1=sum(r.secure_pass_rate for r in rows) / n,
        buggy_rate=sum(r.buggy_rate for r in rows) / n,
        per_task=tuple(rows),
    )


def implied_reliability_for_tasks(
    profile_or_params: str | SimParams, tasks: Iterable[Task]
) -> ImpliedRates:
    """Like :func:`implied_reliability`, with ``h_t`` read from loaded tasks.

    ``h_t`` is whether the task has a variant of kind ``insecure``; ``f_t`` is 0 (insecure
    variants pass the functional tests by construction).
    """
    task_list = list(tasks)
    has = {t.id: any(v.kind == "insecure" for v in t.variants) for t in task_list}
    return implied_reliability(profile_or_params, [t.id for t in task_list], has)

