"""Harness noise as text and JSON: ``reliabench retest``'s report and ``score``'s noise section.

The noise report (:mod:`reliabench.studies.noise`) is rendered here for the terminal and
Markdown (:func:`render_noise`, :func:`score_noise_lines`) and as JSON (:func:`noise_to_json`,
:func:`score_noise_json`); the HTML report's section is :mod:`reliabench.report.noise_section`.
"""

from __future__ import annotations

import math
from typing import Any

from reliabench.studies.noise import FlakyTest, NoiseReport, ScoreNoise

__all__ = ["noise_to_json", "render_noise", "score_noise_json", "score_noise_lines"]


def render_noise(report: NoiseReport, *, limit: int = 20) -> str:
    """Plain-text lines: the noise rate, the flaky tests, the variance split."""
    rate = report.noise_rate
    lines = [
        f"harness noise: {report.flaky_rollouts} of {rate.rollouts} re-tested rollout(s) flip their "
        f"verdict on identical code = {rate.value:.1%} [{rate.ci_low:.1%}, {rate.ci_high:.1%}] "
        f"({round(100 * rate.confidence)}% Clopper-Pearson); up to {report.max_reruns} re-run(s) per "
        f"rollout, {report.reruns} in all" + (f", {report.test_errors} harness error(s) left out"
                                              if report.test_errors else ""),
    ]
    if report.flaky_tests:
        lines.append(f"flaky tests ({len(report.flaky_tests)}): outcome changed on identical code, "
                     "on the reference solution or in several agents' code")
        for f in report.flaky_tests[:limit]:
            evidence = (f"reference flips {f.reference_flips} in {f.reference_runs} runs"
                        if f.evidence == "reference" else f"{f.agents} agent(s)")
            lines.append(f"  {f.task_id} :: {f.test}  flips {f.flips} in {f.runs} runs "
                         f"({f.rollouts} rollout(s); {evidence})")
        if len(report.flaky_tests) > limit:
            lines.append(f"  ... {len(report.flaky_tests) - limit} more (--format json lists all)")
    else:
        lines.append("flaky tests: none seen")
    if report.code_flips:
        lines.append(f"not counted as flaky ({len(report.code_flips)}): flipped only in one agent's code, "
                     "never on the reference (the code may be the cause)")
        for f in report.code_flips[:limit]:
            lines.append(f"  {f.task_id} :: {f.test}  flips {f.flips} in {f.runs} runs "
                         f"({f.rollouts} rollout(s))")
    if report.variance:
        lines.append("rollout-to-rollout variance of the verdict (mean over tasks): harness part "
                     "(same code) vs agent part (different code)")
        for v in report.variance:
            lines.append(f"  {v.agent:<24} total {v.total:.4f} = harness {v.harness:.4f} + agent "
                         f"{v.agent_part:.4f}  ({v.tasks} task(s))")
    return "\n".join(lines) + "\n"


def _num(x: float) -> float | None:
    return None if math.isnan(x) else round(x, 6)


def noise_to_json(report: NoiseReport) -> dict[str, Any]:
    """The JSON document of ``reliabench retest --format json`` (and ``score``'s ``harness_noise``)."""
    rate = report.noise_rate

    def flip(f: FlakyTest) -> dict[str, Any]:
        return {"task_id": f.task_id, "test": f.test, "runs": f.runs, "flips": f.flips,
                "rollouts": f.rollouts, "agents": f.agents, "reference_runs": f.reference_runs,
                "reference_flips": f.reference_flips, "evidence": f.evidence}

    return {
        "flaky_tests": [flip(f) for f in report.flaky_tests],
        "code_flips": [flip(f) for f in report.code_flips],
        "flaky_rollouts": report.flaky_rollouts,
        "retested_rollouts": rate.rollouts,
        "noise_rate": {"value": _num(rate.value), "ci_low": _num(rate.ci_low),
                       "ci_high": _num(rate.ci_high), "confidence": rate.confidence,
                       "method": rate.method},
        "reruns": report.reruns,
        "max_reruns_per_rollout": report.max_reruns,
        "test_errors": report.test_errors,
        "variance": [{"agent": v.agent, "tasks": v.tasks, "total": _num(v.total),
                      "harness": _num(v.harness), "agent_part": _num(v.agent_part)}
                     for v in report.variance],
        "rollouts": [{"task_id": r.key[0], "agent": r.key[1], "rollout": r.key[2],
                      "verdicts": list(r.verdicts), "verdict_flaky": r.verdict_flaky,
                      "flaky_tests": list(r.flaky_tests)} for r in report.rollouts],
    }


def score_noise_lines(noise: ScoreNoise) -> list[str]:
    """``score``'s harness-noise section, as lines of text (table and Markdown formats)."""
    lines = ["", "== harness noise (identical code re-tested; apart from agent variance) =="]
    lines += render_noise(noise.report).rstrip("\n").splitlines()
    excluded = "yes" if noise.policy.exclude_flaky_tests else "no"
    lines.append(f"flaky-test policy: exclude flaky tests = {excluded}, "
                 f"flaky verdicts = {noise.policy.flaky_verdict}")
    lines += [f"  {n}" for n in noise.policy.notes]
    return lines


def score_noise_json(noise: ScoreNoise) -> dict[str, Any]:
    """``score --format json``'s ``harness_noise`` and ``flaky_policy`` keys."""
    policy = noise.policy
    return {"harness_noise": {k: v for k, v in noise_to_json(noise.report).items() if k != "rollouts"},
            "flaky_policy": {"exclude_flaky_tests": policy.exclude_flaky_tests,
                             "flaky_verdict": policy.flaky_verdict,
                             "excluded_tests": policy.excluded_tests,
                             "test_outcomes_removed": policy.tests_removed,
                             "verdicts_changed": policy.verdicts_changed}}
