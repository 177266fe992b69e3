"""Recording a finished rollout: its artifacts first, then its record in one transaction."""

from __future__ import annotations

from dataclasses import replace

from reliabench.errors import OutputError, StoreError
from reliabench.meta_keys import ARTIFACTS_OMITTED, REASON
from reliabench.records import Rollout, checked_cost
from reliabench.run import artifacts as _artifacts
from reliabench.run.artifacts import RolloutArtifacts, cap_record, write_artifacts
from reliabench.store import RunStore

__all__ = ["store_rollout", "write_rollout_artifacts"]


def write_rollout_artifacts(store: RunStore, rollout: Rollout, art: RolloutArtifacts) -> Rollout:
    """Write one rollout's artifacts; return the record with what was left out noted.

    Safe in a worker thread (it touches files only). ``OutputError`` (a full or read-only run
    directory) propagates: the run stops before the record is committed.
    """
    adir = store.artifact_dir(rollout.task_id, rollout.agent, rollout.rollout)
    left_out = write_artifacts(adir, art)
    new_left_out = [rel for rel, _ in left_out if rel not in rollout.meta.get(ARTIFACTS_OMITTED, ())]
    if new_left_out:
        meta = dict(rollout.meta)
        meta[ARTIFACTS_OMITTED] = [*meta.get(ARTIFACTS_OMITTED, []), *new_left_out]
        rollout = cap_record(replace(rollout, meta=meta), _artifacts.DEFAULT_BUDGET)
    return rollout


def store_rollout(store: RunStore, rollout: Rollout, art: RolloutArtifacts) -> Rollout:
    """Write one rollout's artifacts (unless a worker did) and record; return the record as stored.

    Whatever the rollout holds, it gets recorded: if its own content cannot be stored (an
    encoding the store refuses, nesting too deep to serialise), a minimal ``test_error``
    record with the reason (and only the parts of its cost the reader accepts) takes its
    place. Only the run directory's own failures
    (``OutputError``) and a duplicate key stop the run.
    """
    if not art.written:
        rollout = write_rollout_artifacts(store, rollout, art)
    try:
        store.add(rollout, replace_status="infra_error")
    except (OutputError, StoreError):
        raise
    except Exception as exc:  # the record itself is the problem: keep a minimal one
        rollout = Rollout(
            task_id=rollout.task_id, agent=rollout.agent, rollout=rollout.rollout, tests=(),
            status="test_error", cost=checked_cost(rollout.cost)[0] if rollout.cost else None,
            isolation=rollout.isolation,
            tamper_suspected=rollout.tamper_suspected, simulated=rollout.simulated,
            meta={REASON: f"harness error while storing the rollout's record: "
                            f"{type(exc).__name__}: {exc}"[:600]},
        )
        store.add(rollout, replace_status="infra_error")
    return rollout
