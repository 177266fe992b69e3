"""Test-command tasks through ``reliabench run``, ``validate`` and ``retest``: the polyglot extract, Harbor tasks.

The polyglot half is the issue's replay run in small: the vendored extract of the Aider polyglot
benchmark (tests/fixtures/polyglot, two exercises per language) converted, a replay agent giving
per exercise the reference (rollout 0) and a deliberately broken variant (rollout 1: the first
operator mutation of the reference), ``run -n 2`` in bubblewrap with the host toolchains of
``make polyglot``. Every rollout's per-test outcomes must be what the tool's own report says on
those files, and its verdict what Aider's way of running the same tests (its command's exit
code) says. The Harbor half runs the converted fixtures (tests/fixtures/harbor) under podman and
docker with a replay agent that applies the oracle's effect and one that does nothing, and
validates them (the oracle, ``solve.sh``, runs as the reference).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from container_helpers import RUNTIMES, container_backend_or_skip
from sandbox_helpers import backend_or_skip, skip_or_fail_in_ci

from reliabench.agents.config import load_agents
from reliabench.cli import main
from reliabench.errors import PreflightError
from reliabench.hidden_tests.command import COMMAND_LIMITS, CommandTestRunner, report_disagreements
from reliabench.hidden_tests.toolchains import missing_toolchain
from reliabench.records import Rollout
from reliabench.run.retest import retest_run
from reliabench.run.runner import RunSettings, run_suite
from reliabench.sandbox import HOST, SandboxBackend
from reliabench.sandbox.environment import Environment, Mount
from reliabench.store import RunStore
from reliabench.tasks.convert import ConvertOptions, import_suite
from reliabench.tasks.convert.aider_polyglot import aider_test_command, write_polyglot_suite
from reliabench.tasks.suite import Suite, Task, load_suite, materialize
from reliabench.tasks.test_command import TestCommand
from reliabench.tasks.validate import validate_suite

FIXTURES = Path(__file__).parent / "fixtures"
SLOT = 11
MUTATIONS = [(" == ", " != "), (r" \+= ", " -= "), (" < ", " <= "), (" > ", " >= "), (r"\b0\b", "1"),
             (r" \+ ", " - ")]
FIRST_MUTATION = {"javascript-ledger": (r"length - 3", "length - 2")}
"""Where the first of :data:`MUTATIONS` changes nothing a test checks (``description.length >= 25``)."""


def _world_readable(root: Path) -> None:
    for p in [root, *root.rglob("*")]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)


def _broken(task: Task) -> dict[str, str]:
    """The reference's files, the first of :data:`MUTATIONS` that applies to one of them applied."""
    assert task.solution_dir is not None
    files = sorted(p for p in task.solution_dir.rglob("*") if p.is_file())
    for pattern, repl in [FIRST_MUTATION[task.id]] if task.id in FIRST_MUTATION else MUTATIONS:
        for f in files:
            new, n = re.subn(pattern, repl, f.read_text(), count=1)
            if n:
                return {**_reference(task), f.relative_to(task.solution_dir).as_posix(): new}
    raise AssertionError(f"no mutation applies to {task.id}")


def _reference(task: Task) -> dict[str, str]:
    assert task.solution_dir is not None
    return {p.relative_to(task.solution_dir).as_posix(): p.read_text()
            for p in sorted(task.solution_dir.rglob("*")) if p.is_file()}


def _records(out: Path) -> list[Rollout]:
    with RunStore.open_existing(out, readonly=True) as store:
        return sorted(store.rollouts(), key=lambda r: r.key)


# ------------------------------------------------------------------ the polyglot extract


@pytest.fixture(scope="module")
def polyglot(tmp_path_factory: pytest.TempPathFactory) -> Suite:
    base = tmp_path_factory.mktemp("polyrun")
    out = base / "suite"
    out.mkdir()
    write_polyglot_suite(FIXTURES / "polyglot", out, ConvertOptions())
    _world_readable(base)
    suite = load_suite(out)
    runner = CommandTestRunner()
    for task in suite.tasks:
        if task.test_runner == "command":
            why = missing_toolchain(runner.toolchain(task))
            if why is not None:
                skip_or_fail_in_ci(why)
    return suite


@pytest.fixture(scope="module")
def polyglot_run(polyglot: Suite, tmp_path_factory: pytest.TempPathFactory) -> Path:
    backend_or_skip("bubblewrap")
    base = tmp_path_factory.mktemp("polyrun-out")
    os.chmod(base, 0o755)
    lines = []
    for task in polyglot.tasks:
        lines.append({"task_id": task.id, "rollout": 0, "files": _reference(task)})
        lines.append({"task_id": task.id, "rollout": 1, "files": _broken(task)})
    (base / "gens.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    (base / "agents.toml").write_text('[[agents]]\nname = "replayed"\nkind = "replay"\npath = "gens.jsonl"\n')
    out = base / "run"
    run_suite(polyglot, load_agents(base / "agents.toml"), out,
              RunSettings(n=2, workers=2, sandbox="bubblewrap", test_workers="fresh"))
    return out


@pytest.mark.slow
@pytest.mark.sandbox
def test_replay_run_outcomes_are_the_reports_and_verdicts_aiders(polyglot: Suite, polyglot_run: Path,
                                                                   tmp_path: Path) -> None:
    records = _records(polyglot_run)
    assert len(records) == 2 * len(polyglot.tasks) == 24
    bwrap: SandboxBackend = backend_or_skip("bubblewrap")
    runner = CommandTestRunner()
    os.chmod(tmp_path, 0o755)
    languages = set()
    survived: set[str] = set()
    for r in records:
        task = polyglot.task(r.task_id)
        languages.add(task.language)
        assert r.status == "completed" and r.isolation == "bubblewrap", (r.key, r.meta.get("reason"))
        files = _reference(task) if r.rollout == 0 else _broken(task)
        ws = tmp_path / f"{r.task_id}-{r.rollout}"
        materialize(ws, [task.workspace_dir])
        for rel, text in files.items():
            (ws / rel).write_text(text)

        def opener(mounts: Sequence[Mount], ws: Path = ws) -> Environment:
            return bwrap.start(bwrap.prepare(HOST), workspace=ws, slot=SLOT, mounts=mounts)

        # the tool's own report on the same files (a pytest task: pytest's own junit-xml report)
        command = task.test_command
        if command is None:
            assert r.meta["test_path"] in ("fresh", "warm") and r.meta["test_runner"] == "pytest"
            junit = TestCommand(argv=(*aider_test_command("python").argv, "--junit-xml={report_dir}/r.xml"),
                                report="junit-xml", report_file="r.xml")
            report = runner.execute(replace(task, test_runner="command", test_command=junit), ws, opener,
                                    starter=None, limits=COMMAND_LIMITS, slot=SLOT).report
            said = {c.name.rsplit("::", 1)[-1]: c.outcome for c in report.cases}
            assert {t.name.rsplit("::", 1)[-1]: t.outcome for t in r.tests or ()} == said, r.key
        else:
            assert r.meta["test_path"] == r.meta["test_runner"] == "command" and "coarse_outcomes" not in r.meta
            report = runner.execute(task, ws, opener, starter=task.workspace_dir, limits=COMMAND_LIMITS,
                                    slot=SLOT).report
            assert report_disagreements(report, r.tests or ()) == (), r.key
        # Aider's verdict: its own command's exit status on the same files
        aider = replace(task, test_runner="command", test_command=aider_test_command(
            task.language, command.tamper if command else ()))
        theirs = runner.execute(aider, ws, opener, starter=None, limits=COMMAND_LIMITS, slot=SLOT)
        assert r.passes == (theirs.result.returncode == 0), (r.key, r.tests, theirs.result.stdout[-300:])
        if r.rollout == 0:
            assert r.passes, (r.key, r.meta.get("reason"))
        elif r.passes:
            survived.add(r.task_id)
        else:
            assert any(t.outcome == "failed" for t in r.tests or ()), r.key
    assert languages == {"cpp", "go", "java", "javascript", "python", "rust"}
    assert not survived


@pytest.mark.slow
@pytest.mark.sandbox
def test_score_by_language_and_retest_of_the_replay_run(polyglot_run: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["score", str(polyglot_run), "--by", "language", "--format", "json", "--resamples", "20"]) == 0
    doc = json.loads(capsys.readouterr().out)
    groups = {g["group"]: g for g in doc["by"]["groups"]}
    assert doc["by"]["by"] == "language" and sorted(groups) == ["cpp", "go", "java", "javascript", "python",
                                                                "rust"]
    for g in groups.values():
        (agent,) = g["agents"]
        assert g["tasks"] == 2 and agent["rollouts"] == 4
        assert agent["metrics"]["reliability@1"]["value"] == 0.5  # reference passes, broken variant fails
    summary = retest_run(polyglot_run, 1, workers=2, shuffle=False)
    assert summary.executed == 24 and summary.test_errors == 0
    with RunStore.open_existing(polyglot_run, readonly=True) as store:
        rows = {(x["task_id"], x["rollout"]): x for x in store.retest_rows() if x["agent"] == "replayed"}
        originals = {(r.task_id, r.rollout): r for r in store.rollouts()}
    for key, row in rows.items():  # the same code, the same path: the same outcomes (in the tool's order)
        assert sorted((n, o) for n, o, _ in row["tests"]) == sorted((t.name, t.outcome)
                                                                   for t in originals[key].tests or ())


@pytest.mark.sandbox
def test_validate_a_converted_command_suite_lists_exceptions_by_reason(polyglot: Suite, tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    backend_or_skip("bubblewrap")
    checks = {c.task_id: c for c in validate_suite(polyglot, workers=2, sandbox="bubblewrap",
                                                   tasks=["go-bowling", "javascript-ledger", "rust-luhn-from"])}
    assert all(c.ok for c in checks.values()), {k: c.problems for k, c in checks.items()}
    assert checks["go-bowling"].tests > 10 and checks["go-bowling"].reference_passed == checks["go-bowling"].tests
    ledger = checks["javascript-ledger"]  # a refactoring exercise: its starter passes, as its tag declares
    assert ledger.starter_failed == 0 and "as the task declares" in ledger.notes[0]
    # a reference that cannot pass is an exception named with its reason
    broken = tmp_path / "suite"
    shutil.copytree(polyglot.root, broken)
    lib = broken / "tasks" / "rust-luhn-from" / "solution" / "src" / "lib.rs"
    lib.write_text(lib.read_text() + "\nfn not rust at all\n")
    _world_readable(broken)
    assert main(["validate", str(broken), "--sandbox", "bubblewrap", "--task", "rust-luhn-from",
                 "--task", "go-bowling"]) == 1
    err = " ".join(capsys.readouterr().err.split())  # rich wraps long lines
    assert "FAIL rust-luhn-from (cannot collect)" in err and "ok go-bowling" in err
    assert "the test command lists no test on the reference" in err
    assert "exceptions by reason:" in err and "cannot collect (1): rust-luhn-from" in err


def test_a_run_refuses_a_host_command_task_without_its_toolchain(polyglot: Suite, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from reliabench.run.test_paths import check_harness

    monkeypatch.setenv("RELIABENCH_TOOLCHAINS", str(tmp_path / "nowhere"))
    task = polyglot.task("rust-luhn-from")
    with pytest.raises(PreflightError, match=r"task rust-luhn-from: rust test commands need .*cargo-home|"
                                             r"task rust-luhn-from: rust test commands need .*config\.toml"):
        check_harness([task], {}, "fresh")


# ------------------------------------------------------------------ Harbor tasks in containers

HARBOR_GENS = [
    {"agent": "oracle", "task_id": "hello-file", "rollout": 0, "files": {"hello.txt": "Hello, world!\n"}},
    {"agent": "oracle", "task_id": "fix-sum", "rollout": 0,
     "files": {"total.py": "def total(xs):\n    return sum(xs)\n"}},
    {"agent": "oracle", "task_id": "broken-verifier", "rollout": 0, "files": {"status": "ok\n"}},
    *({"agent": "idle", "task_id": t, "rollout": 0, "files": {}} for t in ("hello-file", "fix-sum",
                                                                         "broken-verifier")),
]


@pytest.fixture(scope="module")
def harbor(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("harbor")
    result = import_suite("harbor", FIXTURES / "harbor", base / "suite")
    assert result.tasks == 3
    (base / "gens.jsonl").write_text("".join(json.dumps(g) + "\n" for g in HARBOR_GENS))
    (base / "agents.toml").write_text('[[agents]]\nname = "oracle"\nkind = "replay"\npath = "gens.jsonl"\n\n'
                                      '[[agents]]\nname = "idle"\nkind = "replay"\npath = "gens.jsonl"\n')
    _world_readable(base)
    return base


@pytest.mark.slow
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_harbor_tasks_run_end_to_end(harbor: Path, runtime: str, tmp_path: Path) -> None:
    container_backend_or_skip(runtime)
    os.chmod(tmp_path, 0o755)
    assert main(["run", str(harbor / "suite"), "--agents", str(harbor / "agents.toml"), "-n", "1",
                 "--sandbox", runtime, "--workers", "2", "--out", str(tmp_path / "run")]) == 0
    got = {(r.task_id, r.agent): r for r in _records(tmp_path / "run")}
    assert len(got) == 6
    verdicts = {key: r.passes for key, r in got.items()}
    assert verdicts == {("hello-file", "oracle"): True, ("fix-sum", "oracle"): True,
                        ("broken-verifier", "oracle"): False, ("hello-file", "idle"): False,
                        ("fix-sum", "idle"): False, ("broken-verifier", "idle"): False}
    for r in got.values():
        assert r.isolation == runtime and r.meta["test_path"] == "command", r.meta
        assert r.meta["image_digest"].startswith("sha256:")
        assert r.status in ("completed", "no_change"), r.meta.get("reason")
    # one outcome per CTRF test where the verifier writes a report; a coarse reward otherwise
    fix = got[("fix-sum", "idle")]
    assert [(t.name, t.outcome) for t in fix.tests or ()] == [("test_outputs.py::test_empty", "passed"),
                                                              ("test_outputs.py::test_three", "failed")]
    assert "coarse_outcomes" not in fix.meta and got[("hello-file", "idle")].meta["coarse_outcomes"] is True
    assert "not a finite number" in got[("broken-verifier", "oracle")].meta["reason"]


@pytest.mark.slow
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_validate_runs_the_oracle(harbor: Path, runtime: str) -> None:
    container_backend_or_skip(runtime)
    checks = {c.task_id: c for c in validate_suite(load_suite(harbor / "suite"), workers=1, sandbox=runtime)}
    assert checks["hello-file"].ok and checks["fix-sum"].ok, {k: c.problems for k, c in checks.items()}
    assert checks["fix-sum"].reference_passed == 2 and checks["fix-sum"].starter_failed == 1
    assert checks["broken-verifier"].exception == "reference fails"
    assert "not a finite number" in checks["broken-verifier"].problems[0]
