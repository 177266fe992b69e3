"""The run's configuration -- one serialisable object -- and what a run reports back.

:class:`RunSettings` is everything ``reliabench run`` takes: what it runs (suite, agents file,
tasks, out), how often (n, or an adaptive design), and how (workers, sandbox, scanners, limits,
executor and its own options, test workers, re-tests). ``reliabench run --config run.toml``
reads it from a file (:mod:`reliabench.run.config_file`; flags on the command line override
the file), the run keeps it (``reliabench show RUN`` prints it back, a file ``--config``
takes again), and :func:`settings_to_dict` / :func:`settings_from_dict` are its JSON form.

What belongs to a run's *identity* (a resume must match it; anything else may change between
calls) is marked on the field itself: ``field(metadata={IDENTITY: True})``, or for
``limits`` the tuple of its attributes that count. :func:`identity_of` reads the marks
(``reliabench.run.plan.run_identity`` adds the suite's content hash, the agents' names and the
task ids, which come from the loaded suite and agents rather than from these fields).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Final

from reliabench.errors import InvalidArgumentError
from reliabench.meta_keys import TestPath
from reliabench.plugins import registry
from reliabench.records import Isolation, Rollout
from reliabench.sandbox import MAX_SECONDS, Limits

__all__ = [
    "IDENTITY",
    "MAX_SLOTS",
    "TEST_WORKERS",
    "AdaptiveSettings",
    "ProgressEvent",
    "RunSettings",
    "RunSummary",
    "identity_of",
    "settings_from_dict",
    "settings_to_dict",
]

IDENTITY: Final = "identity"
"""The field-metadata key that marks a field of :class:`RunSettings` as part of the run's identity."""

TEST_WORKERS: Final = ("auto", "warm", "fresh")
"""Where the hidden tests run (``--test-workers``)."""

MAX_SLOTS: Final = 4000
"""Sandbox slots a run may use: test slots plus agent slots (slot uids 61000 .. 64999)."""

_LIMITS_IDENTITY: Final = ("cpu_s", "memory_bytes", "max_procs", "file_size_bytes", "output_bytes")


def _identity(mark: bool | tuple[str, ...] = True) -> dict[str, Any]:
    return {IDENTITY: mark}


@dataclass(frozen=True, slots=True)
class AdaptiveSettings:
    """An adaptive run's target (``reliabench run --adaptive``; docs/statistics.md).

    Attributes:
        max_n: Most rollouts per task (the first round runs ``RunSettings.n``).
        k: The k of reliability@k the target is about.
        target_half_width: Stop an agent once its interval is at most +-this wide.
        settle: Settle these comparisons: ``A,B`` pairs, or ``all`` (every pair).
        margin: A pair whose interval lies inside +-margin is settled as equivalent.
    """

    max_n: int
    k: int = 1
    target_half_width: float | None = None
    settle: tuple[str, ...] = ()
    margin: float = 0.0


@dataclass(frozen=True, slots=True)
class RunSettings:
    """Everything that makes a run and how it runs (see the module docstring).

    ``run_suite`` takes the loaded suite and agents and the run directory as arguments (and
    ``tasks``); ``suite``, ``agents``, ``out``, ``tasks``, ``preflight`` and ``adaptive`` are
    what ``reliabench run`` reads to load and call it.

    Attributes:
        n: Rollouts per (task, agent) (an adaptive run's first round).
        seed: The run seed (identity).
        workers: Test slots: the CPU-bound phases of rollouts (scan, diff, hidden tests) at once.
        agents_in_flight: Agent phases at once, apart from the test slots
            (:mod:`reliabench.run.phase_slots`; None: ``workers``, which keeps a run's load on
            its endpoints what it was before the option existed; the ``local`` executor only).
        sandbox: Backend name (``auto``, ``bubblewrap``, ``namespaces``, ``none`` or a plugin's)
            (identity).
        scanners: Scanner names run on what each agent changed (identity).
        limits: Resource limits of the hidden-test process (wall time comes from the task);
            its CPU, memory, process, file-size and output limits are part of the identity.
        agents_config_hash: Hash of the agents file (identity; ``reliabench run`` fills it).
        test_timeout_s: Cap on each task's ``timeout_s`` for the hidden tests (None: no cap)
            (identity).
        security_policy: A security policy (threshold, allow/deny lists) kept with the run and
            applied when it is scored; analysis-time only.
        executor: A name of the executor registry (``reliabench.run.executors.EXECUTORS``):
            ``local`` (a thread pool on this machine), ``ray`` (Ray actors, one per worker slot,
            on a local or remote cluster) or a plugin's.
        executor_options: Per executor, its own options (``{"ray": {"address": "..."}}``: the
            address of an existing Ray cluster; none: start a local one).
        retest: Re-run each rollout's hidden tests this many times on its unchanged files
            (``reliabench.run.retest``; harness noise).
        test_workers: ``auto`` (warm test workers where they work, else fresh sandboxed
            processes), ``warm`` or ``fresh``; verdicts are the same, each rollout records the
            path in ``meta["test_path"]``.
        suite: The suite: a path or a bundled suite's name (its content hash is identity).
        agents: The agents file (the agents' names and its hash are identity).
        out: The run directory.
        tasks: Only these task ids (none: every task of the suite; the ids run are identity).
        preflight: Probe the agents' endpoints before the run (key variables are always checked).
        adaptive: An adaptive run's target (None: a fixed n).
    """

    n: int
    seed: int = field(default=0, metadata=_identity())
    workers: int = 1
    sandbox: str = field(default="auto", metadata=_identity())
    scanners: tuple[str, ...] = field(default=("bandit",), metadata=_identity())
    limits: Limits = field(default_factory=Limits, metadata=_identity(_LIMITS_IDENTITY))
    agents_config_hash: str = field(default="", metadata=_identity())
    test_timeout_s: float | None = field(default=None, metadata=_identity())
    security_policy: dict[str, Any] | None = None
    executor: str = "local"
    executor_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    retest: int = 0
    test_workers: str = "auto"
    suite: str | None = None
    agents: Path | None = None
    out: Path | None = None
    tasks: tuple[str, ...] = ()
    preflight: bool = True
    adaptive: AdaptiveSettings | None = None
    agents_in_flight: int | None = None

    @property
    def agents_in_flight_or_default(self) -> int:
        """Agent phases at once: ``agents_in_flight``, or ``workers`` when it is not set."""
        return self.workers if self.agents_in_flight is None else self.agents_in_flight

    def __post_init__(self) -> None:
        executors = registry("executors")  # the plugin registry: no import of the run's modules
        if self.executor not in executors:
            raise InvalidArgumentError(f"executor must be one of {', '.join(executors.names())}, "
                                       f"got {self.executor!r}")
        if isinstance(self.n, bool) or not isinstance(self.n, int) or self.n < 1:
            raise InvalidArgumentError(f"n must be an integer >= 1, got {self.n!r}")
        if self.workers < 1:
            raise InvalidArgumentError(f"workers must be >= 1, got {self.workers!r}")
        a = self.agents_in_flight
        if a is not None and (isinstance(a, bool) or not isinstance(a, int) or a < 1):
            raise InvalidArgumentError(f"agents_in_flight must be an integer >= 1, got {a!r}")
        if self.workers + self.agents_in_flight_or_default > MAX_SLOTS:
            raise InvalidArgumentError(f"agents_in_flight must be at most {MAX_SLOTS} - workers (one sandbox "
                                       f"slot each), got {a!r} with workers = {self.workers}")
        t = self.test_timeout_s
        if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float))
                              or not math.isfinite(t) or not 0 < t <= MAX_SECONDS):
            raise InvalidArgumentError(
                f"test_timeout_s must be a number of seconds in (0, {MAX_SECONDS:g}], got {t!r}")
        if self.retest < 0:
            raise InvalidArgumentError(f"retest must be >= 0, got {self.retest!r}")
        if self.test_workers not in TEST_WORKERS:
            raise InvalidArgumentError(f"test_workers must be one of {', '.join(TEST_WORKERS)}, "
                                       f"got {self.test_workers!r}")

    def executor_option(self, executor: str, key: str, default: Any = None) -> Any:
        """One option of one executor's table (``executor_option("ray", "address")``)."""
        return self.executor_options.get(executor, {}).get(key, default)


def _identity_value(value: Any, mark: bool | tuple[str, ...]) -> Any:
    if isinstance(mark, tuple):
        return {k: getattr(value, k) for k in mark}
    return list(value) if isinstance(value, tuple) else value


def identity_of(settings: RunSettings) -> dict[str, Any]:
    """The fields of ``settings`` marked as identity, as they enter the run's identity.

    Examples:
        >>> sorted(identity_of(RunSettings(n=3)))
        ['agents_config_hash', 'limits', 'sandbox', 'scanners', 'seed', 'test_timeout_s']
    """
    return {f.name: _identity_value(getattr(settings, f.name), f.metadata[IDENTITY])
            for f in fields(RunSettings) if f.metadata.get(IDENTITY)}


def settings_to_dict(settings: RunSettings) -> dict[str, Any]:
    """The JSON (and TOML) form of ``settings``: what the run keeps and ``show`` prints.

    Paths are written as they are (``reliabench run`` makes them absolute first); None values
    are left out.
    """
    out: dict[str, Any] = {}
    for f in fields(RunSettings):
        value = getattr(settings, f.name)
        if value is None:
            continue
        if isinstance(value, Limits):
            value = {k.name: getattr(value, k.name) for k in fields(Limits)}
        elif isinstance(value, AdaptiveSettings):
            value = {k.name: (list(v) if isinstance(v := getattr(value, k.name), tuple) else v)
                     for k in fields(AdaptiveSettings) if getattr(value, k.name) is not None}
        elif isinstance(value, Path):
            value = str(value)
        elif isinstance(value, tuple):
            value = list(value)
        elif isinstance(value, Mapping):
            value = {k: dict(v) if isinstance(v, Mapping) else v for k, v in value.items()}
        out[f.name] = value
    return out


def settings_from_dict(doc: Mapping[str, Any]) -> RunSettings:
    """:func:`settings_to_dict`'s form read back (values already checked: a stored config).

    Raises:
        InvalidArgumentError: a value ``RunSettings`` refuses.
        KeyError, TypeError, ValueError: a form that is not :func:`settings_to_dict`'s.
    """
    values: dict[str, Any] = dict(doc)
    if "limits" in values:
        values["limits"] = Limits(**values["limits"])
    if "adaptive" in values:
        a = dict(values["adaptive"])
        a["settle"] = tuple(a.get("settle", ()))
        values["adaptive"] = AdaptiveSettings(**a)
    for key in ("agents", "out"):
        if key in values:
            values[key] = Path(values[key])
    for key in ("scanners", "tasks"):
        if key in values:
            values[key] = tuple(values[key])
    return RunSettings(**values)


@dataclass(frozen=True, slots=True)
class ProgressEvent:
    """Sent after each recorded rollout."""

    done: int
    total: int
    passed: int
    rollout: Rollout


@dataclass(frozen=True, slots=True)
class RunSummary:
    """What a call to ``run_suite`` did."""

    run_dir: Path
    resumed: bool
    planned: int
    skipped: int
    executed: int
    passed: int
    infra_errors: int
    isolation: Isolation
    seconds: float
    test_path: TestPath | None = None
    """Where the hidden tests of this call ran (``fresh`` or ``warm``; the path of every task when
    they share one, e.g. ``repository``); None when none ran."""
