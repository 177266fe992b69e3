"""A Harbor / Terminal-Bench verifier's reward: one coarse outcome, ``reward``.

A Harbor task's verifier (``tests/test.sh``) writes ``/logs/verifier/reward.txt`` -- a number,
``1`` when the task is solved -- or ``reward.json`` (``{"reward": 1.0}``); the converter of such
tasks (:mod:`reliabench.tasks.convert.harbor`) names this format when the verifier writes no
CTRF report. The task then has ONE test, ``reward``, passed when the reward is within 1e-6 of
1: its outcomes are *coarse*, like ``exit-code`` ones. No reward, or one that is not a finite
number, is ``failed``.

What the tested process can forge: everything it can write to the reward file, as for
``exit-code`` (the verifier runs in the agent's own container for Harbor tasks).
"""

from __future__ import annotations

import json
import math
from typing import Final

from reliabench.hidden_tests.reports import ParsedReport, ReportedCase, ReportInput

__all__ = ["REWARD_TEST", "HarborRewardReport"]

REWARD_TEST: Final = "reward"
"""The name of the one test of a task graded by its reward."""
_TOLERANCE: Final = 1e-6


def _reward(data: bytes) -> float | None:
    text = data[:4096].decode("utf-8", errors="replace").strip()
    try:
        value: object = float(text)
    except ValueError:
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError):
            return None
        value = doc.get("reward") if isinstance(doc, dict) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


class HarborRewardReport:
    """The ``harbor-reward`` report format: one coarse outcome from a reward number."""

    name = "harbor-reward"
    coarse = True

    def parse(self, report: ReportInput) -> ParsedReport:
        r"""``passed`` for a reward within 1e-6 of 1, ``failed`` otherwise.

        Example:
            >>> [c.outcome for c in HarborRewardReport().parse(ReportInput(b"1\n")).cases]
            ['passed']
            >>> [c.outcome for c in HarborRewardReport().parse(ReportInput(b'{"reward": 0.5}')).cases]
            ['failed']
        """
        if report.data is None:
            return ParsedReport((ReportedCase(REWARD_TEST, "failed", "no reward was written"),),
                                ("no reward was written",), coarse=True, found=False)
        reward = _reward(report.data)
        if reward is None:
            return ParsedReport((ReportedCase(REWARD_TEST, "failed", "the reward is not a number"),),
                                ("the reward is not a finite number (reward.txt) or {\"reward\": x} "
                                 "(reward.json)",), coarse=True)
        if abs(reward - 1.0) <= _TOLERANCE:
            return ParsedReport((ReportedCase(REWARD_TEST, "passed"),), coarse=True)
        return ParsedReport((ReportedCase(REWARD_TEST, "failed", f"reward {reward:g}"),), coarse=True)
