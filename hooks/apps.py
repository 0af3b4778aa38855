from django.apps import AppConfig


class HooksConfig(AppConfig):
    name = "hooks"
    verbose_name = "Post-writeback hooks"

    def ready(self):
        # Registrations only (dotted paths, imported when used): every CLI call runs this.
        from loopx_site.core import contributions

        contributions.DASHBOARD_SECTIONS.register(
            "hooks.failures",
            contributions.DashboardSection(
                read="hooks.dashboard.read",
                link="hooks.dashboard.link",
                permissions=("hooks.view_hookdispatch",),
            ),
        )
        contributions.RETENTION.register(
            "hooks.outbox", contributions.lazy("hooks.retention.prune_outbox")
        )
        contributions.RETENTION.register(
            "hooks.dispatches", contributions.lazy("hooks.retention.prune_dispatches")
        )
        contributions.METRICS_GAUGES.register(
            "hooks.outbox", contributions.lazy("hooks.metrics.gauges")
        )
        contributions.GOAL_CONTENT.register(
            "hooks.payloads", contributions.lazy("hooks.erasure.erase")
        )
