"""One APIView per Reward Memory operation; each parses, checks scope, calls one service.

Hosts see and use only corpora that allowlist their Goal (and Agent); operators see all.
"""

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from loopx_site.core.api.auth import HostPrincipal
from loopx_site.core.api.permissions import is_operator, require_scope
from reward_memory import selectors, services
from reward_memory.api import serializers as s
from reward_memory.errors import AREA, RewardMemoryError, invalid

TAG = ["reward-memory"]


class RewardMemoryApi(APIView):
    error_area = AREA


def _visible_corpus(request, corpus_id: str):
    corpus = selectors.get_corpus(corpus_id)
    if is_operator(request):
        return corpus
    user = request.user
    if corpus in selectors.list_corpora(goal_id=user.goal_id, agent_id=user.agent_id):
        return corpus
    raise RewardMemoryError("corpus_not_found", "No such corpus.", field="corpus_id")


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
        if is_operator(request):
            corpora = selectors.list_corpora()
        else:
            corpora = selectors.list_corpora(
                goal_id=request.user.goal_id, agent_id=request.user.agent_id
            )
        return Response(
            {
                "schema_version": "reward_memory_corpus_list_v0",
                "corpora": [
                    {**selectors.corpus_payload(c), "health": selectors.corpus_health(c)["health"]}
                    for c in corpora
                ],
            }
        )


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
        if values.get("execute") and not is_operator(request):
            _visible_corpus(request, values.get("corpus_id") or "")
        result = services.review_candidate(**values)
        return Response(result, status=201 if result.get("recorded") else 200)


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
        if values.get("goal_id"):
            require_scope(request, values["goal_id"], values.get("agent_id"), area=AREA)
        elif isinstance(request.user, HostPrincipal) and values.get("execute"):
            raise invalid("goal_id", "execute requires goal_id and agent_id")
        return Response(services.ingest_event(**values))


class RecallApi(RewardMemoryApi):
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
        goal_id, agent_id = body.get("goal_id"), body.get("agent_id")
        if not isinstance(goal_id, str) or not isinstance(agent_id, str):
            raise invalid("goal_id", "goal_id and agent_id are required strings")
        require_scope(request, goal_id, agent_id, area=AREA)
        return Response(services.recall(request=body, execute=execute))


class ApplicationReceiptApi(RewardMemoryApi):
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
        stored = selectors.get_recall(recall_id)
        require_scope(request, stored.goal.goal_id, stored.agent.agent_id, area=AREA)
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
