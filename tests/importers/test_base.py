"""The importer registry: detection order per shape, declared options, plugin checks."""

from __future__ import annotations

import json
import shutil
import sys
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from entry_point_helpers import fake_entry_points

from reliabench.errors import InputError, InvalidArgumentError, UsageError
from reliabench.importers import (
    IMPORTERS,
    ImporterOption,
    ImportResult,
    SourceShape,
    declared_options,
    detect_format,
    get_importer,
    load_foreign,
)
from reliabench.importers.base import importers_for

FOREIGN = Path(__file__).parents[1] / "fixtures" / "foreign"


def test_detection_order_per_shape_is_the_one_reliabench_always_had() -> None:
    """Inspect logs, read as zips from the start, are read as JSON logs and folders of logs too
    (after the formats that were there before, whose detection they do not change)."""
    order = {shape: [name for name, _ in importers_for(shape)]
             for shape in ("folder", "zip", "json", "jsonl")}
    assert order == {
        "folder": ["swebench", "terminal-bench", "inspect"],
        "zip": ["inspect"],
        "json": ["swebench", "terminal-bench", "tau-bench", "inspect", "evalplus"],
        "jsonl": ["humaneval", "jsonl"],
    }
    assert [get_importer(n).name for n in IMPORTERS.names()] == IMPORTERS.names()


def test_terminal_bench_results_with_resolved_ids_stay_terminal_bench(tmp_path: Path) -> None:
    """Terminal-Bench's results.json lists resolved_ids, which SWE-bench's summary detector takes."""
    doc = {"results": [{"task_id": "t", "trial_name": "t.1", "is_resolved": True}],
           "resolved_ids": ["t"], "unresolved_ids": [], "accuracy": 1.0}
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc))
    assert detect_format(path)[0] == "terminal-bench"
    summary = tmp_path / "model.run.json"
    summary.write_text(json.dumps({"resolved_ids": ["a"], "unresolved_ids": ["b"]}))
    assert detect_format(summary)[0] == "swebench"


def test_a_folder_with_both_kinds_of_results_is_swebench_as_before(tmp_path: Path) -> None:
    shutil.copytree(FOREIGN / "swebench", tmp_path / "mixed" / "swe")
    shutil.copytree(FOREIGN / "terminal_bench", tmp_path / "mixed" / "tb")
    assert detect_format(tmp_path / "mixed")[0] == "swebench"
    assert detect_format(tmp_path / "mixed" / "tb")[0] == "terminal-bench"


def test_messages_name_what_was_looked_for(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match=r"looked for SWE-bench and Terminal-Bench and Inspect results"):
        detect_format(tmp_path / "empty")
    other = tmp_path / "other.json"
    other.write_text('{"x": 1}')
    with pytest.raises(InputError, match=r"JSON of no known format \(SWE-bench, Terminal-Bench, "
                                        r"tau-bench, Inspect, EvalPlus\)"):
        detect_format(other)


def test_declared_options_are_the_importers_own() -> None:
    by_name = {o.name: o for o in declared_options()}
    assert list(by_name) == ["leaderboard", "scorer", "variant"]
    assert by_name["variant"].choices == ("plus", "base") and by_name["variant"].formats == ("evalplus",)
    assert by_name["scorer"].help.startswith("Inspect: ")


def test_option_choices_are_checked_once_for_every_caller() -> None:
    with pytest.raises(InvalidArgumentError, match=r"variant must be one of plus, base for format "
                                                   r"'evalplus', got 'minus'"):
        load_foreign(FOREIGN / "evalplus", format="evalplus", variant="minus")


class _Plugin:
    """A minimal importer whose options and shapes a test sets."""

    label = "Plugin"

    def __init__(self, name: str, options: tuple[ImporterOption, ...],
                 shapes: frozenset[SourceShape] = frozenset({"json"})) -> None:
        self.name, self.options, self.shapes = name, options, shapes

    def detect(self, path: Path, data: Any) -> bool:
        return False

    def load(self, path: Path, data: Any, *, agent: str | None = None,
             options: Mapping[str, Any] | None = None) -> ImportResult:
        return ImportResult((), self.name)


def test_plugins_sharing_an_option_get_one_merged_option(monkeypatch: pytest.MonkeyPatch) -> None:
    mod = types.ModuleType("reliabench_fake_importers")
    mod.a = _Plugin("a", (ImporterOption("variant", "a's variants.", ("plus", "x")),))  # type: ignore[attr-defined]
    mod.b = _Plugin("b", (ImporterOption("mode", "free text."),))  # type: ignore[attr-defined]
    mod.c = _Plugin("c", (ImporterOption("mode", "fast or slow.", ("fast", "slow")),))  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "reliabench_fake_importers", mod)
    fake_entry_points(monkeypatch, IMPORTERS.group, a="reliabench_fake_importers:a",
                      b="reliabench_fake_importers:b", c="reliabench_fake_importers:c")
    by_name = {o.name: o for o in declared_options()}
    assert by_name["variant"].choices == ("plus", "base", "x")
    assert by_name["variant"].formats == ("evalplus", "a")
    assert by_name["variant"].help.endswith("; Plugin: a's variants.")
    assert by_name["mode"].choices is None  # b takes any value
    assert by_name["mode"].formats == ("b", "c")


@pytest.mark.parametrize("bad", [
    _Plugin("p", (ImporterOption("agent", "clashes with --agent."),)),
    _Plugin("p", (ImporterOption("Bad-Name", "not a keyword."),)),
    _Plugin("p", (), frozenset({"csv"})),  # type: ignore[arg-type]
    _Plugin,
])
def test_an_invalid_importer_plugin_is_one_usage_error(monkeypatch: pytest.MonkeyPatch, bad: Any) -> None:
    mod = types.ModuleType("reliabench_fake_importers")
    mod.bad = bad  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "reliabench_fake_importers", mod)
    fake_entry_points(monkeypatch, IMPORTERS.group, bad="reliabench_fake_importers:bad")
    with pytest.raises(UsageError, match=r"^importer plugin bad \(reliabench_fake_importers:bad\) is not "
                                         r"an Importer object"):
        get_importer("bad")
    assert "bad" not in {f for o in declared_options() for f in o.formats}
