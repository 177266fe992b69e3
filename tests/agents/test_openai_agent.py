"""The openai kind, against tests/fake_openai_server.py (offline)."""

from __future__ import annotations

import json
import os
import socket
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))

from fake_openai_server import FakeOpenAIServer, Reply

from reliabench.agents import AgentRequest, OpenAIAgent, load_agents
from reliabench.agents import command as command_mod
from reliabench.agents.openai_agent import (
    FileBlock,
    parse_file_blocks,
    workspace_snapshot,
)
from reliabench.errors import SandboxError

KEY_ENV = "RB_FAKE_OPENAI_KEY"
KEY = "sk-test-123"


def block(path: str, body: str, lang: str = "python") -> str:
    return f"```{lang} path={path}\n{body}\n```"


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
                "all_proxy"):
        monkeypatch.delenv(var, raising=False)  # the fake server is on 127.0.0.1


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    w = tmp_path / "ws"
    w.mkdir()
    (w / "calc.py").write_text("def add(a, b):\n    raise NotImplementedError\n")
    return w


@pytest.fixture
def feedback(tmp_path: Path) -> Path:
    fb = tmp_path / "feedback"
    fb.mkdir()
    (fb / "test_visible.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
    )
    return fb


@pytest.fixture
def sandbox_ok() -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return command_mod.sandbox_backend("auto").name
        except SandboxError as exc:  # pragma: no cover - depends on the host
            pytest.skip(f"no sandbox: {exc}")


def make(tmp_path: Path, server: FakeOpenAIServer | str, extra: str = "",
         max_retries: int = 0) -> OpenAIAgent:
    base_url = server if isinstance(server, str) else server.base_url
    p = tmp_path / "agents.toml"
    p.write_text(
        f'[[agents]]\nname = "fake"\nkind = "openai"\nmodel = "fake-model"\n'
        f'base_url = "{base_url}"\napi_key_env = "{KEY_ENV}"\n'
        f'max_retries = {max_retries}\n{extra}\n'
    )
    (agent,) = load_agents(p)
    assert isinstance(agent, OpenAIAgent)
    return agent


# Worker slots are machine-wide uids (61000 + slot) and runs of one slot must not overlap:
# other processes testing the sandbox at the same time use the low slots, so pick our own.
SLOT = 2000 + os.getpid() % 1000


def req(ws: Path, **kw: Any) -> AgentRequest:
    base: dict[str, Any] = {"task_id": "t1", "prompt": "Implement add(a, b).", "workspace": ws,
                            "seed": 2**40 + 7, "rollout": 0, "timeout_s": 30.0,
                            "slot": SLOT}
    base.update(kw)
    return AgentRequest(**base)


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    srv = FakeOpenAIServer([block("calc.py", "def add(a, b):\n    return a + b")], api_key=KEY,
                           lifetime_s=30)
    with srv:
        yield srv


def test_writes_files_single_turn(tmp_path: Path, ws: Path, server: FakeOpenAIServer) -> None:
    agent = make(tmp_path, server, "temperature = 0.7\nmax_tokens = 500\n"
                                   "usd_per_1k_input = 1.0\nusd_per_1k_output = 2.0\n"
                                   'system_prompt = "Be brief."\nextra_body = { top_k = 5 }')
    res = agent.run(req(ws))
    assert res.status == "completed", res.log
    assert (ws / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert len(server.requests) == 1  # no visible tests: one turn
    body = server.requests[0]
    assert server.auth_headers[0] == f"Bearer {KEY}"
    assert body["model"] == "fake-model"
    assert body["temperature"] == 0.7
    assert body["max_tokens"] == 500
    assert body["seed"] == (2**40 + 7) % 2**31
    assert body["top_k"] == 5
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    user = body["messages"][1]["content"]
    assert "Implement add(a, b)." in user
    assert "raise NotImplementedError" in user  # the workspace is shown
    assert "path=" in user  # the reply format is always explained
    # usage: the fake counts words; cost = tokens/1000 * price
    pt, ct = res.meta["prompt_tokens"], res.meta["completion_tokens"]
    assert res.tokens == pt + ct
    assert res.usd == pytest.approx(pt / 1000 * 1.0 + ct / 1000 * 2.0)
    assert res.transcript is not None
    assert [m["role"] for m in res.transcript] == ["system", "user", "assistant"]
    assert res.meta["written"] == ["calc.py"]


def test_no_price_no_usd(tmp_path: Path, ws: Path, server: FakeOpenAIServer) -> None:
    res = make(tmp_path, server, "seed = false").run(req(ws))
    assert res.usd is None
    assert res.tokens is not None
    assert "seed" not in server.requests[0]
    assert "temperature" not in server.requests[0]


def test_multi_turn_with_feedback(tmp_path: Path, ws: Path, feedback: Path,
                                  sandbox_ok: str) -> None:
    script = [block("calc.py", "def add(a, b):\n    return a - b"),
              block("calc.py", "def add(a, b):\n    return a + b")]
    with FakeOpenAIServer(script, api_key=KEY) as srv:
        res = make(tmp_path, srv).run(req(ws, feedback_dir=feedback))
        assert res.status == "completed", res.log
        assert len(srv.requests) == 2
        second = srv.requests[1]["messages"]
        assert second[-1]["role"] == "user"
        assert "visible tests failed" in second[-1]["content"]
        assert "assert -1 == 3" in second[-1]["content"]  # pytest's output went back
    assert (ws / "calc.py").read_text().endswith("return a + b\n")
    assert res.meta["feedback_passed"] is True
    assert res.meta["turns"] == 2
    assert res.transcript is not None
    assert [m["role"] for m in res.transcript] == [
        "system", "user", "assistant", "tool", "user", "assistant", "tool"]
    assert not (ws / "test_visible.py").exists()  # visible tests are not copied in


def test_max_turns_bound(tmp_path: Path, ws: Path, feedback: Path, sandbox_ok: str) -> None:
    wrong = block("calc.py", "def add(a, b):\n    return 0")
    with FakeOpenAIServer([wrong], api_key=KEY) as srv:
        res = make(tmp_path, srv, "max_turns = 2").run(req(ws, feedback_dir=feedback))
        assert len(srv.requests) == 2
    assert res.status == "completed"
    assert res.meta["feedback_passed"] is False
    assert "max_turns=2 reached" in res.log


def test_path_escape_rejected(tmp_path: Path, ws: Path) -> None:
    (tmp_path / "outside").mkdir()
    (ws / "link").symlink_to(tmp_path / "outside")
    evil = "\n".join([
        block("/tmp/rb_evil_abs.py", "x = 1"),
        block("../evil.py", "x = 1"),
        block("link/evil.py", "x = 1"),
        block("ok.py", "x = 1"),
    ])
    with FakeOpenAIServer([evil, block("ok2.py", "y = 2")], api_key=KEY) as srv:
        res = make(tmp_path, srv).run(req(ws))
        assert len(srv.requests) == 2  # the refusals were told to the model
        told = srv.requests[1]["messages"][-1]["content"]
        assert "absolute paths are not allowed" in told
    assert res.status == "completed"
    assert (ws / "ok.py").exists()
    assert (ws / "ok2.py").exists()
    assert not Path("/tmp/rb_evil_abs.py").exists()
    assert not (tmp_path / "evil.py").exists()
    assert list((tmp_path / "outside").iterdir()) == []
    assert len(res.meta["rejected"]) == 3
    assert "'..' is not allowed" in res.log
    assert "outside the workspace" in res.log


def test_missing_api_key(tmp_path: Path, ws: Path, server: FakeOpenAIServer,
                         monkeypatch: pytest.MonkeyPatch) -> None:
    agent = make(tmp_path, server)
    monkeypatch.delenv(KEY_ENV)
    res = agent.run(req(ws))
    assert res.status == "infra_error"  # the harness's set-up, not the agent
    assert res.meta["infra_reason"] == "missing_api_key"
    assert f"environment variable {KEY_ENV} is not set" in res.log
    assert f"environment variable {KEY_ENV} is not set" in res.meta["reason"]
    assert server.requests == []


def test_wrong_api_key(tmp_path: Path, ws: Path, server: FakeOpenAIServer,
                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "wrong")
    res = make(tmp_path, server).run(req(ws))
    assert res.status == "infra_error"
    assert res.meta["infra_reason"] == "auth"
    assert "HTTP 401" in res.log
    assert "Incorrect API key" in res.log


def test_server_error_is_infra_error(tmp_path: Path, ws: Path) -> None:
    err = Reply(status=500, content="upstream exploded", headers={"retry-after-ms": "5"})
    with FakeOpenAIServer([err], api_key=KEY) as srv:
        res = make(tmp_path, srv).run(req(ws))  # max_retries = 0
        assert len(srv.requests) == 1
    assert res.status == "infra_error"
    assert res.meta["infra_reason"] == "server_error"
    assert "HTTP 500" in res.log
    assert "upstream exploded" in res.log


def test_transient_error_retried(tmp_path: Path, ws: Path) -> None:
    err = Reply(status=503, content="busy", headers={"retry-after-ms": "5"})
    with FakeOpenAIServer([err, block("calc.py", "ok = 1")], api_key=KEY) as srv:
        res = make(tmp_path, srv, max_retries=2).run(req(ws))
        assert len(srv.requests) == 2  # one transient error, retried by the SDK
    assert res.status == "completed", res.log
    with FakeOpenAIServer([err], api_key=KEY) as srv:
        res = make(tmp_path, srv, max_retries=2).run(req(ws))
        assert len(srv.requests) == 3  # bounded: 1 + max_retries
    assert res.status == "infra_error"
    assert res.meta["infra_reason"] == "server_error"
    assert "after 2 retries" in res.log


def test_connection_refused(tmp_path: Path, ws: Path) -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    res = make(tmp_path, f"http://127.0.0.1:{port}/v1").run(req(ws))
    assert res.status == "infra_error"
    assert res.meta["infra_reason"] == "unreachable"
    assert "APIConnectionError" in res.log


def test_request_timeout(tmp_path: Path, ws: Path) -> None:
    with FakeOpenAIServer([Reply("late", delay_s=3)], api_key=KEY) as srv:
        t0 = time.monotonic()
        res = make(tmp_path, srv, "timeout_s = 0.5").run(req(ws))
        assert time.monotonic() - t0 < 2.5
    assert res.status == "timeout"
    assert "timed out" in res.log


def test_rate_limited_then_ok(tmp_path: Path, ws: Path) -> None:
    busy = Reply(status=429, content="slow down", headers={"retry-after-ms": "5"})
    good = Reply(block("calc.py", "ok = 1"), prompt_tokens=40, completion_tokens=6)
    with FakeOpenAIServer([busy, good], api_key=KEY) as srv:
        res = make(tmp_path, srv, max_retries=2).run(req(ws))
        assert len(srv.requests) == 2  # the 429 was retried with back-off by the client
    assert res.status == "completed", res.log
    assert (res.tokens_in, res.tokens_out, res.tokens) == (40, 6, 46)
    with FakeOpenAIServer([busy], api_key=KEY) as srv:
        res = make(tmp_path, srv, max_retries=1).run(req(ws))
    assert res.status == "infra_error"
    assert res.meta["infra_reason"] == "rate_limited"


def test_bad_request_is_agent_error(tmp_path: Path, ws: Path) -> None:
    with FakeOpenAIServer([Reply(status=400, content="context too long")], api_key=KEY) as srv:
        res = make(tmp_path, srv).run(req(ws))
    assert res.status == "agent_error"  # the request itself: not infrastructure
    assert "infra_reason" not in res.meta


def test_hanging_endpoint_is_infra_error(tmp_path: Path, ws: Path) -> None:
    # the endpoint accepts the request and never answers; the call times out long before
    # the rollout's budget: the endpoint failed, not the agent
    with FakeOpenAIServer([Reply("late", delay_s=5)], api_key=KEY) as srv:
        res = make(tmp_path, srv, "request_timeout_s = 0.3\ntimeout_s = 30").run(req(ws))
    assert res.status == "infra_error", res.log
    assert res.meta["infra_reason"] == "endpoint_timeout"


def test_invalid_json_response(tmp_path: Path, ws: Path) -> None:
    with FakeOpenAIServer([Reply(raw_body=b"not json at all")], api_key=KEY) as srv:
        res = make(tmp_path, srv).run(req(ws))
    assert res.status == "agent_error"


def test_no_file_blocks_stops(tmp_path: Path, ws: Path, feedback: Path) -> None:
    with FakeOpenAIServer(["I cannot do this."], api_key=KEY) as srv:
        res = make(tmp_path, srv).run(req(ws, feedback_dir=feedback))
        assert len(srv.requests) == 1
    assert res.status == "completed"
    assert "no file blocks" in res.log
    assert (ws / "calc.py").read_text().endswith("NotImplementedError\n")


def test_sandbox_failure_is_infra_error(tmp_path: Path, ws: Path, feedback: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(name: str) -> object:
        raise SandboxError("no namespaces here")

    monkeypatch.setattr(command_mod, "sandbox_backend", broken)
    with FakeOpenAIServer([block("calc.py", "x = 1")], api_key=KEY) as srv:
        res = make(tmp_path, srv).run(req(ws, feedback_dir=feedback))
    assert res.status == "infra_error"
    assert "no namespaces here" in res.log


def test_thread_safe(tmp_path: Path, server: FakeOpenAIServer) -> None:
    from concurrent.futures import ThreadPoolExecutor

    agent = make(tmp_path, server)
    wss = []
    for i in range(6):
        w = tmp_path / f"w{i}"
        w.mkdir()
        wss.append(w)
    with ThreadPoolExecutor(6) as pool:
        results = list(pool.map(lambda w: agent.run(req(w)), wss))
    assert all(r.status == "completed" for r in results)
    assert all((w / "calc.py").exists() for w in wss)


# --- the reply format ----------------------------------------------------------------------


def test_parse_variants() -> None:
    text = "\n".join([
        "Sure! Here you go:",
        "```python path=a.py",
        "a = 1",
        "```",
        "```python",
        "print('no path: ignored')",
        "```",
        '``` path="dir/with space.txt"',
        "hello",
        "```",
        "```b.py",
        "b = 2",
        "```",
        "````markdown file=README.md",
        "```python",
        "nested = True",
        "```",
        "````",
        "```python path=a.py",
        "a = 2",
        "```",
    ])
    blocks, problems = parse_file_blocks(text)
    assert problems == []
    assert {b.path: b.content for b in blocks} == {
        "a.py": "a = 2\n",  # the later block wins
        "dir/with space.txt": "hello\n",
        "b.py": "b = 2\n",
        "README.md": "```python\nnested = True\n```\n",
    }


def test_parse_unclosed_block_not_written() -> None:
    blocks, problems = parse_file_blocks("```python path=a.py\nx = 1\n")
    assert blocks == []
    assert "not closed" in problems[0]


def test_parse_crlf_and_empty_file() -> None:
    blocks, _ = parse_file_blocks("```python path=a.py\r\nx = 1\r\n```\r\n```text path=e.txt\n```")
    assert blocks == [FileBlock("a.py", "x = 1\n"), FileBlock("e.txt", "")]


def test_snapshot_bounds_and_binary(tmp_path: Path) -> None:
    (tmp_path / "bin.dat").write_bytes(b"\0\1\2")
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "x.pyc").write_bytes(b"x")
    (tmp_path / "code.py").write_text("s = '```'\n")
    snap = workspace_snapshot(tmp_path)
    assert "`bin.dat` (binary" in snap
    assert "__pycache__" not in snap
    assert "````python\ns = '```'\n````" in snap  # a longer fence than the content's
    assert workspace_snapshot(tmp_path / "missing") == "The workspace is empty."


def test_fake_server_limits() -> None:
    import urllib.error
    import urllib.request

    with FakeOpenAIServer(["x"], max_requests=1) as srv:
        url = srv.base_url + "/chat/completions"
        data = json.dumps({"model": "m", "messages": []}).encode()
        with urllib.request.urlopen(urllib.request.Request(url, data=data)) as r:
            assert json.load(r)["choices"][0]["message"]["content"] == "x"
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(urllib.request.Request(url, data=data))
        info.value.close()
        assert info.value.code == 503


@pytest.mark.parametrize("usage", [
    '{"prompt_tokens": 1e300, "completion_tokens": 5, "total_tokens": 5}',
    '{"prompt_tokens": -1, "completion_tokens": 5}',
    '{"prompt_tokens": NaN, "completion_tokens": 5}',
    '{"prompt_tokens": "1e999", "completion_tokens": 5}',
    '{"prompt_tokens": 1180591620717411303424, "completion_tokens": 5}',
    '{"prompt_tokens": Infinity, "completion_tokens": 5}',
])
def test_endpoint_usage_out_of_range_is_left_out(tmp_path: Path, ws: Path, usage: str) -> None:
    """Issue 20, finding 7: an endpoint's usage numbers are checked like an agent's."""
    content = json.dumps(block("calc.py", "def add(a, b):\n    return a + b"))
    body = ('{"id": "x", "object": "chat.completion", "created": 1, "model": "fake-model", '
            '"choices": [{"index": 0, "message": {"role": "assistant", "content": ' + content
            + '}, "finish_reason": "stop", "logprobs": null}], "usage": ' + usage + "}")
    with FakeOpenAIServer([Reply(raw_body=body.encode(), headers={"Content-Type": "application/json"})],
                          api_key=KEY, lifetime_s=30) as srv:
        res = make(tmp_path, srv).run(req(ws))
    assert res.status == "completed", res.log  # the rollout itself is unharmed
    assert (ws / "calc.py").exists()
    assert (res.tokens, res.tokens_in, res.tokens_out) == (None, None, None)
    (why,) = res.meta["usage_dropped"]
    assert why.startswith("call 1: usage left out: expected a token count from 0 to 2**63-1")


def test_the_clients_of_all_rollouts_share_one_tls_context(tmp_path: Path, server: FakeOpenAIServer) -> None:
    from reliabench.agents import openai_agent

    agent = make(tmp_path, server)
    for i in range(2):
        ws = tmp_path / f"ws{i}"
        ws.mkdir()
        assert agent.run(req(ws)).status == "completed"
    context = openai_agent._tls_context()
    assert context is openai_agent._tls_context() and context.verify_mode.name == "CERT_REQUIRED"
    assert openai_agent._tls_context.cache_info().currsize == 1  # made once (~20 ms of CPU), not per rollout
