"""The registry API: parse, one selector or service call, one ``core.documents``
document."""

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema

from loopx_site.core import documents, export, selectors, services
from loopx_site.core.api.base import DocumentApi
from loopx_site.core.api.serializers import (
    GoalListOutput,
    GoalOutput,
    GoalRegisterInput,
    GoalRegistrationOutput,
)


class GoalListCreateApi(DocumentApi):
    throttle_scope = "write"  # POST only: reads are never throttled

    @extend_schema(
        operation_id="goals_list",
        responses=GoalListOutput,
        summary="List the Goals this caller may see",
    )
    def get(self, request):
        goals = selectors.list_goals(goal_ids=self.caller(request).visible_goal_ids())
        return self.document(documents.goal_list(goals))

    @extend_schema(
        operation_id="goals_register",
        request=GoalRegisterInput,
        responses={200: GoalRegistrationOutput, 201: GoalRegistrationOutput},
        summary="Register a Goal and its Agents (operators only; preview unless execute)",
        description="Agent registration and `state_ref` changes are operator actions: host "
        "tokens get 403. 201 when an executed registration created the Goal.",
    )
    def post(self, request):
        self.caller(request).require_operator(area=self.error_area)
        result = services.register_goal(**self.parse(GoalRegisterInput, request.data))
        return self.document(
            documents.goal_registration(result), created=result.executed and result.created
        )


class GoalDetailApi(DocumentApi):
    @extend_schema(
        operation_id="goals_retrieve", responses=GoalOutput, summary="One Goal with its Agents"
    )
    def get(self, request, goal_id: str):
        return self.document(documents.goal(selectors.get_goal(goal_id)))


class GoalExportApi(DocumentApi):
    @extend_schema(
        operation_id="goals_export",
        responses={(200, "application/x-ndjson"): OpenApiTypes.STR},
        summary="Export a Goal's memory as a JSONL stream (operators only)",
        description="The stream `manage.py memory export` writes (docs/export.md): a header "
        "line, one line per row, a trailer with per-type counts. Host tokens get 403.",
    )
    def get(self, request, goal_id: str):
        self.caller(request).require_operator(area=self.error_area)
        lines = export.stream(goal_id)  # an unknown Goal answers 404 before any line
        response = StreamingHttpResponse(lines, content_type="application/x-ndjson")
        response["Content-Disposition"] = f'attachment; filename="{goal_id}.jsonl"'
        return response
