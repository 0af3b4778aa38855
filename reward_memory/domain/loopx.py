"""LoopX's Reward Memory input documents, mapped onto ours (pure field mapping).

A LoopX host sends ``ingest-event`` a wrapper ``{"event", "adapter"?, "observed_at"?}``
(with ``--goal-id/--agent-id``) or a full public packet that also carries LoopX's own
``corpus`` / ``standing_policy`` / ``provider_binding`` (no-write evaluation). Its
``scoped_feedback_reward_memory_event_v0`` uses LoopX's field names (``feedback_ref``,
``project_ref``, ``surface_id``, ``source.source_kind``, ``reasoning``,
``guard_context``); they are mapped onto our compact event of the same schema.

What is *not* carried over: the packet's corpus, standing policy and provider binding
(ours are the registered, operator-owned ones; only ``corpus.corpus_id`` selects one)
and any authority — LoopX derives a hard_policy checkpoint from its standing policy,
here a hard_policy still needs an operator-granted checkpoint.
"""

import re
from typing import Any

from loopx_site.core import clock
from reward_memory import contracts as c
from reward_memory.domain import validation as v
from reward_memory.errors import invalid

ROUTE_FIELDS = ("adapter", "event", "observed_at")
PACKET_FIELDS = (*ROUTE_FIELDS, "corpus", "standing_policy", "provider_binding")
LOOPX_ISSUE_FIX_EVENT_SCHEMA = "issue_fix_reward_memory_event_v0"
LOOPX_EVENT_FIELDS = {
    "schema_version", "feedback_ref", "workspace_ref", "project_ref", "surface_id",
    "revision_ref", "target_class", "content_summary", "source", "reasoning",
    "guard_context", "requested_action_scopes", "raw_content_captured",
}  # fmt: skip
LOOPX_ISSUE_FIX_FIELDS = (LOOPX_EVENT_FIELDS - {"feedback_ref", "project_ref"}) | {
    "issue_ref",
    "repository_ref",
}
# LoopX event schema → the adapter id a wrapper may name
LOOPX_ADAPTERS = {
    c.SCOPED_FEEDBACK_EVENT_SCHEMA: "scoped_feedback",
    LOOPX_ISSUE_FIX_EVENT_SCHEMA: "issue_fix_maintainer_feedback",
}
LOOPX_SOURCE_FIELDS = {"source_kind", "source_ref", "actor_ref", "actor_role"}
LOOPX_REASONING_FIELDS = {"summary", "confidence"}
LOOPX_GUARD_FIELDS = {"source_freshness", "conflict_state", "current_artifact_verified"}


_SAFE_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


def _names(keys) -> list[str]:
    """Unexpected keys as they may be echoed: plain identifiers only (a key that looks
    like a path or a secret is never repeated back)."""
    return sorted(str(k) if _SAFE_KEY.fullmatch(str(k)) else "<unnamed>" for k in keys)


def _strict(value: Any, label: str, allowed: set[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise invalid(label, f"{label} must be an object")
    unexpected = _names(k for k in value if k not in allowed)
    if unexpected:
        raise invalid(
            f"{label}.{unexpected[0]}",
            f"{label} contains unsupported fields: {', '.join(unexpected)}",
        )
    return value


def is_loopx_event(event: Any) -> bool:
    if not isinstance(event, dict):
        return False
    if event.get("schema_version") == LOOPX_ISSUE_FIX_EVENT_SCHEMA:
        return True
    return event.get("schema_version") == c.SCOPED_FEEDBACK_EVENT_SCHEMA and (
        "feedback_ref" in event or "surface_id" in event
    )


def from_loopx_event(event: dict[str, Any], *, corpus_id: str, observed_at: Any) -> dict:
    """LoopX's scoped feedback event → our ``scoped_feedback_reward_memory_event_v0``;
    LoopX's ``issue_fix_reward_memory_event_v0`` → our Issue Fix adapter input."""
    if event.get("schema_version") == LOOPX_ISSUE_FIX_EVENT_SCHEMA:
        scoped = _scoped(
            {
                **{k: val for k, val in event.items() if k not in ("issue_ref", "repository_ref")},
                **c.instance(c.SCOPED_FEEDBACK_EVENT_SCHEMA),
                **_renamed(event, {"issue_ref": "feedback_ref", "repository_ref": "project_ref"}),
            },
            corpus_id=corpus_id,
            observed_at=observed_at,
            fields=LOOPX_ISSUE_FIX_FIELDS,
            label_event=event,
        )
        return _issue_fix_input(scoped)
    return _scoped(event, corpus_id=corpus_id, observed_at=observed_at)


def _renamed(event: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    return {new: event[old] for old, new in names.items() if old in event}


def _issue_fix_input(scoped: dict[str, Any]) -> dict[str, Any]:
    source, scope = scoped["source"], scoped["scope"]
    document = c.instance(
        c.ISSUE_FIX_ADAPTER_SCHEMA,
        event_id=scoped["event_id"],
        corpus_id=scoped["corpus_id"],
        target_class=scoped["target_class"],
        issue_ref=scoped["event_id"],
        workspace=scope.get("workspace"),
        repository=scope.get("project"),
        repository_revision=scope.get("repository_revision"),
        current_revision="newer" if scoped["freshness"] else scope.get("repository_revision"),
        surface=scope.get("surface"),
        feedback_kind=source["kind"],
        contributor={
            "actor": source["actor"],
            "role": source["actor_role"],
            "evidence_ref": source["evidence_ref"],
            "observed_at": source["observed_at"],
        },
        content_summary=scoped["content_summary"],
        reasoning_summary=scoped["reasoning_summary"],
        confidence=scoped["confidence"],
        requested_action_scopes=scoped["requested_action_scopes"],
        conflicts=scoped["conflicts"],
    )
    return {k: val for k, val in document.items() if val is not None}


def _scoped(
    event: dict[str, Any],
    *,
    corpus_id: str,
    observed_at: Any,
    fields: set[str] = LOOPX_EVENT_FIELDS,
    label_event: dict[str, Any] | None = None,
) -> dict:
    _strict(label_event if label_event is not None else event, "event", fields)
    raw = event
    source = _strict(raw.get("source"), "event.source", LOOPX_SOURCE_FIELDS)
    reasoning = _strict(raw.get("reasoning"), "event.reasoning", LOOPX_REASONING_FIELDS)
    guard = _strict(raw.get("guard_context"), "event.guard_context", LOOPX_GUARD_FIELDS)
    if raw.get("raw_content_captured") is not False:
        raise invalid("event.raw_content_captured", "raw content is never captured (false)")
    if observed_at is None:
        raise invalid("observed_at", "a LoopX event needs the immutable observed_at")
    v.timestamp(observed_at, "observed_at")
    stale = guard.get("source_freshness") != "current"
    return c.instance(
        c.SCOPED_FEEDBACK_EVENT_SCHEMA,
        event_id=raw.get("feedback_ref"),
        corpus_id=corpus_id,
        target_class=raw.get("target_class"),
        source={
            "kind": source.get("source_kind"),
            "actor": source.get("actor_ref"),
            "actor_role": source.get("actor_role"),
            "evidence_ref": source.get("source_ref"),
            "observed_at": observed_at,
        },
        scope={
            k: val
            for k, val in {
                "workspace": raw.get("workspace_ref"),
                "project": raw.get("project_ref"),
                "surface": raw.get("surface_id"),
                "repository_revision": raw.get("revision_ref"),
            }.items()
            if val is not None
        },
        freshness=({"source_revision": "observed", "current_revision": "newer"} if stale else {}),
        content_summary=raw.get("content_summary"),
        reasoning_summary=reasoning.get("summary"),
        confidence={
            "level": reasoning.get("confidence"),
            "basis": "the reasoning confidence of the LoopX event",
        },
        requested_action_scopes=raw.get("requested_action_scopes") or [],
        conflicts=[] if guard.get("conflict_state") == "clear" else ["conflict:unresolved"],
    )


def unwrap(document: dict[str, Any], *, routed: bool, route_corpus_id=None) -> dict[str, Any]:
    """The compact event inside LoopX's wrapper (or the document itself).

    ``routed``: the caller named a Goal/Agent (then only ``adapter``, ``event`` and
    ``observed_at`` are allowed); otherwise LoopX's full packet fields are accepted too.
    ``route_corpus_id(surface)`` selects the registered corpus of a LoopX event.
    """
    if "event" not in document or "schema_version" in document:
        return document
    allowed = ROUTE_FIELDS if routed else PACKET_FIELDS
    unexpected = _names(k for k in document if k not in allowed)
    if unexpected:
        raise invalid(
            unexpected[0], "ingest input contains unsupported fields: " + ", ".join(unexpected)
        )
    event = document["event"]
    if not isinstance(event, dict):
        raise invalid("event", "event must be an object")
    adapter = document.get("adapter")
    version = event.get("schema_version")
    known = LOOPX_ADAPTERS.get(version) if is_loopx_event(event) else c.ADAPTERS.get(version)
    if adapter is not None and known != adapter:
        raise invalid(
            "adapter", "adapter is unsupported; semantic routing is intentionally not inferred"
        )
    if document.get("observed_at") is not None:
        v.timestamp(document["observed_at"], "observed_at")
    if not is_loopx_event(event):
        return event
    corpus = document.get("corpus")
    corpus_id = corpus.get("corpus_id") if isinstance(corpus, dict) else None
    if corpus_id is None and route_corpus_id is not None:
        corpus_id = route_corpus_id(event.get("surface_id"))
    if not isinstance(corpus_id, str):
        raise invalid("corpus", "no registered corpus routes this event's surface")
    return from_loopx_event(event, corpus_id=corpus_id, observed_at=document.get("observed_at"))


# -- LoopX's recall request packet ------------------------------------------------------------
def is_loopx_packet(document: Any) -> bool:
    """LoopX builds ``reward_memory_recall_request_v0`` as a packet with ``corpus``,
    ``request`` and ``read_authority_checkpoint`` objects (ours is flat)."""
    return (
        isinstance(document, dict)
        and document.get("schema_version") == c.RECALL_REQUEST_SCHEMA
        and isinstance(document.get("request"), dict)
        and isinstance(document.get("corpus"), dict)
    )


def utc_z(value: Any) -> Any:
    """LoopX writes timestamps in the RFC 3339 offset form (``2026-07-16T00:30:00+00:00``);
    ours is UTC ``…Z``. An offset timestamp is rewritten to ours for the same instant;
    anything else is passed on unchanged for the guard to judge (``freshness_stale``)."""
    if not isinstance(value, str) or value.endswith(("Z", "z")):
        return value
    try:
        return clock.iso(clock.parse_rfc3339(value))
    except ValueError:
        return value


def packet_corpus_id(document: dict[str, Any]) -> Any:
    return document["corpus"].get("corpus_id")


def from_loopx_packet(
    document: dict[str, Any], *, goal_id: Any, agent_id: Any, corpus: Any
) -> dict[str, Any]:
    """Map LoopX's packet onto our request. The Goal/Agent come from the caller's
    verified scope (token or command flags), never from the packet; the packet's own
    ``guard`` verdict is ignored (we guard again). LoopX has no corpus revision or
    binding digest: those of ``corpus`` (the registered row the packet names, or
    ``None``) are used, every other guard still applies."""
    inner = document["request"]
    checkpoint = document.get("read_authority_checkpoint")
    checkpoint = checkpoint if isinstance(checkpoint, dict) else {}
    queries = inner.get("queries")
    return c.recall_request(
        goal_id=goal_id,
        agent_id=agent_id,
        corpus_id=packet_corpus_id(document),
        project=inner.get("project_ref"),
        surface=inner.get("surface_id"),
        mode=inner.get("mode"),
        queries=[q.get("query") if isinstance(q, dict) else q for q in queries]
        if isinstance(queries, list)
        else queries,
        limit=inner.get("limit", 4),
        read_authority={
            "checkpoint_ref": checkpoint.get("source_ref"),
            "verified": checkpoint.get("verified"),
            "corpus_id": checkpoint.get("corpus_id"),
            "project": checkpoint.get("project_ref"),
            "surface": checkpoint.get("surface_id"),
        },
        observed_at=utc_z(inner.get("observed_at")),
        corpus_revision=corpus.revision if corpus else None,
        conflicts=[] if inner.get("conflict_state") == "clear" else ["conflict_state"],
        provider_binding_ref=corpus.provider_binding_ref if corpus else None,
    )
