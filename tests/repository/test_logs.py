"""Log parsers, and the cross-check: our grading of real test logs equals the ``swebench`` package's."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from reliabench.errors import InvalidArgumentError
from reliabench.repository.grading import grade
from reliabench.repository.logs import END_MARKER, LOG_PARSERS, START_MARKER, parse_log, swebench_log_text

FIXTURES = Path(__file__).parents[1] / "fixtures" / "repository"
DATA = FIXTURES / "logs" / "instances.jsonl"


def test_pytest_summary_lines() -> None:
    log = (
        "PASSED a.py::t1\nFAILED a.py::t2 - AssertionError: x - y\nERROR a.py::t3\n"
        "SKIPPED [1] a.py:4: why\nXFAIL a.py::t5 - reason\nrandom PASSED line\nPASSED\n"
    )
    assert parse_log("pytest", log) == {
        "a.py::t1": "PASSED",
        "a.py::t2": "FAILED",
        "a.py::t3": "ERROR",
        "[1]": "SKIPPED",
        "a.py::t5": "XFAIL",
    }


def test_pytest_options_keeps_only_the_last_part_of_a_path_parameter() -> None:
    log = "PASSED t.py::test_x[/tmp/abc/file.dcm]\nPASSED t.py::test_y[//net]\nPASSED t.py::test_z[a]\n"
    assert parse_log("pytest-options", log) == {
        "t.py::test_x[/file.dcm]": "PASSED",
        "t.py::test_y[//net]": "PASSED",
        "t.py::test_z[a]": "PASSED",
    }


def test_pytest_v2_reads_colour_and_trailing_status() -> None:
    log = "\x1b[32mPASSED\x1b[0m t.py::a\nt.py::b FAILED\n"
    assert parse_log("pytest-v2", log) == {"t.py::a": "PASSED", "t.py::b": "FAILED"}


def test_django_and_sympy() -> None:
    dj = "test_a (m.T) ... ok\ntest_b (m.T) ... FAIL\ntest_c (m.T) ... skipped 'x'\nERROR: test_d (m.T)\n"
    assert parse_log("django", dj) == {
        "test_a (m.T)": "PASSED",
        "test_b (m.T)": "FAILED",
        "test_c (m.T)": "SKIPPED",
        "test_d": "ERROR",
    }
    sy = "test_one ok\ntest_two F\ntest_three E\n"
    assert parse_log("sympy", sy) == {"test_one": "PASSED", "test_two": "FAILED", "test_three": "ERROR"}


def test_unknown_parser_is_refused_with_the_known_ones() -> None:
    with pytest.raises(InvalidArgumentError, match="pytest, pytest-options"):
        parse_log("nose", "")
    assert set(LOG_PARSERS) == {"pytest", "pytest-options", "pytest-v2", "django", "sympy"}


def test_log_text_has_swebench_markers() -> None:
    text = swebench_log_text("PASSED a::b")
    assert text.startswith(START_MARKER) and text.rstrip().endswith(END_MARKER)


# ---- the cross-check with the swebench package on logs of real runs --------------------------


def _instances() -> dict[str, dict[str, object]]:
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines()]
    return {d["instance_id"]: d for d in rows}


def _tests(value: object) -> list[str]:
    return json.loads(value) if isinstance(value, str) else list(value)  # type: ignore[call-overload]


LOGS = sorted((FIXTURES / "logs").glob("*.log.gz"))


def test_there_are_logs_of_three_repositories() -> None:
    repos = {p.name.split("__")[0] for p in LOGS}
    assert {"pytest-dev", "marshmallow-code", "sqlfluff"} <= repos
    assert {p.name.split(".")[-3] for p in LOGS} == {"empty", "gold"}


@pytest.mark.parametrize("packed", LOGS, ids=lambda p: p.name)
def test_grading_agrees_with_swebench(packed: Path, tmp_path: Path) -> None:
    grading = pytest.importorskip("swebench.harness.grading")  # the test extra pins swebench==4.1.0

    iid, label = packed.name.split(".")[0], packed.name.split(".")[-3]
    log = tmp_path / packed.name[:-3]
    log.write_bytes(gzip.decompress(packed.read_bytes()))
    row = _instances()[iid]
    # what the package's grading reads of a TestSpec (make_test_spec would fetch requirement
    # files from the network for some repositories)
    spec = SimpleNamespace(
        instance_id=iid,
        repo=row["repo"],
        version=row["version"],
        FAIL_TO_PASS=_tests(row["FAIL_TO_PASS"]),
        PASS_TO_PASS=_tests(row["PASS_TO_PASS"]),
    )
    status, found = grading.get_logs_eval(spec, str(log))
    assert found
    report = grading.get_eval_report(
        spec,
        {"instance_id": iid, "model_name_or_path": "x", "model_patch": "p"},
        str(log),
        include_tests_status=True,
    )[iid]
    text = log.read_text(encoding="utf-8")
    inner = text.split(START_MARKER)[1].split(END_MARKER)[0]
    parser = "pytest-options" if row["repo"] == "pydicom/pydicom" else "pytest"
    ours = parse_log(parser, inner)
    assert ours == status  # the same status map, test by test
    g = grade(ours, _tests(row["FAIL_TO_PASS"]), _tests(row["PASS_TO_PASS"]))
    assert g.resolved == report["resolved"] == (label == "gold")
    assert g.tests_status() == {k: report["tests_status"][k] for k in ("FAIL_TO_PASS", "PASS_TO_PASS")}
    assert grading.get_resolution_status(report["tests_status"]) == g.resolution
