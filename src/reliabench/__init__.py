"""reliabench: reliability@k, pass^k and security-adjusted reliability@k for coding agents.

The curated public API; every name is defined in a submodule.
"""

from reliabench.errors import (
    InputError,
    InvalidArgumentError,
    RecordError,
    ReliabenchError,
    SandboxError,
    SuiteError,
    UsageError,
)
from reliabench.metrics.analysis import AgentSummary, CountTable, Estimate, ScoreReport, count_pairs, score
from reliabench.metrics.estimators import misapplied_pass_at_k, pass_at_k, pass_hat_k
from reliabench.metrics.security import DEFAULT_THRESHOLD, SecurityThreshold, parse_threshold
from reliabench.metrics.stats import BootstrapCI, bootstrap_task_means
from reliabench.records import (
    SCHEMA_VERSION,
    Finding,
    Rollout,
    TestOutcome,
    read_jsonl,
    write_jsonl,
)

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_THRESHOLD",
    "SCHEMA_VERSION",
    "AgentSummary",
    "BootstrapCI",
    "CountTable",
    "Estimate",
    "Finding",
    "InputError",
    "InvalidArgumentError",
    "RecordError",
    "ReliabenchError",
    "Rollout",
    "SandboxError",
    "ScoreReport",
    "SecurityThreshold",
    "SuiteError",
    "TestOutcome",
    "UsageError",
    "__version__",
    "bootstrap_task_means",
    "count_pairs",
    "misapplied_pass_at_k",
    "parse_threshold",
    "pass_at_k",
    "pass_hat_k",
    "read_jsonl",
    "score",
    "write_jsonl",
]
