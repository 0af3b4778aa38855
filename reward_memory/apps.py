from django.apps import AppConfig


class RewardMemoryConfig(AppConfig):
    name = "reward_memory"
    verbose_name = "Reward Memory"

    def ready(self):
        # Registrations only (dotted paths, imported when used): every CLI call runs this.
        from loopx_site.core import contributions

        contributions.DASHBOARD_SECTIONS.register(
            "reward_memory.health",
            contributions.DashboardSection(
                read="reward_memory.dashboard.read",
                link="reward_memory.dashboard.link",
                permissions=(
                    "reward_memory.view_pendingingest",
                    "reward_memory.view_recallreceipt",
                    "reward_memory.view_corpus",
                ),
            ),
        )
        contributions.DASHBOARD_PANELS.register(
            "reward_memory.experiments", contributions.lazy("reward_memory.dashboard.experiments")
        )
        contributions.SOFT_PREFERENCE_SOURCES.register(
            "reward_memory.soft_preferences",
            contributions.lazy("reward_memory.selectors.soft_preference_documents"),
        )
        contributions.DASHBOARD_PANELS.register(
            "reward_memory.provider_deletes",
            contributions.lazy("reward_memory.dashboard.provider_deletes"),
        )
        contributions.GOAL_CONTENT.register(
            "reward_memory.content", contributions.lazy("reward_memory.services.erasure.erase")
        )
        contributions.GOAL_EXPORT.register(
            "reward_memory.memory", contributions.lazy("reward_memory.export.sections")
        )
        contributions.RETENTION.register(
            "reward_memory.receipts", contributions.lazy("reward_memory.retention.prune_receipts")
        )
        contributions.METRICS_GAUGES.register(
            "reward_memory.state", contributions.lazy("reward_memory.metrics.gauges")
        )
        contributions.REVIEW_TODO.register(
            "reward_memory.review", contributions.lazy("reward_memory.admin_todo.review_todo")
        )
