from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from loopx_site.core.api.auth import HostPrincipal
from loopx_site.core.api.errors import to_domain_error
from loopx_site.core.api.permissions import require_scope
from loopx_site.core.errors import DomainError, invalid
from turn_recall import contracts as c
from turn_recall import quota, services
from turn_recall.api import serializers as s
from turn_recall.errors import as_recall_document


def _identity(request, values: dict) -> tuple[str, str]:
    """(goal_id, agent_id) from the verified principal: a host token's own scope; the
    body may only narrow a Goal-wide token to one of its Agents."""
    user = request.user
    if isinstance(user, HostPrincipal):
        goal_id = user.goal_id
        agent_id = user.agent_id or values.get("agent_id")
        if values.get("goal_id") not in (None, goal_id) or (
            user.agent_id and values.get("agent_id") not in (None, user.agent_id)
        ):
            raise DomainError(
                "scope_forbidden", "Outside this token's scope.", status=403, area=c.AREA
            )
    else:
        goal_id, agent_id = values.get("goal_id"), values.get("agent_id")
        if not goal_id:
            raise invalid("goal_id", "goal_id is required", area=c.AREA)
    if not agent_id:
        raise invalid("agent_id", "agent_id is required for a Goal-wide token", area=c.AREA)
    require_scope(request, goal_id, agent_id, area=c.AREA)
    return goal_id, agent_id


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
        goal_id, agent_id = _identity(request, values)
        return Response(
            services.agent_turn_recall(
                goal_id=goal_id,
                agent_id=agent_id,
                turn_instance_id=values["turn_instance_id"],
                quota_decision=values["quota_decision"],
                execute=values["execute"],
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
