"""What a Goal's ``state_ref``/``instance_id`` move may not do to the preference journal.

A scope whose subjects ``migrate-scope`` copied into a later scope is *superseded*: the
later scope carries them on — retirements included — and the old scope's rows are only
history. Moving the Goal back to a superseded scope would read its pre-migration view as
current and revive every key retired since, so the move is refused
(``preference_scope_superseded``); the operator moves to a new ``state_ref`` and migrates
from the live scope instead. Registered in ``PreferencesConfig.ready()`` on
``contributions.GOAL_SCOPE_MOVES``.
"""

from django.conf import settings

from preferences.errors import PreferenceError
from preferences.models import PreferenceScope


def refuse_superseded_scope(*, goal, target: dict[str, str]) -> None:
    """Raise ``preference_scope_superseded`` when any Agent's scope at ``target`` was
    migrated on."""
    superseded = PreferenceScope.objects.filter(
        runtime_id=settings.LOOPX_RUNTIME_ID,
        goal=goal,
        state_ref=target["state_ref"],
        instance_id=target["instance_id"],
        pk__in=PreferenceScope.objects.filter(migrated_from__isnull=False).values("migrated_from"),
    ).values_list("agent_ref", flat=True)
    agents = sorted(superseded[:20])
    if agents:
        raise PreferenceError(
            "preference_scope_superseded",
            "The preference scope at this state_ref was migrated to a later scope; moving "
            "back would revive what was retired since. Register a new state_ref and run "
            "`semantic_preference agent migrate-scope --execute` from the live scope.",
            field="state_ref",
            details={"agent_ids": agents},
        )
