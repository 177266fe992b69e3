"""Scanner protocol, registry, Bandit and Semgrep scanners.

The CWE table below is what the tools REPORT (measured with Bandit 1.9.4 and Semgrep 1.185
with the bundled rules), which docs/scanners.md reproduces. Note Bandit's own choices:
eval/exec -> CWE-78, yaml.load -> CWE-20, hard-coded password -> CWE-259, md5/sha1 -> CWE-327.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import textwrap
import threading
import types
from pathlib import Path

import pytest
from entry_point_helpers import fake_entry_points

from reliabench.errors import InvalidArgumentError, MissingExtraError, UsageError
from reliabench.records import SEVERITY_LEVELS, Finding
from reliabench.scanners import (
    ENTRY_POINT_GROUP,
    Scanner,
    ScanResult,
    available_scanners,
    get_scanner,
    register_scanner,
    semgrep_scanner,
)
from reliabench.scanners import base as scanners_base
from reliabench.scanners.bandit_scanner import BANDIT_CONFIDENCE, BANDIT_SEVERITY, BanditScanner

FIXTURES = Path(__file__).parent / "fixtures" / "cwe"

# case -> (CWE Bandit reports or None, CWE the bundled Semgrep rules report)
CWE_CASES: dict[str, tuple[int | None, int]] = {
    "py_cwe78_subprocess_shell": (78, 78),
    "py_cwe78_os_system": (78, 78),
    "py_cwe89_sql_percent": (89, 89),
    "py_cwe89_sql_fstring": (89, 89),
    "py_cwe95_eval": (78, 95),
    "py_cwe95_exec": (78, 95),
    "py_cwe22_tarfile": (22, 22),
    "py_cwe327_md5": (327, 328),
    "py_cwe327_sha1": (327, 328),
    "py_cwe502_pickle": (502, 502),
    "py_cwe502_yaml": (20, 502),
    "py_cwe502_marshal": (502, 502),
    "py_cwe798_password": (259, 798),
    "py_cwe330_random_token": (330, 330),
    "js_cwe78_exec": (None, 78),
    "js_cwe95_eval": (None, 95),
    "js_cwe328_md5": (None, 328),
    "js_cwe330_random_token": (None, 330),
}
BANDIT_CASES = [c for c, (b, _) in CWE_CASES.items() if b is not None]

HAVE_SEMGREP = semgrep_scanner.find_semgrep() is not None
needs_semgrep = pytest.mark.skipif(not HAVE_SEMGREP, reason="semgrep is not installed")


def _rank(severity: str) -> int:
    return SEVERITY_LEVELS.index(severity)


def _fixture_files(suffix: str) -> list[str]:
    return sorted(
        p.relative_to(FIXTURES).as_posix()
        for p in FIXTURES.rglob(f"*{suffix}")
        if p.name != "conftest.py"
    )


def _of(result: ScanResult, path: str) -> list[Finding]:
    return [f for f in result.findings if f.path == path]


def _write(root: Path, rel: str, text: str) -> str:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return rel


@pytest.fixture(scope="module")
def bandit_fixture_scan() -> ScanResult:
    return BanditScanner().scan(FIXTURES, _fixture_files(".py"))


@pytest.fixture(scope="module")
def semgrep_fixture_scan() -> ScanResult:
    if not HAVE_SEMGREP:
        pytest.skip("semgrep is not installed")
    return get_scanner("semgrep").scan(FIXTURES, _fixture_files(".py") + _fixture_files(".js"))


# ------------------------------------------------------------------------- CWE coverage


@pytest.mark.parametrize("case", BANDIT_CASES)
def test_bandit_flags_vulnerable_snippet_with_its_cwe(
    bandit_fixture_scan: ScanResult, case: str
) -> None:
    cwe = CWE_CASES[case][0]
    hits = [f for f in _of(bandit_fixture_scan, f"{case}/vulnerable.py") if f.cwe == cwe]
    assert hits, f"{case}: no Bandit finding with CWE-{cwe}"
    assert all(f.tool == "bandit" and f.rule_id.startswith("B") for f in hits)


@pytest.mark.parametrize("case", BANDIT_CASES)
def test_bandit_does_not_flag_fixed_snippet(bandit_fixture_scan: ScanResult, case: str) -> None:
    # Bandit still reports informational LOW findings with the same CWE on safe subprocess
    # use (B404 import, B603 no shell, B607 partial path): the fix must drop every finding
    # of that CWE below the vulnerable snippet's severity.
    cwe = CWE_CASES[case][0]
    worst = max(_rank(f.severity) for f in _of(bandit_fixture_scan, f"{case}/vulnerable.py")
                if f.cwe == cwe)
    left = [f for f in _of(bandit_fixture_scan, f"{case}/fixed.py")
            if f.cwe == cwe and _rank(f.severity) >= worst]
    assert left == []


def test_bandit_fixture_scan_is_complete(bandit_fixture_scan: ScanResult) -> None:
    assert bandit_fixture_scan.errors == ()
    assert bandit_fixture_scan.complete
    assert bandit_fixture_scan.files_scanned == len(_fixture_files(".py"))


@needs_semgrep
@pytest.mark.parametrize("case", sorted(CWE_CASES))
def test_semgrep_flags_vulnerable_snippet_with_its_cwe(
    semgrep_fixture_scan: ScanResult, case: str
) -> None:
    cwe = CWE_CASES[case][1]
    ext = ".py" if case.startswith("py_") else ".js"
    hits = [f for f in _of(semgrep_fixture_scan, f"{case}/vulnerable{ext}") if f.cwe == cwe]
    assert hits, f"{case}: no Semgrep finding with CWE-{cwe}"
    assert all(f.rule_id.startswith("reliabench.") for f in hits)


@needs_semgrep
@pytest.mark.parametrize("case", sorted(CWE_CASES))
def test_semgrep_does_not_flag_fixed_snippet(semgrep_fixture_scan: ScanResult, case: str) -> None:
    ext = ".py" if case.startswith("py_") else ".js"
    assert _of(semgrep_fixture_scan, f"{case}/fixed{ext}") == []


@needs_semgrep
def test_semgrep_fixture_scan_is_complete(semgrep_fixture_scan: ScanResult) -> None:
    assert semgrep_fixture_scan.errors == ()
    assert semgrep_fixture_scan.files_scanned == len(_fixture_files(".py")) + len(
        _fixture_files(".js")
    )


# ------------------------------------------------------------------- severity mapping


def test_bandit_severity_mapping_has_no_critical_and_undefined_is_lowest() -> None:
    assert BANDIT_SEVERITY == {"UNDEFINED": "info", "LOW": "low", "MEDIUM": "medium",
                               "HIGH": "high"}
    assert set(BANDIT_CONFIDENCE.values()) <= {"low", "medium", "high"}
    assert "critical" not in BANDIT_SEVERITY.values()


def test_bandit_shell_true_is_high_severity_high_confidence(
    bandit_fixture_scan: ScanResult,
) -> None:
    (b602,) = [f for f in bandit_fixture_scan.findings if f.rule_id == "B602"]
    assert (b602.severity, b602.confidence, b602.cwe, b602.line) == ("high", "high", 78, 5)
    assert b602.path == "py_cwe78_subprocess_shell/vulnerable.py"


def test_semgrep_severity_table() -> None:
    table = semgrep_scanner.SEMGREP_SEVERITY
    assert (table["ERROR"], table["WARNING"], table["INFO"]) == ("high", "medium", "low")
    assert set(table.values()) <= set(SEVERITY_LEVELS)


# ------------------------------------------------------------------ errors, never clean


def test_unparsable_file_is_a_scan_error_not_clean(tmp_path: Path) -> None:
    bad = _write(tmp_path, "pkg/broken.py", "def f(:\n    pass\n")
    good = _write(tmp_path, "pkg/ok.py", "import os\nos.system(input())\n")
    result = BanditScanner().scan(tmp_path, [bad, good])
    assert [(e.tool, e.path) for e in result.errors] == [("bandit", "pkg/broken.py")]
    assert "syntax error" in result.errors[0].message
    assert result.files_scanned == 1
    assert not result.complete
    assert {f.path for f in result.findings} == {"pkg/ok.py"}


def test_missing_file_is_a_scan_error(tmp_path: Path) -> None:
    result = BanditScanner().scan(tmp_path, ["gone.py"])
    assert result.errors[0].path == "gone.py"
    assert "No such file" in result.errors[0].message
    assert result.files_scanned == 0


def test_symlink_leading_outside_root_is_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside.py"
    outside.write_text("import os\nos.system(input())\n")
    root = tmp_path / "ws"
    root.mkdir()
    (root / "link.py").symlink_to(outside)
    result = BanditScanner().scan(root, ["link.py"])
    assert result.findings == ()
    assert [e.message for e in result.errors] == ["symbolic link leads outside the workspace"]


def test_non_python_files_are_ignored_by_bandit(tmp_path: Path) -> None:
    js = _write(tmp_path, "app.js", "eval(x)\n")
    result = BanditScanner().scan(tmp_path, [js])
    assert result == ScanResult((), (), 0)


def test_nosec_comments_cannot_silence_bandit(tmp_path: Path) -> None:
    rel = _write(tmp_path, "m.py", "import os\n\nos.system(input())  # nosec\n")
    result = BanditScanner().scan(tmp_path, [rel])
    assert any(f.rule_id == "B605" for f in result.findings)


def test_skip_tests_option(tmp_path: Path) -> None:
    rel = _write(tmp_path, "m.py", "def f(x):\n    assert x\n")
    assert any(f.rule_id == "B101" for f in BanditScanner().scan(tmp_path, [rel]).findings)
    assert BanditScanner(skip_tests=["B101"]).scan(tmp_path, [rel]).findings == ()
    with pytest.raises(InvalidArgumentError, match=r"skip_tests: .*'assert_used'"):
        BanditScanner(skip_tests=["assert_used"])


# -------------------------------------------------------------------- changed_lines


MULTILINE = """\
import subprocess


def run(cmd):
    return subprocess.run(
        cmd,
        shell=True,
    )
"""


def test_changed_lines_keep_a_multiline_finding_touched_on_any_line(tmp_path: Path) -> None:
    rel = _write(tmp_path, "m.py", MULTILINE)
    scanner = BanditScanner()
    everything = scanner.scan(tmp_path, [rel])
    # Bandit reports the shell=True line (7) and the call's full range (5-8)
    assert any(f.rule_id == "B602" and f.line == 7 for f in everything.findings)
    only_call = scanner.scan(tmp_path, [rel], {rel: frozenset({5})})
    assert [(f.rule_id, f.line) for f in only_call.findings] == [("B602", 7)]
    untouched = scanner.scan(tmp_path, [rel], {rel: frozenset({1, 2})})
    assert [f.rule_id for f in untouched.findings] == ["B404"]
    assert scanner.scan(tmp_path, [rel], {rel: frozenset()}).findings == ()


def test_changed_lines_must_cover_every_file(tmp_path: Path) -> None:
    a = _write(tmp_path, "a.py", "x = 1\n")
    b = _write(tmp_path, "b.py", "y = 2\n")
    with pytest.raises(InvalidArgumentError, match=r"changed_lines: .*missing 'b.py'"):
        BanditScanner().scan(tmp_path, [a, b], {a: frozenset({1})})


# ------------------------------------------------------------------------ validation


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ("m.py", r"files: expected a sequence of relative paths, got a single string 'm.py'"),
        (["/etc/passwd"], r"files\[0\]: .*got '/etc/passwd'"),
        (["../x.py"], r"files\[0\]: .*without '\.\.', got '\.\./x\.py'"),
        ([""], r"files\[0\]: expected a non-empty relative path string, got ''"),
    ],
)
def test_bad_files_argument(tmp_path: Path, files: object, message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        BanditScanner().scan(tmp_path, files)  # type: ignore[arg-type]


def test_root_must_be_a_directory(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match=r"root: expected an existing directory"):
        BanditScanner().scan(tmp_path / "nope", ["a.py"])


# ------------------------------------------------------------------------ thread safety


def test_bandit_scanner_is_safe_to_share_between_threads() -> None:
    scanner = BanditScanner()
    files = _fixture_files(".py")
    subsets = [files[i::4] for i in range(4)]
    expected = [scanner.scan(FIXTURES, s) for s in subsets]
    got: dict[int, ScanResult] = {}

    def work(i: int) -> None:
        got[i] = scanner.scan(FIXTURES, subsets[i % 4])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(got[i] == expected[i % 4] for i in range(16))


# ---------------------------------------------------------------------------- registry


class _FakeScanner:
    name = "fake"

    def __init__(self, level: str = "low") -> None:
        self.level = level

    def scan(self, root: Path, files: object, changed_lines: object = None) -> ScanResult:
        return ScanResult((Finding("fake", "F1", self.level),), (), 1)


def _fake_entry_points(monkeypatch: pytest.MonkeyPatch, **targets: str) -> None:
    fake_entry_points(monkeypatch, ENTRY_POINT_GROUP, **targets)


@pytest.fixture
def plugin_module(monkeypatch: pytest.MonkeyPatch) -> str:
    module = types.ModuleType("reliabench_fake_plugin")
    module.FakeScanner = _FakeScanner  # type: ignore[attr-defined]
    module.not_a_scanner = lambda **kw: object()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "reliabench_fake_plugin", module)
    return "reliabench_fake_plugin"


def test_builtins_are_available() -> None:
    assert {"bandit", "semgrep"} <= set(available_scanners())
    assert isinstance(get_scanner("bandit"), BanditScanner)
    assert isinstance(get_scanner("bandit"), Scanner)


def test_unknown_scanner_lists_known_ones() -> None:
    with pytest.raises(UsageError, match=r"^unknown scanner 'nope'; known scanners: .*bandit, "
                                         r"semgrep"):
        get_scanner("nope")


def test_empty_scanner_name() -> None:
    with pytest.raises(InvalidArgumentError, match=r"name: expected a scanner name, got ''"):
        get_scanner("")


def test_entry_point_plugin_is_found_and_built_with_options(
    monkeypatch: pytest.MonkeyPatch, plugin_module: str
) -> None:
    _fake_entry_points(monkeypatch, fake=f"{plugin_module}:FakeScanner")
    assert "fake" in available_scanners()
    scanner = get_scanner("fake", level="high")
    assert scanner.name == "fake"
    assert scanner.scan(Path("."), []).findings[0].severity == "high"


def test_entry_point_cannot_shadow_a_builtin(
    monkeypatch: pytest.MonkeyPatch, plugin_module: str
) -> None:
    _fake_entry_points(monkeypatch, bandit=f"{plugin_module}:FakeScanner")
    assert isinstance(get_scanner("bandit"), BanditScanner)


def test_broken_entry_point_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_entry_points(monkeypatch, broken="reliabench_no_such_module_xyz:Thing")
    with pytest.raises(UsageError, match=r"scanner plugin broken \(reliabench_no_such_module_xyz"
                                         r":Thing\) failed to load: ModuleNotFoundError"):
        get_scanner("broken")


def test_entry_point_that_is_not_a_scanner(
    monkeypatch: pytest.MonkeyPatch, plugin_module: str
) -> None:
    _fake_entry_points(monkeypatch, odd=f"{plugin_module}:not_a_scanner")
    with pytest.raises(UsageError, match=r"did not produce a Scanner .* got object"):
        get_scanner("odd")


def test_register_scanner(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scanners_base.SCANNERS, "_registered", {})
    register_scanner("mine", _FakeScanner)
    assert "mine" in available_scanners()
    assert get_scanner("mine").name == "fake"
    with pytest.raises(InvalidArgumentError, match=r"name: scanner 'mine' is already registered"):
        register_scanner("mine", _FakeScanner)
    register_scanner("mine", _FakeScanner, replace=True)
    with pytest.raises(InvalidArgumentError, match=r"name: 'bandit' is a built-in scanner"):
        register_scanner("bandit", _FakeScanner)
    with pytest.raises(InvalidArgumentError, match=r"factory: expected a callable, got 3"):
        register_scanner("x", 3)  # type: ignore[arg-type]


# ------------------------------------------------------------ semgrep without semgrep


def test_semgrep_missing_raises_missing_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(semgrep_scanner, "find_semgrep", lambda: None)
    with pytest.raises(MissingExtraError, match=r"pip install 'reliabench\[semgrep\]'"):
        get_scanner("semgrep")


def _fake_semgrep(tmp_path: Path, payload: str, rc: int = 0) -> Path:
    """A stand-in ``semgrep`` that prints ``payload`` (with @ROOT@ -> its first target's dir)."""
    script = tmp_path / "fake-semgrep"
    script.write_text(textwrap.dedent(f"""\
        #!{sys.executable}
        import json, os, sys
        targets = sys.argv[sys.argv.index("--") + 1:]
        assert "--metrics=off" in sys.argv and "--disable-nosem" in sys.argv
        assert os.environ["SEMGREP_ENABLE_VERSION_CHECK"] == "0"
        payload = {payload!r}
        for i, t in enumerate(targets):
            payload = payload.replace("@T%d@" % i, t)
        sys.stdout.write(payload)
        sys.exit({rc})
    """))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def test_semgrep_json_is_mapped(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    a = _write(ws, "a.py", "x = 1\ny = 2\n")
    b = _write(ws, "b.js", "let z = 3;\n")
    payload = json.dumps({
        "results": [
            {"check_id": "r.one", "path": "@T0@", "start": {"line": 2}, "end": {"line": 2},
             "extra": {"severity": "INFO", "message": "one\n two",
                       "metadata": {"cwe": ["CWE-502: x", "CWE-20"], "confidence": "HIGH",
                                    "reliabench-severity": "critical"}}},
            {"check_id": "r.two", "path": "@T1@", "start": {"line": 1}, "end": {"line": 1},
             "extra": {"severity": "WARNING", "message": "two", "metadata": {}}},
        ],
        "errors": [],
        "paths": {"scanned": ["@T0@", "@T1@"]},
    })
    scanner = semgrep_scanner.SemgrepScanner(executable=_fake_semgrep(tmp_path, payload))
    result = scanner.scan(ws, [a, b])
    assert result.errors == ()
    assert result.files_scanned == 2
    assert result.findings == (
        Finding("semgrep", "r.one", "critical", "high", 502, "a.py", 2, "one two"),
        Finding("semgrep", "r.two", "medium", "medium", None, "b.js", 1, "two"),
    )
    assert scanner.scan(ws, [a, b], {a: frozenset({1}), b: frozenset({1})}).findings == (
        result.findings[1],
    )


def test_semgrep_failure_makes_every_file_an_error(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    a = _write(ws, "a.py", "x = 1\n")
    scanner = semgrep_scanner.SemgrepScanner(
        executable=_fake_semgrep(tmp_path, "Fatal: boom", rc=2)
    )
    result = scanner.scan(ws, [a])
    assert result.findings == ()
    assert [e.path for e in result.errors] == ["a.py"]
    assert "semgrep failed (exit 2)" in result.errors[0].message


def test_semgrep_file_not_reported_as_scanned_is_an_error(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    a = _write(ws, "a.py", "x = 1\n")
    broken = _write(ws, "b.py", "def f(:\n")
    payload = json.dumps({"results": [], "errors": [], "paths": {"scanned": ["@T1@"]}})
    scanner = semgrep_scanner.SemgrepScanner(executable=_fake_semgrep(tmp_path, payload))
    result = scanner.scan(ws, [a, broken])
    messages = {e.path: e.message for e in result.errors}
    assert messages == {
        "a.py": "semgrep did not analyse the file",
        "b.py": "Python syntax error at line 1: invalid syntax",
    }
    assert result.files_scanned == 0


@pytest.mark.parametrize("config", ["auto", "p/python", "https://example.com/r.yml"])
def test_semgrep_refuses_registry_configs(tmp_path: Path, config: str) -> None:
    with pytest.raises(InvalidArgumentError, match=r"rules\[0\]: expected a local rule file"):
        semgrep_scanner.SemgrepScanner(rules=[config], executable=sys.executable)


def test_semgrep_rejects_bad_timeout() -> None:
    with pytest.raises(InvalidArgumentError, match=r"timeout_s: expected a number > 0, got 0"):
        semgrep_scanner.SemgrepScanner(executable=sys.executable, timeout_s=0)


def test_bundled_rules_ship_with_cwe_and_confidence() -> None:
    files = sorted(semgrep_scanner.BUNDLED_RULES.glob("*.yml"))
    assert [f.name for f in files] == ["javascript.yml", "python.yml"]
    for f in files:
        text = f.read_text()
        n_rules = text.count("\n  - id: ")
        assert n_rules == text.count("      cwe: \"CWE-") == text.count("      confidence: ")


@needs_semgrep
def test_semgrep_nosem_comment_cannot_silence_it(tmp_path: Path) -> None:
    rel = _write(tmp_path, "m.py", "import os\nos.system(input())  # nosemgrep\n")
    result = get_scanner("semgrep").scan(tmp_path, [rel])
    assert [f.rule_id for f in result.findings] == ["reliabench.python.os-shell-command"]


@needs_semgrep
def test_semgrep_ignore_files_in_the_workspace_cannot_hide_files(tmp_path: Path) -> None:
    rel = _write(tmp_path, "m.py", "import os\nos.system(input())\n")
    (tmp_path / ".semgrepignore").write_text("*.py\n")
    (tmp_path / ".gitignore").write_text("*.py\n")
    result = get_scanner("semgrep").scan(tmp_path, [rel])
    assert result.files_scanned == 1
    assert len(result.findings) == 1


@needs_semgrep
def test_real_semgrep_reports_unparsable_python(tmp_path: Path) -> None:
    rel = _write(tmp_path, "m.py", "def f(:\n    pass\n")
    result = get_scanner("semgrep").scan(tmp_path, [rel])
    assert [e.path for e in result.errors] == ["m.py"]
    assert result.files_scanned == 0


def test_find_semgrep_prefers_the_interpreter_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exe = tmp_path / "semgrep"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python3"))
    assert semgrep_scanner.find_semgrep() == exe
    os.remove(exe)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert semgrep_scanner.find_semgrep() is None
    assert shutil.which("semgrep", path=str(tmp_path)) is None


INVALID_ESCAPE = 'import os\nimport re\n\nPATTERN = re.compile("\\d+")\nos.system(input())\n'


def test_warnings_from_parsing_agent_code_do_not_fail_the_scan(tmp_path: Path) -> None:
    # pytest runs with filterwarnings=error: without silencing, the invalid escape "\d"
    # becomes a SyntaxError and the file would be reported as unparsable.
    rel = _write(tmp_path, "m.py", INVALID_ESCAPE)
    result = BanditScanner().scan(tmp_path, [rel])
    assert result.errors == ()
    assert [f.rule_id for f in result.findings if f.severity == "high"] == ["B605"]


@needs_semgrep
def test_semgrep_parse_check_tolerates_invalid_escapes(tmp_path: Path) -> None:
    rel = _write(tmp_path, "m.py", INVALID_ESCAPE)
    result = get_scanner("semgrep").scan(tmp_path, [rel])
    assert result.errors == ()
    assert result.files_scanned == 1
