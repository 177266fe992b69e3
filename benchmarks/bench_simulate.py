"""Speed and memory of ``reliabench.sim.synthetic`` at 10**3 tasks x 10 agents x 100 rollouts x 50 tests.

Run: ``PYTHONPATH=src python3 benchmarks/bench_simulate.py [--repeat 3]``. Prints one line per
stage with the best wall time of ``--repeat`` runs and the peak of traced allocations
(numpy's arrays are traced by ``tracemalloc``). Numbers are recorded in
``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import gc
import platform
import resource
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np

from reliabench.metrics.analysis import count_pairs, score, score_counts
from reliabench.sim.synthetic import count_table, default_config, generate, to_records
from reliabench.studies.proxy_validity import proxy_study


def measure(fn: Callable[[], Any], repeat: int, *, trace: bool = True) -> tuple[float, float, Any]:
    """Best wall time of ``repeat`` untraced runs, then one traced run for the peak (MiB).

    Tracing slows down code that makes many Python objects ~10x, so timing runs untraced.
    """
    best = float("inf")
    out: Any = None
    for _ in range(repeat):
        out = None
        gc.collect()
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    peak = float("nan")
    if trace:
        del out
        gc.collect()
        tracemalloc.start()
        out = fn()
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    return best, peak, out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--agents", type=int, default=10)
    parser.add_argument("--rollouts", type=int, default=100)
    parser.add_argument("--tests", type=int, default=50)
    args = parser.parse_args()
    cfg = default_config().replace(tasks=args.tasks, agents=args.agents, rollouts=args.rollouts,
                                   tests_min=args.tests, tests_max=args.tests)
    n_roll = cfg.tasks * cfg.agents * cfg.rollouts
    print(f"python {platform.python_version()}, numpy {np.__version__}, {platform.machine()}")
    print(f"{cfg.tasks} tasks x {cfg.agents} agents x {cfg.rollouts} rollouts x {args.tests} tests "
          f"= {n_roll:,} rollouts, {n_roll * args.tests:,} test outcomes (never materialized)")

    t, mem, bench = measure(lambda: generate(cfg, seed=0), args.repeat)
    rate = n_roll / t / 1e6
    print(f"generate (arrays)          {t:8.3f} s   peak {mem:8.1f} MiB   {rate:6.2f} M rollouts/s")
    t_ct, mem, fast_table = measure(lambda: count_table(bench), args.repeat)
    print(f"count_table (from arrays)  {t_ct:8.3f} s   peak {mem:8.1f} MiB")
    t_sc, mem, _ = measure(lambda: score_counts(fast_table, (1, 5, 10), n_resamples=1000), 1)
    print(f"analysis.score_counts (k=1,5,10, 1000 resamples) {t_sc:8.3f} s   peak {mem:8.1f} MiB")
    t, mem, records = measure(lambda: list(to_records(bench)), 1, trace=False)
    t_rec = t
    print(f"to_records (Rollout objs)  {t:8.3f} s   peak {mem:8.1f} MiB")
    t, mem, table = measure(lambda: count_pairs(records), 1, trace=False)
    print(f"analysis.count_pairs       {t:8.3f} s   peak {mem:8.1f} MiB")
    t, mem, _ = measure(lambda: score(records, (1, 5, 10), n_resamples=1000), 1, trace=False)
    print(f"analysis.score (k=1,5,10, 1000 resamples) {t:8.3f} s   peak {mem:8.1f} MiB")
    print(f"scoring path used by `simulate` (count_table + score_counts) vs records + score: "
          f"{t_ct + t_sc:.2f} s vs {t_rec + t:.2f} s (x{(t_rec + t) / (t_ct + t_sc):.0f})")
    t, mem, _ = measure(lambda: proxy_study(table, k=1, n_resamples=1000), 1)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"process peak RSS so far    {rss:8.1f} MiB (1,000,000 Rollout records held in memory)")
    print(f"proxy_study (1000 resamples, {table.n.size} pairs) {t:8.3f} s   peak {mem:8.1f} MiB")


if __name__ == "__main__":
    main()
