"""Input/output serializers of the Reward Memory API.

Inputs check envelope shape only. Contract documents (candidates, compact events,
recall requests, applications) are passed to the services *unfiltered*: their
deterministic guards must see every field, so an unmodelled, raw or authority-granting
field is refused with a reason code instead of being silently dropped here.
"""

from rest_framework import serializers

from loopx_site.core.api.fields import FullRegexField, JsonObjectField
from loopx_site.core.api.serializers import StrictInput
from reward_memory import contracts as c
from reward_memory.domain.validation import IDENT_RE

# A contract document: a JSON object passed through to the service guards as is.
ContractDocumentField = JsonObjectField


class DocumentOutput(serializers.Serializer):
    # a document: its ``schema_version`` first, then its own fields
    schema_version = serializers.CharField()


class CandidateReviewInput(StrictInput):
    candidate = ContractDocumentField(
        help_text="reward_memory_candidate_v0, or an adapter input mapped onto it."
    )
    decision = serializers.ChoiceField(choices=c.DECISIONS)
    reviewer = serializers.CharField(
        required=False,
        max_length=256,
        help_text="Ignored: the recorded reviewer is the authenticated principal.",
    )
    corpus_id = FullRegexField(IDENT_RE, required=False, max_length=128)
    edit = serializers.DictField(required=False, help_text="Edited fields (edit decision).")
    record_ref = serializers.CharField(required=False, max_length=68)
    distinct = serializers.BooleanField(
        default=False,
        help_text="The candidate is distinct from the record it is marked duplicate_of: "
        "accepting it activates its own record instead of adding its evidence.",
    )
    execute = serializers.BooleanField(default=False)


class ExecuteInput(StrictInput):
    execute = serializers.BooleanField(default=False)


class RevokeInput(ExecuteInput):
    revocation_ref = FullRegexField(r"^[^\s\x00-\x1f\x7f]{1,256}$", max_length=256)


class SupersedeInput(ExecuteInput):
    by_record_ref = FullRegexField(r"^rmr_[0-9a-f]{64}$")


class RecordReadbackOutput(serializers.Serializer):
    lifecycle_state = serializers.CharField()
    recallable = serializers.BooleanField()


class RecordOperationOutput(DocumentOutput):
    operation = serializers.CharField()
    executed = serializers.BooleanField()
    record = serializers.DictField()
    readback = RecordReadbackOutput(
        required=False, help_text="The performed write read back (executed only)."
    )
    provider_deletion = serializers.DictField(
        required=False,
        allow_null=True,
        help_text="The closed record's provider delete: state pending|confirmed|failed, "
        "attempts, bounded failure_kind, next_attempt_at, confirmed_at (executed only).",
    )


class ProviderDeletionOutput(DocumentOutput):
    record = serializers.DictField()
    provider_deletion = serializers.DictField(
        allow_null=True,
        help_text="state pending|confirmed|failed, attempts, bounded failure_kind, "
        "next_attempt_at, confirmed_at; null when nothing was queued.",
    )


class ActivationReceiptOutput(DocumentOutput):
    review_id = serializers.CharField()
    status = serializers.CharField()
    record_ref = serializers.CharField(allow_null=True)


class IngestInput(StrictInput):
    goal_id = FullRegexField(IDENT_RE, required=False, max_length=128)
    agent_id = FullRegexField(IDENT_RE, required=False, max_length=128)
    event = ContractDocumentField(
        help_text="scoped_feedback_reward_memory_event_v0 or "
        "issue_fix_reward_memory_candidate_adapter_v0 (ours), or LoopX's "
        "scoped_feedback_reward_memory_event_v0 / issue_fix_reward_memory_event_v0 layout."
    )
    adapter = serializers.CharField(required=False, max_length=64)
    observed_at = serializers.CharField(
        required=False, max_length=40, help_text="LoopX events: the source observation time."
    )
    execute = serializers.BooleanField(default=False)


class RecallRequestInput(StrictInput):
    """Documentation of ``reward_memory_recall_request_v0`` (+ ``execute``)."""

    schema_version = serializers.CharField(help_text=c.RECALL_REQUEST_SCHEMA)
    goal_id = serializers.CharField()
    agent_id = serializers.CharField()
    corpus_id = serializers.CharField()
    project = serializers.CharField()
    surface = serializers.CharField()
    mode = serializers.CharField(help_text=" | ".join(c.RECALL_MODES))
    queries = serializers.ListField(child=serializers.CharField(max_length=500), max_length=3)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=20)
    read_authority = serializers.DictField()
    freshness = serializers.DictField(help_text="{observed_at, corpus_revision}")
    conflicts = serializers.ListField(child=serializers.CharField())
    provider_binding_ref = serializers.CharField()
    actor_peer_id = serializers.CharField(required=False)
    request_id = serializers.CharField(required=False)
    execute = serializers.BooleanField(default=False)


class ApplicationInput(StrictInput):
    """Documentation of ``reward_memory_application_v0`` (+ ``execute``)."""

    schema_version = serializers.CharField(help_text=c.APPLICATION_SCHEMA)
    recall_id = serializers.CharField()
    decision = serializers.CharField(help_text=" | ".join(c.APPLICATION_DECISIONS))
    memory_refs = serializers.ListField(child=serializers.CharField())
    reasoning_summary = serializers.CharField()
    artifact_verification = serializers.DictField()
    execute = serializers.BooleanField(default=False)


class GuardOutput(serializers.Serializer):
    status = serializers.CharField(help_text="passed | guard_blocked")
    reasons = serializers.ListField(child=serializers.DictField())


class CorpusOutput(DocumentOutput):
    corpus_id = serializers.CharField()
    memory_class = serializers.CharField(help_text=" | ".join(c.MEMORY_CLASSES))
    owner = serializers.CharField()
    reviewer = serializers.CharField()
    authority_source = serializers.CharField()
    maintenance = serializers.DictField()
    project = serializers.CharField()
    surfaces = serializers.ListField(child=serializers.CharField())
    freshness = serializers.DictField()
    privacy = serializers.DictField()
    provider = serializers.DictField()
    allowlisted_agents = serializers.IntegerField()
    standing_policies = serializers.ListField(child=serializers.DictField())
    revision = serializers.IntegerField()
    active = serializers.BooleanField()
    health = serializers.DictField()


class CorpusListOutput(DocumentOutput):
    corpora = CorpusOutput(many=True)


class CorpusHealthOutput(DocumentOutput):
    corpus_id = serializers.CharField()
    revision = serializers.IntegerField()
    health = serializers.DictField(help_text="Five separate states: " + ", ".join(c.HEALTH_STATES))
    records = serializers.DictField()


class ReviewOutput(DocumentOutput):
    review_id = serializers.CharField()
    candidate_ref = serializers.CharField()
    requested_decision = serializers.CharField(help_text=" | ".join(c.DECISIONS))
    effective_decision = serializers.CharField(help_text=" | ".join(c.DECISIONS))
    guard = GuardOutput()
    duplicate_of = serializers.DictField(
        allow_null=True,
        help_text="The live record of the same corpus this candidate restates "
        "(record_ref, similarity, method, both texts side by side), or null.",
    )
    distinct = serializers.BooleanField()
    next_step = serializers.DictField(allow_null=True)
    recorded = serializers.BooleanField()


class IngestReceiptOutput(DocumentOutput):
    receipt_id = serializers.CharField()
    status = serializers.CharField(help_text=" | ".join(c.INGEST_STATUSES))
    event_ref = serializers.CharField()
    candidate_ref = serializers.CharField()
    record_ref = serializers.CharField(allow_null=True)
    observed_at = serializers.CharField(allow_null=True)
    memory_available_for_recall = serializers.BooleanField(
        help_text="On a replay: from the record's present lifecycle (readable-records)."
    )
    record_state = serializers.CharField(
        allow_null=True,
        required=False,
        help_text="The record's state as a fresh read sees it: active, or why it is not "
        "(retired, revoked, superseded, expired, refuted, quarantined, stale, "
        "authority_not_live, not_readable, missing).",
    )
    replayed = serializers.BooleanField(
        required=False, help_text="The stored receipt of an already activated event, re-read."
    )
    readback = serializers.DictField(allow_null=True)
    guard = GuardOutput()


class RecallResultOutput(DocumentOutput):
    status = serializers.CharField(help_text=" | ".join(c.RECALL_STATUSES))
    recall_id = serializers.CharField()
    items = serializers.ListField(child=serializers.DictField())
    provider_calls = serializers.IntegerField()
    guard = GuardOutput()
    public_packet = serializers.DictField()
    replay_dropped = serializers.DictField(
        required=False,
        help_text="Replays only: {count, by_reason} of stored results a fresh read no "
        "longer returns.",
    )


class ApplicationReceiptOutput(DocumentOutput):
    application_receipt_id = serializers.CharField()
    recall_id = serializers.CharField()
    decision = serializers.CharField(help_text=" | ".join(c.APPLICATION_DECISIONS))
    status = serializers.CharField(help_text=" | ".join(c.APPLICATION_STATUSES))
    reasons = serializers.ListField(child=serializers.CharField())
    memory_ref_digests = serializers.ListField(child=serializers.CharField())
    recorded = serializers.BooleanField()


class ExperimentStatusOutput(DocumentOutput):
    status = serializers.CharField()
    automation = serializers.DictField()


class BoundaryHookInput(StrictInput):
    goal_id = FullRegexField(IDENT_RE, max_length=128)
    agent_id = FullRegexField(IDENT_RE, max_length=128)
    queries = serializers.ListField(
        child=serializers.CharField(max_length=500), required=False, max_length=3, default=list
    )
    event = serializers.DictField(
        required=False, help_text="A compact event for automatic ingest (the ingest formats)."
    )
    execute = serializers.BooleanField(default=False)


class BoundaryHookOutput(serializers.Serializer):
    schema_version = serializers.CharField(help_text="reward_memory_runtime_hook_v0")
    status = serializers.CharField()
    boundary = serializers.CharField()
    context = serializers.DictField(help_text="Private bounded guidance for the caller.")
    application_receipt = serializers.DictField()
    provider_call_count = serializers.IntegerField()
