"""``reliabench score`` end to end: formats, worked examples, and one-line errors."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from reliabench.cli import main

EXAMPLE = Path(__file__).parents[2] / "examples" / "rollouts.jsonl"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def tau_trials(tmp_path: Path) -> Path:
    # tau-bench style: reward 1 = success. Task A: 4/4, B: 2/4, C: 0/4 trials succeed.
    rows = []
    for task, wins in (("A", 4), ("B", 2), ("C", 0)):
        for trial in range(4):
            rows.append({"task_id": task, "agent": "gpt", "rollout": trial, "passed": trial < wins})
    p = tmp_path / "tau.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def test_tau_bench_pass_hat_k_by_hand(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "score", str(tau_trials(tmp_path)), "-k", "1,2,3,4", "--format", "json")
    assert code == 0
    m = json.loads(out)["agents"][0]["metrics"]
    # pass^k = mean over tasks of C(c,k)/C(n,k):
    # k=1: (4/4 + 2/4 + 0)/3 = 1/2
    # k=2: (1 + C(2,2)/C(4,2) + 0)/3 = (1 + 1/6)/3 = 7/18
    # k=3: (1 + 0 + 0)/3 = 1/3 ; k=4: 1/3
    assert m["pass^1"]["value"] == pytest.approx(1 / 2)
    assert m["pass^2"]["value"] == pytest.approx(7 / 18)
    assert m["pass^3"]["value"] == pytest.approx(1 / 3)
    assert m["pass^4"]["value"] == pytest.approx(1 / 3)
    # reliability@2: A 1, B 1 - C(2,2)/C(4,2) = 5/6, C 0 -> (1 + 5/6)/3 = 11/18
    assert m["reliability@2"]["value"] == pytest.approx(11 / 18)
    assert m["pass^1"]["ci_low"] <= m["pass^1"]["value"] <= m["pass^1"]["ci_high"]


def test_json_shape(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "score", str(EXAMPLE), "-k", "1,5", "--format", "json", "--resamples", "200")
    assert code == 0
    doc = json.loads(out)
    agent = doc["agents"][0]
    assert {"agent", "tasks", "rollouts", "metrics"} <= agent.keys()
    for key in ("reliability@1", "pass^1", "misapplied_pass@1", "inflation@1", "macro_test_pass_rate",
                "strict_resolution_rate", "reliability@5"):
        assert {"value", "ci_low", "ci_high"} <= agent["metrics"][key].keys()
    assert "security_adjusted_reliability@1" not in agent["metrics"]


def test_other_formats(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "score", str(EXAMPLE), "-k", "1", "--format", "csv", "--resamples", "0")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert {r["metric"] for r in rows} >= {"reliability@1", "misapplied_pass@1"}
    code, out, _ = run(capsys, "score", str(EXAMPLE), "-k", "1", "--format", "markdown", "--resamples", "0")
    assert code == 0 and "| agent |" in out
    code, out, _ = run(capsys, "score", str(EXAMPLE), "-k", "1,5")
    assert code == 0 and "reliability@k" in out and "misapplied pass@k" in out


def test_security_columns_when_findings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "s.jsonl"
    f = {"tool": "bandit", "rule_id": "B602", "severity": "high", "confidence": "high", "cwe": 78}
    rows = [{"task_id": "t", "agent": "a", "rollout": i, "passed": True, "findings": [f] if i == 0 else []}
            for i in range(4)]
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, out, _ = run(capsys, "score", str(p), "-k", "1", "--format", "json")
    assert code == 0
    m = json.loads(out)["agents"][0]["metrics"]
    assert m["security_adjusted_reliability@1"]["value"] == pytest.approx(0.75)
    _, out, _ = run(capsys, "score", str(p), "-k", "1", "--format", "json", "--security-threshold", "critical")
    assert json.loads(out)["agents"][0]["metrics"]["security_adjusted_reliability@1"]["value"] == 1.0


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"task_id": "t", "agent": "a", "rollout": 0, "passed": true}\n{oops\n', ":2: malformed JSON"),
        ('{"task_id": "t", "rollout": 0, "passed": true}\n', ":1: agent: missing required key"),
        ('{"task_id": "t", "agent": "a", "rollout": 0, "passed": true}\n'
         '{"task_id": "t", "agent": "a", "rollout": 0, "passed": false}\n', ":2: rollout: duplicate"),
        ('{"task_id": "t", "agent": "a", "rollout": 0, "tests_total": 2, "tests_passed": 3}\n',
         ":1: tests_passed: tests_passed=3 exceeds tests_total=2 (c > n)"),
    ],
)
def test_bad_input_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str,
                                   expected: str) -> None:
    p = tmp_path / "bad.jsonl"
    p.write_text(content)
    code, out, err = run(capsys, "score", str(p))
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and expected in err and str(p) in err
    assert "Traceback" not in err


def test_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "score", str(EXAMPLE), "-k", "0")
    assert code == 2 and "k must be an integer >= 1" in err
    code, _, err = run(capsys, "score", str(EXAMPLE), "--security-threshold", "huge")
    assert code == 2 and "severity must be one of" in err
    code, _, err = run(capsys, "score", str(tmp_path / "missing.jsonl"))
    assert code == 2 and "no such file" in err
    code, _, err = run(capsys, "score", str(tmp_path))
    assert code == 2 and "not a run directory" in err
    code, _, err = run(capsys, "nonsense")
    assert code == 2
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    code, _, err = run(capsys, "score", str(empty))
    assert code == 2 and f"{empty}: no rollout records" in err


def test_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO(EXAMPLE.read_text()))
    code, out, _ = run(capsys, "score", "-", "-k", "1", "--format", "json", "--resamples", "0")
    assert code == 0 and len(json.loads(out)["agents"]) == 3


def test_a_folder_of_foreign_results_is_not_taken_for_a_run(capsys: pytest.CaptureFixture[str]) -> None:
    """A folder is a run only when it holds a store: another harness's folder is scored as such."""
    folder = Path(__file__).parents[1] / "fixtures" / "foreign" / "terminal_bench"
    code, out, err = run(capsys, "score", str(folder), "-k", "1", "--format", "json", "--resamples", "0")
    assert code == 0, err
    assert [a["agent"] for a in json.loads(out)["agents"]] == ["agent-t"]
