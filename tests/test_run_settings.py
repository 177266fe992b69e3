"""Run settings (reliabench.run.settings): validated once, messages name the field and the value.

Executor plugins joining the choices are tested in tests/test_plugin_examples.py.
"""

from __future__ import annotations

import dataclasses
import math

import pytest

from reliabench.errors import InvalidArgumentError
from reliabench.run.settings import RunSettings
from reliabench.sandbox import MAX_SECONDS, Limits


def test_defaults() -> None:
    s = RunSettings(n=3)
    assert (s.n, s.seed, s.workers, s.sandbox, s.scanners, s.limits) == (3, 0, 1, "auto", ("bandit",), Limits())
    assert (s.test_timeout_s, s.security_policy, s.executor, s.ray_address, s.retest, s.test_workers) == (
        None, None, "local", None, 0, "auto")


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
