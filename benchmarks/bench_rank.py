"""Speed of ``reliabench.studies.rank.rank_agents``: bootstrap ranks plus permutation tests of all pairs.

Run:  .venv/bin/python benchmarks/bench_rank.py

A leaderboard-sized input: 25 agents x 500 tasks, one rollout each (m = 300 pairs), at 10**4
and 10**5 resamples; and 10 agents x 200 tasks x 5 rollouts with two-level sampling.
"""

from __future__ import annotations

import time

import numpy as np

from reliabench.metrics.analysis import CountTable, count_pairs
from reliabench.records import Rollout
from reliabench.studies.rank import Sampling, rank_agents


def table(agents: int, tasks: int, n: int, seed: int = 0) -> CountTable:
    rng = np.random.default_rng(seed)
    base = rng.beta(0.7, 0.7, size=tasks)
    skill = np.linspace(-0.15, 0.15, agents)
    rates = np.clip(base[:, None] + skill[None, :], 0, 1)
    return count_pairs(Rollout(f"t{t}", f"a{a:02d}", i, verdict=bool(rng.random() < rates[t, a]))
                       for t in range(tasks) for a in range(agents) for i in range(n))


def timed(label: str, records: CountTable, n_resamples: int, sampling: Sampling = "tasks") -> None:
    t0 = time.perf_counter()
    rank_agents(records, 1, n_resamples=n_resamples, sampling=sampling)
    print(f"{label:58s} {time.perf_counter() - t0:6.2f} s")


def main() -> None:
    big = table(25, 500, 1)
    timed("25 agents x 500 tasks, 10**4 resamples (tasks)", records=big, n_resamples=10_000)
    timed("25 agents x 500 tasks, 10**5 resamples (tasks)", records=big, n_resamples=100_000)
    multi = table(10, 200, 5)
    timed("10 agents x 200 tasks x 5 rollouts, 10**4 resamples (tasks)", records=multi, n_resamples=10_000)
    timed("10 agents x 200 tasks x 5 rollouts, 10**4 (two-level)", records=multi, n_resamples=10_000,
          sampling="two-level")


if __name__ == "__main__":
    main()
