"""Every document Agent Turn Recall emits — the one response layer of
``manage.py agent_turn_recall`` / ``quota`` / ``turn run-once`` and
``/api/v1/turn-recall/`` / ``…/quota/should-run/`` alike.

Services, selectors and rule modules compute; this module turns their results into
the documents a LoopX host parses (``loopx_wire.md``; names in ``contracts``):

* ``turn_recall`` — ``agent_turn_recall_v0`` of a ``services.TurnRecall`` (every status:
  ``disabled`` and ``recall``; errors get ``error_fields``);
* ``situation`` — ``agent_turn_situation_v0`` (material fields only; the fingerprint
  and recall id are added by ``situation.build``);
* ``quota_decision`` — ``loopx_quota_decision_v0``;
* ``hook_result`` / ``dispatch`` — the turn-start hook documents;
* ``capsule_body`` — the unsigned ``loopx_turn_capsule_v0``;
  ``capsule_verification`` — ``loopx_turn_capsule_verification_v0``;
* ``admission`` — ``quota should-run`` of a ``services.Admission`` (the packet, with
  ``admitted`` its recall beside it);
* ``host_packet`` — ``loopx_turn_host_packet_v0`` of a ``services.HostTurn``;
* ``preference_view`` — the ``agent_preferences_v1`` view carried as hook context;
* ``demo_reflection`` — the demo's ``turn_reward_memory_reflection_v0``.
"""

from typing import Any

from turn_recall import contracts as c


# -- agent_turn_recall_v0 ------------------------------------------------------------------
def error_fields(goal_id: str | None = None, agent_id: str | None = None) -> dict[str, Any]:
    """LoopX's document fields every ``agent_turn_recall`` error carries beside the
    envelope (the requested ``goal_id``/``agent_id`` among them), so a host parsing
    ``agent_turn_recall_v0`` reads the failure too."""
    ids = {"goal_id": goal_id, "agent_id": agent_id}
    return {
        "schema_version": c.RECALL_SCHEMA,
        **{k: v for k, v in ids.items() if isinstance(v, str)},
        "provider_call_count": 0,
        **c.ERROR_BOUNDARY,
    }


def disabled(goal_id: str, agent_id: str, *, experiment: dict[str, Any]) -> dict[str, Any]:
    """``disabled`` exactly as LoopX prints it: the experiment's status beside it, no
    situation (the packet is not read while the surface is off), zero provider calls."""
    return {
        "ok": True,
        "schema_version": c.RECALL_SCHEMA,
        "status": c.DISABLED,
        "reason_code": None,
        "goal_id": goal_id,
        "agent_id": agent_id,
        "experiment": experiment,
        "provider_call_count": 0,
        **c.ERROR_BOUNDARY,
    }


def turn_recall(result) -> dict[str, Any]:
    """``agent_turn_recall_v0`` of a ``services.TurnRecall``: each status's own fields
    after the common ones, in the order LoopX prints them."""
    if result.status == c.DISABLED:
        return disabled(result.goal_id, result.agent_id, experiment=result.experiment)
    extra: dict[str, Any] = {
        "reason_code": result.reason_code,
        "provider_call_count": result.provider_call_count,
        "same_turn_receipt_reused": result.status == c.REPLAYED,
    }
    if result.recall_reason_codes is not None:  # the provider answered
        extra["recall_reason_codes"] = result.recall_reason_codes
    if result.reconciliation is not None:  # a fresh execution
        extra["outcome_ingest_reconciliation"] = result.reconciliation
    if result.status == c.REPLAYED:
        extra["source_status"] = result.source_status
        extra["replay_dropped"] = result.replay_dropped
    extra["query_evidence"] = result.query_evidence
    if result.receipt_written is not None:
        extra["same_turn_receipt_written"] = result.receipt_written
    if result.status == c.PREVIEW:
        extra["execute_required_for_recall"] = True
    return recall(
        result.status,
        result.situation,
        guidance=result.guidance,
        preferences=result.preferences,
        **extra,
    )


def recall(status: str, sit: dict, **extra: Any) -> dict[str, Any]:
    """``agent_turn_recall_v0`` for one status; ``extra`` adds the status's own fields
    (``guidance`` and ``preferences`` go into the private ``context``)."""
    guidance = extra.pop("guidance", [])
    preferences = extra.pop("preferences", None)
    context = None
    if status != c.DISABLED:
        context = {"schema_version": c.CONTEXT_SCHEMA, "situation": sit, "guidance": guidance}
        if preferences is not None:
            context["preferences"] = preferences
    doc = {
        "ok": True,
        "schema_version": c.RECALL_SCHEMA,
        "status": status,
        "reason_code": None,
        "goal_id": sit["goal_id"],
        "agent_id": sit["agent_id"],
        "surface_id": c.SURFACE,
        "turn_recall_id": sit["turn_recall_id"],
        "situation_fingerprint": sit["situation_fingerprint"],
        "situation": sit,
        "context": context,
        "provider_call_count": 0,
        "same_turn_receipt_reused": False,
        **c.BOUNDARY,
    }
    doc.update(extra)
    return doc


def situation(
    *,
    goal_id: str,
    agent_id: str,
    project: str | None,
    selected_todo: dict,
    phase: str | None,
    recent_outcomes: list[str],
    next_intent: str | None,
    session_ref: str | None = None,
) -> dict[str, Any]:
    """The material fields of ``agent_turn_situation_v0`` (what the fingerprint covers;
    ``session_ref`` only when the host names one, as LoopX)."""
    doc = {
        "schema_version": c.SITUATION_SCHEMA,
        "goal_id": goal_id,
        "agent_id": agent_id,
        "project": project,
        "selected_todo": selected_todo,
        "phase": phase,
        "recent_outcomes": recent_outcomes,
        "next_intent": next_intent,
        "user_prompt_included": False,
    }
    if session_ref is not None:
        doc["session_ref"] = session_ref
    return doc


# -- loopx_quota_decision_v0 ----------------------------------------------------------------
def quota_decision(
    *,
    goal_id: str,
    agent_id: str,
    project: str | None,
    selected: dict | None,
    phase: str,
    recent_outcomes: list[str],
    open_todos: int,
    pending_hook_intents: int,
    spent_units: int,
    observed_at: str,
    reward_memory: dict[str, Any] | None,
    turn_instance_id: str | None = None,
) -> dict[str, Any]:
    decision = "run" if selected is not None else "idle"
    doc = {
        "ok": True,
        "schema_version": c.QUOTA_SCHEMA,
        "mode": c.QUOTA_MODE,
        "status": decision,
        "goal_id": goal_id,
        "agent_id": agent_id,
        "agent_identity": {"goal_id": goal_id, "agent_id": agent_id},
        "project": project,
        "decision": decision,
        "should_run": selected is not None,
        "lifecycle_phase": phase,
        "selected_todo": selected,
        "recent_outcomes": recent_outcomes,
        "next_intent": (
            f"Complete Todo {selected['todo_id']} and settle it with turn settle."
            if selected is not None
            else "No open Todo: wait for new work."
        ),
        "interaction_state": {
            "user_prompt_included": False,
            "user_gate": False,
            "open_todos": open_todos,
            "pending_hook_intents": pending_hook_intents,
        },
        "quota": {"spent_units": spent_units, "basis": "primary_durable_writeback_receipt"},
        "goal_boundary": {"capabilities": {"reward_memory": reward_memory}}
        if reward_memory is not None
        else {},
        "status_health_ok": True,
        "observed_at": observed_at,
    }
    if turn_instance_id is not None:
        doc["turn_instance_id"] = turn_instance_id
    return doc


def admission(result) -> dict[str, Any]:
    """``quota should-run`` of a ``services.Admission``: the read-only packet, or an
    executing admission's (``admitted``)."""
    if result.recall is None:
        return result.packet
    return admitted(result.packet, turn_recall(result.recall))


def admitted(packet: dict[str, Any], recall_document: dict[str, Any]) -> dict[str, Any]:
    """The packet of an executing quota admission: the turn-start hooks already ran
    into it; the turn's ``agent_turn_recall_v0`` rides beside them under LoopX's name
    ``reward_memory_recall``."""
    return {**packet, "execute": True, "reward_memory_recall": recall_document}


# -- turn-start hooks ------------------------------------------------------------------------
def hook_result(
    hook_id: str, capability_id: str, status: str, count: int, code: str | None
) -> dict[str, Any]:
    """``loopx_turn_start_capability_hook_result_v0``."""
    return {
        "schema_version": c.TURN_START_RESULT_SCHEMA,
        "hook_id": hook_id,
        "capability_id": capability_id,
        "phase": "turn_start",
        "status": status,
        "observation_count": count,
        "agent_read_required": status == c.OBSERVED,
        "external_reads_performed": False,
        "external_writes_performed": False,
        "local_private_state_mutated": False,
        "private_content_returned": False,
        "provider_payload_returned": False,
        "error_code": code,
    }


def dispatch(
    *,
    registered_count: int,
    results: list[dict],
    required_reads: list[dict],
    failures: list[dict],
    contexts: list[dict],
) -> dict[str, Any]:
    """``loopx_turn_start_capability_hook_dispatch_v0`` (before trimming)."""
    return {
        "schema_version": c.TURN_START_DISPATCH_SCHEMA,
        "phase": "turn_start",
        "registered_count": registered_count,
        "invoked_count": len(results),
        "results": results,
        "required_reads": required_reads,
        "failures": failures,
        "contexts": contexts,
        "trimmed_hook_ids": [],
    }


def preference_view(
    *, revision: str | None, items: list[dict], instructions: str
) -> dict[str, Any]:
    """The ``agent_preferences_v1`` view a preference hook context carries."""
    return {
        "schema_version": c.PREFERENCES_VIEW_SCHEMA,
        "revision": revision,
        "authority": "advisory_only",
        "items": items,
        "instructions": instructions,
    }


# -- the Turn capsule ------------------------------------------------------------------------
def capsule_body(
    *, goal_id: str, agent_id: str, issued_at: str, expires_at: str, failures: list[dict]
) -> dict[str, Any]:
    """The unsigned ``loopx_turn_capsule_v0`` (``capsule.sign`` adds ``signature``)."""
    return {
        "schema_version": c.CAPSULE_SCHEMA,
        "goal_id": goal_id,
        "agent_id": agent_id,
        "issued_at": issued_at,
        "expires_at": expires_at,
        "observations": [
            {
                "hook_id": f["hook_id"],
                "capability_id": f.get("capability_id"),
                "status": f["status"],
                "error_code": f.get("error_code"),
                "read_command": f.get("read_command"),
                "invalidates_cached_context": True,
                "held_actions": f.get("held_actions"),
            }
            for f in failures
        ],
        "independent_work": "keeps_existing_permissions",
        "grants_capability_permissions": False,
        "retry_failed_providers": False,
    }


def capsule_verification(
    *, goal_id: str, agent_id: str, reason: str | None, capsule_goal_id: Any = None,
    capsule_agent_id: Any = None, expires_at: Any = None,
) -> dict[str, Any]:  # fmt: skip
    """``loopx_turn_capsule_verification_v0``: ``valid`` / ``invalid`` with a reason;
    never the key, the expected signature or the capsule's observations."""
    valid = reason is None
    return {
        "ok": True,
        "schema_version": c.CAPSULE_VERIFICATION_SCHEMA,
        "status": c.CAPSULE_VALID if valid else c.CAPSULE_INVALID,
        "valid": valid,
        "reason": reason,
        "goal_id": goal_id,
        "agent_id": agent_id,
        "capsule_goal_id": capsule_goal_id if isinstance(capsule_goal_id, str) else None,
        "capsule_agent_id": capsule_agent_id if isinstance(capsule_agent_id, str) else None,
        "expires_at": expires_at if isinstance(expires_at, str) else None,
        "algorithm": c.CAPSULE_ALGORITHM,
        "key_revealed": False,
    }


# -- loopx_turn_host_packet_v0 ---------------------------------------------------------------
def host_packet(turn) -> dict[str, Any]:
    """``loopx_turn_host_packet_v0`` of a ``services.HostTurn``: the packet, the turn's
    recall and, when the turn should run, the task body written for the host."""
    packet = turn.packet
    recall_document = turn_recall(turn.recall)
    body = _task_body(packet, recall_document) if packet["should_run"] else None
    hooks = packet.get("turn_start_hooks") or {}
    return {
        "ok": True,
        "schema_version": c.HOST_PACKET_SCHEMA,
        "status": "ready" if packet["should_run"] else "idle",
        "execute": turn.execute,
        "goal_id": turn.goal_id,
        "agent_id": turn.agent_id,
        "turn_instance_id": turn.turn_instance_id,
        "task": (
            {"todo_id": packet["selected_todo"]["todo_id"], "body": body}
            if packet["should_run"]
            else None
        ),
        "required_reads": hooks.get("required_reads", []),
        "turn_capsule": packet.get("turn_capsule"),
        "quota_decision": packet,
        "agent_turn_recall": recall_document,
        **c.BOUNDARY,
    }


def _task_body(packet: dict, recall: dict) -> str | None:
    """The task a host hands its Agent: the Todo, the recalled guidance, the owner's
    preferences, the reads to run first and a note when turn-start context is missing."""
    todo = packet.get("selected_todo")
    if not todo:
        return None
    lines = [f"Todo {todo['todo_id']}: {todo['title']}"]
    if todo.get("target_key"):
        lines.append(f"Target: {todo['target_key']}")
    lines.append(f"Phase: {packet['lifecycle_phase']}")
    lines.append(f"Next intent: {packet['next_intent']}")
    guidance = (recall.get("context") or {}).get("guidance") or []
    if guidance:
        lines += ["", "Recalled guidance (private, advisory; grants no authority):"]
        for item in guidance:
            note = f" ({item['applicability_note']})" if item.get("applicability_note") else ""
            lines.append(f"- [{item['target_class']}] {item['content_summary']}{note}")
    hooks = packet.get("turn_start_hooks") or {}
    for ctx in hooks.get("contexts") or []:
        current = ctx.get("current") or {}
        items = current.get("items") or []
        lines += ["", "Owner preferences for this Agent (advisory; re-read before acting on one):"]
        for item in items:
            if item.get("state") == "active":
                lines.append(f"- {item['key']}: {item['statement']}")
            else:
                lines.append(f"- {item['key']}: {item.get('state')} (do not act on cached advice)")
        if current.get("instructions"):
            lines.append(current["instructions"])
    reads = hooks.get("required_reads") or []
    pending = [r for r in reads if not r.get("satisfied_by_delivered_context")]
    if pending:
        lines += ["", "Run before work:"]
        lines += [f"- {r['command']}" for r in pending]
    if packet.get("turn_capsule"):
        lines += [
            "",
            "Some turn-start context is missing (see turn_capsule): hold only the actions "
            "that depend on it; independent work keeps its existing permissions.",
        ]
    return "\n".join(lines)


# -- demo --------------------------------------------------------------------------------------
def demo_reflection() -> dict[str, Any]:
    """The demo settlement's ``turn_reward_memory_reflection_v0`` (``turn_recall.demo``)."""
    return {
        "schema_version": "turn_reward_memory_reflection_v0",
        "surface_id": "issue_fix.pr_description",
        "source_types": ["real", "engineering"],
        "evidence_refs": ["validation:demo-turn-reflect-1/tests", "pr:loopx-demo#3"],
        "event": {
            "schema_version": "scoped_feedback_reward_memory_event_v0",
            "event_id": "reflection-0001",
            "target_class": "soft_preference",
            "source": {
                "kind": "maintainer_feedback",
                "actor": "user:demo-maintainer",
                "actor_role": "maintainer",
                "evidence_ref": "feedback:loopx-demo/pr-description/0003",
                "observed_at": "2025-06-03T10:00:00Z",
            },
            "scope": {
                "workspace": "loopx",
                "project": "loopx-demo",
                "surface": "issue_fix.pr_description",
            },
            "content_summary": "Name the validation command and its result in the PR body.",
            "reasoning_summary": "The settled turn's reviewer asked where the test run was.",
            "confidence": {"level": "medium", "basis": "one maintainer comment, one turn"},
            "requested_action_scopes": [],
            "conflicts": [],
        },
    }
