"""One APIView per Reward Memory operation; each parses, checks scope, calls one service.

Hosts see and use only corpora that allowlist their Goal (and Agent); operators see all.
"""

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from loopx_site.core import access
from reward_memory import principals, selectors, services
from reward_memory.api import serializers as s
from reward_memory.documents import corpora as corpus_documents
from reward_memory.errors import AREA, invalid

TAG = ["reward-memory"]


class RewardMemoryApi(APIView):
    error_area = AREA


def _caller(request) -> access.Caller:
    """Who is calling (``loopx_site.core.access``: the one resolver)."""
    return access.from_request(request, area=AREA)


def _viewer(request) -> selectors.Viewer:
    """The caller's verified read scope: ``None`` for an operator, else the token's."""
    return _caller(request).viewer


def _visible_corpus(request, corpus_id: str):
    """The corpus, or the same ``corpus_not_found`` a missing one gives."""
    return selectors.get_corpus(corpus_id, viewer=_viewer(request))


def _body(request) -> dict:
    if not isinstance(request.data, dict):
        raise invalid(None, "the body must be a JSON object")
    return dict(request.data)


def _execute_flag(body: dict) -> bool:
    value = body.pop("execute", False)
    if not isinstance(value, bool):
        raise invalid("execute", "execute must be true or false")
    return value


class CorpusListApi(RewardMemoryApi):
    @extend_schema(
        operation_id="reward_memory_corpora_list",
        responses=s.CorpusListOutput,
        tags=TAG,
        summary="Registered corpora visible to the caller, with their five health states",
    )
    def get(self, request):
        viewer = _viewer(request)
        corpora = (
            selectors.list_corpora()
            if viewer is None
            else selectors.list_corpora(goal_id=viewer[0], agent_id=viewer[1])
        )
        return Response(corpus_documents.corpus_list(corpora))


class CorpusHealthApi(RewardMemoryApi):
    @extend_schema(
        operation_id="reward_memory_corpus_health",
        responses=s.CorpusHealthOutput,
        tags=TAG,
        summary="The corpus's five separate health states (read-only)",
    )
    def get(self, request, corpus_id: str):
        return Response(selectors.corpus_health(_visible_corpus(request, corpus_id)))


class CandidateReviewApi(RewardMemoryApi):
    throttle_scope = "review"

    @extend_schema(
        operation_id="reward_memory_candidate_review",
        request=s.CandidateReviewInput,
        responses=s.ReviewOutput,
        tags=TAG,
        summary="Review a candidate (decision record; recorded only with execute)",
    )
    def post(self, request):
        data = s.CandidateReviewInput(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        values.pop("reviewer", None)  # a claim; the reviewer is the authenticated principal
        result = services.review_candidate(
            **values, principal=principals.from_request(request), viewer=_viewer(request)
        )
        return Response(result, status=201 if result.get("recorded") else 200)


class ReviewApplyApi(RewardMemoryApi):
    throttle_scope = "review"

    @extend_schema(
        operation_id="reward_memory_review_apply",
        request=s.ExecuteInput,
        responses=s.ActivationReceiptOutput,
        tags=TAG,
        summary="Perform a recorded review's next step as the corpus owner (authenticated)",
    )
    def post(self, request, review_id: str):
        data = s.ExecuteInput(data=request.data)
        data.is_valid(raise_exception=True)
        services.get_review(review_id, viewer=_viewer(request))  # unseen = absent
        return Response(
            services.apply_review(
                review_id=review_id,
                principal=principals.from_request(request),
                execute=data.validated_data["execute"],
            )
        )


class _RecordOperationApi(RewardMemoryApi):
    """One lifecycle operation on a record the caller may see (``services.record_operation``)."""

    throttle_scope = "review"  # revoke, supersede
    operation = ""
    input_serializer: type = s.ExecuteInput

    def post(self, request, record_ref: str):
        data = self.input_serializer(data=request.data)
        data.is_valid(raise_exception=True)
        arguments = dict(data.validated_data)
        return Response(
            services.record_operation(
                self.operation,
                record_ref=record_ref,
                principal=principals.from_request(request),
                execute=arguments.pop("execute"),
                viewer=_viewer(request),  # unseen = absent
                **arguments,
            )
        )


class RecordRevokeApi(_RecordOperationApi):
    operation = "revoke"
    input_serializer = s.RevokeInput

    @extend_schema(
        operation_id="reward_memory_record_revoke",
        request=s.RevokeInput,
        responses=s.RecordOperationOutput,
        tags=TAG,
        summary="Revoke an active record (corpus authority source or owner, authenticated)",
    )
    def post(self, request, record_ref: str):
        return super().post(request, record_ref)


class RecordSupersedeApi(_RecordOperationApi):
    operation = "supersede"
    input_serializer = s.SupersedeInput

    @extend_schema(
        operation_id="reward_memory_record_supersede",
        request=s.SupersedeInput,
        responses=s.RecordOperationOutput,
        tags=TAG,
        summary="Supersede an active record by another of its corpus and surface (owner)",
    )
    def post(self, request, record_ref: str):
        return super().post(request, record_ref)


class IngestApi(RewardMemoryApi):
    throttle_scope = "ingest"  # per token: REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]

    @extend_schema(
        operation_id="reward_memory_ingest",
        request=s.IngestInput,
        responses=s.IngestReceiptOutput,
        tags=TAG,
        summary="Ingest one compact event (planned unless execute; fail-open statuses)",
    )
    def post(self, request):
        data = s.IngestInput(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        caller = _caller(request)
        viewer = caller.viewer
        if values.get("goal_id") and not values.get("agent_id") and not values.get("execute"):
            caller.require(values["goal_id"], area=AREA)  # a Goal-level evaluation
        elif values.get("goal_id"):
            acting = caller.acting_for(values["goal_id"], values.get("agent_id"), area=AREA)
            values["goal_id"], values["agent_id"], viewer = (
                acting.goal_id,
                acting.agent_id,
                acting.viewer,
            )
        document = {
            key: values.pop(key) for key in ("adapter", "event", "observed_at") if key in values
        }
        return Response(
            services.submit_event(
                **values,
                document=document,
                viewer=viewer,
                principal=principals.from_caller(caller),  # the role bindings' subject
            )
        )


class RecallApi(RewardMemoryApi):
    throttle_scope = "reward_recall"

    @extend_schema(
        operation_id="reward_memory_recall",
        request=s.RecallRequestInput,
        responses=s.RecallResultOutput,
        tags=TAG,
        summary="Guarded recall: private result (summaries) and public packet",
    )
    def post(self, request):
        body = _body(request)
        execute = _execute_flag(body)
        loopx = services.is_loopx_packet(body)
        named = (body.pop("goal_id", None), body.pop("agent_id", None)) if loopx else None
        if named is None:
            named = (body.get("goal_id"), body.get("agent_id"))
        # the (Goal, Agent) the recall acts for, and the scope it reads as
        acting = _caller(request).acting_for(*named, area=AREA)
        if not loopx:
            body["goal_id"], body["agent_id"] = acting.goal_id, acting.agent_id
        return Response(
            services.recall(
                request=body,
                execute=execute,
                goal_id=acting.goal_id,
                agent_id=acting.agent_id,
                viewer=acting.viewer,
            )
        )


class ApplicationReceiptApi(RewardMemoryApi):
    throttle_scope = "write"

    @extend_schema(
        operation_id="reward_memory_application_receipt",
        request=s.ApplicationInput,
        responses=s.ApplicationReceiptOutput,
        tags=TAG,
        summary="Application receipt for one recall (recorded only with execute)",
    )
    def post(self, request):
        body = _body(request)
        execute = _execute_flag(body)
        recall_id = body.get("recall_id")
        if not isinstance(recall_id, str):
            raise invalid("recall_id", "recall_id is required")
        selectors.get_recall(recall_id, viewer=_viewer(request))  # unseen = absent
        receipt = services.record_application(document=body, execute=execute)
        return Response(receipt, status=201 if receipt.get("recorded") else 200)


class ExperimentStatusApi(RewardMemoryApi):
    @extend_schema(
        operation_id="reward_memory_experiment_status",
        responses=s.ExperimentStatusOutput,
        tags=TAG,
        summary="The Agent's Reward Memory experiment status (unavailable until configured)",
    )
    def get(self, request, goal_id: str, agent_id: str):
        return Response(services.experiment_status(goal_id=goal_id, agent_id=agent_id))


class BoundaryHookApi(RewardMemoryApi):
    throttle_scope = "reward_recall"

    @extend_schema(
        operation_id="reward_memory_boundary_hook",
        request=s.BoundaryHookInput,
        responses=s.BoundaryHookOutput,
        tags=TAG,
        summary="Automatic recall/ingest at a declared module boundary (planned unless execute)",
    )
    def post(self, request, boundary: str):
        data = s.BoundaryHookInput(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        acting = _caller(request).acting_for(values["goal_id"], values["agent_id"], area=AREA)
        values["goal_id"], values["agent_id"] = acting.goal_id, acting.agent_id
        return Response(
            services.run_boundary_hook(boundary=boundary, **values, viewer=acting.viewer)
        )
