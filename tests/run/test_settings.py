"""Run settings (reliabench.run.settings): validated once, messages name the field and the value.

Executor plugins joining the choices are tested in tests/test_plugin_examples.py.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

from reliabench.errors import InvalidArgumentError
from reliabench.run.settings import (
    IDENTITY,
    AdaptiveSettings,
    RunSettings,
    identity_of,
    settings_from_dict,
    settings_to_dict,
)
from reliabench.sandbox import MAX_SECONDS, Limits


def test_defaults() -> None:
    s = RunSettings(n=3)
    assert (s.n, s.seed, s.workers, s.sandbox, s.scanners, s.limits) == (3, 0, 1, "auto", ("bandit",), Limits())
    assert (s.test_timeout_s, s.security_policy, s.executor, s.executor_options, s.retest, s.test_workers) == (
        None, None, "local", {}, 0, "auto")
    assert (s.suite, s.agents, s.out, s.tasks, s.preflight, s.adaptive) == (None, None, None, (), True, None)


def test_frozen() -> None:
    s = RunSettings(n=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.n = 2  # type: ignore[misc]


@pytest.mark.parametrize("n", [0, -1, True, 1.0, "2", None])
def test_n_must_be_a_positive_integer(n: object) -> None:
    with pytest.raises(InvalidArgumentError, match=f"n must be an integer >= 1, got {n!r}"):
        RunSettings(n=n)  # type: ignore[arg-type]


@pytest.mark.parametrize("workers", [0, -3])
def test_workers_at_least_one(workers: int) -> None:
    with pytest.raises(InvalidArgumentError, match=f"workers must be >= 1, got {workers}"):
        RunSettings(n=1, workers=workers)


@pytest.mark.parametrize("t", [0, -1.0, math.inf, math.nan, MAX_SECONDS * 2, True, "10"])
def test_test_timeout_must_be_seconds_in_range(t: object) -> None:
    with pytest.raises(InvalidArgumentError, match=r"test_timeout_s must be a number of seconds in \(0, ") as info:
        RunSettings(n=1, test_timeout_s=t)  # type: ignore[arg-type]
    assert str(info.value).endswith(f"got {t!r}")


@pytest.mark.parametrize("t", [None, 0.5, 10, MAX_SECONDS])
def test_valid_test_timeouts(t: float | None) -> None:
    assert RunSettings(n=1, test_timeout_s=t).test_timeout_s == t


def test_executor_is_a_name_of_the_registry() -> None:
    assert RunSettings(n=1, executor="ray").executor == "ray"
    with pytest.raises(InvalidArgumentError, match=r"executor must be one of local, ray(, [a-z]+)*, got 'dask'"):
        RunSettings(n=1, executor="dask")


def test_invalid_argument_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="n must be"):
        RunSettings(n=0)


@pytest.mark.parametrize(("kw", "message"), [
    ({"retest": -1}, "retest must be >= 0, got -1"),
    ({"agents_in_flight": 0}, "agents_in_flight must be an integer >= 1, got 0"),
    ({"agents_in_flight": True}, "agents_in_flight must be an integer >= 1, got True"),
    ({"agents_in_flight": 4000}, "agents_in_flight must be at most 4000 - workers"),
    ({"test_workers": "tepid"}, "test_workers must be one of auto, warm, fresh, got 'tepid'"),
])
def test_other_values_are_checked(kw: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        RunSettings(n=1, **kw)  # type: ignore[arg-type]


def test_identity_is_marked_on_the_fields() -> None:
    """What a resume must match is said by each field's metadata, not listed elsewhere."""
    marked = {f.name: f.metadata[IDENTITY] for f in dataclasses.fields(RunSettings) if f.metadata.get(IDENTITY)}
    assert marked == {"seed": True, "sandbox": True, "scanners": True, "agents_config_hash": True,
                      "test_timeout_s": True,
                      "limits": ("cpu_s", "memory_bytes", "max_procs", "file_size_bytes", "output_bytes")}
    ident = identity_of(RunSettings(n=1, scanners=("a", "b"), limits=Limits(wall_s=5.0, memory_bytes=1 << 20)))
    assert ident["scanners"] == ["a", "b"]
    assert ident["limits"] == {"cpu_s": 60.0, "memory_bytes": 1 << 20, "max_procs": 64,
                               "file_size_bytes": 64 << 20, "output_bytes": 1 << 20}  # not wall_s


def test_the_json_form_reads_back() -> None:
    s = RunSettings(n=2, seed=1, limits=Limits(cpu_s=5.0), executor_options={"ray": {"address": "a:1"}},
                    suite="py30", agents=Path("/x/agents.toml"), out=Path("/x/run"), tasks=("t",),
                    adaptive=AdaptiveSettings(max_n=8, settle=("a,b",)), security_policy={"threshold": "low"})
    doc = settings_to_dict(s)
    assert json.loads(json.dumps(doc)) == doc and doc["agents"] == "/x/agents.toml" and "test_timeout_s" not in doc
    assert settings_from_dict(json.loads(json.dumps(doc))) == s


def test_agents_in_flight_defaults_to_workers() -> None:
    assert RunSettings(n=1, workers=3).agents_in_flight_or_default == 3
    assert RunSettings(n=1, workers=3, agents_in_flight=64).agents_in_flight_or_default == 64
    assert "agents_in_flight" not in identity_of(RunSettings(n=1, agents_in_flight=64))  # not the run's identity
