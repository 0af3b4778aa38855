"""The turn_recall API: explicit views on ``DocumentApi`` (like ``hooks/api/views.py``) —
each parses its input, asks the caller resolver which (Goal, Agent) it acts for, calls one
service and answers its document."""

from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import ValidationError

from hooks.api import serializers as hooks_serializers
from hooks.errors import AREA as HOOKS_AREA
from loopx_site.core.api.base import DocumentApi
from loopx_site.core.api.errors import to_domain_error
from turn_recall import capsule, documents, services, settlement
from turn_recall import contracts as c
from turn_recall.api import serializers as s
from turn_recall.errors import as_recall_document


def _schema(operation_id, request, responses, summary, description=None):
    """``extend_schema`` for one operation of this app."""
    return extend_schema(
        operation_id=operation_id,
        request=request,
        responses=responses,
        summary=summary,
        description=description,
    )


class TurnRecallApi(DocumentApi):
    error_area = c.AREA
    throttle_scope = "turn_recall"  # per token, like recall: executes call providers

    @_schema(
        "turn_recall_run",
        s.TurnRecallInput,
        s.TurnRecallOutput,
        "Agent turn recall from the exact quota packet (preview unless execute)",
        (
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
        return self.document(
            documents.turn_recall(
                services.agent_turn_recall(
                    **services.scope(
                        self.caller(request).acting_for(
                            values.get("goal_id"), values.get("agent_id"), area=c.AREA
                        )
                    ),
                    turn_instance_id=values["turn_instance_id"],
                    quota_decision=values["quota_decision"],
                    execute=values["execute"],
                    session_ref=values.get("session_ref"),
                    force_refresh=values["force_refresh"],
                )
            )
        )


class CapsuleVerifyApi(DocumentApi):
    """``POST /api/v1/turn-capsules/verify/``: one call of ``capsule.verification``."""

    error_area = c.AREA
    throttle_scope = "turn_recall"  # per token: a verifier is not an oracle to hammer

    @_schema(
        "turn_recall_capsule_verify",
        s.CapsuleVerifyInput,
        s.CapsuleVerifyOutput,
        "Verify a signed Turn capsule for the caller's Goal/Agent (read-only)",
        (
            "`valid`, or `invalid` with `reason` (`malformed`, `tampered`, `expired`, "
            "`scope_mismatch` for another Goal/Agent). The signing key and the expected "
            "signature are never returned."
        ),
    )
    def post(self, request):
        values = self.parse(s.CapsuleVerifyInput, request.data)
        acting = self.caller(request).acting_for(
            values.get("goal_id"), values.get("agent_id"), area=c.AREA
        )
        return self.document(
            capsule.verification(
                values["capsule"], goal_id=acting.goal_id, agent_id=acting.agent_id
            )
        )


class QuotaShouldRunApi(DocumentApi):
    error_area = c.AREA
    throttle_scope = "turn_recall"  # POST only (an executing admission calls providers)

    @_schema(
        "turn_recall_quota_should_run",
        None,
        s.QuotaDecisionOutput,
        "The quota decision packet for one Agent (read-only)",
    )
    def get(self, request, goal_id: str, agent_id: str):
        return self.document(
            documents.admission(services.admit(goal_id=goal_id, agent_id=agent_id))
        )

    @_schema(
        "turn_recall_quota_admit",
        s.QuotaAdmitInput,
        s.QuotaDecisionOutput,
        "Quota admission for one turn (read-only unless execute)",
        (
            "With `execute: true` (and the turn's `turn_instance_id`): the executing quota "
            "admission — the turn-start hooks run into the packet, then Agent Turn Recall "
            "executes for this turn and rides beside it as `reward_memory_recall`. "
            "Without it: the same read-only packet as GET. No quota is spent."
        ),
    )
    def post(self, request, goal_id: str, agent_id: str):
        values = self.parse(s.QuotaAdmitInput, request.data)
        acting = self.caller(request).acting_for(goal_id, agent_id, area=c.AREA)
        return self.document(
            documents.admission(
                services.admit(
                    **services.scope(acting),
                    turn_instance_id=values.get("turn_instance_id"),
                    execute=values["execute"],
                )
            )
        )


class TurnSettleApi(DocumentApi):
    """``POST /api/v1/turns/settle/``: one call of ``turn_recall.settlement.settle_turn``."""

    error_area = HOOKS_AREA
    throttle_scope = "settle"  # per credential: REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]

    @extend_schema(
        operation_id="hooks_turn_settle",
        request=hooks_serializers.TurnSettleInput,
        responses={
            200: hooks_serializers.TurnSettleOutput,
            201: hooks_serializers.TurnSettleOutput,
        },
        summary="Settle a Turn's Todo event: primary writeback, then the hook phase",
        description=(
            "Preview unless `execute` is true. Every part of the request (the reflection "
            "included) is checked before anything is written. The primary writeback (Todo "
            "change, committed receipt, checkpoint, quota spend) commits in one transaction; "
            "post-writeback hooks run after it and can never change it. Replays return the "
            "same receipt. With `reward_memory_reflection`, the server runs the Todo's "
            "declared completion validator; a `reward_memory_validation` in the body is "
            "ignored (`caller_validation_ignored: true`)."
        ),
    )
    def post(self, request):
        values = self.parse(hooks_serializers.TurnSettleInput, request.data)
        reflection = values.pop("reward_memory_reflection", None)
        supplied = values.pop("reward_memory_validation", None) is not None
        result = settlement.settle_turn(
            **values,
            reflection=reflection,
            caller_validation_supplied=supplied,
            caller=self.caller(request),
        )
        return self.document(result.payload, created=result.status == "committed")
