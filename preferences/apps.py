from django.apps import AppConfig


class PreferencesConfig(AppConfig):
    name = "preferences"
    verbose_name = "Agent preferences"

    def ready(self):
        # Registrations only (dotted paths, imported when used): every CLI call runs this.
        from loopx_site.core import contributions

        contributions.DASHBOARD_SECTIONS.register(
            "preferences.scopes",
            contributions.DashboardSection(
                read="preferences.dashboard.read",
                link="preferences.dashboard.link",
                permissions=("preferences.view_preferencescope",),
            ),
        )
        contributions.GOAL_SCOPE_MOVES.register(
            "preferences.superseded_scope",
            contributions.lazy("preferences.scope_moves.refuse_superseded_scope"),
        )
        contributions.GOAL_CONTENT.register(
            "preferences.journal", contributions.lazy("preferences.erasure.erase")
        )
        contributions.GOAL_EXPORT.register(
            "preferences.journal", contributions.lazy("preferences.export.sections")
        )
