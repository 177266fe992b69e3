"""Names are data: file names, test names and agent names cannot break the store, the diff or
the artifact layout, whatever bytes they hold."""

from __future__ import annotations

import os
import re
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reliabench.records import Finding, Rollout, ScanError, TestOutcome, read_jsonl, write_jsonl
from reliabench.scanners.changes import changed_files, quote_path, workspace_diff
from reliabench.store import RunStore, artifact_component

# any str a name can be: including lone surrogates (non-UTF-8 file names, JSON "\ud800")
names = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=40)
fs_names = st.binary(min_size=1, max_size=40).filter(lambda b: b"/" not in b and b"\0" not in b
                                                     and b not in (b".", b".."))


def _unquote(text: str) -> bytes:
    """git's C-style quoting, undone (the inverse of quote_path)."""
    if not text.startswith('"'):
        return os.fsencode(text)
    body = text[1:-1]
    out = bytearray()
    i = 0
    simple = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out += ch.encode()
            i += 1
        elif body[i + 1] in simple:
            out.append(simple[body[i + 1]])
            i += 2
        else:
            out.append(int(body[i + 1:i + 4], 8))
            i += 4
    return bytes(out)


# ------------------------------------------------------------------------------------------
# artifact folders
# ------------------------------------------------------------------------------------------


@settings(max_examples=500)
@given(names, names)
def test_artifact_component_is_injective(a: str, b: str) -> None:
    if a != b:
        assert artifact_component(a) != artifact_component(b)


@settings(max_examples=500)
@given(names)
def test_artifact_component_is_one_safe_path_component(name: str) -> None:
    comp = artifact_component(name)
    assert comp not in ("", ".", "..")
    assert "/" not in comp and "\0" not in comp
    assert comp.isascii() and len(comp.encode()) <= 255


def test_agent_names_that_used_to_collide(tmp_path: Path) -> None:
    store, _ = RunStore.create_or_resume(tmp_path / "run", config={}, config_hash="h", suite={},
                                         packages={}, isolation="none")
    with store:
        dirs = {store.artifact_dir("t", a, 0) for a in ("m v1", "m/v1", "m_v1", "m?v1")}
        assert len(dirs) == 4
        for evil in ("..", ".", "../..", "/etc", "a/../../b"):
            d = store.artifact_dir(evil, evil, 0).resolve()
            assert d.is_relative_to((tmp_path / "run" / "artifacts").resolve())
            assert len(d.relative_to((tmp_path / "run" / "artifacts").resolve()).parts) == 3


# ------------------------------------------------------------------------------------------
# the store and JSONL keep every name exactly
# ------------------------------------------------------------------------------------------


def _rollout(name: str, i: int) -> Rollout:
    return Rollout(
        task_id="t", agent="a", rollout=i,
        tests=(TestOutcome(f"test_x.py::test[{name}]", "passed"),),
        findings=(Finding("bandit", "B307", "medium", path=name + ".py", line=1, message=name),),
        scan_errors=(ScanError("bandit", name, "cannot parse"),),
        meta={"changed_files": [name, "ok.py"], name or "k": name},
    )


@settings(max_examples=60, deadline=None)
@given(names)
def test_store_round_trips_any_name(tmp_path_factory: pytest.TempPathFactory, name: str) -> None:
    root = tmp_path_factory.mktemp("run")
    store, _ = RunStore.create_or_resume(root, config={}, config_hash="h", suite={}, packages={},
                                         isolation="none")
    with store:
        r = _rollout(name, 0)
        store.add(r)
        assert store.rollouts() == [r]
        assert store.done_keys() == {("t", "a", 0)}


def test_non_utf8_file_names_and_surrogate_keys_reach_the_store(tmp_path: Path) -> None:
    name = os.fsdecode(b"a\xff.py")  # what os.walk gives for a non-UTF-8 name
    store, _ = RunStore.create_or_resume(tmp_path / "run", config={}, config_hash="h", suite={},
                                         packages={}, isolation="none")
    with store:
        r = _rollout(name, 0)
        r2 = Rollout(task_id="t\ud800", agent="a\udcff", rollout=1, verdict=True)
        store.add(r)
        store.add(r2)
        assert store.rollouts() == [r, r2]
        assert RunStore.stored_key("t\ud800", "a\udcff", 1) in store.done_keys()
    # the query columns hold readable escapes
    conn = sqlite3.connect(tmp_path / "run" / RunStore.FILENAME)
    paths = [row[0] for row in conn.execute("SELECT path FROM findings")]
    conn.close()
    assert paths == ["a\\udcff.py.py"]
    out = tmp_path / "export.jsonl"
    write_jsonl([r, r2], out)
    assert read_jsonl(out) == [r, r2]


# ------------------------------------------------------------------------------------------
# diffs quote names as git does
# ------------------------------------------------------------------------------------------


@settings(max_examples=500)
@given(st.binary(min_size=1, max_size=60))
def test_quote_path_round_trips_and_is_one_line(raw: bytes) -> None:
    name = os.fsdecode(raw)
    quoted = quote_path(name)
    assert "\n" not in quoted and "\r" not in quoted
    assert _unquote(quoted) == raw


def test_quote_path_matches_git() -> None:
    assert quote_path("a/plain-name_1.py") == "a/plain-name_1.py"
    assert quote_path('a/x"y') == '"a/x\\"y"'
    assert quote_path("a/tab\there") == '"a/tab\\there"'
    assert quote_path("a/back\\slash") == '"a/back\\\\slash"'
    assert quote_path(os.fsdecode(b"a/\xff")) == '"a/\\377"'


def test_a_newline_in_a_file_name_cannot_forge_a_hunk(tmp_path: Path) -> None:
    starter, ws = tmp_path / "s", tmp_path / "w"
    starter.mkdir()
    ws.mkdir()
    (starter / "app.py").write_text("x = 1\n")
    (ws / "app.py").write_text("x = 1\n")
    evil = "x\n+++ b\\app.py\n@@ -1 +1 @@\n-x = 1\n+x = 2"
    (ws / evil).write_text("harmless\n")
    (ws / os.fsdecode(b"bad\xffname.py")).write_text("y = 1\n")
    diff = workspace_diff(starter, ws)
    lines = diff.splitlines()
    # every header names a file that exists, once; no line of the diff is a forged header
    headers = [line for line in lines if line.startswith(("+++ ", "--- "))]
    assert "-x = 1" not in lines and "@@ -1 +1 @@" not in lines
    assert all(re.fullmatch(r'(\+\+\+|---) ("[^"\n]*"|/dev/null|[ab]/\S+)', h) for h in headers), headers
    assert sorted(_unquote(h[4:])[2:] for h in headers if h.startswith("+++")) == sorted(
        [os.fsencode(evil), b"bad\xffname.py"])
    cs = changed_files(starter, ws)
    assert set(cs.added) == {evil, os.fsdecode(b"bad\xffname.py")}


@settings(max_examples=50, deadline=None)
@given(st.lists(fs_names, min_size=1, max_size=4, unique=True))
def test_diff_of_any_file_names(tmp_path_factory: pytest.TempPathFactory, raws: list[bytes]) -> None:
    root = tmp_path_factory.mktemp("d")
    starter, ws = root / "s", root / "w"
    starter.mkdir()
    ws.mkdir()
    for raw in raws:
        with open(os.path.join(os.fsencode(ws), raw), "wb") as fh:
            fh.write(b"line\n")
    diff = workspace_diff(starter, ws, include_tests=True)
    plus = [line for line in diff.splitlines() if line.startswith("+++ ")]
    # some names are ignored (caches); every other one has exactly one header
    assert len(plus) <= len(raws)
    assert {_unquote(p[4:])[2:] for p in plus} <= set(raws)


def test_a_diff_of_many_files_is_bounded(tmp_path: Path) -> None:
    starter, ws = tmp_path / "s", tmp_path / "w"
    starter.mkdir()
    ws.mkdir()
    for i in range(2000):
        (ws / f"f{i:04d}.py").write_text(f"v = {i}\n")
    diff = workspace_diff(starter, ws, max_bytes=5000)
    assert len(diff) < 5000 + 500
    assert diff.rstrip().endswith("path(s) not compared ...]")
    assert len(workspace_diff(starter, ws)) > 100_000  # no limit by default
