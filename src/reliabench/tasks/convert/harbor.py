"""Harbor / Terminal-Bench 2 tasks -> suite tasks (``reliabench suites import harbor DIR``).

A Harbor task is a folder (Harbor's layout, as Terminal-Bench 2 publishes its tasks)::

    <task>/task.toml              version, [metadata] (tags, difficulty, category),
                                  [verifier] timeout_sec, env; [agent] timeout_sec;
                                  [environment] build_timeout_sec, cpus, memory_mb, docker_image
    <task>/instruction.md         what the agent is asked to do
    <task>/environment/Dockerfile the image the agent works in (its WORKDIR, /app by default)
    <task>/tests/test.sh          the verifier: run after the agent, in the SAME container, with
                                  tests/ at /tests; it writes /logs/verifier/reward.txt (a number;
                                  1 = solved) or reward.json, and may write a CTRF report
                                  (/logs/verifier/ctrf.json) with one outcome per test
    <task>/solution/solve.sh      the oracle (a script that solves the task)

``DIR`` is one such folder or a folder of them. Each becomes a task that runs in its image
(:mod:`reliabench.sandbox.environment`: ``[environment] dockerfile``, ``tests = "same"``, as
Terminal-Bench runs its verifier in the agent's container, ``user = "root"``,
``writable_root = true``, ``workdir`` = the Dockerfile's WORKDIR) with a test command
(:mod:`reliabench.tasks.test_command`: ``bash /tests/test.sh``, ``tests_at = "/tests"``,
``report_dir = "/logs/verifier"``), and a ``[harbor]`` table recording Harbor's places;
``solution/solve.sh`` is kept as ``oracle/solve.sh``, the task's ``oracle`` (``validate`` runs
it as the reference). One outcome per CTRF test where the tests write a report
(``ctrf.json``), else one outcome ``reward`` from ``reward.txt`` (``reward.json`` where the
tests write only that), passed when the reward is 1: the ``ctrf`` and ``harbor-reward``
report formats (:func:`harbor_outcomes` reads a copied-out log folder the same way).

The workspace: reliabench shows the rollout's workspace at the WORKDIR, so what the image
has there is hidden by it. Files the Dockerfile ``COPY`` s (or ``ADD`` s) from its build context
into the WORKDIR are therefore written into the task's ``workspace/`` as well (the agent sees
them, its diff is against them); what a ``RUN`` line writes there cannot be, and such tasks are
named in the conversion's notes. The converted tasks run with ``--sandbox podman`` or
``docker`` (docs/repository-tasks.md, "Harbor").

Harbor's places: Harbor mounts ``/logs`` and copies the tests in with the runtime's own rights;
reliabench's containers drop every capability, so root in them cannot make a folder in a
root folder that is not writable (podman shows ``/`` as ``0555``). Every converted task's
Dockerfile therefore ends with one layer that makes ``/tests``, ``/logs/verifier`` and
``/solution`` (:data:`PLACES_LAYER`); a task that names a prebuilt ``docker_image`` gets a
Dockerfile ``FROM`` it with that layer (the image is kept in ``[harbor] image``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Final

from reliabench.errors import InputError
from reliabench.files.toml import tomllib
from reliabench.files.untrusted import file_kind, read_bounded, read_file, walk_tree
from reliabench.records import TestOutcome
from reliabench.tasks.convert import ConversionResult, ConvertOptions
from reliabench.tasks.convert._common import prepare_out_dir, task_id_for, toml_value, write_suite

__all__ = [
    "HARBOR_LOGS",
    "PLACES_LAYER",
    "HARBOR_TESTS",
    "HarborConverter",
    "HarborTask",
    "harbor_outcomes",
    "read_harbor_task",
]

HARBOR_TESTS: Final = "/tests"
"""Where Harbor's verifier sees the task's ``tests/`` folder."""
HARBOR_LOGS: Final = "/logs/verifier"
"""Where the verifier writes ``reward.txt`` / ``reward.json`` / ``ctrf.json``."""
PLACES_LAYER: Final = (
    "\n# added by reliabench (suites import harbor): the places Harbor's verifier uses, made at build time\n"
    "# (reliabench's containers run without capabilities; Harbor makes them with the runtime's rights)\n"
    "USER root\nRUN mkdir -p /tests /logs/verifier /solution\n")
"""The layer every converted task's Dockerfile ends with (module docstring)."""
_WORKDIR: Final = re.compile(r"^\s*WORKDIR\s+(\S+)\s*$", re.IGNORECASE | re.MULTILINE)
_FROM: Final = re.compile(r"^\s*FROM\s+(\S+)", re.IGNORECASE | re.MULTILINE)
_INSTRUCTION: Final = re.compile(r"^\s*([A-Za-z]+)\s+(.*)$")
_MAX_FILE: Final = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class HarborTask:
    """One Harbor task folder, read.

    Attributes:
        folder: The task folder.
        task_id: The suite task id (the folder name, made safe).
        instruction: ``instruction.md``.
        dockerfile: ``environment/Dockerfile`` (None when ``docker_image`` names an image).
        image: ``[environment] docker_image``, if given.
        workdir: The Dockerfile's last WORKDIR (``/app`` when it has none).
        agent_timeout_s: ``[agent] timeout_sec`` (default 600).
        verifier_timeout_s: ``[verifier] timeout_sec`` (default 600).
        verifier_env: ``[verifier] env``.
        tags: ``[metadata] tags`` plus difficulty and category.
        ctrf: ``tests/test.sh`` mentions a CTRF report.
        oracle: ``solution/solve.sh``, if present.
        reward_file: ``reward.txt``, or ``reward.json`` when the tests name only that.
        workdir_files: Workspace-relative path -> file of the build context that the
            Dockerfile copies into the WORKDIR.
        hidden_workdir: Why files in the image's WORKDIR may be hidden from the agent (a
            ``RUN`` line, a prebuilt image); None when nothing is.
    """

    folder: Path
    task_id: str
    instruction: str
    dockerfile: Path | None
    image: str | None
    workdir: str
    agent_timeout_s: float
    verifier_timeout_s: float
    verifier_env: Mapping[str, str]
    tags: tuple[str, ...]
    ctrf: bool
    oracle: Path | None
    reward_file: str = "reward.txt"
    workdir_files: Mapping[str, Path] = field(default_factory=dict)
    hidden_workdir: str | None = None


def _seconds(table: Mapping[str, Any], key: str, path: Path, what: str, default: float) -> float:
    value = table.get(key, default)
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        raise InputError(path, f"{what}.{key}: expected seconds > 0, got {value!r:.40}")
    return float(value)


def _table(data: Mapping[str, Any], key: str, path: Path) -> Mapping[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise InputError(path, f"[{key}]: expected a table")
    return value


def read_harbor_task(folder: Path) -> HarborTask:
    """Read one Harbor task folder (module docstring).

    Raises:
        InputError: ``FILE: what was expected`` (a missing file, a malformed ``task.toml``).
    """
    toml_path = folder / "task.toml"
    try:
        data = tomllib.loads(read_file(toml_path, 1 << 20, under=folder).decode("utf-8"))
    except FileNotFoundError:
        raise InputError(toml_path, "missing (a Harbor task has task.toml)") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InputError(toml_path, f"not a readable TOML file ({exc})") from None
    try:
        instruction = read_file(folder / "instruction.md", _MAX_FILE, under=folder).decode("utf-8")
    except FileNotFoundError:
        raise InputError(folder / "instruction.md", "missing (what the agent is asked to do)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(folder / "instruction.md", f"cannot be read ({exc})") from None
    env, agent, verifier, meta = (
        _table(data, k, toml_path) for k in ("environment", "agent", "verifier", "metadata")
    )
    image = env.get("docker_image")
    if image is not None and (not isinstance(image, str) or not image.strip()):
        raise InputError(toml_path, "environment.docker_image: expected an image reference")
    found_file = folder / "environment" / "Dockerfile"
    dockerfile: Path | None = None
    workdir = "/app"
    copied: dict[str, Path] = {}
    hidden: str | None = f"a prebuilt image ({image}): what it has in {workdir} is hidden by the workspace"
    if file_kind(found_file) == "file":
        dockerfile = found_file
        text = (read_bounded(found_file, 1 << 20) or b"").decode("utf-8", "replace")
        if not _FROM.search(text):
            raise InputError(found_file, "no FROM line (not a Dockerfile)")
        found = _WORKDIR.findall(text)
        if found:
            workdir = found[-1].strip("\"'")
        if workdir.startswith("/"):
            copied, hidden = _workdir_files(found_file, text, workdir)
    elif image is None:
        raise InputError(found_file, "missing (and task.toml names no environment.docker_image)")
    if not workdir.startswith("/"):
        raise InputError(dockerfile or toml_path, f"WORKDIR {workdir!r}: expected an absolute path")
    if file_kind(folder / "tests" / "test.sh") != "file":
        raise InputError(folder / "tests" / "test.sh", "missing (the verifier's entry point)")
    test_sh = (read_bounded(folder / "tests" / "test.sh", 1 << 20) or b"").decode("utf-8", "replace")
    venv = verifier.get("env", {})
    if not isinstance(venv, dict) or not all(isinstance(v, str) for v in venv.values()):
        raise InputError(toml_path, "verifier.env: expected a table of strings")
    tags = meta.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise InputError(toml_path, "metadata.tags: expected a list of strings")
    extra = [f"{k}:{meta[k]}" for k in ("difficulty", "category") if isinstance(meta.get(k), str)]
    oracle = folder / "solution" / "solve.sh"
    return HarborTask(
        folder=folder,
        task_id=task_id_for(folder.name),
        instruction=instruction,
        dockerfile=dockerfile,
        image=image,
        workdir=workdir,
        agent_timeout_s=_seconds(agent, "timeout_sec", toml_path, "agent", 600.0),
        verifier_timeout_s=_seconds(verifier, "timeout_sec", toml_path, "verifier", 600.0),
        verifier_env=dict(venv),
        tags=("harbor", *tags, *extra),
        ctrf="ctrf" in test_sh.lower(),
        oracle=oracle if file_kind(oracle) == "file" else None,
        reward_file="reward.json" if "reward.json" in test_sh and "reward.txt" not in test_sh
        else "reward.txt",
        workdir_files=copied,
        hidden_workdir=hidden,
    )


def _posix_join(base: str, rel: str) -> str:
    return str(PurePosixPath(base) / rel) if not rel.startswith("/") else str(PurePosixPath(rel))


def _workdir_files(dockerfile: Path, text: str, workdir: str) -> tuple[dict[str, Path], str | None]:
    """The build-context files a Dockerfile COPYs (ADDs) into ``workdir``, and why others may be hidden.

    Follows ``WORKDIR`` changes line by line (a relative destination is relative to the
    current one); a source is a file or folder of the context (no glob, no URL, no
    ``--from``); a folder's content is copied, a file goes to ``DEST/name`` when ``DEST``
    ends with ``/`` or there are several sources, else to ``DEST``.
    """
    context = dockerfile.parent
    files: dict[str, Path] = {}
    hidden: list[str] = []
    current = "/"
    for raw in text.replace("\\\n", " ").splitlines():
        m = _INSTRUCTION.match(raw)
        if m is None or raw.lstrip().startswith("#"):
            continue
        word, rest = m.group(1).upper(), m.group(2).strip()
        if word == "WORKDIR":
            current = _posix_join(current, rest.strip("\"'"))
        elif word == "RUN":
            hidden.append(f"its Dockerfile RUNs commands: what they write into {workdir} is hidden by the "
                          "workspace (shown there)")
        elif word in ("COPY", "ADD"):
            parts = [p for p in rest.split() if not p.startswith("--")]
            if any(p.startswith("--from") for p in rest.split()) or len(parts) < 2 or rest.startswith("["):
                hidden.append(f"a {word} it cannot follow ({rest[:60]})")
                continue
            *sources, dest = parts
            target = _posix_join(current, dest)
            into = dest.endswith("/") or len(sources) > 1
            for src in sources:
                rel = PurePosixPath(src)
                if rel.is_absolute() or ".." in rel.parts or any(c in src for c in "*?[") or "://" in src:
                    hidden.append(f"a {word} source it cannot follow ({src[:60]})")
                    continue
                path = context / rel
                kind = file_kind(path)
                if kind == "dir":
                    for e in walk_tree(path):
                        if e.kind == "file":
                            _keep(files, f"{target}/{e.rel}", path / e.rel, workdir)
                elif kind == "file":
                    _keep(files, f"{target}/{rel.name}" if into else target, path, workdir)
    return files, (hidden[0] if hidden else None)


def _keep(files: dict[str, Path], inside: str, source: Path, workdir: str) -> None:
    """Keep ``source`` at its place relative to ``workdir`` when ``inside`` is below it."""
    rel = PurePosixPath(inside).relative_to("/")
    root = PurePosixPath(workdir).relative_to("/")
    if rel.parts[:len(root.parts)] == root.parts and len(rel.parts) > len(root.parts):
        files[str(PurePosixPath(*rel.parts[len(root.parts):]))] = source


def _copy(src: Path, dest: Path) -> None:
    """Copy the regular files of ``src`` to ``dest`` (no link followed; a link is refused)."""
    for e in walk_tree(src):
        if e.kind in ("link", "special", "error"):
            raise InputError(src / e.rel, "a link or special file (a task holds regular files only)")
        if e.kind == "file":
            (dest / e.rel).parent.mkdir(parents=True, exist_ok=True)
            (dest / e.rel).write_bytes(read_file(src / e.rel, _MAX_FILE, under=src))


def _task_toml(t: HarborTask) -> str:
    env: dict[str, object] = {"dockerfile": "environment/Dockerfile", "tests": "same", "workdir": t.workdir,
                              "user": "root", "writable_root": True}
    command: dict[str, object] = {
        "argv": ["bash", f"{HARBOR_TESTS}/test.sh"],
        "report": "ctrf" if t.ctrf else "harbor-reward",
        "report_file": "ctrf.json" if t.ctrf else t.reward_file,
        "cwd": ".",
        "timeout_s": t.verifier_timeout_s,
        "tests_at": HARBOR_TESTS,
        "report_dir": HARBOR_LOGS,
    }
    if t.oracle is not None:
        command["oracle"] = "oracle/solve.sh"
    harbor: dict[str, object] = {
        "tests_at": HARBOR_TESTS,
        "verifier_logs": HARBOR_LOGS,
        "reward_files": ["reward.txt", "reward.json"],
    }
    if t.oracle is not None:
        harbor["oracle"] = "oracle/solve.sh"
    if t.dockerfile is None and t.image is not None:
        harbor["image"] = t.image
    lines = [
        f"id = {toml_value(t.task_id)}",
        'language = "shell"',
        'test_runner = "command"',
        f"timeout_s = {toml_value(t.agent_timeout_s)}",
        f"tags = {toml_value(list(t.tags))}",
    ]
    for name, table in (("environment", env), ("test_command", command)):
        lines += ["", f"[{name}]"] + [f"{k} = {toml_value(v)}" for k, v in table.items()]
    if t.verifier_env:
        lines += ["", "[test_command.env]"] + [f"{k} = {toml_value(v)}" for k, v in t.verifier_env.items()]
    lines += ["", "[harbor]"] + [f"{k} = {toml_value(v)}" for k, v in harbor.items()]
    return "\n".join(lines) + "\n"


def _task_folders(source: Path) -> list[Path]:
    if file_kind(source / "task.toml") == "file":
        return [source]
    found = sorted(p for p in source.iterdir()
                   if file_kind(p) == "dir" and file_kind(p / "task.toml") == "file")
    if not found:
        raise InputError(source, "no Harbor task here (a folder with task.toml, or a folder of them)")
    return found


class HarborConverter:
    """The ``harbor`` converter (module docstring)."""

    name = "harbor"
    description = "Harbor / Terminal-Bench 2 task folders -> container tasks with a test command"
    source_is_folder = True

    def default_source(self) -> Path | None:
        """No default: give the folder."""
        return None

    def convert(self, source: Path, out: Path, options: ConvertOptions) -> ConversionResult:
        """Write one task per Harbor task folder of ``source`` (module docstring).

        Raises:
            InputError: A task folder that does not follow Harbor's layout.
        """
        prepare_out_dir(out)
        tasks = [read_harbor_task(f) for f in _task_folders(source)]  # all read before anything is written
        if options.limit is not None:
            tasks = tasks[: options.limit]
        seen: dict[str, Path] = {}
        for t in tasks:
            if t.task_id in seen:
                raise InputError(t.folder, f"task id {t.task_id!r} again (first {seen[t.task_id]})")
            seen[t.task_id] = t.folder
        notes: list[str] = []
        for t in tasks:
            tdir = out / "tasks" / t.task_id
            (tdir / "workspace").mkdir(parents=True)
            for rel, src in sorted(t.workdir_files.items()):
                (tdir / "workspace" / rel).parent.mkdir(parents=True, exist_ok=True)
                (tdir / "workspace" / rel).write_bytes(read_file(src, _MAX_FILE, under=t.folder))
            if t.hidden_workdir is not None:
                notes.append(f"{t.task_id}: {t.hidden_workdir}")
            (tdir / "task.toml").write_text(_task_toml(t), encoding="utf-8")
            (tdir / "prompt.md").write_text(t.instruction, encoding="utf-8")
            _copy(t.folder / "tests", tdir / "tests")
            if (t.folder / "environment").is_dir():
                _copy(t.folder / "environment", tdir / "environment")
            dockerfile = tdir / "environment" / "Dockerfile"
            dockerfile.parent.mkdir(exist_ok=True)
            if t.dockerfile is None:
                original = f"FROM {t.image}\nWORKDIR {t.workdir}\n"
            else:
                original = (read_bounded(dockerfile, 1 << 20) or b"").decode("utf-8", "replace")
            dockerfile.write_text(original.rstrip("\n") + "\n" + PLACES_LAYER, encoding="utf-8")
            if t.oracle is not None:
                (tdir / "oracle").mkdir()
                (tdir / "oracle" / "solve.sh").write_bytes(read_file(t.oracle, _MAX_FILE, under=t.folder))
        name = options.name or task_id_for(source.name).lower()
        write_suite(out, name=name, version="1", description=f"Harbor tasks from {source.name}")
        return ConversionResult(out, name, len(tasks), source, len(tasks), tuple(notes))


def harbor_outcomes(logs: Path) -> tuple[TestOutcome, ...]:
    r"""The outcomes of a Harbor verifier from its log folder (``/logs/verifier`` copied out).

    A CTRF report (``ctrf.json``: ``results.tests[*].name`` / ``status``) gives one outcome per
    test (``passed``; ``skipped``/``pending``/``other`` -> ``skipped``; else ``failed``); otherwise
    ``reward.txt`` (a number) or ``reward.json`` (``{"reward": x}``) gives one outcome
    ``reward``, passed when the reward is within 1e-6 of 1. No readable file: one ``failed``.

    Example:
        >>> import tempfile; d = Path(tempfile.mkdtemp()); _ = (d / "reward.txt").write_text("1\n")
        >>> harbor_outcomes(d)
        (TestOutcome(name='reward', outcome='passed', security=False),)
    """
    ctrf = read_bounded(logs / "ctrf.json", _MAX_FILE)
    if ctrf is not None:
        try:
            tests = json.loads(ctrf)["results"]["tests"]
            out = []
            for t in tests:
                status = str(t.get("status", "failed"))
                outcome = (
                    "passed"
                    if status == "passed"
                    else ("skipped" if status in ("skipped", "pending", "other") else "failed")
                )
                out.append(TestOutcome(str(t["name"]), outcome))  # type: ignore[arg-type]
            if out:
                return tuple(out)
        except (ValueError, KeyError, TypeError, AttributeError):
            pass
    reward: float | None = None
    txt = read_bounded(logs / "reward.txt", 4096)
    if txt is not None:
        try:
            reward = float(txt.decode("ascii", "replace").strip())
        except ValueError:
            reward = None
    else:
        js = read_bounded(logs / "reward.json", 1 << 20)
        if js is not None:
            try:
                value = json.loads(js)
                reward = float(value["reward"] if isinstance(value, dict) else value)
            except (ValueError, KeyError, TypeError):
                reward = None
    passed = reward is not None and math.isfinite(reward) and abs(reward - 1.0) <= 1e-6
    return (TestOutcome("reward", "passed" if passed else "failed"),)
