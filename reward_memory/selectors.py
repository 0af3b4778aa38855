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
from reward_memory import experiment_config as cfg
from reward_memory import models, providers
from reward_memory.domain import authority, candidates, guards, uris
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
from reward_memory.peers import agent_key, binding_peer
from reward_memory.principals import Principal

CORPUS_NOT_FOUND = "No corpus with that id is registered."


# -- corpora ------------------------------------------------------------------------------
PRIVATE = "private"
GOAL_SHARED = "goal_shared"
PROJECT = "project"
VISIBILITIES = (PRIVATE, GOAL_SHARED, PROJECT)

Viewer = tuple[str, str | None] | None  # ``loopx_site.core.access.Viewer``


def is_allowlisted(corpus: Corpus, goal_id: str, agent_id: str) -> bool:
    return agent_key(goal_id, agent_id) in (corpus.agent_allowlist or [])


# -- the privacy selector: what a (Goal, Agent) may read ----------------------------------
def goal_allowlisted(corpus: Corpus, goal_id: str) -> bool:
    return any(k.split("/", 1)[0] == goal_id for k in corpus.agent_allowlist or [])


def visibility_of(corpus: Corpus) -> str:
    """The corpus's visibility; anything unknown (or a legacy value) reads as
    ``private`` — the narrowest rule, never a wider one."""
    visibility = (corpus.privacy or {}).get("visibility", PRIVATE)
    return visibility if visibility in VISIBILITIES else PRIVATE


def private_owner(corpus: Corpus) -> str | None:
    """The one ``goal/agent`` a private corpus belongs to; ``None`` when its allowlist
    does not hold exactly one entry (then nobody reads it from a host scope)."""
    keys = corpus.agent_allowlist or []
    return keys[0] if len(keys) == 1 else None


def shared_goal(corpus: Corpus) -> str | None:
    """The one Goal a ``goal_shared`` corpus is shared inside (every allowlist entry's
    Goal), or ``None`` when the entries name none or several."""
    goals = {k.split("/", 1)[0] for k in corpus.agent_allowlist or []}
    return goals.pop() if len(goals) == 1 else None


def may_read_corpus(corpus: Corpus, goal_id: str, agent_id: str | None) -> bool:
    """The one rule for reading a corpus from a Goal/Agent scope.

    * ``private`` — exactly one allowlisted (Goal, Agent), and the reader is that exact
      Agent (its own token, or the in-process identity): never a sibling, never a
      Goal-wide token (``agent_id=None``), never two Agents.
    * ``goal_shared`` — shared inside one Goal with the Agents its allowlist names: an
      allowlisted Agent, or a Goal-wide token of that Goal. Never implied by private.
    * ``project`` — every Agent of an allowlisted Goal.

    Another Goal never reads it.
    """
    visibility = visibility_of(corpus)
    if visibility == PRIVATE:
        owner = private_owner(corpus)
        return agent_id is not None and owner == agent_key(goal_id, agent_id)
    if visibility == GOAL_SHARED:
        if shared_goal(corpus) != goal_id:
            return False
        return agent_id is None or is_allowlisted(corpus, goal_id, agent_id)
    return goal_allowlisted(corpus, goal_id)


def visible_to(corpus: Corpus, viewer: Viewer) -> bool:
    """Whether ``viewer`` (``(goal_id, agent_id|None)``; ``None``: operator) may see it."""
    return viewer is None or may_read_corpus(corpus, *viewer)


def visibility_summary(corpus: Corpus) -> str:
    """One line for the admin: the visibility the read rule applies and who it admits."""
    visibility = visibility_of(corpus)
    if visibility == PRIVATE:
        owner = private_owner(corpus)
        return f"private: {owner}" if owner else "private: no single Agent (nobody reads)"
    if visibility == GOAL_SHARED:
        goal = shared_goal(corpus)
        count = len(corpus.agent_allowlist or [])
        return f"goal_shared: {count} Agent(s) of {goal}" if goal else "goal_shared: unreadable"
    goals = sorted({k.split("/", 1)[0] for k in corpus.agent_allowlist or []})
    return f"project: every Agent of {', '.join(goals) or 'no Goal'}"


def list_corpora(*, goal_id: str | None = None, agent_id: str | None = None) -> list[Corpus]:
    """All corpora (``goal_id=None``: operator), or those the Goal/Agent may read."""
    corpora = list(Corpus.objects.prefetch_related("policies").order_by("corpus_id"))
    if goal_id is None:
        return corpora
    return [corpus for corpus in corpora if may_read_corpus(corpus, goal_id, agent_id)]


def _corpus_not_found() -> RewardMemoryError:
    return RewardMemoryError("corpus_not_found", CORPUS_NOT_FOUND, field="corpus_id")


def get_corpus(corpus_id: str, *, viewer: Viewer = None) -> Corpus:
    """The corpus, as seen by ``viewer`` (``(goal_id, agent_id)``; ``None``: operator).
    A corpus the viewer may not read is reported exactly like a missing one."""
    return visible_or_not_found(
        Corpus.objects.filter(corpus_id=corpus_id).first(),
        lambda corpus: visible_to(corpus, viewer),
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
    allowed = [c_.pk for c_ in corpora if may_read_corpus(c_, goal_id, agent_id)]
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
    qn = connection.ops.quote_name
    stamp = connection.ops.adapt_datetimefield_value(now)
    corpus_readable = bool(goal_id) and corpus.active and may_read_corpus(corpus, goal_id, agent_id)
    params: list = [stamp]
    if corpus_readable:
        readable = (
            "CASE WHEN r.lifecycle_state = %s AND r.readback_verified_at IS NOT NULL "
            "AND (r.expires_at IS NULL OR r.expires_at > %s) "
            "AND NOT (r.memory_class = %s AND (ac.id IS NULL OR ac.revoked_at IS NOT NULL "
            "OR (ac.expires_at IS NOT NULL AND ac.expires_at <= %s))) THEN 1 ELSE 0 END"
        )
        params += [c.ACTIVE, stamp, c.HARD_POLICY, stamp]
    else:
        readable = "0"
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
        params += [corpus.pk, *resource_refs]
    else:
        source = (
            "d.resource_ref, d.content, "
            f"{{columns}} FROM {qn(LocalProviderDocument._meta.db_table)} d "
            f"LEFT JOIN {records} r "
            f"ON r.corpus_id = %s AND r.provider_resource_ref = d.resource_ref {joins}"
            f"WHERE d.scope_key = %s AND d.recallable = %s AND d.resource_ref IN ({marks})"
        )
        params += [corpus.pk, documents_of, True, *resource_refs]
    columns = (
        "CASE WHEN r.expires_at IS NOT NULL AND r.expires_at <= %s THEN 1 ELSE 0 END, "
        f"{readable}, {', '.join(f'r.{qn(f.column)}' for f in shape.fields)}, v.{qn('review_id')}"
    )
    sql = "SELECT " + source.format(columns=columns)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        fetched = cursor.fetchall()
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


def route_corpus_id(goal_id: str | None, agent_id: str | None, surface: Any) -> str | None:
    """The surface's ``ingest_corpus_id`` in the (Goal, Agent)'s verified experiment
    config; else (a no-write evaluation) the one active corpus that allowlists this exact
    (Goal, Agent) and declares this exact surface, or ``None`` — never a guess among
    several, never by similarity."""
    if not goal_id or not agent_id or not isinstance(surface, str):
        return None
    configured = experiment_route(goal_id, agent_id).surface(surface)
    if configured is not None:  # the Agent's verified experiment names the ingest corpus
        return configured.ingest_corpus_id
    matches = [
        corpus.corpus_id
        for corpus in Corpus.objects.filter(active=True).order_by("corpus_id")
        if is_allowlisted(corpus, goal_id, agent_id) and surface in (corpus.surfaces or [])
    ]
    return matches[0] if len(matches) == 1 else None


# -- peers ---------------------------------------------------------------------------------
def owner_write_peer(corpus: Corpus) -> str | None:
    """The peer an owner's write (apply review) uses on a peer-scoped corpus: the
    configured peer of an allowlisted Agent equal to the scope's peer, if any."""
    uri_peer = uris.peer_of(corpus.provider_scope_ref)
    if uri_peer is None:
        return None
    for key in corpus.agent_allowlist or []:
        goal_id, agent_id = key.split("/", 1)
        if binding_peer(corpus, goal_id, agent_id) == uri_peer:
            return uri_peer
    return None


# -- authority -------------------------------------------------------------------------------
ROLE_FIELDS = {
    c.OWNER_ROLE: "owner",
    c.REVIEWER_ROLE: "reviewer",
    c.RETIREMENT_ROLE: "retirement_authority",
    c.AUTHORITY_SOURCE_ROLE: "authority_source",
}


def acts_as(principal: Principal | None, corpus: Corpus, role: str) -> bool:
    """Whether the authenticated ``principal`` holds ``role`` on ``corpus``: an operator
    account equal to the corpus's declared actor, or a host token an operator bound to
    that role (live ``CorpusRoleBinding``)."""
    if principal is None:
        return False
    if principal.is_operator:
        return principal.actor_ref == getattr(corpus, ROLE_FIELDS[role])
    return (
        principal.token_id is not None
        and CorpusRoleBinding.objects.filter(
            corpus=corpus,
            role=role,
            host_token_id=principal.token_id,
            host_token__revoked_at__isnull=True,
            revoked_at__isnull=True,
        ).exists()
    )


def checkpoint_facts(checkpoint_id: str, *, now=None) -> authority.CheckpointFacts | None:
    row = AuthorityCheckpoint.objects.filter(checkpoint_id=checkpoint_id).first()
    if row is None:
        return None
    now = now or clock.now()
    state = "live"
    if row.revoked_at is not None:
        state = "revoked"
    elif row.expires_at is not None and row.expires_at <= now:
        state = "expired"
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


def source_role_bindings(
    corpus: Corpus, principal: Principal | None = None, *, now=None
) -> frozenset[authority.RoleBinding]:
    """The server records that may bind a candidate's claimed source actor to its role,
    for an activation into ``corpus`` by the authenticated ``principal`` (``None``: no
    principal, e.g. the demo loader or an internal retry — checkpoints only):

    * every live (unrevoked, unexpired) ``AuthorityCheckpoint`` of the corpus's project
      (``checkpoint.actor`` holds ``checkpoint.role``);
    * an operator account: itself as role ``operator``;
    * each corpus role the principal holds (``acts_as``: an operator account equal to the
      declared actor, or a host token an operator bound with ``CorpusRoleBinding``) —
      the actor is the corpus's declared actor of that role: the bound role speaks,
      never the token's own claim.
    """
    now = now or clock.now()
    rows = AuthorityCheckpoint.objects.filter(
        project=corpus.project, revoked_at__isnull=True
    ).filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
    bindings = {
        authority.RoleBinding(actor, role, authority.ROLE_BASIS_CHECKPOINT, checkpoint_id)
        for checkpoint_id, actor, role in rows.values_list("checkpoint_id", "actor", "role")
    }
    if principal is not None and principal.is_operator:
        bindings.add(
            authority.RoleBinding(
                principal.actor_ref,
                authority.OPERATOR_ROLE,
                authority.ROLE_BASIS_OPERATOR,
                principal.actor_ref,
            )
        )
    for role, field_name in ROLE_FIELDS.items():
        if acts_as(principal, corpus, role):
            bindings.add(
                authority.RoleBinding(
                    getattr(corpus, field_name), role, authority.ROLE_BASIS_CORPUS_ROLE, role
                )
            )
    return frozenset(bindings)


# -- read authority: a server record, never the caller's claim ------------------------------
READ_ROLE = "reader"
READ_SCOPE = "reward_memory.read"
ALLOWLIST_REF_PREFIX = "allowlist:"


def allowlist_read_ref(goal_id: str, agent_id: str) -> str:
    """The read-authority ref naming the caller's own corpus allowlist entry."""
    return f"{ALLOWLIST_REF_PREFIX}{agent_key(goal_id, agent_id)}"


def reader_actor(goal_id: str, agent_id: str) -> str:
    """The ``actor`` an operator's read checkpoint binds for one (Goal, Agent)."""
    return f"agent:{agent_key(goal_id, agent_id)}"


def read_authority_record(
    ref: Any, *, corpus: Corpus, surface: str, goal_id: str, agent_id: str, now=None
) -> str | None:
    """The server record a recall's ``read_authority.checkpoint_ref`` names for this
    (Goal, Agent) on this corpus and surface: ``"allowlist"`` — ``allowlist:<goal>/<agent>``
    and the corpus allowlists exactly that caller — or ``"checkpoint"`` — a live
    ``AuthorityCheckpoint`` an operator granted with role ``reader``, actor
    ``agent:<goal>/<agent>``, the corpus's project and the action scope
    ``reward_memory.read`` (or ``reward_memory.read.<surface>``). Anything else
    (unknown ref, another caller's entry, a revoked/expired or non-read checkpoint) is
    ``None``; the caller's ``verified`` flag never counts."""
    if not isinstance(ref, str) or not ref:
        return None
    if ref.startswith(ALLOWLIST_REF_PREFIX):
        if ref == allowlist_read_ref(goal_id, agent_id) and is_allowlisted(
            corpus, goal_id, agent_id
        ):
            return "allowlist"
        return None
    facts = checkpoint_facts(ref, now=now)
    if (
        facts is None
        or not facts.live
        or facts.role != READ_ROLE
        or facts.actor != reader_actor(goal_id, agent_id)
        or facts.project != corpus.project
        or not facts.action_scopes & {READ_SCOPE, f"{READ_SCOPE}.{surface}".lower()}
    ):
        return None
    return "checkpoint"


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


def _state(value: bool, observed_at=None, **extra) -> dict[str, Any]:
    return {"value": bool(value), "observed_at": clock.iso(observed_at), **extra}


def health_facts(corpus: Corpus) -> dict[str, Any]:
    """The five health states, each observed separately and never merged (rendered by
    ``reward_memory.documents.registry.corpus_health``).

    ``index_present`` asks the provider's read-only preflight; the other four read
    LoopX's own receipts. Stateless: nothing is written, no provider write happens.
    """
    try:
        preflight = providers.get(corpus.provider_id).preflight(provider_binding(corpus))
        index = _state(preflight.index_present, failure_kind=preflight.failure_kind)
    except providers.ProviderUnavailable as exc:
        index = _state(False, failure_kind=exc.kind)
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
    return {
        "corpus_id": corpus.corpus_id,
        "revision": corpus.revision,
        "health": {
            "corpus_present": _state(corpus.active, corpus.updated_at),
            "index_present": index,
            "retrieval_query_succeeded": _state(last_query is not None, last_query),
            "result_readback_verified": _state(last_readback is not None, last_readback),
            "memory_applied_with_receipt": _state(last_applied is not None, last_applied),
        },
        "records": {state: counts.get(state, 0) for state in c.LIFECYCLE_STATES},
    }


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
        lambda record: visible_to(record.corpus, viewer),
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
        and may_read_corpus(recall.corpus, goal_id, agent_id)
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
    if row is None or (viewer is not None and not may_read_corpus(row.corpus, *viewer)):
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


# -- the experiment route -------------------------------------------------------------------
@dataclass(frozen=True)
class ExperimentRoute:
    """What the experiment registry allows one (Goal, Agent) — resolved from the
    registry row *and* a fresh read of the private config (digest compared)."""

    goal_id: str
    agent_id: str
    status: str
    reason_code: str | None = None
    binding: Any = None
    config: Any = None
    receipt: dict[str, Any] | None = None
    readback_status: str = "not_attempted"

    @property
    def available(self) -> bool:
        return self.status == "available"

    @property
    def automation(self) -> dict[str, bool]:
        if not self.available:
            return {"automatic_recall": False, "automatic_ingest": False, "fail_open": True}
        return dict(self.config.automation)

    def surface(self, surface_id: str | None):
        """The configured surface (``None`` unless available and declared)."""
        if not self.available or not isinstance(surface_id, str):
            return None
        return self.config.surfaces.get(surface_id)


def experiment_binding(goal_id: str, agent_id: str):
    """The (Goal, Agent)'s own registry row (one per Agent), or ``None``."""
    return models.ExperimentBinding.objects.filter(
        goal__goal_id=goal_id, agent__agent_id=agent_id
    ).first()


def goal_experiment_bindings(goal_id: str):
    """Every Agent's registry row of the Goal (one per Agent)."""
    return models.ExperimentBinding.objects.filter(goal__goal_id=goal_id).select_related("agent")


def experiment_route(goal_id: str, agent_id: str, surface: str | None = None) -> ExperimentRoute:
    """The one read of a (Goal, Agent)'s Reward Memory experiment (never a provider call).

    ``available`` only when the Agent's own binding is enabled, allowlists it, the
    private config still reads back with the registered digest, validates as v1 against
    the registered corpora, and the Agent's receipt is verified for that digest. Other
    apps (turn recall) call this; ``route.surface(surface_id)`` gives the configured
    corpora, ingest corpus and recall profile of one surface. ``surface`` (optional)
    narrows ``status`` to ``surface_not_configured`` when that surface is not declared.
    """
    binding = experiment_binding(goal_id, agent_id)
    base = {"goal_id": goal_id, "agent_id": agent_id, "binding": binding}
    if binding is None:  # another Agent's binding never routes this one
        others = goal_experiment_bindings(goal_id).filter(enabled=True).exists()
        return ExperimentRoute(status="agent_not_enabled" if others else "disabled", **base)
    if not binding.enabled:
        return ExperimentRoute(status="disabled", **base)
    if agent_id not in (binding.agent_allowlist or []):
        return ExperimentRoute(status="agent_not_enabled", **base)
    try:
        data = cfg.read_config_bytes(binding.config_path)
    except RewardMemoryError:
        return ExperimentRoute(
            status="config_invalid",
            reason_code="config_unavailable_or_invalid",
            readback_status="rejected",
            **base,
        )
    digest = cfg.config_digest(data)
    receipt = (binding.receipts or {}).get(agent_id)
    try:
        config = cfg.load_bytes(data)
        cfg.check_registered(config)
    except RewardMemoryError:
        return ExperimentRoute(
            status="config_invalid",
            reason_code="config_unavailable_or_invalid",
            readback_status="rejected",
            receipt=receipt,
            **base,
        )
    if digest != binding.config_digest or not receipt or receipt.get("config_digest") != digest:
        return ExperimentRoute(
            status="enablement_stale",
            reason_code="config_digest_missing_or_drifted",
            readback_status="drifted",
            config=config,
            receipt=receipt,
            **base,
        )
    if not (
        receipt.get("status") == "verified"
        and receipt.get("goal_id") == goal_id
        and receipt.get("agent_id") == agent_id
        and receipt.get("provider_id") == config.provider_id
        and receipt.get("writability_verified") is True
        and receipt.get("exact_readback_verified") is True
    ):
        return ExperimentRoute(
            status="enablement_unverified",
            reason_code="provider_write_preflight_missing_or_unverified",
            readback_status="unverified",
            config=config,
            receipt=receipt,
            **base,
        )
    if surface is not None and surface not in config.surfaces:
        return ExperimentRoute(
            status="surface_not_configured",
            reason_code="surface_not_in_config",
            readback_status="verified",
            config=config,
            receipt=receipt,
            **base,
        )
    return ExperimentRoute(
        status="available", readback_status="verified", config=config, receipt=receipt, **base
    )


# -- provider deletes (the outbox of closed records) ----------------------------------------
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
            if goal_allowlisted(corpus, goal_id):
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
