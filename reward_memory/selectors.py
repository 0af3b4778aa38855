"""Reads of Reward Memory (never write); ``reward_memory.documents`` renders them.

Public payloads never carry a provider scope ref, a resource ref, a query text or an
evidence quote: providers appear as ``provider_id`` + ``binding_ref`` (a digest).
"""

from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import Count, Q

from loopx_site.core import clock
from loopx_site.core.access import visible_or_not_found
from loopx_site.core.models import Agent, Goal
from reward_memory import contracts as c
from reward_memory import models, providers
from reward_memory.domain import authority, candidates, guards, privacy
from reward_memory.errors import RewardMemoryError
from reward_memory.models import (
    ApplicationReceipt,
    AuthorityCheckpoint,
    Corpus,
    CorpusRoleBinding,
    IngestEvent,
    LineageClosure,
    LocalProviderDocument,
    MemoryRecord,
    PendingIngest,
    RecallReceipt,
    Review,
    StandingPolicy,
)

CORPUS_NOT_FOUND = "No corpus with that id is registered."


# -- corpora ------------------------------------------------------------------------------
Viewer = privacy.Viewer


def list_corpora(*, goal_id: str | None = None, agent_id: str | None = None) -> list[Corpus]:
    """All corpora (``goal_id=None``: operator), or those the Goal/Agent may read."""
    corpora = list(Corpus.objects.prefetch_related("policies").order_by("corpus_id"))
    if goal_id is None:
        return corpora
    return [corpus for corpus in corpora if privacy.may_read_corpus(corpus, goal_id, agent_id)]


def _corpus_not_found() -> RewardMemoryError:
    return RewardMemoryError("corpus_not_found", CORPUS_NOT_FOUND, field="corpus_id")


def active_corpora() -> list[Corpus]:
    """Every active corpus, by id."""
    return list(Corpus.objects.filter(active=True).order_by("corpus_id"))


def get_corpus(corpus_id: str, *, viewer: Viewer = None) -> Corpus:
    """The corpus, as seen by ``viewer`` (``(goal_id, agent_id)``; ``None``: operator).
    A corpus the viewer may not read is reported exactly like a missing one."""
    return visible_or_not_found(
        Corpus.objects.filter(corpus_id=corpus_id).first(),
        lambda corpus: privacy.visible_to(corpus, viewer),
        _corpus_not_found,
    )


def readable_records(
    *,
    goal_id: str | None,
    agent_id: str | None,
    memory_class: str | None = None,
    project: str | None = None,
    corpus: Corpus | None = None,
    surface: str | None = None,
    now=None,
):
    """Records a (Goal, Agent) may read: corpus active and readable by it
    (``may_read_corpus``), record active and unexpired with a verified exact readback,
    and — for hard_policy — derived from a live operator checkpoint. No Goal → nothing."""
    if not goal_id:
        return MemoryRecord.objects.none()
    now = now or clock.now()
    corpora = Corpus.objects.filter(active=True)
    if corpus is not None:
        corpora = corpora.filter(pk=corpus.pk)
    if project is not None:
        corpora = corpora.filter(project=project)
    allowed = [c_.pk for c_ in corpora if privacy.may_read_corpus(c_, goal_id, agent_id)]
    rows = MemoryRecord.objects.filter(
        corpus_id__in=allowed, lifecycle_state=c.ACTIVE, readback_verified_at__isnull=False
    ).filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
    if memory_class is not None:
        rows = rows.filter(memory_class=memory_class)
    if project is not None:
        rows = rows.filter(project=project)
    if surface is not None:
        rows = rows.filter(surface=surface)
    return rows.exclude(
        Q(memory_class=c.HARD_POLICY)
        & (
            Q(authority_checkpoint__isnull=True)
            | Q(authority_checkpoint__revoked_at__isnull=False)
            | Q(authority_checkpoint__expires_at__lte=now)
        )
    )


#: The record columns a recall result renders (``documents.recall``: public lineage and
#: private items); every other column is deferred.
RESULT_COLUMNS = (
    "id",
    "record_ref",
    "candidate_ref",
    "memory_class",
    "surface",
    "summary",
    "content_digest",
    "activation_basis",
    "policy_digest",
    "review_id",
    "confidence_level",
    "authority",
    "lifecycle_state",
    "expires_at",
    "provider_resource_ref",
    "provider_ref_digest",
)


def _converters(fields, alias: str) -> list:
    """``(index, column, converters)`` of the columns the ORM would convert on load (the
    backend's and the field's: datetimes, JSON); worked out once per backend and column
    list (they depend on nothing else)."""
    key = (connection.vendor, alias, tuple(fields))
    known = _CONVERTERS.get(key)
    if known is None:
        known = _CONVERTERS[key] = _converters_of(fields, alias)
    return known


_CONVERTERS: dict[tuple, list] = {}


def _converters_of(fields, alias: str) -> list:
    out = []
    for i, f in enumerate(fields):
        col = f.get_col(alias)
        convert = connection.ops.get_db_converters(col) + f.get_db_converters(connection)
        if convert:
            out.append((i, col, convert))
    return out


def _converted(converters, row) -> list:
    values = list(row)
    for i, col, convert in converters:
        for one in convert:
            values[i] = one(values[i], col, connection)
    return values


@dataclass(frozen=True)
class RecallContext:
    """What a recall reads before its guards, in one statement (``recall_context``)."""

    agent_pk: int | None  # None: no such (Goal, Agent) is registered
    goal_pk: int | None
    corpus: Corpus | None  # None: no corpus with that id
    replay: bool  # a receipt with this recall id exists (an earlier identical recall)


def recall_context(goal_id: str, agent_id: str, corpus_id: str, recall_id: str) -> RecallContext:
    """The acting Agent's and its Goal's ids, the named corpus (every column) and whether
    the recall id already has a receipt: one plain statement of unique-index lookups, as
    every recall starts with it (three statements were three round trips)."""
    fields = list(Corpus._meta.concrete_fields)
    qn = connection.ops.quote_name
    sql = (
        f"SELECT a.id, a.goal_id, {', '.join('co.' + qn(f.column) for f in fields)}, "  # noqa: S608 - quoted model names
        f"(SELECT 1 FROM {qn(RecallReceipt._meta.db_table)} WHERE recall_id = %s) "
        "FROM (SELECT 1 AS one) k "
        f"LEFT JOIN {qn(Goal._meta.db_table)} g ON g.goal_id = %s "
        f"LEFT JOIN {qn(Agent._meta.db_table)} a ON a.goal_id = g.id AND a.agent_id = %s "
        f"LEFT JOIN {qn(Corpus._meta.db_table)} co ON co.corpus_id = %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [recall_id, goal_id, agent_id, corpus_id])
        row = cursor.fetchone()
    corpus = None
    if row[2] is not None:
        values = _converted(_converters(fields, "co"), row[2:-1])
        corpus = Corpus.from_db(connection.alias, [f.attname for f in fields], values)
    return RecallContext(row[0], row[1], corpus, row[-1] is not None)


def stored_recall(recall_id: str) -> RecallReceipt | None:
    """The receipt of an earlier recall with this id (a replay), or ``None``."""
    return RecallReceipt.objects.filter(recall_id=recall_id).first()


@dataclass(frozen=True)
class RecallRow:
    """The record behind one provider hit as the recall's filter reads it;
    ``record()`` builds the model with the result columns (``RESULT_COLUMNS``,
    ``review.review_id`` and ``readable``), only for the rows a recall returns."""

    surface: str
    lifecycle_state: str
    expired: bool  # active past ``expires_at`` (``expires_at <= now``)
    readable: bool  # ``readable_records`` for this (Goal, Agent) includes it now
    content_digest: str
    values: tuple  # the raw ``RESULT_COLUMNS`` columns, then ``review.review_id``

    def record(self) -> MemoryRecord:
        shape = _recall_shape()
        values = _converted(shape.converters, self.values[:-1])
        record = MemoryRecord.from_db(connection.alias, shape.names, values)
        review = None
        if self.values[-1] is not None:
            review = Review.from_db(
                connection.alias, ["id", "review_id"], [record.review_id, self.values[-1]]
            )
        MemoryRecord.review.field.set_cached_value(record, review)
        record.readable = self.readable
        return record


@dataclass(frozen=True)
class _RecallShape:
    fields: list
    names: list[str]
    converters: list
    at: dict[str, int]  # attname → index among the record columns


_RECALL_SHAPES: dict[str, _RecallShape] = {}


def _recall_shape() -> _RecallShape:
    """The record columns ``recall_read`` selects and how they load, worked out once per
    backend (every recall builds a few records from them)."""
    shape = _RECALL_SHAPES.get(connection.vendor)
    if shape is None:
        fields = [f for f in MemoryRecord._meta.concrete_fields if f.attname in RESULT_COLUMNS]
        names = [f.attname for f in fields]
        shape = _RECALL_SHAPES[connection.vendor] = _RecallShape(
            fields, names, _converters(fields, "r"), {n: i for i, n in enumerate(names)}
        )
    return shape


def recall_read(
    resource_refs: list[str],
    *,
    goal_id: str | None,
    agent_id: str | None,
    corpus: Corpus,
    now,
    documents_of: str | None = None,
) -> tuple[dict[str, RecallRow], dict[str, str]]:
    """``(rows, contents)``: ``provider ref → RecallRow`` of ``corpus``'s records behind
    these refs (a ref without a record of this corpus has no row). ``readable`` is
    ``readable_records``' rule as one SQL expression of the same row (its corpus part
    is ``may_read_corpus`` of the corpus this request already read).

    ``documents_of`` (the ``local`` provider's scope key): the refs are read from that
    provider's own rows in the same statement — ``contents`` holds the exact stored text
    of the recallable documents among them (what ``LocalProvider.recall`` returns), and
    only those refs have rows — so the provider's read and the record read are one round
    trip. Without it ``contents`` is empty.

    One plain statement, because every recall runs it;
    ``tests/reward_memory/test_recall_rows.py`` holds ``readable`` and ``expired`` equal
    to ``readable_records`` and ``expires_at`` over every lifecycle state, expiry and
    checkpoint state, in both forms."""
    if not resource_refs:
        return {}, {}
    shape = _recall_shape()
    stamp = connection.ops.adapt_datetimefield_value(now)
    readable, readable_params = _readable_column(corpus, goal_id, agent_id, stamp)
    source, source_params = _recall_source(corpus, resource_refs, documents_of)
    qn = connection.ops.quote_name
    columns = (
        "CASE WHEN r.expires_at IS NOT NULL AND r.expires_at <= %s THEN 1 ELSE 0 END, "
        f"{readable}, {', '.join(f'r.{qn(f.column)}' for f in shape.fields)}, v.{qn('review_id')}"
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT " + source.format(columns=columns), [stamp, *readable_params, *source_params]
        )
        return _recall_rows_of(cursor.fetchall(), shape)


def _readable_column(corpus: Corpus, goal_id, agent_id, stamp) -> tuple[str, list]:
    """``readable_records``' rule as one SQL expression of a record row (and its
    parameters): ``0`` when the corpus itself is inactive or not readable by the caller
    (``privacy.may_read_corpus``)."""
    if not (goal_id and corpus.active and privacy.may_read_corpus(corpus, goal_id, agent_id)):
        return "0", []
    readable = (
        "CASE WHEN r.lifecycle_state = %s AND r.readback_verified_at IS NOT NULL "
        "AND (r.expires_at IS NULL OR r.expires_at > %s) "
        "AND NOT (r.memory_class = %s AND (ac.id IS NULL OR ac.revoked_at IS NOT NULL "
        "OR (ac.expires_at IS NOT NULL AND ac.expires_at <= %s))) THEN 1 ELSE 0 END"
    )
    return readable, [c.ACTIVE, stamp, c.HARD_POLICY, stamp]


def _recall_source(corpus: Corpus, resource_refs, documents_of) -> tuple[str, list]:
    """The ``FROM`` of ``recall_read`` (``{columns}`` left to fill) and its parameters:
    the corpus's records behind the refs, or — with ``documents_of`` — the ``local``
    provider's recallable documents with their records."""
    qn = connection.ops.quote_name
    records = qn(MemoryRecord._meta.db_table)
    joins = (
        f"LEFT JOIN {qn(Review._meta.db_table)} v ON v.id = r.review_id "
        f"LEFT JOIN {qn(AuthorityCheckpoint._meta.db_table)} ac "
        "ON ac.id = r.authority_checkpoint_id "
    )
    marks = ", ".join(["%s"] * len(resource_refs))
    if documents_of is None:
        source = (
            "r.provider_resource_ref, NULL, "
            f"{{columns}} FROM {records} r {joins}"
            f"WHERE r.corpus_id = %s AND r.provider_resource_ref IN ({marks})"
        )
        return source, [corpus.pk, *resource_refs]
    source = (
        "d.resource_ref, d.content, "
        f"{{columns}} FROM {qn(LocalProviderDocument._meta.db_table)} d "
        f"LEFT JOIN {records} r "
        f"ON r.corpus_id = %s AND r.provider_resource_ref = d.resource_ref {joins}"
        f"WHERE d.scope_key = %s AND d.recallable = %s AND d.resource_ref IN ({marks})"
    )
    return source, [corpus.pk, documents_of, True, *resource_refs]


def _recall_rows_of(fetched, shape: "_RecallShape") -> tuple[dict[str, RecallRow], dict[str, str]]:
    """``(rows, contents)`` of ``recall_read``'s fetched rows."""
    surface, state, digest = (
        4 + shape.at[name] for name in ("surface", "lifecycle_state", "content_digest")
    )
    rows, contents = {}, {}
    for row in fetched:
        if row[1] is not None:
            contents[row[0]] = row[1]
        if row[surface] is not None:  # else a provider document without a record here
            rows[row[0]] = RecallRow(
                surface=row[surface],
                lifecycle_state=row[state],
                expired=bool(row[2]),
                readable=bool(row[3]),
                content_digest=row[digest],
                values=row[4:],
            )
    return rows, contents


def recall_rows(
    resource_refs: list[str], *, goal_id: str | None, agent_id: str | None, corpus: Corpus, now
) -> dict[str, MemoryRecord]:
    """The records of ``corpus`` behind these provider refs, with just the result columns
    (``RESULT_COLUMNS``, and ``review.review_id``) and ``readable``: whether
    ``readable_records`` for this (Goal, Agent) includes the record now
    (``recall_read``'s rows, built)."""
    rows, _ = recall_read(resource_refs, goal_id=goal_id, agent_id=agent_id, corpus=corpus, now=now)
    return {ref: row.record() for ref, row in rows.items()}


#: Why a stored answer's record no longer passes ``readable_records`` (replays count them):
#: its lifecycle state, ``expired`` (active past ``expires_at``), ``authority_not_live``
#: (a hard_policy whose checkpoint was revoked or expired), ``not_readable`` (the corpus
#: is inactive or no longer readable by the caller, or the record is not read back) and
#: ``missing`` (no such record).
REPLAY_DROP_REASONS = (
    c.RETIRED,
    c.REVOKED,
    c.SUPERSEDED,
    c.EXPIRED,
    c.REFUTED,
    c.QUARANTINED,
    c.STALE,
    "authority_not_live",
    "not_readable",
    "missing",
)


def _drop_reason(record: MemoryRecord | None, now) -> str:
    if record is None:
        return "missing"
    state = record.lifecycle_state
    if state != c.ACTIVE:
        return state if state in REPLAY_DROP_REASONS else "not_readable"
    if record.expires_at is not None and record.expires_at <= now:
        return c.EXPIRED
    if record.memory_class == c.HARD_POLICY:
        checkpoint = record.authority_checkpoint
        if (
            checkpoint is None
            or checkpoint.revoked_at is not None
            or (checkpoint.expires_at is not None and checkpoint.expires_at <= now)
        ):
            return "authority_not_live"
    return "not_readable"


def replay_dropped(counts: dict[str, int] | None = None) -> dict[str, Any]:
    """The ``replay_dropped`` field: ``{"count": n, "by_reason": {reason: n, …}}``
    (every reason of ``REPLAY_DROP_REASONS``, zeros included)."""
    by_reason = {reason: int((counts or {}).get(reason, 0)) for reason in REPLAY_DROP_REASONS}
    return {"count": sum(by_reason.values()), "by_reason": by_reason}


def replay_readable(
    record_refs,
    *,
    goal_id: str | None,
    agent_id: str | None,
    corpus: Corpus | None = None,
    now=None,
) -> tuple[list[str], dict[str, Any]]:
    """The one filter every replay applies to the records of a stored answer.

    Returns the refs (in their stored order) that a fresh read would still return —
    ``readable_records`` for this (Goal, Agent), now — and the ``replay_dropped``
    counts of the others, by reason. Never writes."""
    refs = list(dict.fromkeys(r for r in record_refs if isinstance(r, str)))
    now = now or clock.now()
    if not refs:
        return [], replay_dropped()
    readable = set(
        readable_records(goal_id=goal_id, agent_id=agent_id, corpus=corpus, now=now)
        .filter(record_ref__in=refs)
        .values_list("record_ref", flat=True)
    )
    rows = {
        r.record_ref: r
        for r in MemoryRecord.objects.select_related("authority_checkpoint").filter(
            record_ref__in=[ref for ref in refs if ref not in readable]
        )
    }
    kept, counts = [], {}
    for ref in refs:
        if ref in readable:
            kept.append(ref)
            continue
        reason = _drop_reason(rows.get(ref), now)
        counts[reason] = counts.get(reason, 0) + 1
    return kept, replay_dropped(counts)


def record_present_state(
    record: MemoryRecord | None, *, goal_id: str | None, agent_id: str | None, now=None
) -> tuple[str, bool]:
    """``(state, available_for_recall)`` of a record as a fresh read sees it now: the
    state is ``active`` only when ``readable_records`` returns it for this (Goal, Agent);
    otherwise the ``REPLAY_DROP_REASONS`` entry that keeps it out."""
    now = now or clock.now()
    if record is None:
        return "missing", False
    if (
        readable_records(goal_id=goal_id, agent_id=agent_id, corpus=record.corpus, now=now)
        .filter(pk=record.pk)
        .exists()
    ):
        return c.ACTIVE, True
    record = (
        MemoryRecord.objects.select_related("authority_checkpoint").filter(pk=record.pk).first()
    )
    return _drop_reason(record, now), False


# -- authority -------------------------------------------------------------------------------
def holds_bound_role(corpus: Corpus, role: str, token_id: int | None) -> bool:
    """Whether a live ``CorpusRoleBinding`` binds the (unrevoked) host token ``token_id``
    to ``role`` on ``corpus``."""
    return (
        token_id is not None
        and CorpusRoleBinding.objects.filter(
            corpus=corpus,
            role=role,
            host_token_id=token_id,
            host_token__revoked_at__isnull=True,
            revoked_at__isnull=True,
        ).exists()
    )


def live_checkpoints(project: str, *, now) -> list[tuple[str, str, str]]:
    """``(checkpoint_id, actor, role)`` of every unrevoked, unexpired checkpoint of
    ``project``."""
    rows = AuthorityCheckpoint.objects.filter(project=project, revoked_at__isnull=True).filter(
        Q(expires_at__isnull=True) | Q(expires_at__gt=now)
    )
    return list(rows.values_list("checkpoint_id", "actor", "role"))


def checkpoint_facts(checkpoint_id: str, *, now=None) -> authority.CheckpointFacts | None:
    row = AuthorityCheckpoint.objects.filter(checkpoint_id=checkpoint_id).first()
    if row is None:
        return None
    state = authority.checkpoint_state(row.revoked_at, row.expires_at, now or clock.now())
    return authority.CheckpointFacts(
        checkpoint_id=row.checkpoint_id,
        project=row.project,
        actor=row.actor,
        role=row.role,
        action_scopes=frozenset(authority.normalise_scopes(row.action_scopes)),
        live=state == "live",
        state=state,
    )


def checkpoint_lookup(now=None) -> guards.CheckpointLookup:
    return lambda ref: checkpoint_facts(ref, now=now)


def get_checkpoint(checkpoint_id: str) -> AuthorityCheckpoint:
    row = AuthorityCheckpoint.objects.filter(checkpoint_id=checkpoint_id).first()
    if row is None:
        raise RewardMemoryError(
            "checkpoint_not_found", "No authority checkpoint with that id.", field="checkpoint_id"
        )
    return row


def list_checkpoints(*, project: str | None = None) -> list[AuthorityCheckpoint]:
    rows = AuthorityCheckpoint.objects.order_by("checkpoint_id")
    return list(rows.filter(project=project) if project else rows)


def open_closure(corpus: Corpus, candidate: dict[str, Any], candidate_ref: str):
    """The open ``LineageClosure`` that blocks this candidate, or ``None``.

    Matched on the candidate identity or its content digest; a candidate whose
    ``lineage.prior_candidate_ref`` names the closed candidate is a new decision."""
    digest = candidates.lineage_digest(candidate)
    prior = (candidate.get("lineage") or {}).get("prior_candidate_ref")
    closures = LineageClosure.objects.filter(corpus=corpus, reopened_at__isnull=True).filter(
        Q(candidate_ref=candidate_ref) | Q(content_digest=digest)
    )
    if prior:
        closures = closures.exclude(candidate_ref=prior)
    return closures.order_by("closed_at").first()


def corpus_binding(corpus: Corpus) -> guards.CorpusBinding:
    policy = corpus.freshness_policy or {}
    return guards.CorpusBinding(
        memory_class=corpus.memory_class,
        project=corpus.project,
        surfaces=tuple(corpus.surfaces or ()),
        max_source_age_days=policy.get("max_source_age_days"),
        require_current_revision=policy.get("require_current_revision", True),
    )


def provider_binding(corpus: Corpus, *, actor_peer_id: str | None = None) -> providers.Binding:
    return providers.Binding(
        provider_id=corpus.provider_id,
        scope_ref=corpus.provider_scope_ref,
        actor_peer_id=actor_peer_id,
    )


def active_policy(corpus: Corpus, surface: str) -> StandingPolicy | None:
    return StandingPolicy.objects.filter(corpus=corpus, surface=surface, active=True).first()


def health_reads(corpus: Corpus):
    """What the corpus's receipts say about its health: ``(last successful query, last
    verified readback, last applied receipt, records per lifecycle state)``."""
    last_query = (
        RecallReceipt.objects.filter(corpus=corpus, status__in=["ok", "empty"])
        .order_by("-created_at")
        .values_list("created_at", flat=True)
        .first()
    )
    last_readback = (
        MemoryRecord.objects.filter(corpus=corpus, readback_verified_at__isnull=False)
        .order_by("-readback_verified_at")
        .values_list("readback_verified_at", flat=True)
        .first()
    )
    last_applied = (
        ApplicationReceipt.objects.filter(corpus=corpus, status="applied")
        .order_by("-created_at")
        .values_list("created_at", flat=True)
        .first()
    )
    counts = dict(
        MemoryRecord.objects.filter(corpus=corpus)
        .values_list("lifecycle_state")
        .annotate(n=Count("id"))
        .values_list("lifecycle_state", "n")
    )
    return last_query, last_readback, last_applied, counts


# -- records -------------------------------------------------------------------------------
def live_records(corpus: Corpus, *, now=None):
    now = now or clock.now()
    return MemoryRecord.objects.filter(corpus=corpus, lifecycle_state=c.ACTIVE).filter(
        Q(expires_at__isnull=True) | Q(expires_at__gt=now)
    )


def get_record(
    record_ref: str, *, viewer: Viewer = None, field: str = "record_ref"
) -> MemoryRecord:
    """The record, if ``viewer`` may see its corpus; a record of a corpus the viewer
    may not read is reported exactly like a missing one (``record_not_found``)."""
    return visible_or_not_found(
        MemoryRecord.objects.select_related("corpus").filter(record_ref=record_ref).first(),
        lambda record: privacy.visible_to(record.corpus, viewer),
        lambda: RewardMemoryError("record_not_found", "No such record.", field=field),
    )


def soft_preference_documents(
    project: str, *, goal_id: str | None, agent_id: str | None
) -> list[dict[str, Any]]:
    """The ``soft_preference`` records of ``project`` the (Goal, Agent) may read
    (``readable_records``), for the built-in semantic-preference provider: ``ref``
    (opaque record ref), ``summary``, ``surfaces``. No Goal → no documents."""
    rows = (
        readable_records(
            goal_id=goal_id, agent_id=agent_id, memory_class=c.SOFT_PREFERENCE, project=project
        )
        .order_by("record_ref")
        .values_list("record_ref", "summary", "surface")
    )
    return [
        {"ref": ref, "summary": summary, "surfaces": [surface]} for ref, summary, surface in rows
    ]


# -- ingest ----------------------------------------------------------------------------------
def pending_ingests(goal_id: str, agent_id: str):
    return (
        PendingIngest.objects.select_related("event")
        .filter(goal__goal_id=goal_id, agent__agent_id=agent_id, resolved_at__isnull=True)
        .order_by("created_at", "pk")
    )


def ingest_event_row(goal_id: str, agent_id: str, event_ref: str) -> IngestEvent | None:
    return IngestEvent.objects.filter(
        agent__goal__goal_id=goal_id, agent__agent_id=agent_id, event_ref=event_ref
    ).first()


def _recall_visible(recall: RecallReceipt, viewer: Viewer) -> bool:
    if viewer is None:
        return True
    goal_id, agent_id = viewer
    return (
        recall.goal.goal_id == goal_id
        and (agent_id is None or recall.agent.agent_id == agent_id)
        and privacy.may_read_corpus(recall.corpus, goal_id, agent_id)
    )


def get_recall(recall_id: str, *, viewer: Viewer = None) -> RecallReceipt:
    """The stored recall, if ``viewer`` may see it (its own Goal/Agent and a corpus it
    may read); any other is reported exactly like a missing one (``recall_not_found``)."""
    recall = (
        RecallReceipt.objects.select_related("corpus", "goal", "agent")
        .filter(recall_id=recall_id)
        .first()
    )
    return visible_or_not_found(
        recall,
        lambda r: _recall_visible(r, viewer),
        lambda: RewardMemoryError("recall_not_found", "No such recall.", field="recall_id"),
    )


# -- dogfood: stored application receipts and operator controls -----------------------------
def application_receipt_facts(
    receipt_id: str, *, field: str, viewer: tuple[str, str | None] | None = None
) -> dict[str, Any]:
    """What the server stored about one application receipt, for a dogfood batch: its
    status, recall, readback (the recall read its results back exactly and the memory
    refs are results of it), artifact verification, corpus, surface and memory digests.
    ``viewer`` (``(goal_id, agent_id)``; ``None``: operator) limits it to the caller's
    scope; an unknown or foreign id is the same ``application_receipt_not_found``."""
    row = (
        ApplicationReceipt.objects.select_related("recall__goal", "recall__agent", "corpus")
        .filter(application_receipt_id=receipt_id)
        .first()
    )
    recall = row.recall if row is not None else None
    if row is None or (
        viewer is not None
        and (
            recall.goal.goal_id != viewer[0]
            or (viewer[1] is not None and recall.agent.agent_id != viewer[1])
        )
    ):
        raise RewardMemoryError(
            "application_receipt_not_found",
            "No stored application receipt with that id in the caller's scope.",
            field=field,
            details={"application_receipt_id": receipt_id},
        )
    receipt = row.receipt or {}
    check = receipt.get("authority_scope_check") or {}
    artifact = receipt.get("artifact_verification") or {}
    return {
        "application_receipt_id": row.application_receipt_id,
        "status": row.status,
        "recall_id": recall.recall_id,
        "corpus_id": row.corpus.corpus_id,
        "surface_id": recall.surface,
        "memory_ref_digests": sorted(receipt.get("memory_ref_digests") or []),
        "result_readback_verified": recall.status == "ok" and check.get("attributed") is True,
        "current_artifact_verified": artifact.get("verified") is True,
        "artifact_ref_digest": artifact.get("artifact_ref_digest"),
    }


def operator_control_facts(
    control_id: str, *, field: str, viewer: tuple[str, str | None] | None = None
) -> dict[str, Any]:
    """A stored operator control (``operator-control --execute``) of a corpus the caller
    may read; unknown or foreign → ``operator_control_not_found``."""
    row = (
        models.OperatorControl.objects.select_related("corpus")
        .filter(control_id=control_id)
        .first()
    )
    if row is None or (viewer is not None and not privacy.may_read_corpus(row.corpus, *viewer)):
        raise RewardMemoryError(
            "operator_control_not_found",
            "No stored operator control with that id in the caller's scope.",
            field=field,
            details={"control_id": control_id},
        )
    return {
        "control_id": row.control_id,
        "action": row.action,
        "control_ref": row.control_ref,
        "corpus_id": row.corpus.corpus_id,
        "recorded_at": clock.iso(row.created_at),
    }


# -- the experiment registry ---------------------------------------------------------------
def experiment_binding(goal_id: str, agent_id: str):
    """The (Goal, Agent)'s own registry row (one per Agent), or ``None``."""
    return models.ExperimentBinding.objects.filter(
        goal__goal_id=goal_id, agent__agent_id=agent_id
    ).first()


def goal_experiment_bindings(goal_id: str):
    """Every Agent's registry row of the Goal (one per Agent)."""
    return models.ExperimentBinding.objects.filter(goal__goal_id=goal_id).select_related("agent")


# -- provider deletes (the outbox of closed records) ----------------------------------------
def fresh_lifecycle_state(record: MemoryRecord) -> str:
    """The record's lifecycle state as the database holds it now (a fresh read, not the
    object a write returned)."""
    return MemoryRecord.objects.values_list("lifecycle_state", flat=True).get(pk=record.pk)


def provider_deletion_state(record: MemoryRecord) -> dict[str, Any] | None:
    """The record's provider delete as documents show it (``None``: nothing was queued —
    a live record, or one closed before the outbox existed)."""
    row = models.ProviderDeletion.objects.filter(record_id=record.pk).first()
    if row is None:
        return None
    return {
        "state": row.state,
        "attempts": row.attempts,
        "failure_kind": row.failure_kind or None,
        "next_attempt_at": clock.iso(row.next_attempt_at) if row.state == "pending" else None,
        "confirmed_at": clock.iso(row.confirmed_at),
    }


def provider_deletion_counts(goal_ids: list[str]) -> dict[str, dict[str, int]]:
    """Per Goal, ``{pending, confirmed, failed}`` provider deletes of records in the
    corpora that allowlist one of its Agents (two queries for all the Goals)."""
    per_corpus: dict[int, dict[str, int]] = {}
    rows = models.ProviderDeletion.objects.values_list("record__corpus_id", "state")
    for corpus_id, state, n in rows.annotate(n=Count("id")).order_by():
        per_corpus.setdefault(corpus_id, {})[state] = n
    result = {goal_id: dict.fromkeys(models.ProviderDeletion.STATES, 0) for goal_id in goal_ids}
    if not per_corpus:
        return result
    for corpus in Corpus.objects.filter(pk__in=per_corpus).only("pk", "agent_allowlist"):
        for goal_id, counts in result.items():
            if privacy.goal_allowlisted(corpus, goal_id):
                for state, n in per_corpus[corpus.pk].items():
                    counts[state] += n
    return result


def transition_reference(reference: str):
    """The row a record transition's ``reference`` names (a record, a review or an
    authority checkpoint), or ``None`` when it names none of them (a revocation ref,
    a source-truth ref, a lineage note)."""
    if not reference:
        return None
    from reward_memory.models import AuthorityCheckpoint, MemoryRecord, Review

    for model, field in (
        (MemoryRecord, "record_ref"),
        (Review, "review_id"),
        (AuthorityCheckpoint, "checkpoint_id"),
    ):
        found = model.objects.filter(**{field: reference}).first()
        if found is not None:
            return found
    return None


#: A candidate waits for the corpus reviewer while its latest review is a ``no_write`` a
#: host or an ingest left (nothing written, nothing rejected) and its guard did not block
#: it: the reviewer accepts, rejects or confirms ``no_write`` from the admin.
AWAITING_REVIEWER = ("no_write",)


def with_latest_decision(queryset):
    """Candidates annotated with ``latest_decision`` (their latest review's effective
    decision) and ``latest_applied`` (whether that review was applied)."""
    from django.db.models import OuterRef, Subquery

    latest = models.Review.objects.filter(candidate=OuterRef("pk")).order_by("-created_at", "-pk")
    return queryset.annotate(
        latest_decision=Subquery(latest.values("effective_decision")[:1]),
        latest_applied=Subquery(latest.values("applied_at")[:1]),
    )


def candidates_awaiting_reviewer(queryset=None):
    """Host and ingest candidates the corpus reviewer has still to decide."""
    rows = queryset if queryset is not None else models.Candidate.objects.all()
    return (
        with_latest_decision(rows)
        .filter(latest_decision__in=AWAITING_REVIEWER)
        .exclude(guard_status=c.GUARD_BLOCKED)
    )


def candidates_awaiting_apply(queryset=None):
    """Candidates the reviewer accepted whose corpus owner has not applied the review."""
    rows = queryset if queryset is not None else models.Candidate.objects.all()
    return with_latest_decision(rows).filter(latest_decision="accept", latest_applied__isnull=True)


def candidates_awaiting(actor_ref: str, queryset=None):
    """The candidates whose next step is ``actor_ref``'s: undecided ones of corpora it
    reviews, and accepted, unapplied ones of corpora it owns ("awaiting me")."""
    rows = queryset if queryset is not None else models.Candidate.objects.all()
    review = candidates_awaiting_reviewer(rows).filter(corpus__reviewer=actor_ref)
    apply = candidates_awaiting_apply(rows).filter(corpus__owner=actor_ref)
    return rows.filter(Q(pk__in=review.values("pk")) | Q(pk__in=apply.values("pk")))
