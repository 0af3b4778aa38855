"""The registry's documents (Goals, registrations, host tokens, the demo run), built
here once from service and selector results for the CLI and the API alike; the
encoding (``loopx_site.core.encoding``) makes the same document the same bytes on both.

``error_document`` is the error envelope every adapter prints (``DomainError.envelope``)."""

from typing import Any

from loopx_site.core import clock

GOAL_LIST_SCHEMA = "loopx_goal_list_v0"
GOAL_REGISTRATION_SCHEMA = "loopx_goal_registration_v0"
HOST_TOKEN_SCHEMA = "loopx_host_token_v0"  # noqa: S105 - a schema name, not a secret
DEMO_SCHEMA = "loopx_demo_v0"
RETENTION_SCHEMA = "loopx_retention_v0"
GOAL_ERASURE_SCHEMA = "loopx_goal_erasure_v0"


def goal(row) -> dict[str, Any]:
    """The one output shape of a Goal (CLI and API)."""
    return {
        "goal_id": row.goal_id,
        "state_ref": row.state_ref or None,
        "instance_id": row.instance_id or None,
        "agents": sorted(a.agent_id for a in row.agents.all()),
        "created_at": clock.iso(row.created_at),
        "updated_at": clock.iso(row.updated_at),
    }


def goal_list(rows) -> dict[str, Any]:
    """``loopx_goal_list_v0`` (``goal list`` and ``GET /goals/``)."""
    return {"schema_version": GOAL_LIST_SCHEMA, "goals": [goal(g) for g in rows]}


def goal_registration(result) -> dict[str, Any]:
    """``loopx_goal_registration_v0``: a registration (``services.GoalRegistration``) or
    its preview, which shows the Goal as it would be."""
    if result.goal is not None and (result.executed or not result.created):
        shown = goal(result.goal)
        if not result.executed:  # show the Goal as it would be
            shown["agents"] = sorted(set(shown["agents"]) | set(result.added_agents))
            for name, change in result.changes.items():
                shown[name] = change["to"]
    else:
        shown = {
            "goal_id": result.goal_id,
            "state_ref": result.state_ref or None,
            "instance_id": result.instance_id or None,
            "agents": result.agent_ids,
            "created_at": None,
            "updated_at": None,
        }
    return {
        "schema_version": GOAL_REGISTRATION_SCHEMA,
        "status": result.status,
        "execute": result.executed,
        "created": result.created,
        "added_agents": result.added_agents,
        "changes": result.changes,
        "warnings": result.warnings,
        "goal": shown,
    }


def host_token(result) -> dict[str, Any]:
    """``loopx_host_token_v0`` of ``services.issue_token``: the preview, or the issued
    token with its secret (shown this once; only its sha256 is stored)."""
    scope = {"goal_id": result.goal_id, "agent_id": result.agent_id, "label": result.label}
    if result.issued is None:
        return {
            "schema_version": HOST_TOKEN_SCHEMA,
            "status": "preview",
            "execute": False,
            **scope,
            "note": "Preview only: nothing written. Add --execute to issue the token.",
        }
    return {
        "schema_version": HOST_TOKEN_SCHEMA,
        "status": "issued",
        "execute": True,
        "token": result.issued.secret,
        "prefix": result.issued.token.prefix,
        **scope,
        "created_at": clock.iso(result.issued.token.created_at),
        "note": "Shown once; only its sha256 is stored. Send as 'Authorization: Bearer …'.",
    }


def demo(*, loaded: dict | None, operator: dict | None) -> dict[str, Any]:
    """``loopx_demo_v0``: what each demo loader created or kept, and the operator
    account (its password only when it was just set)."""
    document: dict[str, Any] = {"schema_version": DEMO_SCHEMA}
    if loaded is not None:
        document["loaded"] = loaded
    if operator is not None:
        document["operator"] = operator
    return document


def retention(report: dict[str, Any]) -> dict[str, Any]:
    """``loopx_retention_v0``: per policy its days, cutoff and rows removed (or, in a
    preview, that would be) per table."""
    return {"schema_version": RETENTION_SCHEMA, **report}


def goal_erasure(result: dict[str, Any]) -> dict[str, Any]:
    """``loopx_goal_erasure_v0``: what an erasure removed (or, in a preview, would remove)
    per table, and the provider deletes it queued by state. Identifiers and counts only."""
    removed = result["removed"]
    return {
        "schema_version": GOAL_ERASURE_SCHEMA,
        "status": result["status"],
        "goal_id": result["goal_id"],
        "agent_id": result["agent_id"],
        "erased_at": result["erased_at"],
        "removed": removed,
        "total_rows": sum(removed.values()),
        "provider_deletes": result["provider_deletes"],
        "contributors": result["contributors"],
    }


def error_document(err) -> dict[str, Any]:
    """LoopX's error document for a ``DomainError``: ``error`` is the one-line message;
    our ``code``, ``field`` and ``details`` sit beside it as extra top-level fields, then
    the error's ``extra`` fields (e.g. ``current`` on a conflict)."""
    document: dict[str, Any] = {
        "ok": False,
        "schema_version": f"{err.area}_error_v0",
        "status": err.wire_status,
        "error": err.message,
        "code": err.code,
        "field": err.field,
        "details": err.details,
    }
    document.update(err.extra)
    return document
