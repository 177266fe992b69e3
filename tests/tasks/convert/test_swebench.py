"""`suites import swebench INSTANCES.jsonl --repos DIR`: SWE-bench rows -> repository tasks."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from sandbox_helpers import skip_or_fail_in_ci

from reliabench.cli import main
from reliabench.errors import InputError
from reliabench.repository.patches import git_env
from reliabench.tasks.convert import ConvertOptions, import_suite
from reliabench.tasks.convert.swebench import command_with_directives, find_repository, load_user_specs
from reliabench.tasks.convert.swebench_specs import SPECS
from reliabench.tasks.suite import load_suite

# shared/ lies beside the clone (CI) or beside the worktrees' folder (a developer's worktree)
SHARED = next(
    (
        p / "shared" / "data" / "swe-bench-lite-dev"
        for p in Path(__file__).resolve().parents[4:6]
        if (p / "shared" / "data" / "swe-bench-lite-dev").is_dir()
    ),
    Path(__file__).resolve().parents[4] / "shared" / "data" / "swe-bench-lite-dev",
)
FIXTURE = Path(__file__).parents[2] / "fixtures" / "repository" / "marshmallow-1359"


def _row() -> dict[str, object]:
    return json.loads((FIXTURE / "instance.json").read_text())


def _write(tmp: Path, rows: list[dict[str, object]]) -> Path:
    path = tmp / "instances.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_all_31_shared_instances_convert(tmp_path: Path) -> None:
    if not (SHARED / "instances.jsonl").is_file():
        skip_or_fail_in_ci(f"{SHARED} is not here (CI has shared/ beside the clone)")
    result = import_suite(
        "swebench", SHARED / "instances.jsonl", tmp_path / "s", ConvertOptions(repos=SHARED / "repos")
    )
    assert result.tasks == 31
    suite = load_suite(tmp_path / "s")
    with_repo = [t for t in suite.tasks if t.repository is not None and t.repository.source is not None]
    assert len(with_repo) == 21 and len(result.notes) == 10
    sq = suite.task("sqlfluff__sqlfluff-1625").repository
    assert sq is not None and sq.test_command == ("pytest", "-rA", "test/cli/commands_test.py")
    assert sq.environment.requested_python == "3.9" and sq.environment.python == "3.11"
    dj = suite.task("django__django-15781").repository
    assert dj is not None and dj.log_parser == "django" and dj.test_command[0] == "./tests/runtests.py"
    assert not any("/" in a for a in dj.test_command[6:])  # dotted module names, as SWE-bench runs Django


def test_cli_with_repositories_as_tarball_git_and_folder(tmp_path: Path) -> None:
    row = _row()
    repos = tmp_path / "repos"
    repos.mkdir()
    # a git mirror named owner__name.git holding the base commit (its id differs: a new repository)
    tree = tmp_path / "tree"
    tree.mkdir()
    subprocess.run(["tar", "xzf", str(FIXTURE / "repo.tar.gz"), "-C", str(tree)], check=True)
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run(["git", *args], cwd=tree, env=git_env(), check=True, capture_output=True)
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=tree, env=git_env(), capture_output=True, text=True, check=True
    ).stdout.strip()
    shutil.move(str(tree), repos / "marshmallow-code__marshmallow.git")
    rows = [dict(row, base_commit=commit)]
    code = main(
        [
            "suites",
            "import",
            "swebench",
            str(_write(tmp_path, rows)),
            "-o",
            str(tmp_path / "s"),
            "--repos",
            str(repos),
        ]
    )
    assert code in (0, None)
    task = load_suite(tmp_path / "s").tasks[0]
    assert task.repository is not None and task.repository.source is not None
    assert task.repository.source.name == "repo.tar.gz" and task.prompt == row["problem_statement"]
    assert (
        find_repository(repos, "other-id", "marshmallow-code/marshmallow")
        == repos / "marshmallow-code__marshmallow.git"
    )


def test_unknown_repo_version_is_refused_in_one_line_unless_given(tmp_path: Path) -> None:
    rows = [_row(), dict(_row(), instance_id="x__y-1", repo="x/y", version="9.9")]
    src = _write(tmp_path, rows)
    with pytest.raises(InputError, match=r"instances.jsonl:2: .*x/y 9.9: no environment spec") as info:
        import_suite("swebench", src, tmp_path / "s")
    assert "\n" not in str(info.value)
    assert not (tmp_path / "s").exists() or not any((tmp_path / "s").iterdir())  # nothing half-written
    specs = tmp_path / "specs.toml"
    specs.write_text(
        '[specs."x/y"."9.9"]\npython = "3.11"\npackages = ["pytest==7.4.4"]\n'
        'install = ["python", "-m", "pip", "install", "--no-deps", "-e", "."]\ntest_cmd = ["pytest", "-rA"]\n'
    )
    result = import_suite("swebench", src, tmp_path / "s2", ConvertOptions(specs=specs))
    assert result.tasks == 2
    assert load_user_specs(specs)[("x/y", "9.9")].test_cmd == ("pytest", "-rA")


def test_a_spec_can_name_each_instances_image(tmp_path: Path) -> None:
    # SWE-bench's per-instance images on a machine with docker: the image instead of a venv
    specs = tmp_path / "specs.toml"
    specs.write_text(
        '[specs."marshmallow-code/marshmallow"."3.0"]\n'
        'image = "swebench/sweb.eval.x86_64.{image_key}:latest"\n'
        'test_cmd = ["bash", "-c", \'source /opt/miniconda3/bin/activate testbed && pytest -rA "$@"\', "bash"]\n'
    )
    import_suite("swebench", _write(tmp_path, [_row()]), tmp_path / "s", ConvertOptions(specs=specs))
    (task,) = load_suite(tmp_path / "s").tasks
    ref = "swebench/sweb.eval.x86_64.marshmallow-code_1776_marshmallow-1359:latest"
    assert task.repository is not None and task.repository.environment.image == ref
    assert task.environment.image == ref and task.environment.workdir == "/testbed"  # a container task
    assert task.repository.test_command[:4] == ("bash", "-c", 'source /opt/miniconda3/bin/activate testbed && '
                                                              'pytest -rA "$@"', "bash")
    assert task.repository.test_command[4:] == ("tests/test_fields.py",)  # the test files become "$@"
    specs.write_text('[specs."x/y"."1"]\nimage = "img:{nope}"\ntest_cmd = ["pytest"]\n')
    with pytest.raises(InputError, match=r"specs.'x/y'.'1'.image: expected an image reference"):
        load_user_specs(specs)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"FAIL_TO_PASS": "not json"}, "FAIL_TO_PASS"),
        ({"problem_statement": ""}, "problem_statement"),
        ({"test_patch": "--- a/../../x\n+++ b/../../x\n"}, "test_patch"),
    ],
)
def test_bad_rows_name_file_line_field(tmp_path: Path, change: dict[str, object], field: str) -> None:
    src = _write(tmp_path, [dict(_row(), **change)])
    with pytest.raises(InputError, match=rf"instances.jsonl:1: {field}"):
        import_suite("swebench", src, tmp_path / "s")


def test_directives_follow_swebench() -> None:
    spec = SPECS[("django/django", "4.2")]
    patch = (
        "diff --git a/tests/forms/test_x.py b/tests/forms/test_x.py\ndiff --git a/docs/a.txt b/docs/a.txt\n"
    )
    assert command_with_directives(spec, patch)[-1] == "forms.test_x"
    spec = SPECS[("pylint-dev/astroid", "2.14")]
    assert command_with_directives(spec, patch) == ["pytest", "-rA", "tests/forms/test_x.py"]
