"""`suites import harbor DIR`: Harbor / Terminal-Bench 2 task folders -> container tasks with a test command."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from reliabench.errors import InputError
from reliabench.files.toml import tomllib
from reliabench.records import TestOutcome
from reliabench.tasks.convert import ConvertOptions, get_converter, import_suite
from reliabench.tasks.convert.harbor import PLACES_LAYER, HarborConverter, harbor_outcomes, read_harbor_task
from reliabench.tasks.suite import load_suite

FIXTURES = Path(__file__).parents[2] / "fixtures" / "harbor"


def _convert(src: Path, out: Path) -> dict[str, dict[str, object]]:
    result = HarborConverter().convert(src, out, ConvertOptions())
    assert result.tasks == len(list((out / "tasks").iterdir()))
    return {p.name: tomllib.loads((p / "task.toml").read_text()) for p in (out / "tasks").iterdir()}


def test_the_registry_has_it() -> None:
    assert isinstance(get_converter("harbor"), HarborConverter)


def test_layout_becomes_environment_and_test_command(tmp_path: Path) -> None:
    tasks = _convert(FIXTURES, tmp_path / "s")
    assert sorted(tasks) == ["broken-verifier", "fix-sum", "hello-file"]
    hello = tasks["hello-file"]
    assert hello["test_runner"] == "command" and hello["timeout_s"] == 120.0
    assert hello["environment"] == {
        "dockerfile": "environment/Dockerfile",
        "tests": "same",
        "workdir": "/app",
        "user": "root",
        "writable_root": True,
    }
    assert hello["test_command"] == {
        "argv": ["bash", "/tests/test.sh"],
        "report": "harbor-reward",
        "report_file": "reward.txt",
        "cwd": ".",
        "timeout_s": 60.0,
        "tests_at": "/tests",
        "report_dir": "/logs/verifier",
        "oracle": "oracle/solve.sh",
    }
    assert hello["harbor"] == {
        "tests_at": "/tests",
        "verifier_logs": "/logs/verifier",
        "reward_files": ["reward.txt", "reward.json"],
        "oracle": "oracle/solve.sh",
    }
    assert set(hello["tags"]) >= {"harbor", "shell", "difficulty:easy", "category:file-operations"}  # type: ignore[arg-type]
    out = tmp_path / "s" / "tasks"
    assert (out / "hello-file" / "prompt.md").read_text().startswith("Create a file")
    assert (out / "hello-file" / "oracle" / "solve.sh").is_file()
    assert (out / "hello-file" / "environment" / "Dockerfile").is_file()
    # CTRF where the tests write one; verifier env kept; the image's own files come along
    fix = tasks["fix-sum"]
    assert fix["test_command"]["report"] == "ctrf" and fix["test_command"]["env"] == {  # type: ignore[index]
        "PYTHONDONTWRITEBYTECODE": "1"
    }
    assert (out / "fix-sum" / "environment" / "total.py").is_file()
    # what the Dockerfile COPYs into its WORKDIR is the agent's starter (the workspace is shown there)
    assert (out / "fix-sum" / "workspace" / "total.py").read_text() == "def total(xs):\n    return sum(xs[:-1])\n"
    assert not any((out / "hello-file" / "workspace").iterdir())
    assert (out / "fix-sum" / "tests" / "test_outputs.py").is_file()
    # a prebuilt image instead of a Dockerfile: a Dockerfile FROM it with the layer of Harbor's places
    broken = tasks["broken-verifier"]
    assert broken["harbor"]["image"] == "reliabench/python3-pytest:bookworm"  # type: ignore[index]
    assert broken["environment"]["dockerfile"] == "environment/Dockerfile"  # type: ignore[index]
    made = (out / "broken-verifier" / "environment" / "Dockerfile").read_text()
    assert made.startswith("FROM reliabench/python3-pytest:bookworm\n") and PLACES_LAYER in made


def test_one_task_folder_converts_alone(tmp_path: Path) -> None:
    assert list(_convert(FIXTURES / "fix-sum", tmp_path / "s")) == ["fix-sum"]


@pytest.mark.parametrize(
    ("remove", "message"),
    [
        ("tests/test.sh", "the verifier's entry point"),
        ("instruction.md", "what the agent is asked to do"),
        ("environment/Dockerfile", "names no environment.docker_image"),
    ],
)
def test_missing_parts_are_refused_with_the_file(tmp_path: Path, remove: str, message: str) -> None:
    src = tmp_path / "t"
    shutil.copytree(FIXTURES / "hello-file", src)
    (src / remove).unlink()
    with pytest.raises(InputError, match=message) as info:
        read_harbor_task(src)
    assert remove.split("/")[-1] in str(info.value)
    assert not (tmp_path / "out").exists()


def test_bad_task_toml(tmp_path: Path) -> None:
    src = tmp_path / "t"
    shutil.copytree(FIXTURES / "hello-file", src)
    (src / "task.toml").write_text("[agent]\ntimeout_sec = -1\n")
    with pytest.raises(InputError, match=r"agent\.timeout_sec: expected seconds > 0"):
        read_harbor_task(src)


def test_a_link_in_a_task_is_refused(tmp_path: Path) -> None:
    src = tmp_path / "t"
    shutil.copytree(FIXTURES / "hello-file", src)
    (src / "tests" / "leak").symlink_to("/etc/hostname")
    with pytest.raises(InputError, match="a link or special file"):
        HarborConverter().convert(src, tmp_path / "out", ConvertOptions())


def test_outcomes_from_reward_and_ctrf(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    assert harbor_outcomes(logs) == (TestOutcome("reward", "failed"),)  # nothing written
    (logs / "reward.txt").write_text("0.5\n")
    assert harbor_outcomes(logs) == (TestOutcome("reward", "failed"),)
    (logs / "reward.txt").write_text("not-a-number\n")
    assert harbor_outcomes(logs) == (TestOutcome("reward", "failed"),)
    (logs / "reward.txt").unlink()
    (logs / "reward.json").write_text('{"reward": 1.0}')
    assert harbor_outcomes(logs) == (TestOutcome("reward", "passed"),)
    (logs / "ctrf.json").write_text(
        json.dumps(
            {
                "results": {
                    "tests": [
                        {"name": "t::a", "status": "passed"},
                        {"name": "t::b", "status": "failed"},
                        {"name": "t::c", "status": "skipped"},
                    ]
                }
            }
        )
    )
    assert harbor_outcomes(logs) == (
        TestOutcome("t::a", "passed"),
        TestOutcome("t::b", "failed"),
        TestOutcome("t::c", "skipped"),
    )


def test_import_suite_loads_the_result(tmp_path: Path) -> None:
    result = import_suite("harbor", FIXTURES, tmp_path / "s")
    assert result.tasks == 3
    assert result.notes == ("broken-verifier: a prebuilt image (reliabench/python3-pytest:bookworm): what it has "
                            "in /app is hidden by the workspace",)
    suite = load_suite(tmp_path / "s")
    fix = suite.task("fix-sum").test_command
    assert fix is not None and (fix.tests_at, fix.report_dir, fix.oracle) == ("/tests", "/logs/verifier",
                                                                              "oracle/solve.sh")
    assert suite.task("fix-sum").environment.tests == "same"


def test_dockerfile_copies_into_the_workdir_are_followed(tmp_path: Path) -> None:
    src = tmp_path / "t"
    shutil.copytree(FIXTURES / "hello-file", src)
    (src / "environment" / "data").mkdir()
    (src / "environment" / "data" / "in.csv").write_text("a,b\n")
    (src / "environment" / "run.sh").write_text("echo\n")
    (src / "environment" / "Dockerfile").write_text(
        "FROM reliabench/python3-pytest:bookworm\nWORKDIR /app\nCOPY data ./data\nCOPY run.sh data/ /app/x/\n"
        "COPY run.sh /opt/elsewhere.sh\nADD https://example.org/f /app/f\nWORKDIR /app\n")
    task = read_harbor_task(src)
    assert {k: v.relative_to(src).as_posix() for k, v in task.workdir_files.items()} == {
        "data/in.csv": "environment/data/in.csv", "x/run.sh": "environment/run.sh",
        "x/in.csv": "environment/data/in.csv"}
    assert task.hidden_workdir is not None and "https://example.org/f" in task.hidden_workdir
    (src / "tests" / "test.sh").write_text("echo 1 > /logs/verifier/reward.json\n")
    assert read_harbor_task(src).reward_file == "reward.json"
