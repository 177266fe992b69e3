"""Build and validate the SWE-bench instances that come with their repositories (issue 24).

    .venv/bin/python benchmarks/bench_swebench_validate.py [--data DIR] [--only ID ...] [--min-flips 15]

Converts ``DIR/instances.jsonl`` with ``--repos DIR/repos`` (default: the shared data set
``swe-bench-lite-dev``), then, for every task with a repository: builds its environment (cached
by spec hash under ``$RELIABENCH_REPO_ENV_CACHE``), runs the empty patch and the gold patch
through the repository grader, and prints one line per task (flips or the reason it does not,
seconds, built or cached). Asserts that at least ``--min-flips`` tasks flip (exit 1 otherwise).

Environments are a run's (``reliabench.run.test_paths.repository_tests`` over the tasks'
backends for ``--sandbox auto``: bubblewrap with the checkout at /testbed), the validation the
one ``reliabench validate`` runs (``reliabench.repository.validation``), here with one line of
detail per task.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from reliabench.repository.logs import swebench_log_text
from reliabench.repository.validation import validate_repository_task
from reliabench.run.environments import task_environments
from reliabench.run.test_paths import repository_tests
from reliabench.sandbox.base import Limits
from reliabench.tasks.convert import ConvertOptions, import_suite
from reliabench.tasks.suite import load_suite


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path("/work/shared/data/swe-bench-lite-dev"))
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--min-flips", type=int, default=15)
    ap.add_argument("--slot", type=int, default=7)
    ap.add_argument(
        "--test-timeout",
        type=float,
        default=120.0,
        help="wall seconds of one test run (SWE-bench allows 1800; a network-bound test that "
        "sleeps between download retries would hold the benchmark that long)",
    )
    ap.add_argument(
        "--save-logs",
        type=Path,
        default=None,
        help="write each run's test log (SWE-bench's shape) as DIR/<id>.<empty|gold>.log",
    )
    args = ap.parse_args()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rb-bench-swe-") as tmp:
        out = Path(tmp) / "suite"
        conv = import_suite(
            "swebench", args.data / "instances.jsonl", out, ConvertOptions(repos=args.data / "repos")
        )
        print(
            f"converted {conv.tasks} instances in {time.monotonic() - started:.1f} s "
            f"({len(conv.notes)} without a repository)",
            flush=True,
        )
        suite = load_suite(out)
        tasks = [
            t
            for t in suite.tasks
            if t.repository is not None
            and t.repository.source is not None
            and (not args.only or t.id in args.only)
        ]
        tests = repository_tests(task_environments("auto", tasks))
        flips, lines = 0, []
        for task in tasks:
            v = validate_repository_task(
                tests,
                task,
                slot=args.slot,
                limits=Limits(
                    wall_s=args.test_timeout,
                    cpu_s=args.test_timeout,
                    memory_bytes=4 * 1024**3,
                    max_procs=256,
                    output_bytes=16 * 1024**2,
                ),
            )
            flips += v.flips
            if args.save_logs is not None:
                args.save_logs.mkdir(parents=True, exist_ok=True)
                for label, run in (("empty", v.empty), ("gold", v.gold)):
                    if run is not None:
                        (args.save_logs / f"{task.id}.{label}.log").write_text(
                            swebench_log_text(run.output), encoding="utf-8"
                        )
            what = "flips" if v.flips else f"DOES NOT FLIP: {v.reason}"
            e, g = v.empty, v.gold
            counts = (
                ""
                if e is None or g is None
                else (
                    f" empty {e.swebench['resolution']} F2P {e.swebench['fail_to_pass']}, "
                    f"gold {g.swebench['resolution']} F2P {g.swebench['fail_to_pass']} "
                    f"P2P {g.swebench['pass_to_pass']};"
                )
            )
            line = f"{task.id:40s} {v.seconds:6.1f} s {'built ' if v.built else 'cached'};{counts} {what}"
            lines.append(line)
            print(line, flush=True)
    total = time.monotonic() - started
    print(f"\n{flips} of {len(tasks)} flip ({total:.0f} s in all)")
    if flips < args.min_flips:
        print(f"FAILED: fewer than {args.min_flips} flip", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
