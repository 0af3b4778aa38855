from django.apps import AppConfig


class RewardMemoryConfig(AppConfig):
    name = "reward_memory"
    verbose_name = "Reward Memory"

    def ready(self):
        from loopx_site.core import contributions
        from reward_memory import retention

        contributions.RETENTION.register("reward_memory.receipts", retention.prune_receipts)
