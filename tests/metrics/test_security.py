"""Security policy files: allow/deny lists by rule and CWE, threshold, validation messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reliabench.cli import main
from reliabench.errors import ConfigError
from reliabench.metrics.security import DEFAULT_THRESHOLD, load_security_config
from reliabench.records import Finding


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "policy.toml"
    p.write_text(text)
    return p


def test_allow_and_deny_lists(tmp_path: Path) -> None:
    cfg = load_security_config(write(tmp_path, 'threshold = "medium"\nallow_rules = ["B602"]\n'
                                               'deny_cwes = [502]\n'))
    assert cfg.threshold is not None and str(cfg.threshold) == "medium:medium"
    flt = cfg.finding_filter
    assert not flt.counts(Finding("bandit", "B602", "high", "high", 78), DEFAULT_THRESHOLD)
    assert flt.counts(Finding("bandit", "B301", "low", "low", 502), DEFAULT_THRESHOLD)  # denied CWE
    assert flt.counts(Finding("bandit", "B605", "high", "high", 78), DEFAULT_THRESHOLD)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("colour = 1\n", r"policy.toml: colour: unknown key"),
        ("threshold = 3\n", r"threshold: expected a string"),
        ('threshold = "huge"\n', r"threshold: severity must be one of"),
        ('allow_cwes = ["78"]\n', r"allow_cwes: expected a list of integers"),
        ("deny_rules = [1]\n", r"deny_rules: expected a list of strings"),
        ("= nope\n", r"invalid TOML"),
    ],
)
def test_policy_errors(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_security_config(write(tmp_path, text))


def test_score_applies_policy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = {"tool": "bandit", "rule_id": "B602", "severity": "high", "confidence": "high", "cwe": 78}
    data = tmp_path / "r.jsonl"
    data.write_text("".join(json.dumps({"task_id": "t", "agent": "a", "rollout": i, "passed": True,
                                        "findings": [f] if i < 2 else []}) + "\n" for i in range(4)))
    policy = write(tmp_path, 'allow_rules = ["B602"]\n')

    def sec(*extra: str) -> float:
        assert main(["score", str(data), "-k", "1", "--format", "json", *extra]) == 0
        return float(json.loads(capsys.readouterr().out)["agents"][0]["metrics"]
                     ["security_adjusted_reliability@1"]["value"])

    assert sec() == pytest.approx(0.5)
    assert sec("--security-config", str(policy)) == 1.0
