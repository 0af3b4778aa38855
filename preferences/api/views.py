"""One explicit view per operation on the explicit preference journal (``DocumentApi``,
like ``hooks/api/views.py``); each returns the same LoopX document as the CLI
(``preferences.documents``). The URL's goal/agent must be inside the host token's scope
(checked by the default permission)."""

from loopx_site.core.api.base import DocumentApi
from preferences import documents, selectors, services
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
WRITE_RESPONSES = {200: WriteOutput, 201: WriteOutput, 409: ConflictOutput}
#: Every journal operation's description in the OpenAPI schema.
DESCRIPTION = (
    "A journal operation on the URL's scope: parse the body or the query with\n"
    "``input_class``, call ``service``, render with ``render`` (201 when applied)."
)


class _JournalApi(DocumentApi):
    # (No docstring: drf-spectacular would publish it as the operations' description.)
    error_area = "semantic_preference"

    @classmethod
    def answer(cls, document):
        """The journal's document: 201 when a write was applied, else 200."""
        return cls.document(document, created=document["status"] == "applied")


class PreferenceReadApi(_JournalApi):
    @operation_schema(
        "preferences_read",
        "Read the exact scope's current view (agent_preferences_v1)",
        {200: ReadOutput},
        TAG,
        description=DESCRIPTION,
    )
    def get(self, request, goal_id: str, agent_id: str):
        return self.answer(
            documents.respond(documents.read, services.read, goal_id=goal_id, agent_id=agent_id)
        )


class PreferenceObserveApi(_JournalApi):
    @operation_schema(
        "preferences_observe",
        "Content-free observation: absent, or observed with a count",
        {200: ObserveOutput},
        TAG,
        description=DESCRIPTION,
    )
    def get(self, request, goal_id: str, agent_id: str):
        return self.answer(
            documents.respond(
                documents.observe, selectors.observe, goal_id=goal_id, agent_id=agent_id
            )
        )


class PreferenceRememberApi(_JournalApi):
    throttle_scope = "write"

    @operation_schema(
        "preferences_remember",
        "Remember or correct a preference (preview unless execute; 201 when applied)",
        WRITE_RESPONSES,
        TAG,
        request=RememberInput,
        description=DESCRIPTION,
    )
    def post(self, request, goal_id: str, agent_id: str):
        values = self.parse(RememberInput, request.data)
        return self.answer(
            documents.respond(
                documents.write, services.remember, goal_id=goal_id, agent_id=agent_id, **values
            )
        )


class PreferenceRetireApi(_JournalApi):
    throttle_scope = "write"

    @operation_schema(
        "preferences_retire",
        "Retire a preference, leaving a tombstone (preview unless execute)",
        WRITE_RESPONSES,
        TAG,
        request=RetireInput,
        description=DESCRIPTION,
    )
    def post(self, request, goal_id: str, agent_id: str):
        values = self.parse(RetireInput, request.data)
        return self.answer(
            documents.respond(
                documents.write, services.retire, goal_id=goal_id, agent_id=agent_id, **values
            )
        )


class PreferenceHistoryApi(_JournalApi):
    @operation_schema(
        "preferences_history",
        "Page through the journal (events of agent_preference_changed_v1)",
        {200: HistoryOutput},
        TAG,
        parameters=[HistoryQuery],
        description=DESCRIPTION,
    )
    def get(self, request, goal_id: str, agent_id: str):
        values = self.parse(HistoryQuery, request.query_params)
        return self.answer(
            documents.respond(
                documents.history, services.history, goal_id=goal_id, agent_id=agent_id, **values
            )
        )
