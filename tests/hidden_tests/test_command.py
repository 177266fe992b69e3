"""The test-command runner over host environments, on real exercises of every language and on attacks.

The exercises are the vendored extract of the Aider polyglot benchmark (tests/fixtures/polyglot),
converted as ``reliabench suites import aider-polyglot`` converts them, and run in bubblewrap
with the toolchains of ``make polyglot`` (scripts/install-toolchains.sh). Without a toolchain a
test skips here and fails in CI.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from reliabench.errors import SandboxError, SuiteError
from reliabench.files.untrusted import walk_tree
from reliabench.hidden_tests.command import (
    COMMAND_LIMITS,
    REPORT_DIR,
    CommandTestRunner,
    copy_files,
)
from reliabench.hidden_tests.fresh import HiddenTestRun
from reliabench.hidden_tests.layer import TestRequest
from reliabench.hidden_tests.toolchains import TrustedCache, missing_toolchain, toolchain_for
from reliabench.records import TestOutcome
from reliabench.sandbox import SandboxBackend
from reliabench.sandbox.environment import HOST, Environment, Mount
from reliabench.tasks.convert import ConvertOptions
from reliabench.tasks.convert.aider_polyglot import write_polyglot_suite
from reliabench.tasks.suite import Suite, Task, load_suite, materialize
from tests.sandbox_helpers import backend_or_skip, skip_or_fail_in_ci

EXTRACT = Path(__file__).parents[1] / "fixtures" / "polyglot"
COMMAND_TASKS = ["cpp-bank-account", "cpp-queen-attack", "go-bowling", "go-crypto-square", "java-bowling",
                 "java-series", "javascript-ledger", "javascript-phone-number", "python-go-counting",
                 "rust-gigasecond", "rust-luhn-from"]
STARTER_PASSES_BY_DESIGN = {"javascript-ledger"}
SLOT = 7


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Suite:
    out = tmp_path_factory.mktemp("polyglot") / "suite"
    out.mkdir()
    write_polyglot_suite(EXTRACT, out, ConvertOptions())
    return load_suite(out)


@pytest.fixture(scope="module")
def cache_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("toolchain-cache")


@pytest.fixture(scope="module")
def runner(cache_root: Path) -> Iterator[CommandTestRunner]:
    r = CommandTestRunner(cache_root=cache_root)
    yield r
    r.close()


def _bwrap() -> SandboxBackend:
    return backend_or_skip("bubblewrap")


def _need(task: Task, runner: CommandTestRunner) -> None:
    why = missing_toolchain(runner.toolchain(task))
    if why is not None:
        skip_or_fail_in_ci(why)


def _opener(backend: SandboxBackend, ws: Path, slot: int = SLOT) -> Callable[[list[Mount]], Environment]:
    return lambda mounts: backend.start(backend.prepare(HOST), workspace=ws, slot=slot, mounts=mounts)


def _workspace(base: Path, task: Task, name: str, *layers: Path) -> Path:
    ws = base / name
    materialize(ws, [task.workspace_dir, *layers])
    return ws


class Harness:
    """Collect once per task, then run workspaces through the runner."""

    def __init__(self, runner: CommandTestRunner, backend: SandboxBackend, base: Path) -> None:
        self.runner, self.backend, self.base = runner, backend, base
        self.expected: dict[str, tuple[TestOutcome, ...]] = {}

    def starter(self, task: Task) -> Path:
        path = self.base / f"starter-{task.id}"
        if not path.exists():
            materialize(path, [task.workspace_dir])
        return path

    def collect(self, task: Task) -> tuple[TestOutcome, ...]:
        _need(task, self.runner)
        if task.id not in self.expected:
            starter = self.starter(task)
            self.expected[task.id] = self.runner.collect(task, _opener(self.backend, starter), starter=starter,
                                                         limits=COMMAND_LIMITS, slot=SLOT)
        return self.expected[task.id]

    def run(self, task: Task, ws: Path) -> HiddenTestRun:
        expected = self.collect(task)
        return self.runner.run(TestRequest(task, ws, expected, COMMAND_LIMITS, SLOT, _opener(self.backend, ws),
                                           starter=self.starter(task), allowed_skips=task.allowed_skips))


@pytest.fixture(scope="module")
def harness(runner: CommandTestRunner, tmp_path_factory: pytest.TempPathFactory) -> Harness:
    base = tmp_path_factory.mktemp("runs")
    os.chmod(base, 0o711)
    return Harness(runner, _bwrap(), base)


def _fresh(harness: Harness, task: Task, name: str, *layers: Path) -> Path:
    ws = harness.base / f"{task.id}-{name}-{time.monotonic_ns()}"
    materialize(ws, [task.workspace_dir, *layers])
    return ws


def _all_passed(run: HiddenTestRun) -> bool:
    return run.status == "completed" and all(o.outcome == "passed" for o in run.outcomes)


# ------------------------------------------------------------------ real exercises, every language


@pytest.mark.sandbox
@pytest.mark.parametrize("task_id", COMMAND_TASKS)
def test_the_reference_passes_every_test_and_the_starter_does_not(suite: Suite, harness: Harness,
                                                                   task_id: str) -> None:
    task = suite.task(task_id)
    assert task.solution_dir is not None
    expected = harness.collect(task)
    assert expected and len({t.name for t in expected}) == len(expected)
    ref = harness.run(task, _fresh(harness, task, "ref", task.solution_dir))
    assert _all_passed(ref), ref.reason
    assert [o.name for o in ref.outcomes] == [t.name for t in expected]
    assert (ref.isolation, ref.tamper_files, ref.forged) == ("bubblewrap", (), False)
    starter = harness.run(task, _fresh(harness, task, "starter"))
    assert _all_passed(starter) == (task_id in STARTER_PASSES_BY_DESIGN), starter.reason


@pytest.mark.sandbox
def test_names_come_from_the_tools_report(suite: Suite, harness: Harness) -> None:
    go = harness.collect(suite.task("go-bowling"))
    assert "bowling::TestRoll/rolls_cannot_score_negative_points" in {t.name for t in go}
    assert "bowling::TestRoll" not in {t.name for t in go}  # a parent of subtests: its leaves count
    java = harness.collect(suite.task("java-series"))
    assert all(t.name.startswith("SeriesTest::") for t in java)
    cpp = harness.collect(suite.task("cpp-queen-attack"))
    assert all(t.name.startswith("queen-attack.global::") for t in cpp)
    js = harness.collect(suite.task("javascript-phone-number"))
    assert all(t.name.startswith("phone-number.spec.js::Phone Number > ") for t in js)
    rust = harness.collect(suite.task("rust-gigasecond"))
    assert all(t.name.startswith("tests/gigasecond.rs::") for t in rust)


# ------------------------------------------------------------------ the workspace


@pytest.mark.sandbox
def test_the_agents_workspace_is_restored_byte_for_byte(suite: Suite, harness: Harness) -> None:
    task = suite.task("go-crypto-square")
    ws = _fresh(harness, task, "restore")
    (ws / "notes.txt").write_text("mine")
    os.chmod(ws / "notes.txt", 0o640)
    os.utime(ws / "notes.txt", ns=(1_000_000_000, 1_000_000_000))
    (ws / ".cargo").mkdir()  # flagged and removed for the run, put back after it
    before = _listing(ws)
    harness.run(task, ws)
    assert _listing(ws) == before


def _listing(root: Path) -> dict[str, tuple[str, int, int, str]]:
    out = {}
    for e in walk_tree(root):
        st = os.lstat(root / e.rel)
        digest = hashlib.sha256((root / e.rel).read_bytes()).hexdigest() if e.kind == "file" else ""
        out[e.rel] = (e.kind, st.st_mode, st.st_mtime_ns if e.kind == "file" else 0, digest)
    return out


@pytest.mark.sandbox
def test_an_agent_file_at_a_test_path_is_replaced_and_flagged(suite: Suite, harness: Harness) -> None:
    task = suite.task("go-bowling")
    ws = _fresh(harness, task, "tamper")
    # a test file of the agent's own that passes everything, and a go.mod pointing elsewhere
    (ws / "bowling_test.go").write_text("package bowling\n\nimport \"testing\"\n\nfunc TestRoll(t *testing.T) {}\n")
    (ws / "go.mod").write_text("module bowling\n\ngo 1.18\n\nreplace x => ../x\n")
    (ws / "cases_test.go").mkdir()  # a folder where the tests need a file
    run = harness.run(task, ws)
    assert run.tamper_suspected
    assert set(run.tamper_files) == {"bowling_test.go", "go.mod", "cases_test.go"}
    assert not _all_passed(run)  # the real tests ran on the starter's code


@pytest.mark.sandbox
def test_tool_configs_links_and_harness_names_are_removed_and_flagged(suite: Suite, harness: Harness) -> None:
    task = suite.task("rust-luhn-from")
    assert task.solution_dir is not None
    ws = _fresh(harness, task, "configs", task.solution_dir)
    (ws / ".cargo").mkdir()
    (ws / ".cargo" / "config.toml").write_text('[build]\nrustflags = ["--cfg", "forged"]\n')
    (ws / "src" / "build.rs").write_text("fn main() {}\n")
    os.symlink("/etc/shadow", ws / "shadow")
    (ws / REPORT_DIR).mkdir()
    (ws / REPORT_DIR / "cargo-test.txt").write_text("running 1 test\ntest forged ... ok\n")
    run = harness.run(task, ws)
    assert set(run.tamper_files) == {".cargo", "src/build.rs", "shadow", REPORT_DIR}
    assert _all_passed(run)  # the reference still passes: nothing of the planted files took part
    js = suite.task("javascript-phone-number")
    ws = _fresh(harness, js, "node")
    (ws / "node_modules" / "jest" / "bin").mkdir(parents=True)
    (ws / "node_modules" / "jest" / "bin" / "jest.js").write_text("process.exit(0)\n")
    (ws / "jest.config.js").write_text("module.exports = { testMatch: ['**/nothing'] };\n")
    run = harness.run(js, ws)
    assert set(run.tamper_files) == {"node_modules", "jest.config.js"}
    assert run.outcomes and not _all_passed(run)  # the shared jest ran the real tests


# ------------------------------------------------------------------ what the report says, and does not


@pytest.mark.sandbox
def test_tests_the_report_does_not_list_did_not_run(suite: Suite, harness: Harness) -> None:
    task = suite.task("go-crypto-square")
    assert task.solution_dir is not None
    ws = _fresh(harness, task, "exit0", task.solution_dir)
    # the reference, plus an init that exits 0 before any test runs: `go test` exits 0 (what an
    # exit-code harness would call a pass), the report lists no test
    (ws / "zz_exit.go").write_text('package cryptosquare\n\nimport "os"\n\nfunc init() { os.Exit(0) }\n')
    run = harness.run(task, ws)
    assert run.outcomes and all(o.outcome == "failed" for o in run.outcomes)
    assert "not in the report (not run)" in (run.reason or "")


@pytest.mark.sandbox
def test_the_stale_mtime_trap_of_a_shared_target_dir(suite: Suite, harness: Harness, base: Path) -> None:
    """A shared CARGO_TARGET_DIR reuses another workspace's build when copied files keep old mtimes.

    The trap (measured: 21 of 30 Rust starters passed): build the reference in a target dir,
    then put the starter's files -- copied with their old mtimes -- at the same path and build
    again with the same target dir: cargo sees no source newer than its last build and runs
    the reference's test binary. reliabench's runs build in their own scratch folder, from a
    copy of the trusted cache, with every source newer than any cached build: the starter fails.
    """
    task = suite.task("rust-luhn-from")
    assert task.solution_dir is not None
    _need(task, harness.runner)
    backend = harness.backend
    ws = base / "ws"
    materialize(ws, [task.workspace_dir, task.solution_dir, task.tests_dir])
    (ws / ".h").mkdir()  # CARGO_HOME with the toolchain's source replacement
    shutil.copy(harness.runner.toolchain(task).files["cargo-home/config.toml"], ws / ".h" / "config.toml")

    def shared_build() -> str:
        """``cargo test`` with ONE target dir kept between builds (ws/shared-target)."""
        env = backend.start(backend.prepare(HOST), workspace=ws, slot=SLOT)
        try:
            res = env.exec(["sh", "-c", "CARGO_HOME=$PWD/.h CARGO_TARGET_DIR=$PWD/shared-target "
                            "cargo test --offline -- --include-ignored 2>&1"],
                           env={"PATH": "/usr/bin:/bin", "HOME": "/tmp"}, limits=COMMAND_LIMITS)
        finally:
            env.close()
        return res.stdout + res.stderr

    first = shared_build()  # the reference, built into ws/shared-target
    assert "test result: ok" in first, first[-2000:]
    old = time.time() - 10 * 365 * 24 * 3600
    for rel in ("src/lib.rs",):  # the starter's files, copied with their (old) mtimes
        shutil.copyfile(task.workspace_dir / rel, ws / rel)
        os.utime(ws / rel, (old, old))
    stale = shared_build()
    assert "test result: ok" in stale and "FAILED" not in stale  # the trap: the starter "passes"

    # the same starter through the runner: its own scratch build, fresh mtimes -> it fails
    starter = _fresh(harness, task, "stale")
    for rel in ("src/lib.rs",):
        os.utime(starter / rel, (old, old))
    run = harness.run(task, starter)
    assert not _all_passed(run)


@pytest.mark.sandbox
def test_a_rollout_never_writes_the_trusted_cache(suite: Suite, harness: Harness, cache_root: Path) -> None:
    task = suite.task("go-bowling")
    harness.collect(task)
    cache = TrustedCache.of(task.root, harness.runner.toolchain(task), cache_root)
    assert any(e.kind == "file" for e in walk_tree(cache.folder)), "collect filled the trusted cache"
    before = _listing(cache.folder)
    ws = _fresh(harness, task, "poison")
    # code under test that writes into the build cache it was given (its own copy)
    (ws / "zz_poison_test.go").write_text(
        'package bowling\n\nimport (\n\t"os"\n\t"path/filepath"\n\t"testing"\n)\n\n'
        'func TestPoison(t *testing.T) {\n\tfilepath.Walk(os.Getenv("GOCACHE"), func(p string, i os.FileInfo, e error) error {\n'
        '\t\tif e == nil && !i.IsDir() { os.WriteFile(p, []byte("poison"), 0o644) }\n\t\treturn nil\n\t})\n}\n')
    harness.run(task, ws)
    assert _listing(cache.folder) == before


# ------------------------------------------------------------------ synthetic command tasks


def _command_suite(root: Path, table: str, files: dict[str, str], solution: dict[str, str] | None = None,
                   language: str = "shell") -> Task:
    t = root / "tasks" / "t"
    for sub, content in (("workspace", files), ("tests", {"check.txt": "x\n"}), ("solution", solution or {})):
        (t / sub).mkdir(parents=True, exist_ok=True)
        for rel, text in content.items():
            (t / sub / rel).parent.mkdir(parents=True, exist_ok=True)
            (t / sub / rel).write_text(text)
    if solution is None:
        shutil.rmtree(t / "solution")
    (root / "suite.toml").write_text('name = "s"\nversion = "1"\n')
    (t / "prompt.md").write_text("Do it.\n")
    (t / "task.toml").write_text(f'id = "t"\nlanguage = "{language}"\ntest_runner = "command"\n\n[test_command]\n{table}')
    return load_suite(root).tasks[0]


def _run_synthetic(task: Task, base: Path, runner: CommandTestRunner, backend: SandboxBackend,
                   files: dict[str, str] | None = None) -> tuple[tuple[TestOutcome, ...], HiddenTestRun]:
    starter = base / "starter"
    materialize(starter, [task.workspace_dir])
    expected = runner.collect(task, _opener(backend, starter), starter=starter, limits=COMMAND_LIMITS, slot=SLOT)
    ws = base / "ws"
    materialize(ws, [task.workspace_dir])
    for rel, text in (files or {}).items():
        (ws / rel).write_text(text)
    return expected, runner.run(TestRequest(task, ws, expected, COMMAND_LIMITS, SLOT, _opener(backend, ws),
                                            starter=starter))


@pytest.mark.sandbox
def test_an_exit_code_task_has_one_coarse_outcome(base: Path, runner: CommandTestRunner) -> None:
    task = _command_suite(base / "s", 'argv = ["sh", "-c", "test -f done.txt"]\nreport = "exit-code"\n',
                          {"a.txt": "starter\n"}, {"done.txt": "yes\n"})
    assert task.test_command is not None and task.test_command.coarse
    expected, run = _run_synthetic(task, base, runner, _bwrap())
    assert [t.name for t in expected] == ["exit-code"]
    assert [(o.name, o.outcome) for o in run.outcomes] == [("exit-code", "failed")]
    (base / "b").mkdir()
    _, passing = _run_synthetic(task, base / "b", runner, _bwrap(), {"done.txt": "yes\n"})
    assert [o.outcome for o in passing.outcomes] == ["passed"]


@pytest.mark.sandbox
@pytest.mark.parametrize("backend_name", ["bubblewrap", "namespaces", "none"])
def test_a_report_on_stdout_in_a_subfolder_on_every_host_backend(base: Path, runner: CommandTestRunner,
                                                                 backend_name: str) -> None:
    backend = backend_or_skip(backend_name)
    tap = "1..2\nok 1 - first\nok 2 - second\n"
    task = _command_suite(base / "s", 'argv = ["sh", "-c", "cat tap.txt"]\nreport = "tap"\ncwd = "sub"\n',
                          {"sub/tap.txt": "1..2\nok 1 - first\nnot ok 2 - second\n"}, {"sub/tap.txt": tap})
    expected, run = _run_synthetic(task, base, runner, backend)
    assert [t.name for t in expected] == ["first", "second"]
    assert [(o.name, o.outcome) for o in run.outcomes] == [("first", "passed"), ("second", "failed")]
    assert run.isolation == backend_name


@pytest.mark.sandbox
def test_a_command_that_runs_out_of_time(base: Path, runner: CommandTestRunner) -> None:
    task = _command_suite(base / "s", 'argv = ["sh", "-c", "cat tap.txt; sleep 30"]\nreport = "tap"\ntimeout_s = 2\n',
                          {"tap.txt": "1..1\nok 1 - a\n"})
    _expected, run = _run_synthetic(task, base, runner, _bwrap())
    assert run.status == "timeout" and "ran out of time" in (run.reason or "")


@pytest.mark.sandbox
def test_collect_refuses_a_task_whose_command_lists_no_test(base: Path, runner: CommandTestRunner) -> None:
    task = _command_suite(base / "s", 'argv = ["sh", "-c", "echo nothing"]\nreport = "tap"\n', {"a.txt": "x"})
    with pytest.raises(SuiteError, match="the test command lists no test on the starter"):
        _run_synthetic(task, base, runner, _bwrap())


def test_a_missing_toolchain_is_refused_before_anything_runs(suite: Suite, tmp_path: Path) -> None:
    runner = CommandTestRunner(toolchains=tmp_path / "nowhere")
    task = suite.task("javascript-phone-number")
    why = missing_toolchain(toolchain_for("javascript", tmp_path / "nowhere"))
    assert why is not None and "make polyglot" in why
    with pytest.raises(SandboxError, match="make polyglot"):
        runner.collect(task, lambda mounts: pytest.fail("no environment may start"), starter=tmp_path,
                       limits=COMMAND_LIMITS, slot=SLOT)


def test_copy_files_keeps_modes_and_mtimes_and_follows_no_link(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "d").mkdir(parents=True)
    (src / "d" / "x.sh").write_text("#!/bin/sh\n")
    os.chmod(src / "d" / "x.sh", 0o755)
    os.utime(src / "d" / "x.sh", ns=(5, 5_000_000_000))
    os.symlink("/etc/passwd", src / "link")
    copy_files(src, tmp_path / "dst", max_bytes=100)
    st = os.stat(tmp_path / "dst" / "d" / "x.sh")
    assert (oct(st.st_mode & 0o777), st.st_mtime_ns) == ("0o755", 5_000_000_000)
    assert not os.path.lexists(tmp_path / "dst" / "link")
    with pytest.raises(SandboxError, match="more than 3 bytes"):
        copy_files(src, tmp_path / "small", max_bytes=3)


@pytest.mark.sandbox
def test_a_workspace_too_large_to_copy_fails_its_tests_not_the_run(base: Path, runner: CommandTestRunner,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from reliabench.hidden_tests import command

    task = _command_suite(base / "s", 'argv = ["sh", "-c", "cat tap.txt"]\nreport = "tap"\n',
                          {"tap.txt": "1..1\nok 1 - a\n"})
    expected, _ = _run_synthetic(task, base, runner, _bwrap())
    monkeypatch.setattr(command, "_COPY_BYTES", 5)
    ws = base / "big"
    materialize(ws, [task.workspace_dir])
    run = runner.run(TestRequest(task, ws, expected, COMMAND_LIMITS, SLOT, _opener(_bwrap(), ws)))
    assert [o.outcome for o in run.outcomes] == ["failed"] and "more than 5 bytes" in (run.reason or "")
    assert (ws / "tap.txt").read_text() == "1..1\nok 1 - a\n"  # untouched
