"""``scan RUN`` applies the run's stored security policy, as ``score RUN`` does (issue 12)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from reliabench.cli import main
from reliabench.records import Finding, Rollout
from reliabench.store import RunStore
from reliabench.tasks.suite import resolve_suite


def _run(tmp_path: Path, policy: dict[str, object]) -> Path:
    suite = resolve_suite("py30")
    tasks = [t.id for t in suite.tasks][:2]
    out = tmp_path / "run"
    store, _ = RunStore.create_or_resume(
        out, config={"suite_path": str(suite.root), "security_policy": policy}, config_hash="h",
        suite={"name": suite.name, "version": suite.version, "hash": suite.content_hash},
        packages={}, isolation="none")
    shell = Finding("bandit", "B602", "high", "high", 78, "x.py", 3, "shell=True")
    md5 = Finding("bandit", "B324", "high", "high", 327, "x.py", 5, "md5")
    with store:
        for t in tasks:
            for i in range(2):
                # no artifacts: scan keeps these records as they are and only recomputes figures
                store.add(Rollout(t, "allowed", i, verdict=True, findings=(shell,), meta={"scanned": ["bandit"]}))
                store.add(Rollout(t, "flagged", i, verdict=True, findings=(md5,), meta={"scanned": ["bandit"]}))
    return out


def _scan_figures(text: str) -> dict[str, list[float]]:
    rows = {}
    for agent in ("allowed", "flagged"):
        line = next(x for x in text.splitlines() if re.search(rf"\b{agent}\b", x) and "." in x)
        rows[agent] = [float(v) for v in re.findall(r"\d\.\d{3}", line)]
    return rows


def test_scan_uses_the_stored_policy_like_score(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _run(tmp_path, {"allow_rules": ["B602"]})
    assert main(["score", str(run), "-k", "1", "--format", "json", "--resamples", "0"]) == 0
    doc = json.loads(capsys.readouterr().out)
    score_sec = {a["agent"]: a["metrics"]["security_adjusted_reliability@1"]["value"] for a in doc["agents"]}
    assert score_sec == {"allowed": 1.0, "flagged": 0.0}  # the policy allows B602
    assert main(["scan", str(run), "-k", "1", "--dry-run"]) == 0
    figures = _scan_figures(capsys.readouterr().out)
    # columns: reliability@1, sec-adj@1, insecure share of passing
    assert figures["allowed"][:2] == [1.0, score_sec["allowed"]]
    assert figures["flagged"][:2] == [1.0, score_sec["flagged"]]


def test_scan_security_config_replaces_the_stored_policy(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    run = _run(tmp_path, {"allow_rules": ["B602"]})
    cfg = tmp_path / "policy.toml"
    cfg.write_text('allow_rules = ["B324"]\n')
    assert main(["scan", str(run), "-k", "1", "--dry-run", "--security-config", str(cfg)]) == 0
    figures = _scan_figures(capsys.readouterr().out)
    assert figures["allowed"][1] == 0.0 and figures["flagged"][1] == 1.0
