"""A reliabench run as Inspect AI eval logs, so that ``inspect view`` can browse it.

Written through ``inspect_ai.log`` (the ``inspect`` extra): one log per agent (Inspect logs
hold one model), with

* one *sample* per task and one *epoch* per rollout (epoch = rollout + 1), the task's prompt
  as the input when the suite is still where the run found it: the folder the run names loads
  as a suite (:func:`reliabench.tasks.suite.load_suite`: regular files only, no link
  followed) with the content hash the run recorded; otherwise a placeholder. A run directory
  may come from anyone, and its ``suite_path`` and task ids are its own: a prompt is never read
  from a path built from them;
* two scores per (sample, epoch): ``reliabench`` -- ``C`` when the rollout passes (completed,
  every functional hidden test passed), else ``I``, with an explanation naming the failed
  tests -- and ``tests`` -- a dict of test name -> 1.0 (passed) / 0.0 (failed or error), so
  the viewer shows the score of every test (skipped tests are left out);
* the transcript as the sample's messages when the rollout stored one (``transcript.json``);
  the agent log (cut to 20,000 characters) in the sample's metadata otherwise;
* the full reliabench record in ``metadata["reliabench"]``, so that ``reliabench import`` of
  the log gives back the same records and therefore the same figures; an agent error is the
  sample's ``error``; a timeout its ``limit``.

The headline ``accuracy`` of the ``reliabench`` score is the share of passing rollouts (what
Inspect's ``mean`` reducer would show), not reliability@k: ``reliabench score`` of the
imported log computes that.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from reliabench.errors import InvalidArgumentError, MissingExtraError, UsageError
from reliabench.meta_keys import REASON
from reliabench.records import Rollout, rollout_to_dict
from reliabench.run.artifacts import StoredArtifacts

if TYPE_CHECKING:
    from reliabench.runs import RunDirectory

__all__ = ["EXPORT_MARK", "export_inspect"]

EXPORT_MARK: Final = "reliabench_export"
_LOG_CHARS: Final = 20_000


def _inspect() -> Any:
    try:
        import inspect_ai.log as ilog
    except ImportError:
        raise MissingExtraError("inspect", "export --format inspect") from None
    return ilog


def _messages(adir: StoredArtifacts | None) -> list[Any]:
    text = adir.transcript() if adir is not None else None
    if text is None:
        return []
    from inspect_ai.model import (
        ChatMessageAssistant,
        ChatMessageSystem,
        ChatMessageTool,
        ChatMessageUser,
    )

    try:
        raw = json.loads(text)
    except json.JSONDecodeError:
        return []
    kinds = {"system": ChatMessageSystem, "user": ChatMessageUser, "assistant": ChatMessageAssistant,
             "tool": ChatMessageTool}
    out = []
    for m in raw if isinstance(raw, list) else []:
        if not isinstance(m, dict) or m.get("role") not in kinds:
            continue
        content = m.get("content")
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        out.append(kinds[m["role"]](content=text or ""))
    return out


def _placeholder(task_id: str) -> str:
    return f"reliabench task {task_id}"


def _suite_prompts(suite_path: str | None, suite_hash: str | None) -> dict[str, str]:
    """Task id -> prompt of the run's suite, if it is still at ``suite_path`` unchanged, else ``{}``."""
    from reliabench.errors import SuiteError
    from reliabench.tasks.suite import load_suite

    if not suite_path or not suite_hash:
        return {}
    try:
        suite = load_suite(suite_path)
    except (SuiteError, OSError):
        return {}
    if suite.content_hash != suite_hash:
        return {}
    return {t.id: t.prompt for t in suite.tasks}


def _sample(ilog: Any, r: Rollout, adir: StoredArtifacts | None, prompt: str) -> Any:
    from inspect_ai.scorer import Score

    failed = [t.name for t in r.functional_tests if t.failing]
    total, passed = r.n_tests, r.n_tests_passed
    explanation = f"status {r.status}; " + (f"{passed}/{total} functional tests passed" if total is not None
                                            else "no per-test outcomes")
    if failed:
        explanation += "; failed: " + ", ".join(failed[:20]) + (" ..." if len(failed) > 20 else "")
    if r.findings:
        explanation += f"; {len(r.findings)} scanner finding(s)"
    scores = {"reliabench": Score(value="C" if r.passes else "I", explanation=explanation,
                                  metadata={"status": r.status, "isolation": r.isolation})}
    per_test = {t.name: 1.0 if t.outcome == "passed" else 0.0 for t in r.tests or ()
                if t.outcome != "skipped"}
    if per_test:
        scores["tests"] = Score(value=per_test)
    meta: dict[str, Any] = {"reliabench": rollout_to_dict(r)}
    messages = _messages(adir)
    log = adir.agent_log() if not messages and adir is not None else None
    if log is not None:
        meta["agent_log"] = log if len(log) <= _LOG_CHARS else log[:_LOG_CHARS] + "\n[... cut ...]"
    error = None
    limit = None
    if r.status == "agent_error":
        error = ilog.EvalError(message=str(r.meta.get(REASON) or "agent error"), traceback="",
                               traceback_ansi="")
    elif r.status == "timeout":
        limit = ilog.EvalSampleLimit(type="time", limit=0)
    seconds = r.cost.seconds if r.cost is not None else None
    return ilog.EvalSample(id=r.task_id, epoch=r.rollout + 1, input=prompt, target="", messages=messages,
                           scores=scores, metadata=meta, error=error, limit=limit,
                           total_time=seconds, working_time=seconds)


def export_inspect(run: RunDirectory, output: str | Path, *, agent: str | None = None) -> list[Path]:
    """Write the run's rollouts as Inspect eval logs; return the paths written.

    Args:
        run: The run directory (records, run information and artifacts are read through it).
        output: A ``.eval`` file (one agent, or ``agent`` given), else a directory that gets
            one ``<agent>.eval`` per agent.
        agent: Export only this agent.

    Raises:
        MissingExtraError: without ``inspect_ai`` (``pip install 'reliabench[inspect]'``).
        InvalidArgumentError: for an unknown agent.
        UsageError: for a ``.eval`` output with several agents.
    """
    ilog = _inspect()
    records = run.records()
    info = run.info()
    agents = sorted({r.agent for r in records})
    if agent is not None:
        if agent not in agents:
            raise InvalidArgumentError(f"agent {agent!r} is not in this run (agents: {', '.join(agents)})")
        agents = [agent]
    out = Path(output)
    if out.suffix == ".eval":
        if len(agents) > 1:
            raise UsageError(f"{out}: one .eval file holds one model, the run has {len(agents)} agents "
                             f"({', '.join(agents)}); give --agent NAME or a directory as -o")
        targets = {agents[0]: out}
    else:
        out.mkdir(parents=True, exist_ok=True)
        targets = {a: out / (_safe(a) + ".eval") for a in agents}
    suite = info.suite.as_dict()
    prompts = _suite_prompts(info.suite_path, info.suite.hash)
    created = _dt.datetime.fromtimestamp(info.created_at, tz=_dt.timezone.utc).isoformat()
    written = []
    for name, path in targets.items():
        recs = [r for r in records if r.agent == name]
        written.append(_write_one(ilog, run, recs, name, path, suite, prompts, created,
                                  dict(info.packages)))
    return written


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_.@+" else "_" for ch in name) or "_"


def _write_one(ilog: Any, run: RunDirectory, recs: Sequence[Rollout], agent: str, path: Path,
               suite: dict[str, Any], prompts: dict[str, str], created: str,
               packages: dict[str, str]) -> Path:
    tasks = sorted({r.task_id for r in recs})
    samples = []
    for r in sorted(recs, key=lambda x: (x.task_id, x.rollout)):
        adir = run.artifacts(r.task_id, r.agent, r.rollout)
        samples.append(_sample(ilog, r, adir if adir.present else None,
                               prompts.get(r.task_id) or _placeholder(r.task_id)))
    epochs = max((r.rollout + 1 for r in recs), default=1)
    eligible = [r for r in recs if r.status != "infra_error"]
    accuracy = sum(r.passes for r in eligible) / len(eligible) if eligible else 0.0
    spec = ilog.EvalSpec(
        created=created, task=f"reliabench/{suite.get('name') or 'run'}",
        task_version=str(suite.get("version") or 0),
        dataset=ilog.EvalDataset(name=str(suite.get("name") or "reliabench"), samples=len(tasks)),
        model=agent, config=ilog.EvalConfig(epochs=epochs), packages=dict(packages),
        metadata={EXPORT_MARK: 1, "suite": dict(suite), "run_dir": str(run.path),
                  "simulated": any(r.simulated for r in recs)},
    )
    results = ilog.EvalResults(
        total_samples=len(samples), completed_samples=len(samples),
        scores=[ilog.EvalScore(name="reliabench", scorer="reliabench", reducer="mean",
                               metrics={"accuracy": ilog.EvalMetric(name="accuracy", value=accuracy)})],
    )
    start = _dt.datetime.fromisoformat(created)
    busy = sum(r.cost.seconds or 0.0 for r in recs if r.cost is not None)  # rollouts' own time
    stats = ilog.EvalStats(started_at=created,
                           completed_at=(start + _dt.timedelta(seconds=busy)).isoformat())
    log = ilog.EvalLog(status="success", eval=spec, samples=samples, results=results, stats=stats)
    path.parent.mkdir(parents=True, exist_ok=True)
    ilog.write_eval_log(log, str(path))
    return path
