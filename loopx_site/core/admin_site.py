"""The operator's admin site: apps in the order an operator works through them
(``settings.LOOPX_ADMIN_APP_ORDER``: Reward Memory first, Django's own last), and what
waits for a human (``contributions.REVIEW_TODO``) on the index beside "Recent actions"."""

import logging

from django.conf import settings
from django.contrib import admin

from loopx_site.core import contributions

logger = logging.getLogger("loopx.admin")


def review_todo(request) -> list[dict]:
    """``[{label, count, url}]``: what waits for the signed-in operator, from the apps'
    ``REVIEW_TODO`` contributions (a failing one is left out, never the page)."""
    rows: list[dict] = []
    for key, contribute in contributions.REVIEW_TODO:
        try:
            rows.extend(contribute(request))
        except Exception:  # a broken count must not take the admin index down
            logger.warning("review to-do %s not counted", key)
    return rows


class LoopxAdminSite(admin.AdminSite):
    def get_app_list(self, request, app_label=None):
        apps = super().get_app_list(request, app_label)
        order = {label: i for i, label in enumerate(getattr(settings, "LOOPX_ADMIN_APP_ORDER", ()))}
        return sorted(apps, key=lambda app: (order.get(app["app_label"], len(order)), app["name"]))

    def index(self, request, extra_context=None):
        context = {"review_todo": review_todo(request), **(extra_context or {})}
        return super().index(request, extra_context=context)
