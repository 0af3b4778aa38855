"""The preference journal's part of a Goal export (``loopx_site.core.export``): every
scope of the Goal's Agents (live and migrated-from), each scope's whole journal (every
operation with its source reference and quote) and its current subjects."""

from loopx_site.core.export import Ref, Section
from loopx_site.core.models import Agent, Goal
from preferences.models import PreferenceOperation, PreferenceScope, PreferenceSubject


def sections(goal) -> list[Section]:
    goal_id = goal.goal_id
    scope = Ref(PreferenceScope, ("scope_key",))
    return [
        Section(
            "preference_scope",
            PreferenceScope,
            lambda: PreferenceScope.objects.filter(goal__goal_id=goal_id),
            ("scope_key",),
            refs={
                "goal": Ref(Goal, ("goal_id",)),
                "agent": Ref(Agent, ("goal__goal_id", "agent_id")),
                "migrated_from": scope,
            },
        ),
        Section(
            "preference_operation",
            PreferenceOperation,
            lambda: PreferenceOperation.objects.filter(scope__goal__goal_id=goal_id),
            ("scope", "sequence"),
            refs={"scope": scope},
        ),
        Section(
            "preference_subject",
            PreferenceSubject,
            lambda: PreferenceSubject.objects.filter(scope__goal__goal_id=goal_id),
            ("scope", "key"),
            refs={
                "scope": scope,
                "operation": Ref(PreferenceOperation, ("scope__scope_key", "sequence")),
            },
        ),
    ]
