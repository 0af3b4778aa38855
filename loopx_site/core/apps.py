"""App configs of the kernel, kept light: ``ready`` runs in every process, including each
short CLI call a host makes per turn.

- Nothing is imported here for the API schema: the drf-spectacular extension is
  registered by the URLconf (``loopx_site.urls``), which only web processes and schema
  generation load.
- The admin's config (``loopx_site.core.admin_apps.LoopxAdminConfig``) lives in its own
  module: importing this one never imports ``django.contrib.admin``. It discovers the
  apps' ``admin`` modules only in processes that serve or check the site
  (:func:`is_management_command_without_admin`).
"""

from pathlib import Path

from django.apps import AppConfig

# Management commands that serve the site or check it (and therefore need the admin).
ADMIN_COMMANDS = frozenset({"runserver", "testserver", "test", "check", "shell"})
_LAUNCHERS = frozenset({"manage.py", "django-admin", "django-admin.py", "__main__.py"})


def is_management_command_without_admin(argv: list[str]) -> bool:
    """True for ``manage.py <command>`` runs whose command never touches the admin."""
    if len(argv) < 2 or Path(argv[0]).name not in _LAUNCHERS:
        return False
    return argv[1] not in ADMIN_COMMANDS


class CoreConfig(AppConfig):
    default = True  # INSTALLED_APPS' "loopx_site.core" is this config
    name = "loopx_site.core"
    label = "core"
    verbose_name = "LoopX registry"

    def ready(self):
        from loopx_site.core import (
            checks,  # noqa: F401 - registers the deploy checks
            tracing,
        )

        tracing.configure_from_environment()  # imports OpenTelemetry only when OTEL_* ask
        from django.db.backends.signals import connection_created

        from loopx_site.core import contributions

        connection_created.connect(
            contributions.lazy("loopx_site.core.files.private_database_file"),
            dispatch_uid="loopx.private_database_file",
            weak=False,
        )
        contributions.GOAL_EXPORT.register(
            "core.registry", contributions.lazy("loopx_site.core.export.registry_sections")
        )
