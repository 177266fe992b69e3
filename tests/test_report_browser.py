"""The report of a small real run, opened in Debian's Chromium and clicked through (Playwright).

Chromium is the Debian package (``apt-get install chromium``, done by ``.ci/run`` as root); no
browser is ever downloaded (never ``playwright install``). Skipped only where Chromium or
Playwright is missing AND the environment variable CI is not set: in CI these tests run.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from report_helpers import copy_run, served

from reliabench.cli import main

CHROMIUM = os.environ.get("RELIABENCH_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--no-first-run", "--disable-sync"]


def _playwright() -> Any:
    missing = []
    if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
        missing.append(f"Chromium ({CHROMIUM}; apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing.append("playwright (pip install playwright)")
        sync_playwright = None
    if missing:
        if os.environ.get("CI"):
            pytest.fail("CI must run the browser tests; missing: " + ", ".join(missing))
        pytest.skip("missing: " + ", ".join(missing))
    return sync_playwright


@pytest.fixture
def browser() -> Iterator[Any]:
    sync_playwright = _playwright()
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield b
        finally:
            b.close()


class _Watch:
    """Console errors, page errors and every request of a page."""

    def __init__(self, page: Any, allowed_prefix: str) -> None:
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.blocked: list[str] = []
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("request", lambda r: self.requests.append(r.url))

        def route(r: Any) -> None:
            if r.request.url.startswith(allowed_prefix):
                r.continue_()
            else:
                self.blocked.append(r.request.url)
                r.abort()

        page.route("**/*", route)


def _check_rollout_panel(page: Any) -> None:
    detail = page.locator("#rb-detail")
    detail.wait_for(state="visible", timeout=10_000)
    # the diff against the starter, with added lines
    assert page.locator("#rb-detail .diff div.a").count() > 0
    # a failed test's message, from the stored pytest output
    msg = page.locator("#rb-detail pre.failure-message").first
    assert "AssertionError" in msg.inner_text()
    # a scanner finding, on the line it flags and in the findings table
    assert page.locator("#rb-detail .diff div.hit").count() > 0
    assert "bandit B" in page.locator("#rb-detail .diff .finding").first.inner_text()
    assert page.locator("#rb-detail").get_by_text("Security tests").count() == 1
    assert "no tamper or forgery flag" in detail.inner_text()


def test_report_in_chromium(browser: Any, tmp_path: Path) -> None:
    run_dir = copy_run(tmp_path)
    out = tmp_path / "report.html"
    assert main(["report", str(run_dir), "-k", "1,3", "--resamples", "200", "-o", str(out)]) == 0
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    url = out.resolve().as_uri()
    watch = _Watch(page, url)
    page.goto(url)
    # every chart rendered: non-empty SVGs with a visible box
    svgs = page.locator("svg")
    assert svgs.count() >= 6
    for i in range(svgs.count()):
        svg = svgs.nth(i)
        box = svg.bounding_box()
        assert box is not None and box["width"] > 50 and box["height"] > 50
        assert svg.locator("circle, rect, polyline, line").count() > 3
    # sorting the heatmap by gap keeps every row
    rows = page.locator("#hm-table tbody tr")
    n_rows = rows.count()
    page.get_by_role("button", name="gap between agents").click()
    assert rows.count() == n_rows == 2
    # from a heatmap cell into a rollout
    page.locator('td.hm[data-task="run_git_log"][data-agent="sim-hasty"]').click()
    pair = page.locator("#rb-pair")
    pair.wait_for(state="visible")
    assert pair.locator("tr.rclick").count() == 3
    pair.locator('tr.rclick[data-id="run_git_log\x1fsim-hasty\x1f0"]').click()
    _check_rollout_panel(page)
    # the task's rollouts side by side: one column per rollout of every agent
    assert page.locator("#rb-side th.rc").count() == 6
    assert page.locator("#rb-side td.F").count() > 0
    # a column head opens that rollout, of another agent too; the failed tests come first
    page.locator('#rb-side th.rc[data-id="run_git_log\x1fsim-flaky\x1f2"]').click()
    assert "sim-flaky rollout #2" in page.locator("#rb-detail h3").inner_text()
    assert page.locator("td.hm.sel").get_attribute("data-agent") == "sim-flaky"
    outcomes = page.locator("#rb-detail table.tests td:nth-child(2)").all_inner_texts()
    assert outcomes.index("failed") < outcomes.index("passed")
    # a link to a rollout opens it
    page.goto(url + "#rollout=" + quote("interval_merge\x1fsim-flaky\x1f2"))
    page.reload()
    assert "interval_merge / sim-flaky rollout #2" in page.locator("#rb-detail h3").inner_text()
    assert "timeout" in page.locator("#rb-detail").inner_text()
    assert watch.errors == [], watch.errors
    assert watch.blocked == [] and {u.split("#")[0] for u in watch.requests} == {url}, watch.requests


def test_view_in_chromium_fetches_details_from_loopback_only(browser: Any, tmp_path: Path) -> None:
    run_dir = copy_run(tmp_path)
    with served(run_dir) as server:
        page = browser.new_page()
        watch = _Watch(page, server.origin)
        page.goto(server.url)
        page.locator('td.hm[data-task="run_git_log"][data-agent="sim-hasty"]').click()
        page.locator('#rb-pair tr.rclick[data-id="run_git_log\x1fsim-hasty\x1f0"]').click()
        _check_rollout_panel(page)
        assert watch.errors == [], watch.errors
        assert watch.blocked == []
        assert any("/rollout?id=" in u for u in watch.requests)
        assert all(u.startswith(server.origin) for u in watch.requests)
        assert any(f"token={server.token}" in u for u in watch.requests if "/rollout?id=" in u)


def test_report_of_records_without_artifacts_in_chromium(browser: Any, tmp_path: Path) -> None:
    from reliabench.records import write_jsonl
    from reliabench.store import RunStore

    with RunStore.open_existing(copy_run(tmp_path)) as store:
        recs = store.rollouts()
    src = tmp_path / "r.jsonl"
    write_jsonl(recs, src)
    out = tmp_path / "j.html"
    assert main(["report", str(src), "--resamples", "0", "-o", str(out)]) == 0
    page = browser.new_page()
    url = out.resolve().as_uri()
    watch = _Watch(page, url)
    page.goto(url)
    page.locator('td.hm[data-task="run_git_log"][data-agent="sim-hasty"]').click()
    detail = page.locator("#rb-detail")
    detail.wait_for(state="visible")
    text = detail.inner_text()
    assert "No stored diff" in text and "no stored test output" in text and "B603" in text
    assert watch.errors == [] and watch.blocked == []


def test_a_bounded_page_says_what_it_left_out(browser: Any, tmp_path: Path) -> None:
    run_dir = copy_run(tmp_path)
    out = tmp_path / "small.html"
    assert main(["report", str(run_dir), "--resamples", "0", "--max-bytes", "1", "-o", str(out)]) == 0
    page = browser.new_page()
    url = out.resolve().as_uri()
    watch = _Watch(page, url)
    page.goto(url)
    assert "12 of 12 rollouts have no detail in this file" in page.locator("body").inner_text()
    page.locator('td.hm[data-task="interval_merge"][data-agent="sim-hasty"]').click()
    assert "reliabench view" in page.locator("#rb-rollout").inner_text()
    assert page.locator("#rb-side th.rc").count() == 6  # the summaries are all there
    assert watch.errors == [] and watch.blocked == []


def test_agent_written_text_is_shown_not_run(browser: Any, tmp_path: Path) -> None:
    from reliabench.records import Finding, Rollout, TestOutcome, write_jsonl

    evil = '<img src="http://198.51.100.7/x.png" onerror="console.error(1)">'
    recs = [Rollout(f"task{evil}", f"agent{evil}", i,
                    tests=(TestOutcome(f"t.py::test[{evil}]", "failed" if i else "passed"),),
                    findings=(Finding("bandit", f"B1{evil}", "high", message=evil, path="m.py", line=1),),
                    meta={"reason": evil})
            for i in range(3)]
    src = tmp_path / "evil.jsonl"
    write_jsonl(recs, src)
    out = tmp_path / "evil.html"
    assert main(["report", str(src), "--resamples", "0", "-o", str(out)]) == 0
    page = browser.new_page()
    url = out.resolve().as_uri()
    watch = _Watch(page, url)
    page.goto(url)
    page.locator("td.hm").first.click()
    page.locator('#rb-pair tr.rclick').nth(1).click()
    detail = page.locator("#rb-detail")
    detail.wait_for(state="visible")
    assert evil in detail.inner_text()  # shown as text
    assert page.locator("img").count() == 0
    assert watch.errors == [] and watch.blocked == [] and {u.split("#")[0] for u in watch.requests} == {url}
