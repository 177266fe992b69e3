"""Simulated agents are labelled simulated in every command's output, in every format.

The data mixes two simulated agents with one that is not (``sim-agent-02``, its flag removed),
so that a test also fails when a renderer marks every agent, or none. In text formats every
place a simulated agent is named carries ``[SIMULATED]`` (notes that list the simulated
agents say so in words); the real agent never does. JSON carries flags or
``simulated_agents``; CSV a ``simulated`` column; HTML and SVG the mark next to each label.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

from reliabench.cli import main
from reliabench.report.marks import SIMULATED_MARK

SIM = ("sim-agent-00", "sim-agent-01")
REAL = "sim-agent-02"


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cfg = tmp_path_factory.mktemp("sim") / "small.toml"
    cfg.write_text("tasks = 12\nagents = 3\nrollouts = 4\n")
    out = cfg.parent / "r.jsonl"
    assert main(["simulate", "--config", str(cfg), "--records", str(out), "--resamples", "0", "-k", "1"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    for r in rows:
        if r["agent"] == REAL:
            del r["simulated"]
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return out


def run(args: list[str], records: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    capsys.readouterr()
    assert main([a.format(r=records, d=records.parent) for a in args]) == 0
    got = capsys.readouterr()
    return got.out, got.err


def assert_marked_text(text: str, sim: tuple[str, ...] = SIM, real: str | None = REAL) -> None:
    """Each mention of a simulated agent carries the mark (or is a note saying so); the real one never."""
    assert SIMULATED_MARK in text
    for line in text.splitlines():
        note = "not real models" in line
        for name in sim:
            for m in re.finditer(re.escape(name), line):
                rest = line[m.end():]
                assert note or rest.startswith(f" {SIMULATED_MARK}"), f"unmarked {name!r} in: {line!r}"
        if real is not None:
            assert f"{real} {SIMULATED_MARK}" not in line, line
            if note:
                assert real not in line, line


TEXT = {
    "score table": ["score", "{r}", "-k", "1", "--resamples", "0"],
    "score markdown": ["score", "{r}", "-k", "1", "--resamples", "0", "--format", "markdown"],
    "report markdown": ["report", "{r}", "-k", "1", "--resamples", "0", "--format", "markdown"],
    "report latex": ["report", "{r}", "-k", "1", "--resamples", "0", "--format", "latex"],
    "compare pair": ["compare", "{r}", "--a", "sim-agent-00", "--b", "sim-agent-02", "--resamples", "100"],
    "compare rank-first": ["compare", "{r}", "-k", "1", "--resamples", "100"],
    "proxy table": ["proxy", "{r}", "--resamples", "50"],
    "proxy markdown": ["proxy", "{r}", "--resamples", "50", "--format", "markdown"],
    "audit table": ["audit", "{r}", "-k", "1"],
    "rank table": ["rank", "{r}", "--resamples", "100"],
    "plan from a pilot": ["plan", "--pilot", "{r}", "--half-width", "0.15"],
}


@pytest.mark.parametrize("name", sorted(TEXT))
def test_text_outputs_mark_every_simulated_agent(name: str, records: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = run(TEXT[name], records, capsys)
    assert_marked_text(out)


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_simulate_text_marks_every_agent(fmt: str, records: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = run(["simulate", "--config", "{d}/small.toml", "--resamples", "0", "-k", "1", "--format", fmt],
                 records, capsys)
    assert_marked_text(out, sim=("sim-agent-00", "sim-agent-01", "sim-agent-02"), real=None)


JSON = {
    "score": (["score", "{r}", "-k", "1", "--resamples", "0", "--format", "json"], "agents"),
    "audit": (["audit", "{r}", "-k", "1", "--format", "json"], "agents"),
    "rank": (["rank", "{r}", "--resamples", "100", "--format", "json"], "both"),
    "compare pair": (["compare", "{r}", "--a", "sim-agent-00", "--b", "sim-agent-02", "--resamples", "100",
                      "--format", "json"], "simulated_agents"),
    "compare rank-first": (["compare", "{r}", "--resamples", "100", "--format", "json"], "simulated_agents"),
    "proxy": (["proxy", "{r}", "--resamples", "50", "--format", "json"], "simulated_agents"),
    "plan from a pilot": (["plan", "--pilot", "{r}", "--half-width", "0.15", "--format", "json"],
                          "simulated_agents"),
}


@pytest.mark.parametrize("name", sorted(JSON))
def test_json_outputs_flag_simulated_agents(name: str, records: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args, key = JSON[name]
    doc = json.loads(run(args, records, capsys)[0])
    if key in ("agents", "both"):
        assert {a["agent"]: a["simulated"] for a in doc["agents"]} == {
            "sim-agent-00": True, "sim-agent-01": True, "sim-agent-02": False}
    if key in ("simulated_agents", "both"):
        assert doc["simulated_agents"] == list(SIM)


def test_simulate_json_flags_every_agent(records: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = run(["simulate", "--config", "{d}/small.toml", "--resamples", "0", "-k", "1", "--format", "json"],
                 records, capsys)
    assert [a["simulated"] for a in json.loads(out)["score"]["agents"]] == [True, True, True]


@pytest.mark.parametrize("args", [["score", "{r}", "-k", "1", "--resamples", "0", "--format", "csv"],
                                  ["report", "{r}", "-k", "1", "--resamples", "0", "--format", "csv"]])
def test_csv_outputs_have_a_simulated_column(args: list[str], records: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    rows = list(csv.DictReader(io.StringIO(run(args, records, capsys)[0])))
    flags = {(r["agent"], r["simulated"]) for r in rows if r["agent"]}
    assert flags == {("sim-agent-00", "True"), ("sim-agent-01", "True"), ("sim-agent-02", "False")}


def test_proxy_csv_says_simulated_beside_the_table(records: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, err = run(["proxy", "{r}", "--resamples", "50", "--format", "csv"], records, capsys)
    assert out.startswith("proxy,level,statistic,")  # the CSV itself stays a clean table
    assert "note: SIMULATED agents (not real models): sim-agent-00, sim-agent-01" in err


def _svg_labels(svg: str) -> list[str]:
    """The text of every SVG ``<text>`` element (its ``<title>`` tooltip left out)."""
    labels = re.findall(r"<text\b[^>]*>(.*?)</text>", svg, re.S)
    return [re.sub(r"<title>.*?</title>", "", t) for t in labels]


def test_svg_and_html_label_every_simulated_agent(records: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    svg = tmp_path / "rank.svg"
    run(["rank", "{r}", "--resamples", "100", "--svg", str(svg)], records, capsys)
    page = tmp_path / "r.html"
    run(["report", "{r}", "-k", "1,2", "--resamples", "50", "-o", str(page)], records, capsys)
    for text in (svg.read_text(), page.read_text()):
        named = [t for t in _svg_labels(text) if any(n in t for n in (*SIM, REAL))]
        assert named, "no agent label in the figures"
        for label in named:
            if any(n in label for n in SIM):
                assert label.endswith(SIMULATED_MARK), label
            else:
                assert SIMULATED_MARK not in label, label
    html = page.read_text()
    marks = (f" {SIMULATED_MARK}", f' <span class="sim">{SIMULATED_MARK}</span>')
    cells = re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", html, re.S)
    for name in SIM:  # table headers and cells: the name, then the mark (its span, or the text)
        named = [c for c in cells if name in c and "not real models" not in c]
        assert named
        for cell in named:
            for m in re.finditer(re.escape(name), cell):
                assert cell[m.end():].startswith(marks), cell
    assert not [c for c in cells if any(f"{REAL}{mark}" in c for mark in marks)]

def test_long_names_keep_the_whole_mark_in_figures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from reliabench.records import Rollout, write_jsonl

    long = "an-agent-with-a-very-long-name-indeed"
    recs = [Rollout(f"t{t}", a, i, verdict=(i + t) % 3 == 0, simulated=a == long)
            for t in range(5) for a in (long, "b") for i in range(3)]
    src = tmp_path / "r.jsonl"
    write_jsonl(recs, src)
    page = tmp_path / "r.html"
    capsys.readouterr()
    assert main(["report", str(src), "-k", "1,2", "--resamples", "20", "-o", str(page)]) == 0
    labels = [t for t in _svg_labels(page.read_text()) if t.startswith(long[:10])]
    assert labels and all(t.endswith(SIMULATED_MARK) for t in labels), labels


def test_scan_tables_mark_every_simulated_agent(tmp_path: Path) -> None:
    from report_helpers import copy_run

    from reliabench.metrics.analysis import score
    from reliabench.metrics.security import parse_threshold
    from reliabench.report.scan_tables import security_tables
    from reliabench.report.terminal import to_text
    from reliabench.store import RunStore

    with RunStore.open_existing(copy_run(tmp_path), readonly=True) as store:
        recs = store.rollouts()
    text = to_text(security_tables(score(recs, (1, 2), threshold=parse_threshold("low:low"))))
    assert "CWE-78" in text  # the by-CWE table and the lens lines are there, and marked
    assert_marked_text(text, sim=("sim-flaky", "sim-hasty"), real=None)
