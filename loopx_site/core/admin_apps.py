"""The admin's app config (in place of ``django.contrib.admin``), apart from
``loopx_site.core.apps`` so that a process without the admin app never imports
``django.contrib.admin`` (a host's per-turn CLI call: ``loopx_site.settings``).

It discovers the apps' ``admin`` modules — which import every app's services — only in
processes that serve or check the site: web servers, tests, ``runserver``, ``check``.
Other management commands skip it; the URLconf also runs the (idempotent) discovery, so
any process that resolves a URL has the full admin.
"""

import sys

from django.contrib.admin.apps import SimpleAdminConfig

from loopx_site.core.apps import is_management_command_without_admin


class LoopxAdminConfig(SimpleAdminConfig):
    default_site = "loopx_site.core.admin_site.LoopxAdminSite"

    def ready(self):
        super().ready()
        if not is_management_command_without_admin(sys.argv):
            self.module.autodiscover()
