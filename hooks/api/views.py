"""The hooks API: each view parses its input, calls one selector or service and answers
one ``hooks.documents`` document."""

from drf_spectacular.utils import extend_schema, extend_schema_view

from hooks import documents, selectors, services
from hooks.api import serializers as s
from hooks.errors import AREA
from loopx_site.core.api.base import DocumentApi


class TodoListAddApi(DocumentApi):
    error_area = AREA
    throttle_scope = "write"  # POST only: reads are never throttled

    @extend_schema(
        operation_id="hooks_todos_list",
        parameters=[s.HookTodoListQuery],
        responses=s.HookTodoListOutput,
        summary="The Goal's Todos, oldest first; filter with ?state=",
    )
    def get(self, request, goal_id: str):
        q = self.parse(s.HookTodoListQuery, request.query_params)
        todos = selectors.list_todos(goal_id, state=q.get("state"))
        return self.document(documents.todo_list(goal_id, todos))

    @extend_schema(
        operation_id="hooks_todos_add",
        request=s.HookTodoAddInput,
        responses={200: s.HookTodoAddOutput, 201: s.HookTodoAddOutput},
        summary="Add a Todo to the Goal (preview unless execute; idempotent; same id with "
        "other content is 409)",
    )
    def post(self, request, goal_id: str):
        values = self.parse(s.HookTodoAddInput, request.data)
        result = services.add_todo(goal_id=goal_id, **values)
        return self.document(
            documents.todo_add(result, execute=values["execute"]), created=result.created
        )


class _JournalListApi(DocumentApi):
    # A listing of the sidecar journal, scoped to what the caller may see. (No docstring:
    # drf-spectacular would publish it as the operations' description.)
    error_area = AREA
    query: type
    select = staticmethod(selectors.list_dispatches)
    render = staticmethod(documents.dispatch_list)

    def get(self, request):
        q = self.parse(self.query, request.query_params)
        goal_ids, agent_id = self.caller(request).listing_scope(q.pop("goal_id", None), area=AREA)
        return self.document(self.render(self.select(goal_ids=goal_ids, agent_id=agent_id, **q)))


def _listing(operation_id: str, query, output, summary: str):
    return extend_schema_view(
        get=extend_schema(
            operation_id=operation_id, parameters=[query], responses=output, summary=summary
        )
    )


@_listing(
    "hooks_dispatches_list",
    s.HookDispatchListQuery,
    s.HookDispatchListOutput,
    "The sidecar dispatch journal (scoped to the token's Goal)",
)
class HookDispatchListApi(_JournalListApi):
    query = s.HookDispatchListQuery


@_listing(
    "hooks_intents_list",
    s.HookIntentListQuery,
    s.HookIntentListOutput,
    "The intent outbox (scoped to the token's Goal); filter with ?status=",
)
class HookIntentListApi(_JournalListApi):
    query = s.HookIntentListQuery
    select = staticmethod(selectors.list_intents)
    render = staticmethod(documents.intent_list)


class HookRegistrationListApi(DocumentApi):
    error_area = AREA

    @extend_schema(
        operation_id="hooks_registrations_list",
        responses=s.HookRegistrationListOutput,
        summary="Installed post-writeback hook registrations",
    )
    def get(self, request):
        listing = selectors.registrations(operator=self.caller(request).is_operator)
        return self.document(documents.registration_list(listing))
