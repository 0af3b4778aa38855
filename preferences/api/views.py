"""One APIView per operation on the explicit preference journal; each returns the same
LoopX document as the CLI (``preferences.documents``). The URL's goal/agent must be
inside the host token's scope (checked by the default permission)."""

from rest_framework.response import Response
from rest_framework.views import APIView

from preferences import documents, services
from preferences.api.schema import operation_schema
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

    # (The docstring is every journal operation's description in the OpenAPI schema.)
    # A subclass declares one operation: its ``method``, ``operation_id``, ``summary`` and
    # ``output`` document the handler ``__init_subclass__`` installs for it.

    error_area = "semantic_preference"
    method = "get"
    operation_id = ""
    summary = ""
    output = None
    input_class = None
    from_query = False
    render = staticmethod(documents.read)
    service = staticmethod(services.read)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.operation_id:
            setattr(cls, cls.method, cls._documented(cls.respond))

    @classmethod
    def _documented(cls, respond):
        write = cls.method == "post"
        responses = (
            {200: cls.output, 201: cls.output, **WRITE_ERRORS}
            if write
            else {200: cls.output, **READ_ERRORS}
        )
        schema = {"request": cls.input_class} if write else {}
        if cls.from_query:
            schema["parameters"] = [cls.input_class]

        def handle(self, request, goal_id: str, agent_id: str):
            return respond(self, request, goal_id, agent_id)

        return operation_schema(cls.operation_id, cls.summary, responses, TAG, **schema)(handle)

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


class PreferenceWriteApi(PreferenceApi):
    # A write: POST its body, throttled as a write, answered by a write document.
    method = "post"
    throttle_scope = "write"
    output = WriteOutput
    render = staticmethod(documents.write)


class PreferenceReadApi(PreferenceApi):
    operation_id = "preferences_read"
    summary = "Read the exact scope's current view (agent_preferences_v1)"
    output = ReadOutput


class PreferenceObserveApi(PreferenceApi):
    operation_id = "preferences_observe"
    summary = "Content-free observation: absent, or observed with a count"
    output = ObserveOutput
    render = staticmethod(documents.observe)
    service = staticmethod(services.observe)


class PreferenceRememberApi(PreferenceWriteApi):
    operation_id = "preferences_remember"
    summary = "Remember or correct a preference (preview unless execute; 201 when applied)"
    input_class = RememberInput
    service = staticmethod(services.remember)


class PreferenceRetireApi(PreferenceWriteApi):
    operation_id = "preferences_retire"
    summary = "Retire a preference, leaving a tombstone (preview unless execute)"
    input_class = RetireInput
    service = staticmethod(services.retire)


class PreferenceHistoryApi(PreferenceApi):
    operation_id = "preferences_history"
    summary = "Page through the journal (events of agent_preference_changed_v1)"
    output = HistoryOutput
    input_class = HistoryQuery
    from_query = True
    render = staticmethod(documents.history)
    service = staticmethod(services.history)
