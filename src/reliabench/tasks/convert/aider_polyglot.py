"""The Aider polyglot benchmark (225 Exercism exercises in six languages) as a reliabench suite.

``reliabench suites import aider-polyglot DIR -o OUT`` reads a checkout of
github.com/Aider-AI/polyglot-benchmark (``<language>/exercises/practice/<exercise>/``) and
writes one task per exercise, ``<language>-<exercise>``:

* ``prompt.md``: ``.docs/introduction.md`` (where there is one), ``.docs/instructions.md`` and
  ``.docs/instructions.append.md``, as Aider's harness concatenates them, then one paragraph
  naming the files to edit;
* ``workspace/``: the exercise as a student gets it, without the tests, ``.meta``, ``.docs``
  and the other Exercism folders (``.approaches``, ``.articles``), and without Gradle (it
  cannot run offline);
* ``tests/``: the files ``.meta/config.json`` lists as ``test`` and ``editor``, every other
  test file of the exercise (``*_test.go``, Rust's ``tests/``, C++'s ``test/`` with Catch2),
  and the files that decide how the tests build (``go.mod``, ``Cargo.toml``,
  ``CMakeLists.txt``, ``package.json``, ``babel.config.js``): laid over the agent's files when
  the tests run, so no edit of them changes how the tests run (Aider's harness does not give
  those files to the model either);
* ``solution/``: the reference (``.meta/example*``, ``.meta/proof.ci.js``,
  ``.meta/src/reference/java/*``) at the paths of the solution files;
* ``task.toml``: ``language``, ``tags = [language, "aider-polyglot"]``, and the test command
  and report format of the language (:data:`COMMANDS`): Go ``go test -json``, Rust ``cargo
  test`` text, Java the JUnit console launcher's XML, JavaScript jest's JSON, C++ Catch2's
  JUnit XML; Python exercises are ordinary pytest tasks (reliabench's own plugin);
* the adjustments Aider's harness makes, applied and listed in ``task.toml``
  (``test_command.adjustments``): Java ``@Disabled`` stripped from the tests, JavaScript
  ``xtest(`` -> ``test(``, Rust ``--include-ignored``, C++ ``-DEXERCISM_RUN_ALL_TESTS=1``;
* the refactoring exercises, whose starter is working code to improve (:data:`STARTER_PASSES`),
  are tagged ``starter-passes``: ``reliabench validate`` notes that their starter passes
  instead of calling it a problem.

The toolchains the commands need come from ``make polyglot`` (docs/polyglot.md).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Final

from reliabench.errors import InputError, UsageError
from reliabench.files.untrusted import file_kind, read_file, walk_tree
from reliabench.tasks.convert import ConversionResult, ConvertOptions
from reliabench.tasks.convert._common import task_id_for, toml_value, write_suite
from reliabench.tasks.test_command import TestCommand

__all__ = [
    "AIDER_TEST_COMMANDS",
    "COMMANDS",
    "LANGUAGES",
    "STARTER_PASSES",
    "AiderPolyglotConverter",
    "Exercise",
    "PolyglotTask",
    "aider_test_command",
    "build_task",
    "find_exercises",
    "write_polyglot_suite",
]

LANGUAGES: Final = ("cpp", "go", "java", "javascript", "python", "rust")
STARTER_PASSES: Final = frozenset({"go-ledger", "go-markdown", "java-ledger", "java-tree-building",
                                   "javascript-ledger"})
"""Refactoring exercises: the starter is working code to improve, so it passes its tests by design."""
_DROPPED_DIRS: Final = (".meta", ".docs", ".approaches", ".articles", "gradle")
_DROPPED_FILES: Final = ("gradlew", "gradlew.bat", "build.gradle")
_FILE_BYTES: Final = 16 << 20
_TIMEOUT_S: Final = 600.0
"""The task's time (agent phase); the test command has Aider's 180 s."""
_TEST_TIMEOUT_S: Final = 180.0

_JAVA_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xss8m -Xmx768m -XX:ReservedCodeCacheSize=64m " \
            "-XX:CompressedClassSpaceSize=128m"
_JAVA = (
    'find src -name "*.java" > {scratch}/sources.txt && '
    "javac " + " ".join(f"-J{o}" for o in _JAVA_JVM.split()) + " -encoding UTF-8 -nowarn "
    '-d {scratch}/classes -cp "$JUNIT_CLASSPATH" @{scratch}/sources.txt && '
    "java " + _JAVA_JVM + ' -jar "$JUNIT_CONSOLE" --disable-banner --details=none '
    '--class-path "{scratch}/classes:$ASSERTJ_JAR" --scan-classpath --reports-dir {report_dir}'
)


@dataclass(frozen=True, slots=True)
class _Command:
    argv: tuple[str, ...]
    report: str
    report_file: str
    adjustments: tuple[str, ...]
    ignore: tuple[str, ...] = ()
    tamper: tuple[str, ...] = ()


COMMANDS: Final[Mapping[str, _Command]] = {
    "go": _Command(
        ("sh", "-c", "go test -json ./... > {report_dir}/go-test.jsonl"), "go-test-json", "go-test.jsonl",
        ("go test -json ./... (Aider runs go test ./...): the same tests, one JSON event per test",),
        tamper=("go.work", "vendor")),
    "rust": _Command(
        ("sh", "-c", "cargo test --offline --no-fail-fast -- --include-ignored "
                     "> {report_dir}/cargo-test.txt 2>&1"),
        "cargo-libtest", "cargo-test.txt",
        ("cargo test -- --include-ignored, as Aider runs it (plus --offline --no-fail-fast: Debian's "
         "crates through a source replacement, and every test target runs)",),
        ignore=("target",), tamper=(".cargo", "rust-toolchain", "rust-toolchain.toml", "build.rs")),
    "java": _Command(
        ("sh", "-c", "mkdir -p {scratch}/classes && " + _JAVA), "junit-xml", "TEST-junit-jupiter.xml",
        ("@Disabled(...) annotations removed from the tests, as Aider's harness does",
         "javac and the JUnit 5 console launcher instead of Gradle (./gradlew test), which cannot run "
         "offline; the Gradle files are left out of the workspace"),
        ignore=("build", ".gradle")),
    "javascript": _Command(
        ("node", "node_modules/jest/bin/jest.js", "--ci", "--config={}", "--json",
         "--outputFile={report_dir}/jest.json", "--cacheDirectory={scratch}/jest-cache", "--watchman=false",
         "--maxWorkers=1", "--testTimeout=30000"),
        "jest-json", "jest.json",
        ("xtest( -> test( in the tests, as Aider's npm-test.sh does",
         "jest with one shared node_modules (jest + babel, the exercises' devDependencies), as Aider "
         "links one",
         "jest's time limit per test raised from 5 s to 30 s (parallel-letter-frequency's worker threads "
         "take longer than 5 s on a loaded 2-core machine)"),
        ignore=("coverage",),
        tamper=("jest.config.js", "jest.config.cjs", "jest.config.mjs", "jest.config.ts", "jest.config.json",
                ".babelrc", ".babelrc.js", ".babelrc.cjs", ".babelrc.json", "babel.config.json",
                "babel.config.cjs", "babel.config.mjs")),
    "cpp": _Command(
        ("sh", "-c", "cmake -S . -B {scratch}/build -DEXERCISM_RUN_ALL_TESTS=1 > {scratch}/cmake.log && "
         "cmake --build {scratch}/build --target {exercise} -- -j2 && "
         "{scratch}/build/{exercise} -r junit -o {report_dir}/catch2.xml"),
        "junit-xml", "catch2.xml",
        ("-DEXERCISM_RUN_ALL_TESTS=1, as Aider's cpp-test.sh builds",
         "CMakeLists.txt names the exercise instead of taking the folder's name",
         "the test binary writes a JUnit report (-r junit) instead of running as a build step"),
        ignore=("build",)),
    "python": _Command(
        ("python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "--noconftest", "-o", "addopts=",
         "--junit-xml={report_dir}/pytest.xml"), "junit-xml", "pytest.xml",
        ("the starter does not define every name the tests import, so the tests cannot be collected on "
         "it: they run as a test command (pytest --junit-xml) whose expected tests come from the "
         "reference",),
        tamper=("conftest.py", "pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml",
                "sitecustomize.py", "usercustomize.py", "pytest.py", "_pytest", "pluggy")),
}
"""The test command of each language. Python exercises are pytest tasks (reliabench's plugin),
unless their starter cannot be collected (:func:`_starter_imports_what_tests_need`)."""


AIDER_TEST_COMMANDS: Final[Mapping[str, tuple[str, ...]]] = {
    "go": ("go", "test", "./..."),
    "rust": ("cargo", "test", "--offline", "--", "--include-ignored"),
    "javascript": ("sh", "-c", "node node_modules/jest/bin/jest.js --ci --cacheDirectory={scratch}/jc ./*"),
    "cpp": ("sh", "-c", "mkdir -p {scratch}/b && cd {scratch}/b && cmake -DEXERCISM_RUN_ALL_TESTS=1 "
                        '-G "Unix Makefiles" {workdir} && make'),
    "python": ("python3", "-m", "pytest", "-p", "no:cacheprovider"),
    "java": ("sh", "-c", "mkdir -p {scratch}/c && find src -name '*.java' > {scratch}/s.txt && "
                         "javac -encoding UTF-8 -nowarn -d {scratch}/c -cp \"$JUNIT_CLASSPATH\" "
                         "@{scratch}/s.txt && java -Xmx768m -XX:CompressedClassSpaceSize=128m "
                         "-jar \"$JUNIT_CONSOLE\" --disable-banner "
                         "--details=none --class-path \"{scratch}/c:$ASSERTJ_JAR\" --scan-classpath"),
}
"""Aider's own way of running an exercise's tests (its ``benchmark.py`` ``TEST_COMMANDS`` and
scripts), as argv in the exercise folder: ``go test ./...``, ``cargo test -- --include-ignored``,
jest on every spec (``npm-test.sh``), cmake + make with the tests run as a build step
(``cpp-test.sh``), ``pytest``; for Java, whose ``./gradlew test`` cannot run offline, the JUnit
console launcher on the same classes. Its verdict is exit status 0: the reference the
agreement benchmarks compare reliabench's per-test verdicts with."""


def aider_test_command(task_language: str, tamper: tuple[str, ...] = ()) -> TestCommand:
    """Aider's way of running the tests of a ``task_language`` exercise, as an ``exit-code`` test command.

    Example:
        >>> aider_test_command("go").argv, aider_test_command("go").report
        (('go', 'test', './...'), 'exit-code')
    """
    return TestCommand(argv=AIDER_TEST_COMMANDS[task_language], report="exit-code", timeout_s=_TEST_TIMEOUT_S,
                       tamper=tamper)


@dataclass(frozen=True, slots=True)
class Exercise:
    """One exercise of the benchmark.

    Attributes:
        language: One of :data:`LANGUAGES`.
        name: The exercise's folder name.
        dir: Its folder.
        files: ``.meta/config.json``'s ``files`` (``solution``, ``test``, ``example``, ``editor``).
    """

    language: str
    name: str
    dir: Path
    files: Mapping[str, tuple[str, ...]]

    @property
    def task_id(self) -> str:
        """``<language>-<exercise>``."""
        return task_id_for(f"{self.language}-{self.name}")


@dataclass(frozen=True, slots=True)
class PolyglotTask:
    """The files of one converted task.

    Attributes:
        exercise: Where it came from.
        task_toml: ``task.toml``.
        prompt: ``prompt.md``.
        workspace: Starter files (relative path -> bytes).
        tests: Hidden tests and the files that decide how they build.
        solution: The reference, at the solution files' paths.
        tests_count: Hidden tests a collection will find (Python), or None (counted by running
            the command: ``reliabench validate``).
    """

    exercise: Exercise
    task_toml: str
    prompt: str
    workspace: Mapping[str, bytes]
    tests: Mapping[str, bytes]
    solution: Mapping[str, bytes]
    tests_count: int | None = None
    adjustments: tuple[str, ...] = field(default=())


def _config(path: Path, root: Path) -> dict[str, tuple[str, ...]]:
    try:
        doc = json.loads(read_file(path, 1 << 20, under=root).decode("utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(path, f"cannot be read ({exc})") from None
    except json.JSONDecodeError as exc:
        raise InputError(path, f"not JSON: {exc.msg}", line=exc.lineno) from None
    files = doc.get("files") if isinstance(doc, dict) else None
    if not isinstance(files, dict):
        raise InputError(path, "files: expected an object with solution, test and example lists")
    out: dict[str, tuple[str, ...]] = {}
    for key in ("solution", "test", "example", "editor"):
        value = files.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) and _safe(v) for v in value):
            raise InputError(path, f"files.{key}: expected a list of relative paths, got {value!r:.80}")
        out[key] = tuple(value)
    for key in ("solution", "test", "example"):
        if not out[key]:
            raise InputError(path, f"files.{key}: expected at least one file")
    return out


def _safe(rel: str) -> bool:
    p = PurePosixPath(rel)
    return bool(rel) and not p.is_absolute() and ".." not in p.parts and "\\" not in rel


def find_exercises(root: Path, only: Collection[str] | None = None) -> list[Exercise]:
    """The exercises under ``root`` (``<language>/exercises/practice/<name>/.meta/config.json``).

    Args:
        root: The benchmark's folder.
        only: Task ids (``go-bowling``) or languages (``go``) to keep (None: all).

    Raises:
        UsageError: ``root`` holds no exercise.
        InputError: A ``config.json`` is malformed.
    """
    if file_kind(root) != "dir":
        raise UsageError(f"suites import aider-polyglot: SOURCE {root}: not a folder "
                         "(the benchmark's checkout)")
    found: list[Exercise] = []
    for language in LANGUAGES:
        practice = root / language / "exercises" / "practice"
        if file_kind(practice) != "dir":
            continue
        for entry in sorted(practice.iterdir()):
            if file_kind(entry) != "dir" or file_kind(entry / ".meta" / "config.json") != "file":
                continue
            ex = Exercise(language, entry.name, entry, _config(entry / ".meta" / "config.json", root))
            if only is None or ex.task_id in only or language in only:
                found.append(ex)
    if not found:
        raise UsageError(f"suites import aider-polyglot: {root}: no exercises (expected "
                         "<language>/exercises/practice/<name>/.meta/config.json, languages "
                         f"{', '.join(LANGUAGES)})" + (f" matching {sorted(only)}" if only else ""))
    return found


def _files(ex: Exercise, root: Path) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for entry in walk_tree(ex.dir):
        if entry.kind != "file":
            continue  # links and special files of a download are never followed
        first = entry.rel.split("/", 1)[0]
        if first in _DROPPED_DIRS or entry.rel in _DROPPED_FILES:
            continue
        out[entry.rel] = read_file(ex.dir / entry.rel, _FILE_BYTES, under=root)
    return out


def _is_test_file(ex: Exercise, rel: str) -> bool:
    if rel in ex.files["test"] or rel in ex.files["editor"]:
        return True
    if ex.language == "go":
        return rel.endswith("_test.go")
    if ex.language == "rust":
        return rel.startswith("tests/")
    if ex.language == "cpp":
        return rel.startswith("test/")
    if ex.language == "java":
        return rel.startswith("src/test/")
    if ex.language == "javascript":
        return rel.endswith(".spec.js") or rel.startswith("data/")
    return rel.endswith("_test.py") or rel.startswith("test_")


_HARNESS: Final[Mapping[str, tuple[str, ...]]] = {
    "go": ("go.mod",), "rust": ("Cargo.toml",), "cpp": ("CMakeLists.txt",),
    "javascript": ("package.json", "babel.config.js", ".npmrc"), "java": (), "python": (),
}
"""Files that decide how the tests build: also laid from the tests (an agent's edit is flagged)."""


def _reference(ex: Exercise, root: Path) -> dict[str, bytes]:
    solution = ex.files["solution"]
    out: dict[str, bytes] = {}
    for example in ex.files["example"]:
        src = ex.dir / example
        data = read_file(src, _FILE_BYTES, under=root)
        name = PurePosixPath(example).name
        if ex.language == "java" and example.startswith(".meta/src/reference/"):
            out["src/main/" + example[len(".meta/src/reference/"):]] = data
            continue
        same_name = [s for s in solution if PurePosixPath(s).name == name]
        same_suffix = [s for s in solution if PurePosixPath(s).suffix == PurePosixPath(example).suffix]
        target = same_name or same_suffix
        if len(target) != 1:
            raise InputError(ex.dir / ".meta" / "config.json",
                             f"files.example: cannot tell which solution file {example!r} replaces "
                             f"(solution files: {', '.join(solution)})")
        out[target[0]] = data
    return out


def _adjust(ex: Exercise, rel: str, data: bytes) -> bytes:
    """Aider's adjustments of a test or harness file (see the module docstring)."""
    if ex.language == "java" and rel.endswith(".java"):
        return re.sub(rb"@Disabled\([^)]*\)\s*\n", b"", data)
    if ex.language == "javascript" and rel.endswith(".spec.js"):
        return re.sub(rb"\bxtest\(", b"test(", data)
    if ex.language == "cpp" and rel == "CMakeLists.txt":
        return re.sub(rb"get_filename_component\(exercise \$\{CMAKE_CURRENT_SOURCE_DIR\} NAME\)",
                      f"set(exercise {ex.name})".encode(), data)
    return data


def _prompt(ex: Exercise, root: Path) -> str:
    parts = []
    for name in ("introduction.md", "instructions.md", "instructions.append.md"):
        path = ex.dir / ".docs" / name
        if file_kind(path) == "file":
            parts.append(read_file(path, _FILE_BYTES, under=root).decode("utf-8").strip())
    if not parts:
        raise InputError(ex.dir / ".docs" / "instructions.md", "missing file (the exercise's instructions)")
    files = ", ".join(f"`{s}`" for s in ex.files["solution"] if s != "Cargo.toml")
    parts.append(f"Solve this exercise by editing {files}. The tests are hidden. Keep the names of "
                 "the existing functions, classes and files (the tests use them), and use only the "
                 "language's standard library.")
    return "\n\n".join(parts) + "\n"


def _python_tests(files: Mapping[str, bytes]) -> int:
    """The tests pytest collects from Exercism's unittest files: ``test*`` methods and functions."""
    count = 0
    for data in files.values():
        tree = ast.parse(data)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
                count += 1
            elif isinstance(node, ast.ClassDef):
                count += sum(1 for n in node.body
                             if isinstance(n, ast.FunctionDef) and n.name.startswith("test"))
    return count


_BARE_DISABLED: Final = re.compile(
    rb"@Disabled\s*\n(?:\s*@\w+(?:\([^)]*\))?\s*\n)*\s*(?:public\s+)?void\s+(\w+)\s*\(")


_JS_STRING: Final = r"\(\s*(?:(['\"`])((?:\\.|(?!\3).)*)\3)?"
_JS_BLOCK: Final = re.compile(r"^(\s*)(describe|xdescribe|describe\.skip)" + _JS_STRING)
_JS_SKIPPED: Final = re.compile(r"^(\s*)(xit|xtest|it\.skip|test\.skip)" + _JS_STRING)
_JS_TITLE: Final = re.compile(r"^\s*(['\"`])((?:\\.|(?!\1).)*)\1")


def _still_disabled(ex: Exercise, tests: Mapping[str, bytes]) -> list[str]:
    """Tests that stay skipped after Aider's adjustments, as their report names.

    Java: a bare ``@Disabled`` (Aider's pattern removes ``@Disabled(...)`` only); JavaScript:
    ``xit(``, ``it.skip(``, ``test.skip(`` (Aider replaces ``xtest(`` only), named
    ``FILE::DESCRIBE > ... > TITLE`` from the spec's indentation (Exercism's files are formatted
    by prettier).
    """
    names: list[str] = []
    for rel, data in sorted(tests.items()):
        if ex.language == "java" and rel.endswith(".java"):
            names += [f"{PurePosixPath(rel).stem}::{m.decode()}()" for m in _BARE_DISABLED.findall(data)]
        elif ex.language == "javascript" and rel.endswith(".spec.js"):
            names += [f"{rel}::{title}" for title in _js_skipped(data.decode("utf-8"))]
    return names


def _js_title(lines: list[str], i: int, match: re.Match[str]) -> str | None:
    if match.group(4) is not None:
        return _unescape(match.group(4))
    for line in lines[i + 1:i + 3]:  # a title on the next line (a long call prettier wrapped)
        m = _JS_TITLE.match(line)
        if m:
            return _unescape(m.group(2))
    return None


def _unescape(title: str) -> str:
    return re.sub(r"\\(.)", r"\1", title)


def _js_skipped(text: str) -> list[str]:
    lines = text.splitlines()
    blocks: list[tuple[int, str]] = []  # open describe blocks: (indent, title)
    out: list[str] = []
    for i, line in enumerate(lines):
        indent = len(line) - len(line.lstrip())
        if line.strip().startswith("});") or line.strip() == "})":
            while blocks and blocks[-1][0] >= indent:
                blocks.pop()
            continue
        block = _JS_BLOCK.match(line)
        if block:
            title = _js_title(lines, i, block)
            if title is not None:
                blocks.append((indent, title))
            continue
        skipped = _JS_SKIPPED.match(line)
        if skipped:
            title = _js_title(lines, i, skipped)
            if title is not None:
                out.append(" > ".join([*(t for ind, t in blocks if ind < indent), title]))
    return out


def _top_level_names(data: bytes) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(data).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for sub in ast.walk(target):
                    if isinstance(sub, ast.Name):
                        names.add(sub.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _starter_imports_what_tests_need(tests: Mapping[str, bytes], workspace: Mapping[str, bytes]) -> bool:
    """Whether every ``from MODULE import NAME`` of the tests finds NAME in the starter's MODULE.

    reliabench collects a pytest task's tests on its starter; a starter that lacks a name the
    tests import (Exercism's Python ``go-counting`` has no ``WHITE``) cannot be collected.
    """
    modules = {PurePosixPath(rel).with_suffix("").as_posix().replace("/", "."): data
               for rel, data in workspace.items() if rel.endswith(".py")}
    for rel, data in tests.items():
        if not rel.endswith(".py"):
            continue
        for node in ast.walk(ast.parse(data)):
            if isinstance(node, ast.ImportFrom) and node.module in modules:
                defined = _top_level_names(modules[node.module])
                if any(a.name != "*" and a.name not in defined for a in node.names):
                    return False
    return True


def build_task(ex: Exercise, root: Path) -> PolyglotTask:
    """The task of one exercise (see the module docstring).

    Raises:
        InputError: A file it needs is missing or unreadable, or the reference cannot be placed.
    """
    files = _files(ex, root)
    for rel in (*ex.files["solution"], *ex.files["test"]):
        if rel not in files:
            raise InputError(ex.dir / ".meta" / "config.json",
                             f"lists {rel!r}, which the exercise does not have")
    harness = _HARNESS[ex.language]
    tests = {rel: _adjust(ex, rel, data) for rel, data in files.items()
             if _is_test_file(ex, rel) or rel in harness}
    extra: list[str] = []
    example_manifest = ex.dir / ".meta" / "Cargo-example.toml"
    if ex.language == "rust" and file_kind(example_manifest) == "file":
        tests["Cargo.toml"] = read_file(example_manifest, _FILE_BYTES, under=root)
        extra.append("the tests build with the reference's Cargo.toml (.meta/Cargo-example.toml), whose "
                     "crates the reference needs; an agent's own Cargo.toml is not used, as in Aider's runs")
    workspace = {rel: _adjust(ex, rel, data) for rel, data in files.items() if not _is_test_file(ex, rel)}
    tags = [ex.language, "aider-polyglot", *(["starter-passes"] if ex.task_id in STARTER_PASSES else [])]
    meta = [f"id = {toml_value(ex.task_id)}", f"language = {toml_value(ex.language)}",
            f"timeout_s = {toml_value(_TIMEOUT_S)}", f"tags = {toml_value(tags)}"]
    adjustments: tuple[str, ...] = ()
    count: int | None = None
    still_disabled = _still_disabled(ex, tests)
    if still_disabled:
        extra.append("tests that Aider's adjustment leaves disabled (a bare @Disabled, xit(, test.skip() "
                     "stay skipped, as in Aider's runs: declared in allowed_skips")
        meta.append(f"allowed_skips = {toml_value(still_disabled)}")
    if ex.language == "python" and _starter_imports_what_tests_need(tests, workspace):
        meta.append('test_runner = "pytest"')
        count = _python_tests({r: d for r, d in tests.items() if r.endswith(".py")})
    else:
        cmd = COMMANDS[ex.language]
        adjustments = cmd.adjustments
        meta += ['test_runner = "command"', "", "[test_command]",
                 f"argv = {toml_value([a.replace('{exercise}', ex.name) for a in cmd.argv])}",
                 f"report = {toml_value(cmd.report)}", f"report_file = {toml_value(cmd.report_file)}",
                 f"timeout_s = {toml_value(_TEST_TIMEOUT_S)}"]
        if cmd.ignore:
            meta.append(f"ignore = {toml_value(list(cmd.ignore))}")
        if cmd.tamper:
            meta.append(f"tamper = {toml_value(list(cmd.tamper))}")
        adjustments = (*adjustments, *extra)
        meta.append(f"adjustments = {toml_value(list(adjustments))}")
    meta += ["", "[source]", 'benchmark = "aider-polyglot"', f"exercise = {toml_value(ex.name)}",
             f"path = {toml_value(f'{ex.language}/exercises/practice/{ex.name}')}"]
    return PolyglotTask(ex, "\n".join(meta) + "\n", _prompt(ex, root), workspace, tests,
                        _reference(ex, root), count, adjustments)


def _write(root: Path, files: Mapping[str, bytes]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for rel, data in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def write_polyglot_suite(source: Path, out: Path, options: ConvertOptions,
                         only: Collection[str] | None = None) -> ConversionResult:
    """Write the suite of the benchmark at ``source`` into the empty folder ``out``.

    Args:
        source: The benchmark's folder.
        out: The suite folder (empty).
        options: ``name`` and ``limit`` (the first N exercises, languages in alphabetical order).
        only: Task ids or languages to convert (None: all).

    Returns:
        What was written; ``tests`` counts the Python exercises' tests (the others are
        counted by running their command, in ``reliabench validate``).
    """
    exercises = find_exercises(source, only)
    if options.limit is not None:
        exercises = exercises[:options.limit]
    tests = 0
    for ex in exercises:
        task = build_task(ex, source)
        tdir = out / "tasks" / ex.task_id
        _write(tdir, {"task.toml": task.task_toml.encode(), "prompt.md": task.prompt.encode()})
        _write(tdir / "workspace", task.workspace)
        _write(tdir / "tests", task.tests)
        _write(tdir / "solution", task.solution)
        tests += task.tests_count or 0
    name = options.name or "aider-polyglot"
    write_suite(out, name=name, version="1", description=(
        f"The Aider polyglot benchmark ({len(exercises)} Exercism exercises; "
        "github.com/Aider-AI/polyglot-benchmark; exercises copyright Exercism, MIT)"))
    return ConversionResult(out, name, len(exercises), source, tests)


class AiderPolyglotConverter:
    """``reliabench suites import aider-polyglot DIR`` (see the module docstring)."""

    name = "aider-polyglot"
    description = "the Aider polyglot benchmark: a folder of Exercism exercises in six languages"
    source_is_folder = True
    """SOURCE is a folder (the benchmark's checkout), not a file."""

    def default_source(self) -> Path | None:
        """None: the benchmark's folder is required."""
        return None

    def convert(self, source: Path, out: Path, options: ConvertOptions) -> ConversionResult:
        """Write one task per exercise of ``source`` into ``out``."""
        return write_polyglot_suite(source, out, options)
