"""One APIView per Reward Memory operation. ``RewardMemoryApi`` parses the body, answers
one document and publishes the OpenAPI operation; each view states only what differs: its
``Operation`` (name, input and output shapes, method, throttle) and ``act`` (check scope,
call one service).

Hosts see and use only corpora that allowlist their Goal (and Agent); operators see all.
"""

from dataclasses import dataclass
from typing import Any

from drf_spectacular.utils import extend_schema

from loopx_site.core.api.base import DocumentApi
from reward_memory import principals, selectors, services
from reward_memory.api import serializers as s
from reward_memory.documents import corpora as corpus_documents
from reward_memory.documents import records as record_documents
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
    "record_provider_deletion": (
        "A record's provider delete: pending, confirmed (the provider's search no longer "
        "returns it) or failed, with a bounded reason"
    ),
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


@dataclass(frozen=True)
class Operation:
    """One published operation: ``reward_memory_<name>`` (summary in ``SUMMARIES``), the
    body's ``input`` shape, its ``output`` document, its HTTP ``method`` and throttle
    scope."""

    name: str
    input: type | None = None
    output: type | None = None
    method: str = "post"
    throttle: str | None = None


# (no class docstrings here: drf-spectacular would publish them as descriptions)
class RewardMemoryApi(DocumentApi):
    # A view declares its ``operation`` and answers ``act(request, values, **path)``
    # (``values``: the parsed body, ``{}`` for a GET) with one service's document: 201
    # when the document ``recorded`` something, else 200.
    error_area = AREA
    operation: Operation | None = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        op = cls.operation
        if op is None:
            return
        if op.throttle:
            cls.throttle_scope = op.throttle  # REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]

        def answer(self, request, **path):
            document = self.act(request, self.values(request), **path)
            return self.document(document, created=bool(document.get("recorded")))

        schema = extend_schema(
            operation_id=f"reward_memory_{op.name}",
            request=op.input,
            responses=op.output,
            tags=["reward-memory"],
            summary=SUMMARIES[op.name],
        )
        setattr(cls, op.method, schema(answer))

    def values(self, request) -> dict[str, Any]:
        if self.operation.method == "get":
            return {}
        return self.parse(self.operation.input, request.data)

    def act(self, request, values: dict[str, Any], **path) -> dict[str, Any]:
        raise NotImplementedError


class _ContractDocumentApi(RewardMemoryApi):
    # the body is a contract document, passed through whole to the service's guards
    # (``input`` only documents it): ``values`` is ``{"body", "execute"}``
    def values(self, request) -> dict[str, Any]:
        if not isinstance(request.data, dict):
            raise invalid(None, "the body must be a JSON object")
        body = dict(request.data)
        execute = body.pop("execute", False)
        if not isinstance(execute, bool):
            raise invalid("execute", "execute must be true or false")
        return {"body": body, "execute": execute}


class CorpusListApi(RewardMemoryApi):
    operation = Operation("corpora_list", output=s.CorpusListOutput, method="get")

    def act(self, request, values):
        viewer = self.caller(request).viewer
        scope = {} if viewer is None else {"goal_id": viewer[0], "agent_id": viewer[1]}
        return corpus_documents.corpus_list(selectors.list_corpora(**scope))


class CorpusHealthApi(RewardMemoryApi):
    operation = Operation("corpus_health", output=s.CorpusHealthOutput, method="get")

    def act(self, request, values, corpus_id: str):
        # a corpus the caller may not see is the same corpus_not_found a missing one gives
        corpus = selectors.get_corpus(corpus_id, viewer=self.caller(request).viewer)
        return registry.corpus_health(corpus)


class CandidateReviewApi(RewardMemoryApi):
    operation = Operation(
        "candidate_review", s.CandidateReviewInput, s.ReviewOutput, throttle="review"
    )

    def act(self, request, values):
        values.pop("reviewer", None)  # a claim; the reviewer is the authenticated principal
        principal = principals.from_request(request)
        viewer = self.caller(request).viewer
        return services.review_candidate(**values, principal=principal, viewer=viewer)


class ReviewApplyApi(RewardMemoryApi):
    operation = Operation(
        "review_apply", s.ExecuteInput, s.ActivationReceiptOutput, throttle="review"
    )

    def act(self, request, values, review_id: str):
        services.get_review(review_id, viewer=self.caller(request).viewer)  # unseen = absent
        return services.apply_review(
            review_id=review_id, principal=principals.from_request(request), **values
        )


class _RecordOperationApi(RewardMemoryApi):
    # one lifecycle operation on a record the caller may see (services.record_operation)
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
    operation = Operation(
        "record_revoke", s.RevokeInput, s.RecordOperationOutput, throttle="review"
    )
    record_operation = "revoke"


class RecordSupersedeApi(_RecordOperationApi):
    operation = Operation(
        "record_supersede", s.SupersedeInput, s.RecordOperationOutput, throttle="review"
    )
    record_operation = "supersede"


class RecordProviderDeletionApi(RewardMemoryApi):
    operation = Operation("record_provider_deletion", output=s.ProviderDeletionOutput, method="get")

    def act(self, request, values, record_ref: str):
        record = selectors.get_record(record_ref, viewer=self.caller(request).viewer)
        return record_documents.provider_deletion(record)


class IngestApi(RewardMemoryApi):
    # throttled per token
    operation = Operation("ingest", s.IngestInput, s.IngestReceiptOutput, throttle="ingest")

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


class RecallApi(_ContractDocumentApi):
    operation = Operation(
        "recall", s.RecallRequestInput, s.RecallResultOutput, throttle="reward_recall"
    )

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


class ApplicationReceiptApi(_ContractDocumentApi):
    operation = Operation(
        "application_receipt", s.ApplicationInput, s.ApplicationReceiptOutput, throttle="write"
    )

    def act(self, request, values):
        recall_id = values["body"].get("recall_id")
        if not isinstance(recall_id, str):
            raise invalid("recall_id", "recall_id is required")
        caller = self.caller(request)
        recall = selectors.get_recall(recall_id, viewer=caller.viewer)  # unseen = absent
        # The receipt is the recalling Agent's own act (dogfood batches count it as that
        # Agent's): decided from the verified token alone, so a Goal-wide token may not
        # post one for an Agent of its Goal.
        caller.acting_for(recall.goal.goal_id, recall.agent.agent_id, area=AREA).require_own_agent(
            "An application receipt", field="recall_id", area=AREA
        )
        return services.record_application(document=values["body"], execute=values["execute"])


class ExperimentStatusApi(RewardMemoryApi):
    operation = Operation("experiment_status", output=s.ExperimentStatusOutput, method="get")

    def act(self, request, values, goal_id: str, agent_id: str):
        return services.experiment_status(goal_id=goal_id, agent_id=agent_id)


class BoundaryHookApi(RewardMemoryApi):
    operation = Operation(
        "boundary_hook", s.BoundaryHookInput, s.BoundaryHookOutput, throttle="reward_recall"
    )

    def act(self, request, values, boundary: str):
        acting = self.caller(request).acting_for(values["goal_id"], values["agent_id"], area=AREA)
        values["goal_id"], values["agent_id"] = acting.goal_id, acting.agent_id
        return services.run_boundary_hook(boundary=boundary, **values, viewer=acting.viewer)
