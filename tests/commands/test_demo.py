"""``reliabench demo`` (reliabench.commands.demo): the simulated agents on the bundled suite, offline.

One task and two rollouts keep it short; the figures of the full demo are pinned in
docs/reproduction.md and benchmarks, not here.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sandbox_helpers import backend_or_skip

from reliabench.cli import main
from reliabench.commands.demo import DEMO_AGENTS, DEMO_TEST_TIMEOUT_S, _stored_timeout
from reliabench.store import RunStore


@pytest.mark.slow
def test_demo_on_one_task_runs_marks_simulated_and_resumes(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    backend_or_skip("bubblewrap")
    os.chmod(tmp_path, 0o755)
    out = tmp_path / "demo"
    args = ["demo", "--out", str(out), "-n", "2", "--workers", "2", "--task", "bank_ledger",
            "--sandbox", "bubblewrap"]
    assert main(args) == 0
    first = capsys.readouterr().out
    assert "SIMULATED" in first
    assert "misapplied pass@k" in first and "reliability@k" in first
    assert (out / "report.html").is_file()
    with RunStore.open_existing(out, readonly=True) as store:
        records = store.rollouts()
    agents = {r.agent for r in records}
    assert len(agents) == 3 and len(records) == 3 * 2  # three simulated agents x 2 rollouts
    assert {r.task_id for r in records} == {"bank_ledger"}
    assert all(r.simulated for r in records)
    assert {r.isolation for r in records} <= {"bubblewrap", "warm"}
    with RunStore.open_existing(out, readonly=True) as store:
        assert store.run_info().test_timeout_s == DEMO_TEST_TIMEOUT_S
    # a second call resumes: nothing is run again, the same records are scored
    assert main(args) == 0
    capsys.readouterr()
    with RunStore.open_existing(out, readonly=True) as store:
        assert store.rollouts() == records


def test_demo_agents_file_is_shipped() -> None:
    text = DEMO_AGENTS.read_text(encoding="utf-8")
    assert DEMO_AGENTS.name == "demo-agents.toml"
    assert text.count('kind = "simulated"') == 3


@pytest.mark.parametrize("stored", [8.0, None])
def test_an_existing_run_keeps_its_own_test_timeout(tmp_path: Path, stored: float | None) -> None:
    """A demo run made with another cap (8 s, the demo's before) resumes with it, not the new default."""
    assert _stored_timeout(tmp_path / "none") is None
    (tmp_path / "empty").mkdir()
    assert _stored_timeout(tmp_path / "empty") is None
    config = {"n": 1} if stored is None else {"n": 1, "test_timeout_s": stored}
    store, resumed = RunStore.create_or_resume(tmp_path / "run", config=config, config_hash="h",
                                               suite={"name": "py30"}, packages={}, isolation="warm")
    store.close()
    assert not resumed
    assert _stored_timeout(tmp_path / "run") == stored
