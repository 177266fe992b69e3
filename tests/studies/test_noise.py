"""Harness noise: flaky tests and verdicts on identical code, the noise rate, scoring policies.

The pure part uses hand-made records and re-test rows (exact expectations). The end-to-end
part runs the fixture suite ``tests/fixtures/flaky_suite`` (tests flaky ON PURPOSE: OS
randomness, the clock, test order; next to stable ones) through the sandbox with 23 re-runs
per rollout (24 runs in all). A fair-coin test shows no change in 24 runs with probability
2 * 2**-24 = 1.2e-7; three such checks (coin verdict, random test, clock test) keep this
test's own false-negative rate below 4e-7. The order-dependent test is deterministic: the
re-run orders come from fixed seeds, and its detection is pinned below.
"""

from __future__ import annotations

import json
import os
import shutil
import textwrap
from pathlib import Path

import pytest
from scipy import stats

from reliabench.cli import main
from reliabench.errors import InvalidArgumentError
from reliabench.records import Rollout, TestOutcome
from reliabench.report.noise_tables import noise_to_json
from reliabench.run.retest import NotReproducibleError, order_seed, rebuild_workspace
from reliabench.studies.noise import apply_flaky_policy, clopper_pearson, harness_noise

FIXTURE = Path(__file__).parents[1] / "fixtures" / "flaky_suite"


def rollout(task: str, agent: str, i: int, outcomes: dict[str, str], **kw: object) -> Rollout:
    tests = tuple(TestOutcome(n, o) for n, o in outcomes.items())  # type: ignore[arg-type]
    return Rollout(task_id=task, agent=agent, rollout=i, tests=tests, **kw)  # type: ignore[arg-type]


def row(task: str, agent: str, i: int, rep: int, outcomes: dict[str, str], status: str = "completed") -> dict:
    return {"task_id": task, "agent": agent, "rollout": i, "rep": rep, "status": status,
            "tests": [[n, o, False] for n, o in outcomes.items()]}


def test_clopper_pearson_matches_beta_quantiles() -> None:
    low, high = clopper_pearson(3, 20, 0.9)
    assert low == pytest.approx(stats.beta.ppf(0.05, 3, 18))
    assert high == pytest.approx(stats.beta.ppf(0.95, 4, 17))
    assert clopper_pearson(0, 5) [0] == 0.0 and clopper_pearson(5, 5)[1] == 1.0
    with pytest.raises(InvalidArgumentError, match="x=6"):
        clopper_pearson(6, 5)


def test_flips_verdicts_and_rate_by_hand() -> None:
    recs = [
        rollout("t", "A", 0, {"a": "passed", "b": "passed"}),   # b flips once, then back: 2 flips
        rollout("t", "A", 1, {"a": "passed", "b": "failed"}),   # stable failure
        rollout("u", "A", 0, {"c": "passed"}, status="agent_error"),  # cannot pass: verdict stable
    ]
    rows = [
        row("t", "A", 0, 0, {"a": "passed", "b": "failed"}),
        row("t", "A", 0, 1, {"a": "passed", "b": "passed"}),
        row("t", "A", 0, 2, {"a": "passed", "b": "passed"}, status="test_error"),  # left out
        row("t", "A", 1, 0, {"a": "passed", "b": "failed"}),
        row("t", "A", 1, 1, {"a": "passed", "b": "failed"}),
        row("u", "A", 0, 0, {"c": "failed"}),
    ]
    rep = harness_noise(recs, rows)
    # one agent's code flipped them, never the reference: not flaky, only listed (issue 20, 9)
    assert rep.flaky_tests == ()
    flaky = {(f.task_id, f.test): f for f in rep.code_flips}
    # b on t: rollout 0 runs P F P (2 flips), rollout 1 runs F F F (0): 6 runs, 2 flips, 1 rollout
    assert set(flaky) == {("t", "b"), ("u", "c")}
    assert (flaky[("t", "b")].runs, flaky[("t", "b")].flips, flaky[("t", "b")].rollouts) == (6, 2, 1)
    assert (flaky[("t", "b")].agents, flaky[("t", "b")].evidence) == (1, "")
    # the same flips are harness noise once the reference solution flips b too
    ref = [row("t", "", 0, rep, {"a": "passed", "b": o}) for rep, o in enumerate(["passed", "failed"])]
    with_ref = harness_noise(recs, rows + ref)
    (b,) = with_ref.flaky_tests
    assert (b.test, b.evidence, b.runs, b.flips, b.reference_runs, b.reference_flips) == (
        "b", "reference", 6, 2, 2, 1)
    assert [f.test for f in with_ref.code_flips] == ["c"]
    assert with_ref.rollouts == rep.rollouts  # reference rows are not rollouts
    by_key = {r.key: r for r in rep.rollouts}
    assert by_key[("t", "A", 0)].verdicts == (True, False, True)
    assert by_key[("t", "A", 0)].verdict_flaky
    assert not by_key[("t", "A", 1)].verdict_flaky
    # the agent_error rollout's test flips, but its verdict is always "fails"
    assert by_key[("u", "A", 0)].verdicts == (False, False) and not by_key[("u", "A", 0)].verdict_flaky
    assert rep.flaky_rollouts == 1 and rep.test_errors == 1 and rep.reruns == 5
    assert rep.noise_rate.value == pytest.approx(1 / 3)
    assert (rep.noise_rate.ci_low, rep.noise_rate.ci_high) == pytest.approx(clopper_pearson(1, 3))
    # variance split on task t (2 rollouts): verdicts of first runs (1, 0): s^2 = 0.5;
    # harness: rollout 0 q = 2/3 over 3 runs -> 2/9 * 3/2 = 1/3; rollout 1 -> 0; mean 1/6
    (split,) = rep.variance
    assert (split.tasks, split.total, split.harness) == (1, pytest.approx(0.5), pytest.approx(1 / 6))
    assert split.agent_part == pytest.approx(0.5 - 1 / 6)
    doc = noise_to_json(with_ref)
    assert doc["flaky_rollouts"] == 1 and {"task_id", "test", "runs", "flips", "evidence"} <= set(
        doc["flaky_tests"][0])
    assert [f["test"] for f in doc["code_flips"]] == ["c"]
    assert set(doc["noise_rate"]) >= {"value", "ci_low", "ci_high"}


def test_policies_change_exactly_the_flaky_verdicts() -> None:
    recs = [rollout("t", "A", i, {"a": "passed", "b": "failed" if i == 0 else "passed"}) for i in range(2)]
    rows = [row("t", "A", 0, rep, {"a": "passed", "b": o}) for rep, o in enumerate(["passed", "passed"])]
    rows += [row("t", "A", 1, 0, {"a": "passed", "b": "passed"})]
    # b flips on the reference solution too: harness noise
    rows += [row("t", "", 0, rep, {"a": "passed", "b": o}) for rep, o in enumerate(["failed", "passed"])]
    rep = harness_noise(recs, rows)
    assert [f.test for f in rep.flaky_tests] == ["b"]
    original = apply_flaky_policy(recs, rep, rows)
    assert [r.passes for r in original.records] == [False, True] and original.verdicts_changed == 0
    # majority of (F, P, P) is P
    maj = apply_flaky_policy(recs, rep, rows, flaky_verdict="majority")
    assert [r.passes for r in maj.records] == [True, True] and maj.verdicts_changed == 1
    assert any("1 of 2 rollout verdict(s) changed" in n for n in maj.notes)
    # without b, rollout 0 passes on a alone
    exc = apply_flaky_policy(recs, rep, rows, exclude_flaky_tests=True)
    assert [r.passes for r in exc.records] == [True, True]
    assert exc.excluded_tests == 1 and exc.tests_removed == 2
    with pytest.raises(InvalidArgumentError, match="flaky_verdict"):
        apply_flaky_policy(recs, rep, rows, flaky_verdict="best")


def test_no_retest_is_an_error() -> None:
    with pytest.raises(InvalidArgumentError, match="reliabench retest"):
        harness_noise([rollout("t", "A", 0, {"a": "passed"})], [])


def test_rebuild_refuses_unkept_files(tmp_path: Path) -> None:
    starter = tmp_path / "starter"
    starter.mkdir()
    (starter / "keep.py").write_text("x = 1\n")
    (starter / "gone.py").write_text("y = 1\n")
    r = Rollout(task_id="t", agent="A", rollout=3, verdict=True,
                meta={"changed_files": ["big.bin", "gone.py", "new.py"], "deleted_files": ["gone.py"]})
    with pytest.raises(NotReproducibleError, match=r"t/A/3: changed file 'big.bin' was not kept"):
        rebuild_workspace(tmp_path / "ws", starter, {"new.py": b"z = 2\n"}, r)
    rebuild_workspace(tmp_path / "ws", starter, {"new.py": b"z = 2\n", "big.bin": b"0"}, r)
    assert sorted(p.name for p in (tmp_path / "ws").iterdir()) == ["big.bin", "keep.py", "new.py"]
    old = Rollout(task_id="t", agent="A", rollout=0, verdict=True, meta={"changed_files": ["gone.py"]})
    with pytest.raises(NotReproducibleError, match="did not record deletions"):
        rebuild_workspace(tmp_path / "ws2", starter, {}, old)


def test_order_seeds_put_the_dependent_test_first_sometimes() -> None:
    # pins the determinism the end-to-end test relies on: among the 23 seeded re-run orders of
    # the noisy task's rollout 0, some run test_order_dependent before test_order_setup
    import random

    names = ["test_deterministic", "test_random_coin", "test_clock_parity", "test_order_setup",
             "test_order_dependent"]
    early = 0
    for rep in range(23):
        items = list(names)
        random.Random(order_seed("noisy", "replayed", 0, rep)).shuffle(items)
        early += items.index("test_order_dependent") < items.index("test_order_setup")
    assert 0 < early < 23


@pytest.mark.slow
def test_retest_tells_flaky_from_stable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    os.chmod(tmp_path, 0o755)
    suite = tmp_path / "suite"
    shutil.copytree(FIXTURE, suite)
    gens = [{"task_id": t, "rollout": 0, "files": {"calc.py": "def add(a, b):\n    return a + b\n"}}
            for t in ("stable", "coin", "noisy")]
    (tmp_path / "gens.jsonl").write_text("".join(json.dumps(g) + "\n" for g in gens))
    agents = tmp_path / "agents.toml"
    agents.write_text(textwrap.dedent("""
        [[agents]]
        name = "replayed"
        kind = "replay"
        path = "gens.jsonl"
    """))
    out = tmp_path / "run"
    # 22 re-runs during the run (the runner's hook), the 23rd by `reliabench retest` (top-up)
    assert main(["run", str(suite), "--agents", str(agents), "-n", "1", "--out", str(out),
                 "--workers", "2", "--retest", "22", "--scanner", "bandit"]) == 0
    capsys.readouterr()
    assert main(["retest", str(out), "--times", "23", "--workers", "2", "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert "3 re-run(s) executed" in captured.err
    # one agent: only the reference solutions' 23 runs per task tell the harness's noise
    assert "69 run(s) of reference solutions" in captured.err
    doc = json.loads(captured.out)
    flaky = {(f["task_id"], f["test"].split("::")[-1]) for f in doc["flaky_tests"]}
    assert flaky == {("coin", "test_coin"), ("noisy", "test_random_coin"), ("noisy", "test_clock_parity"),
                     ("noisy", "test_order_dependent")}
    assert all(f["runs"] == 24 and f["evidence"] == "reference" and f["reference_runs"] == 23
               for f in doc["flaky_tests"])
    verdicts = {r["task_id"]: r for r in doc["rollouts"]}
    assert verdicts["coin"]["verdict_flaky"] and not verdicts["stable"]["verdict_flaky"]
    assert all(verdicts["stable"]["verdicts"]) and len(verdicts["stable"]["verdicts"]) == 24
    assert doc["retested_rollouts"] == 3
    rate = doc["noise_rate"]
    assert rate["ci_low"] <= rate["value"] <= rate["ci_high"]
    assert doc["flaky_rollouts"] == sum(r["verdict_flaky"] for r in doc["rollouts"])

    # score: harness noise apart from agent variance; policies print their choice and counts
    assert main(["score", str(out), "-k", "1", "--format", "json", "--exclude-flaky-tests"]) == 0
    scored = json.loads(capsys.readouterr().out)
    assert scored["flaky_policy"]["exclude_flaky_tests"] and scored["flaky_policy"]["excluded_tests"] == 4
    # every rollout passes once the flaky tests are out (the code is right)
    (agent,) = scored["agents"]
    assert agent["metrics"]["reliability@1"]["value"] == pytest.approx(1.0)
    assert scored["harness_noise"]["flaky_rollouts"] == doc["flaky_rollouts"]
    assert main(["score", str(out), "-k", "1", "--flaky-verdict", "majority"]) == 0
    text = capsys.readouterr().out
    assert "harness noise" in text and "flaky verdicts = majority" in text
    assert "rollout verdict(s) changed by the flaky-test policy" in text


def test_score_policy_without_retests_is_a_usage_error(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    records = tmp_path / "r.jsonl"
    records.write_text(json.dumps({"task_id": "t", "agent": "a", "rollout": 0, "passed": True}) + "\n")
    assert main(["score", str(records), "--exclude-flaky-tests"]) == 2
    assert "no re-tests recorded" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------
# issue 20, finding 9: a rollout cannot manufacture a flaky test
# --------------------------------------------------------------------------------------------

_ADDER_TESTS = ("from adder import add\n\n\ndef test_small():\n    assert add(2, 3) == 5\n\n\n"
                "def test_zero():\n    assert add(7, 0) == 7\n")
# harness noise for real: the second test passes only when the first ran before it (shuffled re-runs)
_ORDERED_TESTS = ("from adder import add\n\nSTATE = {}\n\n\ndef test_setup():\n    STATE['ready'] = add(1, 1)\n\n\n"
                  "def test_dependent():\n    assert STATE.get('ready') == 2\n")
_GOOD = "def add(a, b):\n    return a + b\n"
_WRONG_ON_ZERO = "def add(a, b):\n    return a + b if b else a + 1\n"
TRICKS = {
    # right as pid 1 (a warm test worker runs the tests as pid 1), wrong elsewhere
    "pid": "import os\n\n\ndef add(a, b):\n    if b == 0 and os.getpid() != 1:\n        return a + 1\n"
           "    return a + b\n",
    # right in the rollout's own workspace, wrong in a re-test's rebuilt copy
    "retest_dir": "import os\n\n\ndef add(a, b):\n    if b == 0 and 'retest-' in os.getcwd():\n"
                  "        return a + 1\n    return a + b\n",
}
RETESTS = 6


def _manufacture_suite(root: Path) -> Path:
    from suite_helpers import one_task_suite

    for tid, tests in (("adder", _ADDER_TESTS), ("ordered", _ORDERED_TESTS)):
        suite = one_task_suite(root, {"adder.py": "def add(a, b):\n    raise NotImplementedError\n"},
                               {"test_adder.py": tests}, task_id=tid, name="manufacture")
        (suite / "tasks" / tid / "solution").mkdir()
        (suite / "tasks" / tid / "solution" / "adder.py").write_text(_GOOD)
    for p in [suite, *suite.rglob("*")]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    return suite


def test_the_reference_orders_reveal_the_order_dependent_test() -> None:
    # pins what the end-to-end test below relies on: on each path (0 fresh, 1 warm) the seeded
    # orders of the reference's re-runs put test_dependent first sometimes, not always
    import random

    from reliabench.run.retest import reference_key

    for path in ("fresh", "warm"):
        first = []
        for rep in range(RETESTS):
            items = ["test_setup", "test_dependent"]
            random.Random(order_seed(*reference_key("ordered", path), rep)).shuffle(items)
            first.append(items[0] == "test_dependent")
        assert 0 < sum(first) < RETESTS


@pytest.mark.slow
@pytest.mark.parametrize(("where", "trick"), [
    ("warm", "pid"),  # on a fresh path the pid trick is plain wrong code: nothing to manufacture
    ("warm", "retest_dir"), ("bubblewrap", "retest_dir"), ("namespaces", "retest_dir")])
def test_a_rollout_cannot_manufacture_a_flaky_test(tmp_path: Path, trick: str, where: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from sandbox_helpers import run_backend_or_skip, warm_or_skip
    from suite_helpers import replay_run

    from reliabench.store import RunStore

    if where == "warm":
        warm_or_skip()
        sandbox, test_workers = "auto", "warm"
    else:
        run_backend_or_skip(where)
        sandbox, test_workers = where, "fresh"
    os.chmod(tmp_path, 0o755)
    suite = _manufacture_suite(tmp_path)
    gens = []
    for tid in ("adder", "ordered"):
        gens += [{"agent": "attacker", "task_id": tid, "rollout": 0,
                  "files": {"adder.py": TRICKS[trick] if tid == "adder" else _GOOD}},
                 {"agent": "attacker", "task_id": tid, "rollout": 1,
                  "files": {"adder.py": _WRONG_ON_ZERO if tid == "adder" else _GOOD}}]
        gens += [{"agent": "honest", "task_id": tid, "rollout": i,
                  "files": {"adder.py": "def add(x, y):\n    return y + x\n"}} for i in range(2)]
    out = replay_run(tmp_path, suite, gens, ["attacker", "honest"], "-n", "2", "--workers", "2",
                     "--sandbox", sandbox, "--test-workers", test_workers, "--retest", str(RETESTS))
    capsys.readouterr()
    # the reference solutions' runs (and nothing more for the rollouts) by `reliabench retest`
    assert main(["retest", str(out), "--times", str(RETESTS), "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert "0 re-run(s) executed" in captured.err
    with RunStore.open_existing(out, readonly=True) as store:
        records = {r.key: r for r in store.rollouts()}
        rows = store.retest_rows()
    # every re-run took its rollout's own path
    path_of = {k: r.meta["test_path"] for k, r in records.items()}
    assert set(path_of.values()) == {test_workers}
    assert {row["status"] for row in rows} == {"completed"}
    doc = json.loads(captured.out)
    flaky = {(f["task_id"], f["test"].split("::")[-1]): f for f in doc["flaky_tests"]}
    # the order-dependent test is harness noise: it flips on the reference solution
    assert set(flaky) == {("ordered", "test_dependent")}
    assert flaky[("ordered", "test_dependent")]["evidence"] == "reference"
    # the attacker's flip, if its trick produced one on this path, is only listed apart
    code = {(f["task_id"], f["test"].split("::")[-1]) for f in doc["code_flips"]}
    assert code <= {("adder", "test_zero")}
    assert code == ({("adder", "test_zero")} if trick == "retest_dir" else set())

    assert main(["score", str(out), "-k", "1", "--format", "json", "--exclude-flaky-tests"]) == 0
    scored = {a["agent"]: a["metrics"]["reliability@1"]["value"]
              for a in json.loads(capsys.readouterr().out)["agents"]}
    # adder: attacker 1 of 2 (rollout 1 is always wrong on test_zero); ordered: 2 of 2
    assert scored == {"attacker": pytest.approx(0.75), "honest": pytest.approx(1.0)}
    assert main(["score", str(out), "-k", "1", "--format", "json", "--flaky-verdict", "majority"]) == 0
    scored = {a["agent"]: a["metrics"]["reliability@1"]["value"]
              for a in json.loads(capsys.readouterr().out)["agents"]}
    assert scored["attacker"] == pytest.approx(0.75)


def test_flips_in_two_agents_code_are_flaky_one_agents_are_not() -> None:
    recs = [rollout("t", agent, i, {"a": "passed"}) for agent in ("A", "B") for i in range(2)]
    flip = [row("t", "A", 0, 0, {"a": "failed"}), row("t", "A", 1, 0, {"a": "failed"})]
    one = harness_noise(recs, flip)
    assert one.flaky_tests == () and [(f.test, f.rollouts, f.agents) for f in one.code_flips] == [("a", 2, 1)]
    both = harness_noise(recs, [*flip, row("t", "B", 0, 0, {"a": "failed"})])
    assert [(f.test, f.rollouts, f.agents, f.evidence) for f in both.flaky_tests] == [("a", 3, 2, "agents")]


def test_majority_keeps_the_original_verdict_of_a_flip_only_its_code_makes() -> None:
    # rollout 0 fails b originally and passes it in both re-runs; b flips nowhere else
    recs = [rollout("t", "A", 0, {"a": "passed", "b": "failed"}), rollout("t", "A", 1, {"a": "passed", "b": "failed"})]
    rows = [row("t", "A", 0, rep, {"a": "passed", "b": "passed"}) for rep in range(2)]
    rows += [row("t", "A", 1, rep, {"a": "passed", "b": "failed"}) for rep in range(2)]
    rep = harness_noise(recs, rows)
    maj = apply_flaky_policy(recs, rep, rows, flaky_verdict="majority")
    assert [r.passes for r in maj.records] == [False, False] and maj.verdicts_changed == 0
    assert any("1 of them kept their original verdict" in n for n in maj.notes)
    exc = apply_flaky_policy(recs, rep, rows, exclude_flaky_tests=True)
    assert exc.excluded_tests == 0 and [r.passes for r in exc.records] == [False, False]


@pytest.mark.parametrize("runner", ["pytest", "plain"])
def test_warm_workers_run_the_seeded_order(tmp_path: Path, runner: str) -> None:
    # re-tests of warm rollouts stay warm: the order seed reaches both runners of the fork
    import random

    from sandbox_helpers import warm_or_skip

    from reliabench.hidden_tests.fresh import collect_hidden_tests
    from reliabench.warm import run_warm_tests

    worker = warm_or_skip()
    os.chmod(tmp_path, 0o755)
    ws, tests = tmp_path / "ws", tmp_path / "tests"
    ws.mkdir()
    tests.mkdir()
    (ws / "adder.py").write_text(_GOOD)
    (tests / "test_adder.py").write_text(_ORDERED_TESTS)
    for p in (ws, tests, *ws.iterdir(), *tests.iterdir()):
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    expected = collect_hidden_tests(ws, tests)
    seen = set()
    for seed in range(8):
        items = ["test_setup", "test_dependent"]
        random.Random(seed).shuffle(items)
        run = run_warm_tests(worker, ws, tests, expected=expected, test_runner=runner, order_seed=seed)
        outcome = {t.name.split("::")[-1]: t.outcome for t in run.outcomes}["test_dependent"]
        assert outcome == ("failed" if items[0] == "test_dependent" else "passed"), (seed, items)
        seen.add(outcome)
    assert seen == {"passed", "failed"}
