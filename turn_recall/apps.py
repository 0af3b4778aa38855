from django.apps import AppConfig


class TurnRecallConfig(AppConfig):
    name = "turn_recall"
    verbose_name = "Agent Turn Recall"

    def ready(self):
        # Registrations only (dotted paths, imported when used): every CLI call runs this.
        from loopx_site.core import contributions

        contributions.GOAL_CONTENT.register(
            "turn_recall.guidance", contributions.lazy("turn_recall.erasure.erase")
        )
