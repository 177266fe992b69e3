"""``reliabench suites import aider-polyglot DIR`` on the vendored extract (tests/fixtures/polyglot)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from reliabench.cli import main
from reliabench.errors import InputError, UsageError
from reliabench.tasks.convert import ConvertOptions, import_suite
from reliabench.tasks.convert.aider_polyglot import COMMANDS, find_exercises, write_polyglot_suite
from reliabench.tasks.suite import Suite, load_suite

EXTRACT = Path(__file__).parents[2] / "fixtures" / "polyglot"


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Suite:
    out = tmp_path_factory.mktemp("conv") / "suite"
    result = import_suite("aider-polyglot", EXTRACT, out)
    assert (result.tasks, result.name) == (12, "aider-polyglot")
    assert result.tests == 20  # book-store's pytest tests (the command tasks count theirs by running)
    return load_suite(out)


def test_one_task_per_exercise_with_language_tags_and_command(converted: Suite) -> None:
    ids = [t.id for t in converted.tasks]
    assert ids == ["cpp-bank-account", "cpp-queen-attack", "go-bowling", "go-crypto-square", "java-bowling",
                   "java-series", "javascript-ledger", "javascript-phone-number", "python-book-store",
                   "python-go-counting", "rust-gigasecond", "rust-luhn-from"]
    for task in converted.tasks:
        language = task.id.split("-", 1)[0]
        by_design = ("starter-passes",) if task.id == "javascript-ledger" else ()  # a refactoring exercise
        assert task.language == language and task.tags == (language, "aider-polyglot", *by_design)
        assert task.solution_dir is not None
        if task.id == "python-book-store":
            assert (task.test_runner, task.test_command) == ("pytest", None)
            continue
        assert task.test_runner == "command" and task.test_command is not None
        assert task.test_command.report == COMMANDS[language].report
        assert task.test_command.adjustments == COMMANDS[language].adjustments


def test_the_aider_adjustments_are_applied(converted: Suite) -> None:
    java = (converted.task("java-series").tests_dir / "src/test/java/SeriesTest.java").read_text()
    original = (EXTRACT / "java/exercises/practice/series/src/test/java/SeriesTest.java").read_text()
    assert "@Disabled(" in original and "@Disabled(" not in java
    js = (converted.task("javascript-phone-number").tests_dir / "phone-number.spec.js").read_text()
    assert "xtest(" in (EXTRACT / "javascript/exercises/practice/phone-number/phone-number.spec.js").read_text()
    assert "xtest(" not in js
    cmd = converted.task("rust-luhn-from").test_command
    assert cmd is not None and "--include-ignored" in cmd.argv[-1]
    cpp = converted.task("cpp-queen-attack")
    assert cpp.test_command is not None and "-DEXERCISM_RUN_ALL_TESTS=1" in cpp.test_command.argv[-1]
    assert "set(exercise queen-attack)" in (cpp.tests_dir / "CMakeLists.txt").read_text()
    assert "set(exercise queen-attack)" in (cpp.workspace_dir / "CMakeLists.txt").read_text()


def test_workspace_tests_and_reference_are_where_a_run_needs_them(converted: Suite) -> None:
    def files(path: Path) -> set[str]:
        return {p.relative_to(path).as_posix() for p in path.rglob("*") if p.is_file()}

    go = converted.task("go-bowling")
    assert files(go.workspace_dir) == {"bowling.go", "go.mod"}
    assert files(go.tests_dir) == {"bowling_test.go", "cases_test.go", "go.mod"}  # editor file, harness file
    assert files(go.solution_dir or go.root) == {"bowling.go"}
    java = converted.task("java-bowling")
    assert files(java.solution_dir or java.root) == {"src/main/java/BowlingGame.java", "src/main/java/Frame.java"}
    assert not any("gradle" in f for f in files(java.workspace_dir))
    cpp = converted.task("cpp-bank-account")
    assert {"test/catch.hpp", "test/tests-main.cpp", "bank_account_test.cpp", "CMakeLists.txt"} <= files(cpp.tests_dir)
    assert "test/catch.hpp" not in files(cpp.workspace_dir)
    rust = converted.task("rust-gigasecond")
    assert files(rust.tests_dir) == {"Cargo.toml", "tests/gigasecond.rs"}
    assert files(rust.solution_dir or rust.root) == {"src/lib.rs"}
    prompt = converted.task("rust-luhn-from").prompt
    assert prompt.startswith("# Instructions") or "Luhn" in prompt
    assert "Solve this exercise by editing `src/lib.rs`." in prompt and "`Cargo.toml`" not in prompt
    appended = (EXTRACT / "rust/exercises/practice/luhn-from/.docs/instructions.append.md")
    if appended.exists():
        assert appended.read_text().strip()[:40] in prompt
    intro = EXTRACT / "cpp/exercises/practice/bank-account/.docs/introduction.md"
    assert intro.read_text().strip()[:40] in converted.task("cpp-bank-account").prompt


def test_a_python_starter_that_lacks_imported_names_becomes_a_command_task(converted: Suite) -> None:
    task = converted.task("python-go-counting")
    assert task.test_command is not None and task.test_command.argv[:3] == ("python3", "-m", "pytest")
    assert "conftest.py" in task.test_command.tamper
    assert "cannot be collected on it" in task.test_command.adjustments[0]


def test_the_cli_converts_a_folder_and_refuses_a_file(tmp_path: Path) -> None:
    assert main(["suites", "import", "aider-polyglot", str(EXTRACT), "-o", str(tmp_path / "s"), "--limit", "2"]) == 0
    assert [t.id for t in load_suite(tmp_path / "s").tasks] == ["cpp-bank-account", "cpp-queen-attack"]
    with pytest.raises(UsageError, match="not a folder"):
        import_suite("aider-polyglot", EXTRACT / "README.md", tmp_path / "x")
    with pytest.raises(UsageError, match="give the SOURCE"):
        import_suite("aider-polyglot", None, tmp_path / "y")


def test_a_selection_of_languages_or_exercises(tmp_path: Path) -> None:
    assert [e.task_id for e in find_exercises(EXTRACT, ["go", "rust-luhn-from"])] == [
        "go-bowling", "go-crypto-square", "rust-luhn-from"]
    with pytest.raises(UsageError, match="no exercises"):
        find_exercises(tmp_path)
    result = write_polyglot_suite(EXTRACT, tmp_path / "s", ConvertOptions(name="mine"), only=["java"])
    assert (result.tasks, result.name) == (2, "mine")


def _copy_exercise(tmp_path: Path, lang: str, name: str) -> Path:
    root = tmp_path / "bench"
    shutil.copytree(EXTRACT / lang / "exercises" / "practice" / name, root / lang / "exercises" / "practice" / name)
    return root


def test_a_malformed_config_is_one_line_with_the_file(tmp_path: Path) -> None:
    root = _copy_exercise(tmp_path, "go", "bowling")
    config = root / "go/exercises/practice/bowling/.meta/config.json"
    config.write_text('{"files": {"solution": ["bowling.go"],\n "test": "bowling_test.go", "example": []}}')
    with pytest.raises(InputError, match=r"config\.json: files\.test: expected a list of relative paths"):
        find_exercises(root)
    config.write_text('{"files": {"solution": ["../../../etc/passwd"], "test": ["x"], "example": ["y"]}}')
    with pytest.raises(InputError, match=r"files\.solution: expected a list of relative paths"):
        find_exercises(root)
    config.write_text("{not json")
    with pytest.raises(InputError, match=r"config\.json:1: not JSON"):
        find_exercises(root)
    config.write_text(json.dumps({"files": {"solution": ["bowling.go"], "test": ["gone_test.go"],
                                            "example": [".meta/example.go"]}}))
    with pytest.raises(InputError, match=r"lists 'gone_test\.go', which the exercise does not have"):
        write_polyglot_suite(root, tmp_path / "out", ConvertOptions())


def test_links_in_a_download_are_never_followed(tmp_path: Path) -> None:
    root = _copy_exercise(tmp_path, "go", "crypto-square")
    ex = root / "go/exercises/practice/crypto-square"
    secret = tmp_path / "secret.txt"
    secret.write_text("host secret")
    os.symlink(secret, ex / "notes.txt")
    write_polyglot_suite(root, tmp_path / "out", ConvertOptions())
    task = load_suite(tmp_path / "out").tasks[0]
    assert not (task.workspace_dir / "notes.txt").exists()
    assert "host secret" not in "".join(p.read_text() for p in task.root.rglob("*") if p.is_file())


def test_tests_aider_leaves_skipped_are_declared_skips(tmp_path: Path) -> None:
    root = _copy_exercise(tmp_path, "javascript", "phone-number")
    spec = root / "javascript/exercises/practice/phone-number/phone-number.spec.js"
    text = spec.read_text()
    assert "    test('cleans the number', () => {" in text
    spec.write_text(text.replace("    test('cleans the number', () => {",
                                 "    test.skip(\n      'cleans the number',\n      () => {", 1)
                    .replace("xtest('cleans numbers with dots'", "xit('cleans \\'numbers\\' with dots'", 1))
    shutil.copytree(EXTRACT / "java/exercises/practice/series", root / "java/exercises/practice/series")
    java = root / "java/exercises/practice/series/src/test/java/SeriesTest.java"
    java.write_text(java.read_text().replace("    @Test\n    public void slicesOfOneFromOne()",
                                             "    @Disabled\n    @Test\n    public void slicesOfOneFromOne()", 1))
    write_polyglot_suite(root, tmp_path / "out", ConvertOptions())
    suite = load_suite(tmp_path / "out")
    js = suite.task("javascript-phone-number")
    assert js.allowed_skips == (
        "phone-number.spec.js::Phone Number > Cleanup user-entered phone numbers > cleans the number",
        "phone-number.spec.js::Phone Number > Cleanup user-entered phone numbers > cleans 'numbers' with dots")
    assert js.test_command is not None and "declared in allowed_skips" in js.test_command.adjustments[-1]
    assert suite.task("java-series").allowed_skips == ("SeriesTest::slicesOfOneFromOne()",)


def test_rust_tests_build_with_the_references_manifest(tmp_path: Path) -> None:
    root = _copy_exercise(tmp_path, "rust", "luhn-from")
    manifest = '[package]\nedition = "2021"\nname = "luhn-from"\nversion = "0.0.0"\n\n[dependencies]\ntime = "0.3"\n'
    (root / "rust/exercises/practice/luhn-from/.meta/Cargo-example.toml").write_text(manifest)
    write_polyglot_suite(root, tmp_path / "out", ConvertOptions())
    task = load_suite(tmp_path / "out").tasks[0]
    assert (task.tests_dir / "Cargo.toml").read_text() == manifest
    assert (task.workspace_dir / "Cargo.toml").read_text() != manifest
    assert task.test_command is not None and "Cargo-example.toml" in task.test_command.adjustments[-1]
