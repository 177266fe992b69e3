"""Infrastructure failures are not agent failures: pre-run checks, retries, early stop, resume.

Against tests/fake_openai_server.py (offline): a missing key, 401, 429 then 200, 500, a
refused connection and a hanging endpoint.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import textwrap
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))

from fake_openai_server import FakeOpenAIServer, Reply
from suite_helpers import write_adder_suite

from reliabench.agents.config import load_agents
from reliabench.agents.infra import (
    INFRA_REASONS,
    InfraStopWatch,
    backoff_delay,
    infra_result,
    is_transient,
    parse_endpoint,
)
from reliabench.agents.preflight import check_agents, preflight_error
from reliabench.cli import main
from reliabench.errors import ConfigError, InfraStopError, InvalidArgumentError, PreflightError
from reliabench.records import Rollout
from reliabench.run.runner import RunSettings, run_suite
from reliabench.store import RunStore
from reliabench.tasks.suite import load_suite

KEY_ENV = "RB_INFRA_TEST_KEY"
KEY = "sk-infra-123"
GOOD = "```python path=adder.py\ndef add(a, b):\n    return a + b\n```"


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    monkeypatch.setenv("RELIABENCH_BACKOFF_SCALE", "0.01")  # 2 s -> 20 ms in tests
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
                "all_proxy"):
        monkeypatch.delenv(var, raising=False)


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = int(s.getsockname()[1])
    s.close()
    return port


def agents_file(tmp_path: Path, base_url: str, extra: str = "", name: str = "m") -> Path:
    p = tmp_path / "agents.toml"
    p.write_text(f'[[agents]]\nname = "{name}"\nkind = "openai"\nmodel = "fake-model"\n'
                 f'base_url = "{base_url}"\napi_key_env = "{KEY_ENV}"\nmax_retries = 0\n{extra}\n')
    return p


def make_suite(root: Path, tasks: int = 2) -> Path:
    return write_adder_suite(root, "infra", textwrap.dedent("""
            from adder import add

            def test_add():
                assert add(1, 2) == 3
        """), task_ids=[f"adder{i}" for i in range(tasks)])


# --- pure parts ------------------------------------------------------------------------------


def test_backoff_is_exponential_and_bounded() -> None:
    delays = [backoff_delay(a) for a in range(1, 10)]
    assert delays[:4] == [2.0, 4.0, 8.0, 16.0]
    assert max(delays) == 30.0
    assert delays == sorted(delays)
    with pytest.raises(InvalidArgumentError, match="attempt must be >= 1, got 0"):
        backoff_delay(0)


def test_transient_reasons() -> None:
    assert not is_transient("missing_api_key") and not is_transient("auth")
    assert is_transient("server_error") and is_transient("rate_limited")
    assert is_transient("something new")  # unknown: retried, as before
    assert set(INFRA_REASONS) >= {"missing_api_key", "auth", "unreachable", "endpoint_timeout",
                                  "rate_limited", "server_error", "sandbox"}
    res = infra_result("auth", "HTTP 401", log="turn 1")
    assert res.status == "infra_error" and res.meta == {"infra_reason": "auth", "reason": "HTTP 401"}
    with pytest.raises(InvalidArgumentError, match="got 'nope'"):
        infra_result("nope", "x")


def test_parse_endpoint_errors() -> None:
    assert parse_endpoint("http://localhost:11434/v1/").base_url == "http://localhost:11434/v1"
    assert parse_endpoint("http://localhost:11434/v1").is_loopback
    assert not parse_endpoint("https://api.openai.com/v1").is_loopback
    with pytest.raises(InvalidArgumentError, match="expected an http:// or https:// URL"):
        parse_endpoint("ftp://x/v1")


def test_openai_base_url_validated_at_load(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"agents\[1\]\.base_url: .*expected an http"):
        load_agents(agents_file(tmp_path, "localhost:8000/v1"))


def _r(i: int, status: str, reason: str | None = None, agent: str = "a") -> Rollout:
    meta = {"infra_reason": reason, "reason": f"why {reason}"} if reason else {}
    return Rollout("t", agent, i, verdict=False, status=status, meta=meta)


def test_stop_watch_rules() -> None:
    w = InfraStopWatch()
    assert w.observe(_r(0, "infra_error", "auth")) is None
    assert w.observe(_r(1, "infra_error", "auth")) is None
    msg = w.observe(_r(2, "infra_error", "auth"))
    assert msg is not None and "first 3 rollouts all failed on infrastructure (auth: why auth)" in msg
    assert w.observe(_r(3, "infra_error", "auth")) is None  # said once
    w = InfraStopWatch()
    for i, reason in enumerate(("auth", "server_error", "auth")):  # mixed reasons: no stop
        assert w.observe(_r(i, "infra_error", reason)) is None
    w = InfraStopWatch()
    assert w.observe(_r(0, "completed")) is None  # one real rollout clears the agent
    assert all(w.observe(_r(i, "infra_error", "auth")) is None for i in range(1, 6))
    w = InfraStopWatch(after=2)
    assert w.observe(_r(0, "infra_error", "x", agent="b")) is None
    assert w.observe(_r(0, "infra_error", "x", agent="c")) is None  # per agent
    assert w.observe(_r(1, "infra_error", "x", agent="b")) is not None


# --- pre-run checks --------------------------------------------------------------------------


def test_preflight_ok(tmp_path: Path) -> None:
    with FakeOpenAIServer([GOOD], api_key=KEY) as srv:
        agents = load_agents(agents_file(tmp_path, srv.base_url))
        assert check_agents(agents) == []
        assert srv.gets == ["/v1/models"]
        assert srv.requests == []  # no model call, no tokens spent


def test_preflight_missing_key_needs_no_network(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV)
    agents = load_agents(agents_file(tmp_path, f"http://127.0.0.1:{closed_port()}/v1"))
    for network in (True, False):
        (p,) = check_agents(agents, network=network)
        assert (p.agent, p.reason, p.network) == ("m", "missing_api_key", False)
        assert f"environment variable {KEY_ENV} is not set" in p.message


@pytest.mark.parametrize("case", ["refused", "auth", "hang"])
def test_preflight_endpoint_problems(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     case: str) -> None:
    with FakeOpenAIServer([GOOD], api_key=KEY, models_delay_s=3.0 if case == "hang" else 0) as srv:
        url = f"http://127.0.0.1:{closed_port()}/v1" if case == "refused" else srv.base_url
        if case == "auth":
            monkeypatch.setenv(KEY_ENV, "wrong")
        agents = load_agents(agents_file(tmp_path, url))
        (p,) = check_agents(agents, timeout_s=0.5)
        assert check_agents(agents, network=False) == []
    expected = {"refused": ("unreachable", "cannot connect to"),
                "auth": ("auth", f"answered HTTP 401: the API key in ${KEY_ENV} was refused"),
                "hang": ("endpoint_timeout", "did not answer within 0.5 s")}[case]
    assert p.reason == expected[0] and p.network
    assert expected[1] in p.message
    err = preflight_error([p])
    assert isinstance(err, PreflightError) and err.exit_code == 2
    assert str(err).startswith("agent 'm': ") and str(err).endswith("with --no-preflight)")
    assert "\n" not in str(err)


def test_run_refuses_before_starting(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    suite = make_suite(tmp_path)
    agents = agents_file(tmp_path, f"http://127.0.0.1:{closed_port()}/v1")
    out = tmp_path / "run"
    rc = main(["run", str(suite), "--agents", str(agents), "-n", "2", "--out", str(out),
               "--workers", "1", "--scanner", "none"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "agent 'm': cannot connect to http://127.0.0.1:" in err
    assert len([ln for ln in err.splitlines() if "error" in ln]) == 1
    assert not out.exists()  # nothing was started
    monkeypatch.delenv(KEY_ENV)
    rc = main(["run", str(suite), "--agents", str(agents), "-n", "2", "--out", str(out),
               "--no-preflight", "--scanner", "none"])
    assert rc == 2  # the key variable is checked even without the endpoint probe
    assert f"environment variable {KEY_ENV} is not set" in capsys.readouterr().err
    assert not out.exists()


# --- the runner ------------------------------------------------------------------------------


def _settings(n: int) -> RunSettings:
    return RunSettings(n=n, workers=1, scanners=(), agents_config_hash="x")


def test_early_stop_then_resume(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    os.chmod(tmp_path, 0o755)
    suite = load_suite(make_suite(tmp_path))
    with FakeOpenAIServer([GOOD], api_key=KEY) as srv:
        path = agents_file(tmp_path, srv.base_url)
        monkeypatch.setenv(KEY_ENV, "wrong")  # every call gets a 401
        out = tmp_path / "run"
        with pytest.raises(InfraStopError) as info:
            run_suite(suite, load_agents(path), out, _settings(4))
        msg = str(info.value)
        assert "agent 'm' stopped: its first 3 rollouts all failed on infrastructure (auth" in msg
        assert "run the same command again" in msg
        assert info.value.exit_code == 3
        with RunStore.open_existing(out) as store:
            recs = store.rollouts()
        # the first 3 decide; rollouts already in flight finish (1 test slot and 1 agent slot: up to two)
        assert len(recs) in (3, 4, 5)
        assert f"; {8 - len(recs)} rollout(s) not run" in msg, msg
        assert len(srv.requests) == len(recs)  # a 401 is not retried
        assert [r.status for r in recs] == ["infra_error"] * len(recs)
        assert all(r.tests == () and r.cost is not None and r.cost.test_s is None for r in recs)
        assert all(r.meta["infra_reason"] == "auth" for r in recs)

        monkeypatch.setenv(KEY_ENV, KEY)  # fixed: the same call resumes and reruns the 3
        summary = run_suite(suite, load_agents(path), out, _settings(4))
        assert (summary.planned, summary.skipped, summary.executed) == (8, 0, 8)
        with RunStore.open_existing(out) as store:
            recs = store.rollouts()
    assert len(recs) == 8 and all(r.status == "completed" and r.passes for r in recs)
    c = recs[0].cost
    assert c is not None and c.tokens_in and c.tokens_out and c.agent_s is not None
    assert c.test_s is not None and c.test_s > 0
    assert c.seconds == pytest.approx(c.agent_s + c.test_s, abs=0.002)


def test_transient_errors_retried_with_backoff(tmp_path: Path) -> None:
    os.chmod(tmp_path, 0o755)
    suite = load_suite(make_suite(tmp_path, tasks=1))
    err = Reply(status=500, content="upstream down")
    with FakeOpenAIServer([err, GOOD], api_key=KEY) as srv:
        summary = run_suite(suite, load_agents(agents_file(tmp_path, srv.base_url)),
                            tmp_path / "run1", _settings(1))
        assert len(srv.requests) == 2  # the 500 rollout was retried by the runner
    assert summary.passed == 1 and summary.infra_errors == 0
    with FakeOpenAIServer([err], api_key=KEY) as srv:
        summary = run_suite(suite, load_agents(agents_file(tmp_path, srv.base_url)),
                            tmp_path / "run2", _settings(1))
        assert len(srv.requests) == 3  # 1 + INFRA_RETRIES, then given up
    with RunStore.open_existing(tmp_path / "run2") as store:
        (rec,) = store.rollouts()
    assert rec.status == "infra_error" and rec.meta["infra_attempts"] == 3
    assert rec.meta["infra_reason"] == "server_error"


def test_cli_early_stop_exit_3_then_resume(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    os.chmod(tmp_path, 0o755)
    suite = make_suite(tmp_path, tasks=1)
    with FakeOpenAIServer([GOOD], api_key=KEY) as srv:
        agents = agents_file(tmp_path, srv.base_url)
        out = tmp_path / "run"
        args = ["run", str(suite), "--agents", str(agents), "-n", "4", "--out", str(out),
                "--workers", "1", "--scanner", "bandit"]
        monkeypatch.setenv(KEY_ENV, "wrong")
        assert main(args) == 2  # the pre-run check sees the 401 first
        assert f"the API key in ${KEY_ENV} was refused" in capsys.readouterr().err
        assert main([*args, "--no-preflight"]) == 3  # without it: 3 rollouts, then the stop
        err = capsys.readouterr().err
        assert "agent 'm' stopped: its first 3 rollouts all failed on infrastructure (auth" in err
        monkeypatch.setenv(KEY_ENV, KEY)
        assert main(args) == 0  # resumed: the infra errors rerun, the rest run
        assert main(["score", str(out), "--format", "json", "--resamples", "0"]) == 0
    doc = json.loads(capsys.readouterr().out.split("run directory:")[-1].split("\n", 1)[1])
    (a,) = doc["agents"]
    assert a["rollouts"] == 4 and a["infra_errors"] == 0
    assert a["metrics"]["reliability@1"]["value"] == 1.0
    assert a["cost"]["tokens_in"]["rollouts"] == 4 and a["cost"]["test_s"]["mean"] > 0


def test_backoff_scale_env() -> None:
    from reliabench.agents.infra import backoff_scale

    assert backoff_scale({}) == 1.0
    assert backoff_scale({"RELIABENCH_BACKOFF_SCALE": "0"}) == 0.0
    for bad in ("x", "-1", "nan"):
        with pytest.raises(InvalidArgumentError,
                           match=rf"RELIABENCH_BACKOFF_SCALE must be a number >= 0, got '{bad}'"):
            backoff_scale({"RELIABENCH_BACKOFF_SCALE": bad})
