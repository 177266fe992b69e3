"""The python kind."""

from __future__ import annotations

import itertools
import textwrap
import time
from pathlib import Path

import pytest

from reliabench.agents import AgentRequest, AgentResult, PythonAgent, load_agents
from reliabench.errors import ConfigError, InvalidArgumentError

_counter = itertools.count()

MODULE = '''
import os, time
from pathlib import Path
from reliabench.agents import AgentResult

def write(request):
    (request.workspace / "sol.py").write_text("x = 1\\n")

def with_result(request, greeting="hi", **rest):
    return AgentResult(tokens=5, log=f"{greeting} {request.task_id} {sorted(rest)}")

def boom(request):
    raise RuntimeError("kaboom")

def exits(request):
    raise SystemExit(3)

def wrong(request):
    return 42

def bad_status(request):
    return AgentResult(status="complete")

def hang(request):
    time.sleep(5)

def strict(request, temperature=0.0):
    return None

class Agents:
    @staticmethod
    def solve(request):
        return None

NOT_CALLABLE = 3
'''


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, str]:
    # a unique module name per test: imported modules are cached process-wide
    mod = f"rb_test_pyagent_{next(_counter)}"
    src = tmp_path / "src"
    src.mkdir()
    (src / f"{mod}.py").write_text(textwrap.dedent(MODULE))
    return tmp_path, mod


def load(tmp_path: Path, body: str) -> PythonAgent:
    p = tmp_path / "agents.toml"
    p.write_text(f'[[agents]]\nname = "py"\nkind = "python"\n{body}\n')
    (agent,) = load_agents(p)
    assert isinstance(agent, PythonAgent)
    return agent


def req(tmp_path: Path, timeout_s: float = 5.0) -> AgentRequest:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return AgentRequest("t1", "p", ws, seed=0, rollout=0, timeout_s=timeout_s)


def test_none_is_completed(setup: tuple[Path, str]) -> None:
    tmp, mod = setup
    agent = load(tmp, f'callable = "{mod}:write"\npath = "src"')
    res = agent.run(req(tmp))
    assert res.status == "completed"
    assert (tmp / "ws/sol.py").read_text() == "x = 1\n"


def test_options_passed_as_kwargs(setup: tuple[Path, str]) -> None:
    tmp, mod = setup
    agent = load(tmp, f'callable = "{mod}:with_result"\npath = ["src"]\n'
                      '[agents.options]\ngreeting = "hello"\nextra = 1')
    res = agent.run(req(tmp))
    assert res == AgentResult(tokens=5, log="hello t1 ['extra']")


def test_options_rejected_when_not_accepted(setup: tuple[Path, str]) -> None:
    tmp, mod = setup
    with pytest.raises(ConfigError, match=r"agents\[1\]\.options: the function does not accept"):
        load(tmp, f'callable = "{mod}:strict"\npath = "src"\noptions = {{ temprature = 1 }}')


def test_exception_gives_traceback(setup: tuple[Path, str]) -> None:
    tmp, mod = setup
    res = load(tmp, f'callable = "{mod}:boom"\npath = "src"').run(req(tmp))
    assert res.status == "agent_error"
    assert "Traceback" in res.log
    assert "RuntimeError: kaboom" in res.log


def test_system_exit_is_agent_error(setup: tuple[Path, str]) -> None:
    tmp, mod = setup
    res = load(tmp, f'callable = "{mod}:exits"\npath = "src"').run(req(tmp))
    assert res.status == "agent_error"
    assert "SystemExit" in res.log


def test_wrong_return_type(setup: tuple[Path, str]) -> None:
    tmp, mod = setup
    res = load(tmp, f'callable = "{mod}:wrong"\npath = "src"').run(req(tmp))
    assert res.status == "agent_error"
    assert "returned int; expected an AgentResult or None" in res.log


def test_unknown_status_is_agent_error(setup: tuple[Path, str]) -> None:
    tmp, mod = setup
    res = load(tmp, f'callable = "{mod}:bad_status"\npath = "src"').run(req(tmp))
    assert res.status == "agent_error"
    assert ("AgentResult.status: expected one of completed, agent_error, timeout, infra_error, "
            "got 'complete'") in res.log


def test_agent_result_rejects_harness_statuses() -> None:
    # no_change and test_error are the harness's verdicts, never an agent's
    for status in ("no_change", "test_error", "passed"):
        with pytest.raises(InvalidArgumentError, match=f"got '{status}'"):
            AgentResult(status=status)  # type: ignore[arg-type]


def test_hang_is_timeout(setup: tuple[Path, str]) -> None:
    tmp, mod = setup
    agent = load(tmp, f'callable = "{mod}:hang"\npath = "src"\ntimeout_s = 0.2')
    t0 = time.monotonic()
    res = agent.run(req(tmp, timeout_s=60))
    assert time.monotonic() - t0 < 2
    assert res.status == "timeout"
    assert res.meta["abandoned_thread"] is True


def test_dotted_attribute(setup: tuple[Path, str]) -> None:
    tmp, mod = setup
    assert load(tmp, f'callable = "{mod}:Agents.solve"\npath = "src"').run(req(tmp)).status == (
        "completed"
    )


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('callable = "nomodule_xyz_rb:f"', "agents[1].callable: cannot import 'nomodule_xyz_rb:f'"),
        ('callable = "MOD:missing"\npath = "src"', "agents[1].callable: cannot find 'MOD:missing'"),
        ('callable = "MOD:NOT_CALLABLE"\npath = "src"', "is not callable"),
        ('callable = "MOD"\npath = "src"', "agents[1].callable: expected 'module:function'"),
        ('callable = "MOD:write"\npath = "nope"', "agents[1].path: no such file or directory"),
        ('callable = "MOD:write"\npath = 3', "agents[1].path: expected an array of strings"),
        ('callable = "MOD:write"\noptions = 3\npath = "src"',
         "agents[1].options: expected a table"),
    ],
)
def test_load_errors(setup: tuple[Path, str], body: str, expected: str) -> None:
    tmp, mod = setup
    with pytest.raises(ConfigError) as info:
        load(tmp, body.replace("MOD", mod))
    assert expected.replace("MOD", mod) in str(info.value)


def test_import_time_error(tmp_path: Path) -> None:
    mod = f"rb_test_pyagent_bad_{next(_counter)}"
    (tmp_path / f"{mod}.py").write_text("raise ValueError('at import')\n")
    with pytest.raises(ConfigError, match="raised ValueError: at import"):
        load(tmp_path, f'callable = "{mod}:f"\npath = "."')
