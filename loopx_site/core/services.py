"""Writes to the registry: Goal/Agent registration and host tokens."""

import secrets
from dataclasses import dataclass, field

from django.db import transaction

from loopx_site.core import access, clock, contributions, selectors
from loopx_site.core.errors import DomainError
from loopx_site.core.models import Agent, Goal, HostToken
from loopx_site.core.rows import get_or_create_once
from loopx_site.core.validation import require_identifier, require_text

TOKEN_PREFIX = "lxh_"  # noqa: S105 - a public prefix, not a secret


STATE_REF_WARNING = (
    "Changing state_ref moves every Agent of this Goal to a new, empty preference scope "
    "until `semantic_preference agent migrate-scope --execute` copies its subjects."
)
#: The Goal fields that are part of every Agent's preference scope identity.
SCOPE_FIELDS = ("state_ref", "instance_id")


def scope_warnings(changes: dict) -> list[str]:
    """The warning a registration (or its preview) carries when it moves the Goal's
    Agents to a new preference scope: a ``state_ref`` or an ``instance_id`` change."""
    moved = [name for name in SCOPE_FIELDS if name in changes]
    if not moved:
        return []
    if moved == ["state_ref"]:
        return [STATE_REF_WARNING]
    return [
        f"Changing {' and '.join(moved)} moves every Agent of this Goal to a new, empty "
        "preference scope until `semantic_preference agent migrate-scope --execute` "
        "copies its subjects."
    ]


@dataclass(frozen=True)
class GoalRegistration:
    """What a registration did (``executed``) or would do (a preview).

    ``goal`` is ``None`` only in the preview of a Goal that does not exist yet.
    ``changes`` maps each changed field to ``{"from": old, "to": new}``.
    """

    goal: Goal | None
    created: bool
    added_agents: list[str]
    changes: dict = field(default_factory=dict)
    executed: bool = True
    goal_id: str = ""
    agent_ids: list[str] = field(default_factory=list)
    state_ref: str | None = None
    instance_id: str | None = None

    @property
    def status(self) -> str:
        """``preview``, ``registered`` (something was created, added or changed) or
        ``unchanged``."""
        if not self.executed:
            return "preview"
        if self.created or self.added_agents or self.changes:
            return "registered"
        return "unchanged"

    @property
    def warnings(self) -> list[str]:
        return scope_warnings(self.changes)


def _validate_registration(goal_id, agent_ids, state_ref, instance_id) -> None:
    require_identifier(goal_id, "goal_id")
    if not agent_ids:
        raise DomainError("invalid_argument", "at least one agent_id is required", field="agent_id")
    for agent_id in agent_ids:
        require_identifier(agent_id, "agent_id")
    if state_ref is not None:
        require_text(state_ref, "state_ref", max_length=1024)
    if instance_id is not None:
        require_identifier(instance_id, "instance_id")


def _changes(goal: Goal, state_ref: str | None, instance_id: str | None) -> dict:
    changes = {}
    if state_ref is not None and goal.state_ref != state_ref:
        changes["state_ref"] = {"from": goal.state_ref or None, "to": state_ref}
    if instance_id is not None and goal.instance_id != instance_id:
        changes["instance_id"] = {"from": goal.instance_id or None, "to": instance_id}
    return changes


def _check_scope_move(goal: Goal, changes: dict) -> None:
    """Let every app that keeps per-scope state refuse a move of the Goal's scope fields
    (``contributions.GOAL_SCOPE_MOVES``)."""
    if not any(name in changes for name in SCOPE_FIELDS):
        return
    target = {
        name: changes.get(name, {}).get("to", getattr(goal, name)) or "" for name in SCOPE_FIELDS
    }
    for _key, check in contributions.GOAL_SCOPE_MOVES:
        check(goal=goal, target=target)


def register_goal(
    *,
    goal_id: str,
    agent_ids: list[str],
    state_ref: str | None = None,
    instance_id: str | None = None,
    execute: bool = True,
) -> GoalRegistration:
    """Register a Goal and its Agents (an operator action); idempotent.

    Registering again adds missing Agents and never removes any. ``state_ref`` and
    ``instance_id`` are updated only when given; changing ``state_ref`` moves the Goal
    to a new preference scope (see ``preferences.services.migrate_scope``). With
    ``execute=False`` nothing is written and the result says what would happen.
    """
    _validate_registration(goal_id, agent_ids, state_ref, instance_id)
    plan = {
        "goal_id": goal_id,
        "agent_ids": sorted(set(agent_ids)),
        "state_ref": state_ref,
        "instance_id": instance_id,
    }
    if not execute:
        goal = Goal.objects.filter(goal_id=goal_id).prefetch_related("agents").first()
        if goal is None:
            return GoalRegistration(
                goal=None, created=True, added_agents=plan["agent_ids"], executed=False, **plan
            )
        existing = {a.agent_id for a in goal.agents.all()}
        changes = _changes(goal, state_ref, instance_id)
        _check_scope_move(goal, changes)
        return GoalRegistration(
            goal=goal,
            created=False,
            added_agents=sorted(set(agent_ids) - existing),
            changes=changes,
            executed=False,
            **plan,
        )

    now = clock.now()
    with transaction.atomic():
        goal, created = get_or_create_once(
            Goal.objects.select_for_update(),
            goal_id=goal_id,
            defaults={
                "state_ref": state_ref or "",
                "instance_id": instance_id or "",
                "created_at": now,
                "updated_at": now,
            },
        )
        changes = {} if created else _changes(goal, state_ref, instance_id)
        _check_scope_move(goal, changes)
        existing = set(goal.agents.values_list("agent_id", flat=True))
        added = sorted(set(agent_ids) - existing)
        Agent.objects.bulk_create(
            [Agent(goal=goal, agent_id=a, created_at=now) for a in added],
            ignore_conflicts=True,
        )
        if changes or added:
            update = {name: change["to"] for name, change in changes.items()}
            Goal.objects.filter(pk=goal.pk).update(**update, updated_at=now)
            goal.refresh_from_db()
    return GoalRegistration(
        goal=goal, created=created, added_agents=added, changes=changes, executed=True, **plan
    )


@dataclass(frozen=True)
class IssuedToken:
    token: HostToken
    secret: str


def check_token_request(*, goal_id: str, agent_id: str | None = None, label: str = ""):
    """The (Goal, Agent or None) a token would be scoped to; raises what issuing would."""
    if agent_id is not None:
        agent = selectors.get_agent(goal_id, agent_id)
        goal = agent.goal
    else:
        agent = None
        goal = selectors.get_goal(goal_id)
    require_text(label, "label", min_length=0, max_length=200)
    return goal, agent


def create_token(*, goal_id: str, agent_id: str | None = None, label: str = "") -> IssuedToken:
    """Issue a host token scoped to one Goal (optionally one Agent).

    The secret is returned once; only its sha256 is stored. ``check_token_request`` is
    the preview (same checks, nothing written).
    """
    goal, agent = check_token_request(goal_id=goal_id, agent_id=agent_id, label=label)
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = HostToken.objects.create(
        key_digest=access.digest_token(secret),
        prefix=secret[:10],
        goal=goal,
        agent=agent,
        label=label,
        created_at=clock.now(),
    )
    return IssuedToken(token=token, secret=secret)


@dataclass(frozen=True)
class TokenIssue:
    """What ``issue_token`` did: ``issued`` is ``None`` in a preview."""

    goal_id: str
    agent_id: str | None
    label: str
    issued: IssuedToken | None


def issue_token(
    *, goal_id: str, agent_id: str | None = None, label: str = "", execute: bool = False
) -> TokenIssue:
    """``create_token`` with ``execute``; without it, the same checks and nothing
    written (preview)."""
    if execute:
        issued = create_token(goal_id=goal_id, agent_id=agent_id, label=label)
    else:
        check_token_request(goal_id=goal_id, agent_id=agent_id, label=label)
        issued = None
    return TokenIssue(goal_id=goal_id, agent_id=agent_id, label=label, issued=issued)


def revoke_token(*, token: HostToken, operator: access.Caller) -> None:
    """Revoke a host token (the operator's shell, or an account holding
    ``core.change_hosttoken``)."""
    access.require_operator_permission(operator, "core.change_hosttoken")
    HostToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=clock.now())
