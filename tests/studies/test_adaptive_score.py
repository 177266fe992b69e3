"""The estimates at the stop of a finished adaptive run, recomputed from its records and its state."""

from __future__ import annotations

import dataclasses

from reliabench.records import Rollout
from reliabench.studies.adaptive import AdaptiveDesign
from reliabench.studies.adaptive_score import AdaptiveState, adaptive_score, counts_at, estimates_for_run

DESIGN = AdaptiveDesign(first=2, max_n=4, target_half_width=0.4)
RECORDS = [Rollout(task_id=f"t{t}", agent=a, rollout=i, verdict=(t + i + (a == "b")) % 3 != 0)
           for t in range(4) for a in ("a", "b") for i in range(4)]
STATE = AdaptiveState(DESIGN, ({"a": 2, "b": 2}, {"a": 4, "b": 2}), 5, 4, 24, 32, True)


def test_the_estimates_at_the_stop_follow_the_records_and_the_state() -> None:
    got = adaptive_score(RECORDS, STATE)
    assert got is not None and got.rollouts == 24 and got.fixed_rollouts == 32 and got.design == DESIGN
    tasks = ["t0", "t1", "t2", "t3"]
    assert got.estimates == estimates_for_run(RECORDS, tasks, DESIGN, STATE.history, 5)
    # a later round's counts come from each task's first n rollouts only
    assert counts_at(RECORDS, tasks, {"a": 2})["a"].n.tolist() == [2, 2, 2, 2]


def test_no_estimates_before_the_stop_or_for_a_subset_of_the_tasks() -> None:
    assert adaptive_score(RECORDS, dataclasses.replace(STATE, finished=False)) is None
    assert adaptive_score([r for r in RECORDS if r.task_id != "t3"], STATE) is None  # 3 of the 4 tasks
    unknown = dataclasses.replace(STATE, tasks=None)  # an older document: trust the records
    assert adaptive_score(RECORDS, unknown) is not None
