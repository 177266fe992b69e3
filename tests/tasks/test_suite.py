"""The suite format (reliabench.tasks.suite): loading, every problem reported at once, one test per message.

The bundled suite itself is checked in tests/test_bundled_suite.py; stdin/stdout task options in
tests/hidden_tests/test_stdio.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reliabench.errors import SuiteError, UsageError
from reliabench.tasks.suite import bundled_suites, load_suite, materialize, resolve_suite


def make_task(root: Path, tid: str = "adder", toml: str | None = None) -> Path:
    t = root / "tasks" / tid
    (t / "workspace").mkdir(parents=True)
    (t / "tests").mkdir()
    (t / "solution").mkdir()
    (t / "task.toml").write_text(toml if toml is not None else f'id = "{tid}"\ntimeout_s = 5\ntags = ["x"]\n')
    (t / "prompt.md").write_text("Write add(a, b).\n")
    (t / "workspace" / "adder.py").write_text("def add(a, b):\n    raise NotImplementedError\n")
    (t / "solution" / "adder.py").write_text("def add(a, b):\n    return a + b\n")
    (t / "tests" / "test_adder.py").write_text("from adder import add\n\ndef test_add():\n    assert add(1, 2) == 3\n")
    return t


def make_suite(root: Path, suite_toml: str = 'name = "mini"\nversion = "0.1"\n') -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "suite.toml").write_text(suite_toml)
    make_task(root)
    return root


def problems(path: Path) -> tuple[str, ...]:
    with pytest.raises(SuiteError) as info:
        load_suite(path)
    return info.value.problems


def test_a_valid_suite(tmp_path: Path) -> None:
    root = make_suite(tmp_path / "s", 'name = "mini"\nversion = "0.1"\ndescription = "tiny"\n')
    suite = load_suite(root)
    assert (suite.name, suite.version, suite.description) == ("mini", "0.1", "tiny")
    (task,) = suite.tasks
    assert (task.id, task.language, task.timeout_s, task.tags, task.test_runner) == ("adder", "python", 5.0,
                                                                                    ("x",), "pytest")
    assert task.prompt == "Write add(a, b).\n"
    assert task.solution_dir == root / "tasks" / "adder" / "solution" and task.feedback_dir is None
    assert suite.task("adder") is task
    with pytest.raises(UsageError, match="suite 'mini' has no task 'nope'"):
        suite.task("nope")


def test_the_content_hash_follows_the_files(tmp_path: Path) -> None:
    root = make_suite(tmp_path / "s")
    first = load_suite(root).content_hash
    assert load_suite(root).content_hash == first
    (root / "tasks" / "adder" / "tests" / "test_adder.py").write_text("def test_x():\n    pass\n")
    assert load_suite(root).content_hash != first


def test_not_a_directory(tmp_path: Path) -> None:
    assert problems(tmp_path / "missing") == (
        f"{tmp_path / 'missing'}: not a directory (expected a suite with suite.toml and tasks/)",)


def test_suite_toml_problems(tmp_path: Path) -> None:
    root = make_suite(tmp_path / "s", 'name = 3\nversion = "1"\n')
    assert problems(root) == (f"{root / 'suite.toml'}: name: expected a string",)
    (root / "suite.toml").write_text("name = \n")
    (msg,) = problems(root)
    assert msg.startswith(f"{root / 'suite.toml'}: invalid TOML (")
    (root / "suite.toml").unlink()
    assert problems(root) == (f"{root / 'suite.toml'}: missing file",)


def test_a_suite_toml_without_name_or_version_is_a_problem_not_a_traceback(tmp_path: Path) -> None:
    root = make_suite(tmp_path / "s", 'description = "no name"\n')
    assert problems(root) == (f"{root / 'suite.toml'}: name: expected a string",
                              f"{root / 'suite.toml'}: version: expected a string")
    (root / "suite.toml").write_text("")
    assert len(problems(root)) == 2


def test_tasks_directory_problems(tmp_path: Path) -> None:
    root = tmp_path / "s"
    root.mkdir()
    (root / "suite.toml").write_text('name = "a"\nversion = "1"\n')
    assert problems(root) == (f"{root / 'tasks'}: missing directory",)
    (root / "tasks").mkdir()
    (root / "tasks" / "__pycache__").mkdir()  # ignored
    assert problems(root) == (f"{root / 'tasks'}: no tasks",)


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        ('id = "other"\n', "task.toml: id: expected 'adder' (the folder name), got 'other'"),
        ('id = "adder"\nlanguage = "rust"\n', "task.toml: language: only 'python' is supported, got 'rust'"),
        ('id = "adder"\ntimeout_s = 0\n', "task.toml: timeout_s: expected a number of seconds in (0, 604800], got 0"),
        ('id = "adder"\ntimeout_s = true\n', "got True"),
        ('id = "adder"\ntimeout_s = nan\n', "got nan"),
        ('id = "adder"\ntags = "x"\n', "task.toml: tags: expected a list of strings"),
        ('id = "adder"\ntest_runner = "nose"\n',
         "task.toml: test_runner: expected one of 'pytest', 'plain', 'stdio', 'repository', 'command', got 'nose'"),
    ],
    ids=["id", "language", "timeout", "timeout-bool", "timeout-nan", "tags", "test-runner"],
)
def test_task_toml_fields(tmp_path: Path, toml: str, expected: str) -> None:
    root = make_suite(tmp_path / "s")
    (root / "tasks" / "adder" / "task.toml").write_text(toml)
    (msg,) = problems(root)
    assert msg.startswith(str(root / "tasks" / "adder")) and msg.endswith(expected)


def test_missing_parts_of_a_task_are_all_listed(tmp_path: Path) -> None:
    root = make_suite(tmp_path / "s")
    t = root / "tasks" / "adder"
    (t / "prompt.md").unlink()
    (t / "task.toml").unlink()
    for f in (t / "tests").iterdir():
        f.unlink()
    assert problems(root) == (
        f"{t / 'task.toml'}: missing file",
        f"{t / 'prompt.md'}: missing file (what the agent is asked to do)",
        f"{t / 'tests'}: no test_*.py files (hidden tests)",
    )
    (t / "tests").rmdir()
    (t / "workspace" / "adder.py").unlink()
    (t / "workspace").rmdir()
    assert f"{t / 'workspace'}: missing directory" in problems(root)
    assert f"{t / 'tests'}: missing directory" in problems(root)


def test_problems_of_several_tasks_are_reported_together(tmp_path: Path) -> None:
    root = make_suite(tmp_path / "s")
    make_task(root, "bad1", 'id = "wrong"\n')
    make_task(root, "bad2", 'id = "bad2"\nlanguage = "go"\n')
    assert [p.split(": ", 1)[1] for p in problems(root)] == [
        "id: expected 'bad1' (the folder name), got 'wrong'",
        "language: only 'python' is supported, got 'go'",
    ]


def test_variants(tmp_path: Path) -> None:
    root = make_suite(tmp_path / "s")
    v = root / "tasks" / "adder" / "variants" / "evil"
    v.mkdir(parents=True)
    (v / "variant.toml").write_text('kind = "insecure"\ncwe = [78]\ncaught_by = ["scanner"]\ndescription = "d"\n')
    (variant,) = load_suite(root).tasks[0].variants
    assert (variant.name, variant.kind, variant.cwe, variant.caught_by, variant.description, variant.dir) == (
        "evil", "insecure", (78,), ("scanner",), "d", v)
    (v / "variant.toml").write_text('cwe = ["78"]\n')
    assert problems(root) == (f"{v / 'variant.toml'}: cwe: expected a list of integers",)
    (v / "variant.toml").write_text('caught_by = ["reviewer"]\n')
    assert problems(root) == (f"{v / 'variant.toml'}: caught_by: expected a list of 'scanner', 'security_test'",)
    (v / "variant.toml").unlink()
    assert problems(root) == (f"{v / 'variant.toml'}: missing file",)


def test_resolve_suite_takes_a_path_or_a_bundled_name(tmp_path: Path) -> None:
    assert "py30" in bundled_suites()
    assert resolve_suite("py30").name == "py30"
    root = make_suite(tmp_path / "py30")  # a path wins over the bundled name
    assert resolve_suite(root).name == "mini"
    with pytest.raises(SuiteError, match="not a directory"):
        resolve_suite(tmp_path / "nope")


def test_materialize_lays_directories_over_each_other(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    (a / "pkg").mkdir(parents=True)
    b.mkdir()
    (a / "x.py").write_text("a")
    (a / "pkg" / "y.py").write_text("a")
    (b / "x.py").write_text("b")
    (a / "__pycache__").mkdir()
    (a / "__pycache__" / "x.pyc").write_text("stale")
    materialize(tmp_path / "dest", [a, b])
    dest = tmp_path / "dest"
    assert (dest / "x.py").read_text() == "b" and (dest / "pkg" / "y.py").read_text() == "a"
    assert not (dest / "__pycache__").exists()


def test_allowed_skips_are_read_in_order(tmp_path: Path) -> None:
    root = make_suite(tmp_path / "s")
    (root / "tasks" / "adder" / "task.toml").write_text(
        'id = "adder"\nallowed_skips = ["test_adder.py::test_b", "test_adder.py::C::test_a[1]"]\n')
    (task,) = load_suite(root).tasks
    assert task.allowed_skips == ("test_adder.py::test_b", "test_adder.py::C::test_a[1]")
    (root / "tasks" / "adder" / "task.toml").write_text('id = "adder"\n')
    assert load_suite(root).tasks[0].allowed_skips == ()  # no skip counts unless declared


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ('"test_adder.py::test_b"', ": allowed_skips: expected a list of test ids (\"test_x.py::test_y\"), "
                                    "got 'test_adder.py::test_b'"),
        ('[3]', ": allowed_skips[0]: expected a test id \"FILE::NAME\" (as `reliabench validate` names it), "
                "got 3"),
        ('["test_adder.py"]', ": allowed_skips[0]: expected a test id \"FILE::NAME\" (as `reliabench validate` "
                              "names it), got 'test_adder.py'"),
        ('["test_adder.py::"]', ": allowed_skips[0]: expected a test id \"FILE::NAME\" (as `reliabench "
                                "validate` names it), got 'test_adder.py::'"),
        ('["a.py::t", "a.py::t"]', ": allowed_skips[1]: 'a.py::t' is listed twice"),
    ],
    ids=["not-a-list", "not-a-string", "no-test-name", "empty-test-name", "twice"],
)
def test_allowed_skips_problems_name_file_and_line(tmp_path: Path, value: str, expected: str) -> None:
    root = make_suite(tmp_path / "s")
    toml = root / "tasks" / "adder" / "task.toml"
    toml.write_text(f'id = "adder"\ntimeout_s = 5\n\nallowed_skips = {value}\n')
    (msg,) = problems(root)
    assert msg == f"{toml}:4{expected}"


def test_a_stdio_task_declares_no_skips(tmp_path: Path) -> None:
    root = make_suite(tmp_path / "s")
    t = root / "tasks" / "adder"
    (t / "tests" / "test_adder.py").unlink()
    (t / "tests" / "one.in").write_text("1\n")
    (t / "tests" / "one.out").write_text("1\n")
    (t / "task.toml").write_text('id = "adder"\ntest_runner = "stdio"\nallowed_skips = ["x.py::y"]\n')
    (msg,) = problems(root)
    assert msg == f"{t / 'task.toml'}:3: allowed_skips: a stdio task has no skips (its cases pass or fail)"
