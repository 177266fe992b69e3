"""Resampling over tasks (reliabench.metrics.stats): weights, sign-flip p-values, bootstrap means.

Exact checks against enumeration where the sample space is small; properties otherwise.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from reliabench.errors import InvalidArgumentError
from reliabench.metrics.stats import bootstrap_task_means, resample_weights, sign_flip_p_values


def test_resample_weights_are_multinomial_counts() -> None:
    w = resample_weights(7, 500, np.random.default_rng(3))
    assert w.shape == (500, 7)
    assert (w.sum(axis=1) == 7).all()  # each resample draws n_tasks tasks
    assert (w >= 0).all() and (w == np.round(w)).all()
    # each task is drawn once per resample on average: E[w] = 1
    assert abs(w.mean() - 1.0) < 1e-12  # rows sum to 7 exactly, so the grand mean is exact
    assert 0.85 < w[:, 0].mean() < 1.15


def test_resample_weights_are_seeded() -> None:
    a = resample_weights(5, 10, np.random.default_rng(1))
    b = resample_weights(5, 10, np.random.default_rng(1))
    assert (a == b).all()


def _exact_sign_flip_p(d: list[float]) -> Fraction:
    """P(|mean of randomly signed d| >= |mean d|) over all 2**T sign vectors."""
    obs = abs(sum(d))
    hits = sum(abs(sum(s * x for s, x in zip(signs, d, strict=True))) >= obs - 1e-12
               for signs in itertools.product((1, -1), repeat=len(d)))
    return Fraction(hits, 2 ** len(d))


@pytest.mark.parametrize("d", [[1.0] * 5, [1.0, 2.0, -0.5, 3.0], [0.25, -0.25, 1.0, 0.0, 2.0, 1.0]])
def test_sign_flip_p_values_approach_the_exact_permutation_p(d: list[float]) -> None:
    exact = float(_exact_sign_flip_p(d))
    p = sign_flip_p_values(d, 40_000, np.random.default_rng(0))
    assert p.shape == (1,)
    assert abs(float(p[0]) - exact) < 0.01  # Monte Carlo error ~ sqrt(p(1-p)/40000) < 0.0025


def test_sign_flip_p_is_never_zero_and_columns_share_signs() -> None:
    d = np.array([[5.0, 5.0], [5.0, 5.0], [5.0, 5.0], [5.0, 5.0], [5.0, 5.0], [5.0, 5.0]])
    p = sign_flip_p_values(d, 99, np.random.default_rng(2))
    assert (p > 0).all()  # (1 + #extreme) / (1 + B) >= 1/100
    assert p[0] == p[1]  # identical columns, same sign vectors
    zero = sign_flip_p_values([0.0, 0.0, 0.0], 50, np.random.default_rng(0))
    assert float(zero[0]) == 1.0  # every permutation is as extreme as no difference


def test_sign_flip_validation() -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(InvalidArgumentError, match=r"differences must be \(tasks, columns\) with tasks >= 1, "
                                                   r"got shape \(0, 1\)"):
        sign_flip_p_values([], 10, rng)
    with pytest.raises(InvalidArgumentError, match="got shape"):
        sign_flip_p_values(np.zeros((2, 2, 2)), 10, rng)
    with pytest.raises(InvalidArgumentError, match="n_permutations must be >= 1, got 0"):
        sign_flip_p_values([1.0], 0, rng)


def test_bootstrap_point_estimate_skips_undefined_entries() -> None:
    v = [[1.0, np.nan], [0.0, 1.0], [1.0, 1.0], [np.nan, 0.0]]
    ci = bootstrap_task_means(v, n_resamples=500, seed=3)
    assert ci.value.tolist() == pytest.approx([2 / 3, 2 / 3])
    assert ci.tasks.tolist() == [3, 3]
    assert (ci.low <= ci.value).all() and (ci.value <= ci.high).all()
    assert (ci.low >= 0.0).all() and (ci.high <= 1.0).all()


def test_bootstrap_interval_of_a_constant_is_a_point_and_seeded() -> None:
    ci = bootstrap_task_means([0.4] * 10, n_resamples=300, seed=0)
    assert (float(ci.low[0]), float(ci.value[0]), float(ci.high[0])) == pytest.approx((0.4, 0.4, 0.4))
    a = bootstrap_task_means([[0.0], [1.0], [1.0], [0.5]], n_resamples=1000, seed=9)
    b = bootstrap_task_means([[0.0], [1.0], [1.0], [0.5]], n_resamples=1000, seed=9, batch=7)
    assert (a.low == b.low).all() and (a.high == b.high).all()  # batching does not change the draws


def test_bootstrap_of_two_tasks_matches_enumeration() -> None:
    # tasks 0 and 1: each resample is (0,0), (0,1), (1,0) or (1,1) with equal probability, so the
    # resampled mean is 0 w.p. 1/4, 0.5 w.p. 1/2, 1 w.p. 1/4: the 95% range is [0, 1]
    ci = bootstrap_task_means([0.0, 1.0], n_resamples=4000, seed=5)
    assert float(ci.value[0]) == 0.5
    assert (float(ci.low[0]), float(ci.high[0])) == (0.0, 1.0)
    # at 40%, the central range is just the middle atom
    narrow = bootstrap_task_means([0.0, 1.0], n_resamples=4000, seed=5, confidence=0.4)
    assert (float(narrow.low[0]), float(narrow.high[0])) == (0.5, 0.5)


def test_bootstrap_edge_cases() -> None:
    empty = bootstrap_task_means(np.zeros((0, 2)), n_resamples=10)
    assert np.isnan(empty.value).all() and np.isnan(empty.low).all() and empty.tasks.tolist() == [0, 0]
    no_resamples = bootstrap_task_means([1.0, 0.0], n_resamples=0)
    assert float(no_resamples.value[0]) == 0.5 and np.isnan(no_resamples.low[0])
    undefined = bootstrap_task_means([[np.nan, 1.0], [np.nan, 0.0]], n_resamples=50)
    assert np.isnan(undefined.value[0]) and np.isnan(undefined.low[0]) and not np.isnan(undefined.low[1])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"values": np.zeros((2, 2, 2))}, r"values must be 1-D or 2-D, got shape \(2, 2, 2\)"),
        ({"values": [1.0], "confidence": 1.0}, r"confidence must be in \(0, 1\), got 1.0"),
        ({"values": [1.0], "confidence": 0}, r"confidence must be in \(0, 1\), got 0"),
        ({"values": [1.0], "n_resamples": -1}, "n_resamples must be >= 0, got -1"),
    ],
)
def test_bootstrap_validation(kwargs: dict[str, object], message: str) -> None:
    values = kwargs.pop("values")
    with pytest.raises(InvalidArgumentError, match=message):
        bootstrap_task_means(values, **kwargs)  # type: ignore[arg-type]
