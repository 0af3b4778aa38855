from django.apps import AppConfig


class RewardMemoryConfig(AppConfig):
    name = "reward_memory"
    verbose_name = "Reward Memory"
