"""The eight tools' bodies: each is the API view's adapter over the same service, with
the scope taken from the token (``credentials.acting``) and the input checked by the
API's own serializer. Each returns the document the CLI prints (and the API answers);
a refusal raises the same coded ``DomainError``. Nothing here decides a rule.

``server`` publishes them (names, annotations, output schemas) and renders errors.
"""

from typing import Any

from rest_framework.exceptions import ValidationError

from loopx_site.core.api.errors import to_domain_error
from loopx_site.core.errors import DomainError
from loopx_site.mcp.credentials import Credential, acting, throttle
from preferences import documents as preference_documents
from preferences import services as preference_services
from preferences.api import serializers as preference_inputs
from reward_memory import services as memory_services
from reward_memory.api import serializers as memory_inputs
from reward_memory.documents import ingest as memory_ingest_documents
from reward_memory.documents import recall as memory_recall_documents
from reward_memory.errors import AREA as MEMORY_AREA
from reward_memory.errors import invalid
from turn_recall import contracts as turn_contracts
from turn_recall import documents as turn_documents
from turn_recall import services as turn_services
from turn_recall.api import serializers as turn_inputs
from turn_recall.errors import as_recall_document

PREFERENCE_AREA = "semantic_preference"


def _checked(serializer_class, data: dict[str, Any], area: str) -> dict[str, Any]:
    """The API serializer's validated input (its refusal is the same error document)."""
    serializer = serializer_class(data=data)
    if not serializer.is_valid():
        raise to_domain_error(ValidationError(serializer.errors), area)
    return dict(serializer.validated_data)


def _preferences(render, service, scope, arguments: dict[str, Any]) -> dict[str, Any]:
    return preference_documents.respond(
        render, service, goal_id=scope.goal_id, agent_id=scope.agent_id, **arguments
    )


# -- preferences -------------------------------------------------------------------------
def read_preferences(credential: Credential, *, goal_id=None, agent_id=None) -> dict:
    scope = acting(credential, goal_id, agent_id, area=PREFERENCE_AREA)
    return _preferences(preference_documents.read, preference_services.read, scope, {})


def remember_preference(credential: Credential, *, goal_id=None, agent_id=None, **body) -> dict:
    scope = acting(credential, goal_id, agent_id, area=PREFERENCE_AREA)
    values = _checked(preference_inputs.RememberInput, body, PREFERENCE_AREA)
    throttle(credential, "write")
    return _preferences(preference_documents.write, preference_services.remember, scope, values)


def retire_preference(credential: Credential, *, goal_id=None, agent_id=None, **body) -> dict:
    scope = acting(credential, goal_id, agent_id, area=PREFERENCE_AREA)
    values = _checked(preference_inputs.RetireInput, body, PREFERENCE_AREA)
    throttle(credential, "write")
    return _preferences(preference_documents.write, preference_services.retire, scope, values)


def preference_history(credential: Credential, *, goal_id=None, agent_id=None, **query) -> dict:
    scope = acting(credential, goal_id, agent_id, area=PREFERENCE_AREA)
    query = {k: v for k, v in query.items() if v is not None}
    values = _checked(preference_inputs.HistoryQuery, query, PREFERENCE_AREA)
    return _preferences(preference_documents.history, preference_services.history, scope, values)


# -- Reward Memory -----------------------------------------------------------------------
def recall_memory(
    credential: Credential, *, request: dict, execute: bool = False, agent_id=None
) -> dict:
    """``RecallApi``: our flat request (its Goal/Agent filled from the token) or LoopX's
    packet; guarded, budgeted and receipted by ``services.recall``."""
    body = dict(request)
    loopx = memory_services.is_loopx_packet(body)
    if loopx:
        named = (body.pop("goal_id", None), body.pop("agent_id", None) or agent_id)
    else:
        named = (body.get("goal_id"), body.get("agent_id") or agent_id)
    scope = acting(credential, *named, area=MEMORY_AREA)
    if not loopx:
        body["goal_id"], body["agent_id"] = scope.goal_id, scope.agent_id
    throttle(credential, "reward_recall")
    recalled = memory_services.recall(
        request=body,
        execute=execute,
        goal_id=scope.goal_id,
        agent_id=scope.agent_id,
        viewer=scope.viewer,
    )
    return memory_recall_documents.recall_result(recalled)


def propose_memory(credential: Credential, *, goal_id=None, agent_id=None, **body) -> dict:
    """``IngestApi`` for the token's (Goal, Agent): the event becomes a candidate that
    passes the ingest guards and waits for review or a standing policy."""
    scope = acting(credential, goal_id, agent_id, area=MEMORY_AREA)
    body = {k: v for k, v in body.items() if v is not None}
    values = _checked(memory_inputs.IngestInput, body, MEMORY_AREA)
    throttle(credential, "ingest")
    document = {
        key: values.pop(key) for key in ("adapter", "event", "observed_at") if key in values
    }
    ingested = memory_services.submit_event(
        document=document,
        goal_id=scope.goal_id,
        agent_id=scope.agent_id,
        execute=values.get("execute", False),
        viewer=scope.viewer,
        principal=credential.caller,  # the role bindings' subject
    )
    return memory_ingest_documents.ingest(ingested)


def record_application(credential: Credential, *, receipt: dict, execute: bool = False) -> dict:
    """``ApplicationReceiptApi``: a recall the token may not see is reported as missing."""
    recall_id = receipt.get("recall_id")
    if not isinstance(recall_id, str):
        raise invalid("recall_id", "recall_id is required")
    memory_services.require_receipt_author(credential.caller, recall_id)  # unseen = absent
    throttle(credential, "write")
    applied = memory_services.record_application(document=dict(receipt), execute=execute)
    return memory_recall_documents.application(applied)


# -- Agent Turn Recall -------------------------------------------------------------------
def turn_guidance(credential: Credential, *, goal_id=None, agent_id=None, **body) -> dict:
    """``TurnRecallApi``: Agent Turn Recall from the exact quota packet."""
    scope = acting(credential, goal_id, agent_id, area=turn_contracts.AREA)
    body = {k: v for k, v in body.items() if v is not None}
    try:
        values = _checked(turn_inputs.TurnRecallInput, body, turn_contracts.AREA)
    except DomainError as err:
        raise as_recall_document(err) from None
    throttle(credential, "turn_recall")
    result = turn_services.agent_turn_recall(
        **turn_services.scope(scope),
        turn_instance_id=values["turn_instance_id"],
        quota_decision=values["quota_decision"],
        execute=values["execute"],
        session_ref=values.get("session_ref"),
        force_refresh=values["force_refresh"],
    )
    return turn_documents.turn_recall(result)
