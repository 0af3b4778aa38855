from django.apps import AppConfig


class HooksConfig(AppConfig):
    name = "hooks"
    verbose_name = "Post-writeback hooks"

    def ready(self):
        from hooks import metrics
        from loopx_site.core import contributions

        contributions.METRICS_GAUGES.register("hooks.outbox", metrics.gauges)
