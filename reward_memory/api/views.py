"""One APIView per Reward Memory operation; each parses, checks scope, calls one service.

Hosts see and use only corpora that allowlist their Goal (and Agent); operators see all.
"""

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework.response import Response
from rest_framework.views import APIView

from loopx_site.core import access
from reward_memory import principals, selectors, services
from reward_memory.api import serializers as s
from reward_memory.documents import corpora as corpus_documents
from reward_memory.documents import registry
from reward_memory.errors import AREA, invalid

TAG = ["reward-memory"]


def _schema(name: str, summary: str, *, responses, request=None):
    """The OpenAPI operation of one view (``reward_memory_<name>``, tag reward-memory)."""
    return extend_schema(
        operation_id=f"reward_memory_{name}",
        request=request,
        responses=responses,
        tags=TAG,
        summary=summary,
    )


# (no class docstrings here: drf-spectacular would publish them as descriptions)
class RewardMemoryApi(APIView):
    # a Reward Memory operation: ``input_serializer`` checks the body's shape
    error_area = AREA
    input_serializer: type | None = None

    def values(self, request) -> dict:
        data = self.input_serializer(data=request.data)
        data.is_valid(raise_exception=True)
        return dict(data.validated_data)


def _caller(request) -> access.Caller:
    """Who is calling (``loopx_site.core.access``: the one resolver)."""
    return access.from_request(request, area=AREA)


def _viewer(request) -> selectors.Viewer:
    """The caller's verified read scope: ``None`` for an operator, else the token's."""
    return _caller(request).viewer


def _body(request) -> tuple[dict, bool]:
    """A free-form document body (recall, application receipt) and its ``execute``."""
    if not isinstance(request.data, dict):
        raise invalid(None, "the body must be a JSON object")
    body = dict(request.data)
    execute = body.pop("execute", False)
    if not isinstance(execute, bool):
        raise invalid("execute", "execute must be true or false")
    return body, execute


def _recorded(document: dict) -> Response:
    """201 when the operation recorded something, else 200."""
    return Response(document, status=201 if document.get("recorded") else 200)


class CorpusListApi(RewardMemoryApi):
    @_schema(
        "corpora_list",
        "Registered corpora visible to the caller, with their five health states",
        responses=s.CorpusListOutput,
    )
    def get(self, request):
        viewer = _viewer(request)
        scope = {} if viewer is None else {"goal_id": viewer[0], "agent_id": viewer[1]}
        return Response(corpus_documents.corpus_list(selectors.list_corpora(**scope)))


class CorpusHealthApi(RewardMemoryApi):
    @_schema(
        "corpus_health",
        "The corpus's five separate health states (read-only)",
        responses=s.CorpusHealthOutput,
    )
    def get(self, request, corpus_id: str):
        # a corpus the caller may not see is the same corpus_not_found a missing one gives
        corpus = selectors.get_corpus(corpus_id, viewer=_viewer(request))
        return Response(registry.corpus_health(corpus))


class CandidateReviewApi(RewardMemoryApi):
    throttle_scope = "review"
    input_serializer = s.CandidateReviewInput

    @_schema(
        "candidate_review",
        "Review a candidate (decision record; recorded only with execute)",
        request=s.CandidateReviewInput,
        responses=s.ReviewOutput,
    )
    def post(self, request):
        values = self.values(request)
        values.pop("reviewer", None)  # a claim; the reviewer is the authenticated principal
        return _recorded(
            services.review_candidate(
                **values, principal=principals.from_request(request), viewer=_viewer(request)
            )
        )


class ReviewApplyApi(RewardMemoryApi):
    throttle_scope = "review"
    input_serializer = s.ExecuteInput

    @_schema(
        "review_apply",
        "Perform a recorded review's next step as the corpus owner (authenticated)",
        request=s.ExecuteInput,
        responses=s.ActivationReceiptOutput,
    )
    def post(self, request, review_id: str):
        execute = self.values(request)["execute"]
        services.get_review(review_id, viewer=_viewer(request))  # unseen = absent
        return Response(
            services.apply_review(
                review_id=review_id, principal=principals.from_request(request), execute=execute
            )
        )


class _RecordOperationApi(RewardMemoryApi):
    # one lifecycle operation on a record the caller may see (services.record_operation)
    throttle_scope = "review"  # revoke, supersede
    operation = ""

    def post(self, request, record_ref: str):
        arguments = self.values(request)
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


@extend_schema_view(
    post=_schema(
        "record_revoke",
        "Revoke an active record (corpus authority source or owner, authenticated)",
        request=s.RevokeInput,
        responses=s.RecordOperationOutput,
    )
)
class RecordRevokeApi(_RecordOperationApi):
    operation = "revoke"
    input_serializer = s.RevokeInput


@extend_schema_view(
    post=_schema(
        "record_supersede",
        "Supersede an active record by another of its corpus and surface (owner)",
        request=s.SupersedeInput,
        responses=s.RecordOperationOutput,
    )
)
class RecordSupersedeApi(_RecordOperationApi):
    operation = "supersede"
    input_serializer = s.SupersedeInput


class IngestApi(RewardMemoryApi):
    throttle_scope = "ingest"  # per token: REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
    input_serializer = s.IngestInput

    @_schema(
        "ingest",
        "Ingest one compact event (planned unless execute; fail-open statuses)",
        request=s.IngestInput,
        responses=s.IngestReceiptOutput,
    )
    def post(self, request):
        values = self.values(request)
        caller = _caller(request)
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

    @_schema(
        "recall",
        "Guarded recall: private result (summaries) and public packet",
        request=s.RecallRequestInput,
        responses=s.RecallResultOutput,
    )
    def post(self, request):
        body, execute = _body(request)
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

    @_schema(
        "application_receipt",
        "Application receipt for one recall (recorded only with execute)",
        request=s.ApplicationInput,
        responses=s.ApplicationReceiptOutput,
    )
    def post(self, request):
        body, execute = _body(request)
        recall_id = body.get("recall_id")
        if not isinstance(recall_id, str):
            raise invalid("recall_id", "recall_id is required")
        selectors.get_recall(recall_id, viewer=_viewer(request))  # unseen = absent
        return _recorded(services.record_application(document=body, execute=execute))


class ExperimentStatusApi(RewardMemoryApi):
    @_schema(
        "experiment_status",
        "The Agent's Reward Memory experiment status (unavailable until configured)",
        responses=s.ExperimentStatusOutput,
    )
    def get(self, request, goal_id: str, agent_id: str):
        return Response(services.experiment_status(goal_id=goal_id, agent_id=agent_id))


class BoundaryHookApi(RewardMemoryApi):
    throttle_scope = "reward_recall"
    input_serializer = s.BoundaryHookInput

    @_schema(
        "boundary_hook",
        "Automatic recall/ingest at a declared module boundary (planned unless execute)",
        request=s.BoundaryHookInput,
        responses=s.BoundaryHookOutput,
    )
    def post(self, request, boundary: str):
        values = self.values(request)
        acting = _caller(request).acting_for(values["goal_id"], values["agent_id"], area=AREA)
        values["goal_id"], values["agent_id"] = acting.goal_id, acting.agent_id
        return Response(
            services.run_boundary_hook(boundary=boundary, **values, viewer=acting.viewer)
        )
