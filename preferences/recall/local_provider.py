"""The built-in ``loopx-local`` provider and its corpus.

Corpus of a project:

* operator-added ``ProviderNote`` rows (written only through ``save_provider_note`` /
  ``retire_provider_note`` / ``delete_provider_note``, which keep the shared full-text
  index in step in the same transaction);
* when the Reward Memory app offers ``reward_memory.selectors.soft_preference_documents
  (project, goal_id=, agent_id=)`` — dicts ``{ref, summary, surfaces}`` of the active
  reviewed ``soft_preference`` records the calling (Goal, Agent) may read — those
  documents too. They are mirrored into the same full-text namespace at
  recall time (index what changed, remove what left), so ranking is one query.

Ranking is ``loopx_site.engines.fulltext`` (exact BM25 with the English analyzer, the same
on SQLite and PostgreSQL).
A document is eligible when it is active, applies to the surface (no surfaces = every
surface) and, for notes, when every ``context`` key it requires has that value in the
request's context. Text matches come first, best first; documents that explicitly
target the surface but share no word with the query follow, by ref. At most ``limit``
items are returned. ``doctor`` only reads.
"""

import hashlib
import os
from typing import Any

from django.db import DatabaseError, IntegrityError, connection, transaction

from loopx_site.core import access, clock
from loopx_site.core.validation import IDENTIFIER_RE
from loopx_site.engines import fulltext
from preferences.documents import recall as documents
from preferences.models import ProviderNote
from preferences.recall import protocol
from preferences.recall.config import (
    MAX_LIMIT,
    MAX_QUERY_CHARS,
    require_project,
    require_surface_id,
    validate_context,
)
from preferences.recall.errors import SemanticPreferenceError, invalid

EXTENSION_ID = "loopx-local"
NOTES_CORPUS_ID = "loopx_local_provider_notes"
SOFT_CORPUS_ID = "reward_memory_soft_preferences"
#: Where the runner puts the verified project of a run (see ``hook.Scope``).
PROJECT_ENV = "LOOPX_RECALL_PROJECT"
NOTE_REF_PREFIX = "loopx-local:note:"
MAX_SUMMARY_CHARS = 2000
MAX_BODY_CHARS = 8000
MAX_NOTE_SURFACES = 32
CANDIDATES = 200
MAX_REQUEST_BYTES = 64 * 1024


def namespace(project: str) -> str:
    """The full-text namespace of one project's corpus."""
    return "preferences.loopx_local:" + hashlib.sha256(project.encode("utf-8")).hexdigest()[:40]


def note_ref(note_id: str) -> str:
    return NOTE_REF_PREFIX + note_id


def _index_ref_of_note(note_id: str) -> str:
    return "note:" + note_id


def _index_ref_of_document(ref: str) -> str:
    return "soft:" + hashlib.sha256(ref.encode("utf-8")).hexdigest()[:40]


# -- the notes corpus (writes) ----------------------------------------------------------


def validate_note(
    project: Any, note_id: Any, summary: Any, body: Any, surfaces: Any, context: Any
) -> tuple[str, str, str, str, list[str], dict[str, str]]:
    project = require_project(project)
    if not isinstance(note_id, str) or not IDENTIFIER_RE.fullmatch(note_id):
        raise invalid("invalid_argument", "note_id", f"note_id must match {IDENTIFIER_RE.pattern}.")
    if (
        not isinstance(summary, str)
        or not 1 <= len(summary) <= MAX_SUMMARY_CHARS
        or "\x00" in summary
    ):
        raise invalid(
            "invalid_argument", "summary", f"summary must be 1-{MAX_SUMMARY_CHARS} characters."
        )
    if not isinstance(body, str) or len(body) > MAX_BODY_CHARS or "\x00" in body:
        raise invalid("invalid_argument", "body", f"body must be at most {MAX_BODY_CHARS} chars.")
    if not isinstance(surfaces, list | tuple) or len(surfaces) > MAX_NOTE_SURFACES:
        raise invalid(
            "invalid_argument", "surfaces", f"surfaces must list at most {MAX_NOTE_SURFACES} ids."
        )
    surfaces = sorted({require_surface_id(s, "surfaces") for s in surfaces})
    try:
        context = validate_context(context or {})
    except SemanticPreferenceError as exc:
        raise invalid("invalid_argument", "context", exc.message) from None
    return project, note_id, summary, body, surfaces, context


def save_provider_note(
    *,
    project: str,
    note_id: str,
    summary: str,
    body: str = "",
    surfaces: list[str] | tuple[str, ...] = (),
    context: dict[str, str] | None = None,
    active: bool = True,
) -> dict[str, Any]:
    """Create or update one note and its full-text entry (idempotent, row-locked).

    ``status`` is ``created``, ``updated`` or ``unchanged`` (same values: nothing written).
    """
    project, note_id, summary, body, surfaces, context = validate_note(
        project, note_id, summary, body, surfaces, context
    )
    values = {
        "summary": summary,
        "body": body,
        "surfaces": surfaces,
        "context": context,
        "active": bool(active),
    }
    for _attempt in range(2):
        try:
            with transaction.atomic():
                row = (
                    ProviderNote.objects.select_for_update()
                    .filter(project=project, note_id=note_id)
                    .first()
                )
                now = clock.now()
                if row is None:
                    with transaction.atomic():
                        row = ProviderNote.objects.create(
                            project=project,
                            note_id=note_id,
                            created_at=now,
                            updated_at=now,
                            **values,
                        )
                    status = "created"
                elif all(getattr(row, k) == v for k, v in values.items()):
                    return _note_result("unchanged", row)
                else:
                    for key, value in values.items():
                        setattr(row, key, value)
                    row.updated_at = now
                    row.save()
                    status = "updated"
                _sync_note_index(row)
                return _note_result(status, row)
        except IntegrityError:
            continue  # created concurrently: the second pass updates it
    raise SemanticPreferenceError(
        "operation_conflict", "Concurrent writes to this note did not settle."
    )


def retire_provider_note(*, project: str, note_id: str, operator: access.Caller) -> dict[str, Any]:
    """Deactivate a note (kept for the operator, removed from the index); idempotent. The
    operator's shell, or an account holding ``preferences.change_providernote``."""
    access.require_operator_permission(
        operator, "preferences.change_providernote", error=SemanticPreferenceError
    )
    with transaction.atomic():
        row = (
            ProviderNote.objects.select_for_update()
            .filter(project=project, note_id=note_id)
            .first()
        )
        if row is None:
            raise SemanticPreferenceError(
                "note_not_found", "No such provider note.", field="note_id"
            )
        if not row.active:
            return _note_result("unchanged", row)
        row.active = False
        row.updated_at = clock.now()
        row.save(update_fields=["active", "updated_at"])
        _sync_note_index(row)
    return _note_result("retired", row)


def delete_provider_note(*, project: str, note_id: str) -> None:
    """Delete a note and its index entry (the admin's delete goes through here)."""
    with transaction.atomic():
        ProviderNote.objects.filter(project=project, note_id=note_id).delete()
        fulltext.remove(namespace(project), _index_ref_of_note(note_id))


def reindex_project(*, project: str, execute: bool = False) -> dict[str, Any]:
    """Rebuild one project's note entries in the index (preview unless ``execute``)."""
    project = require_project(project)
    ns = namespace(project)
    notes = list(ProviderNote.objects.filter(project=project, active=True))
    wanted = {_index_ref_of_note(n.note_id) for n in notes}
    from loopx_site.core.models import SearchDocument

    present = set(
        SearchDocument.objects.filter(namespace=ns, ref__startswith="note:").values_list(
            "ref", flat=True
        )
    )
    stale = sorted(present - wanted)
    if execute:
        with transaction.atomic():
            for note in notes:
                _sync_note_index(note)
            for ref in stale:
                fulltext.remove(ns, ref)
    return documents.reindex(execute=execute, indexed=len(notes), removed=len(stale))


def _sync_note_index(row: ProviderNote) -> None:
    ns = namespace(row.project)
    ref = _index_ref_of_note(row.note_id)
    if row.active:
        fulltext.index(ns, ref, f"{row.summary}\n{row.body}".strip())
    else:
        fulltext.remove(ns, ref)


def _note_result(status: str, row: ProviderNote) -> dict[str, Any]:
    return documents.provider_note(
        status,
        {
            "project": row.project,
            "note_id": row.note_id,
            "preference_ref": note_ref(row.note_id),
            "active": row.active,
            "surfaces": row.surfaces,
            "context_keys": sorted(row.context),
            "updated_at": clock.iso(row.updated_at),
        },
    )


# -- reward-memory soft preferences (optional) ------------------------------------------


def soft_preference_source():
    """The reviewed soft preferences this provider also ranks: the first source an app
    registered in ``contributions.SOFT_PREFERENCE_SOURCES`` (Reward Memory's privacy
    selector, registered in its ``AppConfig.ready()``), or ``None`` when none is — so this
    app imports no other."""
    from loopx_site.core import contributions

    for _key, source in contributions.SOFT_PREFERENCE_SOURCES:
        return source
    return None


class SoftSourceFailed(Exception):
    """The Reward Memory source exists but cannot be read (e.g. not migrated yet)."""


def _read_soft_source(source, project: str) -> list[dict[str, Any]]:
    """Read through Reward Memory's privacy selector in the caller's (Goal, Agent) scope,
    which the server's provider runner sets from the verified request scope
    (``LOOPX_RECALL_GOAL_ID`` / ``LOOPX_RECALL_AGENT_ID``). No Goal → no documents."""
    scope = {
        "goal_id": os.environ.get("LOOPX_RECALL_GOAL_ID") or None,
        "agent_id": os.environ.get("LOOPX_RECALL_AGENT_ID") or None,
    }
    try:
        if not connection.in_atomic_block:  # autocommit: a failed read breaks nothing
            return list(source(project, **scope) or [])
        with transaction.atomic():  # a savepoint keeps the caller's transaction usable
            return list(source(project, **scope) or [])
    except DatabaseError as exc:
        raise SoftSourceFailed from exc


def _soft_documents(project: str) -> dict[str, dict[str, Any]] | None:
    """The soft-preference documents keyed by index ref; ``None`` when the source is
    absent or failing — then the corpus is left out of the ranking and the inventory
    (``doctor`` reports a failing source as unhealthy)."""
    source = soft_preference_source()
    if source is None:
        return None
    try:
        rows = _read_soft_source(source, project)
    except SoftSourceFailed:
        return None
    documents = {}
    for doc in rows:
        ref, summary = doc.get("ref"), doc.get("summary")
        if not isinstance(ref, str) or not ref or not isinstance(summary, str) or not summary:
            continue
        surfaces = [s for s in (doc.get("surfaces") or []) if isinstance(s, str)]
        documents[_index_ref_of_document(ref)] = {
            "ref": ref,
            "summary": summary[:MAX_SUMMARY_CHARS],
            "surfaces": surfaces,
        }
    return documents


def _mirror_soft_documents(project: str, documents: dict[str, dict[str, Any]]) -> None:
    from loopx_site.core.models import SearchDocument

    ns = namespace(project)
    present = dict(
        SearchDocument.objects.filter(namespace=ns, ref__startswith="soft:").values_list(
            "ref", "body"
        )
    )
    changed = {k: d for k, d in documents.items() if present.get(k) != d["summary"]}
    stale = [k for k in present if k not in documents]
    if not changed and not stale:
        return
    try:
        with transaction.atomic():
            for key, doc in changed.items():
                fulltext.index(ns, key, doc["summary"])
            for key in stale:
                fulltext.remove(ns, key)
    except IntegrityError:
        pass  # a concurrent recall mirrored the same documents


# -- the provider protocol ---------------------------------------------------------------


def parse_request(data: bytes, *, project: str | None) -> dict[str, Any]:
    """Validate a ``semantic_preference_provider_request_v0`` (``invalid_argument``).

    The request carries no project: it is the runner's verified ``LOOPX_RECALL_PROJECT``
    or the operator's ``--project`` (``project``).
    """
    import json

    if len(data) > MAX_REQUEST_BYTES:
        raise invalid("invalid_argument", "request", "The request is too large.")
    try:
        request = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise invalid("invalid_argument", "request", "The request is not UTF-8 JSON.") from None
    if not isinstance(request, dict) or request.get("schema_version") != protocol.REQUEST_SCHEMA:
        raise invalid(
            "invalid_argument", "request", f"Expected one {protocol.REQUEST_SCHEMA} object."
        )
    surface = require_surface_id(request.get("surface"), "surface")
    query = request.get("query")
    if not isinstance(query, str) or not 1 <= len(query) <= MAX_QUERY_CHARS:
        raise invalid("invalid_argument", "query", "query must be 1-500 characters.")
    limit = request.get("limit")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise invalid("invalid_argument", "limit", f"limit must be 1-{MAX_LIMIT}.")
    return {
        "surface": surface,
        "query": query,
        "limit": limit,
        "context": validate_context(request.get("context") or {}),
        "project": require_project(project),
    }


def _applies(surfaces: list[str], surface: str) -> bool:
    return not surfaces or surface in surfaces


def recall_response(
    *, surface: str, query: str, limit: int, context: dict[str, str], project: str
) -> dict[str, Any]:
    """Rank the project's corpus for one request; a ``…_provider_response_v0`` object."""
    ns = namespace(project)
    soft = _soft_documents(project)
    if soft is not None:
        _mirror_soft_documents(project, soft)
    notes = {
        _index_ref_of_note(n.note_id): n
        for n in ProviderNote.objects.filter(project=project, active=True)
    }

    def eligible(key: str) -> dict[str, str] | None:
        note = notes.get(key)
        if note is not None:
            if not _applies(note.surfaces, surface):
                return None
            if any(context.get(k) != v for k, v in (note.context or {}).items()):
                return None
            return {"preference_ref": note_ref(note.note_id), "summary": note.summary}
        doc = (soft or {}).get(key)
        if doc is not None and _applies(doc["surfaces"], surface):
            return {"preference_ref": doc["ref"], "summary": doc["summary"]}
        return None

    items: list[dict[str, str]] = []
    seen: set[str] = set()
    for hit in fulltext.search(ns, query, limit=CANDIDATES):
        item = eligible(hit.ref)
        if item is not None and hit.ref not in seen:
            seen.add(hit.ref)
            items.append(item)
        if len(items) >= limit:
            break
    if len(items) < limit:
        targeted = sorted(
            k for k, n in notes.items() if surface in (n.surfaces or []) and k not in seen
        ) + sorted(k for k, d in (soft or {}).items() if surface in d["surfaces"] and k not in seen)
        for key in targeted:
            item = eligible(key)
            if item is not None:
                items.append(item)
            if len(items) >= limit:
                break
    return protocol.response_document(items, inventory(project, with_soft=soft is not None))


def inventory(project: str, *, with_soft: bool) -> list[dict[str, Any]]:
    """The corpora this provider reads for a project, and what closes their maintenance
    (LoopX's inventory vocabulary)."""
    entries = [
        {
            "corpus_id": NOTES_CORPUS_ID,
            "scope_ref": f"loopx-local:project:{project}",
            "read_role": "primary",
            "write_mode": "provider_managed",
            "write_actor_ref": "loopx-local:operator",
            "source_of_truth": "operator_provider_notes",
            "writeback_triggers": ["explicit_feedback", "source_truth_changed"],
            "closure_policy": "write_wait_l2_read_scoped_recall",
        }
    ]
    if with_soft:
        entries.append(
            {
                "corpus_id": SOFT_CORPUS_ID,
                "scope_ref": f"reward-memory:project:{project}",
                "read_role": "reference",
                "write_mode": "provider_managed",
                "write_actor_ref": "reward-memory:reviewer",
                "source_of_truth": "reviewed_reward_memory_records",
                "writeback_triggers": ["explicit_feedback"],
                "closure_policy": "write_wait_l2_read_scoped_recall",
            }
        )
    return entries


def doctor_report(*, project: str | None = None) -> dict[str, Any]:
    """A read-only health report: the index answers, and (for a project) the notes and
    their index entries agree. ``healthy`` is false when they do not."""
    from loopx_site.core.models import SearchDocument

    fulltext.search(namespace(project or "doctor"), "doctor probe", limit=1)
    source = soft_preference_source()
    source_state = "absent"
    if source is not None:
        source_state = "ok"
        try:
            _read_soft_source(source, project or "doctor")
        except SoftSourceFailed:
            source_state = "failing"
    report = protocol.provider_doctor_document(
        extension_id=EXTENSION_ID,
        healthy=source_state != "failing",
        soft_preference_source=source_state,
    )
    if project is not None:
        project = require_project(project)
        active = ProviderNote.objects.filter(project=project, active=True).count()
        indexed = SearchDocument.objects.filter(
            namespace=namespace(project), ref__startswith="note:"
        ).count()
        report.update(active_notes=active, indexed_notes=indexed)
        report["healthy"] = report["healthy"] and active == indexed
    return report


def project_from_env(environ) -> str | None:
    """The verified project the runner handed over (``None`` outside a provider run)."""
    value = environ.get(PROJECT_ENV)
    return value or None
