"""End to end: a small suite with replay and python agents through sandbox, store, resume, score.

Also: kill -9 of the runner at several moments, then resume: exactly n rollouts per pair,
none duplicated, none lost.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from suite_helpers import write_adder_suite

from reliabench.agents.config import load_agents
from reliabench.cli import main
from reliabench.errors import RunMismatchError
from reliabench.records import read_jsonl
from reliabench.run.runner import RunSettings, run_suite
from reliabench.store import RunStore
from reliabench.tasks.suite import load_suite

GOOD = "def add(a, b):\n    return a + b\n"
BUGGY = "def add(a, b):\n    return a - b if a > 5 else a + b\n"
INSECURE = "import os\n\ndef add(a, b):\n    os.system('echo ' + str(a))\n    return eval(f'{a} + {b}')\n"


def make_suite(root: Path) -> Path:
    return write_adder_suite(root, "mini", textwrap.dedent("""
        import pytest
        from adder import add

        def test_small():
            assert add(1, 2) == 3

        def test_zero():
            assert add(0, 0) == 0

        @pytest.mark.parametrize("a", [6, 7])
        def test_big(a):
            assert add(a, 1) == a + 1

        @pytest.mark.security
        def test_no_eval_of_strings():
            # strings are concatenated, never evaluated as code
            assert add("1", "2") == "12"
    """), solution=GOOD)


def make_agents(root: Path) -> Path:
    gens = [
        {"task_id": "adder", "rollout": 0, "files": {"adder.py": GOOD}},
        {"task_id": "adder", "rollout": 1, "files": {"adder.py": BUGGY}},
        {"task_id": "adder", "rollout": 2, "files": {"adder.py": INSECURE}},
        # rollout 3 missing: recorded as agent_error
    ]
    (root / "gens.jsonl").write_text("".join(json.dumps(g) + "\n" for g in gens))
    (root / "my_agent.py").write_text(textwrap.dedent(f"""
        import time
        from pathlib import Path

        def solve(request, delay=0.0):
            time.sleep(delay)
            code = {GOOD!r} if request.seed % 2 == 0 else {BUGGY!r}
            (Path(request.workspace) / "adder.py").write_text(code)
    """))
    agents = root / "agents.toml"
    agents.write_text(textwrap.dedent("""
        [[agents]]
        name = "recorded"
        kind = "replay"
        path = "gens.jsonl"

        [[agents]]
        name = "py"
        kind = "python"
        callable = "my_agent:solve"
        path = "."
    """))
    return agents


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    os.chmod(tmp_path, 0o755)
    monkeypatch.syspath_prepend(str(tmp_path))
    return make_suite(tmp_path), make_agents(tmp_path)


@pytest.mark.slow
def test_run_resume_score_export(setup: tuple[Path, Path], tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    suite_dir, agents_file = setup
    out = tmp_path / "run"
    args = ["run", str(suite_dir), "--agents", str(agents_file), "-n", "4", "--out", str(out), "--workers", "2"]
    assert main(args) == 0
    with RunStore.open_existing(out) as store:
        recs = {r.key: r for r in store.rollouts()}
        info = store.run_info()
    assert len(recs) == 8
    assert info.suite.name == "mini" and info.packages["reliabench"]
    assert info.command_line == ("reliabench", *args)  # kept for the report's provenance
    assert info.n == 4 and info.suite_path and info.scanners == ("bandit",)
    good, buggy, insecure, missing = (recs[("adder", "recorded", i)] for i in range(4))
    assert good.passes and good.status == "completed"
    assert not buggy.passes
    assert {t.name: t.outcome for t in buggy.tests or ()}["test_adder.py::test_big[6]"] == "failed"
    # the insecure one passes functionally but fails the security test and trips the scanner
    assert insecure.passes
    assert any(t.security and t.outcome == "failed" for t in insecure.tests or ())
    assert any(f.cwe == 78 for f in insecure.findings)
    assert missing.status == "agent_error" and not missing.passes
    assert all(r.isolation in ("bubblewrap", "namespaces", "none", "warm") for r in recs.values())
    # the hidden tests ran on warm workers where they work (the default), and say so
    ran = [r for r in recs.values() if r.status != "agent_error"]
    assert {r.meta["test_path"] for r in ran} <= {"warm", "fresh"}
    assert all((r.isolation == "warm") == (r.meta["test_path"] == "warm") for r in ran)
    art = store.artifact_dir("adder", "recorded", 1)
    assert "a - b" in (art / "diff.patch").read_text()
    assert "test_big" in (art / "tests.log").read_text()
    capsys.readouterr()

    # resume with the same arguments: nothing runs again
    assert main(args) == 0
    assert "0 rollout(s) executed, 8 already recorded" in capsys.readouterr().err

    # a changed configuration is refused
    code = main([*args[:-2], "--workers", "2", "--seed", "5"])
    err = capsys.readouterr().err
    assert code == 2 and "different configuration (changed: seed)" in err

    # score accepts the run directory
    assert main(["score", str(out), "-k", "1,2", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rec = next(a for a in doc["agents"] if a["agent"] == "recorded")
    # 2 of 4 rollouts pass functionally (good, insecure): reliability@1 = 0.5
    assert rec["metrics"]["reliability@1"]["value"] == pytest.approx(0.5)
    # only "good" is secure too: 1/4
    assert rec["metrics"]["security_adjusted_reliability@1"]["value"] == pytest.approx(0.25)

    # every analysis command reads a run directory too
    for extra in (["compare", str(out), "--a", "recorded", "--b", "py", "-k", "1"],
                  ["audit", str(out), "-k", "1"], ["proxy", str(out)]):
        assert main(extra) == 0, extra
    capsys.readouterr()

    # export writes every record with its isolation
    exported = tmp_path / "export.jsonl"
    assert main(["export", str(out), "-o", str(exported)]) == 0
    back = read_jsonl(exported)
    assert len(back) == 8 and all(r.isolation for r in back)


def test_mismatch_error_is_usage_error(setup: tuple[Path, Path], tmp_path: Path) -> None:
    suite_dir, agents_file = setup
    suite = load_suite(suite_dir)
    agents = [a for a in load_agents(agents_file) if a.name == "recorded"]
    out = tmp_path / "run"
    run_suite(suite, agents, out, RunSettings(n=1, seed=1, workers=1))
    with pytest.raises(RunMismatchError, match="changed: seed"):
        run_suite(suite, agents, out, RunSettings(n=1, seed=2, workers=1))


@pytest.mark.slow
def test_kill_9_then_resume_loses_and_duplicates_nothing(setup: tuple[Path, Path], tmp_path: Path) -> None:
    suite_dir, agents_file = setup
    # slow the python agent down so kills land mid-run
    # (warm test workers make the rest of a rollout fast: the delay keeps the run long enough)
    text = agents_file.read_text().replace('path = "."', 'path = "."\n[agents.options]\ndelay = 0.2')
    agents_file.write_text(text)
    out = tmp_path / "run"
    n = 12
    cmd = [sys.executable, "-m", "reliabench", "run", str(suite_dir), "--agents", str(agents_file),
           "-n", str(n), "--out", str(out), "--workers", "2"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    def count() -> int:
        if not (out / RunStore.FILENAME).exists():
            return 0
        try:
            with RunStore.open_existing(out) as store:
                return len(store.done_keys())
        except Exception:  # the run row may not be written yet
            return 0

    recorded = []
    for extra_delay in (0.0, 0.3, 0.7):
        before = count()
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        deadline = time.monotonic() + 120
        while count() <= before and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)  # wait until this process has recorded something: then kill mid-run
        time.sleep(extra_delay)
        with contextlib.suppress(ProcessLookupError):  # the whole run may have finished already
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        recorded.append(count())
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    with RunStore.open_existing(out) as store:
        keys = [r.key for r in store.rollouts()]
    assert len(keys) == len(set(keys)) == 2 * n
    assert {(a, r) for _, a, r in keys} == {(a, r) for a in ("recorded", "py") for r in range(n)}
    # the kills really happened mid-run (otherwise this test proves nothing)
    assert 0 < recorded[0] < 2 * n


def test_interrupt_records_finished_rollouts_and_resume_completes(setup: tuple[Path, Path], tmp_path: Path) -> None:
    import threading

    suite_dir, agents_file = setup
    suite = load_suite(suite_dir)
    agents = [a for a in load_agents(agents_file) if a.name == "py"]
    out = tmp_path / "run"
    settings = RunSettings(n=12, workers=2)  # more than the rollouts in flight at once (4 threads, 6 queued)
    seen: list[int] = []

    def interrupt(ev: object) -> None:
        seen.append(1)
        if len(seen) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_suite(suite, agents, out, settings, progress=interrupt)
    with RunStore.open_existing(out) as store:
        after_interrupt = len(store.done_keys())
    assert 2 <= after_interrupt < 12  # the ones finished were recorded; the rest not started

    # a stop event ends the run after the rollouts in flight; a plain resume then completes it
    stop = threading.Event()
    summary = run_suite(suite, agents, out, settings, progress=lambda ev: stop.set(), stop=stop)
    assert summary.resumed and summary.executed >= 1
    final = run_suite(suite, agents, out, settings)
    with RunStore.open_existing(out) as store:
        keys = sorted(store.done_keys())
    assert keys == [("adder", "py", r) for r in range(12)]
    assert final.skipped + final.executed == 12


@pytest.mark.parametrize("plain", [False, True], ids=["pytest-suite", "plain-suite"])
def test_warm_and_fresh_test_workers_record_the_same_rollouts(setup: tuple[Path, Path], tmp_path: Path,
                                                              plain: bool) -> None:
    from sandbox_helpers import warm_or_skip

    warm_or_skip()
    suite_dir, agents_file = setup
    if plain:  # the same tests as plain functions: the warm path runs them with the lean runner
        task = suite_dir / "tasks" / "adder"
        (task / "task.toml").write_text('id = "adder"\ntimeout_s = 20\ntest_runner = "plain"\n')
        (task / "tests" / "test_adder.py").write_text(textwrap.dedent("""
            import pytest
            from adder import add
            def test_small():
                assert add(1, 2) == 3
            def test_big():
                assert add(6, 1) == 7
            @pytest.mark.security
            def test_no_eval_of_strings():
                assert add("1", "2") == "12"
        """))
    suite = load_suite(suite_dir)
    agents = [a for a in load_agents(agents_file) if a.name == "recorded"]
    runs = {}
    for path in ("fresh", "warm"):
        run_suite(suite, agents, tmp_path / path, RunSettings(n=4, workers=2, test_workers=path))
        with RunStore.open_existing(tmp_path / path) as store:
            runs[path] = {r.key: r for r in store.rollouts()}
    for key, fresh in runs["fresh"].items():
        warm = runs["warm"][key]
        assert (warm.status, warm.tests, warm.passes) == (fresh.status, fresh.tests, fresh.passes)
        if fresh.status != "agent_error":
            assert fresh.meta["test_path"] == "fresh" and fresh.isolation != "warm"
            assert warm.meta["test_path"] == "warm" and warm.isolation == "warm"
            assert warm.meta["test_runner"] == ("plain" if plain else "pytest")
    # a run can be resumed with the other path: it is not part of the run's identity
    summary = run_suite(suite, agents, tmp_path / "fresh", RunSettings(n=4, workers=2, test_workers="warm"))
    assert summary.resumed and summary.executed == 0


def test_test_workers_choice_is_validated_and_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    from reliabench.errors import InvalidArgumentError, SandboxError
    from reliabench.warm import hidden

    with pytest.raises(InvalidArgumentError, match="test_workers must be one of auto, warm, fresh, got 'hot'"):
        hidden.open_test_workers("hot")
    assert hidden.open_test_workers("fresh") is None
    monkeypatch.setattr(hidden, "warm_unavailable_reason", lambda: "no root here")
    assert hidden.open_test_workers("auto") is None  # falls back to fresh processes
    with pytest.raises(SandboxError, match="not available here: no root here"):
        hidden.open_test_workers("warm")


def test_cli_test_workers_option(setup: tuple[Path, Path], tmp_path: Path) -> None:
    suite_dir, agents_file = setup
    out = tmp_path / "run"
    assert main(["run", str(suite_dir), "--agents", str(agents_file), "-n", "1", "--out", str(out),
                 "--workers", "1", "--test-workers", "fresh"]) == 0
    with RunStore.open_existing(out) as store:
        paths = {r.meta.get("test_path") for r in store.rollouts() if r.status != "agent_error"}
    assert paths == {"fresh"}
    assert main(["run", str(suite_dir), "--agents", str(agents_file), "-n", "1", "--out", str(out),
                 "--test-workers", "lukewarm"]) == 2
