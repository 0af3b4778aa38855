from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "loopx_site.core"
    label = "core"
    verbose_name = "LoopX registry"

    def ready(self):
        from loopx_site.core.api import schema  # noqa: F401 - registers the auth scheme
