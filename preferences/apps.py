from django.apps import AppConfig


class PreferencesConfig(AppConfig):
    name = "preferences"
    verbose_name = "Agent preferences"

    def ready(self):
        from loopx_site.core import contributions
        from preferences import scope_moves

        contributions.GOAL_SCOPE_MOVES.register(
            "preferences.superseded_scope", scope_moves.refuse_superseded_scope
        )
