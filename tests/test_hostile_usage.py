"""Issue 20, finding 7: the numbers an agent reports can never make a run unreadable.

A usage report of ``{"tokens_in": 1e300}`` used to be stored as a 997-bit integer in
``record_json``; the reader refused it, so ``score``, ``export``, the reports AND ``run``'s
resume exited 2 for the whole run. Every number an agent reports is now checked where it is
taken in (``agents.usage``, ``agents.openai_agent``, ``run.draft`` through
``records.checked_cost``), and the store refuses to write a record that does not read back
(``RunStore._record_json``): these tests run the attacks as the product runs them, through
``reliabench run``, and read the run back with ``score``, ``export`` and a resume.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from suite_helpers import write_adder_suite

from reliabench import records
from reliabench.cli import main
from reliabench.errors import RecordError
from reliabench.records import Cost, Rollout, TestOutcome, read_jsonl
from reliabench.run.artifacts import RolloutArtifacts
from reliabench.run.recording import store_rollout
from reliabench.store import RunStore

GOOD = "def add(a, b):\n    return a + b\n"
TESTS = "from adder import add\n\ndef test_add():\n    assert add(1, 2) == 3\n"

# what a hostile agent writes into its usage file, one per rollout (as JSON text)
USAGE_ATTACKS = [
    '{"tokens_in": 1e300, "tokens_out": 5}',
    '{"tokens_in": -1, "usd": 0.5}',
    '{"usd": NaN, "tokens": 3}',
    '{"tokens_in": "1e999"}',
    '{"tokens_out": ' + str(2**70) + "}",
    '{"tokens_in": 9223372036854775807, "tokens_out": 9223372036854775807}',
    '{"usd": 1e999}',
    '{"usd": ' + "9" * 400 + "}",
]

COMMAND_AGENT = r'''
import json, os, sys
attacks = json.loads(sys.argv[1])
open("adder.py", "w").write({good!r})
open(os.environ["RELIABENCH_USAGE_FILE"], "w").write(attacks[int(os.environ["RELIABENCH_ROLLOUT"])])
'''

PYTHON_AGENT = '''
from pathlib import Path
from reliabench.agents.base import AgentResult

CASES = [
    dict(tokens=2**70, tokens_in=10**300, tokens_out=-1, usd=float("nan")),
    dict(tokens=True, usd=float("inf"), tokens_in=1.5e300),
    dict(tokens="12", usd=-0.5, tokens_out=float("-inf")),
    dict(tokens=10**5000, usd=10**400),
]

def solve(request):
    (Path(request.workspace) / "adder.py").write_text({good!r})
    return AgentResult(status="completed", **CASES[request.rollout])
'''


def _read_all(out: Path, tmp_path: Path, args: list[str], n: int,
              capsys: pytest.CaptureFixture[str]) -> list[Any]:
    """score, export and a resume of the run: each exits 0; return the exported records."""
    assert main(["score", str(out), "-k", "1", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["agents"]
    exported = tmp_path / "export.jsonl"
    assert main(["export", str(out), "-o", str(exported)]) == 0
    back = read_jsonl(exported)
    assert len(back) == n
    capsys.readouterr()
    assert main(args) == 0  # the resume reads the store: nothing left to run
    assert f"0 rollout(s) executed, {n} already recorded" in capsys.readouterr().err
    return back


@pytest.mark.sandbox
def test_command_agent_usage_numbers_keep_the_run_readable(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    os.chmod(tmp_path, 0o755)
    suite = write_adder_suite(tmp_path, "usage", TESTS)
    script = tmp_path / "agent.py"
    script.write_text(COMMAND_AGENT.format(good=GOOD))
    script.chmod(0o644)
    agents = tmp_path / "agents.toml"
    agents.write_text(textwrap.dedent(f"""
        [[agents]]
        name = "liar"
        kind = "command"
        command = ["/usr/bin/python3", "-I", "{script}", {json.dumps(json.dumps(USAGE_ATTACKS))}]
        readonly = ["{script}"]
    """))
    out = tmp_path / "run"
    n = len(USAGE_ATTACKS)
    args = ["run", str(suite), "--agents", str(agents), "-n", str(n), "--out", str(out),
            "--workers", "2"]
    assert main(args) == 0
    capsys.readouterr()
    back = _read_all(out, tmp_path, args, n, capsys)
    for r in back:
        assert r.status == "completed" and r.passes, r  # the attack costs it nothing else
        cost = r.cost
        assert cost is not None
        # nothing out of range was kept: the whole usage file was ignored, as any bad one
        assert (cost.tokens, cost.tokens_in, cost.tokens_out, cost.usd) == (None,) * 4, r
        assert cost.seconds is not None and cost.seconds >= 0


def test_python_agent_numbers_are_dropped_with_the_reason(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """AgentResult numbers of any agent kind go through records.checked_cost where the record is made."""
    os.chmod(tmp_path, 0o755)
    monkeypatch.syspath_prepend(str(tmp_path))
    suite = write_adder_suite(tmp_path, "usage", TESTS)
    (tmp_path / "liar_agent.py").write_text(PYTHON_AGENT.format(good=GOOD))
    agents = tmp_path / "agents.toml"
    agents.write_text('[[agents]]\nname = "liar"\nkind = "python"\ncallable = "liar_agent:solve"\n'
                      'path = "."\n')
    out = tmp_path / "run"
    args = ["run", str(suite), "--agents", str(agents), "-n", "4", "--out", str(out),
            "--workers", "1"]
    assert main(args) == 0
    capsys.readouterr()
    back = {r.rollout: r for r in _read_all(out, tmp_path, args, 4, capsys)}
    assert all(r.status == "completed" and r.passes for r in back.values())
    first = back[0]
    assert first.cost is not None and (first.cost.tokens, first.cost.tokens_in,
                                       first.cost.tokens_out, first.cost.usd) == (None,) * 4
    assert sorted(first.meta["cost_dropped"]) == ["tokens", "tokens_in", "tokens_out", "usd"]
    assert "2**63-1" in first.meta["cost_dropped"]["tokens"]
    assert back[1].meta["cost_dropped"]["tokens"].endswith("got True")
    assert back[2].meta["cost_dropped"]["tokens"].endswith("got '12'")
    assert sorted(back[3].meta["cost_dropped"]) == ["tokens", "usd"]


# ---- the store: what it accepts reads back -------------------------------------------------

_counts = st.one_of(st.none(), st.integers(min_value=-(2**80), max_value=2**80),
                    st.floats(allow_nan=True, allow_infinity=True), st.booleans(),
                    st.sampled_from(["12", "1e999", ""]))
_json_leaf = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**90), max_value=2**90),
                       st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8))
_json = st.recursive(_json_leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)),
    max_leaves=12)
_names = st.text(min_size=1, max_size=12)


@st.composite
def _rollouts(draw: st.DrawFn) -> Rollout:
    cost = None
    if draw(st.booleans()):
        cost = Cost(**{k: draw(_counts) for k in ("tokens", "usd", "seconds", "tokens_in",
                                                  "tokens_out", "agent_s", "test_s")})
    tests = draw(st.lists(st.tuples(_names, st.sampled_from(["passed", "failed", "error", "skipped"]),
                                    st.booleans()), max_size=3, unique_by=lambda t: t[0]))
    return Rollout(
        task_id=draw(_names), agent=draw(_names),
        rollout=draw(st.integers(min_value=0, max_value=2**63 - 1)),
        tests=tuple(TestOutcome(n, o, s) for n, o, s in tests),  # type: ignore[arg-type]
        status=draw(st.sampled_from(["completed", "agent_error", "timeout", "test_error"])),
        cost=cost, isolation=draw(st.one_of(st.none(), _names)),
        meta=draw(st.dictionaries(st.text(max_size=6), _json, max_size=3)),
    )


def _store(root: Path) -> RunStore:
    store, _ = RunStore.create_or_resume(root, config={}, config_hash="h", suite={}, packages={},
                                         isolation="none")
    return store


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_rollouts())
def test_whatever_the_store_accepts_reads_back(tmp_path: Path, r: Rollout) -> None:
    """The runner's own path (recording.store_rollout -> RunStore) never makes a record it cannot read."""
    root = Path(tempfile.mkdtemp(dir=tmp_path))
    with _store(root) as store:
        stored = store_rollout(store, r, RolloutArtifacts("", "", "", {}, written=True))
        (back,) = store.rollouts()
    assert json.loads(json.dumps(stored.meta)) == back.meta
    from dataclasses import replace

    assert back == replace(stored, meta=back.meta)
    with RunStore.open_existing(root, readonly=True) as ro:
        assert ro.rollouts() == [back]
    if (r.cost is None or records.checked_cost(r.cost)[0] == r.cost) and _finite_json(r.meta):
        assert stored == r  # a record that reads back is kept as it is
    if stored != r:  # one that does not is replaced by the minimal record, with the reason
        assert stored.status == "test_error" and "storing the rollout's record" in stored.meta["reason"]


def _finite_json(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite_json(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite_json(v) for v in value)
    return True


def test_store_refuses_a_record_that_would_not_read_back(tmp_path: Path) -> None:
    with _store(tmp_path / "run") as store:
        with pytest.raises(RecordError, match=r"cost\.tokens: expected a token count from 0 to 2\*\*63-1"):
            store.add(Rollout("t", "a", 0, verdict=True, cost=Cost(tokens=10**300)))
        with pytest.raises(RecordError, match="cannot be written as JSON: Out of range float"):
            store.add(Rollout("t", "a", 1, verdict=True, meta={"x": float("nan")}))
        with pytest.raises(RecordError, match="cost: the record would not read back as written"):
            store.add(Rollout("t", "a", 2, verdict=True, cost=Cost(tokens=2.5)))  # type: ignore[arg-type]
        assert store.rollouts() == []  # nothing was written
        store.add(Rollout("t", "a", 3, verdict=True, cost=Cost(tokens=2**60 + 1)))
        (back,) = store.rollouts()
    assert back.cost is not None and back.cost.tokens == 2**60 + 1  # exact, not through a float


def test_in_range_numbers_whose_sum_overflows_keep_reports_valid(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Own attack class: every number is in range, but their SUM is not a float.

    ``usd = 1.7e308`` is finite and the reader takes it; three rollouts of it made the mean
    ``inf``: ``score --format json`` wrote ``Infinity`` (not JSON) and the HTML report embedded it.
    """
    src = tmp_path / "big.jsonl"
    from reliabench.records import write_jsonl

    write_jsonl([Rollout("t", "a", i, verdict=i == 0,
                         cost=Cost(usd=1.7e308, seconds=1.7e308, tokens=2**63 - 1))
                 for i in range(3)], src)
    assert main(["score", str(src), "-k", "1", "--format", "json"]) == 0
    text = capsys.readouterr().out

    def refuse(constant: str) -> None:
        raise AssertionError(f"not JSON: {constant}")

    doc = json.loads(text, parse_constant=refuse)
    (agent,) = doc["agents"]
    assert agent["cost"]["usd"]["mean"] == pytest.approx(1.7e308)
    assert agent["cost"]["usd"]["total"] is None
    assert agent["cost"]["passes_per_usd"] == pytest.approx((1 / 3) / 1.7e308)
    html = tmp_path / "r.html"
    assert main(["report", str(src), "-o", str(html)]) == 0  # filterwarnings=error: no overflow
    assert "Infinity" not in html.read_text()
