"""The adaptive design over many simulated runs: coverage, bias, agreement with the fixed design, savings.

Run: ``nice -n 5 .venv/bin/python benchmarks/bench_adaptive.py [--runs 2000] [--seed 0]
[--draws 32] [--interval-rule full-schedule-spread] [--cases 0,3]``. Prints one Markdown row
per (scenario, target); the numbers are recorded in docs/statistics.md and docs/benchmarks.md.
Each simulated run draws T = 30 tasks' rates (Beta marginals, Gaussian copula between agents),
then max_n Bernoulli rollouts per (task, agent); the adaptive design sees prefixes, the fixed
design (n = max_n, plain t-interval) all of them. The reported estimate and interval at the stop are the
Rao-Blackwellised ones (``reliabench.studies.adaptive_estimate``, ``--draws`` orderings, the
number a real run uses by default); the decision interval (repeated intervals in settle mode),
the plain estimate at the stop and the first-look estimate are kept as columns.
"""

from __future__ import annotations

import argparse
import time

from reliabench.sim.design import Scenario, simulate_design
from reliabench.studies.adaptive import AdaptiveDesign
from reliabench.studies.adaptive_estimate import DEFAULT_DRAWS, INTERVAL_RULES
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


def _z(bias: float, se: float) -> str:
    return f"{bias / se:+.1f}" if se > 0 else "n/a"


def main() -> None:
    """Run every case (or ``--cases``) and print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--draws", type=int, default=DEFAULT_DRAWS)
    parser.add_argument("--interval-rule", choices=INTERVAL_RULES, default=INTERVAL_RULES[0],
                        help="variance rule of the reported interval (default: a real run's)")
    parser.add_argument("--cases", default="", help="comma-separated case indices (default: all)")
    args = parser.parse_args()
    chosen = [int(x) for x in args.cases.split(",")] if args.cases else list(range(len(CASES)))
    print(f"runs per case: {args.runs}, seed {args.seed}, {args.draws} orderings per run, "
          f"interval rule {args.interval_rule}, "
          "nominal coverage 0.95 (three agents: 0.983 per pair)")
    print("| case | target | truth | coverage (se) | bias (se) | bias / se | decision-interval coverage "
          "| fixed-n coverage | plain bias / se | first-look bias / se | consistent orderings "
          "| agreement with fixed n | rollouts used | stops | seconds |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
    for i in chosen:
        label, scenario, design = CASES[i]
        t0 = time.perf_counter()
        res = simulate_design(design, scenario, runs=args.runs, seed=args.seed, draws=args.draws,
                              interval_rule=args.interval_rule)
        secs = time.perf_counter() - t0
        stops = ", ".join(f"{k} {v}" for k, v in sorted(res.stop_reasons.items()))
        for j, target in enumerate(res.targets):
            print(f"| {label} | {target} | {res.truth[j]:.3f} "
                  f"| {res.rb_coverage[j]:.3f} ({res.rb_coverage_se[j]:.3f}) "
                  f"| {res.rb_bias[j]:+.4f} ({res.rb_bias_se[j]:.4f}) "
                  f"| {_z(res.rb_bias[j], res.rb_bias_se[j])} "
                  f"| {res.coverage[j]:.3f} | {res.fixed_coverage[j]:.3f} "
                  f"| {_z(res.bias[j], res.bias_se[j])} | {_z(res.first_bias[j], res.first_bias_se[j])} "
                  f"| {res.rb_acceptance:.0%} | {res.agreement:.3f} | {res.rollout_fraction:.0%} | {stops} "
                  f"| {secs:.0f} |", flush=True)
        if res.decisions:
            pairs = ", ".join(f"{k} {v}" for k, v in sorted(res.decisions.items()))
            print(f"|  | decisions (adaptive/fixed, first pair): {pairs} ||||||||||||||", flush=True)


if __name__ == "__main__":
    main()
