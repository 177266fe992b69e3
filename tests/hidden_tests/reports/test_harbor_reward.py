"""The coarse ``harbor-reward`` format: a Harbor verifier's reward number."""

from __future__ import annotations

import pytest

from reliabench.hidden_tests.reports import ReportInput
from reliabench.hidden_tests.reports.harbor_reward import REWARD_TEST, HarborRewardReport


@pytest.mark.parametrize(("data", "outcome"), [
    (b"1\n", "passed"), (b"1.0000001", "passed"), (b" 0 ", "failed"), (b"0.99", "failed"),
    (b'{"reward": 1}', "passed"), (b'{"reward": 0.5}', "failed"), (b'{"reward": true}', "failed"),
    (b"nan", "failed"), (b"inf", "failed"), (b"\xff\xfe", "failed"), (b"[" * 100_000, "failed"),
    (b"1" * 10_000, "failed"),
])
def test_one_coarse_outcome_from_the_reward(data: bytes, outcome: str) -> None:
    parsed = HarborRewardReport().parse(ReportInput(data))
    assert parsed.coarse and [(c.name, c.outcome) for c in parsed.cases] == [(REWARD_TEST, outcome)]


def test_no_reward_is_a_failure() -> None:
    parsed = HarborRewardReport().parse(ReportInput(None))
    assert not parsed.found and [c.outcome for c in parsed.cases] == ["failed"]
