"""Verdicts of reliabench's test-command runner against Aider's own way (its test command's exit code).

Run:  .venv/bin/python benchmarks/bench_polyglot_agreement.py [--data DIR] [--per-language 5]

For ``--per-language`` exercises of each language (spread evenly, exceptions of
bench_polyglot_validate.py left out) this runs three workspaces through both harnesses, in the
same bubblewrap sandbox with the same host toolchains:

* the reference solution;
* a BROKEN variant: the reference with one operator or literal mutated (the first mutation,
  in a fixed order, whose tests still build and of which at least one fails on our runner);
* an EXIT(0) variant: the reference plus code that ends the test process with status 0 before
  the tests report (``os.Exit(0)`` in a Go ``init``, ``process.exit(0)`` when the solution
  module loads, ``System.exit(0)`` in the solution class's static initialiser, ``std::exit(0)``
  from a static object, Python's ``os._exit(0)`` at import, Rust's ``std::process::exit(0)`` at
  the start of the first public function).

Aider's way is its ``run_unit_tests`` command on the same files (the test files copied over
the workspace, its adjustments applied): ``go test ./...``, ``cargo test -- --include-ignored``,
``jest ./*`` (npm-test.sh), cmake + make with the tests run as a build step (cpp-test.sh),
``pytest``; for Java, whose ``./gradlew test`` cannot run offline, the JUnit console launcher's
exit code on the same classes. The verdict is exit status 0. Ours: every expected test passed
in the tool's report. The script prints, per language and variant, how often the verdicts
agree, and each disagreement; the figure is in docs/benchmarks.md.

With ``--replay-run N`` the same references and broken variants then go through ``reliabench``'s
own run (``run_suite``: a replay agent whose rollouts alternate reference, broken, reference,
broken, ..., ``-n N``, 2 workers, bubblewrap, fresh test processes), and every recorded rollout is
checked: its per-test outcomes against what the tool's own report says on the same files
(``report_disagreements``; a pytest task: pytest's junit-xml report, by test name), and its
verdict against Aider's exit code. Exit status 1 if any rollout disagrees.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from bench_polyglot_validate import DEFAULT_DATA, EXCEPTIONS

from reliabench.agents.config import load_agents
from reliabench.errors import SuiteError
from reliabench.hidden_tests.command import COMMAND_LIMITS, CommandTestRunner, report_disagreements
from reliabench.hidden_tests.fresh import HiddenTestRun
from reliabench.hidden_tests.layer import TestRequest
from reliabench.hidden_tests.reports import ParsedReport
from reliabench.records import TestOutcome
from reliabench.run.runner import RunSettings, run_suite
from reliabench.sandbox import SandboxBackend, get_backend
from reliabench.sandbox.environment import HOST, Environment, Mount
from reliabench.store import RunStore
from reliabench.tasks.convert import ConvertOptions
from reliabench.tasks.convert.aider_polyglot import (
    LANGUAGES,
    aider_test_command,
    find_exercises,
    write_polyglot_suite,
)
from reliabench.tasks.suite import Task, load_suite, materialize
from reliabench.tasks.test_command import TestCommand

SLOT = 9

# (pattern, replacement) tried in this order on the solution files; the first mutant that
# builds and fails a test is the broken variant
MUTATIONS: list[tuple[str, str]] = [
    (r" == ", " != "), (r" < ", " <= "), (r" > ", " >= "), (r" \+ 1\b", " + 2"), (r" - 1\b", " - 2"),
    (r"\btrue\b", "false"), (r"\bTrue\b", "False"), (r" && ", " || "), (r" and ", " or "),
    (r"\b0\b", "1"), (r" \+ ", " - "),
]

EXIT_GO = 'package {package}\n\nimport "os"\n\nfunc init() {{ os.Exit(0) }}\n'
EXIT_APPENDED = {  # appended to the solution file
    "javascript": "\nprocess.exit(0);\n",
    "python": "\nimport os\nos._exit(0)\n",
    "cpp": "\n#include <cstdlib>\nnamespace { struct ZzExit { ZzExit() { std::exit(0); } } zz_exit; }\n",
}


def _opener(backend: SandboxBackend, ws: Path) -> Callable[[list[Mount]], Environment]:
    return lambda mounts: backend.start(backend.prepare(HOST), workspace=ws, slot=SLOT, mounts=mounts)


def ours(runner: CommandTestRunner, backend: SandboxBackend, task: Task, ws: Path,
         expected: tuple[TestOutcome, ...], starter: Path) -> tuple[bool, HiddenTestRun]:
    request = TestRequest(task, ws, expected, COMMAND_LIMITS, SLOT, _opener(backend, ws), starter=starter,
                          allowed_skips=task.allowed_skips)
    run = runner.run(request)
    passed = (run.status == "completed" and any(o.outcome == "passed" for o in run.outcomes)
              and all(o.outcome in ("passed", "skipped") for o in run.outcomes))  # a declared skip: neither
    return passed, run


def aiders(runner: CommandTestRunner, backend: SandboxBackend, task: Task, ws: Path) -> bool:
    """Aider's verdict: its command's exit status, on the workspace with the tests copied over."""
    assert task.test_command is not None
    aider_task = replace(task, test_command=aider_test_command(task.language, task.test_command.tamper))
    run = runner.execute(aider_task, ws, _opener(backend, ws), starter=None, limits=COMMAND_LIMITS, slot=SLOT)
    return run.result.returncode == 0


def _solution_files(task: Task) -> list[Path]:
    assert task.solution_dir is not None
    return sorted(p for p in task.solution_dir.rglob("*") if p.is_file())


def _variant(base: Path, task: Task, name: str, edit: Callable[[Path], bool]) -> Path | None:
    assert task.solution_dir is not None
    ws = base / f"{task.id}-{name}-{time.monotonic_ns()}"
    materialize(ws, [task.workspace_dir, task.solution_dir])
    return ws if edit(ws) else None


def mutants(base: Path, task: Task) -> list[tuple[str, Path]]:
    """Candidate broken variants, in order (each: one mutation of one solution file)."""
    assert task.solution_dir is not None
    out = []
    for pattern, repl in MUTATIONS:
        for src in _solution_files(task):
            rel = src.relative_to(task.solution_dir)
            text = src.read_text()
            new, n = re.subn(pattern, repl, text, count=1)
            if n:
                def edit(ws: Path, rel: Path = rel, new: str = new) -> bool:
                    (ws / rel).write_text(new)
                    return True

                ws = _variant(base, task, "mut", edit)
                if ws is not None:
                    out.append((f"{rel}: {pattern.strip()} -> {repl.strip()}", ws))
                break
    return out


def exit0(base: Path, task: Task) -> Path | None:
    """The reference plus code that ends the test process with status 0 before the tests report."""
    assert task.solution_dir is not None
    # the files the agent edits: in the starter and in the reference
    targets = [f.relative_to(task.solution_dir) for f in _solution_files(task)
               if (task.workspace_dir / f.relative_to(task.solution_dir)).is_file()]

    def edit(ws: Path) -> bool:
        if task.language == "go":  # an init of the package: runs before any test
            package = re.search(r"^package (\w+)", (ws / targets[0]).read_text(), re.M)
            (ws / "zz_exit.go").write_text(EXIT_GO.format(package=package.group(1) if package else "main"))
            return True
        if task.language == "java":  # a static initialiser of the solution's class: runs when a test loads it
            main = ws / next(t for t in targets if t.suffix == ".java")
            text = re.sub(r"(class \w+[^{]*\{)", r"\1 static { System.exit(0); }", main.read_text(), count=1)
            main.write_text(text)
            return True
        if task.language == "rust":  # the first public function exits: the first test that calls it
            lib = ws / "src" / "lib.rs"
            text, n = re.subn(r"(pub fn [^{;]*\{)", r"\1 std::process::exit(0);", lib.read_text(), count=1)
            lib.write_text(text)
            return n == 1
        suffixes = {"javascript": (".js",), "python": (".py",), "cpp": (".cpp", ".h")}[task.language]
        target = next((t for t in targets if t.suffix in suffixes), None)
        if target is None:
            return False
        (ws / target).write_text((ws / target).read_text() + EXIT_APPENDED[task.language])
        return True

    return _variant(base, task, "exit0", edit)


@dataclass(frozen=True)
class Variant:
    """One workspace of the comparison, as the replay run needs it again."""

    task: Task
    """The task as the agreement compared it (a pytest task: run through pytest's junit-xml report)."""
    files: dict[str, str]
    """The solution files of the variant (relative path -> text): what the replay agent writes."""
    aider_passes: bool
    """Aider's verdict on these files."""
    report: ParsedReport
    """The tool's own report on these files."""


def replay_run(base: Path, suite: Path, variants: dict[str, list[Variant]], n: int) -> list[str]:
    """Run the variants through ``run_suite`` (rollout i: variant i % 2) and check every record.

    Returns:
        One line per rollout that disagrees with the tool's report or with Aider's verdict.
    """
    lines = []
    for task_id, pair in variants.items():
        for i in range(n):
            lines.append(json.dumps({"task_id": task_id, "rollout": i, "files": pair[i % len(pair)].files}))
    (base / "gens.jsonl").write_text("\n".join(lines) + "\n")
    (base / "agents.toml").write_text('[[agents]]\nname = "replayed"\nkind = "replay"\npath = "gens.jsonl"\n')
    os.chmod(base / "gens.jsonl", 0o644)
    out = base / "run"
    started = time.perf_counter()
    run_suite(load_suite(suite), load_agents(base / "agents.toml"), out,
              RunSettings(n=n, workers=2, sandbox="bubblewrap", test_workers="fresh"),
              tasks=sorted(variants))
    took = time.perf_counter() - started
    with RunStore.open_existing(out, readonly=True) as store:
        records = sorted(store.rollouts(), key=lambda r: r.key)
    problems: list[str] = []
    agree = Counter[str]()
    for r in records:
        v = variants[r.task_id][r.rollout % len(variants[r.task_id])]
        kind = "reference" if r.rollout % 2 == 0 else "broken"
        tests = r.tests or ()
        if r.status != "completed":
            problems.append(f"{r.key}: {r.status} ({r.meta.get('reason')})")
            continue
        if r.meta.get("test_runner") == "command":
            wrong = report_disagreements(v.report, tests)
        else:  # pytest's own path in the run, its junit-xml report here: the same tests by name
            said = {c.name.rsplit("::", 1)[-1]: c.outcome for c in v.report.cases}
            got = {t.name.rsplit("::", 1)[-1]: t.outcome for t in tests}
            wrong = tuple(f"{name}: the report says {said.get(name)}, the outcome is {o}"
                          for name, o in got.items() if said.get(name) != o)
            wrong += tuple(f"{name}: reported, no outcome" for name in said.keys() - got.keys())
        if wrong:
            problems.append(f"{r.key} {kind}: {len(wrong)} outcome(s) not the report's: {wrong[0]}")
        elif r.passes != v.aider_passes:
            problems.append(f"{r.key} {kind}: verdict {r.passes}, Aider's exit code says {v.aider_passes}")
        else:
            agree[kind] += 1
    by_kind = Counter("reference" if r.rollout % 2 == 0 else "broken" for r in records)
    print(f"\nreplay run: {len(variants)} exercises, -n {n}, {len(records)} rollouts in {took:.0f} s "
          f"(2 workers, bubblewrap, fresh test processes)")
    print(f"rollouts whose outcomes are the tool's report and whose verdict is Aider's: "
          f"reference {agree['reference']}/{by_kind['reference']}, "
          f"broken {agree['broken']}/{by_kind['broken']}")
    print(f"passing rollouts: {sum(r.passes for r in records)} (references: {by_kind['reference']})")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=Path(os.environ.get("POLYGLOT_BENCHMARK", DEFAULT_DATA)))
    ap.add_argument("--per-language", type=int, default=5)
    ap.add_argument("--replay-run", type=int, default=0, metavar="N",
                    help="then run the references and broken variants through run_suite -n N, "
                         "and check every rollout")
    args = ap.parse_args()
    replayable: dict[str, list[Variant]] = {}
    chosen: list[str] = []
    for language in LANGUAGES:
        ids = [e.task_id for e in find_exercises(args.data, [language]) if e.task_id not in EXCEPTIONS]
        step = len(ids) / args.per_language
        chosen += [ids[int(i * step) + 1] for i in range(args.per_language)]
    backend = get_backend("bubblewrap")
    runner = CommandTestRunner()
    agree: Counter[tuple[str, str]] = Counter()
    total: Counter[tuple[str, str]] = Counter()
    lines: list[str] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="rb-agree-") as tmp:
        base = Path(tmp)
        os.chmod(base, 0o711)
        write_polyglot_suite(args.data, base / "suite", ConvertOptions(), only=chosen)
        for task in load_suite(base / "suite").tasks:
            if task.test_command is None:  # a pytest task: run it as Aider does, through pytest's report
                task = replace(task, test_runner="command", test_command=TestCommand(
                    argv=("python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--noconftest",
                          "--junit-xml={report_dir}/pytest.xml"),
                    report="junit-xml", report_file="pytest.xml"))
            starter = base / f"{task.id}-starter"
            materialize(starter, [task.workspace_dir])
            try:
                expected = runner.collect(task, _opener(backend, starter), starter=starter,
                                          limits=COMMAND_LIMITS, slot=SLOT)
            except SuiteError as exc:
                lines.append(f"{task.id}: not collected ({exc.problems[0][:120]})")
                continue
            variants: list[tuple[str, str, Path]] = []
            assert task.solution_dir is not None
            variants.append(("reference", "", _variant(base, task, "ref", lambda ws: True) or starter))
            for label, ws in mutants(base, task):
                ok, run = ours(runner, backend, task, ws, expected, starter)
                n = len(run.outcomes)
                missing_all = f"{n} of {n} expected test(s) not in the report"
                built = n > 0 and missing_all not in (run.reason or "")
                if not ok and run.status == "completed" and built:
                    variants.append(("broken", label, ws))
                    break
            else:
                lines.append(f"{task.id}: no mutation both builds and fails a test")
            ws0 = exit0(base, task)
            if ws0 is not None:
                variants.append(("exit(0)", "", ws0))
            pair: list[Variant] = []
            for kind, label, ws in variants:
                mine, run = ours(runner, backend, task, ws, expected, starter)
                theirs = aiders(runner, backend, task, ws)
                if args.replay_run and kind in ("reference", "broken"):
                    report = runner.execute(task, ws, _opener(backend, ws), starter=starter,
                                            limits=COMMAND_LIMITS, slot=SLOT).report
                    rels = [p.relative_to(task.solution_dir) for p in _solution_files(task)]
                    files = {rel.as_posix(): (ws / rel).read_text() for rel in rels}
                    pair.append(Variant(task, files, theirs, report))
                total[(task.language, kind)] += 1
                agree[(task.language, kind)] += mine == theirs
                failing = sum(o.outcome not in ("passed", "skipped") for o in run.outcomes)
                note = (f"{task.id:34} {kind:9} ours {'pass' if mine else 'fail'} "
                        f"({failing}/{len(run.outcomes)} failing)  "
                        f"aider {'pass' if theirs else 'fail'}  {label}")
                print(("  " if mine == theirs else "! ") + note, flush=True)
                if mine != theirs:
                    lines.append(note)
            if len(pair) == 2:
                replayable[task.id] = pair
        print(f"\n{len(chosen)} exercises, {time.perf_counter() - started:.0f} s\n")
        print("| language | reference agree | broken agree | exit(0) agree |")
        print("|----------|----------------:|-------------:|--------------:|")
        for language in LANGUAGES:
            cells = [f"{agree[(language, k)]}/{total[(language, k)]}"
                     for k in ("reference", "broken", "exit(0)")]
            print(f"| {language} | " + " | ".join(cells) + " |")
        all_cells = []
        for k in ("reference", "broken", "exit(0)"):
            all_cells.append(f"{sum(agree[(lang, k)] for lang in LANGUAGES)}/"
                             f"{sum(total[(lang, k)] for lang in LANGUAGES)}")
        print("| all | " + " | ".join(all_cells) + " |")
        if lines:
            print("\ndisagreements and notes:")
            for line in lines:
                print("  " + line)
        if args.replay_run:
            problems = replay_run(base, base / "suite", replayable, args.replay_run)
            for line in problems:
                print("! " + line)
            return 1 if problems else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
