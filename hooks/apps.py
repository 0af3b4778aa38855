from django.apps import AppConfig


class HooksConfig(AppConfig):
    name = "hooks"
    verbose_name = "Post-writeback hooks"

    def ready(self):
        from hooks import retention
        from loopx_site.core import contributions

        contributions.RETENTION.register("hooks.outbox", retention.prune_outbox)
        contributions.RETENTION.register("hooks.dispatches", retention.prune_dispatches)
