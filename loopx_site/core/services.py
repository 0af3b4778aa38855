"""Writes to the registry: Goal/Agent registration and host tokens."""

import hashlib
import secrets
from dataclasses import dataclass

from django.db import IntegrityError, transaction

from loopx_site.core import clock
from loopx_site.core.errors import DomainError
from loopx_site.core.models import Agent, Goal, HostToken
from loopx_site.core.validation import require_identifier, require_text

TOKEN_PREFIX = "lxh_"  # noqa: S105 - a public prefix, not a secret


@dataclass(frozen=True)
class GoalRegistration:
    goal: Goal
    created: bool
    added_agents: list[str]


def register_goal(
    *,
    goal_id: str,
    agent_ids: list[str],
    state_ref: str | None = None,
    instance_id: str | None = None,
) -> GoalRegistration:
    """Register a Goal and its Agents; idempotent.

    Registering again adds missing Agents and never removes any. ``state_ref`` and
    ``instance_id`` are updated only when given; changing ``state_ref`` moves the Goal
    to a new preference scope (see ``preferences.services.migrate_scope``).
    """
    require_identifier(goal_id, "goal_id")
    if not agent_ids:
        raise DomainError("invalid_argument", "at least one agent_id is required", field="agent_id")
    for agent_id in agent_ids:
        require_identifier(agent_id, "agent_id")
    if state_ref is not None:
        require_text(state_ref, "state_ref", max_length=1024)
    if instance_id is not None:
        require_identifier(instance_id, "instance_id")

    now = clock.now()
    with transaction.atomic():
        try:
            with transaction.atomic():
                goal, created = Goal.objects.select_for_update().get_or_create(
                    goal_id=goal_id,
                    defaults={
                        "state_ref": state_ref or "",
                        "instance_id": instance_id or "",
                        "created_at": now,
                        "updated_at": now,
                    },
                )
        except IntegrityError:  # lost a creation race: the row exists now
            goal, created = Goal.objects.select_for_update().get(goal_id=goal_id), False
        changed = {}
        if not created:
            if state_ref is not None and goal.state_ref != state_ref:
                changed["state_ref"] = state_ref
            if instance_id is not None and goal.instance_id != instance_id:
                changed["instance_id"] = instance_id
        existing = set(goal.agents.values_list("agent_id", flat=True))
        added = sorted(set(agent_ids) - existing)
        Agent.objects.bulk_create(
            [Agent(goal=goal, agent_id=a, created_at=now) for a in added],
            ignore_conflicts=True,
        )
        if changed or added:
            changed["updated_at"] = now
            Goal.objects.filter(pk=goal.pk).update(**changed)
            goal.refresh_from_db()
    return GoalRegistration(goal=goal, created=created, added_agents=added)


def digest_token(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class IssuedToken:
    token: HostToken
    secret: str


def create_token(*, goal_id: str, agent_id: str | None = None, label: str = "") -> IssuedToken:
    """Issue a host token scoped to one Goal (optionally one Agent).

    The secret is returned once; only its sha256 is stored.
    """
    from loopx_site.core import selectors

    if agent_id is not None:
        agent = selectors.get_agent(goal_id, agent_id)
        goal = agent.goal
    else:
        agent = None
        goal = selectors.get_goal(goal_id)
    require_text(label, "label", min_length=0, max_length=200)
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = HostToken.objects.create(
        key_digest=digest_token(secret),
        prefix=secret[:10],
        goal=goal,
        agent=agent,
        label=label,
        created_at=clock.now(),
    )
    return IssuedToken(token=token, secret=secret)


def revoke_token(*, token: HostToken) -> None:
    HostToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=clock.now())
