"""The keys of a rollout's ``meta`` that reliabench itself writes and reads back.

``Rollout.meta`` is free-form: an agent keeps what it likes there (the simulated agent's
``behaviour``, the openai agent's ``turns``, an importer's ``source``). The keys below are the
harness's own: the runner writes them, and ``scan``, ``retest``, the reports and the
statistics read them. Each is spelled once, here.

=====================  ========================  =============================================
key                    written by                what it holds
=====================  ========================  =============================================
``seed``               the runner                the rollout's seed (int)
``agent_kind``         the runner                the agent's kind (``command``, ``openai``...)
``reason``             runner, agents            one line: why the rollout failed or was
                                                 excluded (a harness error, a test timeout)
``infra_reason``       runner, agents            why an ``infra_error``: one of
                                                 :data:`reliabench.agents.infra.INFRA_REASONS`
``infra_attempts``     the runner                attempts of an ``infra_error`` rollout (> 1)
``retest``             ``run --retest``          why a rollout was not re-tested
``changed_files``      the runner                files the agent added, changed or deleted
``deleted_files``      the runner                files the agent deleted
``artifacts_omitted``  runner, recording         changed files whose copy was not kept
``tamper_files``       the runner                files that try to change how tests run
``scanned``            runner, ``scan``          scanner names that ran on the rollout
``test_path``          the runner                ``fresh``, ``warm``, ``stdio``, ``repository``,
                                                 ``command``
``test_runner``        the runner                ``pytest``, ``plain``, ``stdio``, ``repository``,
                                                 ``command``
``coarse_outcomes``    the runner                true: the task has ONE outcome per rollout (its
                                                 test command's exit code), not one per test;
                                                 per-test figures leave it out or say so
``forged_outcomes``    the runner                true: forged test outcome lines were seen
``swebench``           the runner                a repository task's SWE-bench verdict:
                                                 ``resolution`` (``RESOLVED_FULL`` / ``_PARTIAL``
                                                 / ``_NO``), ``resolved``, ``fail_to_pass`` and
                                                 ``pass_to_pass`` as ``[passed, total]``,
                                                 ``signed``
``undeclared_skips``   the runner                tests skipped or xfailed that the task does
                                                 not declare (counted failed)
``cost_dropped``       the runner                cost parts the agent reported out of range
                                                 and dropped: ``{part: why}`` (see
                                                 :func:`reliabench.records.checked_cost`)
``image``              the runner                the image reference a container task ran in
``image_digest``       the runner                its digest (``sha256:...``) as the runtime had it
``ray_node``           the Ray executor          IP address of the node that ran the rollout
``ray_node_id``        the Ray executor          Ray's id of that node
``ray_attempts``       the Ray executor          submissions of a rollout whose worker died
                                                 (> 1; recorded once)
``<list>_total``       :func:`cap_record`        full length of a capped list (see below)
``findings_total``     :func:`cap_record`        findings before the cap
``scan_errors_total``  :func:`cap_record`        scan errors before the cap
=====================  ========================  =============================================

The lists in :data:`CAPPED_LISTS` keep their first entries only when long, with
``<key>_total`` (:func:`total_key`) set to the full count
(:func:`reliabench.run.artifacts.cap_record`).
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias, get_args

__all__ = [
    "AGENT_KIND",
    "ARTIFACTS_OMITTED",
    "CAPPED_LISTS",
    "CHANGED_FILES",
    "COST_DROPPED",
    "DELETED_FILES",
    "FINDINGS_TOTAL",
    "FORGED_OUTCOMES",
    "IMAGE",
    "IMAGE_DIGEST",
    "INFRA_ATTEMPTS",
    "INFRA_REASON",
    "REASON",
    "RAY_ATTEMPTS",
    "RAY_NODE",
    "RAY_NODE_ID",
    "RETEST",
    "SCANNED",
    "SCAN_ERRORS_TOTAL",
    "SEED",
    "SWEBENCH",
    "TAMPER_FILES",
    "COARSE_OUTCOMES",
    "TEST_PATH",
    "TEST_RUNNER",
    "TEST_RUNNERS",
    "UNDECLARED_SKIPS",
    "TestPath",
    "TestRunner",
    "total_key",
]

SEED: Final = "seed"
AGENT_KIND: Final = "agent_kind"
REASON: Final = "reason"
INFRA_REASON: Final = "infra_reason"
INFRA_ATTEMPTS: Final = "infra_attempts"
RETEST: Final = "retest"
CHANGED_FILES: Final = "changed_files"
DELETED_FILES: Final = "deleted_files"
ARTIFACTS_OMITTED: Final = "artifacts_omitted"
TAMPER_FILES: Final = "tamper_files"
SCANNED: Final = "scanned"
TEST_PATH: Final = "test_path"
TEST_RUNNER: Final = "test_runner"
COARSE_OUTCOMES: Final = "coarse_outcomes"
FORGED_OUTCOMES: Final = "forged_outcomes"
SWEBENCH: Final = "swebench"
UNDECLARED_SKIPS: Final = "undeclared_skips"
COST_DROPPED: Final = "cost_dropped"
IMAGE: Final = "image"
IMAGE_DIGEST: Final = "image_digest"
RAY_NODE: Final = "ray_node"
RAY_NODE_ID: Final = "ray_node_id"
RAY_ATTEMPTS: Final = "ray_attempts"
FINDINGS_TOTAL: Final = "findings_total"
SCAN_ERRORS_TOTAL: Final = "scan_errors_total"

TestPath: TypeAlias = Literal["fresh", "warm", "stdio", "repository", "command"]
"""Where a rollout's hidden tests ran (``meta["test_path"]``): a fresh sandboxed process, a warm
test worker, the stdin/stdout case runner, a repository's test command graded FAIL_TO_PASS /
PASS_TO_PASS, or a language's test command."""
TestRunner: TypeAlias = Literal["pytest", "plain", "stdio", "repository", "command"]
"""What ran a rollout's hidden tests (``meta["test_runner"]``, and a task's ``test_runner``)."""
TEST_RUNNERS: Final[tuple[TestRunner, ...]] = get_args(TestRunner)

CAPPED_LISTS: Final = (CHANGED_FILES, TAMPER_FILES, DELETED_FILES, ARTIFACTS_OMITTED, UNDECLARED_SKIPS)
"""Lists of paths (or test ids) that are cut when long, with their full length under
:func:`total_key`."""


def total_key(key: str) -> str:
    """The key holding the full length of the capped list ``key``.

    Example:
        >>> total_key(CHANGED_FILES)
        'changed_files_total'
    """
    return f"{key}_total"
