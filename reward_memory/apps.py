from django.apps import AppConfig


class RewardMemoryConfig(AppConfig):
    name = "reward_memory"
    verbose_name = "Reward Memory"

    def ready(self):
        from loopx_site.core import contributions
        from reward_memory import metrics

        contributions.METRICS_GAUGES.register("reward_memory.state", metrics.gauges)
        contributions.REVIEW_TODO.register("reward_memory.review", _review_todo)


def _review_todo(request):
    from reward_memory import admin_todo  # the admin's rows: loaded when an index renders

    return admin_todo.review_todo(request)
