"""``network = "endpoint"``: a sandboxed agent reaches its endpoint and nothing else."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import stat
import sys
import tempfile
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))

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


# ---- issue 20, finding 6: one rollout's relay cannot cost anyone else a descriptor ------------


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _unix(path: Path) -> socket.socket:
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(str(path))
    return s


def _closed_by_relay(s: socket.socket) -> bool:
    try:
        return s.recv(100) in (b"", b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
    except ConnectionResetError:
        return True


def test_relay_caps_connections_and_costs_this_process_no_descriptor() -> None:
    with FakeOpenAIServer("x") as srv:
        port = int(srv.base_url.rsplit(":", 1)[1].split("/")[0])
        endpoint = parse_endpoint(f"http://127.0.0.1:{port}/v1")
        before = _open_fds()
        with EndpointRelay(endpoint, max_open=4, max_total=7) as relay:
            with_relay = _open_fds()
            assert with_relay - before <= 3  # two pipes to the relay process, whatever happens
            held = [_unix(relay.socket_path) for _ in range(4)]  # served, and held open
            time.sleep(0.3)
            extra = [_unix(relay.socket_path) for _ in range(6)]  # past max_open: closed at once
            assert all(_closed_by_relay(s) for s in extra)
            # this process holds the agent's end of each connection and (the fake endpoint runs
            # here) the endpoint's end of each served one; the relay's two per connection are
            # in the relay's own process
            assert _open_fds() - with_relay == len(held) + len(extra) + len(held)
            for s in held + extra:
                s.close()
            time.sleep(0.3)
            s = _unix(relay.socket_path)  # a slot is free again: served
            assert b'"fake-model"' in _http_via(s, "127.0.0.1", port)
            s.close()
            stats = relay.stats()
            assert (stats.connections, stats.over_limit) == (5, 6)
            for _ in range(3):  # 7 in all: the 8th is refused however few are open
                _unix(relay.socket_path).close()
            time.sleep(0.3)
            s = _unix(relay.socket_path)
            assert _closed_by_relay(s)
            s.close()
            time.sleep(0.2)
            stats = relay.stats()
        assert (stats.connections, stats.over_limit) == (7, 8)
        assert _open_fds() == before  # nothing left behind
    assert stats.upstream_failures == 0


def test_relay_serves_only_the_sandbox_uid() -> None:
    with FakeOpenAIServer("x") as srv:
        port = int(srv.base_url.rsplit(":", 1)[1].split("/")[0])
        endpoint = parse_endpoint(f"http://127.0.0.1:{port}/v1")
        with EndpointRelay(endpoint, peer_uid=os.getuid() + 4242) as relay:
            assert stat.S_IMODE(relay.socket_path.parent.stat().st_mode) == 0o700
            s = _unix(relay.socket_path)
            s.sendall(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
            assert _closed_by_relay(s)
            s.close()
            time.sleep(0.2)
            stats = relay.stats()
    assert (stats.connections, stats.foreign) == (0, 1) and srv.gets == []


def test_relay_closes_a_slow_loris_handshake() -> None:
    endpoint = parse_endpoint("https://127.0.0.1:9/v1")
    with EndpointRelay(endpoint, mode="connect", max_open=1, handshake_timeout_s=0.5) as relay:
        s = _unix(relay.socket_path)
        start = time.monotonic()
        for _ in range(4):  # one byte now and then, never a whole request head
            with contextlib.suppress(OSError):
                s.send(b"C")
            time.sleep(0.3)
        assert s.recv(100) == b"" and time.monotonic() - start < 5
        s.close()
        time.sleep(0.2)
        s = _unix(relay.socket_path)  # its one slot is free again
        s.sendall(b"CONNECT elsewhere:1 HTTP/1.1\r\n\r\n")
        assert s.recv(100).startswith(b"HTTP/1.1 403")
        s.close()


EMFILE_CHILD = r'''
import json, os, resource, socket, sys, time
sys.path.insert(0, sys.argv[1])
from fake_openai_server import FakeOpenAIServer
from reliabench.agents.infra import parse_endpoint
from reliabench.agents.netrelay import EndpointRelay

resource.setrlimit(resource.RLIMIT_NOFILE, (48, 48))  # the relay process inherits this hard limit
out = {}
with FakeOpenAIServer("x") as srv:
    port = int(srv.base_url.rsplit(":", 1)[1].split("/")[0])
    with EndpointRelay(parse_endpoint(f"http://127.0.0.1:{port}/v1"), max_open=40) as relay:
        flood = []
        for _ in range(36):  # more than its 48 descriptors can serve with their upstream sockets
            s = socket.socket(socket.AF_UNIX)
            s.connect(str(relay.socket_path))
            flood.append(s)
        time.sleep(1.0)
        out["mid"] = relay.stats().last_error
        for s in flood:
            s.close()
        time.sleep(1.5)
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(10)
        s.connect(str(relay.socket_path))
        s.sendall(f"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
        out["after"] = data.decode("latin-1")[-200:]
        st = relay.stats()
        out["stats"] = [st.connections, st.over_limit, st.upstream_failures]
        # this process still has descriptors of its own
        out["own"] = open("/proc/self/status").read().count("\n") > 0
print(json.dumps(out))
'''


def test_relay_survives_running_out_of_descriptors(tmp_path: Path) -> None:
    """RLIMIT_NOFILE lowered in a subprocess: the relay hits EMFILE, backs off, keeps serving."""
    import subprocess

    res = subprocess.run([sys.executable, "-c", EMFILE_CHILD, str(Path(__file__).parents[1])],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert '"fake-model"' in out["after"]  # served after the flood
    assert "Too many open files" in out["mid"]  # it did run out (in accept or upstream)
    connections, _over_limit, upstream_failures = out["stats"]
    assert connections > 1 and upstream_failures == 0  # its own limit is not the endpoint's failure
    assert out["own"]


FLOOD_AGENT = r'''
import os, socket, sys, time
GOOD = "def add(a, b):\n    return a + b\n"
if os.environ["RELIABENCH_ROLLOUT"] == "0":
    # the attacker: find the relay's Unix socket in /proc/*/cmdline, open 600 connections, hold them
    path = None
    for pid in sorted(p for p in os.listdir("/proc") if p.isdigit()):
        try:
            args = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        if b"--unix" in args:
            path = args[args.index(b"--unix") + 1].decode()
            break
    held = []
    for _ in range(600):
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect(path)
            held.append(s)
        except OSError:
            s.close()
    print(f"holding {len(held)} connections to {path}", flush=True)
    time.sleep(float(sys.argv[1]))
else:
    time.sleep(float(sys.argv[2]))  # the victim: done while the attacker holds its connections
open("adder.py", "w").write(GOOD)
'''

_RUN_AT_1024 = ("import resource, sys; resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024)); "
                "from reliabench.cli import main; sys.exit(main(sys.argv[1:]))")


@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.parametrize(("test_workers", "sandbox"),
                         [("warm", "auto"), ("fresh", "bubblewrap"), ("fresh", "namespaces")])
def test_relay_flood_of_one_rollout_leaves_another_rollout_unharmed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bubblewrap: None, test_workers: str,
        sandbox: str) -> None:
    """The issue's attack as a run: 600 connections to the relay, harness at 1024 descriptors."""
    import subprocess

    from suite_helpers import write_adder_suite

    from reliabench.store import read_records

    if sandbox == "namespaces":
        from sandbox_helpers import python_for, run_backend_or_skip

        python_for(run_backend_or_skip("namespaces"), 0)
    os.chmod(tmp_path, 0o755)
    monkeypatch.setenv("RB_NET_KEY", KEY)
    suite = write_adder_suite(tmp_path, "flood",
                              "from adder import add\n\ndef test_add():\n    assert add(1, 2) == 3\n",
                              timeout_s=90)
    script = tmp_path / "flood.py"
    script.write_text(FLOOD_AGENT)
    script.chmod(0o644)
    with FakeOpenAIServer("x", api_key=KEY, lifetime_s=240, max_requests=10_000) as srv:
        agents = tmp_path / "agents.toml"
        agents.write_text(
            f'[[agents]]\nname = "flood"\nkind = "command"\n'
            f'command = ["/usr/bin/python3", "-I", "{script}", "14", "5"]\n'
            f'readonly = ["{script}"]\nbase_url = "{srv.base_url}"\napi_key_env = "RB_NET_KEY"\n'
            f'network = "endpoint"\n')
        out = tmp_path / "run"
        res = subprocess.run(
            [sys.executable, "-c", _RUN_AT_1024, "run", str(suite), "--agents", str(agents),
             "-n", "2", "--workers", "2", "--out", str(out), "--test-workers", test_workers,
             "--sandbox", sandbox],
            capture_output=True, text=True, timeout=150)  # before the fix: hung past 300 s
    assert res.returncode == 0, res.stderr[-3000:]
    recs = {r.rollout: r for r in read_records(out)}
    attacker, victim = recs[0], recs[1]
    assert victim.status == "completed" and victim.passes, (victim.meta, victim.tests)
    relay = attacker.meta["network_relay"]
    assert relay["connections"] <= 32 and relay["over_limit"] >= 500, relay
    assert attacker.status == "completed" and attacker.passes  # it only cut its own access


THIEF = r'''
import json, os, socket, time
out = {"found": None}
deadline = time.time() + 8
while time.time() < deadline and out["found"] is None:
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            args = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        hits = [a.decode() for a in args if a.endswith(b"relay.sock")]
        if hits:
            out["found"] = hits[0]
            break
    time.sleep(0.1)
if out["found"]:
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    try:
        s.connect(out["found"])
        s.sendall(b"GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        out["got"] = s.recv(4096).decode("latin-1")
    except OSError as exc:
        out["got"] = f"refused: {exc.strerror or exc}"
open("thief.json", "w").write(json.dumps(out))
'''


@pytest.mark.sandbox
def test_another_slots_agent_cannot_reach_this_rollouts_relay(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bubblewrap: None,
        request: pytest.FixtureRequest) -> None:
    """A network = false agent on another slot (namespaces: it sees the host's /proc) finds the
    relay's socket path in a command line and tries to use it to reach the network."""
    from concurrent.futures import ThreadPoolExecutor

    from sandbox_helpers import backend_or_skip

    backend_or_skip("namespaces")
    if os.geteuid() != 0:  # pragma: no cover - depends on the host
        pytest.skip("slot uids need root")
    monkeypatch.setenv("RB_NET_KEY", KEY)
    p = tmp_path / "thief.toml"
    p.write_text(f'[[agents]]\nname = "thief"\nkind = "command"\nsandbox = "namespaces"\n'
                 f'command = ["/usr/bin/python3", "-I", "-c", {json.dumps(THIEF)}]\n')
    (thief,) = load_agents(p)
    ws_a = tmp_path / "a"
    ws_a.mkdir()
    ws_b = Path(tempfile.mkdtemp(prefix="rb-thief-"))  # a place the thief's uid can reach
    os.chmod(ws_b, 0o755)
    request.addfinalizer(lambda: shutil.rmtree(ws_b, ignore_errors=True))
    with FakeOpenAIServer("x", api_key=KEY) as srv:
        victim = agent_for(tmp_path, srv.base_url, '"endpoint"',
                           script="import time; time.sleep(10)\n")
        with ThreadPoolExecutor(2) as pool:
            a = pool.submit(victim.run, AgentRequest("t", "p", ws_a, seed=1, rollout=1,
                                                     timeout_s=60.0, slot=SLOT))
            time.sleep(0.5)
            b = pool.submit(thief.run, AgentRequest("t", "p", ws_b, seed=1, rollout=1,
                                                    timeout_s=60.0, slot=SLOT + 1))
            res_a, res_b = a.result(), b.result()
        assert res_b.status == "completed", res_b.log
        out = json.loads((ws_b / "thief.json").read_text())
        assert out["found"] and out["found"].endswith("relay.sock")  # the path is no secret
        assert out["got"].startswith("refused: Permission denied"), out  # but it leads nowhere
        assert srv.gets == []
    assert res_a.status == "completed", res_a.log


ORPHAN_CHILD = r'''
import sys, time
from reliabench.agents.infra import parse_endpoint
from reliabench.agents.netrelay import EndpointRelay

relay = EndpointRelay(parse_endpoint("http://127.0.0.1:9999/v1")).__enter__()
print(relay._proc.pid, relay.socket_path, flush=True)
time.sleep(60)
'''


def test_relay_process_ends_when_the_harness_dies() -> None:
    """kill -9 of the harness: its relay processes see their input end and exit, socket dir aside."""
    import signal
    import subprocess

    child = subprocess.Popen([sys.executable, "-c", ORPHAN_CHILD], stdout=subprocess.PIPE, text=True)
    sock: str | None = None
    try:
        assert child.stdout is not None
        pid_text, sock = child.stdout.readline().split()
        pid = int(pid_text)
        assert Path(f"/proc/{pid}").exists()
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        deadline = time.monotonic() + 10
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)  # not our child: only reparented ones would need it
            time.sleep(0.1)
        state = Path(f"/proc/{pid}/stat").read_text().split()[2] if Path(f"/proc/{pid}").exists() else "gone"
        assert state in ("gone", "Z"), state  # exited (a zombie until init reaps it)
        assert not Path(sock).parent.exists()  # and took its socket directory with it
    finally:
        child.kill()
        child.wait()
        if child.stdout is not None:
            child.stdout.close()
        if sock is not None and Path(sock).parent.name.startswith("rb-relay-"):
            shutil.rmtree(Path(sock).parent, ignore_errors=True)  # its harness could not
