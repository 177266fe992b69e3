"""A run's configuration in a file (reliabench.run.config_file): every option, checked line by line.

One test per error message (``FILE:LINE: key: what was expected``, exit 2), a round trip
through ``settings_to_toml``, and the command line over the file end to end.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from reliabench.cli import main
from reliabench.commands.demo import DEMO_AGENTS
from reliabench.errors import ConfigError
from reliabench.run.config_file import read_run_config, settings_to_toml
from reliabench.run.settings import AdaptiveSettings, RunSettings
from reliabench.sandbox import Limits

FULL = """\
suite = "py30"
agents = "agents.toml"
out = "runs/x"
n = 4
seed = 7
workers = 3
agents_in_flight = 64
sandbox = "bubblewrap"
scanners = ["bandit", "semgrep"]
tasks = ["rle_codec"]
test_timeout_s = 8
test_workers = "fresh"
retest = 2
preflight = false
security_config = "policy.toml"
executor = "ray"

[executors.ray]
address = "ray://head:10001"

[limits]
cpu_s = 30
memory_bytes = 1073741824

[adaptive]
max_n = 16
settle = ["a,b"]
margin = 0.05
"""


def _write(tmp_path: Path, text: str, name: str = "run.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_every_option_is_read(tmp_path: Path) -> None:
    _write(tmp_path, 'threshold = "medium"\n', "policy.toml")
    values = read_run_config(_write(tmp_path, FULL))
    assert values["agents"] == tmp_path / "agents.toml" and values["out"] == tmp_path / "runs/x"
    assert values["suite"] == "py30"  # no such path next to the file: a bundled suite's name
    assert values["scanners"] == ("bandit", "semgrep") and values["tasks"] == ("rle_codec",)
    assert values["workers"] == 3 and values["agents_in_flight"] == 64
    assert values["test_timeout_s"] == 8.0 and isinstance(values["test_timeout_s"], float)
    assert values["limits"] == Limits(cpu_s=30.0, memory_bytes=1 << 30)
    assert values["adaptive"] == AdaptiveSettings(max_n=16, settle=("a,b",), margin=0.05)
    assert values["executor_options"] == {"ray": {"address": "ray://head:10001"}}
    assert values["security_policy"] == {"threshold": "medium"} and values["preflight"] is False
    settings = RunSettings(**values)
    assert settings.executor_option("ray", "address") == "ray://head:10001"


def test_a_written_configuration_reads_back_as_the_same_settings(tmp_path: Path) -> None:
    settings = RunSettings(n=3, seed=2, workers=4, scanners=("bandit",), limits=Limits(memory_bytes=1 << 29),
                           test_timeout_s=5.0, security_policy={"threshold": "high", "allow_rules": ["B101"]},
                           executor="ray", executor_options={"ray": {"address": "auto"}}, retest=1,
                           test_workers="warm", suite="py30", agents=tmp_path / "a.toml", out=tmp_path / "o",
                           tasks=("t1", "t2"), preflight=False, agents_in_flight=32,
                           adaptive=AdaptiveSettings(max_n=12, target_half_width=0.1, k=2),
                           agents_config_hash="left out: computed from the agents file")
    text = settings_to_toml(settings, header=["a header line"])
    assert text.startswith("# a header line\n") and "agents_config_hash" not in text
    back = RunSettings(**read_run_config(_write(tmp_path, text)))
    assert back == dataclasses.replace(settings, agents_config_hash="")


@pytest.mark.parametrize(("text", "line", "message"), [
    ('n = 0\n', 1, "n: expected an integer >= 1, got 0"),
    ('seed = 1\nworkers = "4"\n', 2, "workers: expected an integer >= 1, got '4'"),
    ('workers = 2\nagents_in_flight = 0\n', 2, "agents_in_flight: expected an integer >= 1, got 0"),
    ('workers = 2\nagents_in_flight = 3999\n', 2, "agents_in_flight: agents_in_flight must be at most 4000 "
                                                  "- workers"),
    ('agentz = "a.toml"\n', 1, "agentz: unknown key (known: adaptive, agents,"),
    ('test_workers = "tepid"\n', 1, "test_workers: expected auto, warm or fresh, got 'tepid'"),
    ('scanners = "bandit"\n', 1, "scanners: expected a list of scanner names, got 'bandit'"),
    ('preflight = 1\n', 1, "preflight: expected true or false, got 1"),
    ('n = 2\n\n[limits]\nwall_time = 3\n', 4, "limits.wall_time: unknown limit (known: wall_s, cpu_s,"),
    ('[limits]\nmax_procs = 1.5\n', 2, "limits.max_procs: expected an integer, got 1.5"),
    ('[limits]\ncpu_s = -1\n', 2, "limits.cpu_s: Limits.cpu_s must be > 0, got -1.0"),
    ('[adaptive]\nmax_n = 8\nstop = 1\n', 3, "adaptive.stop: unknown key (known: max_n, k,"),
    ('[adaptive]\nk = 2\n', 1, "adaptive: missing key max_n"),
    ('[adaptive]\nmax_n = 8\nmargin = -0.1\n', 3, "adaptive.margin: expected a number >= 0, got -0.1"),
    ('executor = "dask"\n', 1, "executor: executor must be one of local, ray"),
    ('[executors.ray]\nadress = "x"\n', 2, "executors.ray.adress: unknown option of executor 'ray' "
                                          "(known: address)"),
    ('security_config = "p.toml"\n[security_policy]\nthreshold = "low"\n', 2,
     "security_policy: give security_config (a file) or [security_policy], not both"),
    ('[security_policy]\nthreshhold = "low"\n', 2, "security_policy.threshhold: unknown key"),
    ('n = [1\n', 1, "invalid TOML"),
])
def test_each_problem_is_one_line_with_its_line(tmp_path: Path, text: str, line: int, message: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        read_run_config(path)
    assert str(info.value).startswith(f"{path}:{line}: {message}"), str(info.value)
    assert "\n" not in str(info.value)


def test_an_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        read_run_config(tmp_path / "missing.toml")
    bad = tmp_path / "latin1.toml"
    bad.write_bytes(b'suite = "caf\xe9"\n')
    with pytest.raises(ConfigError, match="not UTF-8"):
        read_run_config(bad)


def test_the_command_line_says_what_is_missing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--config", str(_write(tmp_path, 'suite = "py30"\n'))]) == 2
    assert "reliabench run needs --agents (on the command line or in --config FILE)" in capsys.readouterr().err
    assert main(["run", "--config", str(_write(tmp_path, "n = 0\n"))]) == 2
    assert f"{tmp_path / 'run.toml'}:1: n: expected an integer >= 1, got 0" in capsys.readouterr().err


def test_run_from_a_file_show_it_resume_it_override_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """The configuration a run keeps is a file `run --config` takes back; a flag overrides the file."""
    monkeypatch.chdir(tmp_path)
    _write(tmp_path, f'suite = "py30"\nagents = "{DEMO_AGENTS}"\nout = "run"\nn = 1\nworkers = 1\n'
                     'tasks = ["rle_codec"]\ntest_timeout_s = 8.0\n')
    assert main(["run", "--config", "run.toml", "--seed", "3"]) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(["show", "run", "--format", "toml"]) == 0
    shown = capsys.readouterr().out
    assert "seed = 3\n" in shown and f'out = "{tmp_path / "run"}"' in shown
    kept = _write(tmp_path / "run", shown, "config.toml")
    assert main(["run", "--config", str(kept)]) == 0
    assert "resumed: 0 rollout(s) executed, 3 already recorded" in capsys.readouterr().err
    # how many agents are in flight is not the run's identity: the same run resumes
    assert main(["run", "--config", str(kept), "--agents-in-flight", "3"]) == 0
    assert "resumed: 0 rollout(s) executed, 3 already recorded" in capsys.readouterr().err
    assert main(["run", "--config", str(kept), "--agents-in-flight", "0"]) == 2
    assert "--agents-in-flight" in capsys.readouterr().err
    assert main(["run", "--config", str(kept), "--seed", "4"]) == 2  # the flag wins: another run
    assert "holds a run with a different configuration (changed: seed)" in capsys.readouterr().err
