from django.apps import AppConfig


class RewardMemoryConfig(AppConfig):
    name = "reward_memory"
    verbose_name = "Reward Memory"

    def ready(self):
        from loopx_site.core import contributions
        from reward_memory import metrics

        contributions.METRICS_GAUGES.register("reward_memory.state", metrics.gauges)
