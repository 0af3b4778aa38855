"""Operator-owned authority: checkpoints, corpus role bindings of host tokens, and the
closing / reopening of candidate lineages.

Every function here needs an *operator* principal (the admin, or a command run from the
operator's shell naming an operator account) whose account holds the operation's model
permission (``principals.PERMISSIONS``: add/revoke checkpoint, add/change role binding,
change lineage closure); a host token is refused with ``operator_required`` whatever it
sends, an account without the permission with ``permission_required``.
"""

import datetime as dt
from dataclasses import dataclass

from django.db import IntegrityError, transaction

from loopx_site.core import clock
from loopx_site.core.models import HostToken
from reward_memory import contracts as c
from reward_memory import principals, selectors
from reward_memory.domain import authority
from reward_memory.domain import validation as v
from reward_memory.errors import RewardMemoryError, invalid
from reward_memory.models import (
    AuthorityCheckpoint,
    CorpusRoleBinding,
    LineageClosure,
    MemoryRecord,
)
from reward_memory.principals import Principal
from reward_memory.services import records


def refuse_forbidden_scopes(scopes: list[str], field: str) -> None:
    """``forbidden_action_scope`` (400) for the first scope of a forbidden family."""
    for index, scope in enumerate(scopes):
        family = authority.forbidden_family(scope)
        if family is not None:
            raise RewardMemoryError(
                "forbidden_action_scope",
                f"Action scopes of the {family} family are never granted or derived.",
                field=f"{field}.{index}",
                details={"family": family},
            )


@dataclass(frozen=True)
class CheckpointOutcome:
    """What a checkpoint grant or revocation did (``documents.authority`` renders it):
    ``row`` is ``None`` until granted; the counts are a revocation's derived records."""

    status: str
    executed: bool
    checkpoint_id: str
    row: AuthorityCheckpoint | None
    derived_active_records: int = 0
    records_revoked: int = 0


# -- checkpoints -----------------------------------------------------------------------------
def grant_checkpoint(
    *,
    checkpoint_id: str,
    project: str,
    actor: str,
    role: str,
    action_scopes: list[str],
    operator: Principal,
    expires_at: dt.datetime | None = None,
    evidence_ref: str = "",
    execute: bool = False,
) -> CheckpointOutcome:
    """Record independently verified authority (idempotent on identical facts).

    Forbidden authority families are refused: a checkpoint exists to bound derived
    hard_policy, which can never carry them. A checkpoint with no action scope is a
    role binding only: it verifies that ``actor`` holds ``role`` in ``project`` (what an
    advisory event's ``source.actor``/``actor_role`` needs) and authorises no hard_policy
    (which must request a non-empty subset of the checkpoint's scopes).
    """
    principals.require_operator(operator, "grant_checkpoint")
    v.checkpoint_id(checkpoint_id)
    v.project(project, "project")
    v.ref(actor, "actor")
    v.token(role, "role")
    scopes = v.string_list(
        [s.lower() if isinstance(s, str) else s for s in action_scopes or []],
        "action_scopes",
        lambda s, f: v.pattern(s, f, v.ACTION_SCOPE_RE, what="an action scope"),
    )
    refuse_forbidden_scopes(scopes, "action_scopes")
    if evidence_ref:
        v.ref(evidence_ref, "evidence_ref")
    now = clock.now()
    if expires_at is not None and expires_at <= now:
        raise invalid("expires_at", "expires_at must be in the future")
    facts = {
        "project": project,
        "actor": actor,
        "role": role,
        "action_scopes": sorted(set(scopes)),
        "expires_at": expires_at,
        "evidence_ref": evidence_ref or "",
    }
    existing = AuthorityCheckpoint.objects.filter(checkpoint_id=checkpoint_id).first()
    status = "planned"
    if existing is not None:
        same = all(getattr(existing, k) == val for k, val in facts.items())
        if not same or existing.revoked_at is not None:
            raise RewardMemoryError(
                "checkpoint_conflict",
                "A checkpoint with that id exists with other facts (or was revoked); "
                "grant a new id.",
                field="checkpoint_id",
            )
        status = "unchanged"
    if execute and existing is None:
        try:
            with transaction.atomic():
                existing = AuthorityCheckpoint.objects.create(
                    checkpoint_id=checkpoint_id,
                    verified_by=operator.actor_ref,
                    verified_at=now,
                    **facts,
                )
            status = "granted"
        except IntegrityError:
            raise RewardMemoryError(
                "checkpoint_conflict",
                "The checkpoint was granted concurrently.",
                field="checkpoint_id",
            ) from None
    return CheckpointOutcome(status, execute, checkpoint_id, existing)


def revoke_checkpoint(
    *, checkpoint_id: str, operator: Principal, reason: str = "", execute: bool = False
) -> CheckpointOutcome:
    """Revoke a checkpoint and, in the same transaction, every active record derived
    from it (``revoked``, reason ``checkpoint_revoked``): it leaves recall at once."""
    principals.require_operator(operator, "revoke_checkpoint")
    row = selectors.get_checkpoint(checkpoint_id)
    derived = MemoryRecord.objects.filter(authority_checkpoint=row, lifecycle_state=c.ACTIVE)
    refs = sorted(derived.values_list("record_ref", flat=True))
    status = "planned" if row.revoked_at is None else "unchanged"
    revoked: list[str] = []
    if execute and row.revoked_at is None:
        now = clock.now()
        with transaction.atomic():
            changed = AuthorityCheckpoint.objects.filter(pk=row.pk, revoked_at__isnull=True).update(
                revoked_at=now, revoked_by=operator.actor_ref, revocation_reason=reason[:300]
            )
            if changed:
                for record in MemoryRecord.objects.filter(
                    authority_checkpoint=row, lifecycle_state=c.ACTIVE
                ):
                    records.close_for_checkpoint(record, checkpoint_id=checkpoint_id, now=now)
                    revoked.append(record.record_ref)
        status = "revoked" if changed else "unchanged"
        row.refresh_from_db()
    return CheckpointOutcome(status, execute, row.checkpoint_id, row, len(refs), len(revoked))


# -- role bindings of host tokens ---------------------------------------------------------------
def bind_role(
    *, corpus_id: str, role: str, host_token: HostToken, operator: Principal
) -> CorpusRoleBinding:
    """Bind a host token to one corpus role (idempotent while live)."""
    principals.require_operator(operator, "bind_role")
    v.choice(role, "role", c.CORPUS_ROLES)
    corpus = selectors.get_corpus(corpus_id)
    existing = CorpusRoleBinding.objects.filter(
        corpus=corpus, role=role, host_token=host_token, revoked_at__isnull=True
    ).first()
    if existing is not None:
        return existing
    try:
        with transaction.atomic():
            return CorpusRoleBinding.objects.create(
                corpus=corpus,
                role=role,
                host_token=host_token,
                granted_by=operator.actor_ref,
                granted_at=clock.now(),
            )
    except IntegrityError:
        return CorpusRoleBinding.objects.get(
            corpus=corpus, role=role, host_token=host_token, revoked_at__isnull=True
        )


def unbind_role(*, binding: CorpusRoleBinding, operator: Principal) -> None:
    principals.require_operator(operator, "unbind_role")
    CorpusRoleBinding.objects.filter(pk=binding.pk, revoked_at__isnull=True).update(
        revoked_at=clock.now()
    )


# -- lineage closures ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Reopening:
    """A closed lineage an operator reopens (``documents.authority.lineage_reopen``):
    ``executed`` when the closure was reopened, else planned."""

    closure: LineageClosure
    executed: bool


def reopen_lineage(
    *, corpus_id: str, candidate_ref: str, operator: Principal, execute: bool = False
) -> Reopening:
    """An operator's explicit reopen of a closed candidate lineage."""
    principals.require_operator(operator, "reopen_lineage")
    corpus = selectors.get_corpus(corpus_id)
    closure = (
        LineageClosure.objects.select_related("corpus")
        .filter(corpus=corpus, candidate_ref=candidate_ref, reopened_at__isnull=True)
        .first()
    )
    if closure is None:
        raise RewardMemoryError(
            "closure_not_found", "That candidate lineage is not closed.", field="candidate_ref"
        )
    if execute:
        LineageClosure.objects.filter(pk=closure.pk, reopened_at__isnull=True).update(
            reopened_at=clock.now(), reopened_by=operator.actor_ref
        )
    return Reopening(closure, execute)
