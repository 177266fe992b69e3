"""Inspect AI logs -- ``.eval`` and ``.json``, one file or a folder of them -- read as what they are.

``inspect_ai`` is not needed. A ``.eval`` log is a zip archive of JSON documents:
``header.json`` (or, for a log still being written, ``_journal/start.json``),
``summaries.json`` (or ``_journal/summaries/*.json``) with one summary per (sample, epoch),
and ``samples/<id>_epoch_<n>.json``. Summaries are read when present (they carry ``id``,
``epoch``, ``scores``, ``error``, ``limit``), else the samples. Entries may be stored, deflated,
or Zstandard-compressed (method 93, used by recent Inspect releases): the last needs the
``zstandard`` module or the ``zstd`` program. A ``.json`` log (``inspect eval
--log-format=json``) is one document: the same header keys and ``samples``.

A folder is read as ``inspect eval`` leaves ``./logs/``: every ``.eval`` file below it, and
every ``.json`` file named as Inspect names its logs (a timestamp first, so ``logs.json`` and
other files are not logs), no link followed. Each (model, sample, epoch) is one rollout, as in
one file; the same one in two logs is refused, naming both (import them one by one).

* One (sample, epoch) is one rollout: task = sample id, rollout = epoch - 1, agent = the
  model (``eval.model``).
* The scorer: ``scorer=`` picks one by name; by default the only scorer, else the headline
  scorer of the results, else the first in ``eval.scorers`` (a note says which).
* Score values: ``"C"`` (correct), ``True``, ``1`` and ``1.0`` pass; ``"I"``, ``"N"``
  (no answer), ``"P"`` (partial), ``False``, ``0`` and any other number fail (a partial
  credit is not a solved task; a note counts them). Other values are refused.
* A sample with an ``error`` is status ``agent_error``; one that hit a ``limit`` is
  ``timeout``; both are failed attempts (in n).
* Inspect's epoch reductions (``mean``, ``pass_at_K``, ``pass_k_K``, in ``results.scores``)
  are kept as reported figures for ``reliabench audit``.
* A log written by ``reliabench export --format inspect`` (``eval.metadata`` has
  ``reliabench_export``) carries each rollout's full record in its sample metadata: the
  records are restored from it (tests, findings, cost and status included).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import re
import shutil
import struct
import subprocess
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from reliabench.errors import InputError
from reliabench.files import json_input
from reliabench.files.untrusted import find_files, open_regular
from reliabench.importers._common import (
    FigureKind,
    ImportResult,
    ReportedFigure,
    expect_dict,
    expect_list,
    read_json,
)
from reliabench.importers.base import FormatImporter, ImporterOption
from reliabench.records import Rollout, RolloutStatus

__all__ = ["FORMAT", "IMPORTER", "detect_zip", "is_json_log", "load", "log_files"]

FORMAT = "inspect"
_ZSTD = 93
_PASS_VALUES: tuple[Any, ...] = ("C", True, 1, 1.0)
_FAIL_STR = ("I", "N", "P")
_REDUCER = re.compile(r"^(pass_at|pass_k)_(\d+)$")
_JSON_LOG_NAME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}[:-]\d{2}[:-]\d{2}.*\.json$")
"""How Inspect names a ``.json`` log (``2025-01-31T10-00-00+00-00_task_id.json``)."""

SampleReader = Callable[[str], "dict[str, Any] | None"]
"""A log's sample by its ``id_epoch_n`` name, when the log keeps samples apart (None if absent)."""


def detect_zip(zf: zipfile.ZipFile) -> bool:
    """Whether an open zip archive is an Inspect log."""
    names = set(zf.namelist())
    return "header.json" in names or "_journal/start.json" in names


def _zstd_decompress(raw: bytes, path: Path, member: str) -> bytes:
    zstd_module: Any = None
    if importlib.util.find_spec("zstandard") is not None:
        zstd_module = importlib.import_module("zstandard")
    if zstd_module is not None:
        out: bytes = zstd_module.ZstdDecompressor().decompressobj().decompress(raw)
        return out
    exe = shutil.which("zstd")
    if exe is None:
        raise InputError(path, "entries are Zstandard-compressed; install the 'zstandard' module "
                         "(pip install zstandard) or the zstd program", field=member)
    proc = subprocess.run([exe, "-d", "-c", "-q"], input=raw, capture_output=True, check=False)
    if proc.returncode != 0:
        raise InputError(path, f"zstd could not decompress this entry: {proc.stderr.decode()[:200]}",
                         field=member)
    return proc.stdout


def _read_member(zf: zipfile.ZipFile, path: Path, member: str) -> Any:
    info = zf.getinfo(member)
    if info.compress_type == _ZSTD:
        fh = zf.fp  # the archive's own open file (opened without following a link)
        if fh is None:
            raise InputError(path, "the archive is closed", field=member)
        fh.seek(info.header_offset)
        header = fh.read(30)
        if len(header) != 30 or header[:4] != b"PK\x03\x04":
            raise InputError(path, "corrupt zip local header", field=member)
        name_len, extra_len = struct.unpack("<HH", header[26:30])
        fh.seek(info.header_offset + 30 + name_len + extra_len)
        data = _zstd_decompress(fh.read(info.compress_size), path, member)
    else:
        try:
            data = zf.read(member)
        except (NotImplementedError, zipfile.BadZipFile, OSError) as exc:
            raise InputError(path, f"cannot read this entry: {exc}", field=member) from None
    try:
        return json_input.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(path, f"malformed JSON: {exc}", field=member) from None


def _verdict(value: Any) -> tuple[bool, bool] | None:
    """(passes, partial) for a score value, or None if it is not a verdict."""
    if isinstance(value, bool):
        return value, False
    if isinstance(value, str):
        if value == "C":
            return True, False
        if value in _FAIL_STR:
            return False, value == "P"
        return None
    if isinstance(value, (int, float)):
        if value in _PASS_VALUES:
            return True, False
        return False, value != 0
    return None


def _entries(zf: zipfile.ZipFile, path: Path) -> list[tuple[str, dict[str, Any]]]:
    names = zf.namelist()
    if "summaries.json" in names:
        data = expect_list(_read_member(zf, path, "summaries.json"), path, "summaries.json")
        return [(f"summaries.json[{i}]", expect_dict(d, path, f"summaries.json[{i}]"))
                for i, d in enumerate(data)]
    journal = sorted((n for n in names if n.startswith("_journal/summaries/")),
                     key=lambda n: int(re.sub(r"\D", "", n) or 0))
    if journal:
        out: list[tuple[str, dict[str, Any]]] = []
        for n in journal:
            for i, d in enumerate(expect_list(_read_member(zf, path, n), path, n)):
                out.append((f"{n}[{i}]", expect_dict(d, path, f"{n}[{i}]")))
        return out
    return [(n, expect_dict(_read_member(zf, path, n), path, n))
            for n in names if n.startswith("samples/") and n.endswith(".json")]


def _restore_export(path: Path, entries: list[tuple[str, dict[str, Any]]], agent: str | None,
                    sample_of: SampleReader) -> ImportResult:
    """Records of a log written by ``reliabench export --format inspect``.

    Each sample's metadata holds the full reliabench record (read from the sample itself when
    the summary is thinned).
    """
    from dataclasses import replace

    from reliabench.records import rollout_from_dict

    records = []
    for where, e in entries:
        raw = (e.get("metadata") or {}).get("reliabench")
        name = f"{e.get('id')}_epoch_{e.get('epoch')}"
        sample = None if isinstance(raw, dict) else sample_of(name)
        if sample is not None:
            raw = (sample.get("metadata") or {}).get("reliabench")
            where = f"samples/{name}.json"
        if not isinstance(raw, dict):
            raise InputError(path, "a reliabench export without the reliabench record in its metadata",
                             field=f"{where}.metadata.reliabench")
        r = rollout_from_dict(raw, path=f"{path}:{where}")
        records.append(replace(r, agent=agent) if agent else r)
    if not records:
        raise InputError(path, "no samples in this log")
    records.sort(key=lambda r: (r.task_id, r.agent, r.rollout))
    return ImportResult(tuple(records), FORMAT,
                        ("a reliabench export: records restored from the samples' metadata",))


@contextmanager
def _opened(path: Path, under: Path | None) -> Iterator[IO[bytes]]:
    """The log file, opened as the user named it, or without following a link below ``under``."""
    try:
        if under is None:
            with path.open("rb") as fh:
                yield fh
        else:
            with open_regular(path, under=under) as fh:
                yield fh
    except OSError as exc:
        raise InputError(path, f"not read: {exc.strerror or exc}") from None


def _read_eval(path: Path, under: Path | None) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]],
                                                         dict[str, dict[str, Any]]]:
    """A ``.eval`` archive: its header, its entries, and its samples kept apart (by name)."""
    with _opened(path, under) as fh:
        try:
            zf = zipfile.ZipFile(fh)
        except (zipfile.BadZipFile, OSError) as exc:
            raise InputError(path, f"not a readable .eval archive ({exc})") from None
        with zf:
            names = zf.namelist()
            head_name = "header.json" if "header.json" in names else "_journal/start.json"
            if head_name not in names:
                raise InputError(path, "no header.json: not an Inspect .eval log")
            header = expect_dict(_read_member(zf, path, head_name), path, head_name)
            entries = _entries(zf, path)
            samples: dict[str, dict[str, Any]] = {}
            ev = header.get("eval")
            export = isinstance(ev, dict) and isinstance(ev.get("metadata"), dict) and \
                bool(ev["metadata"].get("reliabench_export"))
            if export:  # a reliabench export with thinned summaries: its samples hold the records
                for _, e in entries:
                    if isinstance((e.get("metadata") or {}).get("reliabench"), dict):
                        continue
                    member = f"samples/{e.get('id')}_epoch_{e.get('epoch')}.json"
                    if member in names:
                        samples[member[len("samples/"):-len(".json")]] = expect_dict(
                            _read_member(zf, path, member), path, member)
    return header, entries, samples


def _read_json_log(path: Path, under: Path | None,
                   data: Any = None) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
    """A ``.json`` log: the document itself is the header, its ``samples`` the entries."""
    doc = expect_dict(data if data is not None else read_json(path, under=under), path, "log")
    samples = expect_list(doc.get("samples") or [], path, "samples")
    return doc, [(f"samples[{i}]", expect_dict(e, path, f"samples[{i}]")) for i, e in enumerate(samples)]


def is_json_log(data: Any) -> bool:
    """Whether a decoded JSON document is an Inspect log (``eval`` with a task and a model)."""
    ev = data.get("eval") if isinstance(data, dict) else None
    return isinstance(ev, dict) and "task" in ev and "model" in ev and ("samples" in data or "results" in data
                                                                         or "status" in data)


def log_files(root: Path) -> list[Path]:
    """The logs of a folder, as ``inspect eval`` leaves them (see the module docstring), sorted."""
    evals = find_files(root, "*.eval")
    jsons = [p for p in find_files(root, "*.json") if _JSON_LOG_NAME.match(p.name)]
    return sorted(evals + jsons)


def _load_file(path: Path, data: Any, agent: str | None, scorer: str | None,
               under: Path | None) -> ImportResult:
    if data is None and zipfile.is_zipfile(path):
        header, entries, samples = _read_eval(path, under)
    else:
        header, entries = _read_json_log(path, under, data)
        samples = {}
    return _records(path, header, entries, agent, scorer, samples.get)


def _load_folder(root: Path, agent: str | None, scorer: str | None) -> ImportResult:
    files = log_files(root)
    if not files:
        raise InputError(root, "no Inspect logs in this folder (.eval files, or .json files named as "
                               "Inspect names its logs)")
    records: list[Rollout] = []
    notes: list[str] = []
    reported: list[ReportedFigure] = []
    seen: dict[tuple[str, str, int], Path] = {}
    for f in files:
        one = _load_file(f, None, agent, scorer, root)
        for r in one.records:
            other = seen.setdefault(r.key, f)
            if other != f:
                raise InputError(f, f"sample {r.task_id!r} epoch {r.rollout + 1} of {r.agent!r} is in "
                                    f"{other} too: import the logs one by one", field="samples")
        records += one.records
        rel = f.relative_to(root)
        notes += [f"{rel}: {n}" for n in one.notes]
        reported += one.reported
    records.sort(key=lambda r: (r.task_id, r.agent, r.rollout))
    notes.append(f"{len(files)} Inspect log(s) read from this folder")
    return ImportResult(tuple(records), FORMAT, tuple(notes), tuple(reported))


def load(path: Path, data: Any = None, *, agent: str | None = None,
         scorer: str | None = None) -> ImportResult:
    """Read an Inspect AI log (``.eval`` or ``.json``) or a folder of them.

    Args:
        path: The ``.eval`` or ``.json`` file, or a folder (see the module docstring).
        data: The decoded JSON document of a ``.json`` log, when detection read it.
        agent: Name to give the agent (default: the model of each log).
        scorer: The scorer whose value decides success (default: see the module docstring).

    Raises:
        InputError: naming the file and the archive member or key at fault.
    """
    if path.is_dir():
        return _load_folder(path, agent, scorer)
    return _load_file(path, data, agent, scorer, None)


def _records(path: Path, header: dict[str, Any], entries: list[tuple[str, dict[str, Any]]],
             agent: str | None, scorer: str | None, sample_of: SampleReader) -> ImportResult:
    """The rollouts of one log (its header and its entries)."""
    ev = expect_dict(header.get("eval"), path, "eval")
    model = agent or str(ev.get("model") or path.stem)
    results = header.get("results") if isinstance(header.get("results"), dict) else {}
    assert isinstance(results, dict)
    declared = [s.get("name") for s in ev.get("scorers") or [] if isinstance(s, dict)]
    if isinstance(ev.get("metadata"), dict) and ev["metadata"].get("reliabench_export"):
        return _restore_export(path, entries, agent, sample_of)
    notes: list[str] = []
    seen_scorers: list[str] = []
    for _, e in entries:
        for name in (e.get("scores") or {}):
            if name not in seen_scorers:
                seen_scorers.append(name)
    if scorer is None:
        headline = (results.get("headline") or {}).get("scorer") if isinstance(
            results.get("headline"), dict) else None
        if len(seen_scorers) == 1:
            chosen = seen_scorers[0]
        elif headline in seen_scorers:
            chosen = str(headline)
        elif declared and declared[0] in seen_scorers:
            chosen = str(declared[0])
        elif seen_scorers:
            chosen = seen_scorers[0]
        else:
            raise InputError(path, "no sample has any score")
        if len(seen_scorers) > 1:
            notes.append(f"scorer {chosen!r} decides success (others: "
                         f"{', '.join(s for s in seen_scorers if s != chosen)}; pick with --scorer)")
    else:
        if scorer not in seen_scorers:
            raise InputError(path, f"no scorer {scorer!r}; the log has {', '.join(seen_scorers) or 'none'}",
                             field="scores")
        chosen = scorer
    records: list[Rollout] = []
    partial = 0
    seen: dict[tuple[str, int], str] = {}
    for where, e in entries:
        sid = e.get("id")
        if isinstance(sid, bool) or not isinstance(sid, (str, int)) or sid == "":
            raise InputError(path, f"expected a sample id, got {sid!r}", field=f"{where}.id")
        epoch = e.get("epoch", 1)
        if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 1:
            raise InputError(path, f"expected an epoch >= 1, got {epoch!r}", field=f"{where}.epoch")
        key = (str(sid), epoch)
        if key in seen:
            raise InputError(path, f"sample {sid!r} epoch {epoch} already given in {seen[key]}",
                             field=where)
        seen[key] = where
        scores = e.get("scores") or {}
        status: RolloutStatus = "completed"
        if e.get("error"):
            status = "agent_error"
        elif e.get("limit"):
            status = "timeout"
        score = scores.get(chosen) if isinstance(scores, dict) else None
        ok = False
        if score is not None:
            value = score.get("value") if isinstance(score, dict) else score
            verdict = _verdict(value)
            if verdict is None:
                raise InputError(path, f"score value {value!r} is not a verdict (expected C/I/N/P, "
                                 "a boolean or a number)", field=f"{where}.scores.{chosen}")
            ok, was_partial = verdict
            partial += was_partial
        elif status == "completed":
            raise InputError(path, f"no score from scorer {chosen!r}", field=f"{where}.scores")
        meta: dict[str, Any] = {"source": FORMAT, "eval_task": str(ev.get("task", ""))}
        if status != "completed":
            meta["error"] = str(e.get("error") or e.get("limit"))[:200]
        records.append(Rollout(task_id=str(sid), agent=model, rollout=epoch - 1, verdict=ok,
                               status=status, meta=meta))
    if not records:
        raise InputError(path, "no samples in this log")
    records.sort(key=lambda r: (r.task_id, r.rollout))
    if partial:
        notes.append(f"{partial} partial-credit score(s) counted as failures")
    reported: list[ReportedFigure] = []
    for s in results.get("scores") or []:
        if not isinstance(s, dict) or s.get("scorer", s.get("name")) != chosen:
            continue
        reducer = str(s.get("reducer") or "mean")
        metrics = s.get("metrics") or {}
        metric = metrics.get("accuracy") or next(iter(metrics.values()), None)
        if not isinstance(metric, dict) or not isinstance(metric.get("value"), (int, float)):
            continue
        value = float(metric["value"])
        m = _REDUCER.match(reducer)
        src = f"{path}: results.scores[{chosen}/{reducer}]"
        if reducer == "mean":
            reported.append(ReportedFigure(model, "mean", 1, value, src))
        elif m:
            kind: FigureKind = "pass@k" if m.group(1) == "pass_at" else "pass^k"
            reported.append(ReportedFigure(model, kind, int(m.group(2)), value, src))
    return ImportResult(tuple(records), FORMAT, tuple(notes), tuple(reported))


def _is_eval(path: Path) -> bool:
    try:
        with zipfile.ZipFile(path) as zf:
            return detect_zip(zf)
    except (zipfile.BadZipFile, OSError):
        return False


def _detect(path: Path, data: Any) -> bool:
    """An ``.eval`` archive with an Inspect header, a JSON log, or a folder holding either."""
    if path.is_dir():
        files = log_files(path)
        if not files:
            return False
        first = files[0]
        if first.suffix == ".eval":
            try:
                with open_regular(first, under=path) as fh, zipfile.ZipFile(fh) as zf:
                    return detect_zip(zf)
            except (zipfile.BadZipFile, OSError):
                return False
        try:
            return is_json_log(read_json(first, under=path))
        except InputError:
            return False
    if data is not None:
        return is_json_log(data)
    return _is_eval(path)


IMPORTER = FormatImporter(FORMAT, "Inspect", frozenset({"zip", "json", "folder"}), _detect, load,
                          (ImporterOption("scorer", "the scorer that decides success."),))
"""Inspect AI logs (``.eval`` zips, ``.json`` documents, or a folder of them), epochs = rollouts."""
