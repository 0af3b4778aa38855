"""One APIView per Reward Memory operation. ``RewardMemoryApi`` parses the body, answers
one document and publishes the OpenAPI operation; each view states only what differs: its
operation, input and output shapes, and ``act`` (check scope, call one service).

Hosts see and use only corpora that allowlist their Goal (and Agent); operators see all.
"""

from typing import Any

from drf_spectacular.utils import extend_schema

from loopx_site.core.api.base import DocumentApi
from reward_memory import principals, selectors, services
from reward_memory.api import serializers as s
from reward_memory.documents import corpora as corpus_documents
from reward_memory.documents import registry
from reward_memory.errors import AREA, invalid

# the OpenAPI summary of each operation (``operation_id`` ``reward_memory_<name>``)
SUMMARIES = {
    "corpora_list": "Registered corpora visible to the caller, with their five health states",
    "corpus_health": "The corpus's five separate health states (read-only)",
    "candidate_review": "Review a candidate (decision record; recorded only with execute)",
    "review_apply": "Perform a recorded review's next step as the corpus owner (authenticated)",
    "record_revoke": "Revoke an active record (corpus authority source or owner, authenticated)",
    "record_supersede": "Supersede an active record by another of its corpus and surface (owner)",
    "ingest": "Ingest one compact event (planned unless execute; fail-open statuses)",
    "recall": "Guarded recall: private result (summaries) and public packet",
    "application_receipt": "Application receipt for one recall (recorded only with execute)",
    "experiment_status": (
        "The Agent's Reward Memory experiment status (unavailable until configured)"
    ),
    "boundary_hook": (
        "Automatic recall/ingest at a declared module boundary (planned unless execute)"
    ),
}


def _free_form(request) -> dict[str, Any]:
    """A free-form document body (recall, application receipt) and its ``execute``."""
    if not isinstance(request.data, dict):
        raise invalid(None, "the body must be a JSON object")
    body = dict(request.data)
    execute = body.pop("execute", False)
    if not isinstance(execute, bool):
        raise invalid("execute", "execute must be true or false")
    return {"body": body, "execute": execute}


# (no class docstrings here: drf-spectacular would publish them as descriptions)
class RewardMemoryApi(DocumentApi):
    # One operation: ``method`` answers ``act(request, values, **path)`` (the parsed body:
    # ``input_serializer``'s, or ``{"body", "execute"}`` when ``free_form``; ``{}`` for a
    # GET) as one document, 201 when ``created_when_recorded`` and it recorded something.
    error_area = AREA
    operation = ""  # the OpenAPI name; SUMMARIES holds its summary
    method = "post"
    input_serializer: type | None = None
    output_serializer: type | None = None
    free_form = False
    created_when_recorded = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if not cls.operation:
            return

        def answer(self, request, **path):
            document = self.act(request, self.values(request), **path)
            recorded = self.created_when_recorded and bool(document.get("recorded"))
            return self.document(document, created=recorded)

        schema = extend_schema(
            operation_id=f"reward_memory_{cls.operation}",
            request=cls.input_serializer,
            responses=cls.output_serializer,
            tags=["reward-memory"],
            summary=SUMMARIES[cls.operation],
        )
        setattr(cls, cls.method, schema(answer))

    def values(self, request) -> dict[str, Any]:
        if self.free_form:
            return _free_form(request)
        if self.method == "get":
            return {}
        return self.parse(self.input_serializer, request.data)

    def act(self, request, values: dict[str, Any], **path) -> dict[str, Any]:
        raise NotImplementedError


class CorpusListApi(RewardMemoryApi):
    operation, method, output_serializer = "corpora_list", "get", s.CorpusListOutput

    def act(self, request, values):
        viewer = self.caller(request).viewer
        scope = {} if viewer is None else {"goal_id": viewer[0], "agent_id": viewer[1]}
        return corpus_documents.corpus_list(selectors.list_corpora(**scope))


class CorpusHealthApi(RewardMemoryApi):
    operation, method, output_serializer = "corpus_health", "get", s.CorpusHealthOutput

    def act(self, request, values, corpus_id: str):
        # a corpus the caller may not see is the same corpus_not_found a missing one gives
        corpus = selectors.get_corpus(corpus_id, viewer=self.caller(request).viewer)
        return registry.corpus_health(corpus)


class CandidateReviewApi(RewardMemoryApi):
    operation, throttle_scope = "candidate_review", "review"
    input_serializer, output_serializer = s.CandidateReviewInput, s.ReviewOutput
    created_when_recorded = True

    def act(self, request, values):
        values.pop("reviewer", None)  # a claim; the reviewer is the authenticated principal
        principal = principals.from_request(request)
        viewer = self.caller(request).viewer
        return services.review_candidate(**values, principal=principal, viewer=viewer)


class ReviewApplyApi(RewardMemoryApi):
    operation, throttle_scope = "review_apply", "review"
    input_serializer, output_serializer = s.ExecuteInput, s.ActivationReceiptOutput

    def act(self, request, values, review_id: str):
        services.get_review(review_id, viewer=self.caller(request).viewer)  # unseen = absent
        return services.apply_review(
            review_id=review_id, principal=principals.from_request(request), **values
        )


class _RecordOperationApi(RewardMemoryApi):
    # one lifecycle operation on a record the caller may see (services.record_operation)
    throttle_scope = "review"  # revoke, supersede
    output_serializer = s.RecordOperationOutput
    record_operation = ""

    def act(self, request, values, record_ref: str):
        return services.record_operation(
            self.record_operation,
            record_ref=record_ref,
            principal=principals.from_request(request),
            execute=values.pop("execute"),
            viewer=self.caller(request).viewer,  # unseen = absent
            **values,
        )


class RecordRevokeApi(_RecordOperationApi):
    operation, record_operation, input_serializer = "record_revoke", "revoke", s.RevokeInput


class RecordSupersedeApi(_RecordOperationApi):
    operation, record_operation = "record_supersede", "supersede"
    input_serializer = s.SupersedeInput


class IngestApi(RewardMemoryApi):
    operation = "ingest"
    throttle_scope = "ingest"  # per token: REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
    input_serializer, output_serializer = s.IngestInput, s.IngestReceiptOutput

    def act(self, request, values):
        caller = self.caller(request)
        viewer = caller.viewer
        if values.get("goal_id") and not values.get("agent_id") and not values.get("execute"):
            caller.require(values["goal_id"], area=AREA)  # a Goal-level evaluation
        elif values.get("goal_id"):
            acting = caller.acting_for(values["goal_id"], values.get("agent_id"), area=AREA)
            values["goal_id"], values["agent_id"] = acting.goal_id, acting.agent_id
            viewer = acting.viewer
        document = {
            key: values.pop(key) for key in ("adapter", "event", "observed_at") if key in values
        }
        return services.submit_event(
            **values,
            document=document,
            viewer=viewer,
            principal=principals.from_caller(caller),  # the role bindings' subject
        )


class RecallApi(RewardMemoryApi):
    operation, throttle_scope, free_form = "recall", "reward_recall", True
    input_serializer, output_serializer = s.RecallRequestInput, s.RecallResultOutput

    def act(self, request, values):
        body = values["body"]
        loopx = services.is_loopx_packet(body)
        named = (body.pop("goal_id", None), body.pop("agent_id", None)) if loopx else None
        if named is None:
            named = (body.get("goal_id"), body.get("agent_id"))
        # the (Goal, Agent) the recall acts for, and the scope it reads as
        acting = self.caller(request).acting_for(*named, area=AREA)
        if not loopx:
            body["goal_id"], body["agent_id"] = acting.goal_id, acting.agent_id
        return services.recall(
            request=body,
            execute=values["execute"],
            goal_id=acting.goal_id,
            agent_id=acting.agent_id,
            viewer=acting.viewer,
        )


class ApplicationReceiptApi(RewardMemoryApi):
    operation, throttle_scope, free_form = "application_receipt", "write", True
    input_serializer, output_serializer = s.ApplicationInput, s.ApplicationReceiptOutput
    created_when_recorded = True

    def act(self, request, values):
        recall_id = values["body"].get("recall_id")
        if not isinstance(recall_id, str):
            raise invalid("recall_id", "recall_id is required")
        selectors.get_recall(recall_id, viewer=self.caller(request).viewer)  # unseen = absent
        return services.record_application(document=values["body"], execute=values["execute"])


class ExperimentStatusApi(RewardMemoryApi):
    operation, method, output_serializer = "experiment_status", "get", s.ExperimentStatusOutput

    def act(self, request, values, goal_id: str, agent_id: str):
        return services.experiment_status(goal_id=goal_id, agent_id=agent_id)


class BoundaryHookApi(RewardMemoryApi):
    operation, throttle_scope = "boundary_hook", "reward_recall"
    input_serializer, output_serializer = s.BoundaryHookInput, s.BoundaryHookOutput

    def act(self, request, values, boundary: str):
        acting = self.caller(request).acting_for(values["goal_id"], values["agent_id"], area=AREA)
        values["goal_id"], values["agent_id"] = acting.goal_id, acting.agent_id
        return services.run_boundary_hook(boundary=boundary, **values, viewer=acting.viewer)
