from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from hooks import selectors, services
from hooks.api import serializers as s
from hooks.errors import AREA
from loopx_site.core import access
from loopx_site.core import selectors as core_selectors


def _caller(request) -> access.Caller:
    """Who is calling (``loopx_site.core.access``: the one resolver)."""
    return access.from_request(request, area=AREA)


def _scope(request, goal_id: str | None) -> tuple[list[str] | None, str | None]:
    """(goal_ids, agent_id) a listing may show: a host sees its token's scope only."""
    return _caller(request).listing_scope(goal_id, area=AREA)


class TodoListAddApi(APIView):
    error_area = AREA
    throttle_scope = "write"  # POST only: reads are never throttled

    @extend_schema(operation_id="hooks_todos_list", responses=s.HookTodoListOutput)
    def get(self, request, goal_id: str):
        core_selectors.get_goal(goal_id, area=AREA)
        todos = selectors.list_todos(goal_id)
        return Response(
            {
                "schema_version": "loopx_todo_list_v0",
                "goal_id": goal_id,
                "todos": [selectors.todo_payload(t) for t in todos],
            }
        )

    @extend_schema(
        operation_id="hooks_todos_add",
        request=s.HookTodoAddInput,
        responses={200: s.HookTodoAddOutput, 201: s.HookTodoAddOutput},
        summary="Add a Todo to the Goal (preview unless execute; idempotent; same id with "
        "other content is 409)",
    )
    def post(self, request, goal_id: str):
        data = s.HookTodoAddInput(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        result = services.add_todo(goal_id=goal_id, **values)
        return Response(
            selectors.todo_add_payload(result, execute=values["execute"]),
            status=201 if result.created else 200,
        )


class HookDispatchListApi(APIView):
    error_area = AREA

    @extend_schema(
        operation_id="hooks_dispatches_list",
        parameters=[s.HookDispatchListQuery],
        responses=s.HookDispatchListOutput,
        summary="The sidecar dispatch journal (scoped to the token's Goal)",
    )
    def get(self, request):
        query = s.HookDispatchListQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        q = query.validated_data
        goal_ids, agent_id = _scope(request, q.get("goal_id"))
        return Response(
            selectors.list_dispatches(
                goal_ids=goal_ids,
                agent_id=agent_id,
                status=q.get("status"),
                failure_code=q.get("failure_code"),
                receipt_id=q.get("receipt_id"),
                hook_id=q.get("hook_id"),
                after=q.get("cursor"),
                limit=q["limit"],
            )
        )


class HookIntentListApi(APIView):
    error_area = AREA

    @extend_schema(
        operation_id="hooks_intents_list",
        parameters=[s.HookIntentListQuery],
        responses=s.HookIntentListOutput,
        summary="The intent outbox (scoped to the token's Goal); filter with ?status=",
    )
    def get(self, request):
        query = s.HookIntentListQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        q = query.validated_data
        goal_ids, agent_id = _scope(request, q.get("goal_id"))
        return Response(
            selectors.list_intents(
                goal_ids=goal_ids,
                agent_id=agent_id,
                status=q.get("status"),
                intent_kind=q.get("intent_kind"),
                dispatch_id=q.get("dispatch_id"),
                after=q.get("cursor"),
                limit=q["limit"],
            )
        )


class HookRegistrationListApi(APIView):
    error_area = AREA

    @extend_schema(
        operation_id="hooks_registrations_list",
        responses=s.HookRegistrationListOutput,
        summary="Installed post-writeback hook registrations",
    )
    def get(self, request):
        payload = selectors.registrations_payload()
        if not _caller(request).is_operator:  # installation paths are operator information
            for item in payload["registrations"]:
                item.pop("provider", None)
        return Response(payload)
