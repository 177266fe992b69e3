"""Staging hidden tests (reliabench.hidden_tests.staging): a private copy, the plugin, one ini file."""

from __future__ import annotations

import marshal
import os
import stat
import sys
from pathlib import Path

import pytest

from reliabench.errors import SandboxError
from reliabench.hidden_tests.staging import GUARD_MODULE, PLUGIN_MODULE, pytest_command, staged
from reliabench.sandbox import slot_uid

SLOT = 3


def _tests(tmp_path: Path) -> Path:
    src = tmp_path / "hidden"
    (src / "sub").mkdir(parents=True)
    (src / "test_a.py").write_text("def test_a():\n    pass\n", encoding="utf-8")
    (src / "sub" / "test_b.py").write_text("x = 1\n", encoding="utf-8")
    (src / "__pycache__").mkdir()
    (src / "__pycache__" / "test_a.cpython-311.pyc").write_bytes(b"stale")
    (src / ".pytest_cache").mkdir()
    (src / "stale.pyc").write_bytes(b"stale")
    os.chmod(src / "test_a.py", 0o600)
    return src


def test_staged_copy_plugin_and_ini(tmp_path: Path) -> None:
    src = _tests(tmp_path)
    with staged(src, SLOT, parent=tmp_path) as staging:
        assert staging.parent == tmp_path and staging.name.startswith("rb-hidden-")
        files = sorted(str(p.relative_to(staging)) for p in staging.rglob("*") if "__pycache__" not in p.parts)
        assert files == ["plugin", f"plugin/{GUARD_MODULE}.py", f"plugin/{PLUGIN_MODULE}.py",
                         "pytest.ini", "tests", "tests/sub",
                         "tests/sub/test_b.py", "tests/test_a.py"]  # no stale caches, no .pyc
        _assert_only_our_bytecode(staging)
        plugin = Path(__file__).parents[2] / "src" / "reliabench" / "hidden_tests" / "_outcome_plugin.py"
        assert (staging / "plugin" / f"{PLUGIN_MODULE}.py").read_bytes() == plugin.read_bytes()
        ini = (staging / "pytest.ini").read_text(encoding="utf-8")
        assert ini.startswith("[pytest]\n") and "addopts =\n" in ini
        for p in staging.rglob("*"):
            assert stat.S_IMODE(p.stat().st_mode) == (0o755 if p.is_dir() else 0o644), p
        top = staging.stat()
        if os.geteuid() == 0:
            # only this slot's group may enter; owned by root so that no slot uid sweep removes it
            assert (top.st_uid, top.st_gid, stat.S_IMODE(top.st_mode)) == (0, slot_uid(SLOT), 0o750)
        else:
            assert stat.S_IMODE(top.st_mode) == 0o700
    assert not staging.exists()  # removed afterwards
    assert (src / "__pycache__").exists()  # the source is untouched


def _assert_only_our_bytecode(staging: Path) -> None:
    """Each cache file is the interpreter's or pytest's bytecode of a staged source, made from it."""
    import importlib.util
    import marshal

    from _pytest.assertion.rewrite import PYC_TAIL

    caches = [p for p in staging.rglob("*.pyc")]
    sources = [p for p in staging.rglob("*.py") if "__pycache__" not in p.parts]
    assert sorted(caches) == sorted(
        [Path(importlib.util.cache_from_source(str(s))) for s in sources]
        + [s.parent / "__pycache__" / (s.stem + PYC_TAIL) for s in sources])
    for src in sources:
        data = Path(importlib.util.cache_from_source(str(src))).read_bytes()
        assert data[:4] == importlib.util.MAGIC_NUMBER
        assert marshal.loads(data[16:]) == compile(src.read_bytes(), str(src), "exec", dont_inherit=True)
        rewritten = (src.parent / "__pycache__" / (src.stem + PYC_TAIL)).read_bytes()
        assert rewritten[8:16] == importlib.util.source_hash(src.read_bytes())  # pytest checks it


def test_precompile_skips_what_does_not_compile(tmp_path: Path) -> None:
    from reliabench.hidden_tests.staging import precompile

    (tmp_path / "test_ok.py").write_text("def test_ok():\n    assert 1\n", encoding="utf-8")
    (tmp_path / "test_broken.py").write_text("def test_broken(:\n", encoding="utf-8")
    assert precompile(tmp_path) == 1  # the broken file is left to the test process to report
    assert sorted(p.name.split(".")[0] for p in (tmp_path / "__pycache__").iterdir()) == ["test_ok", "test_ok"]
    other = tmp_path / "lean"
    other.mkdir()
    (other / "test_ok.py").write_bytes((tmp_path / "test_ok.py").read_bytes())
    assert precompile(other, rewrite=False) == 1  # the lean runner's: no pytest bytecode
    assert [p.name for p in (other / "__pycache__").iterdir()] == [f"test_ok.{sys.implementation.cache_tag}.pyc"]


def test_bytecode_made_once_is_valid_in_every_staging(tmp_path: Path) -> None:
    """The same source in two stagings (the same test, another slot): both caches load and run."""
    import importlib.util
    import subprocess

    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "test_m.py").write_text("import sys\nWHERE = __file__\n", encoding="utf-8")
        assert precompile_of(tmp_path / name) == 1
    for name in ("a", "b"):
        cache = importlib.util.cache_from_source(str(tmp_path / name / "test_m.py"))
        out = subprocess.run(
            [sys.executable, "-I", "-B", "-v", "-c",
             "import sys; sys.path.insert(0, '.'); import test_m; print(test_m.WHERE)"],
            cwd=tmp_path / name, capture_output=True, text=True, check=True)
        assert out.stdout.strip() == str(tmp_path / name / "test_m.py")  # its own path, not a's
        assert f"code object from '{cache}'" in out.stderr  # the bytecode, not a recompilation
        rewritten = [p for p in (tmp_path / name / "__pycache__").iterdir() if "pytest" in p.name]
        assert len(rewritten) == 1  # pytest's, naming this staging's file (tracebacks, pruning)
        assert marshal.loads(rewritten[0].read_bytes()[16:]).co_filename == str(tmp_path / name / "test_m.py")


def precompile_of(staging: Path) -> int:
    from reliabench.hidden_tests.staging import precompile

    return precompile(staging)


def test_staging_is_removed_when_the_run_fails(tmp_path: Path) -> None:
    src = _tests(tmp_path)
    seen: list[Path] = []

    def use() -> None:
        with staged(src, SLOT, parent=tmp_path) as staging:
            seen.append(staging)
            raise RuntimeError("run failed")

    with pytest.raises(RuntimeError, match="run failed"):
        use()
    assert seen and not seen[0].exists()


def test_a_missing_tests_directory_is_a_sandbox_error(tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match=r"hidden tests directory not found: .*nowhere"), \
            staged(tmp_path / "nowhere", SLOT, parent=tmp_path):
        pass
    assert list(tmp_path.iterdir()) == []


def test_pytest_command_isolates_the_run(tmp_path: Path) -> None:
    cmd = pytest_command("/usr/bin/python3", tmp_path, ["-x"])
    assert cmd[:4] == ["/usr/bin/python3", "-I", "-B", "-c"]
    assert repr(str(tmp_path / "plugin")) in cmd[4]  # the plugin's directory on sys.path
    assert cmd[cmd.index("-c", 4) + 1] == str(tmp_path / "pytest.ini")  # the only ini file
    assert cmd[cmd.index("--rootdir") + 1] == cmd[cmd.index("--confcutdir") + 1] == str(tmp_path / "tests")
    assert cmd[cmd.index("no:cacheprovider") - 1:cmd.index("no:cacheprovider") + 1] == ["-p", "no:cacheprovider"]
    assert cmd[cmd.index(PLUGIN_MODULE) - 1] == "-p"
    assert "--import-mode=append" in cmd
    assert cmd[-2:] == ["-x", str(tmp_path / "tests")]  # extra options before the tests


def test_unneeded_plugins_keeps_what_a_suite_names(tmp_path: Path) -> None:
    from reliabench.hidden_tests.staging import UNUSED_PLUGINS, unneeded_plugins

    tests = tmp_path / "t"
    (tests / "sub").mkdir(parents=True)
    (tests / "test_a.py").write_text("def test_a(tmp_path):\n    assert tmp_path\n", encoding="utf-8")
    assert unneeded_plugins(tests) == (*UNUSED_PLUGINS, "junitxml", "doctest", "legacypath")
    # a helper or data file counts as much as a test module; __pycache__ does not
    (tests / "__pycache__").mkdir()
    (tests / "__pycache__" / "x.pyc").write_bytes(b"tmpdir record_property doctest")
    assert "legacypath" in unneeded_plugins(tests)
    (tests / "sub" / "helpers.py").write_text("def f(request):\n    return request.node.fspath\n", encoding="utf-8")
    assert "legacypath" not in unneeded_plugins(tests)
    (tests / "conftest.py").write_text("def pytest_runtest_setup(item):\n    item.config.stash\n"
                                       "def f(record_testsuite_property):\n    pass\n", encoding="utf-8")
    assert "junitxml" not in unneeded_plugins(tests)
    assert "doctest" in unneeded_plugins(tests)
    (tests / "test_readme.txt").write_text("no examples\n", encoding="utf-8")  # pytest collects test*.txt
    assert unneeded_plugins(tests) == UNUSED_PLUGINS


def test_pytest_command_blocks_the_unneeded_plugins(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("def test_a(tmpdir):\n    pass\n", encoding="utf-8")
    cmd = pytest_command("python", tmp_path, [])
    blocked = [cmd[i + 1] for i, arg in enumerate(cmd) if arg == "-p" and cmd[i + 1].startswith("no:")]
    assert "no:cacheprovider" in blocked and "no:doctest" in blocked and "no:legacypath" not in blocked
    given = pytest_command("python", tmp_path, [], ("stepwise",))
    assert [a for a in given if a.startswith("no:")] == ["no:stepwise"]
