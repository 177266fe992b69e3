"""The adaptive design over many simulated runs: coverage, bias, agreement with the fixed design, savings.

Run: ``.venv/bin/python benchmarks/bench_adaptive.py [--runs 2000] [--seed 0]``. Prints one
Markdown row per (scenario, target); the numbers are recorded in docs/statistics.md and
docs/benchmarks.md. Each simulated run draws T = 30 tasks' rates (Beta marginals, Gaussian
copula between agents), then max_n Bernoulli rollouts per (task, agent); the adaptive design
sees prefixes, the fixed design (n = max_n, plain t-interval) all of them.
"""

from __future__ import annotations

import argparse
import time

from reliabench.studies.adaptive import AdaptiveDesign, Scenario, simulate_design
from reliabench.studies.planning import AgentModel

A = AgentModel("A", 0.6, 0.3)
B = AgentModel("B", 0.3, 0.25)

CASES: list[tuple[str, Scenario, AdaptiveDesign]] = [
    ("half-width 0.13, A 0.6 / B 0.3",
     Scenario("hw", (A, B), tasks=30, correlation=0.6),
     AdaptiveDesign(first=2, max_n=16, target_half_width=0.13)),
    ("half-width 0.13, sequential rule (repeated intervals)",
     Scenario("hw-seq", (A, B), tasks=30, correlation=0.6),
     AdaptiveDesign(first=2, max_n=16, target_half_width=0.13, half_width_rule="sequential")),
    ("half-width 0.10 (floor-limited), A 0.6 / B 0.3",
     Scenario("hw-floor", (A, B), tasks=30, correlation=0.6),
     AdaptiveDesign(first=2, max_n=16, target_half_width=0.10)),
    ("settle, far apart: A 0.6 vs B 0.3",
     Scenario("far", (A, B), tasks=30, correlation=0.6),
     AdaptiveDesign(first=2, max_n=16, settle=(("A", "B"),))),
    ("settle, close: A 0.5 vs B 0.4 (spread 0.3)",
     Scenario("close", (AgentModel("A", 0.5, 0.3), AgentModel("B", 0.4, 0.3)), tasks=30, correlation=0.6),
     AdaptiveDesign(first=2, max_n=16, settle=(("A", "B"),))),
    ("settle, close, Pocock boundary",
     Scenario("close-pocock", (AgentModel("A", 0.5, 0.3), AgentModel("B", 0.4, 0.3)), tasks=30,
              correlation=0.6),
     AdaptiveDesign(first=2, max_n=16, settle=(("A", "B"),), boundary="pocock")),
    ("settle, no difference: A 0.5 vs B 0.5",
     Scenario("null", (AgentModel("A", 0.5, 0.3), AgentModel("B", 0.5, 0.3)), tasks=30, correlation=0.6),
     AdaptiveDesign(first=2, max_n=16, settle=(("A", "B"),))),
    ("settle, high ICC (spread 0.4): A 0.55 vs B 0.45, first 3",
     Scenario("icc", (AgentModel("A", 0.55, 0.4), AgentModel("B", 0.45, 0.4)), tasks=30, correlation=0.8),
     AdaptiveDesign(first=3, max_n=12, settle=(("A", "B"),))),
    ("settle, three agents (all pairs), 0.7 / 0.5 / 0.3",
     Scenario("three", (AgentModel("A", 0.7, 0.25), AgentModel("B", 0.5, 0.3), AgentModel("C", 0.3, 0.25)),
              tasks=30, correlation=0.7),
     AdaptiveDesign(first=3, max_n=12, settle=(("A", "B"), ("A", "C"), ("B", "C")))),
]


def main() -> None:
    """Run every case and print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"runs per case: {args.runs}, seed {args.seed}, nominal coverage 0.95")
    print("| case | target | truth | coverage (se) | fixed-n coverage | bias at stop (se) | bias / se "
          "| first-look bias / se | agreement with fixed n | rollouts used | stops | seconds |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
    for label, scenario, design in CASES:
        t0 = time.perf_counter()
        res = simulate_design(design, scenario, runs=args.runs, seed=args.seed)
        secs = time.perf_counter() - t0
        stops = ", ".join(f"{k} {v}" for k, v in sorted(res.stop_reasons.items()))
        for j, target in enumerate(res.targets):
            z = res.bias[j] / res.bias_se[j] if res.bias_se[j] > 0 else float("nan")
            cov = f"{res.coverage[j]:.3f} ({res.coverage_se[j]:.3f})"
            print(f"| {label} | {target} | {res.truth[j]:.3f} | {cov} "
                  f"| {res.fixed_coverage[j]:.3f} | {res.bias[j]:+.4f} ({res.bias_se[j]:.4f}) | {z:+.1f} "
                  f"| {res.first_bias[j] / res.first_bias_se[j]:+.1f} "
                  f"| {res.agreement:.3f} | {res.rollout_fraction:.0%} | {stops} | {secs:.0f} |", flush=True)
        if res.decisions:
            pairs = ", ".join(f"{k} {v}" for k, v in sorted(res.decisions.items()))
            print(f"|  | decisions (adaptive/fixed, first pair): {pairs} ||||||||||", flush=True)


if __name__ == "__main__":
    main()
