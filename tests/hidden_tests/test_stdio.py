"""stdin/stdout tasks: the case format, the converter, and hostile programs scored correctly."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from sandbox_helpers import backend_or_skip

from reliabench.cli import main
from reliabench.errors import InputError, SuiteError
from reliabench.hidden_tests.stdio import compare_output, run_stdio_tests
from reliabench.sandbox import SandboxBackend
from reliabench.tasks.convert import import_suite
from reliabench.tasks.suite import Task, load_suite
from reliabench.tasks.validate import validate_suite

SUM = "import sys\nprint(sum(int(x) for x in sys.stdin.read().split()))\n"


def test_compare_modes() -> None:
    assert compare_output("3\n", "3\n", "exact")
    assert not compare_output("3", "3\n", "exact")
    assert compare_output(" 1  2\n\n3 \n", "1 2 3", "whitespace")
    assert not compare_output("1 2", "1 2 3", "whitespace")
    assert compare_output("1.0000001 x", "1.0 x", "float", 1e-6)
    assert compare_output("1000000.5", "1000000.0", "float", 1e-6)  # relative to |expected|
    assert not compare_output("1.1 x", "1.0 x", "float", 1e-6)
    assert compare_output("nan", "nan", "float")  # equal tokens are equal
    assert not compare_output("nan", "1.0", "float")
    assert not compare_output("inf", "1e400", "float")
    assert not compare_output("1.0 y", "1.0 x", "float")
    with pytest.raises(ValueError, match="compare mode"):
        compare_output("", "", "fuzzy")


# --- the suite format ----------------------------------------------------------------------------


def make_task(root: Path, tid: str = "sum", cases: dict[str, tuple[str, str]] | None = None,
              stdio: str = "", solution: str | None = SUM, starter: str = "# write me\n") -> Path:
    tdir = root / "tasks" / tid
    (tdir / "tests").mkdir(parents=True)
    (tdir / "workspace").mkdir()
    (root / "suite.toml").write_text('name = "s"\nversion = "1"\n')
    (tdir / "task.toml").write_text(f'id = "{tid}"\ntimeout_s = 5\ntest_runner = "stdio"\n[stdio]\n{stdio}')
    (tdir / "prompt.md").write_text("Sum the numbers.")
    (tdir / "workspace" / "solution.py").write_text(starter)
    if solution is not None:
        (tdir / "solution").mkdir()
        (tdir / "solution" / "solution.py").write_text(solution)
    for name, (inp, out) in (cases or {"a": ("1 2\n", "3\n"), "b": ("5 5 5\n", "15\n")}).items():
        (tdir / "tests" / f"{name}.in").write_text(inp)
        (tdir / "tests" / f"{name}.out").write_text(out)
    return tdir


def test_stdio_task_loads(tmp_path: Path) -> None:
    make_task(tmp_path, stdio='compare = "float"\nfloat_tolerance = 1e-3\ncase_timeout_s = 2\n')
    task = load_suite(tmp_path).task("sum")
    assert task.test_runner == "stdio" and task.stdio is not None
    assert task.stdio.compare == "float" and task.stdio.float_tolerance == 1e-3
    assert [c.test_name for c in task.stdio.cases] == ["case:a", "case:b"]


@pytest.mark.parametrize(("stdio", "message"), [
    ('compare = "fuzzy"\n', "stdio.compare: expected one of"),
    ("float_tolerance = -1\n", "stdio.float_tolerance: expected a number >= 0"),
    ("case_timeout_s = 0\n", "stdio.case_timeout_s: expected a positive number"),
    ('program = "../x.py"\n', "stdio.program: expected a workspace-relative path"),
    ("colour = 1\n", "stdio.colour: unknown key"),
    ("max_output_bytes = 0\n", "stdio.max_output_bytes: expected an integer >= 1"),
])
def test_bad_stdio_table(tmp_path: Path, stdio: str, message: str) -> None:
    make_task(tmp_path, stdio=stdio)
    with pytest.raises(SuiteError, match=message):
        load_suite(tmp_path)


def test_unpaired_case_files_and_unknown_runner(tmp_path: Path) -> None:
    tdir = make_task(tmp_path)
    (tdir / "tests" / "c.in").write_text("1\n")
    with pytest.raises(SuiteError, match=r"c\.in: has no c\.out"):
        load_suite(tmp_path)
    (tdir / "tests" / "c.in").unlink()
    toml = (tdir / "task.toml").read_text().replace('"stdio"', '"junit"', 1)
    (tdir / "task.toml").write_text(toml)
    with pytest.raises(SuiteError, match=r"test_runner: expected one of 'pytest', 'plain', 'stdio'.*, got 'junit'"):
        load_suite(tmp_path)


# --- the converter -------------------------------------------------------------------------------


def jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_convert_plain_apps_codecontests_livecodebench(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [
        {"task_id": "sum/1", "statement": "Sum.", "tests": [{"input": "1 2\n", "output": "3\n"}],
         "solution": SUM, "compare": "float", "float_tolerance": 0.01},
        {"problem_id": 7, "question": "Sum them.", "solutions": json.dumps([SUM]),
         "input_output": json.dumps({"inputs": ["1 2\n", "3 4\n"], "outputs": ["3\n", "7\n"]})},
        {"problem_id": 8, "question": "Call.", "input_output": json.dumps({"fn_name": "f", "inputs": [], "outputs": []})},
        {"name": "cc-sum", "description": "Sum.", "public_tests": {"input": ["2 2\n"], "output": ["4\n"]},
         "private_tests": {"input": ["1 1\n"], "output": ["2\n"]}, "generated_tests": {"input": [], "output": []},
         "solutions": {"language": [2, 3], "solution": ["int main(){}", SUM]}},
        {"question_id": "abc1", "question_content": "Sum.",
         "public_test_cases": json.dumps([{"input": "1 1\n", "output": "2\n", "testtype": "stdin"}]),
         "private_test_cases": "eJzLSM3JyVcozy/KSQEAGgQEXQ=="},
    ]
    src = jsonl(tmp_path / "mixed.jsonl", rows)
    assert main(["suites", "import", "stdio", str(src), "-o", str(tmp_path / "s")]) == 0
    assert "skipped apps-8: call-based" in capsys.readouterr().err
    suite = load_suite(tmp_path / "s")
    assert sorted(t.id for t in suite.tasks) == ["apps-7", "cc-sum", "lcb-abc1", "sum_1"]
    cc = suite.task("cc-sum")
    assert cc.stdio is not None and len(cc.stdio.cases) == 2
    assert (cc.solution_dir / "solution.py").read_text() == SUM  # type: ignore[operator]
    assert suite.task("sum_1").stdio.compare == "float"  # type: ignore[union-attr]
    assert suite.task("lcb-abc1").solution_dir is None  # no reference: validate says so


@pytest.mark.parametrize(("row", "message"), [
    ({"task_id": "a", "statement": "s", "tests": []}, ":1: tests: expected a non-empty list"),
    ({"task_id": "a", "statement": "s", "tests": [{"input": 1, "output": "x"}]}, ":1: tests[0]: expected an object"),
    ({"task_id": "a", "statement": "s", "tests": [{"input": "1", "output": "1"}], "compare": "x"},
     ":1: compare: expected one of"),
    ({"problem_id": 1, "question": "q", "input_output": "{bad"}, ":1: input_output: expected JSON"),
    ({"problem_id": 1, "question": "q", "input_output": {"inputs": ["1"], "outputs": []}},
     ":1: input_output: 1 inputs but 0 outputs"),
    ({"what": 1}, ":1: unknown problem shape"),
])
def test_malformed_stdio_problems(tmp_path: Path, row: dict[str, Any], message: str,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    src = jsonl(tmp_path / "bad.jsonl", [row])
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("]", r"\]")):
        import_suite("stdio", src, tmp_path / "o")
    assert main(["suites", "import", "stdio", str(src), "-o", str(tmp_path / "o2")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(src) + message in err[0]


# --- hostile programs, in the sandbox ------------------------------------------------------------



def _run(task: Task, base: Path, program: str, backend: SandboxBackend, name: str = "ws") -> dict[str, str]:
    ws = base / name
    ws.mkdir()
    (ws / "solution.py").write_text(program)
    assert task.stdio is not None
    run = run_stdio_tests(ws, task.stdio, timeout_s=task.timeout_s, backend=backend, slot=3)
    assert run.status == "completed" and not run.forged
    return {o.name: o.outcome for o in run.outcomes}


@pytest.fixture
def stdio_task(base: Path) -> Task:
    make_task(base / "suite", stdio="case_timeout_s = 3\nmax_output_bytes = 4096\n")
    return load_suite(base / "suite").task("sum")


@pytest.mark.sandbox
def test_correct_and_wrong_programs(stdio_task: Task, base: Path) -> None:
    bwrap = backend_or_skip("bubblewrap")
    assert _run(stdio_task, base, SUM, bwrap, "good") == {"case:a": "passed", "case:b": "passed"}
    assert _run(stdio_task, base, "print(3)\n", bwrap, "const") == {"case:a": "passed", "case:b": "failed"}
    assert _run(stdio_task, base, "import sys\nprint(3)\nsys.exit(1)\n", bwrap, "exit1")["case:a"] == "failed"


@pytest.mark.sandbox
def test_program_cannot_read_the_expected_output(stdio_task: Task, base: Path) -> None:
    bwrap = backend_or_skip("bubblewrap")
    assert stdio_task.stdio is not None
    targets = [str(c.expected) for c in stdio_task.stdio.cases]
    cheat = (
        "import glob, os, sys\n"
        f"targets = {targets!r}\n"
        "found = []\n"
        "for t in targets:\n"
        "    try:\n"
        "        found.append(open(t).read())\n"
        "    except OSError:\n"
        "        pass\n"
        "sys.stdout.write(found[-1] if found else 'nothing\\n')\n"
    )
    # the same program with the expected files in reach scores both cases: the cheat is real
    unsandboxed = backend_or_skip("none")
    assert _run(stdio_task, base, cheat, unsandboxed, "control")["case:b"] == "passed"
    assert _run(stdio_task, base, cheat, bwrap, "cheat") == {"case:a": "failed", "case:b": "failed"}


@pytest.mark.sandbox
def test_never_reading_stdin_flooding_and_forking(stdio_task: Task, base: Path) -> None:
    bwrap = backend_or_skip("bubblewrap")
    # never reads stdin, prints nothing useful
    assert set(_run(stdio_task, base, "print('hello')\n", bwrap, "nostdin").values()) == {"failed"}
    # floods stdout: killed at the output limit, failed, quickly
    t0 = time.monotonic()
    flood = "import sys\nwhile True:\n    sys.stdout.write('3\\n' * 4096)\n"
    assert set(_run(stdio_task, base, flood, bwrap, "flood").values()) == {"failed"}
    # prints the right answer, then floods past the cap: still failed (the cap is part of the rule)
    almost = SUM + "print('x' * 10000)\n"
    assert set(_run(stdio_task, base, almost, bwrap, "almost").values()) == {"failed"}
    # sleeps forever: the case time limit ends it
    assert set(_run(stdio_task, base, "import time\ntime.sleep(1000)\n", bwrap, "sleep").values()) == {"failed"}
    # forks a sleeper that keeps the output open, answers in the parent: scored on the answer,
    # and the sleeper does not hold up the run
    fork = SUM + "import os, time\nif os.fork() == 0:\n    time.sleep(1000)\n"
    assert _run(stdio_task, base, fork, bwrap, "fork") == {"case:a": "passed", "case:b": "passed"}
    assert time.monotonic() - t0 < 60


@pytest.mark.sandbox
def test_validate_stdio_suite(base: Path) -> None:
    backend_or_skip("bubblewrap")
    make_task(base / "suite", "good")
    make_task(base / "suite", "badref", solution="print(0)\n")
    checks = {c.task_id: c for c in validate_suite(load_suite(base / "suite"), sandbox="bubblewrap")}
    assert checks["good"].ok and checks["good"].reference_passed == 2 and checks["good"].starter_failed == 2
    assert not checks["badref"].ok
    assert any("reference fails 2 hidden test(s)" in p for p in checks["badref"].problems)


@pytest.mark.sandbox
def test_run_suite_end_to_end(base: Path) -> None:
    from reliabench.agents.replay import ReplayAgent
    from reliabench.run.runner import RunSettings, run_suite
    from reliabench.store import read_records

    backend_or_skip("bubblewrap")
    make_task(base / "suite")
    replay = base / "replay.jsonl"
    replay.write_text(json.dumps({"task_id": "sum", "rollout": 0, "files": {"solution.py": SUM}}) + "\n"
                      + json.dumps({"task_id": "sum", "rollout": 1, "files": {"solution.py": "print(3)\n"}}) + "\n")
    summary = run_suite(load_suite(base / "suite"), [ReplayAgent("r", replay)], base / "run",
                        RunSettings(n=2, sandbox="bubblewrap", scanners=()))
    assert summary.executed == 2 and summary.infra_errors == 0
    recs = sorted(read_records(base / "run"), key=lambda r: r.rollout)
    assert [r.passes for r in recs] == [True, False]
    assert [(t.name, t.outcome) for t in recs[1].tests] == [("case:a", "passed"), ("case:b", "failed")]


@pytest.mark.sandbox
@pytest.mark.parametrize("name", ["bubblewrap", "namespaces", "none"])
def test_backends_pass_stdin_from_a_file_the_sandbox_cannot_see(name: str, base: Path) -> None:
    from sandbox_helpers import python_for

    backend = backend_or_skip(name)
    private = Path(tempfile.mkdtemp(prefix="rb-stdin-"))  # 0700, root: unreachable by slot uids
    try:
        (private / "case.in").write_text("4 5\n")
        ws = base / f"ws-{name}"
        ws.mkdir()
        (ws / "p.py").write_text(SUM)
        result = backend.run([python_for(backend, 3), "p.py"], workdir=ws, slot=3, stdin=private / "case.in")
        assert result.returncode == 0 and result.stdout == "9\n", result.stderr
        # without stdin the program reads an empty stream (not the parent's terminal)
        result = backend.run([python_for(backend, 3), "p.py"], workdir=ws, slot=3)
        assert result.stdout == "0\n"
    finally:
        shutil.rmtree(private, ignore_errors=True)
