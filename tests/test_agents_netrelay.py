"""``network = "endpoint"``: a sandboxed agent reaches its endpoint and nothing else."""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fake_openai_server import FakeOpenAIServer
from sandbox_helpers import endpoint_narrowing_or_skip

from reliabench.agents import AgentRequest, CommandAgent, load_agents
from reliabench.agents import command as command_mod
from reliabench.agents.infra import parse_endpoint
from reliabench.agents.netrelay import EndpointRelay, relay_mode
from reliabench.errors import SandboxError

KEY = "sk-net"
SLOT = 2500 + os.getpid() % 500

PROBE = r'''
import json, os, socket, sys, urllib.request
port, other = int(sys.argv[1]), int(sys.argv[2])
out = {}
req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/models",
                             headers={"Authorization": "Bearer " + os.environ["K"]})
try:
    out["endpoint"] = json.load(urllib.request.urlopen(req, timeout=10))["data"][0]["id"]
except Exception as exc:
    out["endpoint"] = f"error: {exc}"
for name, addr in (("other_local_port", ("127.0.0.1", other)), ("outside", ("192.0.2.1", 80))):
    s = socket.socket()
    s.settimeout(3)
    try:
        s.connect(addr)
        out[name] = "connected"
    except OSError as exc:
        out[name] = f"refused: {exc.strerror or exc}"
    finally:
        s.close()
open("net.json", "w").write(json.dumps(out))
'''


@pytest.fixture(scope="module")
def bubblewrap() -> None:
    endpoint_narrowing_or_skip()


def agent_for(tmp_path: Path, base_url: str, network: str, script: str = PROBE,
              first_args: str = "") -> CommandAgent:
    """A command agent running ``script`` with ``[first_args,] {seed} {rollout}`` (two ports)."""
    probe = tmp_path / "probe.py"
    probe.write_text(script)
    p = tmp_path / "agents.toml"
    p.write_text(
        f'[[agents]]\nname = "net"\nkind = "command"\n'
        f'command = ["/usr/bin/python3", "-I", "{probe}", {first_args}"{{seed}}", "{{rollout}}"]\n'
        f'readonly = ["{probe}"]\nbase_url = "{base_url}"\napi_key_env = "RB_NET_KEY"\n'
        f'network = {network}\nenv = {{ K = "${{RB_NET_KEY}}" }}\n')
    (agent,) = load_agents(p)
    assert isinstance(agent, CommandAgent)
    return agent


def run_probe(agent: CommandAgent, ws: Path, port: int, other: int) -> dict[str, str]:
    # {seed} and {rollout} carry the two ports into the probe
    res = agent.run(AgentRequest("t", "p", ws, seed=port, rollout=other, timeout_s=60.0, slot=SLOT))
    assert res.status == "completed", res.log
    out: dict[str, str] = json.loads((ws / "net.json").read_text())
    out["_meta"] = res.meta  # type: ignore[assignment]
    return out


@pytest.mark.sandbox
def test_endpoint_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bubblewrap: None) -> None:
    monkeypatch.setenv("RB_NET_KEY", KEY)
    ws = tmp_path / "ws"
    ws.mkdir()
    with FakeOpenAIServer("x", api_key=KEY) as srv, FakeOpenAIServer("y") as other:
        port = int(srv.base_url.rsplit(":", 1)[1].split("/")[0])
        other_port = int(other.base_url.rsplit(":", 1)[1].split("/")[0])
        agent = agent_for(tmp_path, srv.base_url, '"endpoint"')
        assert agent.network == "endpoint"
        out = run_probe(agent, ws, port, other_port)
        assert out["endpoint"] == "fake-model"  # the endpoint answers through the relay
        assert out["other_local_port"].startswith("refused")  # another host port: no
        assert out["outside"].startswith("refused")  # anything else: no route
        relay = out["_meta"]["network_relay"]  # type: ignore[index]
        assert relay["mode"] == "direct" and relay["connections"] >= 1
        assert relay["upstream_failures"] == 0
        assert srv.gets == ["/v1/models"] and other.gets == []
        # the whole host network, for comparison: the other port is reachable
        (ws / "net.json").unlink()
        out = run_probe(agent_for(tmp_path, srv.base_url, "true"), ws, port, other_port)
        assert out["endpoint"] == "fake-model" and out["other_local_port"] == "connected"
        # no network at all
        (ws / "net.json").unlink()
        out = run_probe(agent_for(tmp_path, srv.base_url, "false"), ws, port, other_port)
        assert out["endpoint"].startswith("error") and out["other_local_port"].startswith("refused")


def test_relay_modes() -> None:
    assert relay_mode(parse_endpoint("http://127.0.0.1:8000/v1")) == "direct"
    assert relay_mode(parse_endpoint("http://localhost:11434/v1")) == "direct"
    assert relay_mode(parse_endpoint("https://api.openai.com/v1")) == "connect"
    with pytest.raises(SandboxError, match="plain-http endpoint only on loopback"):
        relay_mode(parse_endpoint("http://10.1.2.3:8000/v1"))
    with pytest.raises(SandboxError, match="below 1024"):
        relay_mode(parse_endpoint("http://127.0.0.1:80/v1"))


def _http_via(sock: socket.socket, host: str, port: int) -> bytes:
    sock.sendall(f"GET /v1/models HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode())
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def test_connect_mode_allows_only_the_endpoint() -> None:
    with FakeOpenAIServer("x") as srv, FakeOpenAIServer("y") as other:
        port = int(srv.base_url.rsplit(":", 1)[1].split("/")[0])
        other_port = int(other.base_url.rsplit(":", 1)[1].split("/")[0])
        endpoint = parse_endpoint(f"https://127.0.0.1:{port}/v1")
        with EndpointRelay(endpoint, mode="connect") as relay:
            assert relay.env()["HTTPS_PROXY"] == "http://127.0.0.1:3128"
            assert relay.wrap(["agent"])[-2:] == ["--", "agent"]
            s = socket.socket(socket.AF_UNIX)
            s.connect(str(relay.socket_path))
            s.sendall(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            assert s.recv(100).startswith(b"HTTP/1.1 200")
            assert b'"fake-model"' in _http_via(s, "127.0.0.1", port)  # tunnelled
            s.close()
            s = socket.socket(socket.AF_UNIX)
            s.connect(str(relay.socket_path))
            s.sendall(f"CONNECT 127.0.0.1:{other_port} HTTP/1.1\r\n\r\n".encode())
            assert s.recv(100).startswith(b"HTTP/1.1 403")
            s.close()
            stats = relay.stats()
        assert (stats.connections, stats.refused, stats.upstream_failures) == (2, 1, 0)
        assert other.gets == []
        assert relay_mode(endpoint) == "direct"  # a loopback endpoint is direct by default


def test_preflight_refuses_what_cannot_be_narrowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                   ) -> None:
    from reliabench.agents.preflight import check_agents

    monkeypatch.setenv("RB_NET_KEY", KEY)
    agent = agent_for(tmp_path, "http://10.1.2.3:8000/v1", '"endpoint"')
    (p,) = check_agents([agent], network=False)
    assert p.reason == "sandbox" and "plain-http endpoint only on loopback" in p.message
    res = agent.run(AgentRequest("t", "p", tmp_path, seed=1, rollout=2, timeout_s=5.0, slot=SLOT))
    assert res.status == "infra_error" and res.meta["infra_reason"] == "sandbox"
    monkeypatch.setattr(command_mod, "sandbox_backend", lambda name: type("B", (), {"name": "namespaces"})())
    agent = agent_for(tmp_path, "http://127.0.0.1:8000/v1", '"endpoint"')
    (p,) = check_agents([agent], network=False)
    assert "needs the bubblewrap sandbox backend" in p.message and "network = true" in p.message
    assert check_agents([agent_for(tmp_path, "http://127.0.0.1:8000/v1", "true")], network=False) == []


@pytest.mark.sandbox
def test_endpoint_down_during_run_is_infra_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 bubblewrap: None) -> None:
    monkeypatch.setenv("RB_NET_KEY", KEY)
    ws = tmp_path / "ws"
    ws.mkdir()
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = int(s.getsockname()[1])
    s.close()  # the endpoint is down: nothing listens there
    agent = agent_for(tmp_path, f"http://127.0.0.1:{port}/v1", '"endpoint"')
    res = agent.run(AgentRequest("t", "p", ws, seed=port, rollout=port, timeout_s=60.0, slot=SLOT))
    assert res.status == "infra_error", res.log
    assert res.meta["infra_reason"] == "unreachable"
    assert f"127.0.0.1:{port} was unreachable during the rollout" in res.meta["reason"]
    assert res.meta["network_relay"]["upstream_failures"] == res.meta["network_relay"]["connections"]


CONNECT_PROBE = r'''
import json, os, socket, sys
host, port, other = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
proxy = os.environ["HTTPS_PROXY"]
out = {"proxy": proxy}
def tunnel(p):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    s.sendall(f"CONNECT {host}:{p} HTTP/1.1\r\nHost: {host}:{p}\r\n\r\n".encode())
    head = s.recv(200).split(b"\r\n")[0].decode()
    if head.startswith("HTTP/1.1 200"):
        s.sendall(b"ping")
        head += " / " + s.recv(100).decode()
    s.close()
    return head
out["endpoint"] = tunnel(port)
out["other"] = tunnel(other)
open("net.json", "w").write(json.dumps(out))
'''


def _echo_server(host: str) -> tuple[socket.socket, int]:
    import threading

    srv = socket.socket()
    srv.bind((host, 0))
    srv.listen(8)

    def serve() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            with conn:
                data = conn.recv(100)
                conn.sendall(b"echo:" + data)

    threading.Thread(target=serve, daemon=True).start()
    return srv, int(srv.getsockname()[1])


@pytest.mark.sandbox
def test_connect_mode_in_the_sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     bubblewrap: None) -> None:
    """An https endpoint elsewhere: only CONNECT to it, through the in-sandbox proxy port."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.1", 9))  # no packet is sent: this only picks a local address
        host = probe.getsockname()[0]
    except OSError:  # pragma: no cover - depends on the host
        pytest.skip("no non-loopback address on this host")
    finally:
        probe.close()
    if host.startswith("127."):  # pragma: no cover - depends on the host
        pytest.skip("no non-loopback address on this host")
    monkeypatch.setenv("RB_NET_KEY", KEY)
    srv, port = _echo_server(host)
    other_srv, other = _echo_server(host)
    try:
        agent = agent_for(tmp_path, f"https://{host}:{port}/v1", '"endpoint"',
                          script=CONNECT_PROBE, first_args=f'"{host}", ')
        ws = tmp_path / "ws"
        ws.mkdir()
        res = agent.run(AgentRequest("t", "p", ws, seed=port, rollout=other, timeout_s=60.0,
                                     slot=SLOT))
    finally:
        srv.close()
        other_srv.close()
    assert res.status == "completed", res.log
    out = json.loads((ws / "net.json").read_text())
    assert out["proxy"] == "http://127.0.0.1:3128"
    assert out["endpoint"] == "HTTP/1.1 200 Connection established / echo:ping"
    assert out["other"].startswith("HTTP/1.1 403")
    relay = res.meta["network_relay"]
    assert relay["mode"] == "connect" and relay["refused"] == 1
