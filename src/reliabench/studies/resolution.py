"""Macro vs strict on repository tasks: the hidden-test pass rate next to SWE-bench's resolution.

A repository task's rollout (``test_runner = "repository"``) carries one outcome per
FAIL_TO_PASS and PASS_TO_PASS test and SWE-bench's verdict (``meta["swebench"]``:
``RESOLVED_FULL`` / ``RESOLVED_PARTIAL`` / ``RESOLVED_NO``, and the two lists' counts). From the
same rollouts come two figures that a single number hides (the seed paper's SWE-bench Verified
pilot: macro 0.80 vs strict 0.20):

* **macro** (hidden-test pass rate): per rollout, the listed tests that passed over those
  that ran (skipped ones left out, as SWE-bench leaves them out); per task, the mean over its
  rollouts; per agent, the mean over tasks;
* **strict** (resolution rate): per task, the share of rollouts SWE-bench calls resolved
  (``RESOLVED_FULL``); per agent, the mean over tasks. It equals reliability@1 of the main
  table unless a rollout's agent failed (or changed nothing) while its checkout resolves the
  task: such rollouts are counted as ``disagreements``.

Next to them the FAIL_TO_PASS and PASS_TO_PASS pass rates (SWE-bench's per-list rates:
passed over passed + failed, per rollout) and the count of each resolution. All means over
tasks carry a percentile bootstrap interval over tasks
(:func:`~reliabench.metrics.stats.bootstrap_task_means`, the columns paired). Infrastructure
errors are left out, as everywhere; a rollout of a repository task whose tests never graded
(a harness error after the agent) is a failure: strict 0, macro 0.

:func:`resolution_section` returns None when no record is a repository task's (the section
is then absent from ``score``: nothing changes for other suites).

Examples:
    >>> from reliabench.records import Rollout, TestOutcome
    >>> def r(agent, i, passed, resolution):
    ...     tests = tuple(TestOutcome(f"t{j}", "passed" if j < passed else "failed") for j in range(4))
    ...     sw = {"resolution": resolution, "resolved": resolution == "RESOLVED_FULL",
    ...           "fail_to_pass": [min(passed, 1), 1], "pass_to_pass": [max(passed - 1, 0), 3]}
    ...     return Rollout("task", agent, i, tests=tests, meta={"test_path": "repository", "swebench": sw})
    >>> sec = resolution_section([r("a", 0, 4, "RESOLVED_FULL"), r("a", 1, 3, "RESOLVED_NO")], n_resamples=0)
    >>> a = sec.agents[0]
    >>> a.macro.value, a.strict.value, a.resolutions
    (0.875, 0.5, (1, 0, 1))
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from reliabench.meta_keys import SWEBENCH, TEST_PATH
from reliabench.metrics.analysis import Estimate
from reliabench.metrics.stats import bootstrap_task_means
from reliabench.records import Rollout

__all__ = ["FIGURES", "AgentResolution", "ResolutionSection", "is_repository_record", "resolution_section"]

FIGURES: Final = ("macro_test_pass_rate", "strict_resolution_rate", "fail_to_pass_rate", "pass_to_pass_rate")
"""The figures of each agent, in display order."""


@dataclass(frozen=True, slots=True)
class AgentResolution:
    """One agent's figures on repository tasks.

    Attributes:
        agent: The agent.
        simulated: Its rollouts are simulated.
        tasks: Repository tasks it has graded rollouts on.
        rollouts: Its graded rollouts (infrastructure errors left out).
        resolutions: How many rollouts were ``RESOLVED_FULL``, ``RESOLVED_PARTIAL``, ``RESOLVED_NO``
            (a rollout never graded counts as NO).
        figures: :data:`FIGURES` -> the mean over tasks with its interval.
        disagreements: Rollouts whose reliabench verdict (``Rollout.passes``, what reliability@k
            counts: completed, every listed test that ran passed) differs from SWE-bench's
            ``resolved``: a rollout whose agent failed or changed nothing (``no_change``) but
            whose checkout resolves the task, or one whose every listed test was skipped
            (SWE-bench calls that resolved).
    """

    agent: str
    simulated: bool
    tasks: int
    rollouts: int
    resolutions: tuple[int, int, int]
    figures: Mapping[str, Estimate]
    disagreements: int = 0

    @property
    def macro(self) -> Estimate:
        """The hidden-test pass rate (mean over tasks of the mean over rollouts)."""
        return self.figures["macro_test_pass_rate"]

    @property
    def strict(self) -> Estimate:
        """The resolution rate (mean over tasks of the share of rollouts resolved)."""
        return self.figures["strict_resolution_rate"]


@dataclass(frozen=True, slots=True)
class ResolutionSection:
    """``score``'s section for repository tasks (see the module docstring).

    Attributes:
        agents: One entry per agent with repository rollouts, sorted by name.
        tasks: The repository tasks scored.
        confidence: The level of the intervals.
        n_resamples: Bootstrap resamples (0: no intervals).
        seed: The bootstrap seed.
    """

    agents: tuple[AgentResolution, ...]
    tasks: int
    confidence: float
    n_resamples: int
    seed: int


def is_repository_record(r: Rollout) -> bool:
    """The rollout is a repository task's (tested on the repository path, or carrying SWE-bench's verdict)."""
    return r.meta.get(TEST_PATH) == "repository" or isinstance(r.meta.get(SWEBENCH), dict)


def _pair(value: Any) -> tuple[int, int] | None:
    if (isinstance(value, (list, tuple)) and len(value) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
            and 0 <= value[0] <= value[1]):
        return int(value[0]), int(value[1])
    return None


def _rate(pair: tuple[int, int] | None) -> float:
    """SWE-bench's rate of a list: passed / total (1 when the list is empty); NaN when unknown."""
    if pair is None:
        return math.nan
    return 1.0 if pair[1] == 0 else pair[0] / pair[1]


def _rollout_values(r: Rollout) -> tuple[float, float, float, float, int, bool]:
    """``(macro, strict, f2p, p2p, resolution index, disagrees)`` of one graded rollout."""
    sw = r.meta.get(SWEBENCH)
    sw = sw if isinstance(sw, dict) else {}
    ran = [t for t in r.functional_tests if t.outcome != "skipped"]
    macro = sum(t.outcome == "passed" for t in ran) / len(ran) if ran else (math.nan if sw else 0.0)
    resolution = str(sw.get("resolution", "RESOLVED_NO"))
    index = {"RESOLVED_FULL": 0, "RESOLVED_PARTIAL": 1}.get(resolution, 2)
    if not sw:  # never graded (a harness error after the agent): a failure
        return macro, 0.0, 0.0, 0.0, 2, r.passes
    resolved = sw.get("resolved") is True
    f2p, p2p = _rate(_pair(sw.get("fail_to_pass"))), _rate(_pair(sw.get("pass_to_pass")))
    return macro, float(resolved), f2p, p2p, index, r.passes != resolved


def resolution_section(records: Iterable[Rollout], *, confidence: float = 0.95, n_resamples: int = 10_000,
                       seed: int = 0) -> ResolutionSection | None:
    """Macro vs strict per agent over the repository tasks' rollouts of ``records`` (module docstring).

    Args:
        records: Any records; those that are not a repository task's are ignored.
        confidence: The level of the intervals.
        n_resamples: Bootstrap resamples over tasks (0: no intervals).
        seed: The bootstrap seed.

    Returns:
        The section, or None when no record is a repository task's.
    """
    graded = [r for r in records if r.status != "infra_error" and is_repository_record(r)]
    if not graded:
        return None
    tasks = sorted({r.task_id for r in graded})
    agents = sorted({r.agent for r in graded})
    ti = {t: i for i, t in enumerate(tasks)}
    ai = {a: j for j, a in enumerate(agents)}
    width = len(FIGURES)
    sums = np.zeros((len(tasks), len(agents), width))
    counts = np.zeros((len(tasks), len(agents), width))
    resolutions = np.zeros((len(agents), 3), np.int64)
    disagreements = np.zeros(len(agents), np.int64)
    rollouts = np.zeros(len(agents), np.int64)
    for r in graded:
        i, j = ti[r.task_id], ai[r.agent]
        *values, index, disagrees = _rollout_values(r)
        for m, v in enumerate(values):
            if not math.isnan(v):
                sums[i, j, m] += v
                counts[i, j, m] += 1
        resolutions[j, index] += 1
        disagreements[j] += disagrees
        rollouts[j] += 1
    with np.errstate(invalid="ignore", divide="ignore"):
        per_task = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    ci = bootstrap_task_means(per_task.reshape(len(tasks), len(agents) * width), n_resamples=n_resamples,
                              confidence=confidence, seed=seed)
    simulated = {r.agent for r in graded if r.simulated}
    out = []
    for j, agent in enumerate(agents):
        present = int((counts[:, j, 1] > 0).sum())
        figures = {}
        for m, name in enumerate(FIGURES):
            col = j * width + m
            used = int(ci.tasks[col])
            figures[name] = Estimate(float(ci.value[col]), float(ci.low[col]), float(ci.high[col]), used,
                                     present - used)
        full, partial, no = (int(x) for x in resolutions[j])
        out.append(AgentResolution(agent, agent in simulated, present, int(rollouts[j]), (full, partial, no),
                                   figures, int(disagreements[j])))
    return ResolutionSection(tuple(out), len(tasks), confidence, n_resamples, seed)
