from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from loopx_site.core import access
from loopx_site.core.api.errors import to_domain_error
from turn_recall import contracts as c
from turn_recall import quota, services
from turn_recall.api import serializers as s
from turn_recall.errors import as_recall_document


def _acting(request, values: dict) -> access.Acting:
    """The (Goal, Agent) the turn acts for, from the one caller resolver: a host token's
    own scope (a Goal-wide token names one of its Agents, and then reads as the Goal:
    never that Agent's private corpora); an operator names both."""
    return access.from_request(request, area=c.AREA).acting_for(
        values.get("goal_id"), values.get("agent_id"), area=c.AREA
    )


class TurnRecallApi(APIView):
    error_area = c.AREA
    throttle_scope = "turn_recall"  # per token, like recall: executes call providers

    @extend_schema(
        operation_id="turn_recall_run",
        request=s.TurnRecallInput,
        responses=s.TurnRecallOutput,
        summary="Agent turn recall from the exact quota packet (preview unless execute)",
        description=(
            "The Goal/Agent come from the host token (a Goal-wide token names one of its "
            "Agents). Default-off: `disabled` with zero provider calls until the Agent's "
            "Reward Memory experiment (`configure_goal --execute`) configures the surface "
            "`agent_workflow.turn_admission`. Guidance in "
            "`context` is private advisory context, never action authority."
        ),
    )
    def post(self, request):
        data = s.TurnRecallInput(data=request.data)
        if not data.is_valid():
            raise as_recall_document(to_domain_error(ValidationError(data.errors), c.AREA))
        values = data.validated_data
        acting = _acting(request, values)
        return Response(
            services.agent_turn_recall(
                goal_id=acting.goal_id,
                agent_id=acting.agent_id,
                turn_instance_id=values["turn_instance_id"],
                quota_decision=values["quota_decision"],
                execute=values["execute"],
                viewer=acting.viewer,
            )
        )


class QuotaShouldRunApi(APIView):
    error_area = c.AREA

    @extend_schema(
        operation_id="turn_recall_quota_should_run",
        responses=s.QuotaDecisionOutput,
        summary="The quota decision packet for one Agent (read-only)",
    )
    def get(self, request, goal_id: str, agent_id: str):
        return Response(quota.should_run(goal_id=goal_id, agent_id=agent_id))
