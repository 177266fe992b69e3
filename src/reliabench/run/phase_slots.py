"""Sandbox slots per phase of a rollout: agent phases apart from the CPU-bound test phases.

A rollout has two phases: the agent's (mostly waiting, for an API agent on its model) and the
tests' (scan, diff, hidden tests: CPU). :class:`PhaseSlots` gives them slots from two disjoint
ranges, so that ``--agents-in-flight N`` agent phases run at once while at most ``--workers``
test phases do:

- test slots ``0 .. workers - 1``: the hidden tests, the scan and the diff (a warm test server is
  started only for a slot that runs tests: at most ``workers`` servers);
- agent slots ``workers .. workers + agents_in_flight - 1``: the agent phase (a command agent's
  sandbox runs as the agent slot's uid, the openai agent's visible tests too).

No two things running at once share a slot: a slot is held by one phase of one rollout at a
time (a queue of free slots per range), and the ranges do not overlap. A workspace goes from
the agent slot's uid to the test slot's between the phases: every sandboxed run lends it to
its uid and gives it back (:func:`reliabench.sandbox.slots.lend_workdir`), and the agent's
environment is closed (its processes killed) before the agent slot is given back.

A rollout whose tests must run in the agent's own environment (``tests = "same"``) or in a
container (a non-host ``[environment]``) cannot change slot between its phases: it holds an
agent slot (it counts as an agent in flight) and a test slot for its whole length, and runs
both phases on the test slot, as every rollout did before. Slots are always taken in the same
order (agent, then test) and a test slot is never held while waiting for an agent slot, so
the two pools cannot deadlock. :class:`FixedSlot` is one slot for both phases (the Ray
executor's actors, one slot each).

An executor that stops (Ctrl-C, ``stop`` set) closes the slots (:meth:`PhaseSlots.close`): a rollout
that gets its first slot after that runs nothing (its thread was only waiting, it had not
started), so that only the rollouts in flight finish.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Iterator
from typing import Protocol, runtime_checkable

from reliabench.errors import InvalidArgumentError
from reliabench.tasks.suite import Task

__all__ = ["FixedSlot", "PhaseSlots", "SlotSource", "splits_phases"]


def splits_phases(task: Task) -> bool:
    """Whether a rollout of ``task`` may run its agent and its tests on different slots (module docstring)."""
    return task.environment.kind == "host" and task.environment.tests != "same"


@runtime_checkable
class SlotSource(Protocol):
    """Where a rollout's phases get their sandbox slots."""

    @property
    def closed(self) -> bool:
        """No new rollout may start: one that got its first slot now runs nothing."""
        ...

    def agent_phase(self) -> contextlib.AbstractContextManager[int]:
        """Hold a slot for an agent phase; yields the slot."""
        ...

    def test_phase(self) -> contextlib.AbstractContextManager[int]:
        """Hold a slot for a test phase; yields the slot."""
        ...

    def whole(self) -> contextlib.AbstractContextManager[int]:
        """Hold a slot for a whole rollout (both phases on it); yields the slot."""
        ...


class FixedSlot:
    """One slot for every phase (the caller runs one rollout at a time on it).

    Args:
        slot: The slot.
    """

    closed = False

    def __init__(self, slot: int) -> None:
        self.slot = slot

    @contextlib.contextmanager
    def agent_phase(self) -> Iterator[int]:
        """Yield the slot."""
        yield self.slot

    @contextlib.contextmanager
    def test_phase(self) -> Iterator[int]:
        """Yield the slot."""
        yield self.slot

    @contextlib.contextmanager
    def whole(self) -> Iterator[int]:
        """Yield the slot."""
        yield self.slot


class PhaseSlots:
    """Two pools of slots: ``test_slots`` for test phases, ``agents_in_flight`` for agent phases.

    Thread-safe; a phase waits until a slot of its pool is free.

    Args:
        test_slots: Test phases at once (``--workers``): slots ``0 .. test_slots - 1``.
        agents_in_flight: Agent phases at once: slots ``test_slots .. test_slots + agents_in_flight - 1``.

    Raises:
        InvalidArgumentError: a count below 1.

    Example:
        >>> slots = PhaseSlots(2, 3)
        >>> with slots.agent_phase() as a, slots.test_phase() as t:
        ...     (a, t)
        (2, 0)
    """

    def __init__(self, test_slots: int, agents_in_flight: int) -> None:
        if test_slots < 1 or agents_in_flight < 1:
            raise InvalidArgumentError(f"test_slots and agents_in_flight must be >= 1, "
                                       f"got {test_slots!r} and {agents_in_flight!r}")
        self.test_slots = test_slots
        self.agents_in_flight = agents_in_flight
        self._tests: queue.Queue[int] = queue.Queue()
        self._agents: queue.Queue[int] = queue.Queue()
        for slot in range(test_slots):
            self._tests.put(slot)
        for slot in range(test_slots, test_slots + agents_in_flight):
            self._agents.put(slot)
        self._closed = threading.Event()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed.is_set()

    def close(self) -> None:
        """Let no new rollout start (the executor stops); the slots still come and go."""
        self._closed.set()

    @staticmethod
    @contextlib.contextmanager
    def _hold(pool: queue.Queue[int]) -> Iterator[int]:
        slot = pool.get()
        try:
            yield slot
        finally:
            pool.put(slot)

    def agent_phase(self) -> contextlib.AbstractContextManager[int]:
        """Hold an agent slot."""
        return self._hold(self._agents)

    def test_phase(self) -> contextlib.AbstractContextManager[int]:
        """Hold a test slot."""
        return self._hold(self._tests)

    @contextlib.contextmanager
    def whole(self) -> Iterator[int]:
        """Hold an agent slot (a place among the agents in flight) and a test slot; yield the test slot."""
        with self.agent_phase(), self.test_phase() as slot:
            yield slot
