"""One explicit view per Reward Memory operation on ``DocumentApi`` (like
``hooks/api/views.py``): parse the input, ask the caller resolver, call one service,
answer its document — 201 when the document ``recorded`` something, else 200.

Hosts see and use only corpora that allowlist their Goal (and Agent); operators see all.
"""

from typing import Any

from drf_spectacular.utils import extend_schema

from loopx_site.core.api.base import DocumentApi
from reward_memory import principals, selectors, services
from reward_memory.api import serializers as s
from reward_memory.documents import boundary_hooks as hook_documents
from reward_memory.documents import corpora as corpus_documents
from reward_memory.documents import experiments as experiment_documents
from reward_memory.documents import ingest as ingest_documents
from reward_memory.documents import recall as recall_documents
from reward_memory.documents import records as record_documents
from reward_memory.documents import registry
from reward_memory.documents import review as review_documents
from reward_memory.errors import AREA, invalid


def _schema(name: str, summary: str, request=None, response=None):
    """The OpenAPI operation ``reward_memory_<name>`` of one view method."""
    return extend_schema(
        operation_id=f"reward_memory_{name}",
        request=request,
        responses=response,
        tags=["reward-memory"],
        summary=summary,
    )


def _answer(document: dict[str, Any]):
    """201 when the document ``recorded`` something, else 200."""
    return DocumentApi.document(document, created=bool(document.get("recorded")))


def _contract_body(request) -> dict[str, Any]:
    """A contract document passed through whole to the service's guards (the input
    serializer only documents it): ``{"body", "execute"}``."""
    if not isinstance(request.data, dict):
        raise invalid(None, "the body must be a JSON object")
    body = dict(request.data)
    execute = body.pop("execute", False)
    if not isinstance(execute, bool):
        raise invalid("execute", "execute must be true or false")
    return {"body": body, "execute": execute}


# (no class docstrings here: drf-spectacular would publish them as descriptions)
class CorpusListApi(DocumentApi):
    error_area = AREA

    @_schema(
        "corpora_list",
        "Registered corpora visible to the caller, with their five health states",
        response=s.CorpusListOutput,
    )
    def get(self, request):
        viewer = self.caller(request).viewer
        scope = {} if viewer is None else {"goal_id": viewer[0], "agent_id": viewer[1]}
        corpora = services.corpora_health(selectors.list_corpora(**scope))
        return _answer(corpus_documents.corpus_list(corpora))


class CorpusHealthApi(DocumentApi):
    error_area = AREA

    @_schema(
        "corpus_health",
        "The corpus's five separate health states (read-only)",
        response=s.CorpusHealthOutput,
    )
    def get(self, request, corpus_id: str):
        # a corpus the caller may not see is the same corpus_not_found a missing one gives
        corpus = selectors.get_corpus(corpus_id, viewer=self.caller(request).viewer)
        return _answer(registry.corpus_health(services.health_facts(corpus)))


class CandidateReviewApi(DocumentApi):
    error_area = AREA
    throttle_scope = "review"

    @_schema(
        "candidate_review",
        "Review a candidate (decision record; recorded only with execute)",
        s.CandidateReviewInput,
        s.ReviewOutput,
    )
    def post(self, request):
        values = self.parse(s.CandidateReviewInput, request.data)
        values.pop("reviewer", None)  # a claim; the reviewer is the authenticated principal
        principal = principals.from_request(request)
        viewer = self.caller(request).viewer
        result = services.review_candidate(**values, principal=principal, viewer=viewer)
        return _answer(review_documents.decision(result))


class ReviewApplyApi(DocumentApi):
    error_area = AREA
    throttle_scope = "review"

    @_schema(
        "review_apply",
        "Perform a recorded review's next step as the corpus owner (authenticated)",
        s.ExecuteInput,
        s.ActivationReceiptOutput,
    )
    def post(self, request, review_id: str):
        values = self.parse(s.ExecuteInput, request.data)
        services.get_review(review_id, viewer=self.caller(request).viewer)  # unseen = absent
        step = services.apply_review(
            review_id=review_id, principal=principals.from_request(request), **values
        )
        return _answer(review_documents.review_step(step))


def _record_operation(view: DocumentApi, request, operation: str, values, record_ref: str):
    """One lifecycle operation on a record the caller may see (``record_operation``)."""
    result = services.record_operation(
        operation,
        record_ref=record_ref,
        principal=principals.from_request(request),
        execute=values.pop("execute"),
        viewer=view.caller(request).viewer,  # unseen = absent
        **values,
    )
    return _answer(record_documents.record_operation(result))


class RecordRevokeApi(DocumentApi):
    error_area = AREA
    throttle_scope = "review"

    @_schema(
        "record_revoke",
        "Revoke an active record (corpus authority source or owner, authenticated)",
        s.RevokeInput,
        s.RecordOperationOutput,
    )
    def post(self, request, record_ref: str):
        values = self.parse(s.RevokeInput, request.data)
        return _record_operation(self, request, "revoke", values, record_ref)


class RecordProviderDeletionApi(DocumentApi):
    error_area = AREA

    @_schema(
        "record_provider_deletion",
        "A record's provider delete: pending, confirmed (the provider's search no longer "
        "returns it) or failed, with a bounded reason",
        response=s.ProviderDeletionOutput,
    )
    def get(self, request, record_ref: str):
        record = selectors.get_record(record_ref, viewer=self.caller(request).viewer)
        deletion = selectors.provider_deletion_state(record)
        return _answer(record_documents.provider_deletion(record, deletion))


class RecordSupersedeApi(DocumentApi):
    error_area = AREA
    throttle_scope = "review"

    @_schema(
        "record_supersede",
        "Supersede an active record by another of its corpus and surface (owner)",
        s.SupersedeInput,
        s.RecordOperationOutput,
    )
    def post(self, request, record_ref: str):
        values = self.parse(s.SupersedeInput, request.data)
        return _record_operation(self, request, "supersede", values, record_ref)


class IngestApi(DocumentApi):
    error_area = AREA
    throttle_scope = "ingest"  # per token

    @_schema(
        "ingest",
        "Ingest one compact event (planned unless execute; fail-open statuses)",
        s.IngestInput,
        s.IngestReceiptOutput,
    )
    def post(self, request):
        values = self.parse(s.IngestInput, request.data)
        caller = self.caller(request)
        # a preview naming the Goal alone is a Goal-level evaluation
        values["goal_id"], values["agent_id"], viewer = caller.event_scope(
            values.get("goal_id"),
            values.get("agent_id"),
            goal_level=not values["execute"],
            area=AREA,
        )
        document = {
            key: values.pop(key) for key in ("adapter", "event", "observed_at") if key in values
        }
        ingested = services.submit_event(
            **values,
            document=document,
            viewer=viewer,
            principal=caller,  # the role bindings' subject
        )
        return _answer(ingest_documents.ingest(ingested))


class RecallApi(DocumentApi):
    error_area = AREA
    throttle_scope = "reward_recall"

    @_schema(
        "recall",
        "Guarded recall: private result (summaries) and public packet",
        s.RecallRequestInput,
        s.RecallResultOutput,
    )
    def post(self, request):
        values = _contract_body(request)
        body = values["body"]
        loopx = services.is_loopx_packet(body)
        named = (body.pop("goal_id", None), body.pop("agent_id", None)) if loopx else None
        if named is None:
            named = (body.get("goal_id"), body.get("agent_id"))
        # the (Goal, Agent) the recall acts for, and the scope it reads as
        acting = self.caller(request).acting_for(*named, area=AREA)
        if not loopx:
            body["goal_id"], body["agent_id"] = acting.goal_id, acting.agent_id
        recalled = services.recall(
            request=body,
            execute=values["execute"],
            goal_id=acting.goal_id,
            agent_id=acting.agent_id,
            viewer=acting.viewer,
        )
        return _answer(recall_documents.recall_result(recalled))


class ApplicationReceiptApi(DocumentApi):
    error_area = AREA
    throttle_scope = "write"

    @_schema(
        "application_receipt",
        "Application receipt for one recall (recorded only with execute)",
        s.ApplicationInput,
        s.ApplicationReceiptOutput,
    )
    def post(self, request):
        values = _contract_body(request)
        recall_id = values["body"].get("recall_id")
        if not isinstance(recall_id, str):
            raise invalid("recall_id", "recall_id is required")
        services.require_receipt_author(self.caller(request), recall_id)  # unseen = absent
        applied = services.record_application(document=values["body"], execute=values["execute"])
        return _answer(recall_documents.application(applied))


class ExperimentStatusApi(DocumentApi):
    error_area = AREA

    @_schema(
        "experiment_status",
        "The Agent's Reward Memory experiment status (unavailable until configured)",
        response=s.ExperimentStatusOutput,
    )
    def get(self, request, goal_id: str, agent_id: str):
        route = services.experiment_status(goal_id=goal_id, agent_id=agent_id)
        return _answer(experiment_documents.status(route))


class BoundaryHookApi(DocumentApi):
    error_area = AREA
    throttle_scope = "reward_recall"

    @_schema(
        "boundary_hook",
        "Automatic recall/ingest at a declared module boundary (planned unless execute)",
        s.BoundaryHookInput,
        s.BoundaryHookOutput,
    )
    def post(self, request, boundary: str):
        values = self.parse(s.BoundaryHookInput, request.data)
        acting = self.caller(request).acting_for(values["goal_id"], values["agent_id"], area=AREA)
        values["goal_id"], values["agent_id"] = acting.goal_id, acting.agent_id
        run = services.run_boundary_hook(boundary=boundary, **values, viewer=acting.viewer)
        return _answer(hook_documents.boundary_hook(run))
