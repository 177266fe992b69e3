"""The report page: heatmap, figures, provenance and the explorer's data, from a real run."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import replace
from pathlib import Path

import pytest
from report_helpers import copy_run, page_data, records_page, report_page, served

from reliabench.cli import main
from reliabench.errors import InvalidArgumentError
from reliabench.metrics.analysis import score
from reliabench.records import Cost, Finding, Rollout, TestOutcome, write_jsonl
from reliabench.report.explorer import embed_json
from reliabench.report.heatmap import heatmap_rows
from reliabench.report.provenance import mask_argv, mask_secrets
from reliabench.report.rollout_detail import DetailLimits, build_detail, failure_messages, parse_diff
from reliabench.report.serve import check_loopback
from reliabench.store import RunStore


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return copy_run(tmp_path)


def recs_of(run_dir: Path) -> list[Rollout]:
    with RunStore.open_existing(run_dir) as store:
        return store.rollouts()


def _page(run_dir: Path, **kw: object) -> str:
    return report_page(run_dir, [1, 3], **kw)


def test_page_of_a_real_run_has_every_part(run_dir: Path) -> None:
    page = _page(run_dir)
    assert not re.search(r"(src|href)=[\"']?(https?:)?//", page)  # nothing fetched from the network
    assert "<link" not in page and "@import" not in page
    data = page_data(page)
    assert data["explorer"] is True and data["live"] is False
    assert len(data["rollouts"]) == 12 and len(data["details"]) == 12 and data["omitted"] == 0
    # the heatmap: 2 tasks x 2 agents; flaky pairs (0 < c < n) are marked
    cells = re.findall(r'<td class="hm[^"]*"[^>]*data-task="([^"]+)" data-agent="([^"]+)"[^>]*>([^<]*)</td>', page)
    assert len(cells) == 4
    store = RunStore.open_existing(run_dir)
    with store:
        recs = store.rollouts()
    for task, agent, text in cells:
        pair = [r for r in recs if (r.task_id, r.agent) == (task, agent)]
        c = sum(r.passes for r in pair)
        assert text == ("~" if 0 < c < len(pair) else "") + f"{c}/{len(pair)}"
    # figures: the k-curve, the proxy scatter with its rho, cost; provenance with the command line
    assert "reliability@k for k = 1..3" in page
    assert "single-rollout proxy (Spearman rho = " in page
    assert "mean seconds per rollout" in page
    assert "reliabench run py30 --agents tests/fixtures/report/agents.toml" in page
    assert "bd9b1c52321a5969" in page  # the suite hash
    assert "bubblewrap: 12" in page or "namespaces: 12" in page or "none: 12" in page


def test_detail_has_failure_messages_diff_and_placed_findings(run_dir: Path) -> None:
    data = page_data(_page(run_dir))
    d = data["details"]["run_git_log\x1fsim-hasty\x1f0"]
    failed = [t for t in d["tests"] if t[1] == "failed"]
    assert failed and all("AssertionError" in t[3] for t in failed)  # from the stored tests.log
    assert "tests.log" in d["messages_from"]
    placed = {i for f in d["diff"] for ln in f["lines"] for i in ln[3]}
    assert placed and placed.isdisjoint(d["unplaced"])
    for f in d["diff"]:
        for kind, _text, new, hits in f["lines"]:
            for i in hits:  # a finding sits on the line of the new file that it flags
                assert kind in "+ " and d["findings"][i]["line"] == new
    assert d["isolation"] and d["seconds"] > 0 and d["log_kind"] == "agent log"
    rec = next(r for r in recs_of(run_dir) if r.key == ("run_git_log", "sim-hasty", 0))
    assert d["seed"] == str(rec.meta["seed"])  # exact: a 63-bit seed does not fit a JS number
    timeout = data["details"]["interval_merge\x1fsim-flaky\x1f2"]
    assert timeout["status"] == "timeout" and not timeout["passes"]
    side = data["tasks"]["run_git_log"]
    assert side["security"] and all(len(data["rollouts"][i]["codes"]) == len(side["tests"])
                                    for ids in side["agents"].values() for i in ids)


def test_page_is_bounded_and_says_so(run_dir: Path) -> None:
    page = _page(run_dir, max_bytes=40_000, limits=DetailLimits(log_chars=100, diff_lines=20))
    data = page_data(page)
    assert 0 < data["omitted"] < 12 and len(data["details"]) == 12 - data["omitted"]
    assert f"{data['omitted']} of 12 rollouts have no detail in this file" in page
    assert any("diff cut to 20" in c for d in data["details"].values() for c in d["cuts"])
    assert sum(len(embed_json(d)) for d in data["details"].values()) <= 40_000
    with pytest.raises(InvalidArgumentError, match="max_bytes must be an integer >= 1, got 0"):
        _page(run_dir, max_bytes=0)


def test_embedded_data_cannot_close_the_script(tmp_path: Path) -> None:
    evil = "t::test_x[</script><script>alert(1)</script>]"
    recs = [Rollout("t</script>", "a&b", i, tests=(TestOutcome(evil, "failed" if i else "passed"),))
            for i in range(3)]
    rep = score(recs, [1], n_resamples=0)
    page = records_page(recs, rep, source="x.jsonl")
    assert page.count("</script>") == 2  # the data element and the script element
    assert "<script>alert" not in page
    data = page_data(page)
    assert evil in data["tasks"]["t</script>"]["tests"]
    assert '"<' not in embed_json({"a": "<"})


def test_score_html_writes_the_same_page(run_dir: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a.html", tmp_path / "b.html"
    assert main(["score", str(run_dir), "-k", "1,3", "--resamples", "50", "--html", str(a)]) == 0
    assert main(["report", str(run_dir), "-k", "1,3", "--resamples", "50", "-o", str(b)]) == 0

    def strip(p: Path) -> str:
        return re.sub(r"Generated [0-9: -]+", "", p.read_text())

    assert strip(a) == strip(b)


def test_report_of_jsonl_and_import_formats(run_dir: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    with RunStore.open_existing(run_dir) as store:
        recs = store.rollouts()
    jl = tmp_path / "r.jsonl"
    write_jsonl(recs, jl)
    out = tmp_path / "j.html"
    assert main(["report", str(jl), "--resamples", "0", "-o", str(out)]) == 0
    page = out.read_text()
    data = page_data(page)  # the explorer works on records alone, without artifacts
    assert data["explorer"] is True and len(data["details"]) == 12
    d = data["details"]["run_git_log\x1fsim-hasty\x1f0"]
    assert d["findings"] and d["diff"] == [] and not d["artifacts"] and d["log"] == ""
    assert "no stored test output" in d["messages_from"]
    assert "come from a run" in page and "Tasks x agents" in page
    foreign = Path(__file__).parent / "fixtures" / "foreign"
    tau = next(foreign.glob("tau*"), None)
    if tau is not None:
        assert main(["report", str(tau), "--resamples", "0", "-o", str(tmp_path / "t.html")]) == 0
    assert main(["report", str(jl)]) == 2  # html needs -o
    assert "needs -o/--output" in capsys.readouterr().err


def test_cost_and_phases_read_only_when_present() -> None:
    recs = [Rollout("t", "a", i, verdict=bool(i % 2), cost=Cost(tokens=100 * i, usd=0.01 * i, seconds=1.0 + i),
                    meta={"agent_s": 0.5, "test_s": 0.25}) for i in range(4)]
    recs += [Rollout("t", "b", i, verdict=True) for i in range(4)]  # no cost at all: never a crash
    page = records_page(recs, score(recs, [1], n_resamples=0), source="x")
    assert "mean tokens per rollout" in page and "mean USD per rollout" in page
    assert "<th>agent s</th>" in page and "0.5" in page


def test_heatmap_rows_difficulty_and_gap() -> None:
    recs = [Rollout("t1", "a", i, verdict=i < 3) for i in range(3)]
    recs += [Rollout("t1", "b", i, verdict=i < 1) for i in range(3)]
    recs += [Rollout("t2", "a", i, verdict=False) for i in range(3)]
    rows = {r.task: r for r in heatmap_rows(score(recs, [1], n_resamples=0).counts)}
    assert rows["t1"].cells == ((3, 3), (1, 3)) and rows["t1"].flaky == 1
    assert rows["t1"].difficulty == pytest.approx(1 - (1 + 1 / 3) / 2)
    assert rows["t1"].gap == pytest.approx(2 / 3)
    assert rows["t2"].cells == ((0, 3), (0, 0)) and rows["t2"].gap == 0 and rows["t2"].difficulty == 1


def test_failure_messages_from_pytest_output() -> None:
    log = "\n".join([
        "F.FE", "=== FAILURES ===",
        "_____ TestThing.test_a[1-2] _____", "    assert f(1) == 2", "E   assert 3 == 2",
        "_____ test_b _____", "E   ValueError: boom",
        "=== ERRORS ===", "_____ ERROR at setup of test_c _____", "E   fixture 'db' not found",
        "=== short test summary info ===",
        "FAILED t.py::test_d - KeyError: 'x'", "=== 3 failed ===",
    ])
    ids = ["t.py::TestThing::test_a[1-2]", "t.py::test_b", "t.py::test_c", "t.py::test_d", "t.py::test_e"]
    msgs = failure_messages(log, ids)
    assert msgs["t.py::TestThing::test_a[1-2]"] == "    assert f(1) == 2\nE   assert 3 == 2"
    assert msgs["t.py::test_b"] == "E   ValueError: boom"
    assert msgs["t.py::test_c"] == "E   fixture 'db' not found"
    assert msgs["t.py::test_d"] == "KeyError: 'x'"
    assert "t.py::test_e" not in msgs


def test_detail_without_artifacts_says_so() -> None:
    r = Rollout("t", "a", 0, tests=(TestOutcome("x", "failed"),),
                findings=(Finding("bandit", "B1", "high", path="m.py", line=3),))
    d = build_detail(r, None)
    assert d.tests[0].message == "" and "no stored test output" in d.messages_from
    assert d.unplaced_findings == (0,) and not d.artifacts


def test_parse_diff_numbers_new_lines_and_notes() -> None:
    diff = ("--- a/m.py\n+++ b/m.py\n@@ -1,3 +1,4 @@\n import os\n-x = 1\n+x = 2\n+y = 3\n z\n"
            "binary file changed: data.bin\n--- /dev/null\n+++ b/new.py\n@@ -0,0 +1 @@\n+print(1)\n")
    files = parse_diff(diff)
    assert [f.path for f in files] == ["m.py", "data.bin", "new.py"]
    assert [(ln.kind, ln.new) for ln in files[0].lines] == [("@", None), (" ", 1), ("-", None), ("+", 2),
                                                             ("+", 3), (" ", 4)]
    assert files[2].lines[-1].new == 1


def test_secrets_are_masked() -> None:
    cfg = {"agents": [{"name": "x", "api_key": "sk-live", "api_key_env": "OPENAI_API_KEY",
                       "env": {"OPENAI_API_KEY": "sk-2", "PATH": "/bin"}, "max_tokens": 100,
                       "headers": {"Authorization": "Bearer t"}, "password": "p", "model": "m"}]}
    masked = mask_secrets(cfg)["agents"][0]
    assert masked["api_key"] == masked["api_key_env"] == masked["password"] == "***"
    assert masked["env"] == {"OPENAI_API_KEY": "***", "PATH": "***"}
    assert masked["headers"]["Authorization"] == "***"
    assert masked["max_tokens"] == 100 and masked["model"] == "m"
    assert "sk-" not in json.dumps(mask_secrets(cfg))
    assert mask_argv(["x", "--secret", "s", "--password=p", "OPENAI_API_KEY=k", "--n", "3"]) == [
        "x", "--secret", "***", "--password=***", "OPENAI_API_KEY=***", "--n", "3"]


def test_view_serves_the_page_and_details_on_loopback_only(run_dir: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    for bad in ("0.0.0.0", "192.168.1.2", "example.org", "::"):
        with pytest.raises(InvalidArgumentError, match="loopback"):
            check_loopback(bad)
    assert main(["view", str(run_dir), "--host", "0.0.0.0"]) == 2
    with served(run_dir) as server:
        assert server.url.startswith("http://127.0.0.1:") and server.url == f"{server.origin}?token={server.token}"
        with urllib.request.urlopen(server.url, timeout=10) as resp:
            page = resp.read().decode()
            assert "default-src 'none'" in resp.headers["Content-Security-Policy"]
        data = page_data(page)
        assert data["live"] is True and data["details"] == {} and len(data["rollouts"]) == 12
        rid = "run_git_log\x1fsim-hasty\x1f0"
        with urllib.request.urlopen(f"{server.origin}rollout?id={urllib.parse.quote(rid)}&token={server.token}",
                                    timeout=10) as resp:
            detail = json.loads(resp.read())
        assert detail["id"] == rid and detail["findings"]
        with pytest.raises(urllib.error.HTTPError, match="404"):
            urllib.request.urlopen(f"{server.origin}rollout?id=nope&token={server.token}", timeout=10)
        port = server.origin.rsplit(":", 1)[1].strip("/")
        assert main(["view", str(run_dir), "--port", port, "--resamples", "0"]) == 2  # the port is taken
        assert "cannot listen on 127.0.0.1:" in capsys.readouterr().err


def test_runs_keep_their_command_line(run_dir: Path) -> None:
    with RunStore.open_existing(run_dir) as store:
        info = store.run_info()
    assert info.command_line is not None and info.command_line[:3] == ("reliabench", "run", "py30")
    assert info.config["command_line"][:3] == ["reliabench", "run", "py30"]  # as stored
    assert info.agents_config is not None and info.agents_config["agents"][0]["kind"] == "simulated"
    replace(Rollout("t", "a", 0, verdict=True))  # records stay plain dataclasses


def test_report_reads_stdin(run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import sys

    buf = io.StringIO()
    write_jsonl(recs_of(run_dir), buf)
    monkeypatch.setattr(sys, "stdin", io.StringIO(buf.getvalue()))
    out = tmp_path / "stdin.html"
    assert main(["report", "-", "--resamples", "0", "-o", str(out)]) == 0
    assert len(page_data(out.read_text())["rollouts"]) == 12
