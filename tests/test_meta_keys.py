"""The harness's own ``meta`` keys: spelled once, and never renamed (stored records use them)."""

from __future__ import annotations

import re
from pathlib import Path

from reliabench import meta_keys
from reliabench.meta_keys import CAPPED_LISTS, CHANGED_FILES, total_key
from reliabench.records import Rollout
from reliabench.run.artifacts import ArtifactBudget, cap_record


def test_the_keys_are_the_stored_names() -> None:
    # records written by earlier versions carry these exact names: a rename would lose them
    assert {name: getattr(meta_keys, name) for name in meta_keys.__all__
            if isinstance(getattr(meta_keys, name), str)} == {
        "AGENT_KIND": "agent_kind", "ARTIFACTS_OMITTED": "artifacts_omitted",
        "CHANGED_FILES": "changed_files", "COST_DROPPED": "cost_dropped", "DELETED_FILES": "deleted_files",
        "FINDINGS_TOTAL": "findings_total", "FORGED_OUTCOMES": "forged_outcomes",
        "IMAGE": "image", "IMAGE_DIGEST": "image_digest",
        "INFRA_ATTEMPTS": "infra_attempts", "INFRA_REASON": "infra_reason", "REASON": "reason",
        "RAY_ATTEMPTS": "ray_attempts", "RAY_NODE": "ray_node", "RAY_NODE_ID": "ray_node_id",
        "RETEST": "retest",
        "SCANNED": "scanned", "SCAN_ERRORS_TOTAL": "scan_errors_total", "SEED": "seed",
        "SWEBENCH": "swebench",
        "TAMPER_FILES": "tamper_files", "TEST_PATH": "test_path", "TEST_RUNNER": "test_runner",
        "COARSE_OUTCOMES": "coarse_outcomes",
        "UNDECLARED_SKIPS": "undeclared_skips",
    }
    assert total_key(CHANGED_FILES) == "changed_files_total"


def test_every_key_is_in_the_module_table() -> None:
    doc = meta_keys.__doc__ or ""
    for name in meta_keys.__all__:
        value = getattr(meta_keys, name)
        if isinstance(value, str):
            assert f"``{value}``" in doc, value


def test_capped_lists_get_their_total() -> None:
    meta = {key: [f"f{i}.py" for i in range(5)] for key in CAPPED_LISTS}
    capped = cap_record(Rollout("t", "a", 0, verdict=True, meta=meta), ArtifactBudget(max_listed=2))
    for key in CAPPED_LISTS:
        assert capped.meta[key] == ["f0.py", "f1.py"]
        assert capped.meta[total_key(key)] == 5


def test_runner_modules_spell_no_harness_key() -> None:
    # the modules that write or read the harness's keys use the constants
    src = Path(meta_keys.__file__).parent
    spelled = re.compile(r'(?<!``)meta(\.get\(|\[|\.setdefault\()"(infra_reason|reason|changed_files|deleted_files|'
                         r'artifacts_omitted|tamper_files|scanned|test_path|test_runner|forged_outcomes)"')
    for rel in ("run/rollout.py", "run/recording.py", "run/artifacts.py", "run/retest.py",
                "commands/scan.py", "agents/infra.py", "report/rollout_detail.py"):
        assert not spelled.search((src / rel).read_text(encoding="utf-8")), rel
