"""Reads of the registry, shared by every app's services and adapters."""

from dataclasses import dataclass

from django.conf import settings
from django.db import connection
from django.db.models import F, Q, QuerySet

from loopx_site.core.errors import DomainError
from loopx_site.core.models import Agent, Goal
from loopx_site.core.validation import require_identifier


def get_goal(goal_id: str, *, area: str = "loopx") -> Goal:
    """The registered Goal or ``goal_not_registered`` (404)."""
    require_identifier(goal_id, "goal_id", area=area)
    try:
        return Goal.objects.get(goal_id=goal_id)
    except Goal.DoesNotExist:
        raise DomainError(
            "goal_not_registered",
            f"Goal {goal_id!r} is not registered",
            field="goal_id",
            area=area,
        ) from None


def get_agent(goal_id: str, agent_id: str, *, area: str = "loopx") -> Agent:
    """The registered Agent of that Goal, or ``goal_/agent_not_registered`` (404)."""
    require_identifier(goal_id, "goal_id", area=area)
    require_identifier(agent_id, "agent_id", area=area)
    agent = _agent_with_goal(goal_id, agent_id)
    if agent is None:
        get_goal(goal_id, area=area)  # raises goal_not_registered when that is the cause
        raise DomainError(
            "agent_not_registered",
            f"Agent {agent_id!r} is not registered in Goal {goal_id!r}",
            field="agent_id",
            area=area,
        )
    return agent


def _columns(model) -> list:
    return list(model._meta.concrete_fields)


def _agent_with_goal(goal_id: str, agent_id: str) -> Agent | None:
    """The Agent with its Goal attached, in one plain indexed statement (unique
    ``(goal, agent_id)``): every recall and settle resolves its runtime identity, and
    building the equivalent ``select_related`` query costs more than running it."""
    agent_fields, goal_fields = _columns(Agent), _columns(Goal)
    qn = connection.ops.quote_name
    select = ", ".join(
        [f"a.{qn(f.column)}" for f in agent_fields] + [f"g.{qn(f.column)}" for f in goal_fields]
    )
    sql = (
        f"SELECT {select} FROM {qn(Agent._meta.db_table)} a "  # noqa: S608 - quoted model names
        f"JOIN {qn(Goal._meta.db_table)} g ON g.id = a.goal_id "
        "WHERE g.goal_id = %s AND a.agent_id = %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [goal_id, agent_id])
        row = cursor.fetchone()
    if row is None:
        return None
    n = len(agent_fields)
    values = []
    for i, (f, value) in enumerate(zip(agent_fields + goal_fields, row, strict=True)):
        col = f.get_col("a" if i < n else "g")
        for convert in connection.ops.get_db_converters(col) + f.get_db_converters(connection):
            value = convert(value, col, connection)
        values.append(value)
    agent = Agent.from_db(connection.alias, [f.attname for f in agent_fields], values[:n])
    goal = Goal.from_db(connection.alias, [f.attname for f in goal_fields], values[n:])
    Agent.goal.field.set_cached_value(agent, goal)
    return agent


def list_goals(*, goal_ids: list[str] | None = None) -> QuerySet[Goal]:
    qs = Goal.objects.prefetch_related("agents").order_by("goal_id")
    if goal_ids is not None:
        qs = qs.filter(goal_id__in=goal_ids)
    return qs


@dataclass(frozen=True)
class TokenCredential:
    """A live host token as authentication needs it: its id, prefix and scope."""

    pk: int
    prefix: str
    goal_id: str
    agent_id: str | None

    def __str__(self) -> str:
        scope = self.goal_id + (f"/{self.agent_id}" if self.agent_id else "")
        return f"{self.prefix}… ({scope})"


_LIVE_CREDENTIAL_SQL = (
    "SELECT t.id, t.prefix, g.goal_id, a.agent_id FROM core_hosttoken t "
    "JOIN core_goal g ON g.id = t.goal_id "
    "LEFT JOIN core_agent a ON a.id = t.agent_id "
    "WHERE t.key_digest = %s AND t.revoked_at IS NULL"
)


def live_token(key_digest: str) -> TokenCredential | None:
    """The unrevoked token with this digest and its Goal/Agent ids, in one indexed
    statement (unique digest). Runs on every API request, so it is plain SQL: building
    the equivalent ``select_related`` query costs more than the database spends on it."""
    with connection.cursor() as cursor:
        cursor.execute(_LIVE_CREDENTIAL_SQL, [key_digest])
        row = cursor.fetchone()
    return None if row is None else TokenCredential(*row)


def live_scope_q(prefix: str = "") -> Q:
    """Whether a scope row is the one its Goal points to now: this runtime, with the
    Goal's current ``state_ref`` and ``instance_id`` (the registry fields every scope
    identity hashes). Any other scope of the Goal is an earlier one, kept for its
    history after a move. ``prefix`` reaches the scope through a relation
    (``"scope__"`` from a subject)."""
    return Q(
        **{
            f"{prefix}runtime_id": settings.LOOPX_RUNTIME_ID,
            f"{prefix}state_ref": F(f"{prefix}goal__state_ref"),
            f"{prefix}instance_id": F(f"{prefix}goal__instance_id"),
        }
    )
