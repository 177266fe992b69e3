"""Speed of the bootstrap over tasks behind every CI of ``score``.

Run:  .venv/bin/python benchmarks/bench_bootstrap.py

Per-task figures of 10**3 tasks x 10 agents x 14 metrics (k = 1, 5, 10) with some NaN
(undefined) entries; 10**4 resamples. Compared in the same run with a straightforward loop
that draws task indices and takes a nanmean per resample (timed on 500 resamples, scaled).
"""

from __future__ import annotations

import time

import numpy as np

from reliabench.metrics.stats import bootstrap_task_means


def loop(values: np.ndarray, n_resamples: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = values.shape[0]
    out = np.empty((n_resamples, values.shape[1]))
    for b in range(n_resamples):
        out[b] = np.nanmean(values[rng.integers(0, t, t)], axis=0)
    return np.nanquantile(out, [0.025, 0.975], axis=0)


def main() -> None:
    rng = np.random.default_rng(0)
    values = rng.random((1000, 10 * 14))
    values[rng.random(values.shape) < 0.02] = np.nan
    t0 = time.perf_counter()
    bootstrap_task_means(values, n_resamples=10_000, seed=1)
    ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    loop(values, 500)
    naive = (time.perf_counter() - t0) * 10_000 / 500
    print("10**4 resamples, 10**3 tasks x 10 agents x 14 metrics")
    print(f"bootstrap_task_means (weights x matrix products): {ours:6.2f} s")
    print(f"per-resample loop (timed on 500, scaled)         : {naive:6.2f} s   ratio x{naive / ours:.1f}")


if __name__ == "__main__":
    main()
