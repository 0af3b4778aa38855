"""One APIView per operation on the explicit preference journal; each returns the same
LoopX document as the CLI (``preferences.documents``). The URL's goal/agent must be
inside the host token's scope (checked by the default permission)."""

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from preferences import documents, services
from preferences.api.serializers import (
    ConflictOutput,
    HistoryOutput,
    HistoryQuery,
    ObserveOutput,
    ReadOutput,
    RememberInput,
    RetireInput,
    WriteOutput,
)

TAG = ["preferences"]
# Every other error response is the shared envelope, added by the central schema.
READ_ERRORS: dict = {}
WRITE_ERRORS = {409: ConflictOutput}


class PreferenceApi(APIView):
    """A journal operation on the URL's scope: parse the body or the query with
    ``input_class``, call ``service``, render with ``render`` (201 when applied)."""

    error_area = "semantic_preference"
    input_class = None
    from_query = False
    render = staticmethod(documents.read)
    service = staticmethod(services.read)

    def respond(self, request, goal_id: str, agent_id: str) -> Response:
        arguments = {}
        if self.input_class is not None:
            data = self.input_class(data=request.query_params if self.from_query else request.data)
            data.is_valid(raise_exception=True)
            arguments = data.validated_data
        document = documents.respond(
            self.render, self.service, goal_id=goal_id, agent_id=agent_id, **arguments
        )
        return Response(document, status=201 if document["status"] == "applied" else 200)


def _operation(operation_id: str, summary: str, output, *, write: bool = False, **schema):
    responses = (
        {200: output, 201: output, **WRITE_ERRORS} if write else {200: output, **READ_ERRORS}
    )
    return extend_schema(
        operation_id=operation_id, responses=responses, tags=TAG, summary=summary, **schema
    )


class PreferenceReadApi(PreferenceApi):
    @_operation(
        "preferences_read", "Read the exact scope's current view (agent_preferences_v1)", ReadOutput
    )
    def get(self, request, goal_id: str, agent_id: str):
        return self.respond(request, goal_id, agent_id)


class PreferenceObserveApi(PreferenceApi):
    render = staticmethod(documents.observe)
    service = staticmethod(services.observe)

    @_operation(
        "preferences_observe",
        "Content-free observation: absent, or observed with a count",
        ObserveOutput,
    )
    def get(self, request, goal_id: str, agent_id: str):
        return self.respond(request, goal_id, agent_id)


class PreferenceRememberApi(PreferenceApi):
    throttle_scope = "write"
    input_class = RememberInput
    render = staticmethod(documents.write)
    service = staticmethod(services.remember)

    @_operation(
        "preferences_remember",
        "Remember or correct a preference (preview unless execute; 201 when applied)",
        WriteOutput,
        write=True,
        request=RememberInput,
    )
    def post(self, request, goal_id: str, agent_id: str):
        return self.respond(request, goal_id, agent_id)


class PreferenceRetireApi(PreferenceApi):
    throttle_scope = "write"
    input_class = RetireInput
    render = staticmethod(documents.write)
    service = staticmethod(services.retire)

    @_operation(
        "preferences_retire",
        "Retire a preference, leaving a tombstone (preview unless execute)",
        WriteOutput,
        write=True,
        request=RetireInput,
    )
    def post(self, request, goal_id: str, agent_id: str):
        return self.respond(request, goal_id, agent_id)


class PreferenceHistoryApi(PreferenceApi):
    input_class = HistoryQuery
    from_query = True
    render = staticmethod(documents.history)
    service = staticmethod(services.history)

    @_operation(
        "preferences_history",
        "Page through the journal (events of agent_preference_changed_v1)",
        HistoryOutput,
        parameters=[HistoryQuery],
    )
    def get(self, request, goal_id: str, agent_id: str):
        return self.respond(request, goal_id, agent_id)
