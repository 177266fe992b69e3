"""The command kind, run in the real sandbox (reliabench.sandbox)."""

from __future__ import annotations

import os
import sys
import time
import warnings
from pathlib import Path

import pytest

from reliabench.agents import AgentRequest, CommandAgent, load_agents
from reliabench.agents import command as command_mod
from reliabench.errors import ConfigError, SandboxError

pytestmark = pytest.mark.sandbox


@pytest.fixture(scope="module")
def isolation() -> str:
    """Create the 'auto' backend once (quietly: it warns when it falls back to 'none')."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            backend = command_mod.sandbox_backend("auto")
        except SandboxError as exc:  # pragma: no cover - depends on the host
            pytest.skip(f"no sandbox: {exc}")
    return backend.name


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    w = tmp_path / "ws"
    w.mkdir()
    (w / "start.py").write_text("x = 0\n")
    return w


def make(tmp_path: Path, body: str) -> CommandAgent:
    p = tmp_path / "agents.toml"
    p.write_text(f'[[agents]]\nname = "cli"\nkind = "command"\n{body}\n')
    (agent,) = load_agents(p)
    assert isinstance(agent, CommandAgent)
    return agent


# Worker slots are machine-wide uids (61000 + slot) and runs of one slot must not overlap:
# other processes testing the sandbox at the same time use the low slots, so pick our own.
SLOT = 2000 + os.getpid() % 1000


def req(ws: Path, **kw: object) -> AgentRequest:
    base: dict[str, object] = {"task_id": "t1", "prompt": "Write the solution.", "workspace": ws,
                               "seed": 42, "rollout": 3, "timeout_s": 20.0,
                               "slot": SLOT}
    base.update(kw)
    return AgentRequest(**base)  # type: ignore[arg-type]


PY = sys.executable


def test_writes_workspace_with_placeholders(tmp_path: Path, ws: Path, isolation: str) -> None:
    script = (
        "import sys, pathlib; ws, pf, seed, task, ro = sys.argv[1:]; "
        "pathlib.Path(ws, 'out.txt').write_text("
        "open(pf).read() + '|' + seed + '|' + task + '|' + ro + '|{x}')"
    )
    agent = make(tmp_path, f'command = ["{PY}", "-c", "{script}", "{{workspace}}", '
                           '"{prompt_file}", "{seed}", "{task_id}", "{rollout}"]')
    res = agent.run(req(ws))
    assert res.status == "completed", res.log
    assert (ws / "out.txt").read_text() == "Write the solution.|42|t1|3|{x}"
    assert res.meta["isolation"] == isolation
    assert res.meta["returncode"] == 0
    assert ws.stat().st_uid == (tmp_path.stat().st_uid)  # the workspace was handed back


def test_uses_given_prompt_file(tmp_path: Path, ws: Path, isolation: str) -> None:
    pf = tmp_path / "prompts" / "p.md"
    pf.parent.mkdir()
    pf.write_text("from the runner")
    agent = make(tmp_path, 'command = "/bin/sh -c \'cat {prompt_file} > got.txt\'"')
    assert agent.run(req(ws, prompt_file=pf)).status == "completed"
    assert (ws / "got.txt").read_text() == "from the runner"


def test_env_is_clean_and_expanded(tmp_path: Path, ws: Path, isolation: str,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RB_HOST_SECRET", "s3cret")
    monkeypatch.setenv("RB_PASSED", "yes")
    agent = make(tmp_path, 'command = "/bin/sh -c \'env > env.txt\'"\n'
                           'env = { MINE = "${RB_PASSED}-1", LIT = "$HOME" }')
    res = agent.run(req(ws))
    assert res.status == "completed", res.log
    env = dict(line.split("=", 1) for line in (ws / "env.txt").read_text().splitlines())
    assert env["MINE"] == "yes-1"
    assert env["LIT"] == "$HOME"
    assert env["RELIABENCH_TASK_ID"] == "t1"
    assert env["RELIABENCH_SEED"] == "42"
    assert "RB_HOST_SECRET" not in env
    assert "s3cret" not in (ws / "env.txt").read_text()


def test_unset_env_var_is_infra_error(tmp_path: Path, ws: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RB_SURELY_UNSET", raising=False)
    agent = make(tmp_path, 'command = "true"\nenv = { K = "${RB_SURELY_UNSET}" }')
    assert agent.env_refs == ("RB_SURELY_UNSET",)
    res = agent.run(req(ws))
    assert res.status == "infra_error"  # the harness's set-up, not the agent
    assert res.meta["infra_reason"] == "missing_api_key"
    assert "RB_SURELY_UNSET" in res.log


def test_nonzero_exit_is_agent_error_with_log(tmp_path: Path, ws: Path, isolation: str) -> None:
    agent = make(tmp_path, 'command = "/bin/sh -c \'echo to-out; echo to-err >&2; exit 7\'"')
    res = agent.run(req(ws))
    assert res.status == "agent_error"
    assert "exit status 7" in res.log
    assert "to-out" in res.log
    assert "to-err" in res.log
    assert res.meta["returncode"] == 7


def test_hang_is_timeout(tmp_path: Path, ws: Path, isolation: str) -> None:
    agent = make(tmp_path, 'command = "sleep 30"\ntimeout_s = 0.5')
    t0 = time.monotonic()
    res = agent.run(req(ws, timeout_s=60.0))
    assert time.monotonic() - t0 < 10
    assert res.status == "timeout"
    assert "time limit" in res.log


def test_request_budget_used_without_timeout_key(tmp_path: Path, ws: Path, isolation: str) -> None:
    res = make(tmp_path, 'command = "sleep 30"').run(req(ws, timeout_s=0.5))
    assert res.status == "timeout"


def test_command_not_found_at_load(tmp_path: Path) -> None:
    with pytest.raises(ConfigError,
                       match=r"agents\[1\]\.command: 'no-such-agent-cli-rb' not found"):
        make(tmp_path, 'command = "no-such-agent-cli-rb --go"')


def test_command_gone_at_run_time_is_infra_error(tmp_path: Path, ws: Path, isolation: str) -> None:
    tool = tmp_path / "bin" / "my-agent-rb"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    agent = make(tmp_path, f'command = "my-agent-rb"\nenv = {{ PATH = "{tool.parent}" }}')
    tool.unlink()
    res = agent.run(req(ws))
    assert res.status == "infra_error"
    assert "my-agent-rb" in res.log


def test_sandbox_error_is_infra_error(tmp_path: Path, ws: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(name: str) -> object:
        raise SandboxError("bwrap: cannot create namespace")

    monkeypatch.setattr(command_mod, "sandbox_backend", broken)
    res = make(tmp_path, 'command = "true"').run(req(ws))
    assert res.status == "infra_error"
    assert "cannot create namespace" in res.log


def test_relative_script(tmp_path: Path, ws: Path, isolation: str) -> None:
    script = tmp_path / "agent.sh"
    script.write_text("#!/bin/sh\necho \"$RELIABENCH_ROLLOUT\" > rollout.txt\n")
    script.chmod(0o755)
    res = make(tmp_path, 'command = "./agent.sh"').run(req(ws))
    assert res.status == "completed", res.log
    assert (ws / "rollout.txt").read_text() == "3\n"


def test_only_workspace_is_visible_and_writable(tmp_path: Path, ws: Path, isolation: str) -> None:
    if isolation != "bubblewrap":
        pytest.skip("a private file system view needs the bubblewrap backend")
    hidden = tmp_path / "suite" / "tests"
    hidden.mkdir(parents=True)
    (hidden / "test_hidden.py").write_text("SECRET")
    script = (
        "import os, pathlib; r = []; "
        f"r.append(os.path.exists({str(hidden)!r})); "
        "p = pathlib.Path(os.environ['RELIABENCH_PROMPT_FILE']); "
        "r.append(os.access(p, os.W_OK)); "
        "pathlib.Path('result.txt').write_text(repr(r))"
    )
    agent = make(tmp_path, f'command = ["{PY}", "-c", "{script}"]')
    res = agent.run(req(ws))
    assert res.status == "completed", res.log
    assert (ws / "result.txt").read_text() == "[False, False]"


def test_no_network_by_default(tmp_path: Path, ws: Path, isolation: str) -> None:
    if isolation == "none":
        pytest.skip("the 'none' backend keeps the host network")
    import socket

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    script = (
        "import socket; s = socket.socket(); s.settimeout(2)\n"
        f"try:\n s.connect(('127.0.0.1', {port})); print('connected')\n"
        "except OSError as e:\n print('refused', e)"
    )
    try:
        (tmp_path / "net.py").write_text(script)
        agent = make(tmp_path, f'command = ["{PY}", "{tmp_path / "net.py"}"]\n'
                               f'readonly = ["net.py"]')
        res = agent.run(req(ws))
        assert res.status == "completed", res.log
        assert "refused" in res.log
        net = make(tmp_path, f'command = ["{PY}", "{tmp_path / "net.py"}"]\n'
                             f'readonly = ["net.py"]\nnetwork = true')
        res = net.run(req(ws))
        assert "connected" in res.log, res.log
    finally:
        srv.close()


def test_thread_safe_distinct_slots(tmp_path: Path, isolation: str) -> None:
    from concurrent.futures import ThreadPoolExecutor

    agent = make(tmp_path, 'command = "/bin/sh -c \'echo {rollout} > r.txt\'"')
    wss = []
    for i in range(4):
        w = tmp_path / f"ws{i}"
        w.mkdir()
        wss.append(w)

    def one(i: int) -> str:
        return agent.run(req(wss[i], rollout=i, slot=SLOT + i)).status

    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(one, range(4))) == ["completed"] * 4
    assert [(w / "r.txt").read_text().strip() for w in wss] == ["0", "1", "2", "3"]


def test_usage_file_reports_tokens_and_cost(tmp_path: Path, ws: Path, isolation: str) -> None:
    script = ('import json, os; p = os.environ["RELIABENCH_USAGE_FILE"]; '
              'assert p.endswith("/channel/usage.json") and not os.path.exists(p), p; '
              'json.dump({"tokens_in": 120, "tokens_out": 30, "usd": 0.0042}, open(p, "w"))')
    agent = make(tmp_path, f'command = ["/usr/bin/python3", "-c", {script!r}]')
    res = agent.run(req(ws))
    assert res.status == "completed", res.log
    assert (res.tokens_in, res.tokens_out, res.tokens, res.usd) == (120, 30, 150, 0.0042)
    assert res.meta["usage_source"] == "usage_file"
    assert sorted(p.name for p in ws.iterdir()) == ["start.py"]  # the file is not in the workspace


def test_bad_usage_file_is_ignored_with_a_note(tmp_path: Path, ws: Path, isolation: str) -> None:
    script = 'import os; open(os.environ["RELIABENCH_USAGE_FILE"], "w").write("[1, 2]")'
    agent = make(tmp_path, f'command = ["/usr/bin/python3", "-c", {script!r}]')
    res = agent.run(req(ws))
    assert res.status == "completed", res.log
    assert res.tokens is None and res.usd is None
    assert "usage file ignored: expected a JSON object, got list" in res.log


def test_aider_usage_parser(tmp_path: Path, ws: Path, isolation: str) -> None:
    out = ("Tokens: 2.1k sent, 245 received. Cost: $0.0012 message, $0.0012 session.\\n"
           "Tokens: 900 sent, 50 received. Cost: $0.0003 message, $0.0015 session.\\n")
    agent = make(tmp_path, f'command = ["/usr/bin/printf", "{out}"]\nusage_parser = "aider"')
    res = agent.run(req(ws))
    assert res.status == "completed", res.log
    assert (res.tokens_in, res.tokens_out, res.usd) == (3000, 295, 0.0015)
    assert res.meta["usage_source"] == "aider" and res.meta["usage_approx"] is True


def test_endpoint_keys(tmp_path: Path) -> None:
    agent = make(tmp_path, 'command = "true"\nbase_url = "http://127.0.0.1:9/v1"\n'
                           'api_key_env = "RB_K"')
    assert agent.endpoint is not None and agent.endpoint.port == 9
    assert agent.network == "endpoint"  # the default when base_url is set
    with pytest.raises(ConfigError, match=r"agents\[1\]\.api_key_env: needs base_url"):
        make(tmp_path, 'command = "true"\napi_key_env = "RB_K"')
    with pytest.raises(ConfigError, match=r'agents\[1\]\.network: network = "endpoint" needs base_url'):
        make(tmp_path, 'command = "true"\nnetwork = "endpoint"')
    with pytest.raises(ConfigError, match=r"agents\[1\]\.usage_parser: unknown parser 'x'"):
        make(tmp_path, 'command = "true"\nusage_parser = "x"')


def test_usage_parser_poison_cannot_make_a_failure_infra_error(tmp_path: Path, ws: Path,
                                                              isolation: str) -> None:
    """Issue 20 (own attack class): an agent that failed prints a line its usage parser chokes on.

    The parser used to raise, ``run`` turned that into ``infra_error``, and an ``infra_error`` is
    excluded from n and rerun: a failing agent could erase its failures from the figures.
    """
    script = 'print("Tokens: 1.2.3 sent, " + "9" * 400 + " received."); raise SystemExit(1)'
    agent = make(tmp_path, f'command = ["/usr/bin/python3", "-c", {script!r}]\nusage_parser = "aider"')
    res = agent.run(req(ws))
    assert res.status == "agent_error", res.log
    assert res.tokens is None
