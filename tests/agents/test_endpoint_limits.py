"""Per-endpoint limits: the [[endpoints]] tables (one line per problem), the gate, Retry-After.

Concurrency is counted at a fake endpoint (the requests it holds at once), never timed; the
gate's spacing and pauses are checked on a fake clock.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from fake_openai_server import FakeOpenAIServer, Reply

from reliabench.agents.base import AgentRequest
from reliabench.agents.config import load_agents
from reliabench.agents.endpoint_limits import (
    MAX_RETRY_AFTER_S,
    EndpointBusyError,
    EndpointGate,
    EndpointLimits,
    parse_retry_after,
)
from reliabench.agents.openai_agent import OpenAIAgent
from reliabench.cli import main
from reliabench.errors import ConfigError

KEY_ENV = "RB_ENDPOINT_LIMITS_KEY"
GOOD = "```python path=a.py\nx = 1\n```"


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-limits")
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)


def agents_file(tmp_path: Path, base_url: str, endpoints: str, *, agents: int = 1, retries: int = 0) -> Path:
    p = tmp_path / "agents.toml"
    tables = "".join(f'[[agents]]\nname = "m{i}"\nkind = "openai"\nmodel = "fake-model"\n'
                     f'base_url = "{base_url}"\napi_key_env = "{KEY_ENV}"\nmax_retries = {retries}\n\n'
                     for i in range(agents))
    p.write_text(tables + endpoints, encoding="utf-8")
    return p


def request(ws: Path) -> AgentRequest:
    ws.mkdir(parents=True, exist_ok=True)
    return AgentRequest(task_id="t1", prompt="Write a.py.", workspace=ws, seed=1, rollout=0, timeout_s=60.0)


# --- Retry-After ---------------------------------------------------------------------------------


def test_retry_after_in_seconds_milliseconds_and_dates() -> None:
    assert parse_retry_after({"Retry-After": "2"}) == 2.0
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5  # the finer one first
    assert parse_retry_after({"retry-after": "Wed, 02 Dec 2026 10:00:30 GMT"},
                             now=1796205600.0) == pytest.approx(30.0)  # 10:00:00 GMT that day
    assert parse_retry_after({"retry-after": "86400"}) == MAX_RETRY_AFTER_S
    assert parse_retry_after({}) is None and parse_retry_after({"retry-after": "later"}) is None
    assert parse_retry_after({"retry-after": "-3"}) is None


# --- the gate, on a fake clock -------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.slept.append(round(s, 6))
        self.now += s


def test_requests_per_minute_are_spaced_and_a_pause_holds_every_request() -> None:
    clock = Clock()
    gate = EndpointGate(EndpointLimits("http://x/v1", requests_per_minute=120), clock=clock, sleep=clock.sleep)
    for _ in range(3):
        with gate.request(deadline=1e9):
            pass
    assert clock.slept == [0.5, 0.5]  # 120 a minute: one every 0.5 s, the first at once
    gate.pause(5.0)  # a Retry-After of 5 s
    with gate.request(deadline=1e9):
        pass
    assert clock.slept[-1] == 5.0
    with pytest.raises(EndpointBusyError, match="budget ran out"), gate.request(deadline=clock.now + 0.1):
        pass  # the next start is 0.5 s away


def test_max_in_flight_is_a_bound_and_a_deadline_ends_the_wait() -> None:
    gate = EndpointGate(EndpointLimits("http://x/v1", max_in_flight=1))
    with gate.request(deadline=1e18), pytest.raises(EndpointBusyError, match="1 request"), \
            gate.request(deadline=0.0):  # already past: no wait
        pass
    with gate.request(deadline=1e18):  # the place went back
        pass


# --- the agents file ---------------------------------------------------------------------------


@pytest.mark.parametrize(("endpoints", "line", "message"), [
    ('[[endpoints]]\nbase_url = "{url}"\nmax_in_flight = 0\n', 11, "endpoints[1].max_in_flight: expected an "
                                                                   "integer >= 1, got 0"),
    ('[[endpoints]]\nbase_url = "{url}"\nrequests_per_minute = -5\n', 11,
     "endpoints[1].requests_per_minute: expected a number > 0, got -5"),
    ('[[endpoints]]\nbase_url = "{url}"\nmax_in_flight = true\n', 11, "endpoints[1].max_in_flight: expected an integer >= 1, got True"),
    ('[[endpoints]]\nbase_url = "{url}"\nburst = 3\n', 11, "endpoints[1].burst: unknown key"),
    ('[[endpoints]]\nbase_url = "{url}"\n', 9, "endpoints[1]: expected max_in_flight or requests_per_minute"),
    ('[[endpoints]]\nmax_in_flight = 2\n', 9, "endpoints[1]: expected base_url"),
    ('[[endpoints]]\nbase_url = "http://elsewhere:1/v1"\nmax_in_flight = 2\n', 10,
     "endpoints[1].base_url: no agent of this file uses http://elsewhere:1/v1"),
    ('[[endpoints]]\nbase_url = "{url}"\nmax_in_flight = 2\n\n[[endpoints]]\nbase_url = "{url}/"\n'
     'max_in_flight = 3\n', 14, "endpoints[2].base_url: http://127.0.0.1:9/v1 has a table already"),
    ('[[endpoints]]\nbase_url = "ftp://x"\nmax_in_flight = 2\n', 10, "endpoints[1].base_url: expected an http"),
])
def test_each_problem_is_one_line_with_its_line(tmp_path: Path, endpoints: str, line: int, message: str) -> None:
    url = "http://127.0.0.1:9/v1"
    path = agents_file(tmp_path, url, endpoints.replace("{url}", url))
    with pytest.raises(ConfigError) as info:
        load_agents(path)
    assert str(info.value).startswith(f"{path}:{line}: {message}"), str(info.value)
    assert "\n" not in str(info.value) and info.value.exit_code == 2


def test_endpoints_must_be_tables(tmp_path: Path) -> None:
    path = tmp_path / "agents.toml"
    path.write_text('endpoints = 3\n\n[[agents]]\nname = "m"\nkind = "openai"\nmodel = "x"\n')
    with pytest.raises(ConfigError, match=r"agents.toml:1: endpoints: expected an array of tables"):
        load_agents(path)


COMMAND_AGENT = ('[[agents]]\nname = "cli"\nkind = "command"\ncommand = "true"\n'
                 'base_url = "http://127.0.0.1:9/v1"\n\n')
TABLE = '[[endpoints]]\nbase_url = "http://127.0.0.1:9/v1"\nmax_in_flight = 2\n'


def test_a_table_only_command_agents_reach_is_refused_not_ignored(tmp_path: Path) -> None:
    # a command agent's program talks to its endpoint itself: a table would bound nothing
    path = tmp_path / "agents.toml"
    path.write_text(COMMAND_AGENT + TABLE, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_agents(path)
    msg = str(info.value)
    assert msg.startswith(f"{path}:8: endpoints[1].base_url: agent 'cli' (kind command) reaches "
                          "http://127.0.0.1:9/v1 with requests reliabench does not see"), msg
    assert "openai agents only" in msg and "\n" not in msg and info.value.exit_code == 2


def test_a_table_shared_with_a_command_agent_gates_the_openai_agents(tmp_path: Path) -> None:
    path = agents_file(tmp_path, "http://127.0.0.1:9/v1", COMMAND_AGENT.replace("cli", "cli2") + TABLE)
    agents = {a.name: a for a in load_agents(path)}
    assert isinstance(agents["m0"], OpenAIAgent) and agents["m0"].gate is not None
    assert not hasattr(agents["cli2"], "gate")


def test_a_bad_table_stops_the_run_command_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = agents_file(tmp_path, "http://127.0.0.1:9/v1",
                       '[[endpoints]]\nbase_url = "http://127.0.0.1:9/v1"\nmax_in_flight = -1\n')
    assert main(["run", "py30", "--agents", str(path), "--out", str(tmp_path / "run"), "-n", "1"]) == 2
    err = capsys.readouterr().err
    assert f"{path}:11: endpoints[1].max_in_flight: expected an integer >= 1, got -1" in err
    assert "Traceback" not in err and not (tmp_path / "run").exists()


def test_agents_of_one_endpoint_share_its_gate(tmp_path: Path) -> None:
    path = agents_file(tmp_path, "http://127.0.0.1:9/v1",
                       '[[endpoints]]\nbase_url = "http://127.0.0.1:9/v1/"\nmax_in_flight = 2\n', agents=2)
    a, b = load_agents(path)
    assert isinstance(a, OpenAIAgent) and isinstance(b, OpenAIAgent)
    assert a.gate is not None and a.gate is b.gate and a.gate.limits.source == f"{path}:17"
    (c,) = load_agents(agents_file(tmp_path, "http://127.0.0.1:9/v1", ""))
    assert isinstance(c, OpenAIAgent) and c.gate is None  # no table: no gate, the SDK retries as before


# --- at a fake endpoint ----------------------------------------------------------------------------


class Counting:
    """Counts the requests held at once; each waits until released (or 0.2 s without a release)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = self.peak = 0

    def __call__(self, body: dict[str, Any], index: int) -> Reply:
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        threading.Event().wait(0.2)  # long enough for the others to pile up if they could
        with self.lock:
            self.now -= 1
        return Reply(GOOD)


def test_max_in_flight_bounds_the_requests_at_the_endpoint(tmp_path: Path) -> None:
    counting = Counting()
    with FakeOpenAIServer([counting], max_requests=50) as srv:
        path = agents_file(tmp_path, srv.base_url,
                           f'[[endpoints]]\nbase_url = "{srv.base_url}"\nmax_in_flight = 2\n', agents=3)
        agents = load_agents(path)
        results: list[str] = []

        def one(i: int) -> None:
            res = agents[i % 3].run(request(tmp_path / f"ws{i}"))
            results.append(res.status)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert results == ["completed"] * 6 and len(srv.requests) == 6
    assert counting.peak == 2  # three agents, six rollouts at once: two requests at the endpoint


def test_retry_after_is_honoured_and_a_lasting_429_stays_infrastructure(tmp_path: Path) -> None:
    script = [Reply("slow down", status=429, headers={"Retry-After": "0.2"}), Reply(GOOD)]
    with FakeOpenAIServer(script) as srv:
        path = agents_file(tmp_path, srv.base_url,
                           f'[[endpoints]]\nbase_url = "{srv.base_url}"\nrequests_per_minute = 6000\n', retries=2)
        (agent,) = load_agents(path)
        res = agent.run(request(tmp_path / "ws"))
    assert res.status == "completed", res.log
    assert len(srv.requests) == 2 and "HTTP 429; retry 1 of 2 in 0.2 s (Retry-After)" in res.log

    with FakeOpenAIServer([Reply("busy", status=429, headers={"Retry-After": "0"})]) as srv:
        path = agents_file(tmp_path, srv.base_url,
                           f'[[endpoints]]\nbase_url = "{srv.base_url}"\nmax_in_flight = 1\n', retries=2)
        (agent,) = load_agents(path)
        res = agent.run(request(tmp_path / "ws2"))
    assert res.status == "infra_error" and res.meta["infra_reason"] == "rate_limited"  # never the model's
    assert len(srv.requests) == 3  # max_retries = 2: three tries, each through the gate

    with FakeOpenAIServer([Reply("down", status=503)]) as srv:
        path = agents_file(tmp_path, srv.base_url,
                           f'[[endpoints]]\nbase_url = "{srv.base_url}"\nmax_in_flight = 1\n', retries=0)
        (agent,) = load_agents(path)
        res = agent.run(request(tmp_path / "ws3"))
    assert res.status == "infra_error" and res.meta["infra_reason"] == "server_error" and len(srv.requests) == 1
