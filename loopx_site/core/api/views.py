from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from loopx_site.core import selectors, services
from loopx_site.core.api.permissions import require_operator, visible_goal_ids
from loopx_site.core.api.serializers import (
    GoalListOutput,
    GoalOutput,
    GoalRegisterInput,
    GoalRegistrationOutput,
)


class GoalListCreateApi(APIView):
    error_area = "loopx"
    throttle_scope = "write"  # POST only: reads are never throttled

    @extend_schema(
        operation_id="goals_list",
        responses=GoalListOutput,
        summary="List the Goals this caller may see",
    )
    def get(self, request):
        goals = selectors.list_goals(goal_ids=visible_goal_ids(request))
        return Response(
            {
                "schema_version": "loopx_goal_list_v0",
                "goals": [selectors.goal_payload(g) for g in goals],
            }
        )

    @extend_schema(
        operation_id="goals_register",
        request=GoalRegisterInput,
        responses={200: GoalRegistrationOutput, 201: GoalRegistrationOutput},
        summary="Register a Goal and its Agents (operators only; preview unless execute)",
        description="Agent registration and `state_ref` changes are operator actions: host "
        "tokens get 403. 201 when an executed registration created the Goal.",
    )
    def post(self, request):
        require_operator(request)
        data = GoalRegisterInput(data=request.data)
        data.is_valid(raise_exception=True)
        result = services.register_goal(**data.validated_data)
        payload = services.registration_payload(result)
        return Response(payload, status=201 if result.executed and result.created else 200)


class GoalDetailApi(APIView):
    error_area = "loopx"

    @extend_schema(
        operation_id="goals_retrieve", responses=GoalOutput, summary="One Goal with its Agents"
    )
    def get(self, request, goal_id: str):
        return Response(selectors.goal_payload(selectors.get_goal(goal_id)))
