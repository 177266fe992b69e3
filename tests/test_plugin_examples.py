"""The worked examples of docs/guide.md "Adding a plugin", one per kind, installed as a third party would.

Each test installs a fake distribution whose ``entry_points.txt`` holds the example's one
entry-point line (``install_plugin_dist``: a real ``.dist-info`` on ``sys.path``), then finds
the plugin through reliabench's registry and command-line choices, and runs it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner
from entry_point_helpers import install_plugin_dist

from reliabench.errors import ConfigError, InvalidArgumentError, SandboxError

FOREIGN = Path(__file__).parent / "fixtures" / "foreign"
GUIDE = Path(__file__).resolve().parents[1] / "docs" / "guide.md"

PLUGINS: dict[str, tuple[str, str, str]] = {
    # kind: (example module, entry-point name, target) -- the one line of the plugin's pyproject
    "scanners": ("eval_scanner", "eval-calls", "eval_scanner:EvalCallScanner"),
    "sandboxes": ("capped_sandbox", "capped", "capped_sandbox:CappedBackend"),
    "agents": ("fixed_files_agent", "fixed-files", "fixed_files_agent:make_fixed_files_agent"),
    "importers": ("scores_importer", "scorelog", "scores_importer:importer"),
    "executors": ("serial_executor", "serial", "serial_executor:executor"),
    "converters": ("cases_converter", "cases", "cases_converter:CasesConverter"),
    "report_formats": ("automake_report", "automake", "automake_report:AutomakeReport"),
}


def _install(monkeypatch: pytest.MonkeyPatch, site: Path, kind: str) -> None:
    """Install the example of ``kind`` as its own distribution, with its one entry point."""
    module, name, target = PLUGINS[kind]
    install_plugin_dist(monkeypatch, site, module.replace("_", "-"), {f"reliabench.{kind}": {name: target}})


def _choices(command: click.Command, param: str) -> list[str]:
    option = next(p for p in command.params if p.name == param)
    assert isinstance(option.type, click.Choice)
    return [str(c) for c in option.type.choices]


@pytest.fixture
def site(tmp_path: Path) -> Path:
    return tmp_path / "site-packages"


# ------------------------------------------------------------------ scanner


def test_scanner_example(monkeypatch: pytest.MonkeyPatch, site: Path, tmp_path: Path) -> None:
    from reliabench.scanners import available_scanners, get_scanner

    _install(monkeypatch, site, "scanners")
    assert "eval-calls" in available_scanners()

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\ny = eval(input())\nexec('pass')\n")
    (ws / "broken.py").write_text("def (:\n")
    (ws / "notes.txt").write_text("eval(x)\n")
    scanner = get_scanner("eval-calls", severity="medium")
    result = scanner.scan(ws, ["a.py", "broken.py", "notes.txt"])
    assert [(f.rule_id, f.line, f.severity, f.cwe) for f in result.findings] == [
        ("call-eval", 2, "medium", 95), ("call-exec", 3, "medium", 95)]
    assert [(e.tool, e.path) for e in result.errors] == [("eval-calls", "broken.py")]
    assert result.files_scanned == 1  # a.py; broken.py is an error, notes.txt not Python
    with pytest.raises(InvalidArgumentError, match=r"severity must be one of info, .* got 'severe'"):
        get_scanner("eval-calls", severity="severe")
    # only what the agent changed: line 3
    changed = scanner.scan(ws, ["a.py"], {"a.py": frozenset({3})})
    assert [f.rule_id for f in changed.findings] == ["call-exec"]


# ------------------------------------------------------------------ sandbox backend


def test_sandbox_backend_example(monkeypatch: pytest.MonkeyPatch, site: Path, tmp_path: Path) -> None:
    from reliabench.commands.run import command as run_command
    from reliabench.sandbox import (
        HOST,
        Environment,
        EnvironmentBackend,
        EnvironmentSpec,
        Limits,
        available_backends,
        get_backend,
        registry,
    )

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            get_backend("auto")
    except (SandboxError, RuntimeWarning) as exc:
        pytest.skip(f"no isolating built-in backend here for the example to wrap: {exc}")
    _install(monkeypatch, site, "sandboxes")
    registry._probe.cache_clear()
    try:
        assert available_backends()[-1] == "capped"
        assert "capped" in _choices(run_command, "sandbox")
        backend = get_backend("capped")  # checked against the contract when it loads
        assert backend.name == "capped" and isinstance(backend, EnvironmentBackend)
        work = tmp_path / "work"
        work.mkdir()
        os.chmod(tmp_path, 0o755)
        os.chmod(work, 0o777)
        assert backend.refuse(HOST) is None and backend.refuse(EnvironmentSpec(image="x")) is not None
        env = backend.start(backend.prepare(HOST), workspace=work, slot=0, network="host")
        try:
            assert isinstance(env, Environment)
            result = env.exec(["/bin/sh", "-c", "ulimit -v; echo hi > out.txt; cat out.txt"],
                              limits=Limits(wall_s=30, memory_bytes=2 * 1024**3))
        finally:
            env.close()
        assert result.returncode == 0, result.stderr
        # 2 GiB asked, 256 MiB given (ulimit -v is in KiB); the record says "capped"
        assert result.stdout.split() == [str(256 * 1024), "hi"]
        assert result.isolation == "capped" and (work / "out.txt").read_text() == "hi\n"
    finally:
        registry._probe.cache_clear()


# ------------------------------------------------------------------ agent kind


def test_agent_kind_example(monkeypatch: pytest.MonkeyPatch, site: Path, tmp_path: Path) -> None:
    from reliabench.agents import AGENT_KIND_REGISTRY, AgentRequest, load_agents

    _install(monkeypatch, site, "agents")
    assert "fixed-files" in AGENT_KIND_REGISTRY
    agents_file = tmp_path / "agents.toml"
    agents_file.write_text('[[agents]]\nname = "baseline"\nkind = "fixed-files"\n'
                           'files = { "pkg/solution.py" = "ANSWER = 42\\n" }\n')
    (agent,) = load_agents(agents_file)
    assert (agent.name, agent.kind, agent.simulated) == ("baseline", "fixed-files", False)
    ws = tmp_path / "ws"
    ws.mkdir()
    result = agent.run(AgentRequest(task_id="t", prompt="p", workspace=ws, seed=0, rollout=0,
                                    timeout_s=10))
    assert result.status == "completed" and result.meta == {"files_written": ["pkg/solution.py"]}
    assert (ws / "pkg" / "solution.py").read_text() == "ANSWER = 42\n"

    agents_file.write_text('[[agents]]\nname = "baseline"\nkind = "fixed-files"\nfiles = {}\n')
    with pytest.raises(ConfigError, match=r"agents\[1\]\.files: expected at least one file"):
        load_agents(agents_file)
    agents_file.write_text('[[agents]]\nname = "b"\nkind = "fixed-file"\n')
    with pytest.raises(ConfigError, match=r"unknown kind 'fixed-file' \(known kinds: .*fixed-files"):
        load_agents(agents_file)


# ------------------------------------------------------------------ importer


def test_importer_example(monkeypatch: pytest.MonkeyPatch, site: Path, tmp_path: Path) -> None:
    from reliabench.commands.import_ import build_command
    from reliabench.importers import IMPORTERS, detect_format, load_foreign, load_source

    _install(monkeypatch, site, "importers")
    assert IMPORTERS.names()[-1] == "scorelog"
    source = tmp_path / "results.json"
    source.write_text(json.dumps({"harness": "scorelog", "agent": "m1",
                                  "scores": {"t2": [1.0, 0.5], "t1": [0.0, 1, 0.75]}}))
    assert detect_format(source)[0] == "scorelog"
    # the built-ins come first in detection and keep their formats
    assert detect_format(FOREIGN / "tau_bench.json")[0] == "tau-bench"

    result = load_source(source)
    assert result.format == "scorelog"
    assert [(r.task_id, r.rollout, r.verdict) for r in result.records] == [
        ("t1", 0, False), ("t1", 1, True), ("t1", 2, False), ("t2", 0, True), ("t2", 1, False)]
    lenient = load_foreign(source, format="scorelog", pass_score="0.5")  # named: data not passed
    assert [r.verdict for r in lenient.records] == [False, True, True, True, True]
    with pytest.raises(InvalidArgumentError, match=r"option\(s\) pass_score do not apply to format 'tau-bench'"):
        load_foreign(FOREIGN / "tau_bench.json", pass_score="0.5")

    # `reliabench import` gets --pass-score from the importer's declaration
    command = build_command()
    assert "scorelog" in _choices(command, "input_format")
    out = tmp_path / "out.jsonl"
    run = CliRunner().invoke(command, [str(source), "--pass-score", "0.5", "-o", str(out)])
    assert run.exit_code == 0, run.output
    assert "scorelog: 5 rollout(s) of 1 agent(s) on 2 task(s)" in run.output
    assert sum(json.loads(line)["passed"] for line in out.read_text().splitlines()) == 4
    option = next(p for p in command.params if p.name == "pass_score")
    assert isinstance(option, click.Option) and option.opts == ["--pass-score"]
    assert option.help == "scorelog: score at or above which a trial passes (default 1.0)."


def test_a_broken_importer_plugin_leaves_the_import_command_usable(
        monkeypatch: pytest.MonkeyPatch, site: Path) -> None:
    from reliabench.commands.import_ import build_command
    from reliabench.errors import UsageError
    from reliabench.importers import detect_format

    install_plugin_dist(monkeypatch, site, "broken-importer",
                        {"reliabench.importers": {"broken": "reliabench_no_such_module_xyz:importer"}})
    command = build_command()  # --help still works; the broken plugin shows only when used
    assert {p.name for p in command.params} >= {"scorer", "variant", "leaderboard"}
    with pytest.raises(UsageError, match=r"importer plugin broken \(reliabench_no_such_module_xyz"):
        detect_format(FOREIGN / "tau_bench.json")


# ------------------------------------------------------------------ executor


@pytest.mark.slow
def test_executor_example(monkeypatch: pytest.MonkeyPatch, site: Path, tmp_path: Path) -> None:
    from test_run_e2e import make_agents, make_suite

    from reliabench.agents.config import load_agents
    from reliabench.commands.run import command as run_command
    from reliabench.run.executors import EXECUTORS
    from reliabench.run.runner import RunSettings, run_suite
    from reliabench.tasks.suite import load_suite

    _install(monkeypatch, site, "executors")
    assert EXECUTORS.names() == ["local", "ray", "serial"]
    assert _choices(run_command, "executor") == ["local", "ray", "serial"]
    with pytest.raises(InvalidArgumentError, match=r"executor must be one of local, ray, serial, got 'dask'"):
        RunSettings(n=1, executor="dask")

    os.chmod(tmp_path, 0o755)
    suite = load_suite(make_suite(tmp_path))
    agents = [a for a in load_agents(make_agents(tmp_path)) if a.name == "recorded"]
    records: dict[str, dict[Any, Any]] = {}
    for executor in ("serial", "local"):
        summary = run_suite(suite, agents, tmp_path / executor, RunSettings(n=4, workers=2, executor=executor))
        assert summary.executed == 4
        from reliabench.store import RunStore

        with RunStore.open_existing(tmp_path / executor) as store:
            records[executor] = {r.key: (r.status, r.passes, tuple((t.name, t.outcome) for t in r.tests or ()))
                                 for r in store.rollouts()}
    assert records["serial"] == records["local"]
    assert [records["serial"][("adder", "recorded", i)][:2] for i in range(4)] == [
        ("completed", True), ("completed", False), ("completed", True), ("agent_error", False)]


# ------------------------------------------------------------------ suite converter


def test_converter_example(monkeypatch: pytest.MonkeyPatch, site: Path, tmp_path: Path) -> None:
    from reliabench.commands.suites import command as suites_command
    from reliabench.tasks.convert import CONVERTER_REGISTRY, import_suite
    from reliabench.tasks.suite import load_suite

    _install(monkeypatch, site, "converters")
    assert "cases" in CONVERTER_REGISTRY
    import_command = suites_command.commands["import"]  # type: ignore[attr-defined]
    assert _choices(import_command, "fmt") == ["humaneval", "mbpp", "stdio", "swebench", "harbor", "aider-polyglot",
                                                "cases"]

    source = tmp_path / "problems.jsonl"
    rows = [
        {"id": "add", "prompt": "Add two numbers.", "function": "add",
         "cases": [{"args": [1, 2], "expected": 3}, {"args": [-1, 1], "expected": 0}],
         "solution": "def add(a, b):\n    return a + b"},
        {"id": "is_even", "prompt": "Is n even?", "function": "is_even",
         "cases": [{"args": [2], "expected": True}, {"args": [3], "expected": False},
                   {"args": [None], "expected": None}],
         "solution": "def is_even(n):\n    return None if n is None else n % 2 == 0\n"},
    ]
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = import_suite("cases", source, tmp_path / "suite")
    assert (result.tasks, result.tests, result.name) == (2, 5, "cases")
    suite = load_suite(tmp_path / "suite")
    assert [t.id for t in suite.tasks] == ["add", "is_even"]

    # the hidden tests pass on the reference and fail on the starter
    for task in suite.tasks:
        for files, expect in ((task.solution_dir, 0), (task.workspace_dir, 1)):
            assert files is not None
            env = {**os.environ, "PYTHONPATH": str(files), "PYTHONDONTWRITEBYTECODE": "1"}
            done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                   str(task.tests_dir)], env=env, capture_output=True, text=True,
                                  check=False)
            assert done.returncode == expect, done.stdout

    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({**rows[0], "function": "not an identifier"}) + "\n")
    from reliabench.errors import InputError

    with pytest.raises(InputError, match=r"bad\.jsonl:1: function: expected a Python identifier"):
        import_suite("cases", bad, tmp_path / "suite2")


# ------------------------------------------------------------------ report format


def test_report_format_example(monkeypatch: pytest.MonkeyPatch, site: Path) -> None:
    from reliabench.hidden_tests.reports import REPORT_FORMAT_REGISTRY, ReportInput, get_report_format

    _install(monkeypatch, site, "report_formats")
    assert "automake" in REPORT_FORMAT_REGISTRY
    fmt = get_report_format("automake")
    parsed = fmt.parse(ReportInput(b"PASS: tests/a\nFAIL: tests/b\nnoise\nPASS: tests/b\n"))
    assert [(c.name, c.outcome) for c in parsed.cases] == [("tests/a", "passed"), ("tests/b", "failed")]
    assert fmt.parse(ReportInput(None)).found is False


# ------------------------------------------------------------------ the guide shows what runs


def test_the_guide_shows_one_example_per_kind_exactly_as_tested() -> None:
    from entry_point_helpers import EXAMPLES

    from reliabench.plugins import KINDS

    guide = GUIDE.read_text(encoding="utf-8")
    section = guide[guide.index("## Adding a plugin"):]
    shown = dict(re.findall(r"<!-- plugin-example: (\w+)\.py -->\n```python\n(.*?)```\n", section, re.S))
    assert set(shown) == {module for module, _, _ in PLUGINS.values()}
    for module, code in shown.items():
        assert code == (EXAMPLES / f"{module}.py").read_text(encoding="utf-8"), f"{module}.py differs"
    lines = re.findall(r'\[project\.entry-points\."reliabench\.(\w+)"\]\n([\w-]+) = "([\w.:]+)"', section)
    assert {kind: (name, target) for kind, name, target in lines} == {
        kind: (name, target) for kind, (_, name, target) in PLUGINS.items()}
    assert set(PLUGINS) == set(KINDS)
