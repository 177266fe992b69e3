"""What the Ray executor ships: packing, unpacking, hash checks, what is left out (no Ray needed)."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import tarfile
import textwrap
from pathlib import Path

import pytest
from test_run_e2e import make_agents, make_suite  # tests/ is on sys.path (pythonpath in pyproject.toml)

from reliabench.agents.config import load_agents, recording_paths
from reliabench.errors import SandboxError, UsageError
from reliabench.run.executors import ray_bundle
from reliabench.run.executors.ray_bundle import BundleManifest, pack_run_bundle, unpack_run_bundle
from reliabench.store import RunStore
from reliabench.tasks.suite import load_suite


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    monkeypatch.syspath_prepend(str(tmp_path))
    return make_suite(tmp_path), make_agents(tmp_path)


def _names(manifest: BundleManifest) -> set[str]:
    return {f.name for f in manifest.files}


def test_round_trip_ships_suite_agents_and_referenced_files(setup: tuple[Path, Path],
                                                            tmp_path: Path) -> None:
    suite_dir, agents_file = setup
    suite = load_suite(suite_dir)
    # things that must NOT travel: hidden files, caches, a run directory, the suite twice
    (tmp_path / ".env").write_text("OPENAI_API_KEY=sk-secret\n")
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "my_agent.cpython-311.pyc").write_bytes(b"\0")
    run = tmp_path / "old-run"
    run.mkdir()
    (run / RunStore.FILENAME).write_bytes(b"sqlite")
    (run / "notes.txt").write_text("x")
    bundle = pack_run_bundle(suite, agents_file, hashlib.sha256(agents_file.read_bytes()).hexdigest())
    names = _names(bundle.manifest)
    assert {"agents/agents.toml", "agents/gens.jsonl", "agents/my_agent.py"} <= names
    assert {f"suite/{p.relative_to(suite_dir).as_posix()}" for p in suite_dir.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts} == {n for n in names if n.startswith("suite/")}
    assert not any(n.startswith("agents/suite/") or ".env" in n or "old-run" in n or n.endswith(".pyc")
                   for n in names)
    assert bundle.manifest.suite_hash == suite.content_hash
    assert bundle.manifest.size == sum(f.size for f in bundle.manifest.files)
    dest = tmp_path / "node"
    dest.mkdir()
    out = unpack_run_bundle(bundle.manifest, bundle.data, dest)
    assert load_suite(out.suite_root).content_hash == suite.content_hash
    assert out.agents_file.read_bytes() == agents_file.read_bytes()
    assert (out.agents_file.parent / "gens.jsonl").read_bytes() == (tmp_path / "gens.jsonl").read_bytes()
    assert [a.name for a in load_agents(out.agents_file)] == ["recorded", "py"]
    assert oct(dest.stat().st_mode & 0o777) == "0o711"


def test_permission_bits_survive(tmp_path: Path, setup: tuple[Path, Path]) -> None:
    suite_dir, _ = setup
    script = tmp_path / "bin" / "agent.sh"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o755)
    agents_file = tmp_path / "cmd.toml"
    agents_file.write_text('[[agents]]\nname = "c"\nkind = "command"\ncommand = ["./bin/agent.sh"]\n')
    agents_file.chmod(0o600)  # e.g. it holds a key: it stays private on the nodes
    bundle = pack_run_bundle(load_suite(suite_dir), agents_file)
    modes = {f.name: f.mode for f in bundle.manifest.files}
    assert modes["agents/bin/agent.sh"] == 0o755 and modes["agents/cmd.toml"] == 0o600
    dest = tmp_path / "node"
    dest.mkdir()
    out = unpack_run_bundle(bundle.manifest, bundle.data, dest)
    assert os.access(out.agents_file.parent / "bin" / "agent.sh", os.X_OK)
    assert out.agents_file.stat().st_mode & 0o777 == 0o600
    assert load_agents(out.agents_file)[0].name == "c"


def test_relative_path_outside_the_folder_is_refused(tmp_path: Path, setup: tuple[Path, Path]) -> None:
    suite_dir, _ = setup
    folder = tmp_path / "agents"
    folder.mkdir()
    agents_file = folder / "agents.toml"
    agents_file.write_text('[[agents]]\nname = "r"\nkind = "replay"\npath = "../gens.jsonl"\n')
    with pytest.raises(UsageError, match=r"agents\.toml: agents\[1\]\.path: '\.\./gens\.jsonl' leads "
                                         r"outside the agents file's folder"):
        pack_run_bundle(load_suite(suite_dir), agents_file)
    # an absolute path outside is not shipped: each node needs it, and the manifest says so
    agents_file.write_text(f'[[agents]]\nname = "r"\nkind = "replay"\npath = "{tmp_path / "gens.jsonl"}"\n')
    bundle = pack_run_bundle(load_suite(suite_dir), agents_file)
    assert bundle.manifest.not_shipped == (str(tmp_path / "gens.jsonl"),)
    assert "agents/gens.jsonl" not in _names(bundle.manifest)


def test_recording_paths_sees_every_reference(setup: tuple[Path, Path]) -> None:
    _, agents_file = setup
    with recording_paths() as refs:
        load_agents(agents_file)
    assert [(r.field, r.written) for r in refs] == [("agents[1].path", "gens.jsonl"), ("agents[2].path", ".")]
    assert all(r.resolved.is_absolute() for r in refs)
    load_agents(agents_file)  # outside the block nothing is recorded
    assert len(refs) == 2


def test_changed_files_are_refused(setup: tuple[Path, Path]) -> None:
    suite_dir, agents_file = setup
    suite = load_suite(suite_dir)
    with pytest.raises(UsageError, match=r"agents file .* changed since the run loaded it"):
        pack_run_bundle(suite, agents_file, "0" * 64)
    next(p for p in suite_dir.rglob("*.py")).write_text("# edited\n")
    with pytest.raises(UsageError, match=r"suite folder .* changed since the run loaded it \(content hash"):
        pack_run_bundle(suite, agents_file)


def test_unpack_names_what_differs(setup: tuple[Path, Path], tmp_path: Path) -> None:
    suite_dir, agents_file = setup
    bundle = pack_run_bundle(load_suite(suite_dir), agents_file)
    manifest = bundle.manifest
    # a file whose content differs from the manifest
    bad = dataclasses.replace(manifest, files=tuple(
        dataclasses.replace(f, sha256="0" * 64) if f.name == "agents/gens.jsonl" else f
        for f in manifest.files))
    (tmp_path / "a").mkdir()
    with pytest.raises(SandboxError, match=r"shipped file agents/gens\.jsonl differs after unpacking"):
        unpack_run_bundle(bad, bundle.data, tmp_path / "a")
    # a file missing from the data
    extra = dataclasses.replace(manifest, files=(*manifest.files, ray_bundle.BundleFile(
        "agents/zzz.txt", "0" * 64, 1, 0o644)))
    (tmp_path / "b").mkdir()
    with pytest.raises(SandboxError, match=r"lack agents/zzz\.txt"):
        unpack_run_bundle(extra, bundle.data, tmp_path / "b")
    # an entry that escapes, or is not in the manifest
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("agents/../../evil")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    (tmp_path / "c").mkdir()
    with pytest.raises(SandboxError, match=r"unexpected entry 'agents/\.\./\.\./evil'"):
        unpack_run_bundle(manifest, buf.getvalue(), tmp_path / "c")
    assert not (tmp_path / "evil").exists()


def test_too_large_is_refused_naming_the_culprit(setup: tuple[Path, Path], tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    suite_dir, _ = setup
    monkeypatch.setattr(ray_bundle, "MAX_BUNDLE_BYTES", 64 * 1024)
    data = tmp_path / "data"
    data.mkdir()
    (data / "big.bin").write_bytes(os.urandom(100 * 1024))
    agents_file = tmp_path / "big.toml"
    agents_file.write_text(textwrap.dedent("""
        [[agents]]
        name = "c"
        kind = "command"
        command = ["true"]
        readonly = ["data"]
    """))
    with pytest.raises(UsageError, match=r"exceed 0\.0625 MiB \(agents\[1\]\.readonly .*data: 0\.1 MiB"):
        pack_run_bundle(load_suite(suite_dir), agents_file)
