"""The ``periodic_report`` capability (app-internal, installed through the setting).

* ``PeriodicReportRuntimeTrigger`` — the ``periodic_report.runtime_trigger`` hook. It maps
  an eligible ``todo_completed`` projection (its segment reached the completion
  threshold) or a ``replan_recorded`` projection to exactly one
  ``periodic_report.trigger_evaluation`` intent (``operation: evaluate_runtime_trigger``,
  ``policy_version: weekly_v0``); everything else is ``not_applicable``. It proposes; it
  never renders, sends or writes anything.
* ``reduce_trigger`` — the capability-owned trigger reducer. It decides promotion from
  durable public-safe rollout events (earlier recorded decisions); a governed executor
  calls it after admitting the intent.

The hook core never imports this module; ``settings.LOOPX_POST_WRITEBACK_HOOKS`` names it.
"""

import datetime as dt

from hooks.capabilities import documents
from hooks.contracts import build_intent, build_registration, build_result

CAPABILITY_ID = "periodic_report"
HOOK_ID = "periodic_report.runtime_trigger"
INTENT_KIND = "periodic_report.trigger_evaluation"
OPERATION = "evaluate_runtime_trigger"
POLICY_VERSION = "weekly_v0"
TRANSITIONS = ("segment_completed", "replan_recorded")


def report_window(committed_at: str) -> str:
    """The weekly window (ISO week, e.g. ``2026-W35``) of a ``…Z`` timestamp."""
    moment = dt.datetime.fromisoformat(committed_at.replace("Z", "+00:00"))
    year, week, _ = moment.isocalendar()
    return f"{year}-W{week:02d}"


class PeriodicReportRuntimeTrigger:
    """Provider of ``periodic_report.runtime_trigger``."""

    #: A segment is eligible when this share of its Todos is completed.
    segment_completion_threshold = 1.0

    registration = build_registration(
        hook_id=HOOK_ID,
        capability_id=CAPABILITY_ID,
        intent_kinds=[INTENT_KIND],
        requested_read_scope=["settlement_identity", "bounded_event_projection"],
        budget={
            "max_invocations_per_dispatch": 1,
            "max_intents_per_dispatch": 1,
            "max_result_bytes": 16384,
            "timeout_ms": 1000,
        },
    )

    intent_contracts = {
        INTENT_KIND: {
            "operations": [OPERATION],
            "payload_schema": {
                "type": "object",
                "fields": {
                    "transition": {"type": "enum", "values": list(TRANSITIONS)},
                    "segment_ref": {"type": "token", "nullable": True, "max_length": 192},
                    "report_window": {"type": "token", "max_length": 16},
                    "source_event_refs": {
                        "type": "array",
                        "items": {"type": "token"},
                        "min_items": 1,
                        "max_items": 8,
                        "unique": True,
                    },
                },
            },
        }
    }

    def produce(self, hook_input: dict) -> dict:
        source = hook_input["source"]
        projection = hook_input.get("projection")
        transition = self._eligible_transition(source["event_kind"], projection)
        if transition is None:
            return build_result(hook_input, [])
        segment = projection.get("segment") or {}
        payload = {
            "transition": transition,
            "segment_ref": segment.get("segment_ref"),
            "report_window": report_window(source["committed_at"]),
            "source_event_refs": list(projection["fact_refs"])[:8],
        }
        intent = build_intent(
            hook_input=hook_input,
            intent_kind=INTENT_KIND,
            operation=OPERATION,
            policy_version=POLICY_VERSION,
            payload=payload,
        )
        return build_result(hook_input, [intent])

    def _eligible_transition(self, event_kind: str, projection: dict | None) -> str | None:
        if not projection:
            return None
        if event_kind == "replan_recorded" and projection.get("transition") == "replan_recorded":
            return "replan_recorded"
        if event_kind != "todo_completed":
            return None
        segment = projection.get("segment")
        if not segment or not segment.get("todos_total"):
            return None
        share = segment["todos_completed"] / segment["todos_total"]
        return "segment_completed" if share >= self.segment_completion_threshold else None


def reduce_trigger(*, intent: dict, events: list[dict]) -> dict:
    """Decide promotion of one trigger evaluation (policy ``weekly_v0``).

    ``events`` are durable public-safe rollout events: earlier decisions of the same Goal
    (``{"intent_id", "report_window", "decision"}``). At most one report is promoted per
    weekly window; a later trigger in the same window is held. Promotion only marks the
    report as due for the governed compose-run → renderer → authorized sink path, which
    is not part of this system: nothing is rendered or sent here.
    """
    payload = intent["payload"]
    window = payload["report_window"]
    promoted = sorted(
        e["intent_id"]
        for e in events
        if e.get("report_window") == window and e.get("decision") == "promote"
    )
    decision = "hold" if promoted else "promote"
    return documents.trigger_decision(
        intent,
        decision=decision,
        reason="window_already_promoted" if promoted else f"{payload['transition']}_trigger",
        promoted_by=promoted[0] if promoted else None,
        next_stage="compose_run_requires_separate_admission" if decision == "promote" else None,
    )
