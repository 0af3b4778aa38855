"""Every call from turn recall into another app, one small function each.

Other apps change in parallel (the preference documents, Reward Memory authority and
privacy selectors); keeping each dependency behind exactly one function here lets that
change be absorbed in one place. Nothing here writes except ``reconcile_ingests``, which
calls Reward Memory's own service.
"""

from dataclasses import dataclass, field
from typing import Any

from django.db import DatabaseError, connection, transaction

from loopx_site.core.errors import DomainError
from loopx_site.core.models import Agent, Goal
from turn_recall import contracts as c
from turn_recall import documents


# -- preferences: the participating turn-start hook ----------------------------------------
@dataclass(frozen=True)
class PreferenceObservation:
    """What the preference store said for one exact scope.

    ``participating`` is False for a scope that never committed (the hook adds nothing).
    ``error_code`` is set when the store could not be read; ``view`` is the current
    ``agent_preferences_v1``-shaped view otherwise.
    """

    participating: bool
    error_code: str | None = None
    view: dict[str, Any] | None = None
    observation_count: int = 0


def _isolated(fn):
    """Run a read so that its failure cannot poison the caller's transaction: inside a
    transaction it gets a savepoint; in autocommit (the usual case) it runs as is — no
    read-only transaction is opened (on SQLite that would take the write lock)."""
    if connection.in_atomic_block:
        with transaction.atomic():
            result = fn()
            if isinstance(result, dict) and result.get("status") == "unavailable":
                # the read failed and was reported, not raised: on PostgreSQL the failed
                # statement aborted the transaction, so roll back to the savepoint rather
                # than release it (a release would fail and hide the read's own error)
                transaction.set_rollback(True)
            return result
    return fn()


def _view_from_projection(projection: dict[str, Any]) -> dict[str, Any]:
    """Normalise the preference app's turn-start projection into LoopX's current view."""
    current = projection.get("current")
    if isinstance(current, dict):  # already an ``agent_preferences_v1`` view
        items = [
            {k: v for k, v in item.items() if k != "source_quote"}  # bodies, not quotes
            for item in current.get("items") or []
        ]
        return {**current, "items": items}
    items = [
        {"key": i["key"], "state": "active", "statement": i.get("statement")}
        for i in (current or [])
    ]
    items += [
        {"key": m["key"], "state": m.get("state"), "statement": None}
        for m in projection.get("markers") or []
    ]
    instructions = projection.get("instructions")
    if isinstance(instructions, list):
        instructions = " ".join(instructions)
    revision = projection.get("revision")
    return documents.preference_view(
        revision=None if revision is None else str(revision),
        items=items,
        instructions=instructions or "",
    )


def observe_preferences(goal: Goal, agent: Agent) -> PreferenceObservation:
    """The preference app's current turn-start view of this exact (Goal, Agent)."""
    from preferences import selectors as pref
    from preferences import services as pref_services

    try:
        projection = _isolated(lambda: pref_services.turn_start_projection(goal, agent))
    except (DatabaseError, DomainError) as exc:  # e.g. the savepoint around the read
        return PreferenceObservation(True, pref.unavailable_code(exc))
    if projection is None or projection.get("status") == "absent":
        return PreferenceObservation(False)
    if projection.get("status") == "unavailable":
        return PreferenceObservation(True, projection.get("error_code") or pref.UNREADABLE)
    view = _view_from_projection(projection)
    return PreferenceObservation(True, None, view, len(view["items"]))


# -- reward memory: the execution switch, reconciliation, recall ---------------------------
def turn_admission_binding(
    goal_id: str, agent_id: str, *, viewer: tuple[str, str | None] | None = None
) -> dict[str, str] | None:
    """The default-off switch: this Agent's verified Reward Memory experiment route with
    the turn-admission surface configured (``{"corpus_id", "project"}`` of the surface's
    first compatible corpus), or ``None``. Never a provider call. A corpus the caller's
    own read scope (``viewer``) may not read counts as not registered."""
    from reward_memory.domain.privacy import visible_to
    from reward_memory.models import Corpus
    from reward_memory.services import routes as rm

    surface = rm.experiment_route(goal_id, agent_id, surface=c.SURFACE).surface(c.SURFACE)
    if surface is None or not surface.corpus_ids:
        return None
    corpus_id = surface.corpus_ids[0]
    corpus = Corpus.objects.filter(corpus_id=corpus_id, active=True).first()
    if corpus is None or not visible_to(corpus, viewer):
        return None
    return {"corpus_id": corpus_id, "project": corpus.project}


def experiment_status(goal_id: str, agent_id: str) -> dict[str, Any]:
    """Reward Memory's ``reward_memory_experiment_status_v1`` for this Agent (read-only),
    which LoopX's ``disabled`` document carries as ``experiment``."""
    from reward_memory import services as rm
    from reward_memory.documents import experiments as rm_documents

    return rm_documents.status(rm.experiment_status(goal_id=goal_id, agent_id=agent_id))


#: The experiment-status fields LoopX's quota projects into
#: ``goal_boundary.capabilities.reward_memory`` (``control_plane/quota/goal_boundary``).
QUOTA_REWARD_MEMORY_FIELDS = (
    "enabled",
    "experimental",
    "config_pointer_registered",
    "automatic_ingest",
    "automatic_recall",
    "fail_open",
    "reason_code",
    "enablement_receipt_status",
    "writability_verified",
    "exact_readback_verified",
    "config_schema_version",
    "config_runtime_route",
)


def quota_reward_memory(goal_id: str, agent_id: str) -> dict[str, Any] | None:
    """What ``quota should-run`` says about this Agent's Reward Memory experiment
    (read-only), as LoopX does: only for an enabled experiment configured for the Agent,
    its status and ``config_runtime_route`` (``reward_memory_config_runtime_route_v0``)."""
    status = experiment_status(goal_id, agent_id)
    if not (status.get("enabled") and status.get("configured_for_agent")):
        return None
    return {
        "experiment_status": status.get("status"),
        "experiment_available": status.get("available") is True,
        **{k: status[k] for k in QUOTA_REWARD_MEMORY_FIELDS if k in status},
    }


def reconcile_ingests(goal_id: str, agent_id: str) -> dict[str, Any]:
    """Retry this exact Goal+Agent's pending ambiguous ingests; counts only, fail-open."""
    from reward_memory import services as rm

    try:
        summary = rm.reconcile_pending_ingests(goal_id=goal_id, agent_id=agent_id)
    except DomainError as exc:
        if exc.code in ("goal_not_registered", "agent_not_registered"):
            raise
        return {"status": "failed", "error_code": exc.code}
    except DatabaseError:
        return {"status": "failed", "error_code": "database_unavailable"}
    except Exception:  # reconciliation is best effort: it never blocks the turn
        return {"status": "failed", "error_code": "application_error"}
    keys = ("attempted", "activated", "still_pending", "blocked")
    return {"status": "reconciled", **{k: getattr(summary, k) for k in keys}}


@dataclass
class Recalled:
    status: str  # ok | empty | guard_blocked | provider_unavailable
    guidance: list[dict[str, Any]] = field(default_factory=list)
    provider_calls: int = 0
    reason_codes: list[str] = field(default_factory=list)
    nothing_relevant: bool = False  # empty: no memory clears the relevance floor


def recall(
    *,
    goal_id: str,
    agent_id: str,
    corpus_id: str,
    query: str,
    request_id: str,
    viewer: tuple[str, str | None] | None = None,
) -> Recalled:
    """One function-boundary Reward Memory recall for the turn-admission surface, read
    as ``viewer`` (the caller's own scope; ``None``: operator or in-process)."""
    from reward_memory import services as rm
    from reward_memory.documents import recall as recall_documents

    got = rm.recall_guidance(
        goal_id=goal_id,
        agent_id=agent_id,
        corpus_id=corpus_id,
        surface=c.SURFACE,
        query=query,
        limit=c.MAX_GUIDANCE,
        request_id=request_id,
        viewer=viewer,
    )
    items = [recall_documents.private_item(record) for record in got.records]
    guidance = [
        {
            "candidate_ref": i["candidate_ref"],
            "memory_ref": i["memory_ref"],
            "target_class": i["memory_class"],
            "content_summary": i["summary"],
            "applicability_note": i.get("applicability_note"),
            "expires_at": i.get("expires_at"),
        }
        for i in items
    ]
    reasons = [r.code for r in got.reasons]
    return Recalled(
        got.status,
        guidance,
        got.provider_calls,
        [r for r in reasons if r],
        nothing_relevant=got.nothing_relevant,
    )


def replay_guidance(
    *, goal_id: str, agent_id: str, corpus_id: str, guidance: list[dict[str, Any]], now
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """A stored turn's guidance re-read now: the items whose record Reward Memory's
    readable-records selector still returns for this (Goal, Agent), in stored order, and
    the ``replay_dropped`` counts (by reason) of the others. Never writes."""
    from reward_memory import selectors as rm
    from reward_memory.models import Corpus

    corpus = Corpus.objects.filter(corpus_id=corpus_id).first() if corpus_id else None
    refs = [item.get("memory_ref") for item in guidance]
    kept, dropped = rm.replay_readable(
        [r for r in refs if isinstance(r, str)],
        goal_id=goal_id,
        agent_id=agent_id,
        corpus=corpus,
        now=now,
    )
    keep = set(kept)
    items = [item for item in guidance if item.get("memory_ref") in keep]
    unknown = sum(1 for r in refs if not isinstance(r, str))
    if unknown:  # an item without a record ref cannot be re-checked: it is not served
        dropped["by_reason"]["missing"] += unknown
        dropped["count"] += unknown
    return items, dropped
