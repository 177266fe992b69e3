"""Repository tasks end to end through the runner, on the vendored real instance (marshmallow-1359).

A replay of SWE-bench predictions (the gold patch and the empty patch, n = 2) through
``reliabench run`` and ``score``; ``validate`` through the command; re-tests on the repository
path; a command agent that sees the checkout at /testbed; an agent that breaks the checkout
(its rollout's failure, contained); and the refusals before anything is written (a test patch
that does not apply, a PASS_TO_PASS test that fails on the untouched checkout, no repository).
The environment is built from PyPI the first time (cached by spec hash, as in the other
repository tests).
"""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
from pathlib import Path

import pytest
from repository_helpers import FIXTURE, bwrap_available, vendored_suite
from sandbox_helpers import skip_or_fail_in_ci

from reliabench.agents.base import AgentRequest, AgentResult
from reliabench.agents.command import CommandAgent
from reliabench.cli import main
from reliabench.errors import PreflightError
from reliabench.run.environments import task_environments
from reliabench.run.runner import RunSettings, run_suite
from reliabench.run.test_paths import prepare_repositories
from reliabench.runs import RunDirectory
from reliabench.sandbox.base import Limits
from reliabench.tasks.suite import Task, load_suite

pytestmark = pytest.mark.sandbox

ROW = json.loads((FIXTURE / "instance.json").read_text(encoding="utf-8"))
IID = ROW["instance_id"]
F2P = json.loads(ROW["FAIL_TO_PASS"])[0]


@pytest.fixture(scope="module")
def suite_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The vendored instance converted, its environment built (or taken from the cache)."""
    if not bwrap_available():
        skip_or_fail_in_ci("bubblewrap (bwrap) is not installed: repository tasks run in it")
    base = tmp_path_factory.mktemp("repo-e2e")
    suite = vendored_suite(base)
    try:
        prepare_repositories(suite.tasks, task_environments("auto", suite.tasks), limits=Limits()).close()
    except Exception as exc:
        skip_or_fail_in_ci(f"the vendored extract's environment did not build: {exc}")
    return suite.root


def _copy(suite_dir: Path, tmp_path: Path) -> Path:
    shutil.copytree(suite_dir, tmp_path / "suite")
    return tmp_path / "suite"


def _task_toml(suite: Path) -> Path:
    return suite / "tasks" / IID / "task.toml"


@pytest.fixture(scope="module")
def replay(suite_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """``reliabench run`` of a predictions file, gold and empty patch, n = 2: (run directory, its arguments)."""
    tmp = tmp_path_factory.mktemp("replay")
    preds = tmp / "preds.jsonl"
    preds.write_text("".join(json.dumps({"instance_id": IID, "model_name_or_path": m, "model_patch": p}) + "\n"
                             for m, p in (("gold", ROW["patch"]), ("empty", "")) for _ in range(2)))
    agents = tmp / "agents.toml"
    agents.write_text("".join(f'[[agents]]\nname = "{m}"\nkind = "replay"\npath = "preds.jsonl"\n\n'
                              for m in ("gold", "empty")))
    out = tmp / "run"
    args = ["run", str(suite_dir), "--agents", str(agents), "-n", "2", "--out", str(out), "--workers", "2"]
    assert main(args) == 0
    return out, args


def test_a_replay_run_of_predictions_grades_as_swebench(replay: tuple[Path, list[str]]) -> None:
    out, args = replay
    with RunDirectory.open(out) as run:
        records = {r.key: r for r in run.records()}
        assert len(records) == 4
        listed = 77  # 1 FAIL_TO_PASS + 76 PASS_TO_PASS: one outcome each
        for (task, agent, i), r in records.items():
            sw = r.meta["swebench"]
            assert r.meta["test_path"] == r.meta["test_runner"] == "repository"
            assert len(r.tests or ()) == listed and sw["fail_to_pass"][1] == 1 and sw["pass_to_pass"][1] == 76
            assert sw["resolved"] == (agent == "gold") == r.passes and r.isolation == "bubblewrap"
            diff = run.artifacts(task, agent, i).diff() or ""
            if agent == "gold":  # the agent's patch, as SWE-bench's model_patch: the checkout's git diff
                assert sw["resolution"] == "RESOLVED_FULL" and r.status == "completed"
                assert diff.startswith("diff --git a/src/marshmallow/fields.py b/src/marshmallow/fields.py")
                assert r.meta["changed_files"] == ["src/marshmallow/fields.py"] and r.meta["scanned"] == ["bandit"]
            else:
                assert sw["resolution"] == "RESOLVED_NO" and sw["fail_to_pass"] == [0, 1]
                assert r.status == "no_change" and diff == ""
                assert [t.outcome for t in r.tests or () if t.name == F2P] == ["failed"]
    assert main(args) == 0  # resumed: nothing to do
    with RunDirectory.open(out) as run:
        assert len(run.records()) == 4


def test_score_reports_macro_and_strict_with_intervals(replay: tuple[Path, list[str]], tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = replay
    capsys.readouterr()
    assert main(["score", str(out), "--format", "json", "--resamples", "200"]) == 0
    doc = json.loads(capsys.readouterr().out)
    by = {a["agent"]: a for a in doc["repository"]["agents"]}
    assert by["gold"]["resolutions"] == {"RESOLVED_FULL": 2, "RESOLVED_PARTIAL": 0, "RESOLVED_NO": 0}
    empty = by["empty"]["metrics"]
    assert empty["strict_resolution_rate"]["value"] == 0.0
    assert empty["macro_test_pass_rate"]["value"] == pytest.approx(76 / 77)  # the gap a single number hides
    assert empty["macro_test_pass_rate"]["ci_low"] is not None
    assert main(["score", str(out), "--html", str(tmp_path / "page.html")]) == 0
    assert "FULL / PARTIAL / NO" in capsys.readouterr().out
    assert '<h2 id="repository">' in (tmp_path / "page.html").read_text()


def test_retests_take_the_repository_path(replay: tuple[Path, list[str]], tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(replay[0], run_dir)
    assert main(["retest", str(run_dir), "--times", "1", "--workers", "2"]) == 0
    with RunDirectory.open(run_dir) as run:
        rows = run.retests()
        records = {r.key: r for r in run.records()}
    assert len(rows) == 4 and all(row["status"] == "completed" for row in rows)
    for row in rows:  # the same code, the same outcomes
        original = records[(row["task_id"], row["agent"], row["rollout"])]
        assert [[t.name, t.outcome] for t in original.tests or ()] == [[n, o] for n, o, _ in row["tests"]]


def test_validate_flips_or_says_why(suite_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(suite_dir), "--workers", "1"]) == 0
    assert "1/1 task(s) valid" in capsys.readouterr().err
    broken = _copy(suite_dir, tmp_path)
    (broken / "tasks" / IID / "gold.patch").write_text("")  # a gold patch that fixes nothing
    assert main(["validate", str(broken), "--workers", "1"]) == 1
    err = " ".join(capsys.readouterr().err.split())  # rich wraps long lines
    assert "does not flip: gold patch does not resolve" in err and "FAIL_TO_PASS 0/1" in err


class _Wrecker:
    """An in-process agent that breaks the checkout on its first rollout, fixes it on the second."""

    name = "wrecker"
    kind = "python"
    simulated = False

    def run(self, request: AgentRequest) -> AgentResult:
        ws = request.workspace
        if request.rollout == 0:
            for p in ws.iterdir():
                shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
            (ws / ".git").mkdir()
            (ws / ".git" / "config").write_text("[core]\n\tfsmonitor = touch /tmp/rb-wrecked\n")
        else:
            f = ws / "src" / "marshmallow" / "fields.py"
            f.write_text(f.read_text().replace("getattr(schema.opts, self.SCHEMA_OPTS_VAR_NAME)",
                                               "getattr(self.root.opts, self.SCHEMA_OPTS_VAR_NAME)"))
        return AgentResult(status="completed")


def test_an_agent_that_breaks_the_checkout_fails_only_its_own_rollout(suite_dir: Path, tmp_path: Path) -> None:
    suite = load_suite(suite_dir)
    summary = run_suite(suite, [_Wrecker()], tmp_path / "run", RunSettings(n=2, workers=1))  # type: ignore[list-item]
    assert summary.infra_errors == 0
    with RunDirectory.open(tmp_path / "run") as run:
        wrecked, fixed = sorted(run.records(), key=lambda r: r.rollout)
    assert wrecked.status == "completed" and not wrecked.passes  # the agent's failure, not the harness's
    assert wrecked.meta["swebench"]["resolution"] == "RESOLVED_NO"
    assert all(t.failing for t in wrecked.tests or ()) and len(wrecked.tests or ()) == 77
    assert not Path("/tmp/rb-wrecked").exists()  # nothing ran the agent's .git
    assert fixed.passes and fixed.meta["swebench"]["resolved"]


def test_a_command_agent_sees_the_checkout_at_testbed(suite_dir: Path, tmp_path: Path) -> None:
    script = tmp_path / "agent.py"
    script.write_text(textwrap.dedent("""\
        import os
        print("cwd", os.getcwd(), "workspace", os.environ.get("RELIABENCH_WORKSPACE"),
              "git", os.path.isdir(".git"), "setup", os.path.isfile("setup.py"))
        f = "src/marshmallow/fields.py"
        text = open(f).read()
        open(f, "w").write(text.replace("getattr(schema.opts, self.SCHEMA_OPTS_VAR_NAME)",
                                        "getattr(self.root.opts, self.SCHEMA_OPTS_VAR_NAME)"))
    """))
    script.chmod(0o644)
    agent = CommandAgent("cmd", [sys.executable, str(script)], sandbox="bubblewrap", readonly=(script,),
                         timeout_s=120)
    run_suite(load_suite(suite_dir), [agent], tmp_path / "run", RunSettings(n=1, workers=1))
    with RunDirectory.open(tmp_path / "run") as run:
        (r,) = run.records()
        log = run.artifacts(*r.key).agent_log() or ""
    assert "cwd /testbed workspace /testbed git True setup True" in log, log[-2000:]
    assert r.passes and r.meta["swebench"]["resolution"] == "RESOLVED_FULL"


class _Insecure:
    """Fixes the task and adds a flagged call and a link to a host file (scanned, never followed)."""

    name = "insecure"
    kind = "python"
    simulated = False

    def run(self, request: AgentRequest) -> AgentResult:
        f = request.workspace / "src" / "marshmallow" / "fields.py"
        text = f.read_text().replace("getattr(schema.opts, self.SCHEMA_OPTS_VAR_NAME)",
                                     "getattr(self.root.opts, self.SCHEMA_OPTS_VAR_NAME)")
        f.write_text(text + "\n\ndef _load(blob):\n    import pickle\n\n    return pickle.loads(blob)\n")
        (request.workspace / "src" / "marshmallow" / "leak.py").symlink_to("/etc/shadow")
        return AgentResult(status="completed")


def test_the_agents_changes_are_scanned_on_the_run_and_on_a_rescan(suite_dir: Path, tmp_path: Path) -> None:
    run_suite(load_suite(suite_dir), [_Insecure()], tmp_path / "run", RunSettings(n=1, workers=1))  # type: ignore[list-item]
    with RunDirectory.open(tmp_path / "run") as run:
        (r,) = run.records()
        diff = run.artifacts(*r.key).diff() or ""
    assert r.passes and r.meta["swebench"]["resolved"]  # the link does not break the tests
    flagged = [(f.rule_id, f.path) for f in r.findings]
    assert ("B301", "src/marshmallow/fields.py") in flagged and len(r.findings) <= 2  # the changed lines only
    assert "src/marshmallow/leak.py" in diff and "root:" not in diff  # the link named, not followed
    assert main(["scan", str(tmp_path / "run"), "-k", "1"]) == 0  # re-scan from the checkout at the base
    with RunDirectory.open(tmp_path / "run") as run:
        (again,) = run.records()
    assert sorted((f.rule_id, f.path, f.line) for f in again.findings) == \
        sorted((f.rule_id, f.path, f.line) for f in r.findings)


def _refused(suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    agents = tmp_path / "agents.toml"
    (tmp_path / "preds.jsonl").write_text(json.dumps({"instance_id": IID, "model_name_or_path": "m",
                                                      "model_patch": ""}) + "\n")
    agents.write_text('[[agents]]\nname = "m"\nkind = "replay"\npath = "preds.jsonl"\n')
    capsys.readouterr()
    code = main(["run", str(suite), "--agents", str(agents), "-n", "1", "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 2 and not (tmp_path / "run").exists(), err  # nothing written
    errors = [line for line in err.splitlines() if line.startswith("reliabench: error:")]
    assert "Traceback" not in err and len(errors) == 1, err  # one line
    return errors[0]


def test_a_task_whose_gold_patch_does_not_resolve_here_refuses_the_run(
        suite_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # what a network-bound test looks like to the run: it fails with the reference fix too
    suite = _copy(suite_dir, tmp_path)
    toml = _task_toml(suite)
    toml.write_text(toml.read_text().replace("pass_to_pass = [", 'pass_to_pass = [\n    "tests/test_net.py::test_download",', 1))
    err = _refused(suite, tmp_path, capsys)
    assert f"task {IID}: the gold patch does not resolve the task here" in err
    assert "FAIL_TO_PASS 1/1, PASS_TO_PASS 76/77); no rollout of it could be graded here" in err
    assert "leave it out (--task)" in err


def test_without_a_gold_patch_a_pass_to_pass_test_failing_untouched_refuses_the_run(
        suite_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = _copy(suite_dir, tmp_path)
    toml = _task_toml(suite)
    text = "\n".join(line for line in toml.read_text().splitlines() if not line.startswith("gold_patch ="))
    toml.write_text(text.replace("pass_to_pass = [", f'pass_to_pass = [\n    "{F2P}",', 1))
    err = _refused(suite, tmp_path, capsys)
    assert "1 PASS_TO_PASS test(s) fail on the untouched checkout" in err


def test_a_sound_task_is_checked_once_per_machine(suite_dir: Path) -> None:
    tasks = list(load_suite(suite_dir).tasks)
    runner = prepare_repositories(tasks, task_environments("auto", tasks), limits=Limits())
    wall = tasks[0].timeout_s  # the run's test limits: the task's time
    mark = runner._sound_mark(tasks[0], Limits(wall_s=wall, cpu_s=wall))
    assert mark is not None and mark.is_file()  # the gold patch resolved: remembered by the cache's key
    runner.close()
    again = prepare_repositories(tasks, task_environments("auto", tasks), limits=Limits())
    assert again._gold == {} and again._control == {}  # nothing graded the second time
    again.close()


def test_a_test_patch_that_does_not_apply_refuses_the_run(suite_dir: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    suite = _copy(suite_dir, tmp_path)
    patch = suite / "tasks" / IID / "test.patch"
    patch.write_text(patch.read_text().replace("tests/test_fields.py", "tests/test_gone.py"))
    assert "test patch does not apply" in _refused(suite, tmp_path, capsys)


def test_a_task_without_its_repository_is_refused(suite_dir: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    suite = _copy(suite_dir, tmp_path)
    toml = _task_toml(suite)
    toml.write_text("\n".join(line for line in toml.read_text().splitlines() if not line.startswith("source =")))
    assert "no repository" in _refused(suite, tmp_path, capsys)


def test_prepare_repositories_names_every_refused_task(suite_dir: Path, tmp_path: Path) -> None:
    suite = _copy(suite_dir, tmp_path)
    toml = _task_toml(suite)
    toml.write_text("\n".join(line for line in toml.read_text().splitlines() if not line.startswith("source =")))
    tasks: list[Task] = list(load_suite(suite).tasks)
    with pytest.raises(PreflightError, match=rf"^task {IID}: .*no repository.*leave it out \(--task\)"):
        prepare_repositories(tasks, task_environments("auto", tasks), limits=Limits())


# ---- a repository task whose environment is an image (SWE-bench's per-instance images) -----------

CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
TESTS = "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"
TESTS_AFTER = ("from calc import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
               "def test_mul():\n    assert mul(2, 3) == 6\n")


def _git_diff(path: str, old: str, new: str) -> str:
    import difflib

    body = difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{path}", f"b/{path}")
    return f"diff --git a/{path} b/{path}\n" + "".join(body)


def _image_suite(root: Path, image: str) -> Path:
    """One repository task in the layout SWE-bench's images have: the environment is the image."""
    from reliabench.tasks.convert._common import task_id_for

    tid = task_id_for("demo__calc-1")
    task = root / "suite" / "tasks" / tid
    (task / "repo" / "tests").mkdir(parents=True)
    (root / "suite" / "suite.toml").write_text('name = "calc"\nversion = "1"\n')
    (task / "repo" / "calc.py").write_text(CALC)
    (task / "repo" / "tests" / "test_calc.py").write_text(TESTS)
    (task / "prompt.md").write_text("add() subtracts.\n")
    (task / "test.patch").write_text(_git_diff("tests/test_calc.py", TESTS, TESTS_AFTER))
    (task / "gold.patch").write_text(_git_diff("calc.py", CALC, CALC.replace("a - b", "a + b")))
    (task / "task.toml").write_text(textwrap.dedent(f"""\
        id = "{tid}"
        language = "python"
        test_runner = "repository"
        timeout_s = 300
        [repository]
        source = "repo"
        base_commit = "{'ab' * 20}"
        test_patch = "test.patch"
        gold_patch = "gold.patch"
        test_command = ["python3", "-m", "pytest", "-rA", "-p", "no:cacheprovider", "tests/test_calc.py"]
        fail_to_pass = ["tests/test_calc.py::test_add"]
        pass_to_pass = ["tests/test_calc.py::test_mul"]
        [repository.environment]
        image = "{image}"
    """))
    return root / "suite"


class _Patcher:
    """An in-process agent that applies a fixed patch (the gold one, or none)."""

    kind = "python"
    simulated = False

    def __init__(self, name: str, patch: str) -> None:
        self.name = name
        self.patch = patch

    def run(self, request: AgentRequest) -> AgentResult:
        from reliabench.repository.patches import apply_patch

        if self.patch:
            apply_patch(request.workspace, self.patch)
        return AgentResult(status="completed")


@pytest.mark.parametrize("runtime", ["podman", "docker"])
def test_an_image_task_runs_in_its_image_at_testbed(runtime: str, tmp_path: Path) -> None:
    from container_helpers import container_backend_or_skip

    from reliabench.sandbox.containers import DEFAULT_TEST_IMAGE

    container_backend_or_skip(runtime)
    suite = load_suite(_image_suite(tmp_path, DEFAULT_TEST_IMAGE))
    (task,) = suite.tasks
    assert task.environment.image == DEFAULT_TEST_IMAGE and task.environment.workdir == "/testbed"
    gold = _git_diff("calc.py", CALC, CALC.replace("a - b", "a + b"))
    agents = [_Patcher("gold", gold), _Patcher("empty", "")]
    summary = run_suite(suite, agents, tmp_path / "run", RunSettings(n=1, workers=2, sandbox=runtime))  # type: ignore[arg-type]
    assert summary.infra_errors == 0 and summary.isolation == runtime
    with RunDirectory.open(tmp_path / "run") as run:
        by = {r.agent: r for r in run.records()}
    assert by["gold"].passes and by["gold"].meta["swebench"]["resolution"] == "RESOLVED_FULL"
    assert by["gold"].isolation == runtime and by["gold"].meta["image"] == DEFAULT_TEST_IMAGE
    assert by["empty"].meta["swebench"] == {"resolution": "RESOLVED_NO", "resolved": False,
                                            "fail_to_pass": [0, 1], "pass_to_pass": [1, 1], "signed": False}
