"""Harness noise inside ``reliabench score``: the flaky-test policy and the noise section."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from reliabench.errors import UsageError
from reliabench.records import Rollout
from reliabench.store import RetestRow, RunStore
from reliabench.studies.noise import (
    NoiseReport,
    PolicyResult,
    apply_flaky_policy,
    harness_noise,
    noise_to_json,
)

__all__ = ["ScoreNoise", "noise_for_score"]


@dataclass(frozen=True, slots=True)
class ScoreNoise:
    """The re-judged records, the noise report and the policy applied."""

    records: tuple[Rollout, ...]
    report: NoiseReport
    policy: PolicyResult

    def attach(self, text: str, fmt: str) -> str:
        """Add the harness-noise section to a rendered score report."""
        from reliabench.commands.retest import render_noise

        policy = {"exclude_flaky_tests": self.policy.exclude_flaky_tests,
                  "flaky_verdict": self.policy.flaky_verdict,
                  "excluded_tests": self.policy.excluded_tests,
                  "test_outcomes_removed": self.policy.tests_removed,
                  "verdicts_changed": self.policy.verdicts_changed}
        if fmt == "json":
            doc = json.loads(text)
            doc["harness_noise"] = {k: v for k, v in noise_to_json(self.report).items() if k != "rollouts"}
            doc["flaky_policy"] = policy
            return json.dumps(doc, indent=2) + "\n"
        if fmt in ("csv",):
            return text
        lines = ["", "== harness noise (identical code re-tested; apart from agent variance) =="]
        lines += render_noise(self.report).rstrip("\n").splitlines()
        excluded = "yes" if self.policy.exclude_flaky_tests else "no"
        lines.append(f"flaky-test policy: exclude flaky tests = {excluded}, "
                     f"flaky verdicts = {self.policy.flaky_verdict}")
        lines += [f"  {n}" for n in self.policy.notes]
        return text + "\n".join(lines) + "\n"


def noise_for_score(source: str, records: Sequence[Rollout], *, exclude_flaky_tests: bool,
                    flaky_verdict: str) -> ScoreNoise | None:
    """Noise report and re-judged records when ``source`` is a run with re-tests, else None.

    Raises:
        UsageError: a flaky-test policy was asked for but there are no re-tests.
    """
    asked = exclude_flaky_tests or flaky_verdict != "original"
    rows: list[RetestRow] = []
    path = Path(source)
    if source != "-" and path.is_dir():

        with RunStore.open_existing(path, readonly=True) as store:
            rows = store.retest_rows()
    if not rows:
        if asked:
            raise UsageError(f"{source}: no re-tests recorded; --exclude-flaky-tests and --flaky-verdict "
                             f"need them (run: reliabench retest {source})")
        return None
    report = harness_noise(records, rows)
    policy = apply_flaky_policy(records, report, rows, exclude_flaky_tests=exclude_flaky_tests,
                                flaky_verdict=flaky_verdict)
    return ScoreNoise(policy.records, report, policy)
