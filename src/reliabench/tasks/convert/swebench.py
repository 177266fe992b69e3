"""SWE-bench instances -> repository tasks (``suites import swebench INSTANCES.jsonl --repos DIR``).

Each line of the JSONL is one SWE-bench instance with the official fields: ``instance_id``,
``repo``, ``base_commit``, ``patch`` (the gold patch), ``test_patch``, ``problem_statement``,
``version``, ``FAIL_TO_PASS``, ``PASS_TO_PASS`` (lists, or JSON-encoded lists as the
dataset stores them), ``hints_text``, ``created_at``, ``environment_setup_commit``. It becomes
a ``test_runner = "repository"`` task (:mod:`reliabench.tasks.repository`): the problem
statement is the prompt (hints are not shown, as in SWE-bench), the test patch and the gold
patch are files of the task, the repository is copied in as ``repo.tar.gz``.

Repositories are found in ``--repos DIR``, for each instance the first of:
``DIR/<instance_id>.tar.gz`` (``.tgz``, ``.tar``; e.g. from ``git archive``), ``DIR/<instance_id>/``
(a tree or a git repository), ``DIR/<owner>__<name>.git`` or ``DIR/<owner>__<name>/`` or
``DIR/<name>.git`` or ``DIR/<name>/`` (a git repository or mirror holding ``base_commit``).
An instance without one is still converted (``source`` is left out; a run refuses that task
with one line); the notes list them.

Environments come from the table reliabench ships
(:data:`reliabench.tasks.convert.swebench_specs.SPECS`) or from the user's ``--specs FILE``
(TOML; its entries win)::

    [specs."owner/name"."1.0"]
    python = "3.11"
    requested_python = "3.9"              # optional
    packages = ["pytest==7.4.4", ...]
    install = ["python", "-m", "pip", "install", "--no-deps", "--no-build-isolation", "-e", "."]
    test_cmd = ["pytest", "-rA"]
    log_parser = "pytest"                 # optional
    directives = "paths"                  # optional: or "django"

or, on a machine that has SWE-bench's per-instance images, the image of each instance instead of
a venv (``{image_key}`` is SWE-bench's name for the instance: ``owner_1776_name-N``; the test
files are appended to ``test_cmd`` as arguments, so a shell command takes them as ``"$@"``)::

    [specs."owner/name"."1.0"]
    image = "swebench/sweb.eval.x86_64.{image_key}:latest"
    test_cmd = ["bash", "-c", 'source /opt/miniconda3/bin/activate testbed && pytest -rA "$@"', "bash"]

An instance of a (repository, version) that neither has is refused: ``FILE:LINE: repo,
version: no environment spec ...`` (exit 2), nothing written.
"""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from reliabench.errors import InputError
from reliabench.files.toml import tomllib
from reliabench.files.untrusted import file_kind, read_file
from reliabench.repository.logs import LOG_PARSERS
from reliabench.repository.patches import PatchApplyError, directives_of, patch_paths
from reliabench.repository.source import _git, source_kind
from reliabench.tasks.convert import ConversionResult, ConvertOptions
from reliabench.tasks.convert._common import (
    JsonRecord,
    field_str,
    prepare_out_dir,
    read_jsonl_records,
    task_id_for,
    toml_value,
    write_suite,
)
from reliabench.tasks.convert.swebench_specs import SPECS, SwebenchSpec

__all__ = ["SwebenchConverter", "command_with_directives", "find_repository", "image_name", "load_user_specs"]

_FIELDS: Final = ("instance_id", "repo", "base_commit", "patch", "test_patch", "problem_statement", "version")
_MAX_REPO_BYTES: Final = 512 * 1024 * 1024


def _tests(rec: JsonRecord, name: str) -> list[str]:
    raw = rec.data.get(name)
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise rec.error(name, f"expected a list of test names (or its JSON text): {exc.msg}") from None
    if not isinstance(raw, list) or not all(isinstance(t, str) for t in raw):
        raise rec.error(name, f"expected a list of test names, got {raw!r:.60}")
    return raw


def load_user_specs(path: Path) -> dict[tuple[str, str], SwebenchSpec]:
    """Read a ``--specs`` TOML file (module docstring).

    Raises:
        InputError: ``FILE: specs.REPO.VERSION.KEY: what was expected``.
    """
    try:
        data = tomllib.loads(read_file(path, 1 << 20).decode("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InputError(path, f"not a readable TOML file ({exc})") from None
    out: dict[tuple[str, str], SwebenchSpec] = {}
    specs = data.get("specs", {})
    if not isinstance(specs, dict):
        raise InputError(path, 'specs: expected a table [specs."owner/name"."version"]')
    for repo, versions in specs.items():
        if not isinstance(versions, dict):
            raise InputError(path, f"specs.{repo}: expected a table of versions")
        for version, t in versions.items():
            where = f"specs.{repo!r}.{version!r}"

            def strs(
                key: str, required: bool = True, table: Mapping[str, Any] = t, where: str = where
            ) -> tuple[str, ...]:
                v = table.get(key)
                if v is None and not required:
                    return ()
                if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                    raise InputError(path, f"{where}.{key}: expected a list of strings")
                return tuple(v)

            if not isinstance(t, dict):
                raise InputError(path, f"{where}: expected a table")
            parser = t.get("log_parser", "pytest")
            if parser not in LOG_PARSERS:
                raise InputError(path, f"{where}.log_parser: expected one of {', '.join(LOG_PARSERS)}")
            directives = t.get("directives", "paths")
            if directives not in ("paths", "django"):
                raise InputError(path, f'{where}.directives: expected "paths" or "django"')
            env = t.get("env", {})
            if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
                raise InputError(path, f"{where}.env: expected a table of strings")
            image = t.get("image")
            if image is not None:
                try:
                    ok = isinstance(image, str) and bool(image_name(image, "o__n-1").strip())
                except (KeyError, IndexError, ValueError):
                    ok = False
                if not ok:
                    raise InputError(path, f"{where}.image: expected an image reference, with "
                                           "{instance_id} or {image_key} where the instance goes")
            python = t.get("python", "3.11")
            out[(repo, version)] = SwebenchSpec(
                python=str(python),
                requested_python=str(t.get("requested_python", python)),
                packages=strs("packages", image is None),
                install=strs("install", False),
                test_cmd=strs("test_cmd"),
                log_parser=str(parser),
                env=dict(env),
                notes=("environment from " + str(path),),
                verified=False,
                directives=str(directives),
                image=None if image is None else str(image),
            )
    return out


def image_name(template: str, instance_id: str) -> str:
    """An instance's image from a spec's ``image`` template (``{instance_id}``, ``{image_key}``).

    ``image_key`` is how SWE-bench names an instance's image: the id in lower case, ``__``
    written ``_1776_``.

    Examples:
        >>> image_name("swebench/sweb.eval.x86_64.{image_key}:latest", "sqlfluff__sqlfluff-1625")
        'swebench/sweb.eval.x86_64.sqlfluff_1776_sqlfluff-1625:latest'
    """
    return template.format(instance_id=instance_id, image_key=instance_id.lower().replace("__", "_1776_"))


def find_repository(repos: Path | None, instance_id: str, repo: str) -> Path | None:
    """The repository of an instance in ``repos`` (module docstring), or None."""
    if repos is None:
        return None
    owner_name = repo.replace("/", "__")
    name = repo.rsplit("/", 1)[-1]
    candidates = [repos / f"{instance_id}{s}" for s in (".tar.gz", ".tgz", ".tar")]
    candidates += [
        repos / instance_id,
        repos / f"{owner_name}.git",
        repos / owner_name,
        repos / f"{name}.git",
        repos / name,
    ]
    for c in candidates:
        if file_kind(c) in ("file", "dir"):
            return c
    return None


def command_with_directives(spec: SwebenchSpec, test_patch: str) -> list[str]:
    """The spec's test command followed by the test patch's test files (SWE-bench's directives)."""
    directives = list(directives_of(test_patch))
    if spec.directives == "django":
        out = []
        for d in directives:
            d = d[:-3] if d.endswith(".py") else d
            d = d[len("tests/") :] if d.startswith("tests/") else d
            out.append(d.replace("/", "."))
        directives = out
    return [*spec.test_cmd, *directives]


def _repo_tarball(source: Path, base_commit: str, where: str) -> tuple[bytes, str]:
    """The repository as tarball bytes for the task folder, and the file name to use."""
    kind = source_kind(source)
    if kind == "tarball":
        size = source.stat().st_size
        if size > _MAX_REPO_BYTES:
            raise InputError(source, f"{size} bytes, more than {_MAX_REPO_BYTES}")
        suffix = next(
            s for s in (".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".tar") if source.name.endswith(s)
        )
        return read_file(source, _MAX_REPO_BYTES), "repo" + suffix
    if kind == "git":
        rc, out = _git(source, "archive", "--format=tar.gz", base_commit)
        if rc != 0:
            raise InputError(
                source, f"{where}: git archive {base_commit}: {out.decode('utf-8', 'replace').strip()[-200:]}"
            )
        return out, "repo.tar.gz"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        tf.add(source, arcname=".", filter=lambda ti: None if ti.name.split("/")[1:2] == [".git"] else ti)
    return buf.getvalue(), "repo.tar.gz"


class SwebenchConverter:
    """The ``swebench`` converter (module docstring)."""

    name = "swebench"
    description = "SWE-bench instances (JSONL with the official fields) -> repository tasks"

    def default_source(self) -> Path | None:
        """No default: give the instances file."""
        return None

    def convert(self, source: Path, out: Path, options: ConvertOptions) -> ConversionResult:
        """Write one repository task per instance (module docstring).

        Raises:
            InputError: A malformed instance, or a (repository, version) without a spec.
        """
        prepare_out_dir(out)
        user = load_user_specs(options.specs) if options.specs is not None else {}
        notes: list[str] = []
        seen: dict[str, int] = {}
        rows: list[tuple[JsonRecord, SwebenchSpec]] = []
        for rec in read_jsonl_records(source):  # check every line before writing anything
            for f in _FIELDS:
                field_str(rec, f, allow_empty=f == "patch")
            _tests(rec, "FAIL_TO_PASS")
            _tests(rec, "PASS_TO_PASS")
            iid = str(rec.data["instance_id"])
            if iid in seen:
                raise rec.error("instance_id", f"{iid!r} again (first on line {seen[iid]})")
            seen[iid] = rec.line
            key = (str(rec.data["repo"]), str(rec.data["version"]))
            spec = user.get(key) or SPECS.get(key)
            if spec is None:
                raise rec.error(
                    "version",
                    f"{key[0]} {key[1]}: no environment spec (reliabench ships "
                    f"specs for {len({r for r, _ in SPECS})} repositories; give one with "
                    "--specs FILE, see docs/repository-tasks.md)",
                )
            for name in ("test_patch", "patch"):
                try:
                    patch_paths(str(rec.data[name]), what=name)
                except PatchApplyError as exc:
                    raise rec.error(name, str(exc)) from None
            rows.append((rec, spec))
            if options.limit is not None and len(rows) >= options.limit:
                break
        if not rows:
            raise InputError(source, "no instances (expected one JSON object per line)")
        tests = 0
        for rec, spec in rows:
            tests += self._write(rec, spec, out, options, notes)
        write_suite(
            out,
            name=options.name or task_id_for(source.name.split(".")[0]).lower(),
            version="1",
            description=f"SWE-bench instances from {source.name}",
        )
        return ConversionResult(
            out,
            options.name or task_id_for(source.name.split(".")[0]).lower(),
            len(rows),
            source,
            tests,
            tuple(notes),
        )

    def _write(
        self, rec: JsonRecord, spec: SwebenchSpec, out: Path, options: ConvertOptions, notes: list[str]
    ) -> int:
        d = rec.data
        iid, repo, commit = str(d["instance_id"]), str(d["repo"]), str(d["base_commit"])
        tid = task_id_for(iid)
        tdir = out / "tasks" / tid
        tdir.mkdir(parents=True)
        f2p, p2p = _tests(rec, "FAIL_TO_PASS"), _tests(rec, "PASS_TO_PASS")
        repository: dict[str, object] = {}
        found = find_repository(options.repos, iid, repo)
        if found is not None:
            data, name = _repo_tarball(found, commit, f"{rec.path}:{rec.line}")
            (tdir / name).write_bytes(data)
            repository["source"] = name
        else:
            notes.append(
                f"{iid}: no repository in {options.repos or '(no --repos)'}: converted without one "
                "(a run refuses it)"
            )
        (tdir / "test.patch").write_text(str(d["test_patch"]), encoding="utf-8", newline="")
        (tdir / "gold.patch").write_text(str(d["patch"]), encoding="utf-8", newline="")
        (tdir / "prompt.md").write_text(str(d["problem_statement"]), encoding="utf-8", newline="")
        repository.update(
            base_commit=commit,
            workdir="/testbed",
            test_patch="test.patch",
            gold_patch="gold.patch",
            test_command=command_with_directives(spec, str(d["test_patch"])),
            log_parser=spec.log_parser,
            fail_to_pass=f2p,
            pass_to_pass=p2p,
        )
        env: dict[str, object] = {
            "python": spec.python,
            "requested_python": spec.requested_python,
            "packages": list(spec.packages),
            "install": list(spec.install),
            "notes": list(spec.notes),
        }
        if spec.image is not None:  # the image is the environment (container backends)
            env = {"image": image_name(spec.image, iid), "notes": list(spec.notes)}
        src = {
            k: str(d[k])
            for k in ("instance_id", "repo", "version", "created_at", "environment_setup_commit")
            if isinstance(d.get(k), str)
        }
        src["dataset"] = "swebench"
        lines = [
            f"id = {toml_value(tid)}",
            'language = "python"',
            'test_runner = "repository"',
            "timeout_s = 1800",
            f"tags = {toml_value(['swebench', repo])}",
            "",
            "[repository]",
        ]
        lines += [f"{k} = {toml_value(v)}" for k, v in repository.items()]
        lines += ["", "[repository.environment]"] + [f"{k} = {toml_value(v)}" for k, v in env.items()]
        if spec.env:
            lines += ["", "[repository.environment.env]"] + [
                f"{k} = {toml_value(v)}" for k, v in spec.env.items()
            ]
        lines += ["", "[source]"] + [f"{k} = {toml_value(v)}" for k, v in src.items()]
        (tdir / "task.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
        return len(dict.fromkeys((*f2p, *p2p)))
