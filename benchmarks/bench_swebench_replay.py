"""Replay SWE-bench predictions n times through `reliabench run`, score macro vs strict, check with swebench.

    .venv/bin/python benchmarks/bench_swebench_replay.py [--data DIR] [--instance ID ...] [-n 3]
        [--workers 2] [--out DIR]

Issue 24's "Done when" run, end to end through the command line:

1. ``reliabench suites import swebench DIR/instances.jsonl --repos DIR/repos`` (all rows);
2. a SWE-bench predictions file (``instance_id``, ``model_name_or_path``, ``model_patch``) with
   three models and n lines per instance each: ``gold`` (the dataset's patch), ``empty`` (no
   change) and ``partial``. A *partial* patch fixes only part of FAIL_TO_PASS: where an
   instance has more than one FAIL_TO_PASS test, it is the first subset of the gold patch's
   change blocks (runs of changed lines, split at added blank lines) that the grader calls
   ``RESOLVED_PARTIAL`` -- single blocks first, then the gold patch less one block. Where
   FAIL_TO_PASS has one test no patch can fix part of it: ``partial`` then submits the largest
   such subset that does not resolve the task (the empty patch when the gold patch is a single
   block). The search grades candidates with the run's own grader;
3. ``reliabench run SUITE --agents agents.toml -n N --task ...`` (three replay agents, one per
   model) and ``reliabench score RUN`` (table and JSON);
4. checks: every gold rollout and no other is resolved; every rollout has one outcome per listed
   test and FAIL_TO_PASS / PASS_TO_PASS totals equal to the dataset's lists; a partial patch
   found for a multi-test FAIL_TO_PASS grades ``RESOLVED_PARTIAL`` in every rollout; ``score``'s
   repository section has macro and strict with intervals for each model; and the test log of
   every rollout, graded by the ``swebench`` package (4.1.0, the ``test`` extra:
   ``get_logs_eval`` / ``get_eval_report``), gives the same resolution and counts as the
   record. Exit 1 when a check fails.

The default instances: the three of three repositories the issue names, and two more of two
more repositories whose FAIL_TO_PASS has several tests (pydicom-1139: 3, astroid-1196: 2).
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from reliabench.hidden_tests.repository import RepositoryTests
from reliabench.repository.logs import swebench_log_text
from reliabench.repository.patches import PatchApplyError, apply_patch
from reliabench.repository.validation import grade_changed_checkout
from reliabench.run.environments import task_environments
from reliabench.run.test_paths import repository_tests
from reliabench.runs import RunDirectory
from reliabench.sandbox.base import Limits
from reliabench.tasks.suite import Task, load_suite

DEFAULT = ("marshmallow-code__marshmallow-1359", "pytest-dev__pytest-11143", "sqlfluff__sqlfluff-1625",
           "pydicom__pydicom-1139", "pylint-dev__astroid-1196")
BIN = Path(sys.executable).parent
LIMITS = Limits(wall_s=600, cpu_s=600, memory_bytes=4 * 1024**3, max_procs=256, output_bytes=16 * 1024**2)
MAX_CANDIDATES = 12


# ---- the gold patch in change blocks ---------------------------------------------------------------


@dataclass(frozen=True)
class _Hunk:
    old_start: int
    new_start: int
    tail: str  # what follows the second @@ on the header line
    lines: tuple[str, ...]


@dataclass(frozen=True)
class _File:
    header: tuple[str, ...]
    hunks: tuple[_Hunk, ...]


_HEADER = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@(.*)$")


def _parse(patch: str) -> list[_File]:
    files: list[_File] = []
    lines = patch.splitlines()
    i = 0
    while i < len(lines):
        if not lines[i].startswith("diff --git"):
            i += 1
            continue
        header = [lines[i]]
        i += 1
        while i < len(lines) and not lines[i].startswith(("@@", "diff --git")):
            header.append(lines[i])
            i += 1
        hunks = []
        while i < len(lines) and lines[i].startswith("@@"):
            m = _HEADER.match(lines[i])
            if m is None:
                raise ValueError(f"not a hunk header: {lines[i]!r}")
            i += 1
            body = []
            while i < len(lines) and not lines[i].startswith(("@@", "diff --git")):
                body.append(lines[i])
                i += 1
            hunks.append(_Hunk(int(m.group(1)), int(m.group(2)), m.group(3), tuple(body)))
        files.append(_File(tuple(header), tuple(hunks)))
    return files


def _labels(lines: tuple[str, ...]) -> list[int | None]:
    """Each line's change block within its hunk (None: context); a blank line added ends a block."""
    out: list[int | None] = []
    current: int | None = None
    count = 0
    for line in lines:
        if line[:1] in ("+", "-"):
            if current is None:
                current, count = count, count + 1
            out.append(current)
            if line == "+":
                current = None
        else:
            out.append(None)
            current = None
    return out


def _blocks(files: list[_File]) -> list[tuple[int, int, int]]:
    """Every change block as ``(file, hunk, block)``."""
    return [(f, h, b) for f, file in enumerate(files) for h, hunk in enumerate(file.hunks)
            for b in sorted({x for x in _labels(hunk.lines) if x is not None})]


def _subset(files: list[_File], keep: set[tuple[int, int, int]]) -> str:
    """The patch with only the blocks in ``keep`` (a dropped removal stays as context)."""
    text: list[str] = []
    for f, file in enumerate(files):
        hunks_text: list[str] = []
        for h, hunk in enumerate(file.hunks):
            body: list[str] = []
            kept_any = False
            for line, label in zip(hunk.lines, _labels(hunk.lines), strict=True):
                if label is None:
                    body.append(line)
                elif (f, h, label) in keep:
                    body.append(line)
                    kept_any = True
                elif line.startswith("-"):
                    body.append(" " + line[1:])
            if not kept_any:
                continue
            old = sum(1 for x in body if not x.startswith("+"))
            new = sum(1 for x in body if not x.startswith("-"))
            hunks_text.append(f"@@ -{hunk.old_start},{old} +{hunk.new_start},{new} @@{hunk.tail}")
            hunks_text += body
        if hunks_text:
            text += [*file.header, *hunks_text]
    return "\n".join(text) + "\n" if text else ""


def _candidates(gold: str) -> list[str]:
    """Proper subsets of the gold patch's blocks: each block alone, then the gold patch less one block."""
    files = _parse(gold)
    blocks = _blocks(files)
    if len(blocks) < 2:
        return []
    singles = [{b} for b in blocks]
    less_one = [set(blocks) - {b} for b in blocks]
    out = []
    for keep in itertools.chain(singles, less_one):
        patch = _subset(files, keep)
        if patch and patch not in out:
            out.append(patch)
    return out


def _partial(tests: RepositoryTests, task: Task, gold: str, multi: bool) -> tuple[str, str]:
    """``(patch, how)``: the partial model's patch for ``task`` and what it is (module docstring)."""
    best: tuple[int, str] | None = None
    for i, patch in enumerate(_candidates(gold)[:MAX_CANDIDATES]):
        try:
            run = grade_changed_checkout(tests, task, lambda ws, p=patch: apply_patch(ws, p), LIMITS, 0)
        except PatchApplyError:
            continue
        sw = run.swebench
        print(f"    candidate {i}: {sw['resolution']} F2P {sw['fail_to_pass']} P2P {sw['pass_to_pass']}",
              flush=True)
        if multi and sw["resolution"] == "RESOLVED_PARTIAL":
            return patch, f"RESOLVED_PARTIAL subset of the gold patch (F2P {sw['fail_to_pass']})"
        if not sw["resolved"] and (best is None or len(patch) > best[0]):
            best = (len(patch), patch)
    if best is not None:
        return best[1], "the largest tried subset of the gold patch that does not resolve"
    return "", "the empty patch (the gold patch is one change block)"


# ---- the run ---------------------------------------------------------------------------------------


def _cli(*args: str) -> str:
    t0 = time.monotonic()
    done = subprocess.run([str(BIN / "reliabench"), *args], capture_output=True, text=True, check=False)
    took = time.monotonic() - t0
    print(f"$ reliabench {' '.join(args)}  ({took:.1f} s, exit {done.returncode})", flush=True)
    if done.returncode != 0:
        print(done.stdout[-3000:], done.stderr[-3000:], sep="\n")
        raise SystemExit(1)
    return done.stdout


def _tests(value: object) -> list[str]:
    return json.loads(value) if isinstance(value, str) else list(value)  # type: ignore[call-overload]


def _swebench_report(row: dict[str, Any], log_text: str, tmp: Path) -> dict[str, Any]:
    from swebench.harness import grading

    log = tmp / f"{row['instance_id']}.log"
    log.write_text(swebench_log_text(log_text), encoding="utf-8")
    spec = SimpleNamespace(instance_id=row["instance_id"], repo=row["repo"], version=row["version"],
                           FAIL_TO_PASS=_tests(row["FAIL_TO_PASS"]), PASS_TO_PASS=_tests(row["PASS_TO_PASS"]))
    pred = {"instance_id": row["instance_id"], "model_name_or_path": "x", "model_patch": "p"}
    report: dict[str, Any] = grading.get_eval_report(spec, pred, str(log), include_tests_status=True)[
        row["instance_id"]]
    report["resolution"] = grading.get_resolution_status(report["tests_status"])
    return report


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path("/work/shared/data/swe-bench-lite-dev"))
    ap.add_argument("--instance", dest="instances", action="append", default=None)
    ap.add_argument("-n", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None, help="keep the suite, predictions and run here")
    args = ap.parse_args()
    instances = tuple(args.instances or DEFAULT)
    started = time.monotonic()
    base = args.out or Path(tempfile.mkdtemp(prefix="rb-bench-replay-"))
    base.mkdir(parents=True, exist_ok=True)
    suite_dir = base / "suite"
    if suite_dir.exists():
        shutil.rmtree(suite_dir)
    _cli("suites", "import", "swebench", str(args.data / "instances.jsonl"),
         "--repos", str(args.data / "repos"), "-o", str(suite_dir))
    suite = load_suite(suite_dir)
    lines = (args.data / "instances.jsonl").read_text(encoding="utf-8").splitlines()
    rows = {json.loads(line)["instance_id"]: json.loads(line) for line in lines if line.strip()}
    print(f"converted {len(suite.tasks)} instances")
    tasks = [suite.task(i) for i in instances]

    # the partial model, per instance
    tests = repository_tests(task_environments("auto", tasks))
    partial: dict[str, tuple[str, str]] = {}
    t0 = time.monotonic()
    for task in tasks:
        cfg = task.repository
        assert cfg is not None
        tests.prepare(task, slot=0)
        multi = len(cfg.fail_to_pass) > 1
        print(f"  {task.id}: FAIL_TO_PASS {len(cfg.fail_to_pass)}, searching a partial patch", flush=True)
        partial[task.id] = _partial(tests, task, rows[task.id]["patch"], multi)
        print(f"  {task.id}: partial = {partial[task.id][1]}", flush=True)
    tests.close()
    search_s = time.monotonic() - t0

    preds = base / "preds.jsonl"
    with preds.open("w", encoding="utf-8") as fh:
        for task in tasks:
            row = rows[task.id]
            for model, patch in (("gold", row["patch"]), ("empty", ""), ("partial", partial[task.id][0])):
                for _ in range(args.n):
                    fh.write(json.dumps({"instance_id": row["instance_id"], "model_name_or_path": model,
                                         "model_patch": patch}) + "\n")
    (base / "agents.toml").write_text("".join(
        f'[[agents]]\nname = "{m}"\nkind = "replay"\npath = "preds.jsonl"\n\n'
        for m in ("gold", "empty", "partial")), encoding="utf-8")
    run_dir = base / "run"
    if run_dir.exists():
        shutil.rmtree(run_dir)
    t0 = time.monotonic()
    task_args = [a for t in tasks for a in ("--task", t.id)]
    _cli("run", str(suite_dir), "--agents", str(base / "agents.toml"), "-n", str(args.n),
         "--out", str(run_dir), "--workers", str(args.workers), *task_args)
    run_s = time.monotonic() - t0
    table = _cli("score", str(run_dir), "-k", "1,3")
    print(table)
    doc = json.loads(_cli("score", str(run_dir), "-k", "1,3", "--format", "json"))

    problems: list[str] = []
    with RunDirectory.open(run_dir) as run, tempfile.TemporaryDirectory() as tmp:
        records = run.records()
        agree = 0
        for r in records:
            sw = r.meta.get("swebench")
            cfg = suite.task(r.task_id).repository
            assert cfg is not None
            where = f"{r.task_id}/{r.agent}/{r.rollout}"
            if r.status == "infra_error" or not isinstance(sw, dict):
                problems.append(f"{where}: not graded ({r.status}: {r.meta.get('reason')})")
                continue
            if sw["resolved"] != (r.agent == "gold"):
                problems.append(f"{where}: resolved = {sw['resolved']}")
            listed = len(dict.fromkeys((*cfg.fail_to_pass, *cfg.pass_to_pass)))
            if len(r.tests or ()) != listed or sw["fail_to_pass"][1] != len(cfg.fail_to_pass) or \
                    sw["pass_to_pass"][1] != len(cfg.pass_to_pass):
                problems.append(f"{where}: {len(r.tests or ())} outcomes, F2P {sw['fail_to_pass']}, "
                                f"P2P {sw['pass_to_pass']} vs the dataset's {len(cfg.fail_to_pass)} + "
                                f"{len(cfg.pass_to_pass)}")
            if r.agent == "partial" and partial[r.task_id][1].startswith("RESOLVED_PARTIAL") and \
                    sw["resolution"] != "RESOLVED_PARTIAL":
                problems.append(f"{where}: partial patch graded {sw['resolution']}")
            if r.passes != sw["resolved"]:
                problems.append(f"{where}: passes = {r.passes} but resolved = {sw['resolved']}")
            log = run.artifacts(*r.key).test_log() or ""
            if "[... log cut ...]" in log:
                problems.append(f"{where}: the stored test log was cut")
            theirs = _swebench_report(rows[r.task_id], log, Path(tmp))
            mine = (sw["resolution"], sw["fail_to_pass"][0], sw["pass_to_pass"][0])
            ts = theirs["tests_status"]
            other = (theirs["resolution"], len(ts["FAIL_TO_PASS"]["success"]),
                     len(ts["PASS_TO_PASS"]["success"]))
            if mine != other or theirs["resolved"] != sw["resolved"]:
                problems.append(f"{where}: ours {mine}, swebench {other}")
            else:
                agree += 1
    repo = doc.get("repository") or {}
    for a in repo.get("agents", []):
        for name in ("macro_test_pass_rate", "strict_resolution_rate"):
            e = a["metrics"][name]
            if e["value"] is None or e["ci_low"] is None or e["ci_high"] is None:
                problems.append(f"score: {a['agent']} {name} has no value or interval: {e}")
    if sorted(a["agent"] for a in repo.get("agents", [])) != ["empty", "gold", "partial"]:
        problems.append(f"score: the repository section lists {[a['agent'] for a in repo.get('agents', [])]}")

    print("\nper instance (resolutions over the n rollouts: FULL / PARTIAL / NO):")
    for task in tasks:
        cfg = task.repository
        assert cfg is not None
        cells = []
        for model in ("gold", "empty", "partial"):
            mine = [r for r in records if r.task_id == task.id and r.agent == model]
            res = [str(r.meta.get("swebench", {}).get("resolution", r.status)) for r in mine]
            f2p = {tuple(r.meta.get("swebench", {}).get("fail_to_pass", ())) for r in mine}
            cells.append(f"{model} {res.count('RESOLVED_FULL')}/{res.count('RESOLVED_PARTIAL')}/"
                         f"{res.count('RESOLVED_NO')} F2P {sorted(f2p)}")
        lists = f"F2P {len(cfg.fail_to_pass)} P2P {len(cfg.pass_to_pass):3d}"
        print(f"  {task.id:38s} {lists}; " + "; ".join(cells))
        print(f"  {'':38s} partial: {partial[task.id][1]}")
    print(f"\nswebench {_version()} agrees on {agree} of {len(records)} rollout logs")
    print(f"partial search {search_s:.0f} s; run {run_s:.0f} s; total {time.monotonic() - started:.0f} s; "
          f"kept in {base}")
    if problems:
        print(f"\n{len(problems)} problem(s):")
        for p in problems:
            print("  " + p)
        return 1
    print("all checks pass")
    return 0


def _version() -> str:
    from importlib.metadata import version

    return version("swebench")


if __name__ == "__main__":
    raise SystemExit(main())
