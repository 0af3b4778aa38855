from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from loopx_site.core import selectors, services
from loopx_site.core.api.permissions import require_goal_wide, require_scope, visible_goal_ids
from loopx_site.core.api.serializers import GoalListOutput, GoalOutput, GoalRegisterInput


class GoalListCreateApi(APIView):
    error_area = "loopx"

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
        responses={200: GoalOutput, 201: GoalOutput},
        summary="Register a Goal and its Agents (idempotent)",
    )
    def post(self, request):
        data = GoalRegisterInput(data=request.data)
        data.is_valid(raise_exception=True)
        require_scope(request, data.validated_data["goal_id"])
        require_goal_wide(request)
        result = services.register_goal(**data.validated_data)
        return Response(selectors.goal_payload(result.goal), status=201 if result.created else 200)


class GoalDetailApi(APIView):
    error_area = "loopx"

    @extend_schema(
        operation_id="goals_retrieve", responses=GoalOutput, summary="One Goal with its Agents"
    )
    def get(self, request, goal_id: str):
        return Response(selectors.goal_payload(selectors.get_goal(goal_id)))
