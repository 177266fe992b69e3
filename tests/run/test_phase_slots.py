"""PhaseSlots: two disjoint pools, a slot held by one phase at a time, the whole rollout holding both."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
from suite_helpers import one_task_suite

from reliabench.errors import InvalidArgumentError
from reliabench.run.phase_slots import FixedSlot, PhaseSlots, SlotSource, splits_phases
from reliabench.tasks.suite import load_suite


def test_the_pools_are_disjoint_ranges() -> None:
    slots = PhaseSlots(2, 3)
    with slots.test_phase() as t0, slots.test_phase() as t1:
        assert {t0, t1} == {0, 1}
    with slots.agent_phase() as a, slots.agent_phase() as b, slots.agent_phase() as c:
        assert {a, b, c} == {2, 3, 4}
    assert isinstance(slots, SlotSource) and isinstance(FixedSlot(7), SlotSource)


def test_whole_holds_an_agent_slot_and_runs_on_the_test_slot() -> None:
    slots = PhaseSlots(1, 1)
    with slots.whole() as slot:
        assert slot == 0
        assert slots._agents.empty() and slots._tests.empty()  # both held
    assert slots._agents.qsize() == 1 and slots._tests.qsize() == 1


def test_no_two_holders_share_a_slot_under_load() -> None:
    slots = PhaseSlots(2, 5)
    lock = threading.Lock()
    holding: set[int] = set()
    clashes: list[int] = []
    peak = {"agents": 0, "tests": 0}

    def one(i: int) -> None:
        phase = slots.agent_phase() if i % 2 else slots.test_phase()
        with phase as slot:
            with lock:
                if slot in holding:
                    clashes.append(slot)
                holding.add(slot)
                kind = "agents" if slot >= 2 else "tests"
                peak[kind] = max(peak[kind], sum(1 for s in holding if (s >= 2) == (kind == "agents")))
            time.sleep(0.002)
            with lock:
                holding.discard(slot)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(60)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert clashes == [] and peak["agents"] <= 5 and peak["tests"] <= 2


@pytest.mark.parametrize("counts", [(0, 1), (1, 0)])
def test_counts_below_one_are_refused(counts: tuple[int, int]) -> None:
    with pytest.raises(InvalidArgumentError, match="must be >= 1"):
        PhaseSlots(*counts)


def test_which_tasks_split_their_phases(tmp_path: Path) -> None:
    root = one_task_suite(tmp_path, {"main.py": "x = 1\n"}, {"test_main.py": "def test_x():\n    pass\n"})
    task = load_suite(root).task("t1")
    assert splits_phases(task)  # a host task whose tests start fresh
    assert not splits_phases(replace(task, environment=replace(task.environment, tests="same")))
    assert not splits_phases(replace(task, environment=replace(task.environment, image="python:3.11-slim")))
