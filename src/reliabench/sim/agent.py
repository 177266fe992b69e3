"""The ``simulated`` agent kind: a stand-in for an AI coding agent whose behaviour is known.

No model is called. Each rollout draws one behaviour (``correct``, ``insecure``, ``buggy``,
``hang``, ``syntax_error``, ``no_change``) from the distribution documented in
:mod:`reliabench.sim.profiles`, seeded from ``request.seed`` only, and writes the code for
it from the task's reference solution or one of its insecure variants. Those files are not in
the agent's request (no agent gets them): the kind's factory reads them from the suite the
agents are loaded with (``load_agents(path, suite=...)``), as one :class:`TaskReference` per
task. The result then goes through the same runner, sandbox, hidden tests and scanners as a
real agent's, so a demo without an LLM still exercises the whole pipeline, with rates that are
known in advance.

A simulated agent is honest about it: ``simulated`` is always True, every log starts with
``SIMULATED AGENT``, and ``AgentResult.meta`` carries ``"simulated": True``, the chosen
behaviour, the mutation sites and the parameters.

Configuration (one ``[[agents]]`` table)::

    [[agents]]
    name = "careful"
    kind = "simulated"
    profile = "sim-careful"   # sim-careful | sim-hasty | sim-flaky
    # any of these override the profile (or, without a profile, skill is required):
    skill = 0.9               # P(good attempt) on a task of difficulty 0
    p_insecure = 0.05         # P(insecure variant | good attempt)
    p_mutation = 0.9          # shares of a bad attempt; the four sum to 1, and p_mutation
    p_hang = 0.0              # takes the remainder when only the others are given
    p_syntax_error = 0.05
    p_no_change = 0.05
    mutations = 1             # AST mutations per buggy rollout
    difficulty_spread = 2.0   # half-width of task difficulties, in logits
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from reliabench.agents.base import (
    Agent,
    AgentContext,
    AgentRequest,
    AgentResult,
)
from reliabench.agents.config import FieldReader
from reliabench.errors import InvalidArgumentError
from reliabench.files.toml import tomllib
from reliabench.meta_keys import AGENT_KIND, SEED
from reliabench.sim.mutate import (
    break_syntax,
    inject_hang,
    mutate,
    mutation_sites,
)
from reliabench.sim.profiles import (
    BEHAVIOURS,
    FAILURE_MODES,
    PROFILES,
    SimParams,
    behaviour_probabilities,
    params_problem,
    task_difficulty,
    task_success_probability,
)

if TYPE_CHECKING:
    from reliabench.tasks.suite import Suite

__all__ = [
    "CONFIG_KEYS",
    "SimulatedAgent",
    "TaskReference",
    "choose_behaviour",
    "params_from_config",
    "references_of",
    "simulated_agent_factory",
]

_PROBABILITY_KEYS = ("skill", "p_insecure", *FAILURE_MODES)
CONFIG_KEYS: frozenset[str] = frozenset(
    {"profile", "description", "mutations", "difficulty_spread", *_PROBABILITY_KEYS}
)
"""Keys of a ``simulated`` agents table besides the common ``name`` and ``kind``."""

_IGNORED_PARTS = {"__pycache__", ".pytest_cache"}


@dataclass(frozen=True, slots=True)
class TaskReference:
    """What a simulated agent writes its code from, for one task.

    Attributes:
        solution_dir: The task's reference files (None: the task has none).
        variants: ``(name, dir)`` of the task's alternative solutions (``variant.toml`` says
            which are insecure).
    """

    solution_dir: Path | None
    variants: tuple[tuple[str, Path], ...] = ()


def references_of(suite: Suite) -> dict[str, TaskReference]:
    """The reference files of every task of ``suite``, by task id."""
    return {t.id: TaskReference(t.solution_dir, tuple((v.name, v.dir) for v in t.variants))
            for t in suite.tasks}


def choose_behaviour(params: SimParams, task_id: str, rng: np.random.Generator) -> str:
    """Draw one behaviour for a rollout (before the fallback for tasks without a variant).

    One uniform draw from ``rng`` is compared with the cumulative probabilities of
    :data:`~reliabench.sim.profiles.BEHAVIOURS` from
    :func:`~reliabench.sim.profiles.behaviour_probabilities`.
    """
    probs = behaviour_probabilities(params, task_id, has_insecure_variant=True)
    u = float(rng.random())
    acc = 0.0
    last = "correct"
    for name in BEHAVIOURS:
        p = probs[name]
        if p <= 0.0:
            continue
        last = name
        acc += p
        if u < acc:
            return name
    return last  # rounding: u >= the cumulative sum (just below 1)


# --------------------------------------------------------------------------------------- #
# configuration
# --------------------------------------------------------------------------------------- #


def params_from_config(table: Mapping[str, Any], ctx: AgentContext) -> SimParams:
    """Build validated :class:`~reliabench.sim.profiles.SimParams` from an agents table.

    Starts from ``profile`` (if given) and applies every explicit key over it. When some of
    ``p_hang``, ``p_syntax_error``, ``p_no_change`` are given but ``p_mutation`` is not,
    ``p_mutation`` becomes the remainder ``1 - p_hang - p_syntax_error - p_no_change``.

    Raises:
        ConfigError: pointing at the table and key at fault
            (``agents.toml: agents[2].p_hang: ...``).
    """
    reader = FieldReader(table, ctx, CONFIG_KEYS)
    values: dict[str, Any] = {}
    profile = reader.string("profile")
    if profile is not None:
        if profile not in PROFILES:
            known = ", ".join(PROFILES)
            raise ctx.error("profile", f"unknown profile {profile!r} (known: {known})")
        values.update(PROFILES[profile].to_dict())
        values["description"] = PROFILES[profile].description
    elif "skill" not in table:
        known = ", ".join(PROFILES)
        raise ctx.error("profile", f"give a profile ({known}) or at least skill")
    else:
        values["name"] = "custom"
    for key in _PROBABILITY_KEYS:
        value = reader.number(key)
        if value is not None:
            if not 0.0 <= value <= 1.0:
                raise ctx.error(key, f"expected a probability in [0, 1], got {table[key]!r}")
            values[key] = value
    given_modes = [k for k in FAILURE_MODES if k in table]
    if given_modes and "p_mutation" not in table:
        rest = sum(float(values.get(k, 0.0)) for k in FAILURE_MODES if k != "p_mutation")
        if rest > 1.0 + 1e-9:
            raise ctx.error(
                given_modes[0], f"p_hang + p_syntax_error + p_no_change = {rest:.6g} exceeds 1"
            )
        values["p_mutation"] = max(0.0, 1.0 - rest)
    mutations = reader.integer("mutations", minimum=1)
    if mutations is not None:
        values["mutations"] = mutations
    spread = reader.number("difficulty_spread", minimum=0.0)
    if spread is not None:
        values["difficulty_spread"] = spread
    if profile is not None and any(
        k in table for k in (*_PROBABILITY_KEYS, "mutations", "difficulty_spread")
    ):
        values["name"] = f"{profile} (modified)"
    description = reader.string("description", allow_empty=True)
    if description is not None:
        values["description"] = description
    problem = params_problem(values)
    if problem is not None:
        raise ctx.error(*problem)
    return SimParams(**values)


def simulated_agent_factory(table: Mapping[str, Any], ctx: AgentContext) -> Agent:
    """Build a :class:`SimulatedAgent` from its ``[[agents]]`` table (kind ``simulated``).

    Its reference files come from ``ctx.suite`` (none without a suite: every rollout is then
    an ``agent_error`` that says why).
    """
    params = params_from_config(table, ctx)
    name = FieldReader(table, ctx, CONFIG_KEYS).string("name") or params.name
    return SimulatedAgent(params, name=name,
                          references=None if ctx.suite is None else references_of(ctx.suite))


# --------------------------------------------------------------------------------------- #
# the agent
# --------------------------------------------------------------------------------------- #


def _files(root: Path) -> list[Path]:
    return sorted(
        p for p in root.rglob("*")
        if p.is_file()
        and not any(part in _IGNORED_PARTS for part in p.relative_to(root).parts)
        and p.suffix != ".pyc"
    )


def _lay_over(layer: Path, dest: Path, *, skip_top: frozenset[str] = frozenset()) -> list[str]:
    written: list[str] = []
    for src in _files(layer):
        rel = src.relative_to(layer)
        if len(rel.parts) == 1 and rel.name in skip_top:
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, target)
        written.append(rel.as_posix())
    return written


def _insecure_variants(variants: Sequence[tuple[str, Path]]) -> list[tuple[str, Path]]:
    out: list[tuple[str, Path]] = []
    for name, vdir in variants:
        kind = "insecure"
        meta = Path(vdir) / "variant.toml"
        if meta.is_file():
            try:
                with meta.open("rb") as fh:
                    kind = str(tomllib.load(fh).get("kind", "insecure"))
            except (OSError, tomllib.TOMLDecodeError):
                continue
        if kind == "insecure":
            out.append((name, Path(vdir)))
    return sorted(out)


class SimulatedAgent:
    """A simulated coding agent (kind ``simulated``); see the module docstring.

    It keeps no per-rollout state, so ``run`` may be called from several threads or
    processes at once; the same ``request.seed`` always writes the same code.

    Args:
        params: The behaviour model's parameters (a ready profile or custom ones).
        name: The agent's name in reports (defaults to the profile name).
        references: The reference files of each task it may be asked to do, by task id
            (:func:`references_of` a suite); None when the agents were loaded without one.
    """

    kind: str = "simulated"
    simulated: bool = True

    def __init__(self, params: SimParams, name: str | None = None,
                 references: Mapping[str, TaskReference] | None = None) -> None:
        self.params = params
        self.name: str = name or params.name
        self.references = references

    def __repr__(self) -> str:
        return f"SimulatedAgent(name={self.name!r}, params={self.params!r})"

    def run(self, request: AgentRequest) -> AgentResult:
        """Write this rollout's code into ``request.workspace``; see the module docstring."""
        params = self.params
        p_task = task_success_probability(params, request.task_id)
        meta: dict[str, Any] = {
            "simulated": True,
            AGENT_KIND: "simulated",
            "profile": params.name,
            "params": params.to_dict(),
            "p_task": p_task,
            "difficulty": task_difficulty(request.task_id, params.difficulty_spread),
            SEED: request.seed,
        }
        log = [
            f"SIMULATED AGENT {self.name!r} (kind=simulated, profile={params.name}): no model "
            "was called; the code below was produced from the task's reference files.",
            f"task={request.task_id} rollout={request.rollout} seed={request.seed} "
            f"p_task={p_task:.4f}",
        ]
        ref = None if self.references is None else self.references.get(request.task_id)
        solution = None if ref is None else ref.solution_dir
        if solution is None or not Path(solution).is_dir():
            meta.update(behaviour=None, intended_behaviour=None, fallback=None)
            why = ("no suite was given when the agents were loaded (load_agents(path, suite=...))"
                   if self.references is None else "a simulated agent needs one")
            log.append(f"error: the task has no reference solution; {why}")
            return AgentResult(status="agent_error", log="\n".join(log),
                               meta=meta)
        solution = Path(solution)
        rng = np.random.default_rng(int(request.seed) % 2**128)
        intended = choose_behaviour(params, request.task_id, rng)
        behaviour = intended
        fallback: str | None = None
        insecure = _insecure_variants(ref.variants if ref is not None else ())
        if intended == "insecure" and not insecure:
            behaviour = "correct"
            fallback = "insecure -> correct: the task has no insecure variant"
        meta.update(variant=None, mutation_sites=[], injected=[], files_written=[])

        workspace = Path(request.workspace)
        if behaviour == "buggy":
            ok = self._buggy(solution, workspace, rng, meta, log)
            if not ok:
                behaviour = "syntax_error"
                fallback = "buggy -> syntax_error: the reference has no mutation site"
        if behaviour == "correct":
            meta["files_written"] = _lay_over(solution, workspace)
            log.append("behaviour: correct -- copied the reference solution")
        elif behaviour == "insecure":
            name, vdir = insecure[int(rng.integers(len(insecure)))]
            meta["variant"] = name
            written = _lay_over(solution, workspace)
            written += _lay_over(vdir, workspace, skip_top=frozenset({"variant.toml"}))
            meta["files_written"] = sorted(set(written))
            log.append(f"behaviour: insecure -- copied the insecure variant {name!r}")
        elif behaviour == "hang":
            self._rewrite_python(solution, workspace, meta, log, hang=True, rng=rng)
        elif behaviour == "syntax_error":
            self._rewrite_python(solution, workspace, meta, log, hang=False, rng=rng)
        elif behaviour == "no_change":
            log.append("behaviour: no_change -- left the starter workspace untouched")
        if fallback is not None:
            log.append(f"fallback: {fallback}")
        meta["behaviour"] = behaviour
        meta["intended_behaviour"] = intended
        meta["fallback"] = fallback
        return AgentResult(status="completed", log="\n".join(log), meta=meta)

    def _buggy(
        self,
        solution: Path,
        workspace: Path,
        rng: np.random.Generator,
        meta: dict[str, Any],
        log: list[str],
    ) -> bool:
        sources: list[tuple[Path, str, int]] = []
        for path in _files(solution):
            if path.suffix != ".py":
                continue
            text = path.read_text(encoding="utf-8")
            try:
                n = len(mutation_sites(text))
            except InvalidArgumentError:
                continue
            if n:
                sources.append((path, text, n))
        if not sources:
            return False
        weights = np.array([n for _, _, n in sources], dtype=float)
        pick = int(rng.choice(len(sources), p=weights / weights.sum()))
        path, text, _ = sources[pick]
        result = mutate(text, rng, count=self.params.mutations)
        written = _lay_over(solution, workspace)
        rel = path.relative_to(solution).as_posix()
        (workspace / rel).write_text(result.source, encoding="utf-8")
        meta["files_written"] = written
        meta["mutation_sites"] = [{"file": rel, **site.to_dict()} for site in result.sites]
        log.append(
            f"behaviour: buggy -- reference solution with {len(result.sites)} AST mutation(s):"
        )
        log.extend(
            f"  {site.operator} at {rel}:{site.line}:{site.col} ({site.description})"
            for site in result.sites
        )
        return True

    def _rewrite_python(
        self,
        solution: Path,
        workspace: Path,
        meta: dict[str, Any],
        log: list[str],
        *,
        hang: bool,
        rng: np.random.Generator,
    ) -> None:
        written = _lay_over(solution, workspace)
        injected: list[str] = []
        for path in _files(solution):
            if path.suffix != ".py":
                continue
            rel = path.relative_to(solution).as_posix()
            text = path.read_text(encoding="utf-8")
            try:
                out = inject_hang(text) if hang else break_syntax(text, rng)
            except InvalidArgumentError:
                continue
            (workspace / rel).write_text(out.source, encoding="utf-8")
            injected.extend(f"{rel}:{where}" for where in out.where)
        meta["files_written"] = written
        meta["injected"] = injected
        if hang:
            log.append("behaviour: hang -- reference with `while True: pass` at the start of "
                       "every public function and method:")
        else:
            log.append("behaviour: syntax_error -- reference with broken syntax:")
        log.extend(f"  {where}" for where in injected)
