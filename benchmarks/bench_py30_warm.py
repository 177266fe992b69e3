"""Warm pytest rollouts of the bundled py30 suite on one test slot: the test phase, task by task.

For each of the 31 tasks, ``--rollouts`` + 1 rollouts of its reference solution in turn on one
slot (the first, which primes the slot's warm server for the task's plugin set, is not
counted): each a copy of the solution as the workspace and one call of
``reliabench.warm.run_warm_tests``, the warm path's hidden-test call as a run makes it (the
workspace lent to the slot uid, the request, the jailed fork's pytest session on the prepared
configuration, the outcomes judged). Its wall time is the test phase. Every rollout must pass
every test (the script stops otherwise). One slot and nothing else running: the figure without
the other workers and agents that share the cores in a run (the demo's ``test_s``).

Usage::

    .venv/bin/python benchmarks/bench_py30_warm.py [--rollouts 8] [--slot 3]

Prints one line per task (median of its counted rollouts) and the median over tasks with p10
and p90. To compare a commit, run the same command with ``PYTHONPATH`` on an export of its
``src`` (``git archive COMMIT src | tar -x -C DIR``), the two in turn.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import reliabench
from reliabench.sandbox import Limits
from reliabench.warm import WarmTests, WarmWorkers, run_warm_tests

PY30 = Path(reliabench.__file__).resolve().parent / "tasks/bundled/py30/tasks"
LIMITS = Limits(wall_s=20.0, cpu_s=20.0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rollouts", type=int, default=8, help="counted rollouts per task (one more primes)")
    ap.add_argument("--slot", type=int, default=3, help="the test slot (its uid and warm server)")
    opts = ap.parse_args()
    print(f"reliabench from {Path(reliabench.__file__).parent}", file=sys.stderr)
    workers = WarmWorkers()
    warm = WarmTests(workers)
    root = Path(tempfile.mkdtemp(prefix="rb-py30-warm-"))
    os.chmod(root, 0o755)  # the slot uid reaches the workspaces
    medians: list[float] = []
    print("| task | test phase, median ms |")
    print("|---|---:|")
    try:
        for task in sorted(p for p in PY30.iterdir() if (p / "tests").is_dir()):
            times = []
            for i in range(opts.rollouts + 1):
                ws = root / f"ws{i}"
                shutil.copytree(task / "solution", ws)
                t = time.perf_counter()
                run = run_warm_tests(warm, ws, task / "tests", expected=None, limits=LIMITS, slot=opts.slot)
                times.append(time.perf_counter() - t)
                shutil.rmtree(ws, ignore_errors=True)
                if run.status != "completed" or not all(o.outcome == "passed" for o in run.outcomes):
                    print(f"{task.name}: {run.status} {run.reason or ''} on the reference solution",
                          file=sys.stderr)
                    return 1
            medians.append(statistics.median(times[1:]))
            print(f"| {task.name} | {1000 * medians[-1]:.1f} |")
    finally:
        warm.close()
        workers.close()
        shutil.rmtree(root, ignore_errors=True)
    deciles = statistics.quantiles(medians, n=10)
    print(f"\nmedian over {len(medians)} tasks: {1000 * statistics.median(medians):.1f} ms "
          f"(p10 {1000 * deciles[0]:.1f}, p90 {1000 * deciles[-1]:.1f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
