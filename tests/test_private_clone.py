"""`make test` from a clone in a private (0700) folder: the affected tests pass or skip with the reason.

Issue 22's defect: cloned into ``mktemp -d`` (0700; Debian makes home folders 0700 too), the
namespaces cases failed ("No module named 'pytest'": the slot uid cannot reach the clone's
venv), the warm jail's ``/tmp`` showed the clone's parent folder, and "another user" cases
failed to import reliabench. Here the repository is cloned into such a folder with a venv
inside it (its packages are this venv's, its reliabench the clone's), and the affected test
files run there; a run that could not start its harness is refused before any rollout, one
line saying which path is unreachable and what to do.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from reliabench.files.untrusted import remove_tree

ROOT = Path(__file__).resolve().parents[1]
AFFECTED = [
    ("tests/test_hostile_rollouts.py", "namespaces or read_only or unreadable"),
    ("tests/warm/test_server.py", "attack or restart or dead_server or alone or only_the_workspace"),
]


def _clone(private: Path) -> Path:
    """The repository cloned into ``private``, with ``.venv`` inside the clone."""
    clone = private / "clone"
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone)], check=True,
                   timeout=300)
    status = subprocess.run(["git", "-C", str(ROOT), "diff", "HEAD", "--binary"], capture_output=True,
                            check=True, timeout=120).stdout
    if status:  # the tests of a working tree with changes run on those changes
        subprocess.run(["git", "-C", str(clone), "apply", "--whitespace=nowarn"], input=status, check=True,
                       timeout=120)
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(clone / ".venv")], check=True, timeout=300)
    purelib = Path(sysconfig.get_paths(vars={"base": str(clone / ".venv")})["purelib"])
    here = sysconfig.get_paths()["purelib"]
    (purelib / "zz_outer.pth").write_text(f"{clone / 'src'}\n{here}\n", encoding="utf-8")
    return clone


@pytest.mark.slow
def test_the_affected_tests_pass_or_skip_with_the_reason_from_a_0700_clone() -> None:
    if os.geteuid() != 0:
        pytest.skip("the affected tests switch to slot uids: they need root")
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and a git checkout to clone")
    private = Path(tempfile.mkdtemp())  # 0700, as mktemp -d makes it
    assert os.stat(private).st_mode & 0o777 == 0o700
    try:
        clone = _clone(private)
        python = str(clone / ".venv" / "bin" / "python")
        probe = subprocess.run([python, "-c", "import reliabench, pytest; print(reliabench.__file__)"],
                               capture_output=True, text=True, check=True, timeout=120)
        assert probe.stdout.startswith(str(clone / "src")), probe.stdout
        for test_file, selection in AFFECTED:
            proc = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", test_file,
                                   "-k", selection], cwd=clone, capture_output=True, text=True, check=False,
                                  timeout=3000)
            summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr[-2000:]
            assert proc.returncode == 0, f"{test_file}: {summary}\n{proc.stdout[-6000:]}{proc.stderr[-2000:]}"
            assert " passed" in summary, summary
            for line in proc.stdout.splitlines():  # every skip says why
                if line.startswith("SKIPPED"):
                    assert len(line.split(": ", 1)[-1]) > 20, line
    finally:
        remove_tree(private)


def test_a_run_whose_harness_cannot_start_as_the_slot_uid_is_refused_in_one_line(base: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("the namespaces backend needs root")
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and a git checkout to clone")
    from suite_helpers import write_adder_suite

    private = Path(tempfile.mkdtemp())
    try:
        clone = _clone(private)
        os.chmod(base, 0o755)
        suite = write_adder_suite(base, "private", "from adder import add\n\ndef test_add():\n    assert add(1, 2) == 3\n",
                                  world_readable=True)
        (base / "gens.jsonl").write_text(json.dumps({"task_id": "adder", "rollout": 0,
                                                      "files": {"adder.py": "def add(a, b):\n    return a + b\n"}})
                                         + "\n")
        (base / "agents.toml").write_text('[[agents]]\nname = "r"\nkind = "replay"\npath = "gens.jsonl"\n')
        proc = subprocess.run([str(clone / ".venv" / "bin" / "python"), "-m", "reliabench", "run", str(suite),
                               "--agents", str(base / "agents.toml"), "--out", str(base / "run"), "-n", "1",
                               "--sandbox", "namespaces", "--test-workers", "fresh"],
                              capture_output=True, text=True, check=False, timeout=600, cwd="/")
        errors = [line for line in proc.stderr.splitlines() if "error" in line]
        assert proc.returncode == 2, proc.stderr
        assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert "the test harness cannot start as the slot uid (namespaces backend): uid 61000 cannot reach" in errors[0]
        assert f"({private} is not accessible to it)" in errors[0] and "--sandbox bubblewrap" in errors[0]
        assert not (base / "run").exists()  # refused before anything was written
    finally:
        remove_tree(private)
