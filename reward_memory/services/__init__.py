"""Reward Memory services: every write and business rule (API, admin, commands and
other apps call these).

``reward_memory.services.<name>`` is the public surface; the submodules group Stage 1
(corpora), Stage 2 (review), lifecycle (records), the ingest loop and Stage 3 recall.
"""

from reward_memory.domain.loopx import is_loopx_packet
from reward_memory.services import provider_deletions, review_queue
from reward_memory.services.authority import (
    bind_role,
    grant_checkpoint,
    reopen_lineage,
    revoke_checkpoint,
    unbind_role,
)
from reward_memory.services.corpora import (
    corpora_health,
    health_facts,
    parse_corpus,
    parse_standing_policy,
    register_corpora,
    register_corpus,
    set_corpus_active,
)
from reward_memory.services.experiments import configure_goal, experiment_status
from reward_memory.services.ingest import (
    ingest_event,
    reconcile_pending_ingests,
    retry_pending_ingests,
    submit_event,
)
from reward_memory.services.operator_control import operator_control
from reward_memory.services.recalls import (
    RecallGuidance,
    recall,
    recall_guidance,
    record_application,
    require_receipt_author,
)
from reward_memory.services.records import (
    check_record_operation,
    expire_due_records,
    mark_experience,
    record_operation,
    retire_record,
    revoke_record,
    supersede_record,
)
from reward_memory.services.reflection import (
    prepare_reflection,
    record_validation,
    settle_reflection,
    validation_from_run,
)
from reward_memory.services.review import apply_review, get_review, review_candidate
from reward_memory.services.routes import ExperimentRoute, experiment_route
from reward_memory.services.runtime_hooks import DECLARED_BOUNDARIES, run_boundary_hook

__all__ = [
    "DECLARED_BOUNDARIES",
    "ExperimentRoute",
    "RecallGuidance",
    "apply_review",
    "bind_role",
    "check_record_operation",
    "configure_goal",
    "corpora_health",
    "experiment_route",
    "experiment_status",
    "expire_due_records",
    "get_review",
    "grant_checkpoint",
    "health_facts",
    "ingest_event",
    "is_loopx_packet",
    "mark_experience",
    "operator_control",
    "parse_corpus",
    "parse_standing_policy",
    "prepare_reflection",
    "provider_deletions",
    "recall",
    "recall_guidance",
    "reconcile_pending_ingests",
    "record_application",
    "record_operation",
    "record_validation",
    "register_corpora",
    "register_corpus",
    "reopen_lineage",
    "require_receipt_author",
    "retire_record",
    "retry_pending_ingests",
    "review_candidate",
    "review_queue",
    "revoke_checkpoint",
    "revoke_record",
    "run_boundary_hook",
    "set_corpus_active",
    "settle_reflection",
    "submit_event",
    "supersede_record",
    "unbind_role",
    "validation_from_run",
]
