"""The hooks app's documents: every ``schema_version`` document it emits, built here
once from service and selector results, for the CLI and the API alike (the encoding is
``loopx_site.core.encoding``: the same document is the same bytes on both).

The wire packets of the hook protocol itself (registration, hook input, result,
intent as a provider proposes it and as an executor is given it, the completion
validator's manifest and input) are ``hooks.contracts``'; this module renders the journal,
the outbox, Todos, settlements, replays, executor runs and validators from the results the
services return (``settle_result``, ``replay_outcome``, ``execution_run``,
``validator_operation_result``).
"""

from typing import Any

from hooks import contracts
from hooks.models import CompletionValidator, DurableWritebackReceipt, HookDispatch, HookIntent
from loopx_site.core import clock

TODO_SCHEMA = "loopx_todo_v0"
TODO_LIST_SCHEMA = "loopx_todo_list_v0"
RECEIPT_SCHEMA = "loopx_durable_writeback_receipt_v0"
QUOTA_SPEND_SCHEMA = "loopx_quota_spend_v0"
SETTLEMENT_SCHEMA = "loopx_turn_settlement_v0"
DISPATCH_LIST_SCHEMA = "loopx_post_writeback_dispatch_list_v0"
INTENT_LIST_SCHEMA = "loopx_post_writeback_intent_list_v0"
REGISTRATION_LIST_SCHEMA = "loopx_post_writeback_registration_list_v0"
REPLAY_SCHEMA = "loopx_post_writeback_replay_v0"
EXECUTION_SCHEMA = "loopx_post_writeback_intent_execution_v0"
VALIDATOR_PROTOCOL = contracts.VALIDATOR_PROTOCOL
VALIDATOR_OPERATION_SCHEMA = "loopx_completion_validator_operation_v0"
VALIDATOR_LIST_SCHEMA = "loopx_completion_validator_list_v0"


# -- Todos ----------------------------------------------------------------------------------
def todo(row) -> dict[str, Any]:
    return {
        "todo_id": row.todo_id,
        "goal_id": row.goal.goal_id,
        "title": row.title,
        "state": row.state,
        "segment_ref": row.segment_ref or None,
        "validator": row.validator.validator_id if row.validator_id else None,
        "revision": row.revision,
        "replan_count": row.replan_count,
        "created_at": clock.iso(row.created_at),
        "updated_at": clock.iso(row.updated_at),
        "completed_at": clock.iso(row.completed_at),
    }


def todo_add(result, *, execute: bool) -> dict[str, Any]:
    """``loopx_todo_v0``: the one output of ``todo add`` (CLI and API)."""
    return {
        "schema_version": TODO_SCHEMA,
        "status": result.status,
        "execute": execute,
        "created": result.created,
        "todo": todo(result.todo),
    }


def todo_list(goal_id: str, rows) -> dict[str, Any]:
    """``loopx_todo_list_v0`` (``todo list`` and ``GET /goals/{id}/todos/``)."""
    return {
        "schema_version": TODO_LIST_SCHEMA,
        "goal_id": goal_id,
        "todos": [todo(t) for t in rows],
    }


# -- receipts, quota spends, settlements ------------------------------------------------------
def receipt(row: DurableWritebackReceipt) -> dict[str, Any]:
    return {
        "schema_version": RECEIPT_SCHEMA,
        **contracts.receipt_core(row),
        "checkpoint_digest": row.checkpoint_digest or None,
    }


def quota_spend(row: DurableWritebackReceipt, spend, eligibility: dict) -> dict[str, Any]:
    settlement = row.settlement
    return {
        "schema_version": QUOTA_SPEND_SCHEMA,
        "spend_id": spend.spend_id if spend else contracts.spend_id(receipt_id=row.receipt_id),
        "goal_id": settlement.goal.goal_id,
        "agent_id": settlement.agent.agent_id,
        "units": spend.units if spend else 1,
        "spent": spend is not None,
        "spent_at": clock.iso(spend.spent_at) if spend else None,
        "eligibility": eligibility,
    }


def settlement(
    status: str, execute: bool, row, receipt_row, *, spend: dict, phase, dispatches, recovered
) -> dict[str, Any]:
    """``loopx_turn_settlement_v0`` of a committed or replayed settlement. ``phase`` is
    the hook phase that ran (``None``: it did not run here, a preview of a replay)."""
    return {
        "schema_version": SETTLEMENT_SCHEMA,
        "ok": True,
        "status": status,
        "execute": execute,
        "settlement": {
            "goal_id": row.goal.goal_id,
            "agent_id": row.agent.agent_id,
            "todo_id": row.todo.todo_id,
            "turn_instance_id": row.turn_instance_id,
            "event_kind": row.event_kind,
            "effect_id": row.effect_id,
            "profile": row.profile,
            "post_writeback_hooks_enabled": row.post_writeback_hooks_enabled,
            "hook_allowlist": row.hook_allowlist,
        },
        "receipt": receipt(receipt_row),
        "quota_spend": spend,
        "hook_phase": {
            "enabled": row.post_writeback_hooks_enabled,
            "status": "preview" if phase is None else phase.status,
            "reason": None if phase is None else phase.reason,
            "dispatches": dispatches,
            "outcomes": [] if phase is None else [o.public() for o in phase.outcomes],
            "recovered_receipt_ids": recovered,
        },
    }


def settlement_preview(
    agent,
    todo_row,
    profile,
    effect_id: str,
    receipt_id: str,
    event_kind: str,
    turn_instance_id: str,
    planned: list[dict],
) -> dict[str, Any]:
    """``loopx_turn_settlement_v0`` of a first settlement's preview: the receipt as it
    would be prepared, no quota spend, the planned dispatches."""
    return {
        "schema_version": SETTLEMENT_SCHEMA,
        "ok": True,
        "status": "preview",
        "execute": False,
        "settlement": {
            "goal_id": agent.goal.goal_id,
            "agent_id": agent.agent_id,
            "todo_id": todo_row.todo_id,
            "turn_instance_id": turn_instance_id,
            "event_kind": event_kind,
            "effect_id": effect_id,
            **profile.public(),
        },
        "receipt": {
            "schema_version": RECEIPT_SCHEMA,
            "receipt_id": receipt_id,
            "effect_id": effect_id,
            "step_kind": contracts.STEP_KIND,
            "event_kind": event_kind,
            "state": DurableWritebackReceipt.State.PREPARED,
            "state_revision": f"r{todo_row.revision + 1}",
            "committed_at": None,
        },
        "quota_spend": None,
        "hook_phase": {
            "enabled": profile.post_writeback_hooks_enabled,
            "status": "preview",
            "planned": planned,
            "dispatches": [],
            "outcomes": [],
        },
    }


def settle_result(result) -> dict[str, Any]:
    """``loopx_turn_settlement_v0`` of a ``hooks.services.settlement.SettleResult``."""
    preview = result.preview
    if preview is not None:
        return settlement_preview(
            preview.agent,
            preview.todo,
            preview.profile,
            preview.effect_id,
            preview.receipt_id,
            preview.event_kind,
            preview.turn_instance_id,
            preview.planned,
        )
    return settlement(
        result.status,
        result.execute,
        result.settlement,
        result.receipt,
        spend=quota_spend(result.receipt, result.spend, result.eligibility),
        phase=result.phase,
        dispatches=dispatches(result.dispatches),
        recovered=result.recovered,
    )


# -- the sidecar journal and the outbox ------------------------------------------------------
def dispatch(row: HookDispatch, intent_ids: list[str]) -> dict[str, Any]:
    """``loopx_post_writeback_dispatch_receipt_v0``: one journalled dispatch."""
    return {
        "schema_version": contracts.DISPATCH_RECEIPT_SCHEMA,
        "dispatch_id": row.dispatch_id,
        "hook_id": row.hook_id,
        "capability_id": row.capability_id or None,
        "receipt_id": row.receipt.receipt_id,
        "goal_id": row.goal.goal_id,
        "agent_id": row.agent.agent_id,
        "event_kind": row.event_kind,
        "registration_schema_version": row.registration_schema_version,
        "registration_digest": row.registration_digest or None,
        "status": row.status,
        "failure_code": row.failure_code,
        "failure_reason": row.failure_reason or None,
        "result_digest": row.result_digest or None,
        "intent_ids": list(intent_ids),
        "attempts": row.attempts,
        "max_attempts": row.max_attempts,
        "conflict_count": row.conflict_count,
        "conflict_code": row.conflict_code,
        "recorded_at": clock.iso(row.created_at),
    }


def dispatches(rows) -> list[dict[str, Any]]:
    """Dispatch receipts of ``(dispatch, intent_ids)`` pairs, in the given order."""
    return [dispatch(row, intent_ids) for row, intent_ids in rows]


def intent(row: HookIntent) -> dict[str, Any]:
    """The validated ``loopx_post_writeback_intent_v0`` packet plus its outbox state: the
    packet a governed executor is given (``hooks.contracts.executor_packet``), as listed."""
    return contracts.executor_packet(row)


def dispatch_list(page) -> dict[str, Any]:
    """``loopx_post_writeback_dispatch_list_v0`` of a ``selectors.Page`` of pairs."""
    return {
        "schema_version": DISPATCH_LIST_SCHEMA,
        "dispatches": dispatches(page.rows),
        "next_cursor": page.next_cursor,
    }


def intent_list(page) -> dict[str, Any]:
    """``loopx_post_writeback_intent_list_v0`` of a ``selectors.Page`` of intents."""
    return {
        "schema_version": INTENT_LIST_SCHEMA,
        "intents": [intent(i) for i in page.rows],
        "next_cursor": page.next_cursor,
    }


def registration_list(listing) -> dict[str, Any]:
    """``loopx_post_writeback_registration_list_v0`` of ``selectors.registrations``: a
    provider's installation path only where the listing may show it (operators)."""
    rows = []
    for hook, admitted in listing.hooks:
        row = {**hook.public(), "admitted_by_profile": admitted}
        if not listing.show_provider:
            row.pop("provider", None)
        rows.append(row)
    return {
        "schema_version": REGISTRATION_LIST_SCHEMA,
        "registry_digest": listing.registry_digest,
        "profile": listing.profile.public(),
        "registrations": rows,
    }


def replay(*, execute: bool, items: list[dict]) -> dict[str, Any]:
    """``loopx_post_writeback_replay_v0``: one item per receipt recovered (or planned)."""
    return {
        "schema_version": REPLAY_SCHEMA,
        "execute": execute,
        "receipts": items,
        "count": len(items),
    }


def replay_item(item) -> dict[str, Any]:
    """One receipt of a replay (a ``hooks.services.replay.ReplayItem``): what its phase
    did and its journal now, or (a preview) what a replay would dispatch."""
    document: dict[str, Any] = {"receipt_id": item.receipt.receipt_id, "reason": item.reason}
    if item.phase is not None:
        document["phase_status"] = item.phase.status
        document["phase_reason"] = item.phase.reason
        document["outcomes"] = [o.public() for o in item.phase.outcomes]
        document["dispatches"] = dispatches(item.dispatches)
    else:
        document["admissible"] = item.admissible
        document["planned_dispatch_ids"] = item.planned_dispatch_ids
    document["intent_states"] = item.intent_states
    return document


def replay_outcome(outcome) -> dict[str, Any]:
    """``loopx_post_writeback_replay_v0`` of a ``hooks.services.replay.ReplayOutcome``."""
    return replay(execute=outcome.execute, items=[replay_item(i) for i in outcome.items])


def intent_execution(
    *, executor, execute: bool, used: int, deferred: int, decisions
) -> dict[str, Any]:
    """``loopx_post_writeback_intent_execution_v0``: what one executor run decided."""
    return {
        "schema_version": EXECUTION_SCHEMA,
        "executor": executor.executor_id,
        "execute": execute,
        "budget": {"max_intents_per_run": executor.max_intents_per_run, "used": used},
        "deferred_by_budget": deferred,
        "decisions": [d.public() for d in decisions],
        "network_calls": 0,
        "sink_calls": 0,
    }


def execution_run(run) -> dict[str, Any]:
    """``loopx_post_writeback_intent_execution_v0`` of a
    ``hooks.services.executor.ExecutionRun``."""
    return intent_execution(
        executor=run.executor,
        execute=run.execute,
        used=run.used,
        deferred=run.deferred,
        decisions=run.decisions,
    )


# -- completion validators --------------------------------------------------------------------
def validator_payload(row: CompletionValidator) -> dict[str, Any]:
    """Public projection: no argv, only the manifest digest."""
    return {
        "validator_id": row.validator_id,
        "version": row.version,
        "description": row.description,
        "protocol": VALIDATOR_PROTOCOL,
        "active": row.active,
        "timeout_seconds": row.timeout_seconds,
        "manifest_digest": row.manifest_digest,
        "installed_by": row.installed_by or None,
        "installed_at": clock.iso(row.installed_at),
        "updated_at": clock.iso(row.updated_at),
    }


def validator_operation(operation, *, execute, changed, row, would_change=None) -> dict[str, Any]:
    document = {
        "ok": True,
        "schema_version": VALIDATOR_OPERATION_SCHEMA,
        "status": "preview" if not execute else ("applied" if changed else "unchanged"),
        "operation": operation,
        "execute": execute,
        "changed": changed,
        "validator": validator_payload(row),
    }
    if would_change is not None:
        document["would_change"] = would_change
    return document


def validator_operation_result(result) -> dict[str, Any]:
    """``loopx_completion_validator_operation_v0`` of a
    ``hooks.services.validators.ValidatorOperation``."""
    return validator_operation(
        result.operation,
        execute=result.execute,
        changed=result.changed,
        row=result.row,
        would_change=result.would_change,
    )


def validator_list(rows) -> dict[str, Any]:
    return {
        "ok": True,
        "schema_version": VALIDATOR_LIST_SCHEMA,
        "validators": [validator_payload(r) for r in rows],
    }
